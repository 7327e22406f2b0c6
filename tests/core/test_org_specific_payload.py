"""An Organization Specific OAMPDU's payload never changes the engine (57.4.2.1 flags aside).

Two identical discovered pairs run side by side on their fake clocks; port "a" of one
receives, from its peer's MAC and with the peer's usual flags, Organization Specific
OAMPDUs whose payloads a vendor stack would act on (DPoE Set Requests for Loopback
Enable, Disable User Traffic, Laser Tx Power Off and Reset DPoE ONU; CTC requests and
an ONU authentication; Cisco; a 1493-octet payload).  The control pair's port "a" gets,
at the same instants, Organization Specific OAMPDUs with the same flags and no payload
(receiving an OAMPDU restarts the lost-link timer and counts, whatever it carries).
Everything the engine holds and does must then be the same in both, the hand-over
output (`OrgSpecificReceived`, with the OAMPDU untouched) excepted.
"""

from __future__ import annotations

from typing import Any

import attrs

from efmoam.core import OrgSpecificReceived, PortSettings
from efmoam.core.linkmon import LinkMonitoringSettings
from pdu import OrgSpecificPdu, decode
from pdu.oui import CISCO, CTC, DPOE
from tests.core.pair import PortPair
from tests.core.test_support import B_MAC, STABLE, discovered, frame, outputs

SETTINGS = PortSettings(link_monitoring=LinkMonitoringSettings(enabled=True))

PAYLOADS = [
    (DPOE, bytes.fromhex("03 d90603 80 00")),  # Set Request: Loopback Enable
    (DPOE, bytes.fromhex("03 d90602 80 00")),  # Disable User Traffic
    (DPOE, bytes.fromhex("03 d90605 80 00")),  # Laser Tx Power Off
    (DPOE, bytes.fromhex("03 d90001 80 00")),  # Reset DPoE ONU
    (DPOE, bytes.fromhex("01 d70002 00")),  # Get Request (nothing answers it)
    (CTC, bytes.fromhex("03 c70001 01 01")),  # CTC Set Request
    (CTC, bytes.fromhex("05 02 0025 01")),  # CTC ONU authentication
    (CISCO, b"\x00\x01"),
    (0x001122, bytes(range(256)) * 5 + bytes(range(213))),  # 1493 octets, the largest
]


def snapshot(pair: PortPair) -> dict[str, Any]:
    port = pair.a
    return {
        "state": port.state,
        "peer": port.peer,
        "peer_flags": port.peer_flags,
        "local_flags": port.local_flags,
        "local_tlv": port.local_tlv,
        "loopback": port.loopback,
        "out_of_service": port.out_of_service,
        "lost_link_at": port.lost_link_at,
        "events": port.event_log(),
        "stats": attrs.asdict(port.stats),
        "quirks": dict(port.quirks),
        "saved": port.saved_state(),
    }


def behaviour(pair: PortPair) -> list[tuple[float, str, Any]]:
    """Every output of both ports but the hand-over of the Organization Specific OAMPDUs."""
    return [(r.time, r.port, r.output) for r in pair.records if not isinstance(r.output, OrgSpecificReceived)]


def test_payloads_change_nothing_but_the_counter() -> None:
    control, probed = discovered(SETTINGS, SETTINGS), discovered(SETTINGS, SETTINGS)
    sent = [OrgSpecificPdu(B_MAC, STABLE, oui, value) for oui, value in PAYLOADS]
    for number, pdu in enumerate(sent):
        probed.inject("a", frame(pdu), delay=0.01 * number)
        control.inject("a", frame(OrgSpecificPdu(B_MAC, STABLE, 0xFFFFFF, b"")), delay=0.01 * number)
    for pair in (control, probed):
        pair.run_for(0.2)
    assert snapshot(probed) == snapshot(control)
    assert probed.a.stats.org_specific_rx == len(sent)
    handed = [output.pdu for output in outputs(probed, "a", OrgSpecificReceived)]
    assert handed == [decode(frame(pdu)) for pdu in sent]
    for pair in (control, probed):
        pair.run_for(5)  # keep-alives, timers: the same frames at the same times
    assert snapshot(probed) == snapshot(control)
    assert behaviour(probed) == behaviour(control)
