"""Per-port rate rules applied around the engine, sans-IO (the caller gives `now`).

`RxPolicer` decides, before a frame is decoded, whether it is looked at at all.  The
bound peer has its own token bucket (by default twice the 10 OAMPDUs/s Clause 57.3.2.2
allows a sender, with a burst of 10); every other source (strangers, a second MAC, a
spoofed flood) shares one small bucket.  So no flood from other sources can take the
peer's share, and a peer sending more than twice its allowance is policed and counted.
Before a peer is bound, every frame uses the shared bucket.

`WireGuard` is the last check on what leaves: at most 10 OAMPDUs in any one second as
the socket sees them.  The engine already paces by the time it is given; the guard
covers the time between the engine's decision and the send (a long wake-up), holding a
frame until the window has room instead of sending it early.  It reads the time
itself, at the send (`clock`).
"""

from __future__ import annotations

from collections import deque

from efmoam.core.outputs import DropReason
from efmoam.core.pacing import PDU_LIMIT, PDU_PERIOD

PEER_BURST = 10.0  #: frames the bound peer may send back to back
OTHERS_BURST = 5.0  #: frames all other sources together may send back to back
HELD_LIMIT = 32  #: frames the wire guard holds at most (more are dropped and counted)
#: added to the guard's period: the send clock and a capture's timestamps differ by a few µs
WIRE_MARGIN = 0.005


class _Bucket:
    __slots__ = ("capacity", "rate", "stamp", "tokens")

    def __init__(self, rate: float, capacity: float, now: float) -> None:
        self.rate, self.capacity, self.tokens, self.stamp = rate, capacity, capacity, now

    def take(self, now: float) -> bool:
        tokens = self.tokens + (now - self.stamp) * self.rate
        self.stamp = now
        tokens = min(tokens, self.capacity)
        if tokens < 1.0:
            self.tokens = tokens
            return False
        self.tokens = tokens - 1.0
        return True


class RxPolicer:
    """Which received frames the port looks at; counts the others by class."""

    def __init__(self, peer_rate: float, others_rate: float, now: float) -> None:
        self._peer = _Bucket(peer_rate, min(PEER_BURST, peer_rate), now)
        self._others = _Bucket(others_rate, min(OTHERS_BURST, others_rate), now)
        self._peer_src: bytes | None = None  #: the bound peer's MAC as it appears in frames
        self._peer_mac: str | None = None
        self.peer_policed = 0  #: frames of the bound peer over its rate
        self.others_policed = 0  #: frames of other sources over their shared rate
        self.peer_heard_at: float | None = None  #: when a frame of the bound peer was last let through

    def set_rates(self, peer_rate: float, others_rate: float) -> None:
        self._peer.rate, self._peer.capacity = peer_rate, min(PEER_BURST, peer_rate)
        self._others.rate, self._others.capacity = others_rate, min(OTHERS_BURST, others_rate)

    def bind(self, peer_mac: str | None, frame: bytes | None = None, now: float = 0.0) -> None:
        """The engine's bound peer (None: none yet); `frame`, let through at `now`, may be
        the one that named it (then it counts as heard from the peer)."""
        if peer_mac != self._peer_mac:
            self._peer_mac = peer_mac
            self._peer_src = None if peer_mac is None else bytes.fromhex(peer_mac.replace(":", ""))
            if frame is not None and self._peer_src is not None and frame[6:12] == self._peer_src:
                self.peer_heard_at = now

    def refuse(self, frame: bytes, now: float) -> DropReason | None:
        """Why `frame` is not decoded (counted), or None: decode it."""
        if self._peer_src is not None and frame[6:12] == self._peer_src:
            if self._peer.take(now):
                self.peer_heard_at = now
                return None
            self.peer_policed += 1
            return DropReason.RATE_LIMIT
        if self._others.take(now):
            return None
        self.others_policed += 1
        return DropReason.RATE_LIMIT_OTHERS

    @property
    def policed(self) -> int:
        return self.peer_policed + self.others_policed


class WireGuard:
    """At most `limit` frames in any `period` seconds, by the clock at the socket."""

    def __init__(self, limit: int = PDU_LIMIT, period: float = PDU_PERIOD + WIRE_MARGIN) -> None:
        self._limit = limit
        self._period = period
        self._sent: deque[float] = deque(maxlen=limit)  #: the last `limit` send times
        self.held: deque[bytes] = deque()  #: frames waiting for the window, oldest first
        #: every frame waits until this is False again (a loopback change on its way to the data plane)
        self.paused = False
        self.held_total = 0  #: frames that had to wait (for the window, or while paused)
        self.dropped = 0  #: frames lost because too many were waiting

    def free_at(self) -> float | None:
        """When the next frame may go out (None: at once)."""
        sent = self._sent
        if len(sent) < self._limit:
            return None
        return sent[0] + self._period

    @property
    def release_at(self) -> float | None:
        """When held frames can go (None: nothing is held, or the wire is paused)."""
        return self.free_at() if self.held and not self.paused else None

    def offer(self, frame: bytes, now: float) -> bytes | None:
        """The frame to send now, or None when it is held (or dropped) for later."""
        if not self.held and not self.paused:
            sent = self._sent  # (`free_at`, written out: once per frame sent)
            if len(sent) < self._limit or sent[0] + self._period <= now:
                sent.append(now)
                return frame
        self.held_total += 1
        if len(self.held) >= HELD_LIMIT:
            self.dropped += 1
            return None
        self.held.append(frame)
        return None

    def release(self, now: float) -> list[bytes]:
        """Held frames whose turn has come, in order (none while paused)."""
        out: list[bytes] = []
        if self.paused:
            return out
        while self.held:
            free = self.free_at()
            if free is not None and free > now:
                break
            self._sent.append(now)
            out.append(self.held.popleft())
        return out
