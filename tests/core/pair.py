"""Two `OamPort` cores wired through an in-memory link on one fake clock.

`PortPair.run_until(t)` advances time event by event: frames in flight are delivered
when their delay has passed, each port's timer runs at its own deadline, and every
output is recorded with the time it appeared.  Each direction of the link can lose,
delay, duplicate or cut frames; a test can also inject frames of its own.
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections.abc import Callable
from typing import Any

import attrs

from efmoam.core import DiscoveryChanged, OamPort, Output, PortSettings, Transmit
from efmoam.core.discovery import DiscoveryState


@attrs.define
class Direction:
    """One direction of the link."""

    delay: float = 0.001
    loss: float = 0.0  #: probability that a frame is lost
    duplicate: float = 0.0  #: probability that a frame arrives twice
    cut: bool = False  #: every frame is lost


@attrs.define
class Record:
    """An output of a port, with when it appeared."""

    time: float
    port: str
    output: Output


class PortPair:
    """Ports "a" and "b" and the link between them."""

    def __init__(
        self,
        a: PortSettings | None = None,
        b: PortSettings | None = None,
        *,
        a_mac: str = "02:00:00:00:00:0a",
        b_mac: str = "02:00:00:00:00:0b",
        seed: int = 1,
        start: float = 0.0,
    ) -> None:
        self.now = start
        self.random = random.Random(seed)
        self.ports = {
            "a": OamPort(a or PortSettings(), a_mac, now=start),
            "b": OamPort(b or PortSettings(), b_mac, now=start),
        }
        self.link = {"a": Direction(), "b": Direction()}  # keyed by the sending port
        self.records: list[Record] = []
        self._in_flight: list[tuple[float, int, str, bytes]] = []  # (arrival, order, receiver, frame)
        self._order = itertools.count()
        self.on_output: Callable[[str, Output], None] | None = None
        self._collect()

    @property
    def a(self) -> OamPort:
        return self.ports["a"]

    @property
    def b(self) -> OamPort:
        return self.ports["b"]

    @staticmethod
    def peer_of(name: str) -> str:
        return "b" if name == "a" else "a"

    # -- driving -----------------------------------------------------------------------

    def _collect(self) -> None:
        for name, port in self.ports.items():
            for output in port.take_outputs():
                self.records.append(Record(self.now, name, output))
                if self.on_output is not None:
                    self.on_output(name, output)
                if isinstance(output, Transmit):
                    self._send(name, output.frame)

    def _send(self, sender: str, frame: bytes) -> None:
        direction = self.link[sender]
        if direction.cut or self.random.random() < direction.loss:
            return
        copies = 2 if self.random.random() < direction.duplicate else 1
        for _ in range(copies):
            arrival = self.now + direction.delay
            heapq.heappush(self._in_flight, (arrival, next(self._order), self.peer_of(sender), frame))

    def inject(self, receiver: str, frame: bytes, delay: float = 0.0) -> None:
        """Deliver a frame of the test's own to `receiver` after `delay`."""
        heapq.heappush(self._in_flight, (self.now + delay, next(self._order), receiver, frame))

    def call(self, name: str, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call an input method of a port at the current time and collect its outputs."""
        result = getattr(self.ports[name], method)(*args, now=self.now, **kwargs)
        self._collect()
        return result

    def run_until(self, end: float) -> None:
        """Advance the clock to `end`, processing every event on the way in time order."""
        while True:
            deadlines = [d for d in (p.next_deadline() for p in self.ports.values()) if d is not None]
            pending = deadlines + ([self._in_flight[0][0]] if self._in_flight else [])
            if not pending or min(pending) > end:
                break
            next_time = min(pending)
            self.now = max(self.now, next_time)
            while self._in_flight and self._in_flight[0][0] <= self.now:
                _, _, receiver, frame = heapq.heappop(self._in_flight)
                self.ports[receiver].receive(frame, now=self.now)
                self._collect()
            for port in self.ports.values():
                deadline = port.next_deadline()
                if deadline is not None and deadline <= self.now:
                    port.handle_timer(now=self.now)
            self._collect()
        self.now = end

    def run_for(self, seconds: float) -> None:
        self.run_until(self.now + seconds)

    # -- reading the record ------------------------------------------------------------

    def outputs(self, name: str, kind: type[Any]) -> list[Record]:
        return [r for r in self.records if r.port == name and isinstance(r.output, kind)]

    def sent_times(self, name: str) -> list[float]:
        return [r.time for r in self.outputs(name, Transmit)]

    def first_time_in(self, name: str, state: DiscoveryState) -> float | None:
        for r in self.outputs(name, DiscoveryChanged):
            if r.output.new is state:
                return r.time
        return None

    def both_in(self, state: DiscoveryState) -> bool:
        return self.a.state is state and self.b.state is state
