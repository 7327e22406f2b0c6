"""The counter poll: every ``counter_interval`` seconds, each port's error counters read
and given to its engine (link monitoring, 57.2.10 / 30.3.6.1).

* **Sources.**  One per kind (and file) for every port (`CounterPoll.source_for`); an
  rtnetlink source serves the whole poll from one dump, read by ifindex, and a file
  source from one look at its file (the poll's start is the reads' time, so its slices
  share the dump or the look).  The auto source
  is read through a plan per set of counters its ports read (`counters_read`): a port
  without NIC health monitors never asks a source (``ethtool -S``, FEC statistics) that
  only health counters need.  A source that fails is logged once per error; the port
  runs on without that sample.
* **Slices.**  A wake-up reads ports for about `SLICE` seconds; the rest go on in the
  next wake-up, which comes at once (`next_deadline`), after the sockets and the control
  socket had their turn.  A thousand ports failing at once are then a series of short
  wake-ups, not one long stall (issue 18).
* **Frames first.**  Each port's frames leave as soon as its sample is read
  (``OamPort.on_counters(frames_first=True)``, `PortRuntime.send_first`): a thousand
  ports failing at once notify their peers before anything is judged, logged, saved or
  acted on.  The rest of the samples' epilogues, and what they caused, is carried out
  once every port is read (a poll longer than the interval delays the next one); a
  port's own next input carries its share out first if that comes sooner, so a port's
  outputs keep their order, and a port removed meanwhile carries it out as it goes.
"""

from __future__ import annotations

import contextlib
import math
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path

from efmoam.config import PortProfile
from efmoam.core.linkmon import LinkMonitoringSettings
from efmoam.core.linkmon.kinds import HEALTH, MONITORS
from efmoam.daemon.journal import Journal
from efmoam.daemon.loop import SLICE, Guard
from efmoam.daemon.metrics import Telemetry
from efmoam.daemon.runtime import KERNEL_DROPS_INTERVAL, PortRuntime
from efmoam.linux.counters import (
    AutoSource,
    BaseCounterSource,
    CounterError,
    open_counter_source,
)


def counters_read(settings: LinkMonitoringSettings) -> frozenset[str]:
    """The counters a port reads: the four monitors' always (its aFramesReceivedOK is a
    variable, and the metrics show which of them a port has), the NIC health monitors'
    (measured and fatal) only while they run."""
    health = [facts.counters for facts in HEALTH if settings.enabled and settings.health(facts.kind).enabled]
    return frozenset(name for counters in [*(facts.counters for facts in MONITORS), *health] for name in counters)


class CounterPoll:
    """The poll of every port's counters; see the module's comment."""

    def __init__(
        self, interval: float, journal: Journal, telemetry: Telemetry, guard: Guard, clock: Callable[[], float]
    ) -> None:
        self.interval = interval  #: seconds between two polls (``daemon.counter_interval``)
        self.journal = journal
        self.telemetry = telemetry
        self.guard = guard
        self.clock = clock
        self.next_at = 0.0  #: when the next poll begins
        self.began = 0.0  #: when the poll under way began (its reads share one snapshot)
        self.pending: deque[PortRuntime] = deque()  #: the ports this poll has still to read
        self.carrying: deque[PortRuntime] = deque()  #: ports whose samples caused more than frames
        self._sources: dict[tuple[str, str | None], BaseCounterSource] = {}
        #: the auto source's plans, one per set of counters read (`counters_read`), over its sources
        self._auto_plans: dict[frozenset[str], AutoSource] = {}

    def source_for(self, profile: PortProfile) -> BaseCounterSource:
        """The source a port of `profile` reads (made on first use, then shared)."""
        key = (profile.counter_source.value, profile.counter_file)
        source = self._sources.get(key)
        if source is None:
            source = open_counter_source(key[0], counter_file=None if key[1] is None else Path(key[1]))
            self._sources[key] = source
            source.share_snapshots(self.interval / 2)
        if not isinstance(source, AutoSource):
            return source
        counters = counters_read(profile.settings.link_monitoring)
        plan = self._auto_plans.get(counters)
        if plan is None:
            plan = self._auto_plans[counters] = AutoSource(source.sources, counters)
        return plan

    def set_interval(self, interval: float, now: float) -> None:
        """A new ``counter_interval`` (a reload): from the next poll, which comes no later
        than one new interval from now."""
        self.interval = interval
        self.next_at = min(self.next_at, now + interval)
        for source in self._sources.values():
            source.share_snapshots(interval / 2)

    def next_deadline(self, now: float, ports: Mapping[str, PortRuntime]) -> float | None:
        """Now while a poll is under way, else when the next begins (None: no port)."""
        if self.pending or self.carrying:
            return now
        return self.next_at if ports else None

    def service(self, ports: Mapping[str, PortRuntime], now: float) -> None:
        """Begin a poll when one is due, and go on with the one under way for about `SLICE`."""
        pending, carrying = self.pending, self.carrying
        if now >= self.next_at and not (pending or carrying):  # (a poll longer than the interval: the next waits)
            self.next_at = now + self.interval
            self.began = now
            pending.extend(ports.values())
        if not (pending or carrying):
            return
        clock, read, caught = self.clock, self.read, self.guard.caught
        end = clock() + SLICE
        while pending:
            runtime = pending.popleft()
            if ports.get(runtime.name) is not runtime:
                continue  # removed (or replaced) since the poll began
            try:  # (`Guard.run` written out: once per port and poll)
                if read(runtime, now):
                    carrying.append(runtime)  # (first: carried out even if its send fails)
                    runtime.send_first(now)
            except Exception as exc:
                caught("counters", exc)
            if clock() >= end:
                return
        while carrying:
            self._carry_out_next(ports, now)
            if clock() >= end:
                return

    def finish(self, ports: Mapping[str, PortRuntime], now: float) -> None:
        """The daemon stops: no more reads; what the poll under way kept is carried out."""
        self.pending.clear()
        self.next_at = math.inf
        while self.carrying:
            self._carry_out_next(ports, now)

    def _carry_out_next(self, ports: Mapping[str, PortRuntime], now: float) -> None:
        """The next port's kept outputs, unless it was removed (it carried them out as it went)."""
        runtime = self.carrying.popleft()
        if ports.get(runtime.name) is runtime:
            self.guard.run("counters", runtime.flush, now)

    def read(self, runtime: PortRuntime, now: float) -> bool:
        """Read the port's counters (only those its monitors need) and give them to its
        engine; True when the engine has outputs.

        Every source is read with the poll's start (`read_in_poll`): one snapshot of the
        counters, an rtnetlink dump or a look at the counter file, fresh for half an
        interval (`share_snapshots`), serves the whole poll.  The socket's kernel drops
        are read here only every `KERNEL_DROPS_INTERVAL` (show and the metrics read
        them)."""
        if now >= runtime.kernel_drops_due:
            runtime.kernel_drops_due = now + KERNEL_DROPS_INTERVAL
            runtime.sock.read_kernel_drops()
        source, profile = runtime.counters, runtime.profile
        needed = runtime.counters_needed
        if needed is None or needed[0] is not profile:
            needed = runtime.counters_needed = (profile, counters_read(profile.settings.link_monitoring))
        try:
            # the poll's start, not now: the snapshot is the poll's, whatever the slice
            sample = source.read_in_poll(runtime.name, runtime.ifindex, needed[1], self.began)
        except (CounterError, OSError) as exc:
            if str(exc) != runtime.counter_error:
                runtime.counter_error = str(exc)
                self.journal.log("warning", "counters not read", port=runtime.name, error=exc)
            return False
        runtime.counter_error = None
        self.telemetry.last_samples[runtime.name] = sample  # metrics: counter availability
        # counters now read from other sources (a reload, auto finding a new one) jump between
        # two totals: that sample is a baseline, not an increase
        feed = (id(source), source.generation(runtime.name))
        rebased = runtime.counter_feed is not None and feed != runtime.counter_feed
        runtime.counter_feed = feed
        return runtime.port.on_counters(sample, now=now, rebased=rebased, frames_first=True)  # (False: nothing to take)

    def close(self) -> None:
        """Close every source."""
        for source in self._sources.values():
            with contextlib.suppress(Exception):
                source.close()
