"""Link monitoring state as plain data, so a restarted daemon keeps it.

`snapshot` gives JSON-ready data: the event log as shown and the active events
themselves, each with its own entry (`EventLogEntry.saved`), so no reuse of a log slot can
break a restore.  `restore` puts it back into a fresh `LinkMonitoring`:

* a port that was out of service stays out of service, failed monitors stay failed (so
  degrades stay suppressed) and degraded ones degraded, until cleared;
* remote flag events come back active and clear with the peer's first OAMPDU that no
  longer carries the flag;
* local flag events come back cleared: the flags they recorded (a Dying Gasp at
  shutdown, say) belonged to the process that set them;
* the active events are the truth: a log entry marked active that is no saved active
  event is shown cleared.

NIC health events are saved and restored as the others (their entries carry ``monitor``,
their keys a health monitor's name); states saved before them load unchanged.

The file is input like any other: whatever it holds, `restore` either restores or raises
ValueError naming the problem, and then leaves `monitoring` as it was.  Version 2 (the
same shape, the entries under the names of schema 1 of ``show port``: ``time``
monotonic, ``wall_time``, ``window``, ``value``, ``running_total``, ``event_total``) is
read by renaming its keys.  Version 1 (which saved only the index of each active event's
log entry) is still read; a flag event whose entry that version's log had overwritten is
rebuilt from its key, any other active event without its entry is reported and left out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from efmoam.core.linkmon.engine import LinkMonitoring
from efmoam.core.linkmon.eventlog import FLAG_SLOTS, NOT_A_THRESHOLD, EventLog, EventLogEntry, Location, Severity
from efmoam.core.linkmon.events import ActiveEvent, EventKey
from efmoam.core.linkmon.kinds import FACTS, HEALTH_FACTS, HealthKind, MonitorKind
from efmoam.core.linkmon.settings import PortAction
from pdu.enums import FLAG_EVENT_TYPES, Flag

VERSION = 3
#: version 2's entry keys, and the names they have now
_V2_NAMES = {
    "time": "monotonic", "wall_time": "time", "window": "window_on_wire", "value": "errors",
    "running_total": "error_running_total", "event_total": "event_running_total",
}  # fmt: skip
#: the Information flags a local failure may set (local-sf-action's info-notification)
_FAILURE_FLAGS = Flag.DYING_GASP | Flag.CRITICAL_EVENT


def snapshot(monitoring: LinkMonitoring) -> dict[str, Any]:
    """The event log and the active events, as JSON-ready data."""
    return {
        "version": VERSION,
        "next_index": monitoring.log.next_index,
        "log": [entry.saved(slot) for slot, entry in monitoring.log.entries()],
        "active": [
            {"key": event.key.view(), "flags": int(event.flags), "entry": event.entry.saved(None)}
            for event in monitoring.active
        ],
    }


def restore(monitoring: LinkMonitoring, data: object, now: float = 0.0) -> list[str]:
    """Put a snapshot back into a fresh `monitoring`; returns what could not be restored.

    `now` stamps the entries version 1 lost and this rebuilds.  Raises ValueError, naming
    the problem, on data it cannot use at all; `monitoring` is then left as it was.
    """
    try:
        log, active, problems = _read(monitoring, data, now)
    except (TypeError, KeyError, IndexError, AttributeError, OverflowError, RecursionError) as exc:
        raise ValueError(f"saved state not readable: {type(exc).__name__}: {exc}") from None
    monitoring.log = log
    kept = {event.entry.index for event in active if not (event.key.location is Location.LOCAL and event.key.is_flag)}
    for _, entry in log.entries():
        if entry.active and entry.index not in kept:
            log.mark_cleared(entry)  # no active event behind it (or a local flag: see above)
    for event in active:
        if event.entry.index in kept:
            monitoring.restore_event(event)
    return problems


def _read(monitoring: LinkMonitoring, data: object, now: float) -> tuple[EventLog, list[ActiveEvent], list[str]]:
    if not isinstance(data, dict):
        raise ValueError(f"saved state is an object, not {type(data).__name__}")
    version = data.get("version")
    if version == VERSION:
        log, active, problems = _read_entries(data, EventLogEntry.from_view)
    elif version == 2:
        log, active, problems = _read_entries(data, _entry_v2)
    elif version == 1:
        log, active, problems = _read_v1(monitoring, data, now)
    else:
        raise ValueError(f"state version {version!r}, expected {VERSION}")
    if len({event.key for event in active}) != len(active):
        raise ValueError("two saved active events of the same key")
    for event in active:
        _check(event)
    return log, active, problems


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


def _flags(value: object) -> Flag:
    if type(value) is not int or value & ~int(_FAILURE_FLAGS | Flag.LINK_FAULT):
        raise ValueError(f"saved flags {value!r} are not critical flags")
    return Flag(value)


_EntryReader = Callable[[object], tuple[int | None, EventLogEntry]]


def _read_entries(data: dict[str, Any], read: _EntryReader) -> tuple[EventLog, list[ActiveEvent], list[str]]:
    """Versions 2 and 3: the log and the active events with their own entries, read by `read`.
    A log entry of an active event's index shows that event's own entry (the truth)."""
    shown = [read(view) for view in _list(data, "log")]
    active: list[ActiveEvent] = []
    for item in _list(data, "active"):
        if not isinstance(item, dict):
            raise ValueError("a saved active event is an object")
        _, entry = read(item.get("entry"))
        active.append(ActiveEvent(EventKey.from_view(item.get("key")), entry, _flags(item.get("flags"))))
    truth = {event.entry.index: event.entry for event in active}
    log = EventLog()
    log.load([(slot, truth.get(entry.index, entry)) for slot, entry in shown], _next_index(data))
    return log, active, []


def _check(event: ActiveEvent) -> None:
    """The entry is an active event of what its key says, with flags it may set."""
    key, entry, source = event.key, event.entry, event.key.source
    what = key.view()
    if not entry.active or entry.location is not key.location:
        raise ValueError(f"saved active event {what} has an entry of another location or a cleared one")
    if isinstance(source, Flag):
        expected, monitor = FLAG_EVENT_TYPES[source], None
    elif isinstance(source, HealthKind):
        expected, monitor = HEALTH_FACTS[source].log_type, HEALTH_FACTS[source].key
    else:
        expected, monitor = FACTS[source].log_type, None
    if entry.event_type is not expected or entry.monitor != monitor:
        raise ValueError(f"saved active event {what} has an entry of type {int(entry.event_type)}")
    allowed = source if isinstance(source, Flag) else _FAILURE_FLAGS
    if event.flags & ~allowed or (key.location is Location.REMOTE and event.flags):
        raise ValueError(f"saved active event {what} sets flags it cannot set: {int(event.flags)}")


# -- versions 2 and 1 -------------------------------------------------------------------------


def _entry_v2(data: object) -> tuple[int | None, EventLogEntry]:
    """An entry as version 2 saved it: its keys renamed, then read as now."""
    if not isinstance(data, dict):
        raise ValueError(f"an event-log entry is an object, not {type(data).__name__}")
    return EventLogEntry.from_view({_V2_NAMES.get(key, key): value for key, value in data.items()})


def _entry_v1(data: object) -> EventLogEntry:
    """An entry as version 1 saved it (its attributes, enums by value)."""
    if not isinstance(data, dict):
        raise ValueError("a version 1 log entry is an object")
    oui = data.get("oui")
    if type(oui) is not int or not 0 <= oui <= 0xFFFFFF:
        raise ValueError(f"a version 1 log entry's OUI {oui!r} is not an OUI")
    view = {**data, "type_number": data.get("event_type"), "oui": oui.to_bytes(3, "big").hex(":"), "slot": None}
    for key in ("window", "threshold", "value"):
        view[key] = None if view.get(key) == NOT_A_THRESHOLD else view.get(key)
    return _entry_v2(view)[1]


def _read_v1(
    monitoring: LinkMonitoring, data: dict[str, Any], now: float
) -> tuple[EventLog, list[ActiveEvent], list[str]]:
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
        if not isinstance(item, dict) or not isinstance(item.get("key"), list) or len(item["key"]) != 3:
            raise ValueError(f"a version 1 active event {item!r} is not readable")
        location, kind, what = item["key"]
        source: MonitorKind | Flag = MonitorKind(what) if kind == "monitor" else Flag(int(what))
        key = EventKey(Location(location), source)
        flags, index = _flags(item.get("flags")), item.get("index")
        entry = by_index.get(index) if type(index) is int else None
        if entry is not None and entry.active:
            active.append(ActiveEvent(key, entry, flags))
        elif isinstance(source, Flag):  # its slot was taken by the other location's: rebuild it
            action = monitoring.settings.peer_actions.for_flag(source)
            affects = key.location is Location.REMOTE and action is not PortAction.LOG_ONLY
            _, rebuilt = log.add(
                location=key.location, event_type=FLAG_EVENT_TYPES[source], severity=Severity.FAILURE, time=now,
                port_affecting=affects, running_total=1, event_total=1,
            )  # fmt: skip
            active.append(ActiveEvent(key, rebuilt, flags))
            problems.append(f"active event {key.view()} rebuilt: version 1 had overwritten its log entry {index}")
        else:
            problems.append(f"active event {key.view()} lost: its log entry {index} was no longer kept")
    return log, active, problems
