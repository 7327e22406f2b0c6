"""The least a Link OAM speaker does on the wire, for `tests/bench/wire_floor.py`.

Run in one namespace of the floor's topology::

    python floor_speaker.py DESIGN PREFIX PORTS SECONDS OUT

Ports ``PREFIX0`` .. ``PREFIX<PORTS-1>`` each send one 60-octet slow-protocol frame a
second (in `GROUPS` groups, as the daemon's timer slack groups its ports) and every frame
that arrives is read; after a warm-up of `WARM_UP` seconds, what side the process used
is written to OUT as one line: CPU us per port-second, us per send, us per recv (0 where
not timed one by one), frames sent and read per port-second.  Standard library only.
"""

from __future__ import annotations

import ctypes
import os
import select
import socket
import sys
import time
from collections.abc import Callable

ETH_P_SLOW = 0x8809
GROUPS = 50  #: sends a second, each for a share of the ports
WARM_UP = 3.0  #: seconds before the measurement starts
FRAME = bytes.fromhex("0180c2000002020000000001880903005000") + bytes(42)  #: an Information header, padded to 60
RX_BATCH = 64  #: frames one recvmmsg reads at most


class Meter:
    """What the speaker counts once the warm-up is over."""

    def __init__(self, ports: int) -> None:
        self.ports = ports
        self.sent = self.received = 0
        self.send_time = self.recv_time = 0.0
        self.started: tuple[os.times_result, float] | None = None
        self.ended: tuple[os.times_result, float] | None = None

    def tick(self, now: float, warm_until: float) -> None:
        if self.started is None and now >= warm_until:
            self.started = (os.times(), now)
            self.sent = self.received = 0
            self.send_time = self.recv_time = 0.0

    def stop(self) -> None:
        """The window ends (before the sockets close: 1,024 closes take seconds of RCU grace periods)."""
        self.ended = (os.times(), time.monotonic())

    def line(self) -> str:
        assert self.started is not None and self.ended is not None, "the run ended before its warm-up"
        (before, since), (after, until) = self.started, self.ended
        wall = until - since
        used = (after.user + after.system) - (before.user + before.system)
        figures = (
            used / self.ports / wall * 1e6,
            self.send_time / max(self.sent, 1) * 1e6,
            self.recv_time / max(self.received, 1) * 1e6,
            self.sent / self.ports / wall,
            self.received / self.ports / wall,
        )
        return " ".join(f"{figure:.4f}" for figure in figures) + "\n"


def run(meter: Meter, seconds: float, fds: list[int], read: Callable[[int], None], send: Callable[[int], None]) -> None:
    """Send group after group, `GROUPS` a second, and read each of `fds` when it is readable."""
    poller = select.epoll()
    for fd in fds:
        poller.register(fd, select.EPOLLIN)
    start = time.monotonic()
    end, warm_until, next_at, turn = start + WARM_UP + seconds, start + WARM_UP, start, 0
    while (now := time.monotonic()) < end:
        meter.tick(now, warm_until)
        for ready, _ in poller.poll(max(0.0, next_at - now)):
            read(ready)
        if time.monotonic() >= next_at:
            send(turn)
            turn, next_at = (turn + 1) % GROUPS, next_at + 1.0 / GROUPS
    meter.stop()


def per_port(prefix: str, ports: int, seconds: float) -> Meter:
    """A socket per port, bound; a send per frame, a recv per frame."""
    socks = []
    for i in range(ports):
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        sock.bind((f"{prefix}{i}", ETH_P_SLOW))
        sock.setblocking(False)
        socks.append(sock)
    by_fd = {sock.fileno(): sock for sock in socks}
    groups = [socks[g::GROUPS] for g in range(GROUPS)]
    meter, clock = Meter(ports), time.perf_counter

    def read(fd: int) -> None:
        start = clock()
        by_fd[fd].recv(1514)
        meter.recv_time += clock() - start
        meter.received += 1

    def send(group: int) -> None:
        for sock in groups[group]:
            start = clock()
            sock.send(FRAME)
            meter.send_time += clock() - start
            meter.sent += 1

    run(meter, seconds, list(by_fd), read, send)
    return meter


class SockaddrLl(ctypes.Structure):
    _fields_ = [
        ("family", ctypes.c_ushort), ("protocol", ctypes.c_ushort), ("ifindex", ctypes.c_int),
        ("hatype", ctypes.c_ushort), ("pkttype", ctypes.c_ubyte), ("halen", ctypes.c_ubyte),
        ("addr", ctypes.c_ubyte * 8),
    ]  # fmt: skip


class Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class Msghdr(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_void_p), ("namelen", ctypes.c_uint), ("iov", ctypes.POINTER(Iovec)),
        ("iovlen", ctypes.c_size_t), ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
        ("flags", ctypes.c_int),
    ]  # fmt: skip


class Mmsghdr(ctypes.Structure):
    _fields_ = [("hdr", Msghdr), ("len", ctypes.c_uint)]


def _messages(buffers: list[ctypes.Array[ctypes.c_char]], addresses: ctypes.Array[SockaddrLl]) -> ctypes.Array[Mmsghdr]:
    """An mmsghdr per buffer, each with its address; kept alive by the arrays it points to."""
    count = len(buffers)
    iovs = (Iovec * count)()
    messages = (Mmsghdr * count)()
    for j, buffer in enumerate(buffers):
        iovs[j].base, iovs[j].len = ctypes.addressof(buffer), len(buffer)
        header = messages[j].hdr
        header.name, header.namelen = ctypes.addressof(addresses[j]), ctypes.sizeof(SockaddrLl)
        header.iov, header.iovlen = ctypes.pointer(iovs[j]), 1
    messages._keep = (buffers, addresses, iovs)  # type: ignore[attr-defined]
    return messages


def shared(prefix: str, ports: int, seconds: float) -> Meter:
    """One unbound socket for every port; sendmmsg a group, recvmmsg up to `RX_BATCH`."""
    libc = ctypes.CDLL(None, use_errno=True)
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_SLOW))
    sock.setblocking(False)
    fd = sock.fileno()
    frame = ctypes.create_string_buffer(FRAME, len(FRAME))
    indexes = [socket.if_nametoindex(f"{prefix}{i}") for i in range(ports)]
    batches = []
    for group in range(GROUPS):
        members = indexes[group::GROUPS]
        addresses = (SockaddrLl * len(members))()
        for j, ifindex in enumerate(members):
            addresses[j].family, addresses[j].protocol = socket.AF_PACKET, socket.htons(ETH_P_SLOW)
            addresses[j].ifindex = ifindex
        batches.append((len(members), _messages([frame] * len(members), addresses)))
    buffers = [ctypes.create_string_buffer(1514) for _ in range(RX_BATCH)]
    sources = (SockaddrLl * RX_BATCH)()
    inbox = _messages(buffers, sources)
    meter = Meter(ports)

    def read(_fd: int) -> None:
        while (got := libc.recvmmsg(fd, inbox, RX_BATCH, socket.MSG_DONTWAIT, None)) > 0:
            for j in range(got):  # what a receiver takes of each: its octets and its port
                _frame, _port = buffers[j].raw[: inbox[j].len], sources[j].ifindex
            meter.received += got
            if got < RX_BATCH:
                break

    def send(group: int) -> None:
        count, messages = batches[group]
        meter.sent += max(0, libc.sendmmsg(fd, messages, count, 0))

    run(meter, seconds, [fd], read, send)
    return meter


DESIGNS = {"per-port": per_port, "shared": shared}


def main() -> None:
    design, prefix, ports, seconds, out = sys.argv[1:6]
    meter = DESIGNS[design](prefix, int(ports), float(seconds))
    with open(out, "w") as stream:
        stream.write(meter.line())


if __name__ == "__main__":
    main()
