"""Benchmark: ``efmoam replay FILE`` (observe mode) next to ``tshark -T fields -e oampdu.code``.

Run from the repository root::

    python tests/bench/replay_vs_tshark.py [--frames 100000] [--repeat 5] [--rss-frames 1000000]
                                           [--scenario all] [--baseline DIR]

It writes the captures (in a child process: the measuring parent stays small), then runs
``efmoam replay`` (text and ``--json``, output to /dev/null) and tshark on the same file,
interleaved, ``--repeat`` times each, and prints the median and the best wall time, their
ratio (tshark / replay, on the medians) and each command's peak RSS.  The issue's bar:
replay takes at most half of tshark's time on the 100,000-frame captures.  Then it runs
replay once on a ``--rss-frames`` capture to show that memory does not grow with the
capture.  ``--assert`` exits 1 when the bar is missed (on any scenario) or the peak RSS
grows by more than 10 MB from the small capture to the large one.

Scenarios:

* ``steady`` and ``distinct``: the two-speaker captures of ``tests/bench/decode_vs_tshark.py``
  (same generator): a realistic link, and no frame repeating the previous one of its
  speaker (the worst case: every frame is news);
* ``realistic``: another implementation's session (``pcaps/interop/events.pcapng``: its
  Discovery, Event Notifications, findings, ICMPv6 frames around them) repeated, each
  copy shifted to start a second after the previous one ends, to ``--frames`` frames.

``--baseline DIR`` also runs the replay of another tree (``DIR`` on PYTHONPATH, for
example ``git archive HEAD | tar -x -C DIR`` before a change), interleaved with the
others, so that before and after are measured side by side in one run.
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
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench.decode_vs_tshark import REPO, SCENARIOS, _env, tshark_command, write_pcap

#: the issue's bar: replay at most half of tshark's time
RATIO = 2.0
#: peak RSS may grow this much (KiB) from --frames to --rss-frames
RSS_GROWTH = 10 * 1024
#: the other implementation's session that ``realistic`` repeats
INTEROP = REPO / "pcaps" / "interop" / "events.pcapng"

Runs = dict[str, tuple[float, float, int]]


def realistic_frames(count: int, source: Path = INTEROP) -> Iterator[tuple[float, bytes]]:
    """(time, frame) of `source` repeated to `count` frames, each copy a second after the last."""
    from efmoam.offline.capture import read_capture  # in the generating child only

    records = [(record.time, record.data) for record in read_capture(source)]
    first, last = records[0][0], records[-1][0]
    shift = 0.0
    produced = 0
    while True:
        for when, data in records:
            yield when - first + shift + 1_750_000_000.0, data
            produced += 1
            if produced == count:
                return
        shift += last - first + 1.0


GENERATORS = {**SCENARIOS, "realistic": realistic_frames}


def generate(path: Path, scenario: str, frames: int) -> None:
    """Write the capture of `scenario` in a child process (pdu and scapy stay out of the parent)."""
    command = [sys.executable, __file__, "--generate", str(path), "--scenario", scenario, "--frames", str(frames)]
    subprocess.run(command, check=True, env=_env())


def replay_command(capture: Path, *options: str) -> list[str]:
    """``efmoam replay`` as this interpreter runs it."""
    return [sys.executable, "-m", "efmoam.cli", "replay", *options, str(capture)]


def run_measured(command: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[float, int]:
    """Run `command` with stdout to /dev/null: (wall seconds, peak RSS in KiB).

    Exit status 1 is allowed: ``efmoam replay`` exits 1 when it has findings.
    """
    with open(os.devnull, "wb") as devnull:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=devnull, stderr=subprocess.PIPE, env=env or _env(), cwd=cwd)
        assert process.stderr is not None
        stderr = process.stderr.read()
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise RuntimeError(f"{command[0]} failed: {stderr.decode(errors='replace')}")
    return wall, usage.ru_maxrss


def compare(capture: Path, repeat: int, baseline: Path | None = None) -> Runs:
    """Median and best wall time and peak RSS (KiB) per command, runs interleaved."""
    Where = tuple[list[str], dict[str, str] | None, Path | None]  # command, environment, directory
    commands: dict[str, Where] = {
        "replay": (replay_command(capture), None, REPO),
        "replay --json": (replay_command(capture, "--json"), None, REPO),
        "tshark": (tshark_command(capture), None, None),
    }
    if baseline is not None:  # run from its directory: ``python -m`` puts that first on sys.path
        env = dict(os.environ, PYTHONPATH=str(baseline))
        commands["before"] = (replay_command(capture), env, baseline)
        commands["before --json"] = (replay_command(capture, "--json"), env, baseline)
    runs: dict[str, list[tuple[float, int]]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, (command, command_env, cwd) in commands.items():
            runs[name].append(run_measured(command, command_env, cwd))
    return {
        name: (statistics.median(w for w, _ in r), min(w for w, _ in r), max(rss for _, rss in r))
        for name, r in runs.items()
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--rss-frames", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--scenario", choices=[*GENERATORS, "all"], default="all")
    parser.add_argument("--baseline", type=Path, metavar="DIR", help="also run the replay of the tree in DIR")
    parser.add_argument("--assert", dest="check", action="store_true", help="exit 1 when a bar is missed")
    parser.add_argument("--generate", type=Path, metavar="PCAP", help="only write the capture of --scenario")
    args = parser.parse_args()
    if args.generate:
        write_pcap(args.generate, GENERATORS[args.scenario if args.scenario != "all" else "steady"](args.frames))
        return 0
    if shutil.which("tshark") is None:
        sys.exit("tshark is not installed")
    version = subprocess.run(["tshark", "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    print(f"python {sys.version.split()[0]}, {version}; {os.cpu_count()} CPUs; load {os.getloadavg()[0]:.2f}")
    failed = False
    scenarios = list(GENERATORS) if args.scenario == "all" else [args.scenario]
    with tempfile.TemporaryDirectory(prefix="efmoam-replay-bench-") as tmp:
        small_rss = 0
        for scenario in scenarios:
            capture = Path(tmp) / f"{scenario}.pcap"
            generate(capture, scenario, args.frames)
            results = compare(capture, args.repeat, args.baseline and args.baseline.resolve())
            ratio = results["tshark"][0] / results["replay"][0]
            print(f"\n{scenario}: {args.frames} frames, {capture.stat().st_size / 1e6:.1f} MB, {args.repeat} runs each")
            for name, (wall, best, rss) in results.items():
                rate = args.frames / wall
                print(
                    f"  {name:14} median {wall:6.3f} s  best {best:6.3f} s  {rate:9.0f} frames/s"
                    f"  peak RSS {rss / 1024:6.1f} MB"
                )
            print(f"  tshark / replay: {ratio:.2f} (bar: {RATIO:.1f})")
            if "before" in results:
                print(f"  before / after: {results['before'][0] / results['replay'][0]:.2f} (text),", end=" ")
                print(f"{results['before --json'][0] / results['replay --json'][0]:.2f} (--json)")
            if scenario == "steady":
                small_rss = results["replay"][2]
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
