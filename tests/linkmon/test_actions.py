"""What local events do: the port, Event Notification bursts, info-notification flags,
recovery (none for frame monitors, automatic for the symbol monitor with sd-threshold),
and threshold changes that clear a monitor's events."""

from __future__ import annotations

import pytest

from efmoam.core.linkmon import Location, PortAction, Severity
from pdu import EventTlvType, Flag
from tests.linkmon import (
    CASE_IDS,
    CASES,
    ERRORED_FRAME,
    ERRORED_SYMBOL_PERIOD,
    FRAME_CASE_IDS,
    FRAME_CASES,
    SUPPORTIVE,
    UNSUPPORTIVE,
    LocalSfAction,
    MonitorCase,
    PeerActions,
    active_affecting,
    cleared,
    information_flags,
    link_monitoring,
    mark,
    monitor,
    notification_frames,
    notified_tlvs,
    port_settings,
    raised,
    service_changes,
    start,
)

INFO_FLAGS = Flag.DYING_GASP | Flag.CRITICAL_EVENT

# -- signal degrade ------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_degrade_is_logged_only(case: MonitorCase) -> None:
    action = LocalSfAction(dying_gasp=True, critical_event=True, event_burst=3)
    pair, feed = case.start(**case.settings(sd_threshold=1, sf_threshold=5), local_sf_action=action)
    case.fill(feed, 1)
    pair.run_for(3)
    (sd,) = raised(pair)
    assert sd.severity is Severity.DEGRADE and sd.active and not sd.port_affecting
    assert not pair.a.out_of_service
    assert service_changes(pair) == []
    assert notification_frames(pair) == []
    assert not any(flags & INFO_FLAGS for flags in information_flags(pair))
    assert not pair.a.local_flags & INFO_FLAGS


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_degrade_is_suppressed_while_the_monitor_is_failed(case: MonitorCase) -> None:
    pair, feed = case.start(**case.settings(sd_threshold=2, sf_threshold=4))
    case.fill(feed, 5)
    assert [e.severity for e in raised(pair)] == [Severity.FAILURE]
    for n in (2, 3, 4, 6):  # degrade-level windows, and failure-level ones
        case.fill(feed, n)
    assert [e.severity for e in raised(pair)] == [Severity.FAILURE]  # nothing new
    assert len(notified_tlvs(pair)) == 1
    assert pair.a.out_of_service


# -- signal failure ------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_failure_takes_the_port_out_of_service_by_default(case: MonitorCase) -> None:
    pair, feed = case.start(**case.settings(sf_threshold=1))
    assert not pair.a.out_of_service
    case.fill(feed, 1)
    (sf,) = raised(pair)
    assert sf.severity is Severity.FAILURE and sf.port_affecting and sf.active
    assert pair.a.out_of_service
    (change,) = service_changes(pair)
    assert change.out_of_service
    assert len(change.reasons) == 1 and "local" in change.reasons[0]


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_log_only_failure_leaves_the_port_in_service(case: MonitorCase) -> None:
    action = LocalSfAction(port_action=PortAction.LOG_ONLY)
    pair, feed = case.start(**case.settings(sf_threshold=1), local_sf_action=action)
    case.fill(feed, 1)
    (sf,) = raised(pair)
    assert sf.severity is Severity.FAILURE and not sf.port_affecting
    assert not pair.a.out_of_service
    assert service_changes(pair) == []
    assert len(notified_tlvs(pair)) == 1  # the peer is still told


@pytest.mark.parametrize("burst", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_failure_sends_a_burst_of_one_notification(case: MonitorCase, burst: int) -> None:
    pair, feed = case.start(**case.settings(sf_threshold=2), local_sf_action=LocalSfAction(event_burst=burst))
    case.fill(feed, 3)
    pair.run_for(3)
    copies = notification_frames(pair)
    assert len(copies) == burst
    assert len({p.sequence for p in copies}) == 1
    assert len({p.tlvs for p in copies}) == 1
    (tlv,) = copies[0].link_events
    assert tlv.type == case.wire_type and (tlv.threshold, tlv.errors) == (2, 3)
    assert pair.a.stats.unique_event_notification_tx == 1
    assert pair.a.stats.duplicate_event_notification_tx == burst - 1
    assert pair.b.stats.unique_event_notification_rx == 1


@pytest.mark.parametrize("burst", [0, 6])
def test_event_burst_is_between_one_and_five(burst: int) -> None:
    with pytest.raises(ValueError):
        LocalSfAction(event_burst=burst)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_no_notification_when_the_monitor_does_not_notify(case: MonitorCase) -> None:
    pair, feed = case.start(**case.settings(sf_threshold=1, event_notification=False))
    case.fill(feed, 1)
    pair.run_for(3)
    assert len(raised(pair)) == 1 and pair.a.out_of_service
    assert notification_frames(pair) == []


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_no_notification_to_a_peer_without_link_events(case: MonitorCase) -> None:
    pair, feed = case.start(**case.settings(sf_threshold=1), b=UNSUPPORTIVE)
    assert not pair.b.settings.oam_config & 0x08
    case.fill(feed, 1)
    pair.run_for(3)
    assert len(raised(pair)) == 1 and pair.a.out_of_service
    assert notification_frames(pair) == []


def test_notification_to_a_peer_that_advertises_link_events_without_monitoring() -> None:
    peer = port_settings(link_events=True)
    pair, feed = ERRORED_FRAME.start(**ERRORED_FRAME.settings(), b=peer)
    feed.sample(1)
    pair.run_for(1)
    assert len(notification_frames(pair)) == 1


@pytest.mark.parametrize(
    "flags",
    [Flag.DYING_GASP, Flag.CRITICAL_EVENT, Flag.DYING_GASP | Flag.CRITICAL_EVENT],
    ids=["dying-gasp", "critical-event", "both"],
)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_info_notification_flags_are_set_while_the_failure_lasts(case: MonitorCase, flags: Flag) -> None:
    action = LocalSfAction(dying_gasp=bool(flags & Flag.DYING_GASP), critical_event=bool(flags & Flag.CRITICAL_EVENT))
    pair, feed = case.start(**case.settings(sf_threshold=1), local_sf_action=action)
    case.fill(feed, 1)
    assert len(raised(pair)) == 1
    failed = feed.mark
    assert not any(f & INFO_FLAGS for f in information_flags(pair, before=failed))
    pair.run_for(5)
    during = information_flags(pair, after=failed)
    assert len(during) >= 4  # sent at once (after the transmit spacing), then every interval
    assert all(f & INFO_FLAGS == flags for f in during)
    assert all(p.flags & INFO_FLAGS == flags for p in notification_frames(pair))
    cleared_at = mark(pair)
    pair.call("a", "clear_events")
    pair.run_for(3)
    after = information_flags(pair, after=cleared_at)
    assert len(after) >= 3 and not any(f & INFO_FLAGS for f in after)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_no_info_flags_without_info_notification(case: MonitorCase) -> None:
    pair, feed = case.start(**case.settings(sf_threshold=1))
    case.fill(feed, 1)
    pair.run_for(3)
    assert pair.a.out_of_service
    assert not any(f & INFO_FLAGS for f in information_flags(pair))


# -- recovery ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", FRAME_CASES, ids=FRAME_CASE_IDS)
def test_frame_monitors_never_recover_by_themselves(case: MonitorCase) -> None:
    action = LocalSfAction(dying_gasp=True)
    pair, feed = case.start(**case.settings(sd_threshold=2, sf_threshold=4), local_sf_action=action)
    case.fill(feed, 5)
    (sf,) = raised(pair)
    failed = feed.mark
    for _ in range(4):
        case.fill(feed, 0)  # clean windows
    assert pair.a.out_of_service
    assert [c.out_of_service for c in service_changes(pair)] == [True]
    assert cleared(pair) == []
    assert [e.index for e in pair.a.link_monitoring.active_events()] == [sf.index]
    assert len(notification_frames(pair)) == 1  # nothing on recovery (there is none)
    assert all(f & Flag.DYING_GASP for f in information_flags(pair, after=failed))


def test_symbol_monitor_with_sd_threshold_recovers_below_it() -> None:
    settings = monitor(sd_threshold=3, sf_threshold=10)
    action = LocalSfAction(dying_gasp=True)
    pair, feed = start(port_settings(link_monitoring(errored_symbol_period=settings, local_sf_action=action)))
    feed.sample(symbols=12)  # failure
    assert pair.a.out_of_service
    feed.sample(symbols=5)  # between sd and sf: still failed, no degrade
    feed.sample(symbols=3)  # sd exactly: still failed
    assert pair.a.out_of_service and len(raised(pair)) == 1
    assert len(notified_tlvs(pair)) == 1
    feed.sample(symbols=2)  # below sd: the failure clears
    recovered = feed.mark
    assert not pair.a.out_of_service
    assert [c.out_of_service for c in service_changes(pair)] == [True, False]
    (sf_cleared,) = cleared(pair)
    assert sf_cleared.severity is Severity.FAILURE and not sf_cleared.active
    assert pair.a.link_monitoring.active_events() == []
    assert not pair.a.local_flags & Flag.DYING_GASP
    pair.run_for(3)
    after = information_flags(pair, after=recovered)
    assert after and not any(f & Flag.DYING_GASP for f in after)
    failure, recovery = notified_tlvs(pair)
    assert recovery.type == EventTlvType.ERRORED_SYMBOL_PERIOD
    assert recovery.errors == 2 and recovery.errors < recovery.threshold
    assert recovery.window == failure.window
    assert recovery.error_running_total == 12 + 5 + 3 + 2


def test_symbol_recovery_notification_clears_the_peer_remote_event() -> None:
    settings = monitor(sd_threshold=3, sf_threshold=10)
    peer = port_settings(link_monitoring(peer_actions=PeerActions(event_notification=PortAction.OUT_OF_SERVICE)))
    pair, feed = start(port_settings(link_monitoring(errored_symbol_period=settings)), peer)
    feed.sample(symbols=10)
    pair.run_for(0.5)
    assert pair.b.out_of_service
    feed.sample(symbols=0, at=3.0)
    pair.run_for(0.5)
    assert not pair.b.out_of_service
    assert pair.b.link_monitoring.active_events() == []


def test_symbol_recovery_without_notification_sends_nothing() -> None:
    settings = monitor(sd_threshold=3, sf_threshold=10, event_notification=False)
    pair, feed = start(port_settings(link_monitoring(errored_symbol_period=settings)))
    feed.sample(symbols=10)
    feed.sample(symbols=0)
    assert not pair.a.out_of_service
    pair.run_for(2)
    assert notification_frames(pair) == []


def test_symbol_monitor_without_sd_threshold_does_not_recover() -> None:
    pair, feed = start(port_settings(link_monitoring(errored_symbol_period=monitor(sf_threshold=10))))
    feed.sample(symbols=10)
    feed.quiet(5)
    assert pair.a.out_of_service
    assert cleared(pair) == []
    assert len(notification_frames(pair)) == 1


def test_symbol_monitor_fails_again_after_recovering() -> None:
    pair, feed = start(port_settings(link_monitoring(errored_symbol_period=monitor(sd_threshold=1, sf_threshold=4))))
    feed.sample(symbols=4)
    feed.sample(symbols=0)
    feed.sample(symbols=5)
    assert pair.a.out_of_service
    assert [e.severity for e in raised(pair)] == [Severity.FAILURE, Severity.FAILURE]
    tlvs = notified_tlvs(pair)
    assert [t.errors for t in tlvs] == [4, 0, 5]
    assert [t.event_running_total for t in tlvs] == [1, 1, 2]


# -- threshold changes clear the monitor's events -------------------------------------------


@pytest.mark.parametrize("field", ["sf_threshold", "sd_threshold"])
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_changing_a_threshold_clears_the_monitor_failure_like_clear(case: MonitorCase, field: str) -> None:
    action = LocalSfAction(dying_gasp=True)
    pair, feed = case.start(**case.settings(sd_threshold=2, sf_threshold=4), local_sf_action=action)
    case.fill(feed, 4)
    assert pair.a.out_of_service and pair.a.local_flags & Flag.DYING_GASP
    changed = {"sd_threshold": 2, "sf_threshold": 4} | {field: 3}
    pair.run_for(0.5)
    changed_at = pair.now
    pair.call("a", "reconfigure", port_settings(link_monitoring(**case.settings(**changed), local_sf_action=action)))
    assert not pair.a.out_of_service
    assert pair.a.link_monitoring.active_events() == []
    assert not pair.a.local_flags & Flag.DYING_GASP
    (sf_cleared,) = cleared(pair)
    assert sf_cleared.severity is Severity.FAILURE
    pair.run_for(2)
    zero = notified_tlvs(pair, since=changed_at)
    if case is ERRORED_SYMBOL_PERIOD:
        (tlv,) = zero  # the symbol monitor tells the peer: errors 0, the sf-threshold
        assert (tlv.type, tlv.errors, tlv.threshold) == (case.wire_type, 0, changed["sf_threshold"])
        assert tlv.window == case.wire_window
    else:
        assert zero == []
    # the monitor runs on: the next failing window is a new failure
    case.fill(feed, 5)
    assert pair.a.out_of_service
    assert [e.severity for e in raised(pair)] == [Severity.FAILURE, Severity.FAILURE]


def test_changing_a_threshold_clears_a_degrade() -> None:
    pair, feed = start(port_settings(link_monitoring(errored_frame=monitor(sd_threshold=2, sf_threshold=9))))
    feed.sample(2)
    assert [e.severity for e in pair.a.link_monitoring.active_events()] == [Severity.DEGRADE]
    pair.call("a", "reconfigure", port_settings(link_monitoring(errored_frame=monitor(sd_threshold=3, sf_threshold=9))))
    assert pair.a.link_monitoring.active_events() == []
    assert [e.severity for e in cleared(pair)] == [Severity.DEGRADE]


def test_changing_a_threshold_leaves_other_monitors_and_remote_events_alone() -> None:
    lm = link_monitoring(errored_frame=monitor(sf_threshold=1), errored_symbol_period=monitor(sf_threshold=1))
    pair, feed = start(port_settings(lm))
    pair.call("b", "set_local_flags", Flag.CRITICAL_EVENT, True)
    feed.sample(1, symbols=1)
    pair.run_for(0.5)
    before = {(e.location, e.event_type) for e in pair.a.link_monitoring.active_events()}
    assert len(before) == 3
    changed_at = pair.now
    new = link_monitoring(errored_frame=monitor(sf_threshold=2), errored_symbol_period=monitor(sf_threshold=1))
    pair.call("a", "reconfigure", port_settings(new))
    after = {(e.location, e.event_type) for e in pair.a.link_monitoring.active_events()}
    assert before - after == {(Location.LOCAL, ERRORED_FRAME.log_type)}
    assert pair.a.out_of_service  # the symbol failure and the peer's flag still hold it
    assert notification_frames(pair, since=changed_at) == []  # only the frame monitor was cleared


def test_changing_other_monitor_settings_does_not_clear() -> None:
    pair, feed = start(port_settings(link_monitoring(errored_frame=monitor(sf_threshold=1))))
    feed.sample(1)
    new = link_monitoring(
        errored_frame=monitor(sf_threshold=1, event_notification=False), local_sf_action=LocalSfAction()
    )
    pair.call("a", "reconfigure", port_settings(new))
    assert pair.a.out_of_service
    assert cleared(pair) == []


def test_enabling_link_monitoring_with_a_peer_already_up() -> None:
    pair, feed = start(SUPPORTIVE)
    feed.sample(5)
    pair.call("a", "reconfigure", port_settings(link_monitoring(errored_frame=monitor(sf_threshold=2))))
    feed.sample(0)  # opens the first window of the new monitor
    assert raised(pair) == []
    feed.sample(2)
    assert active_affecting(pair.a) and pair.a.out_of_service
