"""Benchmark: ``efmoam replay FILE`` (observe mode) next to ``tshark -T fields -e oampdu.code``.

Run from the repository root::

    python tests/bench/replay_vs_tshark.py [--frames 100000] [--repeat 5] [--rss-frames 1000000]

It writes the two-speaker captures of ``tests/bench/decode_vs_tshark.py`` (same generator:
``steady``, a realistic link, and ``distinct``, no frame repeating the previous one of its
speaker), then runs ``efmoam replay`` (text and ``--json``, output to /dev/null) and
tshark on the same file, interleaved, ``--repeat`` times each, and prints the median
wall times, their ratio, and each run's peak RSS.  The issue's bar: replay takes at most
half of tshark's time on the 100,000-frame capture.  Then it runs replay once on a
``--rss-frames`` capture to show that memory does not grow with the capture.
``--assert`` exits 1 when the bar is missed (the ``steady`` scenario) or the peak RSS
grows by more than 10 MB from the small capture to the large one.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench.decode_vs_tshark import _env, generate, tshark_command

#: the issue's bar: replay at most half of tshark's time
RATIO = 2.0
#: peak RSS may grow this much (KiB) from --frames to --rss-frames
RSS_GROWTH = 10 * 1024


def replay_command(capture: Path, *options: str) -> list[str]:
    """``efmoam replay`` as this interpreter runs it."""
    return [sys.executable, "-m", "efmoam.cli", "replay", *options, str(capture)]


def run_measured(command: list[str]) -> tuple[float, int]:
    """Run `command` with stdout to /dev/null: (wall seconds, peak RSS in KiB).

    Exit status 1 is allowed: ``efmoam replay`` exits 1 when it has findings.
    """
    with open(os.devnull, "wb") as devnull:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=devnull, stderr=subprocess.PIPE, env=_env())
        assert process.stderr is not None
        stderr = process.stderr.read()
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise RuntimeError(f"{command[0]} failed: {stderr.decode(errors='replace')}")
    return wall, usage.ru_maxrss


def compare(capture: Path, repeat: int) -> dict[str, tuple[float, int]]:
    """Median wall time and peak RSS (KiB) per command, runs interleaved."""
    commands = {
        "replay": replay_command(capture),
        "replay --json": replay_command(capture, "--json"),
        "tshark": tshark_command(capture),
    }
    runs: dict[str, list[tuple[float, int]]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, command in commands.items():
            runs[name].append(run_measured(command))
    return {name: (statistics.median(w for w, _ in r), max(rss for _, rss in r)) for name, r in runs.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--rss-frames", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--scenario", choices=["steady", "distinct", "all"], default="all")
    parser.add_argument("--assert", dest="check", action="store_true", help="exit 1 when a bar is missed")
    args = parser.parse_args()
    if shutil.which("tshark") is None:
        sys.exit("tshark is not installed")
    version = subprocess.run(["tshark", "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    print(f"python {sys.version.split()[0]}, {version}; {os.cpu_count()} CPUs; load {os.getloadavg()[0]:.2f}")
    failed = False
    scenarios = ["steady", "distinct"] if args.scenario == "all" else [args.scenario]
    with tempfile.TemporaryDirectory(prefix="efmoam-replay-bench-") as tmp:
        small_rss = 0
        for scenario in scenarios:
            capture = Path(tmp) / f"{scenario}.pcap"
            generate(capture, scenario, args.frames)
            results = compare(capture, args.repeat)
            ratio = results["tshark"][0] / results["replay"][0]
            print(f"\n{scenario}: {args.frames} frames, {capture.stat().st_size / 1e6:.1f} MB, {args.repeat} runs each")
            for name, (wall, rss) in results.items():
                rate = args.frames / wall
                print(f"  {name:14} median {wall:6.3f} s  {rate:9.0f} frames/s  peak RSS {rss / 1024:6.1f} MB")
            print(f"  tshark / replay: {ratio:.2f} (bar: {RATIO:.1f})")
            if scenario == "steady":
                small_rss = results["replay"][1]
                failed |= ratio < RATIO
        if args.rss_frames:
            capture = Path(tmp) / "large.pcap"
            generate(capture, "steady", args.rss_frames)
            wall, rss = run_measured(replay_command(capture))
            print(f"\nsteady: {args.rss_frames} frames, {capture.stat().st_size / 1e6:.1f} MB")
            print(
                f"  replay         {wall:6.3f} s, peak RSS {rss / 1024:6.1f} MB"
                f" (at {args.frames} frames: {small_rss / 1024:.1f} MB)"
            )
            if small_rss:
                failed |= rss - small_rss > RSS_GROWTH
    if args.check and failed:
        print("\nFAILED: a bar was missed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
