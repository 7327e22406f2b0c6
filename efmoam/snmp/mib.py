"""RFC 4878 DOT3-OAM-MIB over the daemon's ports: its six tables as one ordered table of
columns, read live from the engines, and its two notifications.

`TABLES` is the one definition of the module's objects we serve: each column's sub-
identifier, RFC 4878 name, SMI type and how it is read from its row (a port, or an
event-log entry), and how the writable ones are written (`Write`).  Get, GetNext and
GetBulk walk it in OID order; the names are checked against the MIB file by the tests
(snmptranslate).

Rows: every managed port has a row (index ifIndex) in dot3OamTable, the loopback, stats
and event-config tables; dot3OamPeerTable has one only while a peer is known (as the RFC
says); dot3OamEventLogTable has one per entry ``show port P event-log`` shows (index
ifIndex, dot3OamEventLogIndex), so up to 15 per port: the two entries a flag slot shows
while a local and a remote event of that flag are both active, and 12 slots (more only
while more monitor events are active than the log's ring holds: see its module).  The row
lists are cached and rebuilt when the daemon says they changed (`invalidate`: a port
came or went, a peer, an event entry) or after `MAX_AGE` seconds; the values are read
from the engines at each request.  NIC health events have no dot3OamEventLogType: they get
no row and no notification (`in_mib`); ``show``, the event stream and the metrics have them.

Units follow the MIB: windows as the Event Notification TLVs carry them (symbols,
frames, tenths of a second), 64-bit ones split into Hi and Lo halves; thresholds are the
sf-thresholds (the one an Event Notification carries); Counter32 wraps; the event-log
timestamp is the master's sysUpTime at the event (the master gives its sysUpTime in every
Response; `anchor` maps our monotonic clock onto it).

Writes (only when the configuration allows them): dot3OamAdminState and
dot3OamLoopbackStatus (initiatingLoopback starts a remote loopback, terminatingLoopback
ends it); every other column answers notWritable.  The changes go through `Writer`
(the daemon's control operations, audited like an operator's).
"""

from __future__ import annotations

import bisect
import enum
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

import attrs

from efmoam.core import OamPort
from efmoam.core.linkmon.eventlog import EventLogEntry, Location
from efmoam.core.linkmon.kinds import MonitorKind
from efmoam.snmp.agentx import Error, Oid, SearchRange, VarBind, VarType
from pdu import OamConfig
from pdu.enums import EventLogType

MIB = (1, 3, 6, 1, 2, 1, 158)  #: dot3OamMIB
OBJECTS = (*MIB, 1)  #: dot3OamObjects: what we register
THRESHOLD_EVENT = (*MIB, 0, 1)
NON_THRESHOLD_EVENT = (*MIB, 0, 2)
SNMP_TRAP_OID = (1, 3, 6, 1, 6, 3, 1, 1, 4, 1, 0)
MAX_AGE = 1.0  #: seconds the row lists are used without an invalidation
MAX_BULK = 512  #: varbinds one GetBulk answers at most
THRESHOLD_TYPES = frozenset(
    {
        EventLogType.ERRORED_SYMBOL_EVENT, EventLogType.ERRORED_FRAME_PERIOD_EVENT,
        EventLogType.ERRORED_FRAME_EVENT, EventLogType.ERRORED_FRAME_SECONDS_EVENT,
    }
)  # fmt: skip
U32 = 0xFFFFFFFF

Value = int | bytes
Index = tuple[int, ...]


class MibPort(Protocol):
    """What the MIB reads of a managed port (the daemon's PortRuntime)."""

    name: str
    ifindex: int
    port: OamPort


class Writer(Protocol):
    """Carries out a write; raises `WriteFailed` when it cannot."""

    def set_admin(self, row: MibPort, enabled: bool) -> None: ...

    def set_loopback(self, row: MibPort, start: bool) -> None: ...


class WriteFailed(Exception):
    """A write the daemon refused (its message says why)."""


class Truth(enum.IntEnum):
    TRUE = 1
    FALSE = 2


def in_mib(entry: EventLogEntry) -> bool:
    """Whether the MIB has a row and a notification for `entry` (not for a NIC health event)."""
    return entry.event_type is not EventLogType.NIC_HEALTH_EVENT


def _truth(value: bool) -> int:
    return Truth.TRUE if value else Truth.FALSE


def _bits(config: int) -> bytes:
    """dot3OamFunctionsSupported: BITS, bit 0 the first octet's most significant bit."""
    order = (OamConfig.UNIDIRECTIONAL, OamConfig.REMOTE_LOOPBACK, OamConfig.LINK_EVENTS, OamConfig.VARIABLE_RETRIEVAL)
    return bytes([sum(0x80 >> bit for bit, flag in enumerate(order) if config & flag)])


def _mac(text: str) -> bytes:
    return bytes.fromhex(text.replace(":", ""))


def _oui(value: int) -> bytes:
    return (value & 0xFFFFFF).to_bytes(3, "big")


def _pdu_size(size: int) -> int:
    """dot3OamPeerMaxOamPduSize is 0 (unknown) or 64..1518; a peer may claim anything."""
    return size if 64 <= size <= 1518 else 0


def _hi(value: int) -> int:
    return (value >> 32) & U32


def _lo(value: int) -> int:
    return value & U32


# -- reading a port's row ---------------------------------------------------------------


def _monitor(kind: MonitorKind) -> Callable[[MibPort], Any]:
    return lambda row: row.port.link_monitoring.monitors[kind]


def _window(kind: MonitorKind, part: Callable[[int], int] = _lo) -> Callable[[MibPort], int]:
    monitor = _monitor(kind)
    return lambda row: part(monitor(row).wire_window)


def _threshold(kind: MonitorKind, part: Callable[[int], int] = _lo) -> Callable[[MibPort], int]:
    monitor = _monitor(kind)
    return lambda row: part(monitor(row).settings.sf_threshold)


def _notify_enabled(kind: MonitorKind) -> Callable[[MibPort], int]:
    monitor = _monitor(kind)
    return lambda row: _truth(monitor(row).settings.enabled and monitor(row).settings.event_notification)


def _stat(field: str) -> Callable[[MibPort], int]:
    return lambda row: getattr(row.port.stats, field) & U32


def _peer(read: Callable[[Any], Value]) -> Callable[[MibPort], Value | None]:
    def column(row: MibPort) -> Value | None:
        peer = row.port.peer
        return None if peer is None else read(peer)

    return column


def _sf_action(row: MibPort) -> Any:
    return row.port.settings.link_monitoring.local_sf_action


def _clamped(value: int) -> int:
    return min(value, U32)


@attrs.frozen
class Column:
    subid: int
    name: str
    type: VarType
    read: Callable[[Any], Value | None]
    write: Write | None = None  #: how a writable column is written


Undo = Callable[[], None]


@attrs.frozen
class Write:
    """A writable column: the value written to what `Writer` does (None: a wrong value),
    why the engine would refuse it now (None: it would not), and carrying it out (which
    returns how to undo it, None when there is nothing to undo)."""

    parse: Callable[[int], bool | None]
    apply: Callable[[Writer, MibPort, bool], Undo | None]
    refusal: Callable[[MibPort, bool], str | None] = lambda _row, _value: None


def _set_admin(writer: Writer, row: MibPort, enabled: bool) -> Undo | None:
    before = row.port.settings.enabled
    writer.set_admin(row, enabled)
    return None if before == enabled else lambda: writer.set_admin(row, before)


def _set_loopback(writer: Writer, row: MibPort, start: bool) -> Undo | None:
    writer.set_loopback(row, start)
    return (lambda: writer.set_loopback(row, False)) if start else None


ADMIN_STATE = Write({1: True, 2: False}.get, _set_admin)
#: initiatingLoopback starts, terminatingLoopback ends; the engine's own rule refuses the rest
LOOPBACK_STATUS = Write({2: True, 4: False}.get, _set_loopback, lambda row, start: row.port.loopback_refusal(start))


@attrs.frozen
class Table:
    subid: int
    name: str
    columns: tuple[Column, ...]
    per_port: bool = True  #: indexed by ifIndex (the event log: ifIndex and its index)

    @property
    def entry(self) -> Oid:
        return (*OBJECTS, self.subid, 1)


_SYM, _FRAME, _PERIOD, _SECS = (
    MonitorKind.ERRORED_SYMBOL_PERIOD, MonitorKind.ERRORED_FRAME, MonitorKind.ERRORED_FRAME_PERIOD,
    MonitorKind.ERRORED_FRAME_SECONDS,
)  # fmt: skip
_STATS = (
    "information_tx", "information_rx", "unique_event_notification_tx", "unique_event_notification_rx",
    "duplicate_event_notification_tx", "duplicate_event_notification_rx", "loopback_control_tx",
    "loopback_control_rx", "variable_request_tx", "variable_request_rx", "variable_response_tx",
    "variable_response_rx", "org_specific_tx", "org_specific_rx", "unsupported_codes_tx", "unsupported_codes_rx",
    "frames_lost_due_to_oam",
)  # fmt: skip
INT, U, C32, C64, S, T = (
    VarType.INTEGER, VarType.GAUGE32, VarType.COUNTER32, VarType.COUNTER64, VarType.OCTET_STRING, VarType.TIME_TICKS,
)  # fmt: skip

#: the six tables in OID order, each column in OID order
TABLES: tuple[Table, ...] = (
    Table(1, "dot3OamTable", (
        Column(1, "dot3OamAdminState", INT, lambda r: 1 if r.port.settings.enabled else 2, ADMIN_STATE),
        Column(2, "dot3OamOperStatus", INT, lambda r: int(r.port.oper_status)),
        Column(3, "dot3OamMode", INT, lambda r: 2 if r.port.settings.mode.value == "active" else 1),
        Column(4, "dot3OamMaxOamPduSize", U, lambda r: r.port.settings.max_pdu_size),
        Column(5, "dot3OamConfigRevision", U, lambda r: r.port.local_tlv.revision),
        Column(6, "dot3OamFunctionsSupported", S, lambda r: _bits(r.port.local_tlv.oam_config)),
    )),
    Table(2, "dot3OamPeerTable", (
        Column(1, "dot3OamPeerMacAddress", S, _peer(lambda p: _mac(p.mac))),
        Column(2, "dot3OamPeerVendorOui", S, _peer(lambda p: _oui(p.oui))),
        Column(3, "dot3OamPeerVendorInfo", U, _peer(lambda p: p.vendor_info & U32)),
        Column(4, "dot3OamPeerMode", INT, _peer(lambda p: 2 if p.mode_active else 1)),
        Column(5, "dot3OamPeerMaxOamPduSize", U, _peer(lambda p: _pdu_size(p.max_pdu_size))),
        Column(6, "dot3OamPeerConfigRevision", U, _peer(lambda p: p.config_revision & 0xFFFF)),
        Column(7, "dot3OamPeerFunctionsSupported", S, _peer(lambda p: _bits(p.functions))),
    )),
    Table(3, "dot3OamLoopbackTable", (
        Column(1, "dot3OamLoopbackStatus", INT, lambda r: int(r.port.loopback), LOOPBACK_STATUS),
        Column(2, "dot3OamLoopbackIgnoreRx", INT, lambda r: 2 if r.port.settings.loopback_process else 1),
    )),
    Table(4, "dot3OamStatsTable", tuple(
        Column(n, "dot3Oam" + "".join(w.capitalize() for w in field.split("_")), C32, _stat(field))
        for n, field in enumerate(_STATS, start=1)
    )),
    Table(5, "dot3OamEventConfigTable", (
        Column(1, "dot3OamErrSymPeriodWindowHi", U, _window(_SYM, _hi)),
        Column(2, "dot3OamErrSymPeriodWindowLo", U, _window(_SYM)),
        Column(3, "dot3OamErrSymPeriodThresholdHi", U, _threshold(_SYM, _hi)),
        Column(4, "dot3OamErrSymPeriodThresholdLo", U, _threshold(_SYM)),
        Column(5, "dot3OamErrSymPeriodEvNotifEnable", INT, _notify_enabled(_SYM)),
        Column(6, "dot3OamErrFramePeriodWindow", U, _window(_PERIOD)),
        Column(7, "dot3OamErrFramePeriodThreshold", U, _threshold(_PERIOD)),
        Column(8, "dot3OamErrFramePeriodEvNotifEnable", INT, _notify_enabled(_PERIOD)),
        Column(9, "dot3OamErrFrameWindow", U, _window(_FRAME)),
        Column(10, "dot3OamErrFrameThreshold", U, _threshold(_FRAME)),
        Column(11, "dot3OamErrFrameEvNotifEnable", INT, _notify_enabled(_FRAME)),
        Column(12, "dot3OamErrFrameSecsSummaryWindow", INT, _window(_SECS)),
        Column(13, "dot3OamErrFrameSecsSummaryThreshold", INT, _threshold(_SECS)),
        Column(14, "dot3OamErrFrameSecsEvNotifEnable", INT, _notify_enabled(_SECS)),
        Column(15, "dot3OamDyingGaspEnable", INT, lambda r: _truth(_sf_action(r).dying_gasp)),
        Column(16, "dot3OamCriticalEventEnable", INT, lambda r: _truth(_sf_action(r).critical_event)),
    )),
    Table(6, "dot3OamEventLogTable", (
        # 1, dot3OamEventLogIndex, is not-accessible: it is the row's second index
        Column(2, "dot3OamEventLogTimestamp", T, lambda e: e.timestamp),
        Column(3, "dot3OamEventLogOui", S, lambda e: _oui(e.entry.oui)),
        Column(4, "dot3OamEventLogType", U, lambda e: int(e.entry.event_type)),
        Column(5, "dot3OamEventLogLocation", INT, lambda e: 1 if e.entry.location is Location.LOCAL else 2),
        Column(6, "dot3OamEventLogWindowHi", U, lambda e: _hi(e.entry.window)),
        Column(7, "dot3OamEventLogWindowLo", U, lambda e: _lo(e.entry.window)),
        Column(8, "dot3OamEventLogThresholdHi", U, lambda e: _hi(e.entry.threshold)),
        Column(9, "dot3OamEventLogThresholdLo", U, lambda e: _lo(e.entry.threshold)),
        Column(10, "dot3OamEventLogValue", C64, lambda e: e.entry.value),
        Column(11, "dot3OamEventLogRunningTotal", C64, lambda e: e.entry.running_total),
        Column(12, "dot3OamEventLogEventTotal", U, lambda e: _clamped(e.entry.event_total)),
    ), per_port=False),
)  # fmt: skip
EVENT_LOG = TABLES[-1]
#: the notifications' objects (RFC 4878 dot3OamThresholdEvent, dot3OamNonThresholdEvent)
THRESHOLD_OBJECTS = tuple(c.subid for c in EVENT_LOG.columns)
NON_THRESHOLD_OBJECTS = (2, 3, 4, 5, 12)
_LOG_COLUMNS = {column.subid: column for column in EVENT_LOG.columns}
assert [t.subid for t in TABLES] == sorted(t.subid for t in TABLES)
assert all([c.subid for c in t.columns] == sorted(c.subid for c in t.columns) for t in TABLES)


@attrs.frozen
class LoggedEvent:
    """An event-log row: the entry and its timestamp in the master's sysUpTime."""

    entry: EventLogEntry
    timestamp: int


@attrs.define
class _Rows:
    """The row lists of one moment."""

    built: float
    ports: dict[int, MibPort]
    port_rows: list[Index]
    peer_rows: list[Index]
    log_rows: list[Index]
    log: dict[Index, EventLogEntry]


@attrs.define
class _Pending:
    """One varbind of a set: what to do, and how to undo it once done."""

    row: MibPort
    column: Column
    value: bool
    undo: Undo | None = None


class Mib:
    """DOT3-OAM-MIB answers over the ports `source` lists; see the module's comment."""

    def __init__(self, source: Callable[[], Iterable[MibPort]], writer: Writer, clock: Callable[[], float]) -> None:
        self._source = source
        self._writer = writer
        self._clock = clock
        self.writes = False  #: whether sets are allowed (the configuration's snmp.writes)
        #: (monotonic time, the master's sysUpTime then in centiseconds), from its last Response
        self.anchor: tuple[float, int] | None = None
        self._rows: _Rows | None = None
        self._pending: list[_Pending] = []

    # -- rows --------------------------------------------------------------------------

    def invalidate(self) -> None:
        """The ports, their peers or their event logs changed: list the rows again."""
        self._rows = None

    def _current(self) -> _Rows:
        now = self._clock()
        rows = self._rows
        if rows is None or now - rows.built > MAX_AGE:
            rows = self._rows = self._build(now)
        return rows

    def _build(self, now: float) -> _Rows:
        ports = {row.ifindex: row for row in self._source()}
        log: dict[Index, EventLogEntry] = {}
        for ifindex, row in ports.items():
            for _, entry in row.port.event_log():
                if in_mib(entry):
                    log[(ifindex, entry.index & U32)] = entry
        return _Rows(
            built=now, ports=ports, port_rows=sorted((i,) for i in ports),
            peer_rows=sorted((i,) for i, row in ports.items() if row.port.peer is not None),
            log_rows=sorted(log), log=log,
        )  # fmt: skip

    def _row_list(self, rows: _Rows, table: Table) -> list[Index]:
        if table is EVENT_LOG:
            return rows.log_rows
        return rows.peer_rows if table.subid == 2 else rows.port_rows

    def _row(self, rows: _Rows, table: Table, index: Index) -> Any:
        if table is EVENT_LOG:
            entry = rows.log.get(index) if len(index) == 2 else None
            return None if entry is None else LoggedEvent(entry, self.timestamp(entry.time))
        return rows.ports.get(index[0]) if len(index) == 1 else None

    def timestamp(self, when: float) -> int:
        """The master's sysUpTime (centiseconds) at monotonic time `when` (0: before it started)."""
        if self.anchor is None:
            return 0
        at, uptime = self.anchor
        # rounded down: the master's figure is truncated and reached us later than it read
        # it, so this never stamps an event after the notification that reports it
        return max(0, min(U32, math.floor(uptime + (when - at) * 100)))

    # -- reads -------------------------------------------------------------------------

    def get(self, oid: Oid) -> VarBind:
        rows = self._current()
        found = _column_of(oid)
        if found is None:
            return VarBind(oid, VarType.NO_SUCH_OBJECT)
        table, column, index = found
        row = self._row(rows, table, index)
        value = None if row is None else column.read(row)
        return VarBind(oid, VarType.NO_SUCH_INSTANCE) if value is None else VarBind(oid, column.type, value)

    def get_next(self, search: SearchRange) -> VarBind:
        """The first instance after `search.start` (or at it, with include) and before its end."""
        found = self._next(search.start, search.include)
        if found is None or (search.end and found.name >= search.end):
            return VarBind(search.start, VarType.END_OF_MIB_VIEW)
        return found

    def get_bulk(self, ranges: Sequence[SearchRange], non_repeaters: int, max_repetitions: int) -> list[VarBind]:
        """RFC 2741 7.2.3.3: the non-repeaters once, then the repeaters repetition by repetition."""
        answer = [self.get_next(r) for r in ranges[:non_repeaters]]
        repeaters = list(ranges[non_repeaters:])
        for _ in range(max_repetitions):
            if not repeaters or len(answer) + len(repeaters) > MAX_BULK:
                break
            found = [self.get_next(r) for r in repeaters]
            answer += found
            if all(vb.type is VarType.END_OF_MIB_VIEW for vb in found):
                break
            repeaters = [attrs.evolve(r, start=vb.name, include=False) for r, vb in zip(repeaters, found, strict=True)]
        return answer

    def _next(self, oid: Oid, include: bool) -> VarBind | None:
        rows = self._current()
        for table in TABLES:
            entry = table.entry
            if oid[: len(entry)] > entry:
                continue  # past this table
            indexes = self._row_list(rows, table)
            for column in table.columns:
                prefix = (*entry, column.subid)
                head = oid[: len(prefix)]
                if head > prefix:
                    continue
                start = 0
                if head == prefix:
                    tail = oid[len(prefix) :]
                    start = (bisect.bisect_left if include else bisect.bisect_right)(indexes, tail)
                for index in indexes[start:]:
                    row = self._row(rows, table, index)
                    value = None if row is None else column.read(row)
                    if value is not None:
                        return VarBind((*prefix, *index), column.type, value)
        return None

    # -- writes (RFC 2741 7.2.4: test, then commit or cleanup, undo after a failed commit) --

    def test(self, varbinds: Sequence[VarBind]) -> tuple[Error, int]:
        """Check a set; (error, 1-based index of the varbind at fault) or (NO_ERROR, 0)."""
        self._pending = []
        rows = self._current()
        for position, vb in enumerate(varbinds, start=1):
            found = _column_of(vb.name)
            if found is None or found[1].write is None or not self.writes:
                return Error.NOT_WRITABLE, position
            table, column, index = found
            row = self._row(rows, table, index)
            if row is None:
                return Error.NO_CREATION, position  # rows are never created by a set
            if vb.type is not column.type or not isinstance(vb.value, int):
                return Error.WRONG_TYPE, position
            write = column.write
            assert write is not None
            value = write.parse(vb.value)
            if value is None:
                return Error.WRONG_VALUE, position
            if write.refusal(row, value) is not None:
                return Error.INCONSISTENT_VALUE, position
            self._pending.append(_Pending(row, column, value))
        return Error.NO_ERROR, 0

    def commit(self) -> tuple[Error, int]:
        for position, pending in enumerate(self._pending, start=1):
            try:
                write = pending.column.write
                assert write is not None
                pending.undo = write.apply(self._writer, pending.row, pending.value)
            except WriteFailed:
                return Error.COMMIT_FAILED, position
        return Error.NO_ERROR, 0

    def undo(self) -> tuple[Error, int]:
        for position, pending in enumerate(self._pending, start=1):
            if pending.undo is None:
                continue
            try:
                pending.undo()
            except WriteFailed:
                return Error.UNDO_FAILED, position
        return Error.NO_ERROR, 0

    def cleanup(self) -> None:
        self._pending = []

    # -- notifications -----------------------------------------------------------------

    def notification(self, ifindex: int, entry: EventLogEntry) -> list[VarBind]:
        """The varbinds of the notification an event-log entry raises (after sysUpTime.0)."""
        threshold = entry.event_type in THRESHOLD_TYPES
        trap = THRESHOLD_EVENT if threshold else NON_THRESHOLD_EVENT
        logged = LoggedEvent(entry, self.timestamp(entry.time))
        index = (ifindex, entry.index & U32)
        varbinds = [VarBind(SNMP_TRAP_OID, VarType.OBJECT_IDENTIFIER, trap)]
        for subid in THRESHOLD_OBJECTS if threshold else NON_THRESHOLD_OBJECTS:
            column = _LOG_COLUMNS[subid]
            value = column.read(logged)
            assert value is not None
            varbinds.append(VarBind((*EVENT_LOG.entry, subid, *index), column.type, value))
        return varbinds


_COLUMNS: dict[Oid, tuple[Table, Column]] = {
    (*table.entry, column.subid): (table, column) for table in TABLES for column in table.columns
}
_COLUMN_LENGTH = len(OBJECTS) + 3


def _column_of(oid: Oid) -> tuple[Table, Column, Index] | None:
    """The table, column and row index an instance OID names (None: not a column of ours)."""
    found = _COLUMNS.get(oid[:_COLUMN_LENGTH])
    return None if found is None else (found[0], found[1], oid[_COLUMN_LENGTH:])


def names() -> dict[str, Oid]:
    """Every column's RFC 4878 name and OID (for the tests against the MIB file)."""
    return {column.name: oid for oid, (_, column) in _COLUMNS.items()}
