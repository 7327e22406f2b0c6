"""Link monitoring state as plain data, so a restarted daemon keeps it.

`snapshot` gives JSON-ready data: the event log as shown and the active events
themselves, each with its own entry (`EventLogEntry.view`), so no reuse of a log slot can
break a restore.  `restore` puts it back into a fresh `LinkMonitoring`:

* a port that was out of service stays out of service, failed monitors stay failed (so
  degrades stay suppressed) and degraded ones degraded, until cleared;
* remote flag events come back active and clear with the peer's first OAMPDU that no
  longer carries the flag;
* local flag events come back cleared: the flags they recorded (a Dying Gasp at
  shutdown, say) belonged to the process that set them.

Version 1 (which saved only the index of each active event's log entry) is still read;
an active event whose entry its log no longer showed is reported and left out.
"""

from __future__ import annotations

from typing import Any

from efmoam.core.linkmon.engine import LinkMonitoring
from efmoam.core.linkmon.eventlog import FLAG_SLOTS, EventLog, EventLogEntry, Location
from efmoam.core.linkmon.events import ActiveEvent, EventKey
from efmoam.core.linkmon.kinds import MonitorKind
from pdu.enums import CRITICAL_FLAGS, FLAG_EVENT_TYPES, Flag

VERSION = 2


def snapshot(monitoring: LinkMonitoring) -> dict[str, Any]:
    """The event log and the active events, as JSON-ready data."""
    return {
        "version": VERSION,
        "next_index": monitoring.log.next_index,
        "log": [entry.view(slot) for slot, entry in monitoring.log.entries()],
        "active": [
            {"key": event.key.view(), "flags": int(event.flags), "entry": event.entry.view(None)}
            for event in monitoring.active
        ],
    }


def restore(monitoring: LinkMonitoring, data: object) -> list[str]:
    """Put a snapshot back into a fresh `monitoring`; returns what could not be restored.

    Raises ValueError, naming the problem, on data it cannot use at all; `monitoring` is
    then left as it was.
    """
    if not isinstance(data, dict):
        raise ValueError(f"saved state is an object, not {type(data).__name__}")
    version = data.get("version")
    if version == VERSION:
        log, active, problems = _read_v2(data)
    elif version == 1:
        log, active, problems = _read_v1(data)
    else:
        raise ValueError(f"state version {version!r}, expected {VERSION}")
    monitoring.log = log
    for event in active:
        if event.key.location is Location.LOCAL and event.key.is_flag:
            monitoring.log.mark_cleared(event.entry)
        else:
            monitoring.restore_event(event)
    return problems


def _list(data: dict[str, Any], key: str) -> list[Any]:
    value = data.get(key)
    if not isinstance(value, list):
        raise ValueError(f"saved state without a {key} list")
    return value


def _next_index(data: dict[str, Any]) -> int:
    value = data.get("next_index")
    if type(value) is not int or not 1 <= value < 2**63:
        raise ValueError(f"saved next_index {value!r} is not a positive integer")
    return value


def _read_v2(data: dict[str, Any]) -> tuple[EventLog, list[ActiveEvent], list[str]]:
    log = EventLog()
    log.load([EventLogEntry.from_view(view) for view in _list(data, "log")], _next_index(data))
    active: list[ActiveEvent] = []
    for item in _list(data, "active"):
        if not isinstance(item, dict):
            raise ValueError("a saved active event is an object")
        key = EventKey.from_view(item.get("key"))
        _, entry = EventLogEntry.from_view(item.get("entry"))
        flags = item.get("flags")
        if type(flags) is not int or flags & ~int(CRITICAL_FLAGS):
            raise ValueError(f"saved flags {flags!r} are not critical flags")
        _check_key(key, entry)
        active.append(ActiveEvent(key, entry, Flag(flags)))
    if len({event.key for event in active}) != len(active):
        raise ValueError("two saved active events of the same key")
    return log, active, []


def _check_key(key: EventKey, entry: EventLogEntry) -> None:
    """The entry is an active event of what the key says."""
    if not entry.active or entry.location is not key.location:
        raise ValueError(f"saved active event {key.view()} has an entry of another location or a cleared one")
    is_flag_event = entry.event_type in FLAG_EVENT_TYPES.values()
    if key.is_flag is not is_flag_event:
        raise ValueError(f"saved active event {key.view()} has an entry of another type")


# -- version 1 ------------------------------------------------------------------------------


def _entry_v1(data: object) -> EventLogEntry:
    """An entry as version 1 saved it (its attributes, enums by value)."""
    if not isinstance(data, dict):
        raise ValueError("a version 1 log entry is an object")
    try:
        view = {
            **data,
            "type_number": data["event_type"],
            "oui": int(data["oui"]).to_bytes(3, "big").hex(":"),
            "slot": 1,
        }
        for key in ("window", "threshold", "value"):
            view[key] = None if view.get(key) == 2**64 - 1 else view.get(key)
    except (KeyError, TypeError, ValueError, OverflowError):
        raise ValueError("a version 1 log entry lacks its type or OUI") from None
    return EventLogEntry.from_view(view)[1]


def _read_v1(data: dict[str, Any]) -> tuple[EventLog, list[ActiveEvent], list[str]]:
    entries: list[tuple[int | None, EventLogEntry]] = []
    for item in _list(data, "log"):
        if not isinstance(item, list) or len(item) != 2 or type(item[0]) is not int:
            raise ValueError("a version 1 log item is [slot, entry]")
        entries.append((item[0], _entry_v1(item[1])))
    log = EventLog()
    try:
        log.load(entries, _next_index(data))
    except ValueError:  # version 1 let a local flag event take the slot of a remote one
        log.load([(slot, entry) for slot, entry in entries if slot not in FLAG_SLOTS.values()], _next_index(data))
    by_index = {entry.index: entry for _, entry in entries}
    active: list[ActiveEvent] = []
    problems: list[str] = []
    for item in _list(data, "active"):
        try:
            location, kind, what = item["key"]
            source: MonitorKind | Flag = MonitorKind(what) if kind == "monitor" else Flag(what)
            key = EventKey(Location(location), source)
            flags = Flag(int(item["flags"]) & int(CRITICAL_FLAGS))
            index = item["index"]
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"a version 1 active event {item!r} is not readable") from None
        entry = by_index.get(index)
        if entry is None or not entry.active:
            problems.append(f"active event {key.view()} lost: its log entry {index} was no longer kept")
            continue
        active.append(ActiveEvent(key, entry, flags))
    return log, active, problems
