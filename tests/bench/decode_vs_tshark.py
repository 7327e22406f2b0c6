"""Benchmark: ``efmoam decode --json`` next to ``tshark -T fields -e oampdu.code``.

Run from the repository root::

    python tests/bench/decode_vs_tshark.py [--frames 100000] [--repeat 5] [--scenario steady]

It writes two-speaker OAM captures in a temporary directory (built with `pdu.encode`,
written as pcap), then runs both commands on the same file, interleaved, ``--repeat``
times each, with standard output to /dev/null.  It reports the median and the minimum
wall time, frames per second, microseconds per frame net of start-up (start-up is
measured on a one-frame capture the same way) and the peak RSS of each run (from
``os.wait4``, per child process).  It measures; it asserts nothing about time.

Scenarios:

* ``steady``: what a link looks like: each speaker sends an Information OAMPDU every
  second (a few ms of jitter), identical frames in steady state, with a Critical Event
  flag raised for a few seconds every ten minutes (and the revision bumped on the other
  side); one speaker sends an Event Notification about every ten seconds, each with
  its own sequence number, timestamp and running totals.
* ``distinct``: no frame repeats the previous one from the same speaker (Event
  Notifications and Information OAMPDUs with changing fields, alternating): the
  worst case for the decoder's per-peer caches.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SRC_A = "02:00:00:00:00:0a"
SRC_B = "02:00:00:00:00:0b"
START = 1_750_000_000.0
STABLE = 0x50  # local_stable, remote_stable
CRITICAL_EVENT = 0x04
CONFIG = 0x0D  # active, remote_loopback, link_events
OUI_A, OUI_B = 0x001122, 0x111111


# pdu (and so scapy) is imported only where frames are built, in a child process, and
# no output is kept in memory: on Linux the peak RSS of a child (ru_maxrss from wait4)
# starts from its parent's at fork, so the measuring parent must stay small.


def _info(src: str, flags: int, ouis: tuple[int, int], revisions: tuple[int, int]) -> bytes:
    """An Information OAMPDU with a Local (ouis[0], revisions[0]) and a Remote TLV."""
    from pdu import Information, InfoTlv, encode

    local = InfoTlv(1, 1, revisions[0], 0, 0, 0, CONFIG, 0, 1500, ouis[0], 1)
    remote = InfoTlv(2, 1, revisions[1], 0, 0, 0, CONFIG, 0, 1500, ouis[1], 1)
    return encode(Information(src, flags, (local, remote)))


def _event(src: str, sequence: int, seconds: float) -> bytes:
    from pdu import EventNotification, LinkEventTlv, encode

    kind = 1 + sequence % 4  # the four standard link event TLV types, in turn
    timestamp = int(seconds * 10) & 0xFFFF
    window = {1: 125_000_000, 2: 10, 3: 1_000_000, 4: 600}[kind]
    errors = 1 + sequence % 7
    tlv = LinkEventTlv(kind, timestamp, window, 1, errors, sequence * 4 + errors, sequence + 1)
    return encode(EventNotification(src, STABLE, sequence & 0xFFFF, (tlv,)))


def steady_frames(count: int) -> Iterator[tuple[float, bytes]]:
    """(time, frame) of a realistic two-speaker link, in time order."""
    produced = 0
    second = 0
    sequence = 0
    revision_b = 1
    while True:
        critical = second % 600 < 3 and second >= 600
        if second % 600 == 3 and second > 600:
            revision_b += 1  # B saw A's flags change
        flags_a = STABLE | (CRITICAL_EVENT if critical else 0)
        jitter = (second * 7919 % 5000) / 1e6
        batch = [
            (START + second + jitter, _info(SRC_A, flags_a, (OUI_A, OUI_B), (1, revision_b))),
            (START + second + 0.37 + jitter, _info(SRC_B, STABLE, (OUI_B, OUI_A), (revision_b, 1))),
        ]
        if second % 10 == 5:
            batch.append((START + second + 0.52, _event(SRC_A, sequence, second)))
            sequence += 1
        for item in batch:
            yield item
            produced += 1
            if produced == count:
                return
        second += 1


def distinct_frames(count: int) -> Iterator[tuple[float, bytes]]:
    """(time, frame) where no frame equals the previous one from the same speaker."""
    for n in range(count):
        src = SRC_A if n % 2 == 0 else SRC_B
        seconds = n / 2
        if n % 4 < 2:
            yield START + seconds, _event(src, n // 2, seconds)
        else:
            yield START + seconds, _info(src, STABLE, (OUI_A, OUI_B), (n // 4 & 0xFFFF, 1))


SCENARIOS = {"steady": steady_frames, "distinct": distinct_frames}


def write_pcap(path: Path, frames: Iterator[tuple[float, bytes]]) -> int:
    """Write a microsecond pcap file (Ethernet); returns the number of frames."""
    count = 0
    with path.open("wb") as stream:
        stream.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for when, frame in frames:
            seconds = int(when)
            micros = min(round((when - seconds) * 1e6), 999_999)
            stream.write(struct.pack("<IIII", seconds, micros, len(frame), len(frame)))
            stream.write(frame)
            count += 1
    return count


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))


def generate(path: Path, scenario: str, frames: int) -> None:
    """Write the capture of *scenario* in a child process (see `_info`)."""
    command = [sys.executable, __file__, "--generate", str(path), "--scenario", scenario, "--frames", str(frames)]
    subprocess.run(command, check=True, env=_env())


def run_once(command: Sequence[str]) -> tuple[float, int]:
    """Run *command* with stdout to /dev/null: (wall seconds, peak RSS in KiB)."""
    env = _env()
    with open(os.devnull, "wb") as devnull:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=devnull, stderr=subprocess.PIPE, env=env)
        assert process.stderr is not None
        stderr = process.stderr.read()
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"{command[0]} exited {process.returncode}: {stderr.decode(errors='replace')}")
    return wall, usage.ru_maxrss


def efmoam_command(capture: Path) -> list[str]:
    """``efmoam decode --json`` as this interpreter runs it."""
    return [sys.executable, "-m", "efmoam.cli", "decode", "--json", str(capture)]


def tshark_command(capture: Path) -> list[str]:
    """tshark reading the OAMPDU code of every frame."""
    return ["tshark", "-n", "-r", str(capture), "-T", "fields", "-e", "oampdu.code"]


def _count_lines(command: Sequence[str]) -> int:
    """Non-empty lines *command* prints, read as a stream (the parent must stay small)."""
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=_env()) as process:
        assert process.stdout is not None
        count = sum(1 for line in process.stdout if line.strip())
    if process.returncode != 0:
        raise RuntimeError(f"{command[0]} exited {process.returncode}")
    return count


def check_same_count(capture: Path) -> tuple[int, int]:
    """Number of OAMPDUs per efmoam and per tshark (they must agree)."""
    return _count_lines(efmoam_command(capture)), _count_lines(tshark_command(capture))


def measure(commands: dict[str, list[str]], repeat: int) -> dict[str, list[tuple[float, int]]]:
    """Run every command *repeat* times, interleaved."""
    runs: dict[str, list[tuple[float, int]]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, command in commands.items():
            runs[name].append(run_once(command))
    return runs


def report(scenario: str, frames: int, size: int, runs: dict[str, list[tuple[float, int]]]) -> None:
    """Print one table for a scenario."""
    print(f"\nscenario {scenario}: {frames} frames, {size / 1e6:.1f} MB; {len(runs['efmoam'])} runs each")
    columns = ("median s", "min s", "frames/s", "us/frame net", "startup s", "peak RSS", "1-frame RSS")
    widths = (9, 7, 10, 13, 10, 9, 12)
    print(" " * 8, *(f"{name:>{width}}" for name, width in zip(columns, widths, strict=True)))
    for tool in ("efmoam", "tshark"):
        walls = [wall for wall, _ in runs[tool]]
        startup = statistics.median(wall for wall, _ in runs[f"{tool} startup"])
        median = statistics.median(walls)
        net = (median - startup) / frames * 1e6
        rss = max(rss for _, rss in runs[tool]) / 1024
        rss_one = max(rss for _, rss in runs[f"{tool} startup"]) / 1024
        print(
            f"{tool:8} {median:9.3f} {min(walls):7.3f} {frames / median:10.0f} {net:13.2f} {startup:10.3f}"
            f" {rss:7.1f}MB {rss_one:10.1f}MB"
        )
    ratio = statistics.median(w for w, _ in runs["tshark"]) / statistics.median(w for w, _ in runs["efmoam"])
    print(f"tshark / efmoam wall time: {ratio:.2f}")


def main() -> None:
    """Generate the captures, run both tools, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--scenario", choices=[*SCENARIOS, "all"], default="all")
    parser.add_argument("--generate", type=Path, metavar="PCAP", help="only write the capture of --scenario")
    args = parser.parse_args()
    if args.generate:
        write_pcap(args.generate, SCENARIOS[args.scenario if args.scenario != "all" else "steady"](args.frames))
        return
    if shutil.which("tshark") is None:
        sys.exit("tshark is not installed")
    tshark_version = subprocess.run(["tshark", "--version"], capture_output=True, text=True, check=True).stdout
    print(f"python {sys.version.split()[0]}, {tshark_version.splitlines()[0]}; {os.cpu_count()} CPUs")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"this process: peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f} MB")
    scenarios = list(SCENARIOS) if args.scenario == "all" else [args.scenario]
    with tempfile.TemporaryDirectory(prefix="efmoam-bench-") as tmp:
        one = Path(tmp) / "one.pcap"
        generate(one, "steady", 1)
        for scenario in scenarios:
            capture = Path(tmp) / f"{scenario}.pcap"
            generate(capture, scenario, args.frames)
            frames = args.frames
            ours, theirs = check_same_count(capture)
            print(f"\n{scenario}: efmoam printed {ours} OAMPDUs, tshark {theirs}")
            commands = {
                "efmoam": efmoam_command(capture),
                "tshark": tshark_command(capture),
                "efmoam startup": efmoam_command(one),
                "tshark startup": tshark_command(one),
            }
            report(scenario, frames, capture.stat().st_size, measure(commands, args.repeat))
    print(f"\nthis process: peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f} MB")


if __name__ == "__main__":
    main()
