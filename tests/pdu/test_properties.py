"""Hypothesis properties of the codec: round trip, fast path == scapy, no crash, linear time.

The model strategies are in tests/pdu/strategies.py.  Properties:

* ``decode(encode(x)) == x`` for every kind of valid OAMPDU, also with extra padding;
* the fast path equals scapy's reading and building: ``decode(f) == decode_with_scapy(f)``
  and ``encode(x) == encode_with_scapy(x)``, also on mutated frames the fast path accepts;
* random bytes, random bytes behind a valid OAM header, and every single-octet mutation of
  every section 8 vector raise `DecodeError` or decode, never anything else;
* a 1514-octet frame of any shape decodes in bounded time, and twice the octets cost
  about twice the time (not four times);
* `PeerDecoder` returns what `decode` returns.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from pdu import DecodeError, EncodeError, Information, Oampdu, PeerDecoder, decode, encode
from pdu.codec import with_flags
from pdu.reference import decode_with_scapy, encode_with_scapy
from tests.pdu.strategies import MAX_FRAME, PDU_STRATEGIES, macs, oampdus
from tests.pdu.vectors import VECTOR_IDS, VECTORS, Vector, by_section

KINDS = list(PDU_STRATEGIES)
by_kind = pytest.mark.parametrize("kind", KINDS)
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SCAPY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
OAM_HEADER = bytes.fromhex("0180c2000002") + bytes.fromhex("001122334455") + b"\x88\x09\x03"


def decode_or_none(frame: bytes) -> Oampdu | None:
    """The model, or None for a `DecodeError`; any other exception propagates (and fails)."""
    try:
        return decode(frame)
    except DecodeError:
        return None


# -- round trip ------------------------------------------------------------------------------


@by_kind
@PROPERTY
@given(data=st.data())
def test_decode_of_encode_is_identity(kind: str, data: st.DataObject) -> None:
    pdu = data.draw(PDU_STRATEGIES[kind])
    frame = encode(pdu)
    assert 60 <= len(frame) <= MAX_FRAME
    assert decode(frame) == pdu


@by_kind
@PROPERTY
@given(data=st.data())
def test_round_trip_with_any_extra_padding(kind: str, data: st.DataObject) -> None:
    pdu = data.draw(PDU_STRATEGIES[kind])
    frame = encode(pdu)
    padded = frame + bytes(data.draw(st.integers(1, MAX_FRAME - len(frame))) if len(frame) < MAX_FRAME else 0)
    assert decode(padded) == pdu


@PROPERTY
@given(oampdus)
def test_encode_is_deterministic_and_decode_reencodes_identically(pdu: Oampdu) -> None:
    frame = encode(pdu)
    assert encode(decode(frame)) == frame


@PROPERTY
@given(oampdus, st.integers(0, 0xFFFF), st.integers(64, 1518))
def test_setting_the_flags_of_a_frame_is_encoding_with_them(pdu: Oampdu, flags: int, limit: int) -> None:
    """`with_flags`: what a queued OAMPDU gets when it leaves (encoded once, when queued),
    whatever the peer's size limit it was encoded for."""
    try:
        frame = encode(pdu, limit)
    except EncodeError:
        assume(False)
    assert with_flags(frame, flags) == encode(attrs.evolve(pdu, flags=flags), limit)


# -- fast path == scapy ----------------------------------------------------------------------


@by_kind
@SCAPY
@given(data=st.data())
def test_fast_encode_equals_scapy_build(kind: str, data: st.DataObject) -> None:
    pdu = data.draw(PDU_STRATEGIES[kind])
    assert encode(pdu) == encode_with_scapy(pdu)


@by_kind
@SCAPY
@given(data=st.data())
def test_fast_decode_equals_scapy_dissection(kind: str, data: st.DataObject) -> None:
    pdu = data.draw(PDU_STRATEGIES[kind])
    frame = encode(pdu) + bytes(data.draw(st.sampled_from([0, 1, 7, 100])))
    frame = frame[:MAX_FRAME]
    assert decode(frame) == decode_with_scapy(frame)


@SCAPY
@given(oampdus, st.data())
def test_scapy_agrees_on_mutated_frames_the_fast_path_accepts(pdu: Oampdu, data: st.DataObject) -> None:
    """Every frame the fast path accepts has checked lengths, so scapy must read it the same."""
    frame = bytearray(encode(pdu))
    for _ in range(data.draw(st.integers(1, 3))):
        frame[data.draw(st.integers(18, len(frame) - 1))] = data.draw(st.integers(0, 255))
    ours = decode_or_none(bytes(frame))
    assume(ours is not None)
    assert decode_with_scapy(bytes(frame)) == ours


# -- nothing but DecodeError -------------------------------------------------------------------


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=1600))
def test_random_bytes_raise_only_decode_error(frame: bytes) -> None:
    decode_or_none(frame)


@settings(max_examples=1000, deadline=None)
@given(flags=st.integers(0, 0xFFFF), code=st.integers(0, 255), body=st.binary(max_size=1500))
def test_random_bytes_behind_an_oam_header_raise_only_decode_error(flags: int, code: int, body: bytes) -> None:
    frame = OAM_HEADER + flags.to_bytes(2, "big") + bytes([code]) + body
    pdu = decode_or_none(frame)
    if pdu is not None:
        assert pdu.code == code
        assert int(pdu.flags) == flags


@settings(max_examples=300, deadline=None)
@given(code=st.sampled_from([0x00, 0x01, 0x02, 0x03]), items=st.lists(st.binary(min_size=1, max_size=6), max_size=300))
def test_tlv_shaped_garbage_raises_only_decode_error(code: int, items: list[bytes]) -> None:
    """Bodies made of short length-prefixed chunks reach deep into the TLV and container loops."""
    body = b"".join(bytes([chunk[0], len(chunk) + 1]) + chunk[1:] for chunk in items)
    decode_or_none((OAM_HEADER + b"\x00\x50" + bytes([code]) + body)[:MAX_FRAME])


@pytest.mark.parametrize("vector", VECTORS, ids=VECTOR_IDS)
def test_every_single_octet_mutation_of_a_vector(vector: Vector) -> None:
    """All 60 x 255 one-octet changes of each vector raise DecodeError or decode.

    A sample of the accepted mutants (one in 11) must survive a re-encode, and a smaller one
    (one in 211) must read the same with scapy.
    """
    frame = vector.frame
    accepted = 0
    for position in range(len(frame)):
        for value in range(256):
            if value == frame[position]:
                continue
            mutated = frame[:position] + bytes([value]) + frame[position + 1 :]
            pdu = decode_or_none(mutated)
            if pdu is None:
                continue
            accepted += 1
            where = f"octet {position} = {value:#04x}: {mutated.hex()}"
            if accepted % 11 == 0:
                assert decode(encode(pdu)) == pdu, where
            if accepted % 211 == 0:
                assert decode_with_scapy(mutated) == pdu, where
    assert accepted > 0


# -- linear time --------------------------------------------------------------------------------


def best_time(function: Callable[[bytes], Any], frame: bytes, runs: int = 7, batch: int = 1) -> float:
    """The shortest of `runs` timings of `batch` calls (the least disturbed by the machine)."""
    best = math.inf
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(batch):
            function(frame)
        best = min(best, time.perf_counter() - start)
    return best


def _info(body: bytes) -> bytes:
    return OAM_HEADER + b"\x00\x50\x00" + body


#: frame builders by shape: body of n repeated units (each shape's worst case per octet)
SHAPES: dict[str, tuple[Callable[[int], bytes], int]] = {
    "2-octet-info-tlvs": (lambda n: _info(b"\x33\x02" * n), 2),
    "local-info-tlvs": (lambda n: _info(bytes.fromhex("0110010000000d05ee00112200000001") * n), 16),
    "5-octet-org-tlvs": (lambda n: _info(b"\xfe\x05\x00\x11\x22" * n), 5),
    "2-octet-event-tlvs": (lambda n: OAM_HEADER + b"\x00\x50\x01\x00\x01" + b"\x33\x02" * n, 2),
    "variable-descriptors": (lambda n: OAM_HEADER + b"\x00\x50\x02" + b"\x07\x00\x02" * n, 3),
    "one-octet-object-values": (lambda n: OAM_HEADER + b"\x00\x50\x03\x03\x00\x14" + b"\x01\xaa" * n + b"\xc0", 2),
    "attribute-indications": (lambda n: OAM_HEADER + b"\x00\x50\x03" + b"\x07\x00\x02\xa1" * n, 4),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_max_size_frame_decodes_in_bounded_time(shape: str) -> None:
    build, unit = SHAPES[shape]
    frame = build((MAX_FRAME - 24) // unit)
    assert 1400 < len(frame) <= MAX_FRAME
    assert decode(frame) is not None
    elapsed = best_time(decode, frame)
    assert elapsed < 0.005, f"{shape}: {elapsed * 1e3:.2f} ms"


@pytest.mark.parametrize("shape", list(SHAPES))
def test_scapy_reads_a_max_size_frame_as_the_fast_path(shape: str) -> None:
    """Hundreds of items in one list field: scapy 2.6 and later stop at 100 unless the layer
    gives its own bound, scapy 2.5 has no stop (pdu.layers serves both)."""
    build, unit = SHAPES[shape]
    frame = build((MAX_FRAME - 24) // unit)
    assert decode_with_scapy(frame) == decode(frame)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_decode_time_grows_linearly(shape: str) -> None:
    """Four times the units take about four times the time; quadratic work would take
    sixteen times.  The bound between the two leaves room for a noisy machine."""
    build, unit = SHAPES[shape]
    units = (MAX_FRAME - 24) // unit
    small, large = build(units // 4), build(units)
    ratio = best_time(decode, large, runs=15, batch=10) / best_time(decode, small, runs=15, batch=10)
    assert ratio < 8.0, f"{shape}: {ratio:.2f}x the time for 4x the octets"


# -- PeerDecoder -------------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), oampdus), min_size=1, max_size=20), st.integers(1, 4))
def test_peer_decoder_returns_what_decode_returns(frames: list[tuple[int, Oampdu]], max_peers: int) -> None:
    decoder = PeerDecoder(max_peers=max_peers)
    for repeat, pdu in frames:
        frame = encode(pdu)
        for _ in range(repeat + 1):
            assert decoder.decode(frame) == decode(frame)


def test_peer_decoder_shares_the_result_of_a_repeated_frame() -> None:
    decoder = PeerDecoder()
    local_only, send_any = by_section("8.1"), by_section("8.3")  # both from peer A
    first = decoder.decode(local_only.frame)
    assert decoder.decode(bytes(local_only.frame)) is first
    assert decoder.decode(send_any.frame) == send_any.model  # same peer, new frame
    assert decoder.decode(local_only.frame) is not first
    assert decoder.decode(local_only.frame) == local_only.model


def test_peer_decoder_forgets_the_oldest_peer() -> None:
    decoder = PeerDecoder(max_peers=2)
    frames = [encode(Information(mac, 0x50)) for mac in ("02:00:00:00:00:01", "02:00:00:00:00:02", "02:00:00:00:00:03")]
    results = [decoder.decode(frame) for frame in frames]
    assert decoder.decode(frames[2]) is results[2]
    assert decoder.decode(frames[1]) is results[1]
    assert decoder.decode(frames[0]) is not results[0]  # evicted when the third peer came


def test_peer_decoder_raises_for_bad_frames_every_time() -> None:
    decoder = PeerDecoder()
    vector = by_section("8.1")
    bad = vector.frame[:20]  # cut inside the Local TLV
    for _ in range(2):
        with pytest.raises(DecodeError):
            decoder.decode(bad)
    assert decoder.decode(vector.frame) == vector.model


@settings(max_examples=50, deadline=None)
@given(macs)
def test_any_source_mac_survives_the_round_trip(mac: str) -> None:
    assert decode(encode(Information(mac, 0))).src == mac
