"""The 12-slot event log: slots 1-3 for the three flag events, a ring of nine for the
monitors, the fields of an entry (RFC 4878 numbering), running totals that match the TLVs."""

from __future__ import annotations

import pytest

from efmoam.core.linkmon import Location, Severity
from pdu import EventLogType, EventTlvType, Flag
from tests.linkmon import (
    ALL_ONES,
    CASE_IDS,
    CASES,
    ERRORED_FRAME,
    ERRORED_FRAME_PERIOD,
    IEEE_OUI,
    MonitorCase,
    link_monitoring,
    logged,
    monitor,
    notified_tlvs,
    port_settings,
    raised,
    start,
)

RING = list(range(4, 13))


def failures(count: int) -> tuple[object, object]:
    """A pair whose port "a" raised `count` errored-frame failures, one per second (cleared in between)."""
    pair, feed = start(port_settings(link_monitoring(errored_frame=monitor(sf_threshold=1))))
    for _ in range(count):
        feed.sample(1)
        pair.call("a", "clear_events")
    return pair, feed


# -- slots ----------------------------------------------------------------------------------------


def test_the_ring_holds_the_nine_most_recent_monitor_events() -> None:
    pair, _ = failures(11)
    events = logged(pair)
    new = [e for e in events if e.entry.active]
    assert [e.slot for e in new] == [*RING, 4, 5]  # the 10th replaces the oldest, then the 11th
    log = pair.a.event_log()
    assert len(log) == 9
    assert [slot for slot, _ in log] == RING
    by_index = sorted(log, key=lambda item: item[1].index)
    assert [slot for slot, _ in by_index] == [6, 7, 8, 9, 10, 11, 12, 4, 5]
    assert [e.index for _, e in by_index] == [e.entry.index for e in new[2:]]  # events 3 .. 11
    assert all(not e.active for _, e in log)  # each was cleared


def test_flag_events_keep_slots_one_to_three_whatever_the_monitors_do() -> None:
    pair, feed = start(port_settings(link_monitoring(errored_frame=monitor(sf_threshold=1))))
    pair.call("b", "set_local_flags", Flag.DYING_GASP | Flag.CRITICAL_EVENT | Flag.LINK_FAULT, True)
    pair.run_for(0.5)
    for _ in range(12):
        feed.sample(1)
        pair.call("a", "clear_events", Location.LOCAL)
    log = dict(pair.a.event_log())
    assert sorted(log) == list(range(1, 13))
    assert [log[s].event_type for s in (1, 2, 3)] == [
        EventLogType.DYING_GASP_EVENT,
        EventLogType.CRITICAL_LINK_EVENT,
        EventLogType.LINK_FAULT,
    ]
    assert all(log[s].location is Location.REMOTE and log[s].active for s in (1, 2, 3))
    assert all(log[s].event_type is EventLogType.ERRORED_FRAME_EVENT for s in RING)


def test_monitor_events_of_all_kinds_share_the_ring() -> None:
    lm = link_monitoring(
        errored_frame=monitor(sd_threshold=1, sf_threshold=50),
        errored_symbol_period=monitor(sd_threshold=1, sf_threshold=50),
    )
    pair, feed = start(port_settings(lm))
    for _ in range(6):
        feed.sample(1, symbols=1)  # a degrade on both
        feed.sample()  # both end
    slots = [e.slot for e in logged(pair) if e.entry.active]
    assert len(slots) == 12
    assert slots == [4 + i % 9 for i in range(12)]


@pytest.mark.parametrize(
    ("flag", "slot"), [(Flag.DYING_GASP, 1), (Flag.CRITICAL_EVENT, 2), (Flag.LINK_FAULT, 3)], ids=["dg", "ce", "lf"]
)
def test_a_local_flag_event_takes_its_reserved_slot(flag: Flag, slot: int) -> None:
    pair, _ = start(port_settings(link_monitoring()))
    pair.call("a", "set_local_flags", flag, True)
    pair.run_for(0.5)
    entry = dict(pair.a.event_log()).get(slot)
    assert entry is not None and entry.location is Location.LOCAL and entry.active


# -- fields -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_monitor_entry_fields(case: MonitorCase) -> None:
    pair, feed = case.start(**case.settings(sd_threshold=2, sf_threshold=4))
    case.fill(feed, 2)
    sd_time = pair.now
    case.fill(feed, 5)
    sd, sf = raised(pair)
    for entry, severity, threshold, value, time in (
        (sd, Severity.DEGRADE, 2, 2, sd_time),
        (sf, Severity.FAILURE, 4, 5, pair.now),
    ):
        assert entry.location is Location.LOCAL
        assert entry.event_type is case.log_type
        assert entry.severity is severity
        assert entry.time == time
        assert entry.oui == IEEE_OUI
        assert (entry.window, entry.threshold, entry.value) == (case.wire_window, threshold, value)
        assert entry.port_affecting is (severity is Severity.FAILURE)
    assert (sd.running_total, sd.event_total) == (2, 1)
    assert (sf.running_total, sf.event_total) == (7, 2)
    assert sf.active and sf.index > sd.index
    assert not dict(pair.a.event_log())[4].active  # the degrade, ended by the failure


@pytest.mark.parametrize(
    ("case", "number"),
    [
        (CASES[3], 1),  # errored symbol event
        (ERRORED_FRAME_PERIOD, 2),
        (ERRORED_FRAME, 3),
        (CASES[2], 4),  # errored frame seconds
    ],
    ids=["symbol", "frame-period", "frame", "frame-seconds"],
)
def test_event_types_use_rfc_4878_numbering_not_the_wire_numbering(case: MonitorCase, number: int) -> None:
    pair, feed = case.start(**case.settings(sf_threshold=1))
    case.fill(feed, 1)
    (entry,) = raised(pair)
    assert int(entry.event_type) == number
    (tlv,) = notified_tlvs(pair)
    wire = {1: EventTlvType.ERRORED_SYMBOL_PERIOD, 2: EventTlvType.ERRORED_FRAME_PERIOD,
            3: EventTlvType.ERRORED_FRAME, 4: EventTlvType.ERRORED_FRAME_SECONDS_SUMMARY}[number]  # fmt: skip
    assert tlv.type == wire
    if case in (ERRORED_FRAME, ERRORED_FRAME_PERIOD):
        assert int(entry.event_type) != tlv.type  # errored frame is 3 in the log, 2 on the wire


def test_flag_event_entry_fields() -> None:
    pair, _ = start(port_settings(link_monitoring()))
    pair.call("b", "set_local_flags", Flag.CRITICAL_EVENT, True)
    pair.run_for(0.5)
    (entry,) = raised(pair)
    assert entry.location is Location.REMOTE
    assert entry.event_type is EventLogType.CRITICAL_LINK_EVENT and int(entry.event_type) == 258
    assert entry.severity is Severity.FAILURE
    assert 1.0 < entry.time <= 1.5
    assert entry.oui == IEEE_OUI
    assert (entry.window, entry.threshold, entry.value) == (ALL_ONES, ALL_ONES, ALL_ONES)
    assert entry.port_affecting and entry.active


def test_flag_event_totals_count_the_occurrences() -> None:
    pair, _ = start(port_settings(link_monitoring()))
    for on in (True, False, True):
        pair.call("b", "set_local_flags", Flag.DYING_GASP, on)
        pair.run_for(0.5)
    first, second = raised(pair)
    assert first.running_total == first.event_total == 1
    assert second.running_total == second.event_total == 2


# -- running totals ---------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_running_totals_are_per_monitor_and_match_the_tlvs(case: MonitorCase) -> None:
    lm_fields = case.settings(sd_threshold=2, sf_threshold=4)
    other = ERRORED_FRAME if case is not ERRORED_FRAME else CASES[3]
    lm_fields |= other.settings(sf_threshold=1000)  # another monitor counting the same samples
    pair, feed = case.start(**lm_fields)
    fed = 0
    for n in (1, 4, 0, 2, 5, 1, 6):
        case.fill(feed, n)
        fed += n
        pair.call("a", "clear_events")
    entries = [e for e in raised(pair) if e.event_type is case.log_type]
    failures_ = [e for e in entries if e.severity is Severity.FAILURE]
    tlvs = [t for t in notified_tlvs(pair) if t.errors >= t.threshold]  # not the symbol monitor's clears
    assert len(tlvs) == len(failures_) == 3
    for entry, tlv in zip(failures_, tlvs, strict=True):
        assert (tlv.error_running_total, tlv.event_running_total) == (entry.running_total, entry.event_total)
        assert (tlv.window, tlv.threshold, tlv.errors) == (entry.window, entry.threshold, entry.value)
    assert [e.event_total for e in entries] == list(range(1, len(entries) + 1))
    assert entries[-1].running_total == fed
    assert pair.a.link_monitoring.monitors[case.kind].error_total == fed
