"""Benchmark: ``efmoam replay FILE`` (observe mode) next to ``tshark -T fields -e oampdu.code``.

Run from the repository root::

    python tests/bench/replay_vs_tshark.py [--frames 100000] [--repeat 5] [--rss-frames 1000000]
                                           [--rss-scenario steady] [--scenario all] [--baseline DIR]

It writes the captures (in a child process: the measuring parent stays small), then runs
``efmoam replay`` (text and ``--json``, output to /dev/null) and tshark on the same file,
interleaved, ``--repeat`` times each, and prints the median and the best wall time, their
ratio (tshark / replay, on the medians) and each command's peak RSS.  The issue's bar:
replay takes at most half of tshark's time on the 100,000-frame captures.  Then it runs
replay once on a ``--rss-frames`` capture of ``--rss-scenario`` (each of them with
``all``) to show that memory does not grow with the capture.  ``--assert`` exits 1 when
the bar is missed (on any scenario) or the peak RSS grows by more than 10 MB from the
small capture to the large one.

Scenarios:

* ``steady`` and ``distinct``: the two-speaker captures of ``tests/bench/decode_vs_tshark.py``
  (same generator): a realistic link, and no frame repeating the previous one of its
  speaker (the worst case: every frame is news);
* ``realistic``: another implementation's session (``pcaps/interop/events.pcapng``: its
  Discovery, Event Notifications, findings, ICMPv6 frames around them) repeated, each
  copy shifted to start a second after the previous one ends, to ``--frames`` frames.

Replay runs with its bytecode cached (in the temporary directory, written by one run
that is not measured), as an installed efmoam starts; ``--no-bytecode-cache`` runs it in
the environment as it is (with PYTHONDONTWRITEBYTECODE set, every start compiles every
module, about 40 ms).

``--floors`` also measures, on ``distinct``, what any observe run of it does at least
(`floors`: reading the records, decoding every frame, writing a line per frame, and the
start-up on a one-frame capture), and so the best ratio replay could reach there.

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
from collections.abc import Callable, Iterator
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


def floors(capture: Path, rounds: int = 3) -> dict[str, float]:
    """Microseconds per frame (CPU, best of `rounds`) of what any observe run of `capture` does
    at least: read the records, decode every frame (the codec; a frame that is news must be
    decoded), and write one short line per frame.  With the start-up, they bound replay's time
    from below on a capture where every frame is news."""
    import io  # in the measuring child only (see `floors_in_child`)

    from efmoam.offline.capture import read_capture
    from pdu import DecodeError, decode

    def best(work: Callable[[], object]) -> float:
        times = []
        for _ in range(rounds):
            start = time.process_time()
            work()
            times.append(time.process_time() - start)
        return min(times)

    def decodes(frame: bytes) -> bool:
        try:
            decode(frame)
        except DecodeError:
            return False
        return True

    records = list(read_capture(capture))
    oampdus = [record.data for record in records if decodes(record.data)]  # what replay decodes

    def decode_all() -> None:
        for frame in oampdus:
            decode(frame)

    def write_lines() -> None:
        out = io.StringIO()
        for record in records:
            out.write(f"{record.number}  {record.time:.6f}  02:00:00:00:00:0a  revision {record.number}\n")

    per_frame = 1e6 / len(records)
    return {
        "read": best(lambda: sum(1 for _ in read_capture(capture))) * per_frame,
        "decode": best(decode_all) * per_frame,
        "line": best(write_lines) * per_frame,
    }


def floors_in_child(capture: Path) -> dict[str, float]:
    """`floors` measured in a child process (pdu stays out of the parent)."""
    command = [sys.executable, __file__, "--floors-of", str(capture)]
    output = subprocess.run(command, check=True, env=_env(), capture_output=True, text=True).stdout
    return {name: float(value) for name, value in (item.split("=") for item in output.split())}


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


def with_bytecode(env: dict[str, str], pycache: Path | None) -> dict[str, str]:
    """`env` where Python keeps its bytecode in `pycache` (None: `env` as it is).

    An installed efmoam starts from compiled bytecode; without it (PYTHONDONTWRITEBYTECODE,
    as some shells and CI set) every start compiles every module again, about 40 ms here.
    """
    if pycache is None:
        return env
    env = {name: value for name, value in env.items() if name != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPYCACHEPREFIX": str(pycache)}


def compare(capture: Path, repeat: int, baseline: Path | None = None, pycache: Path | None = None) -> Runs:
    """Median and best wall time and peak RSS (KiB) per command, runs interleaved.

    With `pycache`, the replays run with their bytecode cached there (`with_bytecode`),
    after one run each that is not measured (it writes the cache).
    """
    Where = tuple[list[str], dict[str, str] | None, Path | None]  # command, environment, directory
    env = with_bytecode(_env(), pycache)
    commands: dict[str, Where] = {
        "replay": (replay_command(capture), env, REPO),
        "replay --json": (replay_command(capture, "--json"), env, REPO),
        "tshark": (tshark_command(capture), None, None),
    }
    if baseline is not None:  # run from its directory: ``python -m`` puts that first on sys.path
        before_env = with_bytecode(dict(os.environ, PYTHONPATH=str(baseline)), pycache)
        commands["before"] = (replay_command(capture), before_env, baseline)
        commands["before --json"] = (replay_command(capture, "--json"), before_env, baseline)
    if pycache is not None:
        for name, (command, command_env, cwd) in commands.items():
            if name != "tshark":
                run_measured(command, command_env, cwd)
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
    parser.add_argument("--rss-scenario", choices=[*GENERATORS, "all"], default="steady")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--scenario", choices=[*GENERATORS, "all"], default="all")
    parser.add_argument("--baseline", type=Path, metavar="DIR", help="also run the replay of the tree in DIR")
    parser.add_argument("--assert", dest="check", action="store_true", help="exit 1 when a bar is missed")
    parser.add_argument(
        "--no-bytecode-cache",
        dest="bytecode_cache",
        action="store_false",
        help="run replay in this environment as it is (by default its bytecode is cached, as when installed)",
    )
    parser.add_argument("--generate", type=Path, metavar="PCAP", help="only write the capture of --scenario")
    parser.add_argument("--floors", action="store_true", help="also measure the floors of replay's time (`floors`)")
    parser.add_argument("--floors-of", type=Path, metavar="PCAP", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floors_of:
        print(" ".join(f"{name}={value:.3f}" for name, value in floors(args.floors_of).items()))
        return 0
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
        small_rss: dict[str, int] = {}
        pycache = Path(tmp) / "pycache" if args.bytecode_cache else None
        if args.floors:
            generate(Path(tmp) / "one.pcap", "steady", 1)  # the start-up, measured as replay runs
        for scenario in scenarios:
            capture = Path(tmp) / f"{scenario}.pcap"
            generate(capture, scenario, args.frames)
            results = compare(capture, args.repeat, args.baseline and args.baseline.resolve(), pycache)
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
            if args.floors and scenario == "distinct":  # every frame news: decoded, with a line
                floor = floors_in_child(capture)
                startup = compare(Path(tmp) / "one.pcap", args.repeat, None, pycache)["replay"][0]
                lowest = startup + sum(floor.values()) * args.frames / 1e6
                print(
                    "  floors: " + ", ".join(f"{name} {value:.2f} us/frame" for name, value in floor.items()),
                    f"start-up {startup:.3f} s: at least {lowest:.3f} s, tshark / replay at most"
                    f" {results['tshark'][0] / lowest:.2f}",
                )
            small_rss[scenario] = results["replay"][2]
            failed |= ratio < RATIO
        for scenario in list(GENERATORS) if args.rss_scenario == "all" else [args.rss_scenario]:
            if not args.rss_frames:
                break
            capture = Path(tmp) / "large.pcap"
            generate(capture, scenario, args.rss_frames)
            wall, rss = run_measured(replay_command(capture), with_bytecode(_env(), pycache))
            capture.unlink()
            print(f"\n{scenario}: {args.rss_frames} frames, {wall:.3f} s, peak RSS {rss / 1024:.1f} MB", end="")
            if scenario in small_rss:
                print(f" (at {args.frames} frames: {small_rss[scenario] / 1024:.1f} MB)", end="")
                failed |= rss - small_rss[scenario] > RSS_GROWTH
            print()
    if args.check and failed:
        print("\nFAILED: a bar was missed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
