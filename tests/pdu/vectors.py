"""The example frames of protocol.md section 8 with the model each one stands for.

The hex strings are copied from the document; the models are written from the values the
document states for each frame (not from what the decoder returns).  Shared by the vector,
property, robustness and benchmark tests.
"""

from __future__ import annotations

import attrs

from pdu import (
    EventNotification,
    EventTlvType,
    Flag,
    Information,
    InfoTlv,
    InfoTlvType,
    LinkEventTlv,
    LoopbackCommand,
    LoopbackControl,
    OamConfig,
    Oampdu,
    OrgSpecificPdu,
    OrgSpecificTlv,
    VariableContainer,
    VariableDescriptor,
    VariableIndication,
    VariableRequest,
    VariableResponse,
)

PEER_A = "00:11:22:33:44:55"  #: Active
PEER_B = "00:aa:bb:cc:dd:ee"  #: Passive

#: Peer A's Local Information TLV: version 1, revision 0, FWD/FWD, config 0x0D, 1518, 00-11-22, 1
LOCAL_A = InfoTlv(
    type=InfoTlvType.LOCAL,
    oam_version=1,
    revision=0,
    parser_action=0,
    mux_action=0,
    oam_config=OamConfig.ACTIVE | OamConfig.REMOTE_LOOPBACK | OamConfig.LINK_EVENTS,
    max_pdu_size=1518,
    oui=0x001122,
    vendor_info=0x00000001,
)
#: Peer B's Local Information TLV: config 0x08 (Passive + Link Events), OUI 00-AA-BB, vendor 2
LOCAL_B = attrs.evolve(LOCAL_A, oam_config=OamConfig.LINK_EVENTS, oui=0x00AABB, vendor_info=0x00000002)
REMOTE_A = attrs.evolve(LOCAL_A, type=InfoTlvType.REMOTE)  #: B's copy of A's Local TLV
REMOTE_B = attrs.evolve(LOCAL_B, type=InfoTlvType.REMOTE)  #: A's copy of B's Local TLV

STABLE = Flag.LOCAL_STABLE | Flag.REMOTE_STABLE  #: 0x0050


@attrs.frozen
class Vector:
    """One example frame: its section, hex, and the model the document describes."""

    section: str
    hex: str
    model: Oampdu

    @property
    def frame(self) -> bytes:
        return bytes.fromhex(self.hex)


VECTORS: tuple[Vector, ...] = (
    Vector(
        "8.1-information-active-send-local",
        "0180c20000020011223344558809030008000110010000000d05ee001122000000010000000000000000000000000000000000000000000000000000",
        Information(PEER_A, Flag.LOCAL_EVALUATING, (LOCAL_A,)),
    ),
    Vector(
        "8.2-information-send-local-remote-ok",
        "0180c200000200aabbccddee8809030030000110010000000805ee00aabb000000020210010000000d05ee0011220000000100000000000000000000",
        Information(PEER_B, Flag.LOCAL_STABLE | Flag.REMOTE_EVALUATING, (LOCAL_B, REMOTE_A)),
    ),
    Vector(
        "8.3-information-send-any",
        "0180c20000020011223344558809030050000110010000000d05ee001122000000010210010000000805ee00aabb0000000200000000000000000000",
        Information(PEER_A, STABLE, (LOCAL_A, REMOTE_B)),
    ),
    Vector(
        "8.4-information-link-fault-no-tlvs",
        "0180c2000002001122334455880903000100000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
        Information(PEER_A, Flag.LINK_FAULT, ()),
    ),
    Vector(
        "8.5-information-dying-gasp",
        "0180c20000020011223344558809030052000110010000000d05ee001122000000010210010000000805ee00aabb0000000200000000000000000000",
        Information(PEER_A, STABLE | Flag.DYING_GASP, (LOCAL_A, REMOTE_B)),
    ),
    Vector(
        "8.6-event-errored-symbol-period-no-end-marker",
        "0180c2000002001122334455880903005001000101280064000000000773594000000000000000010000000000000003000000000000000300000001",
        EventNotification(
            PEER_A,
            STABLE,
            sequence=1,
            tlvs=(
                LinkEventTlv(
                    type=EventTlvType.ERRORED_SYMBOL_PERIOD,
                    timestamp=100,
                    window=125_000_000,
                    threshold=1,
                    errors=3,
                    error_running_total=3,
                    event_running_total=1,
                ),
            ),
        ),
    ),
    Vector(
        "8.7-event-errored-frame",
        "0180c20000020011223344558809030050010002021a0064000a00000001000000050000000000000005000000010000000000000000000000000000",
        EventNotification(
            PEER_A,
            STABLE,
            sequence=2,
            tlvs=(
                LinkEventTlv(
                    type=EventTlvType.ERRORED_FRAME,
                    timestamp=100,
                    window=10,
                    threshold=1,
                    errors=5,
                    error_running_total=5,
                    event_running_total=1,
                ),
            ),
        ),
    ),
    Vector(
        "8.8-event-errored-frame-period",
        "0180c20000020011223344558809030050010003031c00640016b4df0000000100000002000000000000000700000002000000000000000000000000",
        EventNotification(
            PEER_A,
            STABLE,
            sequence=3,
            tlvs=(
                LinkEventTlv(
                    type=EventTlvType.ERRORED_FRAME_PERIOD,
                    timestamp=100,
                    window=1_488_095,
                    threshold=1,
                    errors=2,
                    error_running_total=7,
                    event_running_total=2,
                ),
            ),
        ),
    ),
    Vector(
        "8.9-event-errored-frame-seconds-summary",
        "0180c2000002001122334455880903005001000404120064025800010002000000020000000100000000000000000000000000000000000000000000",
        EventNotification(
            PEER_A,
            STABLE,
            sequence=4,
            tlvs=(
                LinkEventTlv(
                    type=EventTlvType.ERRORED_FRAME_SECONDS_SUMMARY,
                    timestamp=100,
                    window=600,
                    threshold=1,
                    errors=2,
                    error_running_total=2,
                    event_running_total=1,
                ),
            ),
        ),
    ),
    Vector(
        "8.10-event-organization-specific-tlv",
        "0180c20000020011223344558809030050010005fe09001122deadbeef00000000000000000000000000000000000000000000000000000000000000",
        EventNotification(PEER_A, STABLE, sequence=5, tlvs=(OrgSpecificTlv(oui=0x001122, value=b"\xde\xad\xbe\xef"),)),
    ),
    Vector(
        "8.11-variable-request",
        "0180c2000002001122334455880903005002070002070005000000000000000000000000000000000000000000000000000000000000000000000000",
        VariableRequest(
            PEER_A,
            STABLE,
            (VariableDescriptor(branch=0x07, leaf=2), VariableDescriptor(branch=0x07, leaf=5)),
        ),
    ),
    Vector(
        "8.11-variable-response",
        "0180c2000002001122334455880903005003070002040001e240070005a1000000000000000000000000000000000000000000000000000000000000",
        VariableResponse(
            PEER_A,
            STABLE,
            (
                VariableContainer(branch=0x07, leaf=2, values=((123456).to_bytes(4, "big"),)),
                VariableContainer(branch=0x07, leaf=5, indication=VariableIndication.ATTRIBUTE_UNSUPPORTED),
            ),
        ),
    ),
    Vector(
        "8.12-loopback-enable",
        "0180c2000002001122334455880903005004010000000000000000000000000000000000000000000000000000000000000000000000000000000000",
        LoopbackControl(PEER_A, STABLE, LoopbackCommand.ENABLE),
    ),
    Vector(
        "8.12-loopback-disable",
        "0180c2000002001122334455880903005004020000000000000000000000000000000000000000000000000000000000000000000000000000000000",
        LoopbackControl(PEER_A, STABLE, LoopbackCommand.DISABLE),
    ),
    Vector(
        "8.13-organization-specific",
        "0180c20000020011223344558809030050fe001122010203040000000000000000000000000000000000000000000000000000000000000000000000",
        OrgSpecificPdu(PEER_A, STABLE, oui=0x001122, value=b"\x01\x02\x03\x04"),
    ),
)

VECTOR_IDS = [vector.section for vector in VECTORS]


def by_section(number: str) -> Vector:
    """The vector of a section: ``by_section("8.3")``; 8.11 and 8.12 need the full name."""
    (vector,) = [v for v in VECTORS if v.section == number or v.section.startswith(number + "-")]
    return vector
