"""Where a daemon's time goes at scale (issue 18), measured inside the running daemon.

Run from the repository root, as root::

    python tests/bench/daemon_breakdown.py [--ports 1024] [--source rtnetlink|file]
                                           [--seconds 20] [--signal-failure]

It builds the topology of ``tests/bench/test_daemon_scale_bench.py`` (N veth pairs, a
daemon per namespace, link monitoring on) and starts daemon A with the probes of
`tests.bench.probe` (a ``sitecustomize`` on its PYTHONPATH wraps the methods of its
steady path).  It prints:

* steady state, over ``--seconds``: A's CPU time (utime + stime) per port-second, and
  per probe its microseconds per port-second, calls per port-second and microseconds a
  call.  The engine's rows (``timer: engine``, ``frames: engine``, ``counters: engine``)
  inside the daemon, and ``send`` (the kernel's transmit on veth, the peer's receive
  included), are what the daemon cannot shed: their sum is the floor of its cost per
  port-second in one process;
* with ``--signal-failure`` (file source; A alone on a CPU as in the benchmark): every
  port of A fails at once, and for the poll that reads the failure, per port: the
  counter read with its engine, the engine alone, the frames sent first and each send;
  and the poll's span from its first read to its last.

The probes cost about 0.3 us a call, inside the figures they wrap; the benchmarks
(tests/bench/test_daemon_scale_bench.py) measure without them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench.probe import SPAN
from tests.bench.test_daemon_scale_bench import Topology, alone_on_a_cpu, topology
from tests.daemon.lab import ROOT, missing_requirements, wait_for

SITECUSTOMIZE = """import os
if os.environ.get("EFMOAM_PROBE"):
    from tests.bench import probe
    probe.install(os.environ["EFMOAM_PROBE"])
"""


def snapshot(topo: Topology, directory: Path) -> dict[str, Any]:
    """What A's probes have so far (SIGUSR2: A writes them)."""
    path = directory / f"probe-{topo.a.pid}.json"
    path.unlink(missing_ok=True)
    os.kill(topo.a.pid, signal.SIGUSR2)
    wait_for(path.exists, 10, "the probes' file")
    time.sleep(0.05)  # written whole: the daemon writes it in one go, well within this
    return dict(json.loads(path.read_text()))


def steady(topo: Topology, directory: Path, seconds: float) -> None:
    before, cpu_before, start = snapshot(topo, directory), topo.a.cpu_seconds(), time.monotonic()
    time.sleep(seconds)
    after, cpu_after, elapsed = snapshot(topo, directory), topo.a.cpu_seconds(), time.monotonic() - start
    per_port_second = 1e6 / elapsed / topo.ports
    print(f"daemon A, {topo.ports} ports, {topo.source} counters, {elapsed:.1f} s")
    print(f"  cpu (utime + stime)       {(cpu_after - cpu_before) * per_port_second:7.2f} us/port-s")
    for label, (total_after, calls_after) in after["totals"].items():
        total_before, calls_before = before["totals"].get(label, [0.0, 0])
        total, calls = total_after - total_before, calls_after - calls_before
        print(
            f"  {label:24s}  {total * per_port_second:7.2f} us/port-s  {calls / elapsed / topo.ports:5.2f} calls/port-s"
            f"  {total / max(calls, 1) * 1e6:7.2f} us/call"
        )


def signal_failure(topo: Topology, directory: Path) -> None:
    before = snapshot(topo, directory)["polls"]
    topo.fail_all("a", 50)
    time.sleep(2.5)
    polls = {key: poll for key, poll in snapshot(topo, directory)["polls"].items() if key not in before}
    failing = [poll for poll in polls.values() if poll.get("counters: frames first", [0, 0])[1] >= topo.ports]
    if not failing:
        sys.exit("no poll sent frames first on every port")
    poll = failing[0]
    first, last = poll.pop(SPAN)
    print(f"the poll that read every port's failure, {topo.ports} ports: its own slices, a port's share")
    for label, (total, calls) in poll.items():
        print(
            f"  {label:24s}  {total / topo.ports * 1e6:7.2f} us/port  {calls:5d} calls"
            f"  {total / calls * 1e6:7.2f} us/call"
        )
    print(f"  from its first read to the last port's frames sent: {(last - first) * 1e3:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ports", type=int, default=1024)
    parser.add_argument("--source", choices=["rtnetlink", "file"], default="rtnetlink")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--signal-failure", action="store_true", help="and the poll of a failure (file)")
    args = parser.parse_args()
    reason = missing_requirements()
    if reason:
        sys.exit(reason)
    source = "file" if args.signal_failure else args.source
    with contextlib.ExitStack() as stack:
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="efmoam-breakdown-")))
        (directory / "sitecustomize.py").write_text(SITECUSTOMIZE)
        topo = stack.enter_context(topology(directory, args.ports, source))
        if args.signal_failure:
            stack.enter_context(alone_on_a_cpu(topo))
        topo.a.env = {"PYTHONPATH": f"{directory}{os.pathsep}{ROOT}", "EFMOAM_PROBE": str(directory)}
        topo.start_steady()
        steady(topo, directory, args.seconds)
        if args.signal_failure:
            signal_failure(topo, directory)


if __name__ == "__main__":
    main()
