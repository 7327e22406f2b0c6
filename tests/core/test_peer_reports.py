"""What the peer tells us outside the usual Information OAMPDU, and what we tell it at the end.

* The Flags field is in every OAMPDU (57.4.2.1): a Dying Gasp sent in an Organization
  Specific OAMPDU, by a peer that then goes silent, acts at once.
* A peer that reuses the previous sequence number for a new Event Notification: a new
  event, processed and reported as the peer's quirk; identical TLVs stay a duplicate.
* Our Dying Gasp at shutdown is an event only where it is sent.
"""

from __future__ import annotations

from efmoam.core import (
    DiscoveryChanged,
    FrameDropped,
    LinkEventsReceived,
    LoopbackStatus,
    OamPort,
    PeerQuirk,
    PortSettings,
    QuirkSeen,
)
from efmoam.core.linkmon import LinkMonitoringSettings, Location, PeerActions, PortAction
from efmoam.core.outputs import EventLogged, PeerFlagsChanged, PortServiceChanged
from pdu import (
    EventLogType,
    EventNotification,
    EventTlvType,
    Flag,
    LinkEventTlv,
    LoopbackCommand,
    LoopbackControl,
    OrgSpecificPdu,
)
from tests.core.test_support import (
    A_MAC,
    B_MAC,
    STABLE,
    S,
    discovered,
    frame,
    last_sent_flags,
    outputs,
)

#: a vendor's Dying Gasp: an Organization Specific OAMPDU with flags 0x0052
VENDOR_DYING_GASP = frame(OrgSpecificPdu(B_MAC, Flag.DYING_GASP | STABLE, 0x00000C, b"\x00\x01"))
MONITORING = PortSettings(link_monitoring=LinkMonitoringSettings(enabled=True))


def remote_events(port: OamPort) -> list[EventLogType]:
    return [e.event_type for e in port.link_monitoring.active_events() if e.location is Location.REMOTE]


# -- flags in any OAMPDU --------------------------------------------------------------


def test_a_dying_gasp_in_an_organization_specific_oampdu_acts_at_once() -> None:
    pair = discovered(MONITORING, PortSettings())
    pair.link["b"].cut = True  # the peer sends its Dying Gasp and goes silent
    since = pair.now
    pair.inject("a", VENDOR_DYING_GASP)
    pair.run_for(0.01)  # long before the 5 s lost-link time
    assert remote_events(pair.a) == [EventLogType.DYING_GASP_EVENT]
    assert pair.a.out_of_service  # peer_actions.dying_gasp: out of service by default
    changes = outputs(pair, "a", PortServiceChanged, since)
    assert [(c.out_of_service, c.reasons) for c in changes] == [(True, ("remote dying_gasp_event",))]
    assert [o.raised for o in outputs(pair, "a", PeerFlagsChanged, since)] == [Flag.DYING_GASP]
    assert pair.a.stats.org_specific_rx == 1
    pair.run_for(6)  # the lost-link timer: the peer is gone, and its flags with it
    assert pair.a.state is not S.SEND_ANY and remote_events(pair.a) == []
    assert not pair.a.out_of_service


def test_flags_of_any_oampdu_follow_the_peer_and_a_log_only_action_logs() -> None:
    log_only = PeerActions(dying_gasp=PortAction.LOG_ONLY)
    settings = PortSettings(link_monitoring=LinkMonitoringSettings(enabled=True, peer_actions=log_only))
    pair = discovered(settings, PortSettings())
    pair.inject("a", VENDOR_DYING_GASP)
    pair.run_for(0.01)
    assert remote_events(pair.a) == [EventLogType.DYING_GASP_EVENT] and not pair.a.out_of_service
    pair.run_for(1.5)  # the peer's next Information carries no Dying Gasp: it is over
    assert remote_events(pair.a) == []


def test_the_flags_of_a_filtered_oampdu_from_the_peer_still_count() -> None:
    """Before SEND_ANY an Organization Specific OAMPDU's content is dropped, not its flags."""
    pair = discovered(MONITORING, PortSettings())
    pair.link["b"].cut = True
    pair.call("a", "reconfigure", PortSettings(link_monitoring=LinkMonitoringSettings(enabled=True), vendor_info=9))
    assert pair.a.state is not S.SEND_ANY  # our new configuration is not yet echoed by the peer
    pair.inject("a", VENDOR_DYING_GASP)
    pair.run_for(0.01)
    assert "not_in_send_any" in [o.reason for o in outputs(pair, "a", FrameDropped)]
    assert remote_events(pair.a) == [EventLogType.DYING_GASP_EVENT]


def test_flags_from_a_second_mac_are_ignored() -> None:
    pair = discovered(MONITORING, PortSettings())
    pair.inject("a", frame(OrgSpecificPdu("02:00:00:00:00:0c", Flag.DYING_GASP | STABLE, 0x00000C, b"")))
    pair.run_for(0.01)
    assert remote_events(pair.a) == []


# -- a reused sequence number -----------------------------------------------------------

FRAME_EVENT = LinkEventTlv(EventTlvType.ERRORED_FRAME, timestamp=10, window=10, threshold=1, errors=3)
LATER_FRAME_EVENT = LinkEventTlv(EventTlvType.ERRORED_FRAME, timestamp=40, window=10, threshold=1, errors=5)


def notification(sequence: int, tlv: LinkEventTlv) -> bytes:
    return frame(EventNotification(B_MAC, STABLE, sequence, (tlv,)))


def test_a_reused_sequence_number_with_new_tlvs_is_a_new_event_and_a_quirk() -> None:
    pair = discovered(MONITORING, MONITORING)
    for sequence, tlv in ((7, FRAME_EVENT), (7, FRAME_EVENT), (7, LATER_FRAME_EVENT)):
        pair.inject("a", notification(sequence, tlv))
        pair.run_for(0.1)
    assert pair.a.stats.unique_event_notification_rx == 2
    assert pair.a.stats.duplicate_event_notification_rx == 1  # the identical repeat: a burst copy
    assert [e.tlvs[0].errors for e in outputs(pair, "a", LinkEventsReceived)] == [3, 5]
    (quirk,) = outputs(pair, "a", QuirkSeen)
    assert quirk.quirk is PeerQuirk.SEQUENCE_REUSED and "7" in quirk.detail
    assert pair.a.quirks == {"sequence_reused": 1}
    (remote,) = pair.a.link_monitoring.active_events()
    assert (remote.value, remote.location) == (5, Location.REMOTE)  # the newer report replaced the first
    raised = [o.entry.value for o in outputs(pair, "a", EventLogged) if o.entry.active]
    assert raised == [3, 5]


def test_a_new_sequence_number_is_no_quirk() -> None:
    pair = discovered(MONITORING, MONITORING)
    for sequence, tlv in ((7, FRAME_EVENT), (8, LATER_FRAME_EVENT)):
        pair.inject("a", notification(sequence, tlv))
        pair.run_for(0.1)
    assert pair.a.stats.unique_event_notification_rx == 2 and pair.a.quirks == {}
    assert outputs(pair, "a", QuirkSeen) == []


# -- our Dying Gasp at shutdown -----------------------------------------------------------


def test_a_dying_gasp_is_logged_only_where_it_is_sent() -> None:
    pair = discovered()
    assert pair.call("a", "send_dying_gasp") is True
    pair.run_for(0.01)
    assert last_sent_flags(pair, "a") & Flag.DYING_GASP
    assert [e.event_type for e in pair.a.link_monitoring.active_events()] == [EventLogType.DYING_GASP_EVENT]

    disabled = OamPort(PortSettings(enabled=False), A_MAC, now=0.0)
    link_down = OamPort(PortSettings(), A_MAC, now=0.0, link_up=False)
    half_duplex = OamPort(PortSettings(), A_MAC, now=0.0, half_duplex=True)
    for port in (disabled, link_down, half_duplex):
        port.take_outputs()
        assert port.send_dying_gasp(now=1.0) is False
        assert port.event_log() == [] and port.take_outputs() == []


def test_other_oampdus_move_only_the_critical_flags() -> None:
    """A peer whose other OAMPDUs carry 0 in Local Stable/Evaluating (some do) does not
    take us out of SEND_ANY: those bits belong to its Information OAMPDUs."""
    looping = PortSettings(loopback_process=True, link_monitoring=LinkMonitoringSettings(enabled=True))
    pair = discovered(looping, MONITORING)
    since = pair.now
    pair.inject("a", frame(EventNotification(B_MAC, Flag(0), 1, (FRAME_EVENT,))))
    pair.inject("a", frame(LoopbackControl(B_MAC, Flag(0), LoopbackCommand.ENABLE)))
    pair.run_for(0.01)
    assert outputs(pair, "a", DiscoveryChanged, since) == []
    assert pair.a.state is S.SEND_ANY and pair.a.loopback is LoopbackStatus.LOCAL_LOOPBACK
    assert pair.a.peer_flags & Flag.LOCAL_STABLE


def test_a_failure_flag_that_ends_send_any_drops_the_content_it_came_with() -> None:
    """Without link monitoring the peer's failure flags end SEND_ANY (the reference's
    "unsupportive" node): the Loopback Control that carried one is not obeyed."""
    unsupportive = PortSettings(loopback_process=True)
    pair = discovered(unsupportive, PortSettings())
    pair.link["b"].cut = True
    pair.inject("a", frame(LoopbackControl(B_MAC, Flag.CRITICAL_EVENT | STABLE, LoopbackCommand.ENABLE)))
    pair.run_for(0.01)
    assert pair.a.state is S.SEND_LOCAL_REMOTE
    assert pair.a.loopback is LoopbackStatus.NO_LOOPBACK
    assert [o.reason for o in outputs(pair, "a", FrameDropped)] == ["not_in_send_any"]
    assert remote_events(pair.a) == [EventLogType.CRITICAL_LINK_EVENT]


def test_the_flags_our_client_set_outlive_a_link_flap() -> None:
    """A link down/up ends the events of the link, not what our own side asked to send."""
    pair = discovered(MONITORING, MONITORING)
    pair.call("a", "set_local_flags", Flag.CRITICAL_EVENT, True)
    pair.call("b", "set_local_flags", Flag.LINK_FAULT, True)
    pair.run_for(0.5)
    pair.call("a", "set_link", False)
    pair.call("a", "set_link", True)
    pair.run_for(1.5)
    assert pair.a.local_flags & Flag.CRITICAL_EVENT and pair.b.peer_flags & Flag.CRITICAL_EVENT
    local = [e for e in pair.a.link_monitoring.active_events() if e.location is Location.LOCAL]
    assert [e.event_type for e in local] == [EventLogType.CRITICAL_LINK_EVENT]
    assert remote_events(pair.a) == [EventLogType.LINK_FAULT]  # a new one: the peer still sends it
    pair.call("a", "clear_events", Location.LOCAL)
    pair.run_for(1.5)
    assert not pair.b.peer_flags & Flag.CRITICAL_EVENT
