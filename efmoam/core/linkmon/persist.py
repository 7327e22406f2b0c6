"""Link monitoring state as plain data, so a restarted daemon keeps it.

`snapshot` gives JSON-ready data: the event log and which events are active.  `restore`
puts it back into a fresh `LinkMonitoring`: a port that was out of service stays out of
service, and failed monitors stay failed (so degrades stay suppressed) until cleared.
Remote flag events come back active and clear with the peer's first Information OAMPDU
that no longer carries the flag.  Local flag events come back cleared: the flags they
recorded (a Dying Gasp at shutdown, say) belonged to the process that set them.
"""

from __future__ import annotations

from typing import Any

import attrs

from efmoam.core.linkmon.engine import ActiveEvent, LinkMonitoring
from efmoam.core.linkmon.eventlog import EventLogEntry, Location, Severity
from efmoam.core.linkmon.monitors import MonitorState
from efmoam.core.linkmon.settings import MonitorKind
from pdu import EventLogType, Flag

VERSION = 1


def entry_to_dict(entry: EventLogEntry) -> dict[str, Any]:
    data = attrs.asdict(entry)
    data.update(location=entry.location.value, event_type=int(entry.event_type), severity=entry.severity.value)
    return data


def entry_from_dict(data: dict[str, Any]) -> EventLogEntry:
    fields = dict(data)
    fields.update(
        location=Location(data["location"]),
        event_type=EventLogType(data["event_type"]),
        severity=Severity(data["severity"]),
    )
    return EventLogEntry(**fields)


def _key_to_data(key: tuple[object, ...]) -> list[Any]:
    location, what = key
    assert isinstance(location, Location)
    if isinstance(what, MonitorKind):
        return [location.value, "monitor", what.value]
    return [location.value, "flag", int(what)]  # type: ignore[call-overload]


def _key_from_data(data: list[Any]) -> tuple[object, ...]:
    location, kind, what = data
    return (Location(location), MonitorKind(what) if kind == "monitor" else Flag(what))


def snapshot(monitoring: LinkMonitoring) -> dict[str, Any]:
    """The event log and the active events, as JSON-ready data."""
    return {
        "version": VERSION,
        "log": [[slot, entry_to_dict(entry)] for slot, entry in monitoring.log.entries()],
        "next_index": monitoring.log.next_index,
        "next_ring_slot": monitoring.log.next_ring_slot,
        "active": [
            {"key": _key_to_data(event.key), "index": event.entry.index, "flags": int(event.flags)}
            for event in monitoring.active.values()
        ],
    }


def restore(monitoring: LinkMonitoring, data: dict[str, Any]) -> None:
    """Put a snapshot back; raises ValueError (or KeyError/TypeError) on data it cannot use."""
    if data.get("version") != VERSION:
        raise ValueError(f"state version {data.get('version')!r}, expected {VERSION}")
    entries = {int(slot): entry_from_dict(entry) for slot, entry in data["log"]}
    monitoring.log.load(entries, int(data["next_index"]), int(data["next_ring_slot"]))
    by_index = {entry.index: entry for entry in entries.values()}
    for item in data["active"]:
        key = _key_from_data(item["key"])
        entry = by_index[int(item["index"])]
        if key[0] is Location.LOCAL and isinstance(key[1], Flag):
            monitoring.log.mark_cleared(entry.index)
            continue
        monitoring.active[key] = ActiveEvent(key, entry, Flag(int(item["flags"])))
        location, what = key
        if location is Location.LOCAL and isinstance(what, MonitorKind) and entry.severity is Severity.FAILURE:
            monitoring.monitors[what].state = MonitorState.FAILED
    monitoring.refresh_service()
