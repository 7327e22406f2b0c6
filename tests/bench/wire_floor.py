"""The floor under the daemon's cost per port-second (issue 18): what the wire alone costs.

Run from the repository root, as root::

    python tests/bench/wire_floor.py [--ports 1024] [--seconds 20] [--daemon]

It builds the topology of ``tests/bench/test_daemon_scale_bench.py`` (N veth pairs, one
namespace per side) and runs in each namespace, instead of a daemon, the least a Link
OAM speaker does on the wire: one 60-octet slow-protocol frame sent per port a second
(the ports in 50 groups, as the daemon's timer slack groups them) and every frame the
peer sends read: no decoding, no protocol, no bookkeeping.  Two designs:

* ``per-port``: one AF_PACKET socket per port bound to ETH_P_SLOW (the daemon's: a
  flood on one port fills that port's queue only), a ``send`` per frame, a ``recv`` per
  frame, selected with ``select.epoll`` directly;
* ``shared``: one unbound socket for every port, each group sent with one ``sendmmsg``
  and frames read up to 64 at a time with ``recvmmsg`` (through ctypes): the fewest
  system calls one process can make, at the price of one queue for every port.

It prints, for side A, the CPU time (utime + stime) per port-second, the frames sent and
read per port-second, and (per-port) the time of one send and one recv measured around
the calls.  With ``--daemon`` the daemons of the scale benchmark then run on the same
topology, for the daemon's figure beside the floors in one run.  Nothing written in
Python above these system calls can cost less than its design's floor.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench.floor_speaker import DESIGNS
from tests.bench.test_daemon_scale_bench import Topology, topology
from tests.daemon.lab import PYTHON, missing_requirements

SPEAKER = Path(__file__).with_name("floor_speaker.py")


def speakers(topo: Topology, directory: Path, seconds: float, design: str) -> list[float]:
    """Both sides' speakers of `design` over `seconds`; A's figures."""
    procs = []
    for name, ns in zip(("a", "b"), topo.namespaces, strict=True):
        out = directory / f"floor-{name}.txt"
        out.unlink(missing_ok=True)
        command = [
            "ip",
            "netns",
            "exec",
            ns,
            PYTHON,
            str(SPEAKER),
            design,
            name,
            str(topo.ports),
            str(seconds),
            str(out),
        ]
        procs.append(subprocess.Popen(command))
    try:
        failed = [proc.wait(timeout=seconds + 120) != 0 for proc in procs]
    finally:
        for proc in procs:  # (both, whatever happened to the other)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    if any(failed):
        sys.exit(f"the {design} speaker failed")
    return [float(value) for value in (directory / "floor-a.txt").read_text().split()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ports", type=int, default=1024)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--daemon", action="store_true", help="and the daemons on the same topology size")
    args = parser.parse_args()
    reason = missing_requirements()
    if reason:
        sys.exit(reason)
    with contextlib.ExitStack() as stack:
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="efmoam-floor-")))
        topo = stack.enter_context(topology(directory, args.ports, "rtnetlink"))
        print(f"wire floor, side A, {args.ports} ports, {args.seconds:.0f} s")
        for design in DESIGNS:
            cpu, send, recv, sent, received = speakers(topo, directory, args.seconds, design)
            print(f"  {design:9s} cpu (utime + stime)  {cpu:7.2f} us/port-s")
            print(f"  {design:9s} frames               sent {sent:.2f}, read {received:.2f} a port-second")
            if send:  # (the shared design's calls carry many frames: not timed one by one)
                print(f"  {design:9s} one send, one recv   {send:7.2f} us, {recv:.2f} us")
        if args.daemon:
            topo.start_steady()
            before, start = topo.a.cpu_seconds(), time.monotonic()
            time.sleep(args.seconds)
            used, elapsed = topo.a.cpu_seconds() - before, time.monotonic() - start
            print(f"daemon A beside it     {used / elapsed / args.ports * 1e6:7.2f} us/port-s")


if __name__ == "__main__":
    os.umask(0o022)
    main()
