"""The peer's reports: its Information flags (Link Fault, Dying Gasp, Critical Event) and the
link event TLVs of its Event Notifications, with the configured peer actions."""

from __future__ import annotations

import pytest

from efmoam.core import FrameDropped, LinkEventsReceived
from efmoam.core.linkmon import Location, PortAction, Severity
from pdu import EventLogType, EventTlvType, Flag, LinkEventTlv
from tests.linkmon import (
    ALL_ONES,
    CASE_IDS,
    CASES,
    ERRORED_SYMBOL_PERIOD,
    IEEE_OUI,
    UNSUPPORTIVE,
    Feed,
    MonitorCase,
    PeerActions,
    active_affecting,
    cleared,
    event_frame,
    link_monitoring,
    monitor,
    outputs,
    port_settings,
    raised,
    service_changes,
    start,
)

OOS, LOG = PortAction.OUT_OF_SERVICE, PortAction.LOG_ONLY

#: flag, PeerActions field, reserved slot, log type
FLAGS = [
    (Flag.DYING_GASP, "dying_gasp", 1, EventLogType.DYING_GASP_EVENT),
    (Flag.CRITICAL_EVENT, "critical_event", 2, EventLogType.CRITICAL_LINK_EVENT),
    (Flag.LINK_FAULT, "link_fault", 3, EventLogType.LINK_FAULT),
]
FLAG_IDS = ["dying-gasp", "critical-event", "link-fault"]


def remote_lm(**peer_actions: PortAction) -> dict[str, object]:
    return {"peer_actions": PeerActions(**peer_actions)}


def tlv(kind: EventTlvType, *, errors: int, threshold: int, window: int = 10) -> LinkEventTlv:
    return LinkEventTlv(
        kind, timestamp=7, window=window, threshold=threshold, errors=errors, error_running_total=errors + 100,
        event_running_total=3,
    )  # fmt: skip


# -- the peer's flags -----------------------------------------------------------------------------


@pytest.mark.parametrize("action", [None, OOS, LOG], ids=["default", "out-of-service", "log-only"])
@pytest.mark.parametrize(("flag", "field", "slot", "log_type"), FLAGS, ids=FLAG_IDS)
def test_peer_flag_is_an_event_while_the_peer_keeps_it_set(
    flag: Flag, field: str, slot: int, log_type: EventLogType, action: PortAction | None
) -> None:
    actions = PeerActions() if action is None else PeerActions(**{field: action})
    affecting = action is not LOG  # the flags are port affecting by default
    pair, _ = start(port_settings(link_monitoring(peer_actions=actions)))
    pair.call("b", "set_local_flags", flag, True)
    pair.run_for(0.5)
    (entry,) = raised(pair)
    assert dict(pair.a.event_log())[slot] == entry
    assert entry.location is Location.REMOTE
    assert entry.event_type is log_type
    assert entry.severity is Severity.FAILURE
    assert (entry.window, entry.threshold, entry.value) == (ALL_ONES, ALL_ONES, ALL_ONES)
    assert entry.oui == IEEE_OUI
    assert entry.port_affecting is affecting
    assert pair.a.out_of_service is affecting
    pair.run_for(5)  # five more Information OAMPDUs with the flag: still the one event
    assert len(raised(pair)) == 1
    assert [e.index for e in pair.a.link_monitoring.active_events()] == [entry.index]
    assert pair.a.out_of_service is affecting
    pair.call("b", "set_local_flags", flag, False)
    pair.run_for(0.5)
    (gone,) = cleared(pair)
    assert gone.index == entry.index and not gone.active
    assert not dict(pair.a.event_log())[slot].active
    assert not pair.a.out_of_service
    assert [c.out_of_service for c in service_changes(pair)] == ([True, False] if affecting else [])


def test_peer_flags_together_hold_the_port_until_the_last_clears() -> None:
    pair, _ = start(port_settings(link_monitoring()))
    pair.call("b", "set_local_flags", Flag.DYING_GASP | Flag.CRITICAL_EVENT, True)
    pair.run_for(0.5)
    assert sorted(slot for slot, e in pair.a.event_log() if e.active) == [1, 2]
    pair.call("b", "set_local_flags", Flag.DYING_GASP, False)
    pair.run_for(0.5)
    assert pair.a.out_of_service
    pair.call("b", "set_local_flags", Flag.CRITICAL_EVENT, False)
    pair.run_for(0.5)
    assert not pair.a.out_of_service
    assert len(service_changes(pair)) == 2


def test_peer_flag_set_again_is_a_new_event_in_the_same_slot() -> None:
    pair, _ = start(port_settings(link_monitoring()))
    for on in (True, False, True):
        pair.call("b", "set_local_flags", Flag.DYING_GASP, on)
        pair.run_for(0.5)
    first, second = raised(pair)
    assert second.index > first.index
    assert dict(pair.a.event_log())[1] == second
    assert pair.a.out_of_service


# -- the peer's Event Notifications ---------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_peer_notification_is_log_only_by_default(case: MonitorCase) -> None:
    peer = port_settings(link_monitoring(**case.settings(sf_threshold=2)))
    # b monitors and fails; a (the port under test) only listens
    pair, _ = start(port_settings(link_monitoring()), peer)
    feed_b = Feed(pair, "b", case.frames_per_second)
    feed_b.sample(dt=0.0, frames=0)
    case.fill(feed_b, 3)
    pair.run_for(0.5)
    (sent,) = outputs(pair, "a", LinkEventsReceived)
    (entry,) = raised(pair, "a")
    (tlv_,) = sent.tlvs
    assert entry.location is Location.REMOTE
    assert entry.event_type is case.log_type
    assert entry.severity is Severity.FAILURE
    assert (entry.window, entry.threshold, entry.value) == (tlv_.window, tlv_.threshold, tlv_.errors)
    assert (entry.window, entry.threshold, entry.value) == (case.wire_window, 2, 3)
    assert (entry.running_total, entry.event_total) == (tlv_.error_running_total, tlv_.event_running_total)
    assert entry.oui == IEEE_OUI
    assert not entry.port_affecting
    assert not pair.a.out_of_service
    assert service_changes(pair, "a") == []
    assert pair.b.out_of_service  # the detecting side


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_peer_notification_out_of_service_when_configured(case: MonitorCase) -> None:
    pair, _ = start(port_settings(link_monitoring(**remote_lm(event_notification=OOS))))
    pair.inject("a", event_frame(1, tlv(case.wire_type, errors=5, threshold=5)))
    pair.run_for(0.1)
    (entry,) = raised(pair)
    assert entry.port_affecting and entry.location is Location.REMOTE
    assert pair.a.out_of_service
    (change,) = service_changes(pair)
    assert change.out_of_service and "remote" in change.reasons[0]


@pytest.mark.parametrize(
    ("errors", "threshold"), [(4, 5), (0, 0), (9, 0)], ids=["below", "zero-zero", "zero-threshold"]
)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_peer_notification_acts_only_at_or_above_a_nonzero_threshold(
    case: MonitorCase, errors: int, threshold: int
) -> None:
    pair, _ = start(port_settings(link_monitoring(**remote_lm(event_notification=OOS))))
    pair.inject("a", event_frame(1, tlv(case.wire_type, errors=errors, threshold=threshold)))
    pair.run_for(0.1)
    assert len(outputs(pair, "a", LinkEventsReceived)) == 1  # received and processed ...
    assert not pair.a.out_of_service  # ... but no action
    assert not active_affecting(pair.a)
    assert service_changes(pair) == []


def test_peer_notification_is_ignored_when_the_peer_did_not_advertise_link_events() -> None:
    lm = link_monitoring(**remote_lm(event_notification=OOS))
    pair, _ = start(port_settings(lm), UNSUPPORTIVE)
    pair.inject("a", event_frame(1, tlv(EventTlvType.ERRORED_FRAME, errors=50, threshold=1)))
    pair.run_for(0.1)
    assert outputs(pair, "a", LinkEventsReceived) == []
    assert raised(pair) == []
    assert not pair.a.out_of_service
    assert "events_not_advertised" in [d.reason for d in outputs(pair, "a", FrameDropped)]


@pytest.mark.parametrize("action", [OOS, LOG], ids=["out-of-service", "log-only"])
def test_peer_symbol_tlv_below_threshold_clears_the_remote_symbol_event(action: PortAction) -> None:
    pair, _ = start(port_settings(link_monitoring(**remote_lm(event_notification=action))))
    pair.inject("a", event_frame(1, tlv(EventTlvType.ERRORED_SYMBOL_PERIOD, errors=8, threshold=5)))
    pair.run_for(0.1)
    (entry,) = raised(pair)
    assert pair.a.out_of_service is (action is OOS)
    pair.inject("a", event_frame(2, tlv(EventTlvType.ERRORED_SYMBOL_PERIOD, errors=4, threshold=5)))
    pair.run_for(0.1)
    (gone,) = cleared(pair)
    assert gone.index == entry.index
    assert pair.a.link_monitoring.active_events() == []
    assert not pair.a.out_of_service


@pytest.mark.parametrize("errors", [0, 100])
def test_peer_symbol_tlv_with_zero_threshold_does_not_clear(errors: int) -> None:
    pair, _ = start(port_settings(link_monitoring(**remote_lm(event_notification=OOS))))
    pair.inject("a", event_frame(1, tlv(EventTlvType.ERRORED_SYMBOL_PERIOD, errors=8, threshold=5)))
    pair.run_for(0.1)
    assert pair.a.out_of_service
    pair.inject("a", event_frame(2, tlv(EventTlvType.ERRORED_SYMBOL_PERIOD, errors=errors, threshold=0)))
    pair.run_for(0.1)
    assert pair.a.out_of_service
    assert cleared(pair) == []


@pytest.mark.parametrize(
    "kind",
    [EventTlvType.ERRORED_FRAME, EventTlvType.ERRORED_FRAME_PERIOD, EventTlvType.ERRORED_FRAME_SECONDS_SUMMARY],
    ids=["frame", "period", "seconds"],
)
def test_peer_frame_tlv_below_threshold_does_not_clear(kind: EventTlvType) -> None:
    pair, _ = start(port_settings(link_monitoring(**remote_lm(event_notification=OOS))))
    pair.inject("a", event_frame(1, tlv(kind, errors=8, threshold=5)))
    pair.run_for(0.1)
    pair.inject("a", event_frame(2, tlv(kind, errors=0, threshold=5)))
    pair.run_for(0.1)
    assert pair.a.out_of_service
    assert cleared(pair) == []


def test_peer_symbol_failure_cleared_on_the_peer_clears_here() -> None:
    peer = port_settings(link_monitoring(errored_symbol_period=monitor(sf_threshold=3)))
    pair, _ = start(port_settings(link_monitoring(**remote_lm(event_notification=OOS))), peer)
    feed_b = Feed(pair, "b")
    feed_b.sample(dt=0.0, frames=0)
    feed_b.sample(symbols=3)
    pair.run_for(0.5)
    assert pair.a.out_of_service and pair.b.out_of_service
    pair.call("b", "clear_events")  # b sends errors 0 and its sf-threshold
    pair.run_for(0.5)
    assert not pair.b.out_of_service
    assert not pair.a.out_of_service
    assert [e.event_type for e in cleared(pair, "a")] == [ERRORED_SYMBOL_PERIOD.log_type]


def test_a_newer_peer_report_of_the_same_kind_replaces_the_older() -> None:
    pair, _ = start(port_settings(link_monitoring(**remote_lm(event_notification=OOS))))
    pair.inject("a", event_frame(1, tlv(EventTlvType.ERRORED_FRAME, errors=8, threshold=5)))
    pair.run_for(0.1)
    pair.inject("a", event_frame(2, tlv(EventTlvType.ERRORED_FRAME, errors=9, threshold=5)))
    pair.run_for(0.1)
    first, second = raised(pair)
    assert [e.index for e in pair.a.link_monitoring.active_events()] == [second.index]
    assert second.value == 9
    assert [e.index for e in cleared(pair)] == [first.index]
