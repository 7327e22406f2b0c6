"""What the metrics read of the daemon, and what the daemon records for them.

The engines keep almost everything the metrics show.  `Telemetry` holds the rest, written
by the daemon's loop as things happen (not per metric): when the last OAMPDU from each
port's peer arrived, which error counters the last counter read provided, and how many
events each port raised.  It also holds the fleet's histograms of the NIC health monitors
(`fleet.HealthHistograms`), which the scrapes update (under the daemon's lock).

What the loop records per frame and per counter read is kept raw and cheap (the peer's
MAC compared as bytes, converted once per peer; the last sample itself), and turned into
what the metrics show when a scrape reads it (`counters_present`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from efmoam.config.model import PortProfile
from efmoam.core import OamPort
from efmoam.core.linkmon import CounterSample, Location, Severity
from efmoam.core.linkmon.counters import STANDARD_COUNTERS
from efmoam.core.outputs import EventLogged
from efmoam.daemon.metrics.fleet import HealthHistograms

#: the classes of events counted, in the order of `Telemetry.events_raised`
EVENT_CLASSES = tuple((location, severity) for location in Location for severity in Severity)
NO_EVENTS = (0,) * len(EVENT_CLASSES)


class Telemetry:
    """What the daemon records for metrics that the engines do not keep (loop thread only)."""

    def __init__(self) -> None:
        self.last_samples: dict[str, CounterSample] = {}  #: port -> its last counter read (the poll stores it)
        #: port -> per `STANDARD_COUNTERS`: in the last read (computed from `last_samples` when read)
        self.counters_present: Mapping[str, tuple[bool, ...]] = _Presence(self.last_samples)
        self.events_raised: dict[str, tuple[int, ...]] = {}  #: port -> events raised per `EVENT_CLASSES`
        #: port -> session events raised, by event name (tracked conditions counted as ``track``)
        self.policy_events: dict[str, dict[str, int]] = {}
        #: per NIC health monitor, its closed windows merged over the ports (updated by the scrapes)
        self.health_windows = HealthHistograms()

    def event_logged(self, name: str, logged: EventLogged) -> None:
        """An event-log record: count it when it raises an event (not when it clears one)."""
        entry = logged.entry
        if entry.active:
            counts = list(self.events_raised.get(name, NO_EVENTS))
            counts[EVENT_CLASSES.index((entry.location, entry.severity))] += 1
            self.events_raised[name] = tuple(counts)

    def policy_event(self, name: str, event: str) -> None:
        """A session event of port `name` started (or a moment happened)."""
        counts = self.policy_events.setdefault(name, {})
        key = "track" if event.startswith("track:") else event
        counts[key] = counts.get(key, 0) + 1

    def forget(self, name: str) -> None:
        self.policy_events.pop(name, None)
        self.last_samples.pop(name, None)
        self.events_raised.pop(name, None)


class _Presence(Mapping[str, tuple[bool, ...]]):
    """port -> per `STANDARD_COUNTERS`: whether its last sample has it (a view of the samples)."""

    def __init__(self, samples: Mapping[str, CounterSample]) -> None:
        self._samples = samples

    def __getitem__(self, name: str) -> tuple[bool, ...]:
        sample = self._samples[name]
        return tuple(getattr(sample, counter) is not None for counter in STANDARD_COUNTERS)

    def __iter__(self) -> Iterator[str]:
        return iter(self._samples)

    def __len__(self) -> int:
        return len(self._samples)


class RuntimeLike(Protocol):
    """What the metrics read of a daemon's `PortRuntime`."""

    name: str
    port: OamPort
    profile: PortProfile
    action_error: str | None
    actions_reapplied: int  #: times the port's applied action was found undone and put back
    internal_errors: int  #: frames and outputs of the port the daemon failed on

    @property
    def receive_drops(self) -> tuple[tuple[str, int], ...]:
        """Frames dropped before the engine saw them, by `DropReason` value."""
        ...

    @property
    def peer_heard_at(self) -> float | None:
        """Monotonic time of the last frame from the port's peer (None: none yet)."""
        ...


class DaemonLike(Protocol):
    """What the metrics read of the daemon."""

    lock: threading.Lock  #: held by the loop while it processes one wake-up
    telemetry: Telemetry
    wall_clock_offset: float  #: wall-clock time minus the loop's monotonic time

    @property
    def ports(self) -> Mapping[str, RuntimeLike]: ...

    def health(self) -> Mapping[str, Any]:
        """The daemon's own condition: errors by where, the state file, the control socket."""
        ...
