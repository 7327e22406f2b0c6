"""Codec benchmarks (pytest-benchmark): they measure and never assert a time.

Run them with ``pytest tests/bench/test_codec_bench.py --benchmark-enable``.  Without
``--benchmark-enable`` (the default, ``--benchmark-disable``) each body runs once as a
smoke test, on a small frame set.

Every benchmarked call handles a batch of frames (the number is in the test name and in
``extra_info["frames_per_call"]``): divide the reported time by it for the time per
frame.  After a measured run ``extra_info`` also holds ``us_per_frame`` and
``frames_per_second`` (see ``--benchmark-json``).

* distinct frames: every decoded frame differs from every other one (revision, vendor
  info, flags, sequence number, counters), as frames a peer has never sent before; they
  go through plain `pdu.decode`, no cache;
* repeated frame: `PeerDecoder` seeing the same frame from the same peer again (the
  steady state of a link, one Information OAMPDU per second per peer);
* cached encode: `pdu.encode` of an unchanged Information OAMPDU;
* scapy: `decode_with_scapy` of one Information frame, for comparison.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from pdu import (
    EventNotification,
    Flag,
    Information,
    InfoTlv,
    LinkEventTlv,
    Oampdu,
    PeerDecoder,
    decode,
    encode,
)
from pdu.reference import decode_with_scapy

pytestmark = pytest.mark.bench

DISTINCT_FRAMES = 20_000  #: frames decoded in a measured run, none seen before
BATCH = 1_000  #: frames per benchmarked call
SCAPY_BATCH = 50
PEER = "02:00:00:00:00:01"
FLAGS = (Flag.LOCAL_EVALUATING, 0x0028, 0x0050, 0x0052, 0x0054, 0x0051)


def _information(n: int) -> Information:
    local = InfoTlv(
        type=1,
        revision=n & 0xFFFF,
        oam_config=0x0D,
        max_pdu_size=1518,
        oui=0x001122,
        vendor_info=n * 2_654_435_761 & 0xFFFFFFFF,
    )
    remote = InfoTlv(type=2, revision=(n >> 16) + 1, oam_config=0x08, max_pdu_size=1500, oui=0x00AABB, vendor_info=n)
    return Information(PEER, FLAGS[n % len(FLAGS)], (local, remote))


def _event(n: int) -> EventNotification:
    kind = n % 4 + 1
    tlv = LinkEventTlv(
        type=kind,
        timestamp=n & 0xFFFF,
        window=(10, 600, 1000)[n % 3],
        threshold=1,
        errors=n % 1000 + 1,
        error_running_total=n * 3,
        event_running_total=n & 0xFFFF,
    )
    return EventNotification(PEER, 0x0050, sequence=n & 0xFFFF, tlvs=(tlv,))


@functools.cache
def distinct_frames(build: Callable[[int], Oampdu], count: int) -> tuple[bytes, ...]:
    frames = tuple(encode(build(n)) for n in range(count))
    assert len(set(frames)) == count, "frames must all differ"
    return frames


def _frame_count(benchmark: Any) -> int:
    return BATCH if benchmark.disabled else DISTINCT_FRAMES


def _batches(frames: Sequence[bytes], size: int) -> Callable[[], list[Oampdu]]:
    """A function decoding the next `size` frames at each call (cycling through `frames`)."""
    batches = itertools.cycle([frames[i : i + size] for i in range(0, len(frames), size)])

    def decode_batch() -> list[Oampdu]:
        return [decode(frame) for frame in next(batches)]

    return decode_batch


def _measure(benchmark: Any, function: Callable[[], Any], frames_per_call: int, rounds: int) -> Any:
    """Run `function` `rounds` times (once when benchmarks are disabled); record per-frame figures."""
    benchmark.extra_info["frames_per_call"] = frames_per_call
    result = benchmark.pedantic(function, rounds=rounds, iterations=1, warmup_rounds=0)
    if not benchmark.disabled:
        mean = benchmark.stats.stats.mean
        benchmark.extra_info["us_per_frame"] = round(mean / frames_per_call * 1e6, 3)
        benchmark.extra_info["frames_per_second"] = round(frames_per_call / mean)
    return result


def test_decode_distinct_information_frames_1000_per_call(benchmark: Any) -> None:
    frames = distinct_frames(_information, _frame_count(benchmark))
    result = _measure(benchmark, _batches(frames, BATCH), BATCH, rounds=len(frames) // BATCH)
    assert len(result) == BATCH
    assert all(isinstance(pdu, Information) and pdu.remote is not None for pdu in result)


def test_decode_distinct_event_notification_frames_1000_per_call(benchmark: Any) -> None:
    frames = distinct_frames(_event, _frame_count(benchmark))
    result = _measure(benchmark, _batches(frames, BATCH), BATCH, rounds=len(frames) // BATCH)
    assert len(result) == BATCH
    assert all(isinstance(pdu, EventNotification) and len(pdu.link_events) == 1 for pdu in result)


def test_peer_decoder_repeated_information_frame_1000_per_call(benchmark: Any) -> None:
    frame = encode(_information(7))
    decoder = PeerDecoder()
    first = decoder.decode(frame)
    same = bytes(frame)  # an equal frame, not the same object, as a socket would return it

    def decode_repeated() -> Oampdu:
        pdu = first
        for _ in range(BATCH):
            pdu = decoder.decode(same)
        return pdu

    assert _measure(benchmark, decode_repeated, BATCH, rounds=20) is first


def test_encode_unchanged_information_pdu_1000_per_call(benchmark: Any) -> None:
    # the same object again, as a port holds it: an equal object made elsewhere (the decode
    # benchmarks encode _information(0..n)) would be matched by attrs' deep __eq__ instead
    pdu = _information(987_654_321)
    frame = encode(pdu)

    def encode_unchanged() -> bytes:
        out = b""
        for _ in range(BATCH):
            out = encode(pdu)
        return out

    assert _measure(benchmark, encode_unchanged, BATCH, rounds=20) == frame


def test_scapy_dissect_information_frame_50_per_call(benchmark: Any) -> None:
    frame = encode(_information(7))

    def dissect() -> Oampdu:
        pdu = None
        for _ in range(SCAPY_BATCH):
            pdu = decode_with_scapy(frame)
        assert pdu is not None
        return pdu

    assert _measure(benchmark, dissect, SCAPY_BATCH, rounds=10) == _information(7)
