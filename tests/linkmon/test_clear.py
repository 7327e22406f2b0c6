"""The clear command (local, remote, both) and link down/up, which clears every event."""

from __future__ import annotations

import pytest

from efmoam.core.linkmon import Location, PortAction, Severity
from pdu import EventTlvType, Flag, LinkEventTlv
from tests.linkmon import (
    CASE_IDS,
    CASES,
    ERRORED_SYMBOL_PERIOD,
    FRAME_CASE_IDS,
    FRAME_CASES,
    SYMBOLS_PER_SECOND_1G,
    LocalSfAction,
    MonitorCase,
    PeerActions,
    cleared,
    event_frame,
    information_flags,
    link_monitoring,
    mark,
    monitor,
    notification_frames,
    notified_tlvs,
    port_settings,
    raised,
    sent,
    service_changes,
    start,
)

DG_CE = LocalSfAction(dying_gasp=True, critical_event=True)


def locations(port) -> list[Location]:  # type: ignore[no-untyped-def]
    return sorted((e.location for e in port.link_monitoring.active_events()), key=lambda loc: loc.value)


# -- local, remote, both ----------------------------------------------------------------------------


def test_clearing_local_keeps_the_port_out_while_a_remote_event_holds_it() -> None:
    pair, feed = start(port_settings(link_monitoring(errored_frame=monitor())))
    pair.call("b", "set_local_flags", Flag.CRITICAL_EVENT, True)
    feed.sample(1)
    pair.run_for(0.5)
    assert locations(pair.a) == [Location.LOCAL, Location.REMOTE]
    pair.call("a", "clear_events", Location.LOCAL)
    assert locations(pair.a) == [Location.REMOTE]
    assert pair.a.out_of_service
    assert [c.out_of_service for c in service_changes(pair)] == [True]
    (gone,) = cleared(pair)
    assert gone.location is Location.LOCAL
    # the remote event is cleared in turn: the port returns to service ...
    pair.call("a", "clear_events", Location.REMOTE)
    assert not pair.a.out_of_service
    assert [c.out_of_service for c in service_changes(pair)] == [True, False]


def test_clearing_remote_keeps_the_port_out_while_a_local_event_holds_it() -> None:
    pair, feed = start(port_settings(link_monitoring(errored_frame=monitor())))
    pair.call("b", "set_local_flags", Flag.CRITICAL_EVENT, True)
    feed.sample(1)
    pair.run_for(0.5)
    pair.call("a", "clear_events", Location.REMOTE)
    assert locations(pair.a) == [Location.LOCAL]
    assert pair.a.out_of_service


def test_clearing_both_returns_the_port_to_service() -> None:
    pair, feed = start(port_settings(link_monitoring(errored_frame=monitor(), errored_symbol_period=monitor())))
    pair.inject("a", event_frame(1, LinkEventTlv(EventTlvType.ERRORED_FRAME, window=10, threshold=1, errors=3)))
    pair.call("b", "set_local_flags", Flag.DYING_GASP, True)
    feed.sample(1, symbols=1)
    pair.run_for(0.5)
    assert len(pair.a.link_monitoring.active_events()) == 4  # two local failures, a flag, a remote TLV
    pair.call("a", "clear_events")
    assert pair.a.link_monitoring.active_events() == []
    assert not pair.a.out_of_service
    assert len(cleared(pair)) == 4


def test_clear_with_nothing_active_does_nothing() -> None:
    pair, _ = start(port_settings(link_monitoring(errored_frame=monitor())))
    before = mark(pair)
    for location in (Location.LOCAL, Location.REMOTE, None):
        pair.call("a", "clear_events", location)
    assert pair.records[before:] == []


def test_clearing_local_clears_every_flag_local_events_set() -> None:
    lm = link_monitoring(errored_frame=monitor(), errored_symbol_period=monitor(), local_sf_action=DG_CE)
    pair, feed = start(port_settings(lm))
    pair.call("b", "set_local_flags", Flag.LINK_FAULT, True)
    feed.sample(1, symbols=1)  # two failures, both set the two flags
    pair.run_for(2)
    assert pair.a.local_flags & (Flag.DYING_GASP | Flag.CRITICAL_EVENT) == Flag.DYING_GASP | Flag.CRITICAL_EVENT
    at = mark(pair)
    pair.call("a", "clear_events", Location.LOCAL)
    assert not pair.a.local_flags & (Flag.DYING_GASP | Flag.CRITICAL_EVENT)
    pair.run_for(2)
    flags = information_flags(pair, after=at)
    assert flags and not any(f & (Flag.DYING_GASP | Flag.CRITICAL_EVENT) for f in flags)
    assert pair.a.out_of_service  # the peer's link fault still holds it


def test_clearing_remote_keeps_the_local_flags() -> None:
    lm = link_monitoring(errored_frame=monitor(), local_sf_action=DG_CE)
    pair, feed = start(port_settings(lm))
    pair.call("b", "set_local_flags", Flag.LINK_FAULT, True)
    feed.sample(1)
    pair.run_for(0.5)
    pair.call("a", "clear_events", Location.REMOTE)
    assert pair.a.local_flags & Flag.DYING_GASP and pair.a.local_flags & Flag.CRITICAL_EVENT


# -- what the clear tells the peer ----------------------------------------------------------------------


@pytest.mark.parametrize("location", [Location.LOCAL, None], ids=["local", "both"])
def test_clearing_a_local_symbol_failure_notifies_zero_errors(location: Location | None) -> None:
    lm = link_monitoring(errored_symbol_period=monitor(sf_threshold=7, window=2.0))
    pair, feed = start(port_settings(lm))
    feed.sample(symbols=5)
    feed.sample(symbols=5)
    assert pair.a.out_of_service
    pair.run_for(0.5)
    at = pair.now
    pair.call("a", "clear_events", location)
    pair.run_for(1)
    (tlv,) = notified_tlvs(pair, since=at)
    assert tlv.type == EventTlvType.ERRORED_SYMBOL_PERIOD
    assert (tlv.errors, tlv.threshold) == (0, 7)  # errors 0, the local sf-threshold
    assert tlv.window == 2 * SYMBOLS_PER_SECOND_1G
    assert (tlv.error_running_total, tlv.event_running_total) == (10, 1)
    assert len(notification_frames(pair, since=at)) == 1  # one frame, not a burst
    assert not pair.a.out_of_service


def test_clearing_a_symbol_failure_without_event_notification_sends_nothing() -> None:
    lm = link_monitoring(errored_symbol_period=monitor(event_notification=False))
    pair, feed = start(port_settings(lm))
    feed.sample(symbols=1)
    pair.call("a", "clear_events")
    pair.run_for(2)
    assert notification_frames(pair) == []


def test_clearing_a_symbol_degrade_sends_nothing() -> None:
    lm = link_monitoring(errored_symbol_period=monitor(sd_threshold=1, sf_threshold=9))
    pair, feed = start(port_settings(lm))
    feed.sample(symbols=1)
    assert [e.severity for e in raised(pair)] == [Severity.DEGRADE]
    pair.call("a", "clear_events")
    pair.run_for(2)
    assert notification_frames(pair) == []


@pytest.mark.parametrize("case", FRAME_CASES, ids=FRAME_CASE_IDS)
def test_clearing_a_frame_failure_sends_no_notification(case: MonitorCase) -> None:
    pair, feed = case.start(**case.settings(), local_sf_action=LocalSfAction(event_burst=5))
    case.fill(feed, 1)
    pair.run_for(2)
    assert len(notification_frames(pair)) == 5
    at = pair.now
    pair.call("a", "clear_events", Location.LOCAL)
    pair.run_for(2)
    assert notification_frames(pair, since=at) == []
    assert not pair.a.out_of_service


def test_clearing_remote_sends_nothing_to_the_peer() -> None:
    actions = PeerActions(event_notification=PortAction.OUT_OF_SERVICE)
    lm = link_monitoring(errored_symbol_period=monitor(), peer_actions=actions)
    pair, _ = start(port_settings(lm))
    pair.inject("a", event_frame(1, LinkEventTlv(EventTlvType.ERRORED_SYMBOL_PERIOD, threshold=1, errors=3)))
    pair.call("b", "set_local_flags", Flag.DYING_GASP, True)
    pair.run_for(0.5)
    flags_before = pair.a.local_flags
    at = mark(pair)
    pair.call("a", "clear_events", Location.REMOTE)
    assert sent(pair, after=at) == []  # nothing at the clear itself
    assert pair.a.local_flags == flags_before
    pair.run_for(3)
    assert notification_frames(pair, since=0) == []
    assert pair.b.stats.unique_event_notification_rx == 0


def test_a_cleared_remote_flag_event_comes_back_with_the_next_information() -> None:
    pair, _ = start(port_settings(link_monitoring()))
    pair.call("b", "set_local_flags", Flag.DYING_GASP, True)
    pair.run_for(0.5)
    (first,) = raised(pair)
    pair.call("a", "clear_events", Location.REMOTE)
    assert not pair.a.out_of_service
    cleared_at = pair.now
    pair.run_for(1.01)  # one transmit interval: b's next Information still carries the flag
    first_again, second = raised(pair)
    assert first_again == first
    assert cleared_at < second.time <= cleared_at + 1.01
    assert second.index > first.index and second.active
    assert dict(pair.a.event_log())[1] == second
    assert pair.a.out_of_service


def test_a_cleared_remote_notification_event_does_not_come_back() -> None:
    actions = PeerActions(event_notification=PortAction.OUT_OF_SERVICE)
    pair, _ = start(port_settings(link_monitoring(peer_actions=actions)))
    pair.inject("a", event_frame(1, LinkEventTlv(EventTlvType.ERRORED_FRAME, window=10, threshold=1, errors=3)))
    pair.run_for(0.5)
    pair.call("a", "clear_events", Location.REMOTE)
    pair.run_for(5)
    assert len(raised(pair)) == 1
    assert not pair.a.out_of_service


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_a_monitor_fails_again_after_a_clear(case: MonitorCase) -> None:
    pair, feed = case.start(**case.settings(sf_threshold=2))
    case.fill(feed, 2)
    pair.call("a", "clear_events")
    case.fill(feed, 1)
    assert not pair.a.out_of_service
    case.fill(feed, 2)
    assert pair.a.out_of_service
    assert len([e for e in raised(pair) if e.severity is Severity.FAILURE]) == 2


# -- link down/up ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_link_down_clears_every_event_without_notification(case: MonitorCase) -> None:
    actions = PeerActions(event_notification=PortAction.OUT_OF_SERVICE)
    pair, feed = case.start(**case.settings(sf_threshold=1), local_sf_action=DG_CE, peer_actions=actions)
    pair.call("b", "set_local_flags", Flag.CRITICAL_EVENT, True)
    pair.inject("a", event_frame(9, LinkEventTlv(EventTlvType.ERRORED_SYMBOL_PERIOD, threshold=1, errors=3)))
    case.fill(feed, 1)
    pair.run_for(0.5)
    assert locations(pair.a) == [Location.LOCAL, Location.REMOTE, Location.REMOTE]
    assert pair.a.local_flags & Flag.DYING_GASP
    sent_before = len(notification_frames(pair))
    pair.call("a", "set_link", False)
    assert pair.a.link_monitoring.active_events() == []
    assert not pair.a.out_of_service
    assert not pair.a.local_flags & (Flag.DYING_GASP | Flag.CRITICAL_EVENT)
    assert len(cleared(pair)) == 3
    pair.run_for(1)
    pair.call("a", "set_link", True)
    pair.run_for(0.2)
    assert len(notification_frames(pair)) == sent_before  # no notification of any kind
    assert not any(e.location is Location.LOCAL for e in pair.a.link_monitoring.active_events())
    # the monitor runs again after the link comes back, from a fresh window
    feed.sample(dt=0.8)
    case.fill(feed, 1)
    assert any(e.location is Location.LOCAL and e.active for e in pair.a.link_monitoring.active_events())


def test_link_down_up_with_the_peer_flag_still_set_brings_the_remote_event_back() -> None:
    pair, _ = start(port_settings(link_monitoring()))
    pair.call("b", "set_local_flags", Flag.DYING_GASP, True)
    pair.run_for(0.5)
    pair.call("a", "set_link", False)
    assert not pair.a.out_of_service
    pair.run_for(0.5)
    pair.call("a", "set_link", True)
    pair.run_for(3)
    assert pair.a.out_of_service  # learned again from the peer after rediscovery
    assert len(raised(pair)) == 2


def test_a_symbol_failure_cleared_by_link_down_does_not_notify() -> None:
    pair, feed = start(port_settings(link_monitoring(errored_symbol_period=monitor(sd_threshold=1, sf_threshold=3))))
    feed.sample(symbols=3)
    pair.run_for(0.5)
    pair.call("a", "set_link", False)
    pair.run_for(0.5)
    pair.call("a", "set_link", True)
    pair.run_for(3)
    assert [t.errors for t in notified_tlvs(pair)] == [3]
    assert pair.b.stats.unique_event_notification_rx == 1
    assert ERRORED_SYMBOL_PERIOD.log_type in {e.event_type for e in cleared(pair)}
