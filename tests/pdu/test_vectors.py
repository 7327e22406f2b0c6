"""The example frames of protocol.md section 8: decode, re-encode, scapy, truncation, padding.

Each vector decodes to the model written from the document's values and re-encodes to
the same octets, on the fast path and on scapy's; every truncation either raises
`DecodeError` or decodes exactly to what the remaining octets still say; extra zero
padding changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import pytest

from pdu import (
    DecodeError,
    EventNotification,
    Flag,
    Information,
    InfoTlvType,
    LoopbackCommand,
    LoopbackControl,
    OamConfig,
    Oampdu,
    OrgSpecificPdu,
    VariableIndication,
    VariableRequest,
    VariableResponse,
    decode,
    encode,
)
from pdu.reference import decode_with_scapy, encode_with_scapy
from tests.pdu.strategies import container_size, tlv_size
from tests.pdu.vectors import VECTOR_IDS, VECTORS, Vector, by_section

by_vector = pytest.mark.parametrize("vector", VECTORS, ids=VECTOR_IDS)
HEADER = 18
#: octets before the first TLV/descriptor/value: header plus the fixed fields of the code
FIXED_LENGTH = {
    Information: HEADER,
    EventNotification: HEADER + 2,  # sequence number
    VariableRequest: HEADER,
    VariableResponse: HEADER,
    LoopbackControl: HEADER + 1,  # command
    OrgSpecificPdu: HEADER + 3,  # OUI
}


def test_every_example_of_section_8_is_here() -> None:
    sections = {vector.section.split("-")[0] for vector in VECTORS}
    assert sections == {f"8.{n}" for n in range(1, 14)}


@by_vector
def test_vector_is_a_minimum_size_frame(vector: Vector) -> None:
    assert len(vector.frame) == 60


@by_vector
def test_vector_decodes_to_the_documented_model(vector: Vector) -> None:
    assert decode(vector.frame) == vector.model


@by_vector
def test_vector_reencodes_to_the_same_octets(vector: Vector) -> None:
    assert encode(vector.model) == vector.frame
    assert encode(decode(vector.frame)) == vector.frame


@by_vector
def test_scapy_reads_the_vector_as_the_fast_path(vector: Vector) -> None:
    assert decode_with_scapy(vector.frame) == vector.model


@by_vector
def test_scapy_builds_the_vector_as_the_fast_path(vector: Vector) -> None:
    assert encode_with_scapy(vector.model) == vector.frame


# The documented values, one by one, read through the model's names (a wrong field order
# in the model or the layers shows up here with a readable message).
NAMED_VALUES: list[tuple[str, Callable[[Any], Any], Any]] = [
    ("8.1", lambda p: int(p.flags), 0x0008),
    ("8.1", lambda p: p.local.oam_version, 1),
    ("8.1", lambda p: p.local.revision, 0),
    ("8.1", lambda p: (p.local.parser_action, p.local.mux_action), (0, 0)),
    ("8.1", lambda p: int(p.local.oam_config), 0x0D),
    ("8.1", lambda p: OamConfig.ACTIVE in p.local.oam_config, True),
    ("8.1", lambda p: p.local.max_pdu_size, 1518),
    ("8.1", lambda p: p.local.oui, 0x001122),
    ("8.1", lambda p: p.local.vendor_info, 1),
    ("8.1", lambda p: p.remote, None),
    ("8.2", lambda p: p.src, "00:aa:bb:cc:dd:ee"),
    ("8.2", lambda p: int(p.flags), 0x0030),
    ("8.2", lambda p: (int(p.local.oam_config), p.local.oui, p.local.vendor_info), (0x08, 0x00AABB, 2)),
    ("8.2", lambda p: (p.remote.type, int(p.remote.oam_config), p.remote.oui), (InfoTlvType.REMOTE, 0x0D, 0x001122)),
    ("8.2", lambda p: p.remote.same_information(p.tlvs[0]), False),
    ("8.3", lambda p: int(p.flags), 0x0050),
    ("8.3", lambda p: (p.remote.oui, p.remote.vendor_info), (0x00AABB, 2)),
    ("8.4", lambda p: (int(p.flags), p.tlvs, p.local), (0x0001, (), None)),
    ("8.5", lambda p: int(p.flags), 0x0052),
    ("8.5", lambda p: Flag.DYING_GASP in p.flags, True),
    ("8.6", lambda p: p.sequence, 1),
    ("8.6", lambda p: p.tlvs[0].type, 0x01),
    ("8.6", lambda p: (p.tlvs[0].timestamp, p.tlvs[0].window, p.tlvs[0].threshold), (100, 125_000_000, 1)),
    ("8.6", lambda p: (p.tlvs[0].errors, p.tlvs[0].error_running_total, p.tlvs[0].event_running_total), (3, 3, 1)),
    ("8.7", lambda p: (p.sequence, p.tlvs[0].type), (2, 0x02)),
    ("8.7", lambda p: attrs.astuple(p.tlvs[0])[1:], (100, 10, 1, 5, 5, 1)),
    ("8.8", lambda p: (p.sequence, p.tlvs[0].type), (3, 0x03)),
    ("8.8", lambda p: attrs.astuple(p.tlvs[0])[1:], (100, 1_488_095, 1, 2, 7, 2)),
    ("8.9", lambda p: (p.sequence, p.tlvs[0].type), (4, 0x04)),
    ("8.9", lambda p: attrs.astuple(p.tlvs[0])[1:], (100, 600, 1, 2, 2, 1)),
    ("8.10", lambda p: (p.sequence, p.tlvs[0].oui, p.tlvs[0].value), (5, 0x001122, bytes.fromhex("deadbeef"))),
    ("8.10", lambda p: p.link_events, ()),
    ("8.11-variable-request", lambda p: [(d.branch, d.leaf) for d in p.descriptors], [(7, 2), (7, 5)]),
    ("8.11-variable-response", lambda p: (p.containers[0].branch, p.containers[0].leaf), (7, 2)),
    ("8.11-variable-response", lambda p: int.from_bytes(p.containers[0].values[0], "big"), 123456),
    ("8.11-variable-response", lambda p: p.containers[0].indication, None),
    ("8.11-variable-response", lambda p: (p.containers[1].leaf, p.containers[1].values), (5, ())),
    ("8.11-variable-response", lambda p: p.containers[1].indication, VariableIndication.ATTRIBUTE_UNSUPPORTED),
    ("8.11-variable-response", lambda p: p.containers[1].indication, 0x21),
    ("8.12-loopback-enable", lambda p: p.loopback_command, LoopbackCommand.ENABLE),
    ("8.12-loopback-disable", lambda p: p.loopback_command, LoopbackCommand.DISABLE),
    ("8.13", lambda p: (p.oui, p.value), (0x001122, b"\x01\x02\x03\x04")),
]


@pytest.mark.parametrize(
    ("section", "read", "expected"), NAMED_VALUES, ids=[f"{n[0]}#{i}" for i, n in enumerate(NAMED_VALUES)]
)
def test_vector_field_value(section: str, read: Callable[[Any], Any], expected: Any) -> None:
    assert read(decode(by_section(section).frame)) == expected


# -- truncation and padding ---------------------------------------------------------------


def _prefix(model: Oampdu, frame: bytes, cut: int) -> Oampdu | None:
    """What `frame[:cut]` must decode to when the cut removes more than padding.

    A cut exactly between two TLVs (descriptors, containers) leaves a shorter valid list;
    a cut inside a fixed field or a TLV must be rejected (None).
    """
    if cut < FIXED_LENGTH[type(model)]:
        return None
    if isinstance(model, (Information, EventNotification)):
        start = HEADER + (2 if isinstance(model, EventNotification) else 0)
        sizes = [tlv_size(tlv) for tlv in model.tlvs]
        field = "tlvs"
    elif isinstance(model, VariableRequest):
        start, sizes, field = HEADER, [3] * len(model.descriptors), "descriptors"
    elif isinstance(model, VariableResponse):
        start, sizes, field = HEADER, [container_size(c) for c in model.containers], "containers"
    elif isinstance(model, OrgSpecificPdu):
        return attrs.evolve(model, value=frame[HEADER + 3 : cut].rstrip(b"\0"))
    else:
        assert isinstance(model, LoopbackControl)
        return None  # the only data octet is cut
    boundary = start
    for count in range(len(sizes) + 1):
        if cut == boundary:
            return attrs.evolve(model, **{field: getattr(model, field)[:count]})
        if count < len(sizes):
            boundary += sizes[count]
    return None


@by_vector
def test_vector_truncated_at_every_length(vector: Vector) -> None:
    frame = vector.frame
    for cut in range(len(frame)):
        truncated = frame[:cut]
        if cut >= FIXED_LENGTH[type(vector.model)] and not frame[cut:].strip(b"\0"):
            # only zero padding (and the End marker) removed: tolerant padding
            assert decode(truncated) == vector.model, f"cut at {cut}"
            continue
        expected = _prefix(vector.model, frame, cut)
        if expected is None:
            with pytest.raises(DecodeError):
                decode(truncated)
        else:
            assert decode(truncated) == expected, f"cut at {cut}"


@by_vector
@pytest.mark.parametrize("extra", [1, 2, 4, 40, 1514 - 60])
def test_vector_with_extra_zero_padding(vector: Vector, extra: int) -> None:
    assert decode(vector.frame + bytes(extra)) == vector.model


@by_vector
def test_vector_with_extra_padding_reads_the_same_with_scapy(vector: Vector) -> None:
    assert decode_with_scapy(vector.frame + bytes(100)) == vector.model
