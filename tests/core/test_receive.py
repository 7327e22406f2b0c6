"""Receiving: loops, a second MAC, filtering by local_pdu, malformed frames, RFC 4878 counters."""

from __future__ import annotations

from collections import Counter

import attrs
import pytest

import pdu
from efmoam.core import OamStatistics, PeerChanged, PortSettings, Transmit
from pdu import (
    Code,
    DecodeReason,
    EventNotification,
    Flag,
    LoopbackCommand,
    LoopbackControl,
    Oampdu,
    OrgSpecificPdu,
    UnsupportedPdu,
    VariableDescriptor,
    VariableRequest,
    VariableResponse,
)
from tests.core.test_support import (
    B_MAC,
    ERRORED_FRAME,
    STABLE,
    STRANGER_MAC,
    Pair,
    S,
    discovered,
    drops,
    frame,
    information,
    lone,
    notify,
    outputs,
    peer_tlv,
    snapshot,
    steady_information,
)

#: one OAMPDU of every code but Information, as the peer B would send them
NON_INFORMATION: dict[str, Oampdu] = {
    "event_notification": EventNotification(B_MAC, STABLE, 1, (ERRORED_FRAME,)),
    "variable_request": VariableRequest(B_MAC, STABLE, (VariableDescriptor(7, 251),)),
    "variable_response": VariableResponse(B_MAC, STABLE, ()),
    "loopback_control": LoopbackControl(B_MAC, STABLE, LoopbackCommand.ENABLE),
    "organization_specific": OrgSpecificPdu(B_MAC, STABLE, 0x001122, b"hi"),
    "unsupported": UnsupportedPdu(B_MAC, STABLE, 0x05, b"\x01"),
}

RFC4878_COUNTERS = {
    "dot3OamInformationTx",
    "dot3OamInformationRx",
    "dot3OamUniqueEventNotificationTx",
    "dot3OamUniqueEventNotificationRx",
    "dot3OamDuplicateEventNotificationTx",
    "dot3OamDuplicateEventNotificationRx",
    "dot3OamLoopbackControlTx",
    "dot3OamLoopbackControlRx",
    "dot3OamVariableRequestTx",
    "dot3OamVariableRequestRx",
    "dot3OamVariableResponseTx",
    "dot3OamVariableResponseRx",
    "dot3OamOrgSpecificTx",
    "dot3OamOrgSpecificRx",
    "dot3OamUnsupportedCodesTx",
    "dot3OamUnsupportedCodesRx",
    "dot3OamFramesLostDueToOam",
}


def injected(pair: Pair, receiver: str, data: bytes, wait: float = 0.01) -> list[str]:
    """Deliver `data` to `receiver` now; return the drop reasons it caused."""
    t = pair.now
    pair.inject(receiver, data)
    pair.run_for(wait)
    return drops(pair, receiver, since=t)


# -- loops and second peers -------------------------------------------------------------


def test_own_frame_is_a_loop_and_makes_no_adjacency() -> None:
    pair = lone()
    own = pair.outputs("a", Transmit)[-1].output.frame
    assert injected(pair, "a", own) == ["loop"]
    assert pair.a.peer_mac is None and pair.a.peer is None
    assert pair.a.state is S.ACTIVE_SEND_LOCAL
    assert pair.a.stats.information_rx == 0


def test_own_frame_in_send_any_changes_nothing() -> None:
    pair = discovered()
    before = snapshot(pair.a)
    assert injected(pair, "a", steady_information(pair, "a")) == ["loop"]
    assert snapshot(pair.a) == before


@pytest.mark.parametrize("kind", ["information", "event_notification"])
def test_frames_from_a_third_mac_are_refused(kind: str) -> None:
    pair = discovered(PortSettings(link_events=True), PortSettings(link_events=True))
    before = snapshot(pair.a)
    if kind == "information":
        data = information(STRANGER_MAC, STABLE, peer_tlv(PortSettings(vendor_info=99)))
    else:
        data = frame(EventNotification(STRANGER_MAC, STABLE, 5, (ERRORED_FRAME,)))
    assert injected(pair, "a", data) == ["second_peer"]
    assert snapshot(pair.a) == before
    assert pair.a.peer_mac == B_MAC
    pair.run_for(10)
    assert pair.both_in(S.SEND_ANY)


def test_frame_dropped_while_link_down_does_not_choose_the_peer() -> None:
    pair = discovered()
    pair.call("a", "set_link", False)
    assert injected(pair, "a", information(STRANGER_MAC, STABLE, peer_tlv())) == ["link_down"]
    pair.call("a", "set_link", True)
    pair.run_for(10)
    assert pair.a.peer_mac == B_MAC
    assert pair.both_in(S.SEND_ANY)


def test_filtered_frame_from_a_stranger_does_not_delay_discovery() -> None:
    pair = Pair()
    pair.inject("a", frame(EventNotification(STRANGER_MAC, STABLE, 1, ())))  # before b's first frame
    pair.run_until(0.5)
    assert drops(pair, "a")[0] == "not_in_send_any"
    assert pair.both_in(S.SEND_ANY)


# -- filtering by local_pdu ------------------------------------------------------------


@pytest.mark.parametrize("kind", list(NON_INFORMATION))
def test_non_information_before_send_any_is_dropped(kind: str) -> None:
    pair = lone(PortSettings(loopback_process=True, link_events=True))
    before = snapshot(pair.a)
    assert injected(pair, "a", frame(NON_INFORMATION[kind])) == ["not_in_send_any"]
    after = snapshot(pair.a)
    assert after["stats"] == before["stats"]  # not counted as received
    assert (after["state"], after["loopback"]) == (before["state"], before["loopback"])


@pytest.mark.parametrize("kind", list(NON_INFORMATION))
def test_non_information_in_send_local_remote_ok_is_dropped(kind: str) -> None:
    pair = lone(PortSettings(loopback_process=True, link_events=True))
    pair.inject("a", information(B_MAC, Flag.LOCAL_EVALUATING, peer_tlv()))
    pair.run_for(0.1)
    assert pair.a.state is S.SEND_LOCAL_REMOTE_OK
    assert injected(pair, "a", frame(NON_INFORMATION[kind])) == ["not_in_send_any"]
    assert pair.a.state is S.SEND_LOCAL_REMOTE_OK


def test_unsupported_code_in_send_any_is_counted_and_ignored() -> None:
    pair = discovered()
    before = snapshot(pair.a)
    assert injected(pair, "a", frame(NON_INFORMATION["unsupported"])) == []
    assert pair.a.stats.unsupported_codes_rx == 1
    after = snapshot(pair.a)
    assert (after["state"], after["peer"]) == (before["state"], before["peer"])
    assert pair.a.stats.unsupported_codes_tx == 0


@pytest.mark.parametrize("code", [0x05, 0x42, 0xFD, 0xFF])
def test_every_reserved_code_counts_as_unsupported(code: int) -> None:
    pair = discovered()
    injected(pair, "a", frame(UnsupportedPdu(B_MAC, STABLE, code, b"\x07")))
    assert pair.a.stats.unsupported_codes_rx == 1


def test_information_with_unknown_tlvs_is_accepted() -> None:
    pair = discovered()
    local = pair.b.local_tlv
    unknown = pdu.UnknownTlv(0x42, b"\x01\x02")
    org = pdu.OrgSpecificTlv(0x001122, b"x")
    data = frame(pdu.Information(B_MAC, STABLE, (local, attrs.evolve(pair.a.local_tlv, type=2), unknown, org)))
    assert injected(pair, "a", data) == []
    assert pair.a.state is S.SEND_ANY


# -- malformed frames -----------------------------------------------------------------


def _set(data: bytes, offset: int, value: int) -> bytes:
    return data[:offset] + bytes([value]) + data[offset + 1 :]


def _malformed(good_info: bytes, good_event: bytes) -> dict[str, tuple[bytes, str]]:
    """Broken variants of real frames, with the drop reason each must give."""
    return {
        "shorter_than_header": (good_info[:17], DecodeReason.SHORTER_THAN_HEADER.value),
        "too_long": (good_info + bytes(1500), DecodeReason.TOO_LONG.value),
        "info_tlv_length": (_set(good_info, 19, 15), DecodeReason.INFO_TLV_LENGTH.value),
        "tlv_too_short": (_set(good_info, 19, 1), DecodeReason.TLV_TOO_SHORT.value),
        "tlv_overrun": (good_info[:28], DecodeReason.TLV_OVERRUN.value),
        "event_tlv_length": (_set(good_event, 21, 27), DecodeReason.EVENT_TLV_LENGTH.value),
        "event_truncated": (good_event[:19], DecodeReason.TRUNCATED.value),
        "wrong_ethertype": (_set(good_info, 12, 0x08), "not_oampdu"),
        "wrong_subtype": (_set(good_info, 14, 0x01), "not_oampdu"),
        "wrong_destination": (_set(good_info, 5, 0x03), "not_oampdu"),
    }


MALFORMED_CASES = list(_malformed(bytes(60), bytes(60)))


@pytest.mark.parametrize("case", MALFORMED_CASES)
def test_malformed_frame_is_dropped_with_its_reason_and_changes_nothing(case: str) -> None:
    pair = discovered(PortSettings(link_events=True), PortSettings(link_events=True))
    good_event = frame(EventNotification(B_MAC, STABLE, 3, (ERRORED_FRAME,)))
    data, reason = _malformed(steady_information(pair, "b"), good_event)[case]
    with pytest.raises(pdu.DecodeError):
        pdu.decode(data)
    pair.run_for(0.5)  # halfway between b's keep-alives
    before = snapshot(pair.a)
    assert injected(pair, "a", data, wait=0.0) == [reason]
    assert snapshot(pair.a) == before  # no lost-link restart, no counter, no peer change
    assert pair.a.drops[reason] == 1


def test_malformed_frames_do_not_keep_a_silent_peer_alive() -> None:
    pair = discovered()
    pair.link["b"].cut = True
    broken = _set(steady_information(pair, "b"), 19, 15)
    for _ in range(60):
        pair.inject("a", broken)
        pair.run_for(0.1)
    assert pair.first_time_in("a", S.FAULT) is not None


# -- statistics -----------------------------------------------------------------------


def test_all_rfc4878_counters_are_present() -> None:
    assert set(OamStatistics().as_rfc4878()) == RFC4878_COUNTERS
    assert len(OamStatistics().as_rfc4878()) == 17


def test_counters_match_the_frames_on_the_wire() -> None:
    pair = discovered(PortSettings(link_events=True), PortSettings(link_events=True, loopback_process=True))
    notify(pair, "a", burst=3)
    pair.call("a", "send_org_specific", 0x001122, b"x")
    pair.call("a", "request_variables", (VariableDescriptor(7, 251),))
    pair.call("a", "start_loopback")
    pair.run_for(1.0)
    pair.call("a", "stop_loopback")
    pair.run_for(1.0)
    codes = {name: Counter(r.output.code for r in pair.outputs(name, Transmit)) for name in "ab"}
    a, b = pair.a.stats, pair.b.stats
    assert a.information_tx == codes["a"][Code.INFORMATION] == b.information_rx
    assert b.information_tx == codes["b"][Code.INFORMATION] == a.information_rx
    assert a.unique_event_notification_tx + a.duplicate_event_notification_tx == codes["a"][Code.EVENT_NOTIFICATION]
    assert (b.unique_event_notification_rx, b.duplicate_event_notification_rx) == (1, 2)
    assert a.org_specific_tx == b.org_specific_rx == 1
    assert a.variable_request_tx == b.variable_request_rx == 1
    assert b.variable_response_tx == a.variable_response_rx == 1
    assert a.loopback_control_tx == b.loopback_control_rx == 2 == codes["a"][Code.LOOPBACK_CONTROL]


def test_counters_survive_fault() -> None:
    pair = discovered()
    pair.run_for(3)
    before = attrs.asdict(pair.b.stats)
    pair.link["a"].cut = True
    pair.run_for(6)
    assert pair.first_time_in("b", S.FAULT) is not None
    assert outputs(pair, "b", PeerChanged)[-1].peer is None
    middle = attrs.asdict(pair.b.stats)
    assert all(middle[k] >= v for k, v in before.items())
    assert middle["information_rx"] == before["information_rx"]  # nothing heard, nothing lost
    pair.link["a"].cut = False
    pair.run_for(3)
    after = pair.b.stats
    assert after.information_rx > before["information_rx"]
    assert after.information_tx > before["information_tx"]


def test_drops_are_counted_by_reason() -> None:
    pair = discovered()
    for _ in range(3):
        pair.inject("a", steady_information(pair, "a"))
    pair.inject("a", information(STRANGER_MAC, STABLE, peer_tlv()))
    pair.run_for(0.1)
    assert pair.a.drops == {"loop": 3, "second_peer": 1}
