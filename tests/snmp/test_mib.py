"""DOT3-OAM-MIB over real engines (sans-IO): OID order, rows, units, writes, notifications."""

from __future__ import annotations

import math

import attrs
import pytest

from efmoam.core import LoopbackStatus, OamPort, PortSettings
from efmoam.core.linkmon import MonitorKind
from efmoam.snmp.agentx import Error, SearchRange, VarBind, VarType
from efmoam.snmp.mib import MIB, OBJECTS, TABLES, Mib, MibPort, WriteFailed, names
from tests.core.pair import PortPair
from tests.linkmon import Feed, link_monitoring, monitor, port_settings

IFINDEX_A, IFINDEX_B = 7, 3


@attrs.define
class Row:
    name: str
    ifindex: int
    port: OamPort


@attrs.define
class Writes:
    """Does what the daemon's operations would, on the engines, and records it."""

    clock: list[float]
    done: list[tuple[str, str, bool]] = attrs.Factory(list)
    fail: bool = False

    def set_admin(self, row: MibPort, enabled: bool) -> None:
        if self.fail:
            raise WriteFailed("refused")
        row.port.reconfigure(attrs.evolve(row.port.settings, enabled=enabled), now=self.clock[0])
        self.done.append(("admin", row.name, enabled))

    def set_loopback(self, row: MibPort, start: bool) -> None:
        if self.fail:
            raise WriteFailed("refused")
        (row.port.start_loopback if start else row.port.stop_loopback)(now=self.clock[0])
        self.done.append(("loopback", row.name, start))


def col(table: int, column: int, *index: int) -> tuple[int, ...]:
    return (*OBJECTS, table, 1, column, *index)


def make(ports: list[Row], clock: list[float] | None = None) -> tuple[Mib, Writes]:
    clock = clock if clock is not None else [0.0]
    writes = Writes(clock)
    return Mib(lambda: ports, writes, lambda: clock[0]), writes


def walk(mib: Mib, start: tuple[int, ...] = MIB) -> list[VarBind]:
    found, at = [], start
    while True:
        vb = mib.get_next(SearchRange(at, (), False))
        if vb.type is VarType.END_OF_MIB_VIEW:
            return found
        found.append(vb)
        at = vb.name


def operational() -> PortPair:
    lm = link_monitoring(errored_frame=monitor(sf_threshold=5, window=2.0))
    pair = PortPair(port_settings(lm), port_settings(lm, loopback_process=True))
    pair.run_until(3.0)
    return pair


def test_a_lone_port_has_every_table_but_the_peer_and_log() -> None:
    mib, _ = make([Row("eth0", IFINDEX_A, OamPort(PortSettings(), "02:00:00:00:00:0a", now=0.0))])
    tables = {vb.name[len(OBJECTS)] for vb in walk(mib)}
    assert tables == {1, 3, 4, 5}
    assert mib.get(col(2, 1, IFINDEX_A)).type is VarType.NO_SUCH_INSTANCE
    assert mib.get(col(1, 1, 99)).type is VarType.NO_SUCH_INSTANCE
    assert mib.get(col(1, 99, IFINDEX_A)).type is VarType.NO_SUCH_OBJECT
    assert mib.get((1, 3, 6, 1, 2, 1, 1, 3, 0)).type is VarType.NO_SUCH_OBJECT


def test_a_walk_is_in_strict_oid_order_with_every_column_for_every_row() -> None:
    pair = operational()
    rows = [Row("b", IFINDEX_B, pair.b), Row("a", IFINDEX_A, pair.a)]
    mib, _ = make(rows)
    found = walk(mib)
    oids = [vb.name for vb in found]
    assert oids == sorted(oids) and len(set(oids)) == len(oids)
    per_port = sum(len(t.columns) for t in TABLES if t.per_port)
    assert len(found) == 2 * per_port  # both have peers; no events yet
    # the index order: ifIndex 3 before 7 in each column
    assert [vb.name[-1] for vb in found[:2]] == [IFINDEX_B, IFINDEX_A]


def test_values_and_units() -> None:
    pair = operational()
    mib, _ = make([Row("a", IFINDEX_A, pair.a)])
    value = lambda table, column: mib.get(col(table, column, IFINDEX_A))  # noqa: E731
    assert value(1, 2) == VarBind(col(1, 2, IFINDEX_A), VarType.INTEGER, 9)  # operational
    assert value(1, 6).value == bytes([0x30])  # eventSupport(2), variableSupport(3)
    assert value(2, 1).value == bytes.fromhex("02000000000b")
    assert value(2, 7).value == bytes([0x70])  # b also processes loopback: loopbackSupport(1)
    assert value(4, 1).type is VarType.COUNTER32 and value(4, 1).value == pair.a.stats.information_tx
    assert value(5, 9).value == 20  # errored-frame window: 2 s in tenths of a second
    assert value(5, 10).value == 5
    assert value(5, 11).value == 1 and value(5, 5).value == 2  # notifications: on for frames, off for symbols
    window = pair.a.link_monitoring.monitors[MonitorKind.ERRORED_SYMBOL_PERIOD].wire_window
    assert (value(5, 1).value << 32) + value(5, 2).value == window


def test_counters_wrap_at_32_bits() -> None:
    pair = operational()
    pair.a.stats.information_tx = 2**32 + 5
    mib, _ = make([Row("a", IFINDEX_A, pair.a)])
    assert mib.get(col(4, 1, IFINDEX_A)).value == 5


def test_get_next_with_include_and_an_end() -> None:
    pair = operational()
    mib, _ = make([Row("a", IFINDEX_A, pair.a)])
    exact = col(1, 2, IFINDEX_A)
    assert mib.get_next(SearchRange(exact, (), True)).name == exact
    assert mib.get_next(SearchRange(exact, (), False)).name == col(1, 3, IFINDEX_A)
    ended = mib.get_next(SearchRange(exact, col(1, 3), False))
    assert ended == VarBind(exact, VarType.END_OF_MIB_VIEW)
    # a partial index, or one past every row, moves on
    assert mib.get_next(SearchRange(col(1, 2, 2**32 - 1), (), False)).name == col(1, 3, IFINDEX_A)
    assert mib.get_next(SearchRange((*OBJECTS, 6), (), False)).type is VarType.END_OF_MIB_VIEW


def test_get_bulk_repeats_and_stops_at_the_end() -> None:
    pair = operational()
    mib, _ = make([Row("a", IFINDEX_A, pair.a)])
    answer = mib.get_bulk([SearchRange(col(1, 1), (), False), SearchRange(col(4, 1), (), False)], 1, 3)
    assert answer[0].name == col(1, 1, IFINDEX_A)
    assert [vb.name for vb in answer[1:]] == [col(4, 1, IFINDEX_A), col(4, 2, IFINDEX_A), col(4, 3, IFINDEX_A)]
    tail = mib.get_bulk([SearchRange(col(5, 16, IFINDEX_A), (), False)], 0, 5)
    assert [vb.type for vb in tail] == [VarType.END_OF_MIB_VIEW]


def test_event_log_rows_and_the_notification() -> None:
    pair = operational()
    feed = Feed(pair)
    feed.sample(0)
    feed.sample(9)  # errored frames over the sf-threshold of 5 in the 2 s window
    feed.sample(0)
    log = pair.a.event_log()
    assert log, "the signal failure was logged"
    clock = [pair.now]
    mib, _ = make([Row("a", IFINDEX_A, pair.a)], clock)
    mib.anchor = (pair.now - 10.0, 5000)  # the master's sysUpTime was 50 s ten seconds ago
    rows = [vb for vb in walk(mib, (*OBJECTS, 6)) if vb.name[len(OBJECTS) + 2] == 4]
    entry = next(e for _, e in log if e.location.value == "local")
    assert (IFINDEX_A, entry.index) in [vb.name[-2:] for vb in rows]
    stamp = mib.get(col(6, 2, IFINDEX_A, entry.index))
    assert stamp.type is VarType.TIME_TICKS and stamp.value == math.floor(5000 + (entry.time - (pair.now - 10.0)) * 100)
    assert mib.get(col(6, 10, IFINDEX_A, entry.index)) == VarBind(
        col(6, 10, IFINDEX_A, entry.index), VarType.COUNTER64, entry.value
    )
    varbinds = mib.notification(IFINDEX_A, entry)
    assert varbinds[0].value == (*MIB, 0, 1)  # dot3OamThresholdEvent
    assert [vb.name[len(OBJECTS) + 2] for vb in varbinds[1:]] == list(range(2, 13))
    assert all(vb.name[-2:] == (IFINDEX_A, entry.index) for vb in varbinds[1:])


def test_a_flag_event_is_a_non_threshold_notification() -> None:
    pair = operational()
    pair.call("b", "send_dying_gasp")
    pair.run_for(1.0)
    entry = next(e for _, e in pair.a.event_log() if e.location.value == "remote")
    mib, _ = make([Row("a", IFINDEX_A, pair.a)])
    varbinds = mib.notification(IFINDEX_A, entry)
    assert varbinds[0].value == (*MIB, 0, 2)
    assert [vb.name[len(OBJECTS) + 2] for vb in varbinds[1:]] == [2, 3, 4, 5, 12]
    assert mib.get(col(6, 6, IFINDEX_A, entry.index)).value == 0xFFFFFFFF  # no window: all ones


def test_rows_are_listed_again_when_invalidated_or_old() -> None:
    port = OamPort(PortSettings(), "02:00:00:00:00:0a", now=0.0)
    ports = [Row("a", IFINDEX_A, port)]
    clock = [0.0]
    mib = Mib(lambda: ports, Writes(clock), lambda: clock[0])
    assert mib.get(col(1, 1, IFINDEX_A)).type is VarType.INTEGER
    ports.append(Row("b", IFINDEX_B, OamPort(PortSettings(), "02:00:00:00:00:0b", now=0.0)))
    assert mib.get(col(1, 1, IFINDEX_B)).type is VarType.NO_SUCH_INSTANCE  # the cached rows
    mib.invalidate()
    assert mib.get(col(1, 1, IFINDEX_B)).type is VarType.INTEGER
    ports.pop(0)
    clock[0] = 5.0
    assert mib.get(col(1, 1, IFINDEX_A)).type is VarType.NO_SUCH_INSTANCE  # older than MAX_AGE


# -- writes -----------------------------------------------------------------------------


def test_writes_are_refused_unless_allowed() -> None:
    pair = operational()
    mib, writes = make([Row("a", IFINDEX_A, pair.a)])
    assert mib.test([VarBind(col(1, 1, IFINDEX_A), VarType.INTEGER, 2)]) == (Error.NOT_WRITABLE, 1)
    assert writes.done == []


@pytest.mark.parametrize(
    ("varbind", "error"),
    [
        (VarBind(col(1, 3, IFINDEX_A), VarType.INTEGER, 1), Error.NOT_WRITABLE),  # dot3OamMode
        (VarBind(col(1, 1, IFINDEX_A), VarType.OCTET_STRING, b"\x01"), Error.WRONG_TYPE),
        (VarBind(col(1, 1, IFINDEX_A), VarType.INTEGER, 3), Error.WRONG_VALUE),
        (VarBind(col(3, 1, IFINDEX_A), VarType.INTEGER, 3), Error.WRONG_VALUE),  # remoteLoopback is read-only
        (VarBind(col(3, 1, IFINDEX_A), VarType.INTEGER, 4), Error.INCONSISTENT_VALUE),  # nothing to stop
        (VarBind(col(1, 1, 99), VarType.INTEGER, 1), Error.NO_CREATION),
        (VarBind((*MIB, 9), VarType.INTEGER, 1), Error.NOT_WRITABLE),
    ],
)
def test_a_bad_write_is_refused_at_test(varbind: VarBind, error: Error) -> None:
    pair = operational()
    mib, writes = make([Row("a", IFINDEX_A, pair.a)])
    mib.writes = True
    ok = VarBind(col(1, 1, IFINDEX_A), VarType.INTEGER, 1)
    assert mib.test([ok, varbind]) == (error, 2)
    assert writes.done == []


def test_loopback_and_admin_written_then_undone() -> None:
    pair = operational()
    clock = [pair.now]
    mib, writes = make([Row("a", IFINDEX_A, pair.a)], clock)
    mib.writes = True
    start = VarBind(col(3, 1, IFINDEX_A), VarType.INTEGER, 2)
    assert mib.test([start]) == (Error.NO_ERROR, 0)
    assert mib.commit() == (Error.NO_ERROR, 0)
    mib.cleanup()
    pair.run_for(0.5)
    assert pair.a.loopback is LoopbackStatus.REMOTE_LOOPBACK
    # a set of two where the second fails at commit: the first is undone
    clock[0] = pair.now
    assert mib.test([VarBind(col(1, 1, IFINDEX_A), VarType.INTEGER, 2)]) == (Error.NO_ERROR, 0)
    assert mib.commit() == (Error.NO_ERROR, 0)
    assert pair.a.settings.enabled is False
    assert mib.undo() == (Error.NO_ERROR, 0)
    assert pair.a.settings.enabled is True
    assert writes.done == [("loopback", "a", True), ("admin", "a", False), ("admin", "a", True)]


def test_a_commit_the_daemon_refuses_fails() -> None:
    pair = operational()
    mib, writes = make([Row("a", IFINDEX_A, pair.a)])
    mib.writes = True
    writes.fail = True
    assert mib.test([VarBind(col(1, 1, IFINDEX_A), VarType.INTEGER, 2)]) == (Error.NO_ERROR, 0)
    assert mib.commit() == (Error.COMMIT_FAILED, 1)


def test_every_name_is_an_rfc4878_object() -> None:
    served = names()
    assert len(served) == 6 + 7 + 2 + 17 + 16 + 11
    assert served["dot3OamEventLogRunningTotal"] == (*OBJECTS, 6, 1, 11)
    assert served["dot3OamFramesLostDueToOam"] == (*OBJECTS, 4, 1, 17)


def test_every_column_has_its_name_in_the_mib_file() -> None:
    from tests.snmp.agent import missing_requirements, translate

    reason = missing_requirements()
    if reason:
        pytest.skip(reason)
    served = names()
    oids = [".".join(map(str, oid)) for oid in served.values()]
    assert translate(*(f".{oid}" for oid in oids)) == [f"DOT3-OAM-MIB::{name}" for name in served]
    notifications = translate(".1.3.6.1.2.1.158.0.1", ".1.3.6.1.2.1.158.0.2")
    assert notifications == ["DOT3-OAM-MIB::dot3OamThresholdEvent", "DOT3-OAM-MIB::dot3OamNonThresholdEvent"]
