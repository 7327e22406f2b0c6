"""The AgentX codec (RFC 2741 5, 6): what we write, what we read, and bytes that are not AgentX."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import given, settings, strategies as st

from efmoam.snmp import agentx
from efmoam.snmp.agentx import Decoder, Flag, ParseError, PduType, SearchRange, VarBind, VarType


def header(
    kind: int, payload: bytes, *, big: bool = True, flags: int = 0, version: int = 1, length: int | None = None
) -> bytes:
    order = "!" if big else "<"
    flags |= Flag.NETWORK_BYTE_ORDER if big else 0
    size = len(payload) if length is None else length
    return struct.pack(f"{order}BBBxIIII", version, kind, flags, 7, 8, 9, size) + payload


def oid_bytes(oid: tuple[int, ...], include: int = 0, big: bool = True) -> bytes:
    order = "!" if big else "<"
    return struct.pack(f"{order}BBBx{len(oid)}I", len(oid), 0, include, *oid)


def test_oid_uses_the_internet_prefix() -> None:
    encoded = agentx.encode_oid((1, 3, 6, 1, 2, 1, 158, 1))
    assert encoded == bytes([3, 2, 0, 0]) + struct.pack("!III", 1, 158, 1)
    assert agentx.encode_oid((1, 3, 6, 1)) == bytes([4, 0, 0, 0]) + struct.pack("!IIII", 1, 3, 6, 1)


@pytest.mark.parametrize(
    "varbind",
    [
        VarBind((1, 3, 6, 1, 2, 1, 158, 1, 1, 1, 1, 2), VarType.INTEGER, 2),
        VarBind((1, 3, 6, 1, 2, 1, 158, 1, 2, 1, 1, 2), VarType.OCTET_STRING, b"\x02\x00\x00\x00\xbb\x01"),
        VarBind((1, 3, 6, 1, 2, 1, 158, 1, 2, 1, 2, 2), VarType.OCTET_STRING, b""),
        VarBind((1, 3, 6, 1, 6, 3, 1, 1, 4, 1, 0), VarType.OBJECT_IDENTIFIER, (1, 3, 6, 1, 2, 1, 158, 0, 1)),
        VarBind((1, 3, 6, 1, 2, 1, 158, 1, 4, 1, 1, 2), VarType.COUNTER32, 0xFFFFFFFF),
        VarBind((1, 3, 6, 1, 2, 1, 158, 1, 6, 1, 10, 2, 1), VarType.COUNTER64, 2**64 - 1),
        VarBind((1, 3, 6, 1, 2, 1, 158, 1, 6, 1, 2, 2, 1), VarType.TIME_TICKS, 12345),
        VarBind((1, 3, 6, 1, 2, 1, 158, 1, 9), VarType.END_OF_MIB_VIEW),
        VarBind((1, 3, 6, 1, 2, 1, 158, 1, 9), VarType.NO_SUCH_INSTANCE),
    ],
)
def test_a_response_reads_back_as_written(varbind: VarBind) -> None:
    data = agentx.encode(PduType.RESPONSE, agentx.response_payload([varbind], 0, 0, 77), session_id=3, packet_id=4)
    (pdu,) = Decoder().feed(data)
    assert pdu.type == PduType.RESPONSE and pdu.sys_uptime == 77
    assert pdu.header.session_id == 3 and pdu.header.packet_id == 4
    assert pdu.varbinds == (varbind,)


def test_both_byte_orders_are_read() -> None:
    for big in (True, False):
        payload = oid_bytes((1, 3, 6, 1, 2, 1, 158), 1, big) + oid_bytes((), 0, big)
        (pdu,) = Decoder().feed(header(PduType.GET_NEXT, payload, big=big))
        assert pdu.ranges == (SearchRange((1, 3, 6, 1, 2, 1, 158), (), True),)
        assert pdu.header.packet_id == 9


def test_a_stream_is_cut_into_pdus_whatever_the_chunks() -> None:
    get = header(PduType.GET, oid_bytes((1, 3, 6, 1, 2, 1, 1, 3, 0)) + oid_bytes(()))
    bulk = header(PduType.GET_BULK, struct.pack("!HH", 1, 10) + oid_bytes((1, 3, 6, 1)) + oid_bytes(()))
    stream = get + bulk + header(PduType.COMMIT_SET, b"")
    decoder = Decoder()
    pdus = [pdu for byte in stream for pdu in decoder.feed(bytes([byte]))]
    assert [p.type for p in pdus] == [PduType.GET, PduType.GET_BULK, PduType.COMMIT_SET]
    assert (pdus[1].non_repeaters, pdus[1].max_repetitions) == (1, 10)


def test_a_non_default_context_is_skipped() -> None:
    context = struct.pack("!I", 3) + b"abc\x00"
    payload = context + oid_bytes((1, 3, 6, 1, 2, 1, 158)) + oid_bytes(())
    (pdu,) = Decoder().feed(header(PduType.GET, payload, flags=Flag.NON_DEFAULT_CONTEXT))
    assert pdu.ranges[0].start == (1, 3, 6, 1, 2, 1, 158)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (header(PduType.GET, b"", version=2), "version"),
        (header(PduType.GET, b"", length=2**30), "payload"),
        (header(PduType.GET, b"", length=6), "payload"),
        (header(99, b""), "unknown PDU type"),
        (header(PduType.GET, bytes([200, 0, 0, 0]) + bytes(4)), "sub-identifiers"),
        (header(PduType.GET, bytes([1, 0, 0, 0])), "shorter"),
        (header(PduType.GET, bytes([0, 0, 5, 0]) + bytes(4)), "include"),
        (header(PduType.TEST_SET, struct.pack("!Hxx", 99) + bytes(4)), "unknown type"),
        (header(PduType.TEST_SET, struct.pack("!Hxx", 4) + bytes(4) + struct.pack("!I", 64)), "longer"),
        (header(PduType.RESPONSE, b"\x00\x00\x00\x00"), "shorter"),
    ],
)
def test_malformed_pdus_are_refused(data: bytes, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        list(Decoder().feed(data))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_give_pdus_or_a_parse_error(data: bytes) -> None:
    # a valid header in front, so that the payload's decoding is reached
    for kind in (PduType.GET, PduType.GET_BULK, PduType.TEST_SET, PduType.RESPONSE, PduType.CLOSE):
        padded = data + bytes(-len(data) % 4)
        with contextlib.suppress(ParseError):
            list(Decoder().feed(header(kind, padded)))
    with contextlib.suppress(ParseError):
        list(Decoder().feed(data))
