"""How an OAMPDU socket reads what waits (issue 18): one read for the usual single frame,
bursts in one call, on a real veth pair (root)."""

from __future__ import annotations

import contextlib
import select
import socket
import time
from collections.abc import Iterator
from typing import Any

from efmoam.linux.packet import OamSocket
from tests.linux.netns import in_netns, needs_root, veth_pair

pytestmark = needs_root

SLOW_PROTOCOLS = bytes.fromhex("0180c2000002")
MAC_A = bytes.fromhex("020000000a01")


def oampdu(number: int) -> bytes:
    """An Information OAMPDU-shaped frame (subtype 3, code 0) told apart by `number`."""
    return (SLOW_PROTOCOLS + MAC_A + b"\x88\x09\x03\x00\x08\x00" + number.to_bytes(2, "big")).ljust(60, b"\0")


class CountingReads:
    """The socket under an `OamSocket`, counting its reads (the rest passes through)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.reads = 0

    def recv(self, size: int) -> bytes:
        self.reads += 1
        return self.sock.recv(size)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sock, name)


def queue_frames(sender: OamSocket, receiver: OamSocket, numbers: range) -> None:
    """Send the frames and wait until the receiver's queue holds them all (veth delivers at once)."""
    for number in numbers:
        assert sender.send(oampdu(number))
    assert select.select([receiver], [], [], 2.0)[0]
    time.sleep(0.05)


@contextlib.contextmanager
def counted_pair() -> Iterator[tuple[OamSocket, OamSocket, CountingReads]]:
    """A sender and a receiver on a veth pair, the receiver's reads counted."""
    with veth_pair() as (ns_a, ns_b):
        sender = in_netns(ns_a, lambda: OamSocket("veth0"))
        receiver = in_netns(ns_b, lambda: OamSocket("veth1"))
        counting = CountingReads(receiver._sock)
        receiver._sock = counting  # type: ignore[assignment]
        try:
            yield sender, receiver, counting
        finally:
            sender.close()
            receiver.close()


def test_a_single_frame_costs_one_read_and_a_burst_comes_in_one_call() -> None:
    with counted_pair() as (sender, receiver, counting):
        queue_frames(sender, receiver, range(1))
        assert receiver.receive(64) == [oampdu(0)]
        assert counting.reads == 1  # no second read to find the queue empty
        queue_frames(sender, receiver, range(1, 6))
        counting.reads = 0
        assert receiver.receive(64) == [oampdu(n) for n in range(1, 6)]
        assert counting.reads == 6  # the five, then the one that finds the queue empty
        queue_frames(sender, receiver, range(6, 11))
        assert receiver.receive(3) == [oampdu(n) for n in range(6, 9)]  # at most the limit
        assert receiver.receive(1) == [oampdu(9)]
        assert receiver.receive(64) == [oampdu(10)]
        counting.reads = 0
        assert receiver.receive(64) == []  # nothing waits: one read finds it out
        assert counting.reads == 1 and receiver.receive_errors == 0


def test_a_quiet_socket_reads_one_frame_and_a_burst_then_comes_in_one_call() -> None:
    """Given the time: the first read after a quiet spell reads one frame without asking
    whether more wait (the usual keep-alive); the selector reports the rest at once, and
    that read, close behind, asks and takes them all."""
    with counted_pair() as (sender, receiver, counting):
        queue_frames(sender, receiver, range(1))
        assert receiver.receive(64, now=10.0) == [oampdu(0)]
        assert counting.reads == 1
        queue_frames(sender, receiver, range(1, 6))
        counting.reads = 0
        assert receiver.receive(64, now=11.0) == [oampdu(1)]  # quiet for a second: one frame
        assert counting.reads == 1
        assert select.select([receiver], [], [], 0)[0]  # the rest is reported at once
        assert receiver.receive(64, now=11.001) == [oampdu(n) for n in range(2, 6)]  # a burst
        assert counting.reads == 1 + 5  # the four, then the one that finds the queue empty
        assert not select.select([receiver], [], [], 0)[0]
