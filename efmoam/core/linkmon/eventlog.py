"""The 12-slot event log of a port: a display of history, never the truth.

Which events are active is kept by `efmoam.core.linkmon.events.ActiveEvents`; the log
only shows them and what came before, so that it can never lose an event that still
acts on the port:

* Slots 4-12 are a ring of monitor events.  A new entry takes an empty slot or the slot
  of the oldest *cleared* entry; an active entry is never dropped.  With the four
  standard monitors (at most eight events, local and remote) one of the nine is always
  free.  The five NIC health monitors add up to five local events, so up to thirteen can
  be active: only when every ring slot holds an active entry does the log grow past 12,
  the new entry taking the lowest free slot from 13 (at most 16).  An entry above slot 12
  leaves the log at the next placement once it is cleared, so the twelve slots come
  back when the storm is over.
* Slots 1-3 are reserved for the three critical flags (dying gasp, critical link event,
  link fault), local or remote.  A flag slot shows the latest event of its flag.  When a
  local and a remote event of the same flag are active at once, the slot shows both,
  the remote one first (the peer's report, which can act on the port); when one of them
  clears it leaves the slot and the other stays.  So a slot holds two entries only while
  both are active, and the log shows at most 15 entries, every active one among them.
* An entry keeps its slot for life; clearing an event marks its entry cleared.

`EventLogEntry.view` is the one dict form of an entry: ``show port`` JSON and the event
stream use it, the saved state too without the keys derived from others
(`EventLogEntry.saved`), and `EventLogEntry.from_view` reads it back.  Its
keys are the operators' vocabulary (the README's "Field reference"), not the attributes'
RFC 4878 column names: ``time`` is the wall clock and ``monotonic`` the daemon's clock;
``errors``, ``error_running_total`` and ``event_running_total`` as in the Link Event TLV;
the window under the name of its unit (`window_view`), its TLV value as ``window_on_wire``.

A NIC health event (type ``nicHealthEvent``, efmoam's own number outside RFC 4878's) has
one more key, ``monitor`` (its monitor's key, e.g. ``fec_uncorrectable``), which no other
entry has; its window is ``window_seconds`` only (never on a wire: kept in milliseconds,
saved as ``window_seconds``), its threshold and errors are per window.
"""

from __future__ import annotations

import enum
import math
import re
from typing import Any

import attrs

from efmoam.core.linkmon.kinds import HEALTH_BY_KEY, MONITORS, MonitorFacts
from pdu.enums import EVENT_LOG_TYPE_NAMES, FLAG_EVENT_TYPES, EventLogType

IEEE_OUI = 0x0180C2  #: dot3OamEventLogOui of the standard's events
NOT_A_THRESHOLD = 2**64 - 1  #: window, threshold and value of non-threshold events (RFC 4878)
SLOTS = 12
#: the highest slot: the three flag slots and one per monitor event that can be active at once
MAX_SLOT = 16
#: the reserved slot of each critical flag's event type: 1, 2, 3 in FLAG_EVENT_TYPES order
FLAG_SLOTS = {log_type: slot for slot, log_type in enumerate(FLAG_EVENT_TYPES.values(), start=1)}
RING = range(len(FLAG_SLOTS) + 1, SLOTS + 1)
_OUI = re.compile(r"[0-9a-f]{2}:[0-9a-f]{2}:[0-9a-f]{2}")
_FACTS_BY_LOG_TYPE = {facts.log_type: facts for facts in MONITORS}
#: the keys of the view derived from others: the saved state leaves them out (`EventLogEntry.saved`)
DERIVED_KEYS = ("type", "window_seconds", "window_frames", "window_symbols")
#: the window keys of an event without a window (a flag event)
_NO_WINDOW = {"window_seconds": None, "window_frames": None, "window_symbols": None, "window_on_wire": None}


def window_view(facts: MonitorFacts, on_wire: int, seconds: float | None = None) -> dict[str, Any]:
    """A monitor's window under the name of each unit it is known in: ``window_seconds``
    (given, or the TLV's 100 ms units), ``window_frames``, ``window_symbols`` (null when
    not counted in that unit), and ``window_on_wire``, the TLV's value in its own unit."""
    unit = facts.wire_window_unit
    if seconds is None and unit == "100 ms":
        seconds = on_wire / 10
    return {
        "window_seconds": seconds,
        "window_frames": on_wire if unit == "frames" else None,
        "window_symbols": on_wire if unit == "symbols" else None,
        "window_on_wire": on_wire,
    }


class Location(enum.Enum):
    LOCAL = "local"
    REMOTE = "remote"


class Severity(enum.Enum):
    DEGRADE = "sd"  #: signal degrade: logged, the port is not affected
    FAILURE = "sf"  #: signal failure or a flag event


@attrs.frozen
class EventLogEntry:
    """One event, as RFC 4878 dot3OamEventLogEntry plus SD/SF and its effect (the
    attributes have the RFC's column names; `view` the operators' names)."""

    index: int  #: dot3OamEventLogIndex: grows with every entry of the port
    location: Location
    event_type: EventLogType
    severity: Severity
    time: float  #: monotonic seconds, for logic (the view's ``monotonic``)
    #: seconds since the epoch, for display, when the caller gave a clock offset (the view's ``time``)
    wall_time: float | None = None
    window: int = NOT_A_THRESHOLD  #: as the TLV carries it (``window_on_wire``)
    threshold: int = NOT_A_THRESHOLD
    value: int = NOT_A_THRESHOLD  #: errors in the window (``errors``)
    running_total: int = 0  #: errors since reset (``error_running_total``)
    event_total: int = 0  #: events since reset (``event_running_total``)
    oui: int = IEEE_OUI
    port_affecting: bool = False
    active: bool = True
    monitor: str | None = None  #: a NIC health event's monitor key (`kinds.HEALTH`); None for the others

    def view(self, slot: int | None) -> dict[str, Any]:
        """The entry in `slot` as plain data (JSON-ready), the one dict form of an entry.

        Keys: ``slot`` (1-12, or null for an entry not shown in a log), ``index``
        (dot3OamEventLogIndex), ``location`` (local, remote), ``type`` and
        ``type_number`` (dot3OamEventLogType name and number), ``severity`` (sd, sf),
        ``time`` (seconds since the epoch when raised, or null), ``monotonic`` (the
        daemon's monotonic seconds when raised), ``oui`` (``01:80:c2``), the window
        (`window_view`; null for events without one), ``threshold`` and ``errors`` (null
        for events without them, the RFC's all-ones), ``error_running_total``,
        ``event_running_total``, ``port_affecting``, ``active``; a NIC health event's
        ``monitor`` last.
        """
        if self.monitor is not None:  # a NIC health event: its window in ms, seconds only
            seconds = None if self.window == NOT_A_THRESHOLD else self.window / 1000
            window: dict[str, Any] = {**_NO_WINDOW, "window_seconds": seconds}
        else:
            facts = _FACTS_BY_LOG_TYPE.get(self.event_type)
            has_window = facts is not None and self.window != NOT_A_THRESHOLD
            window = window_view(facts, self.window) if has_window and facts is not None else _NO_WINDOW
        view = {
            "slot": slot,
            "index": self.index,
            "location": self.location.value,
            "type": EVENT_LOG_TYPE_NAMES[self.event_type],
            "type_number": int(self.event_type),
            "severity": self.severity.value,
            "time": self.wall_time,
            "monotonic": self.time,
            "oui": self.oui.to_bytes(3, "big").hex(":"),
            **window,
            "threshold": _number_view(self.threshold),
            "errors": _number_view(self.value),
            "error_running_total": self.running_total,
            "event_running_total": self.event_total,
            "port_affecting": self.port_affecting,
            "active": self.active,
        }
        if self.monitor is not None:
            view["monitor"] = self.monitor
        return view

    def saved(self, slot: int | None) -> dict[str, Any]:
        """The view without `DERIVED_KEYS`, as the saved state keeps it (`from_view` reads both);
        a health event keeps ``window_seconds``, its only window."""
        view = self.view(slot)
        for key in DERIVED_KEYS:
            if not (key == "window_seconds" and self.monitor is not None):
                del view[key]
        return view

    @classmethod
    def from_view(cls, view: object) -> tuple[int | None, EventLogEntry]:
        """(slot, entry) from `view`; ValueError names what is wrong with it.  The window
        is read from ``window_on_wire``; the other window keys are derived from it."""
        if not isinstance(view, dict):
            raise ValueError(f"an event-log entry is an object, not {type(view).__name__}")
        get = _Reader(view)
        type_number = get.integer("type_number", 0, 0xFFFFFFFF)
        if type_number not in EventLogType._value2member_map_:
            raise ValueError(f"unknown event-log type {type_number}")
        oui = get.text("oui")
        if not _OUI.fullmatch(oui):
            raise ValueError(f"oui {_short(oui)} is not an OUI (three octets, 01:80:c2)")
        oui_value = int(oui.replace(":", ""), 16)
        monitor, window = _health_fields(get, view, type_number)
        entry = cls(
            index=get.integer("index", 1, 2**63),
            location=get.choice("location", Location),
            event_type=EventLogType(type_number),
            severity=get.choice("severity", Severity),
            time=get.real("monotonic"),
            wall_time=None if view.get("time") is None else get.real("time"),
            window=get.threshold_number("window_on_wire") if monitor is None else window,
            threshold=get.threshold_number("threshold"),
            value=get.threshold_number("errors"),
            running_total=get.integer("error_running_total", 0, 2**64),
            event_total=get.integer("event_running_total", 0, 2**64),
            oui=oui_value,
            port_affecting=get.boolean("port_affecting"),
            active=get.boolean("active"),
            monitor=monitor,
        )
        return None if view.get("slot") is None else get.integer("slot", 1, MAX_SLOT), entry


def _health_fields(get: _Reader, view: dict[str, Any], type_number: int) -> tuple[str | None, int]:
    """A health event's monitor and window (milliseconds); (None, 0) for the others."""
    health = type_number == EventLogType.NIC_HEALTH_EVENT
    if not health:
        if view.get("monitor") is not None:
            raise ValueError(f"event-log entry of type {type_number} names a monitor")
        return None, 0
    monitor = get.text("monitor")
    if monitor not in HEALTH_BY_KEY:
        raise ValueError(f"event-log entry monitor {_short(monitor)} is no health monitor")
    if view.get("window_seconds") is None:
        return monitor, NOT_A_THRESHOLD
    seconds = get.real("window_seconds")
    if not 0 <= seconds <= 86400 * 366:
        raise ValueError(f"event-log entry window_seconds {seconds:g} is out of range")
    return monitor, round(seconds * 1000)


def _short(value: object) -> str:
    """A value as a message quotes it: at most 40 characters of it."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _number_view(value: int) -> int | None:
    return None if value == NOT_A_THRESHOLD else value


class _Reader:
    """Typed reads of a view's keys, each failing with ValueError."""

    def __init__(self, view: dict[str, Any]) -> None:
        self._view = view

    def _get(self, key: str) -> Any:
        if key not in self._view:
            raise ValueError(f"event-log entry without {key}")
        return self._view[key]

    def integer(self, key: str, low: int, high: int) -> int:
        value = self._get(key)
        if type(value) is not int or not low <= value <= high:
            raise ValueError(f"event-log entry {key} {_short(value)} is not an integer in {low}..{high}")
        return value

    def real(self, key: str) -> float:
        value = self._get(key)
        if not (type(value) is float and math.isfinite(value)) and not (type(value) is int and abs(value) < 2**53):
            raise ValueError(f"event-log entry {key} {_short(value)} is not a finite number")
        return float(value)

    def boolean(self, key: str) -> bool:
        value = self._get(key)
        if type(value) is not bool:
            raise ValueError(f"event-log entry {key} {_short(value)} is not true or false")
        return value

    def text(self, key: str) -> str:
        value = self._get(key)
        if not isinstance(value, str):
            raise ValueError(f"event-log entry {key} {_short(value)} is not a string")
        return value

    def choice(self, key: str, enum_type: type[enum.Enum]) -> Any:
        value = self._get(key)
        try:
            return enum_type(value)
        except ValueError:
            raise ValueError(f"event-log entry {key} {_short(value)} is not one of its values") from None

    def threshold_number(self, key: str) -> int:
        return NOT_A_THRESHOLD if self._get(key) is None else self.integer(key, 0, NOT_A_THRESHOLD)


class EventLog:
    """The twelve slots; `entries` lists what they show."""

    def __init__(self) -> None:
        self._ring: dict[int, EventLogEntry] = {}
        #: per flag slot, what it shows: one entry, or a remote and a local one while both are active
        self._flags: dict[int, list[EventLogEntry]] = {}
        self.next_index = 1  #: the index of the next entry

    def add(self, **fields: Any) -> tuple[int, EventLogEntry]:
        """Store a new entry (its index is assigned here); returns (slot, entry)."""
        entry = EventLogEntry(index=self.next_index, **fields)
        self.next_index += 1
        return self.place(entry), entry

    def place(self, entry: EventLogEntry) -> int:
        """Put `entry` where the rules above say; returns its slot."""
        slot = FLAG_SLOTS.get(entry.event_type)
        if slot is not None:
            shown = [entry] + [e for e in self._flags.get(slot, ()) if e.active and e.location is not entry.location]
            shown.sort(key=lambda e: e.location is not Location.REMOTE)
            self._flags[slot] = shown
            return slot
        for above in [s for s, e in self._ring.items() if s > SLOTS and not e.active]:
            del self._ring[above]  # a cleared entry past the twelve slots leaves (see above)
        slot = next((s for s in RING if s not in self._ring), None)
        if slot is None:
            cleared = [(e.index, s) for s, e in self._ring.items() if not e.active]
            if cleared:
                slot = min(cleared)[1]
            else:  # every slot holds an active event: grow past 12 (never past MAX_SLOT while at
                # most 13 monitor events can be active; were it ever, the oldest entry would go)
                slot = next((s for s in range(SLOTS + 1, MAX_SLOT + 1) if s not in self._ring), None)
                if slot is None:
                    slot = min((e.index, s) for s, e in self._ring.items())[1]
        self._ring[slot] = entry
        return slot

    def mark_cleared(self, entry: EventLogEntry) -> tuple[int, EventLogEntry] | None:
        """Mark `entry` cleared where it is shown; returns (slot, cleared entry), or None
        when the log does not show it."""
        cleared = attrs.evolve(entry, active=False)
        slot = FLAG_SLOTS.get(entry.event_type)
        if slot is not None:
            shown = self._flags.get(slot, [])
            at = next((i for i, e in enumerate(shown) if e.index == entry.index), None)
            if at is None:
                return None
            if len(shown) > 1:
                del shown[at]  # the other event of this flag is active: it stays alone
            else:
                shown[at] = cleared
            return slot, cleared
        slot = next((s for s, e in self._ring.items() if e.index == entry.index), None)
        if slot is None:
            return None
        self._ring[slot] = cleared
        return slot, cleared

    def shows(self, entry: EventLogEntry) -> bool:
        """Whether the log shows this entry (by index) as it is."""
        return any(e == entry for _, e in self.entries())

    def entries(self) -> list[tuple[int, EventLogEntry]]:
        """(slot, entry) for every entry shown, in slot order (a flag slot's remote entry first)."""
        shown = [(slot, entry) for slot, entries in self._flags.items() for entry in entries]
        shown += self._ring.items()
        return sorted(shown, key=lambda item: item[0])

    def load(self, entries: list[tuple[int | None, EventLogEntry]], next_index: int) -> None:
        """Replace the whole log (a restored snapshot); ValueError when the slots are not
        the log's own, or the numbering would repeat an index."""
        self._ring, self._flags = {}, {}
        for slot, entry in entries:
            if slot is None:
                raise ValueError(f"event-log entry {entry.index} without a slot")
            ring = slot in RING or SLOTS < slot <= MAX_SLOT
            if FLAG_SLOTS.get(entry.event_type, slot if ring else None) != slot:
                raise ValueError(f"event-log slot {slot} cannot hold {EVENT_LOG_TYPE_NAMES[entry.event_type]}")
            if ring:
                if slot in self._ring:
                    raise ValueError(f"event-log slot {slot} holds two entries")
                self._ring[slot] = entry
            else:
                self._flags.setdefault(slot, []).append(entry)
        for slot, shown in self._flags.items():
            if len(shown) > 2 or (len(shown) == 2 and {e.location for e in shown if e.active} != set(Location)):
                raise ValueError(f"event-log slot {slot} holds more than one active local and remote entry")
            shown.sort(key=lambda e: e.location is not Location.REMOTE)
        highest = max((entry.index for _, entry in entries), default=0)
        if next_index <= highest:
            raise ValueError(f"next index {next_index} is not above the log's highest index {highest}")
        self.next_index = next_index
