"""The active events of a port: the truth about what acts on it now.

An event is keyed by where it happened and what raised it (`EventKey`): one of the
four monitors (57.5.3) or one of the three critical flags of the Flags field
(57.4.2.1), local or remote, or one of the five NIC health monitors (local only).  At
most one event per key is active, so at most thirteen monitor events and six flag events.

The set is self-contained: an active event carries its own log entry, so nothing is
ever looked up in the event log (a display, which may drop what is over).  What events
imply is derived here and nowhere else, recomputed whenever the set changes:

* the Information flags they set (a local failure's info-notification flags, the
  flags our own client set);
* which events hold the port out of service (`holders`).  Whether the port *is* out of
  service is the action policy's to derive (`efmoam.core.policy.engine.Policy.service`):
  an event that latches holds the port after it ended.
"""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from efmoam.core.linkmon.eventlog import EventLogEntry, Location
from efmoam.core.linkmon.kinds import HealthKind, MonitorKind
from efmoam.core.linkmon.settings import LinkMonitoringSettings, PortAction
from pdu.enums import CRITICAL_FLAGS, Flag
from pdu.model import to_flag

NO_FLAGS = Flag(0)
_HEALTH_NAMES = frozenset(kind.value for kind in HealthKind)


@attrs.frozen
class EventKey:
    """What raised an event, and where."""

    location: Location
    source: MonitorKind | HealthKind | Flag  #: a monitor, a health monitor or one of the three critical flags

    def __attrs_post_init__(self) -> None:
        if isinstance(self.source, Flag) and (self.source not in CRITICAL_FLAGS or self.source.bit_count() != 1):
            raise ValueError(f"an event's flag is one critical flag, not {self.source!r}")
        if isinstance(self.source, HealthKind) and self.location is not Location.LOCAL:
            raise ValueError(f"a health monitor's event is local, not {self.location.value}")

    @property
    def is_flag(self) -> bool:
        return isinstance(self.source, Flag)

    def view(self) -> dict[str, str]:
        """As plain data: ``{"location": "local", "monitor": "errored-frame"}`` (``"fec-corrected"`` for
        a health monitor) or ``{..., "flag": "dying_gasp"}``."""
        if isinstance(self.source, Flag):
            return {"location": self.location.value, "flag": str(self.source.name).lower()}
        return {"location": self.location.value, "monitor": self.source.value}

    @classmethod
    def from_view(cls, view: object) -> EventKey:
        """Read `view` back; ValueError names what is wrong."""
        if not isinstance(view, dict) or set(view) not in ({"location", "monitor"}, {"location", "flag"}):
            raise ValueError(f"an event key is a location and a monitor or a flag, not {view!r}")
        try:
            location = Location(view["location"])
            if "monitor" in view:
                name = view["monitor"]
                return cls(location, HealthKind(name) if name in _HEALTH_NAMES else MonitorKind(name))
            flag = Flag[str(view["flag"]).upper()]
        except (KeyError, ValueError, TypeError):
            raise ValueError(f"event key {view!r} names no location, monitor or flag") from None
        return cls(location, flag)


def configured_action(settings: LinkMonitoringSettings, key: EventKey) -> PortAction:
    """What an event of `key` does to the port (a local signal failure's local-sf-action,
    the peer's flags and reports their peer action; our own flags never act)."""
    source = key.source
    if key.location is Location.LOCAL:
        return settings.local_sf_action.port_action if not isinstance(source, Flag) else PortAction.LOG_ONLY
    if isinstance(source, Flag):
        return settings.peer_actions.for_flag(source)
    return settings.peer_actions.event_notification


@attrs.frozen
class ActiveEvent:
    """An active event: its log entry, and the Information flags it sets while it lasts."""

    key: EventKey
    entry: EventLogEntry
    flags: Flag = NO_FLAGS


class ActiveEvents:
    """The active events of a port, and what they imply."""

    def __init__(self) -> None:
        self._events: dict[EventKey, ActiveEvent] = {}
        self.info_flags = NO_FLAGS  #: the Information flags the active events set
        self.version = 0  #: grows with every change of the set

    def add(self, event: ActiveEvent) -> ActiveEvent | None:
        """Make `event` active; returns the event of the same key it replaces, if any."""
        old = self._events.pop(event.key, None)
        self._events[event.key] = event
        self._derive()
        return old

    def remove(self, key: EventKey) -> ActiveEvent | None:
        """End the event of `key`; returns it (None when none was active)."""
        event = self._events.pop(key, None)
        if event is not None:
            self._derive()
        return event

    def _derive(self) -> None:
        self.version += 1
        flags = 0  # ints: IntFlag arithmetic is slow (int | IntFlag would call IntFlag.__ror__)
        for event in self._events.values():
            flags |= int(event.flags)
        self.info_flags = to_flag(flags)

    def get(self, key: EventKey) -> ActiveEvent | None:
        return self._events.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self._events

    def __iter__(self) -> Iterator[ActiveEvent]:
        """The active events, as they are now (the set may change while they are iterated)."""
        return iter(list(self._events.values()))

    def __len__(self) -> int:
        return len(self._events)

    def entries(self) -> tuple[EventLogEntry, ...]:
        return tuple(event.entry for event in self._events.values())

    def holders(self) -> tuple[str, ...]:
        """Why the port is out of service: one name per event that holds it."""
        return holders_of(self.entries())


def holder_name(entry: EventLogEntry) -> str:
    """How an event is named where it holds a port (``local errored_frame_event``; a health
    event by its monitor, ``local fec_uncorrectable``)."""
    return f"{entry.location.value} {entry.monitor or entry.event_type.name.lower()}"


def holders_of(entries: tuple[EventLogEntry, ...] | list[EventLogEntry]) -> tuple[str, ...]:
    """The names of the entries that hold a port out of service (``local errored_frame_event``)."""
    return tuple(holder_name(entry) for entry in entries if entry.port_affecting)
