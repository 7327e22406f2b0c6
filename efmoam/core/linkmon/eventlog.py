"""The 12-slot event log of a port.

Slots 1-3 are reserved for the three Information flag events (dying gasp, critical
link, link fault), local or remote: each holds the latest event of its kind.  Slots
4-12 are a ring of the nine latest monitor events: the tenth replaces the oldest.  An
entry stays in its slot for life; clearing an event marks its entry cleared.
"""

from __future__ import annotations

import enum

import attrs

from pdu import EventLogType

IEEE_OUI = 0x0180C2  #: dot3OamEventLogOui of the standard's events
NOT_A_THRESHOLD = 2**64 - 1  #: window, threshold and value of non-threshold events (RFC 4878)
SLOTS = 12
FLAG_SLOTS = {EventLogType.DYING_GASP_EVENT: 1, EventLogType.CRITICAL_LINK_EVENT: 2, EventLogType.LINK_FAULT: 3}
RING = range(4, SLOTS + 1)


class Location(enum.Enum):
    LOCAL = "local"
    REMOTE = "remote"


class Severity(enum.Enum):
    DEGRADE = "sd"  #: signal degrade: logged, the port is not affected
    FAILURE = "sf"  #: signal failure or a flag event


@attrs.frozen
class EventLogEntry:
    """One event, as RFC 4878 dot3OamEventLogEntry plus SD/SF and its effect."""

    index: int  #: dot3OamEventLogIndex: grows with every entry of the port
    location: Location
    event_type: EventLogType
    severity: Severity
    time: float  #: monotonic seconds, for logic
    wall_time: float | None = None  #: seconds since the epoch, for display (when the caller gave a clock offset)
    window: int = NOT_A_THRESHOLD
    threshold: int = NOT_A_THRESHOLD
    value: int = NOT_A_THRESHOLD  #: errors in the window
    running_total: int = 0  #: errors since reset
    event_total: int = 0  #: events since reset
    oui: int = IEEE_OUI
    port_affecting: bool = False
    active: bool = True


class EventLog:
    """Twelve slots; `entries` lists the occupied ones."""

    def __init__(self) -> None:
        self._slots: dict[int, EventLogEntry] = {}
        self.next_ring_slot = RING.start  #: the ring slot the next monitor event takes
        self.next_index = 1  #: the index of the next entry

    def add(self, **fields: object) -> tuple[int, EventLogEntry]:
        """Store a new entry (its index is assigned here); returns (slot, entry)."""
        entry = EventLogEntry(index=self.next_index, **fields)  # type: ignore[arg-type]
        self.next_index += 1
        slot = FLAG_SLOTS.get(entry.event_type)
        if slot is None:
            slot = self.next_ring_slot
            self.next_ring_slot = RING.start if slot == RING.stop - 1 else slot + 1
        self._slots[slot] = entry
        return slot, entry

    def load(self, slots: dict[int, EventLogEntry], next_index: int, next_ring_slot: int) -> None:
        """Replace the whole log (a restored snapshot)."""
        if any(slot not in range(1, SLOTS + 1) for slot in slots) or next_ring_slot not in RING:
            raise ValueError("event log slots out of range")
        self._slots = dict(slots)
        self.next_index = next_index
        self.next_ring_slot = next_ring_slot

    def mark_cleared(self, index: int) -> tuple[int, EventLogEntry] | None:
        """Mark the entry with this index cleared, if it is still in the log."""
        for slot, entry in self._slots.items():
            if entry.index == index:
                self._slots[slot] = attrs.evolve(entry, active=False)
                return slot, self._slots[slot]
        return None

    def entries(self) -> list[tuple[int, EventLogEntry]]:
        """(slot, entry) for the occupied slots, in slot order."""
        return sorted(self._slots.items())
