"""Tests for efmoam.offline.capture, the stdlib-only pcap/pcapng reader.

The files are real files written to ``tmp_path`` by the small writers below,
converted by Wireshark's own tools when they are installed, or the interop
captures in /work/shared/interop.
"""

from __future__ import annotations

import glob
import io
import os
import shutil
import struct
import subprocess
import tracemalloc
from collections.abc import Iterable, Sequence
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from efmoam.offline.capture import (
    MAX_RECORD_LENGTH,
    CaptureError,
    CaptureRecord,
    _new_record,
    iter_capture,
    read_capture,
)

INTEROP = Path("/work/shared/interop")
REPO_PCAPS = Path(__file__).resolve().parents[2] / "pcaps"
# The shared interop captures and the repository's copies of them.
EOAM_CAPTURES = sorted(glob.glob(str(INTEROP / "eoam" / "*.pcapng"))) + sorted(
    glob.glob(str(REPO_PCAPS / "interop" / "*.pcapng"))
)
NEGATIVE_CAPTURES = sorted(glob.glob(str(INTEROP / "negative" / "*.pcap"))) + sorted(
    glob.glob(str(REPO_PCAPS / "negative" / "*.pcap"))
)

ETHERNET = 1
RAW_IP = 101
# 60-byte slow-protocols frame: an OAMPDU's first octets, then zero padding.
FRAME = bytes.fromhex("0180c20000020011223344558809030050") + bytes(43)

needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark (Wireshark) is not installed")
needs_editcap = pytest.mark.skipif(
    shutil.which("editcap") is None or shutil.which("tshark") is None,
    reason="editcap/tshark (Wireshark) are not installed",
)
needs_mergecap = pytest.mark.skipif(
    shutil.which("mergecap") is None or shutil.which("tshark") is None,
    reason="mergecap/tshark (Wireshark) are not installed",
)


def capture_id(path: str) -> str:
    """A test id naming the capture and where it comes from."""
    where = "repo" if path.startswith(str(REPO_PCAPS)) else "shared"
    return f"{where}:{os.path.basename(path)}"


# Writers -------------------------------------------------------------------


@attrs.frozen
class Packet:
    """A packet to write: timestamp in integer seconds and fraction units."""

    seconds: int
    fraction: int
    data: bytes
    original_length: int | None = None

    @property
    def wire_length(self) -> int:
        return len(self.data) if self.original_length is None else self.original_length


def pcap_header(byte_order: str = "<", nanoseconds: bool = False, snaplen: int = 65535, linktype: int = 1) -> bytes:
    magic = 0xA1B23C4D if nanoseconds else 0xA1B2C3D4
    return struct.pack(byte_order + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype)


def pcap_record(packet: Packet, byte_order: str = "<") -> bytes:
    header = struct.pack(
        byte_order + "IIII",
        packet.seconds,
        packet.fraction,
        len(packet.data),
        packet.wire_length,
    )
    return header + packet.data


def pcap_bytes(
    packets: Iterable[Packet],
    byte_order: str = "<",
    nanoseconds: bool = False,
    snaplen: int = 65535,
    linktype: int = 1,
) -> bytes:
    body = b"".join(pcap_record(packet, byte_order) for packet in packets)
    return pcap_header(byte_order, nanoseconds, snaplen, linktype) + body


def ng_block(block_type: int, body: bytes, byte_order: str = "<") -> bytes:
    padded = body + bytes(-len(body) % 4)
    length = struct.pack(byte_order + "I", 12 + len(padded))
    return struct.pack(byte_order + "I", block_type) + length + padded + length


def ng_option(code: int, value: bytes, byte_order: str = "<") -> bytes:
    head = struct.pack(byte_order + "HH", code, len(value))
    return head + value + bytes(-len(value) % 4)


def ng_options(options: Sequence[tuple[int, bytes]], byte_order: str = "<") -> bytes:
    if not options:
        return b""
    encoded = b"".join(ng_option(code, value, byte_order) for code, value in options)
    return encoded + ng_option(0, b"", byte_order)


def ng_shb(byte_order: str = "<", major: int = 1, options: bytes = b"") -> bytes:
    body = struct.pack(byte_order + "IHHq", 0x1A2B3C4D, major, 0, -1) + options
    return ng_block(0x0A0D0D0A, body, byte_order)


def ng_idb(
    linktype: int = ETHERNET,
    snaplen: int = 0,
    tsresol: int | None = None,
    tsoffset: int | None = None,
    byte_order: str = "<",
) -> bytes:
    options: list[tuple[int, bytes]] = [(2, b"eth0")]  # if_name
    if tsresol is not None:
        options.append((9, bytes([tsresol])))
    if tsoffset is not None:
        options.append((14, struct.pack(byte_order + "q", tsoffset)))
    body = struct.pack(byte_order + "HHI", linktype, 0, snaplen)
    return ng_block(1, body + ng_options(options, byte_order), byte_order)


def ng_epb(
    ticks: int,
    data: bytes,
    interface: int = 0,
    *,
    original_length: int | None = None,
    options: bytes = b"",
    byte_order: str = "<",
) -> bytes:
    original = len(data) if original_length is None else original_length
    head = struct.pack(byte_order + "IIIII", interface, ticks >> 32, ticks & 0xFFFFFFFF, len(data), original)
    return ng_block(6, head + data + bytes(-len(data) % 4) + options, byte_order)


def ng_pb(ticks: int, data: bytes, interface: int = 0, *, byte_order: str = "<") -> bytes:
    head = struct.pack(byte_order + "HHIIII", interface, 0, ticks >> 32, ticks & 0xFFFFFFFF, len(data), len(data))
    return ng_block(2, head + data, byte_order)


def ng_spb(data: bytes, original_length: int | None = None, byte_order: str = "<") -> bytes:
    original = len(data) if original_length is None else original_length
    return ng_block(3, struct.pack(byte_order + "I", original) + data, byte_order)


def read_bytes(blob: bytes) -> list[CaptureRecord]:
    return list(iter_capture(io.BytesIO(blob)))


def write(path: Path, blob: bytes) -> Path:
    path.write_bytes(blob)
    return path


def tshark_frames(path: Path | str) -> list[tuple[int, float | None, int, int]]:
    """(number, epoch time, wire length, captured length) of each frame per tshark.

    The time is None for packets without a timestamp (Simple Packet Blocks).
    """
    fields = ["frame.number", "frame.time_epoch", "frame.len", "frame.cap_len"]
    command = ["tshark", "-n", "-r", str(path), "-T", "fields"]
    for field in fields:
        command += ["-e", field]
    result = subprocess.run(command, capture_output=True, text=True, check=True, timeout=60)
    frames = []
    for line in result.stdout.splitlines():
        number, epoch, length, captured = line.split("\t")
        time = float(epoch) if epoch else None
        frames.append((int(number), time, int(length), int(captured)))
    return frames


def assert_matches_tshark(path: Path | str) -> list[CaptureRecord]:
    records = list(read_capture(path))
    frames = tshark_frames(path)
    assert len(records) == len(frames)
    for record, (number, epoch, length, captured) in zip(records, frames, strict=True):
        assert record.number == number
        if epoch is not None:
            assert record.time == pytest.approx(epoch, abs=1e-6)
        assert record.original_length == length
        assert len(record.data) == captured
    return records


def packets(count: int = 5) -> list[Packet]:
    return [Packet(1_700_000_000 + i, 1000 * i + 7, FRAME[: 14 + 7 * i], 60 + i) for i in range(count)]


# The record type ---------------------------------------------------------------


def test_record_is_frozen_attrs_class() -> None:
    record = CaptureRecord(1, 2.5, b"ab", 60, 0, 1)
    assert attrs.has(CaptureRecord)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        record.number = 2  # type: ignore[misc]
    assert not hasattr(record, "__dict__")


def test_fast_record_constructor_equals_attrs_constructor() -> None:
    fields = attrs.fields(CaptureRecord)
    assert [field.name for field in fields] == [
        "number",
        "time",
        "data",
        "original_length",
        "interface",
        "linktype",
    ]
    # _new_record bypasses __init__: only valid while nothing runs in it.
    for field in fields:
        assert field.default is attrs.NOTHING
        assert field.validator is None
        assert field.converter is None
    fast = _new_record(3, 1.25, b"xyz", 64, 2, 1)
    assert fast == CaptureRecord(3, 1.25, b"xyz", 64, 2, 1)
    assert hash(fast) == hash(CaptureRecord(3, 1.25, b"xyz", 64, 2, 1))
    assert repr(fast) == repr(CaptureRecord(3, 1.25, b"xyz", 64, 2, 1))


# pcap ------------------------------------------------------------------------


def test_pcap_microseconds_little_endian(tmp_path: Path) -> None:
    path = write(tmp_path / "a.pcap", pcap_bytes(packets()))
    records = list(read_capture(path))
    assert [r.number for r in records] == [1, 2, 3, 4, 5]
    for i, record in enumerate(records):
        assert record.time == pytest.approx(1_700_000_000 + i + (1000 * i + 7) / 1e6, abs=1e-7)
        assert record.data == FRAME[: 14 + 7 * i]
        assert record.original_length == 60 + i
        assert record.interface == 0
        assert record.linktype == ETHERNET


@pytest.mark.parametrize("byte_order", ["<", ">"])
@pytest.mark.parametrize("nanoseconds", [False, True])
def test_pcap_all_four_magics(tmp_path: Path, byte_order: str, nanoseconds: bool) -> None:
    fraction = 999_999_999 if nanoseconds else 999_999
    blob = pcap_bytes(
        [Packet(1_600_000_000, fraction, FRAME), Packet(1_600_000_001, 1, b"\x01")],
        byte_order,
        nanoseconds=nanoseconds,
        linktype=RAW_IP,
    )
    records = list(read_capture(write(tmp_path / "x.pcap", blob)))
    units = 1e9 if nanoseconds else 1e6
    assert [(r.number, r.data, r.linktype) for r in records] == [
        (1, FRAME, RAW_IP),
        (2, b"\x01", RAW_IP),
    ]
    assert records[0].time == pytest.approx(1_600_000_000 + fraction / units, abs=1e-7)
    assert records[1].time == pytest.approx(1_600_000_001 + 1 / units, abs=1e-7)


def test_pcap_nanosecond_resolution_is_kept(tmp_path: Path) -> None:
    blob = pcap_bytes([Packet(0, 1, b"a"), Packet(0, 2, b"b")], nanoseconds=True)
    records = read_bytes(blob)
    assert [r.time for r in records] == [1e-9, 2e-9]


def test_pcap_linktype_fcs_bits_are_ignored() -> None:
    # Upper bits of the link-type field carry FCS information (0x10000000 = F bit).
    blob = pcap_bytes([Packet(0, 0, FRAME)], linktype=0x14000000 | ETHERNET)
    assert read_bytes(blob)[0].linktype == ETHERNET


def test_pcap_header_only_has_no_records() -> None:
    assert read_bytes(pcap_header()) == []


def test_zero_length_record_is_yielded() -> None:
    blob = pcap_bytes([Packet(5, 0, b"", 60), Packet(6, 0, FRAME)])
    records = read_bytes(blob)
    assert [(r.number, r.data, r.original_length) for r in records] == [
        (1, b"", 60),
        (2, FRAME, 60),
    ]


def test_pcap_snaplen_is_enforced() -> None:
    blob = pcap_bytes([Packet(0, 0, FRAME[:20]), Packet(0, 0, FRAME)], snaplen=32)
    stream = iter_capture(io.BytesIO(blob))
    assert next(stream).data == FRAME[:20]
    with pytest.raises(CaptureError, match=r"record 2 at offset 60: .*60 exceeds the snapshot length 32"):
        next(stream)


def test_pcap_snaplen_zero_means_no_limit() -> None:
    blob = pcap_bytes([Packet(0, 0, bytes(9000))], snaplen=0)
    assert len(read_bytes(blob)[0].data) == 9000


def test_pcap_record_of_maximum_length() -> None:
    blob = pcap_bytes([Packet(0, 0, bytes(MAX_RECORD_LENGTH))], snaplen=0xFFFFFFFF)
    assert len(read_bytes(blob)[0].data) == MAX_RECORD_LENGTH


@pytest.mark.parametrize("captured", [MAX_RECORD_LENGTH + 1, 0x7FFFFFFF, 0xFFFFFFFF])
def test_pcap_huge_captured_length_is_rejected_before_reading(captured: int) -> None:
    # A snaplen of 0xFFFFFFFF does not lift the sane bound; nothing is allocated.
    header = pcap_header(snaplen=0xFFFFFFFF)
    blob = header + struct.pack("<IIII", 0, 0, captured, captured) + bytes(100)
    tracemalloc.start()
    try:
        with pytest.raises(CaptureError, match=f"record 1 at offset 24: captured length {captured}"):
            read_bytes(blob)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1024 * 1024


@pytest.mark.parametrize("path", [p for p in NEGATIVE_CAPTURES if p.endswith("slow-ossp.pcap")], ids=capture_id)
def test_big_endian_microsecond_pcap_from_interop(path: str) -> None:
    assert Path(path).read_bytes()[:4] == b"\xa1\xb2\xc3\xd4"  # big endian
    records = list(read_capture(path))
    assert len(records) == 1
    record = records[0]
    assert (record.number, record.linktype, record.interface) == (1, ETHERNET, 0)
    assert record.time == 1758639600.0
    assert len(record.data) == record.original_length == 66
    assert record.data[12:14] == b"\x88\x09"  # Slow Protocols EtherType


# pcapng ----------------------------------------------------------------------


@pytest.mark.parametrize("byte_order", ["<", ">"])
def test_pcapng_enhanced_packets_default_resolution(byte_order: str) -> None:
    blob = (
        ng_shb(byte_order)
        + ng_idb(byte_order=byte_order)
        + ng_epb(1_700_000_000_123_456, FRAME, byte_order=byte_order)
        + ng_epb(
            1_700_000_001_000_000,
            FRAME[:33],
            original_length=1500,
            options=ng_options([(1, b"a comment")], byte_order),
            byte_order=byte_order,
        )
    )
    records = read_bytes(blob)
    assert records == [
        CaptureRecord(1, 1_700_000_000.123456, FRAME, 60, 0, ETHERNET),
        CaptureRecord(2, 1_700_000_001.0, FRAME[:33], 1500, 0, ETHERNET),
    ]


@pytest.mark.parametrize(
    ("tsresol", "ticks", "expected"),
    [
        (9, 1_700_000_000_123_456_789, 1_700_000_000.123456789),  # 10^-9
        (3, 1_700_000_000_123, 1_700_000_000.123),  # 10^-3
        (0, 1_700_000_000, 1_700_000_000.0),  # 10^0
        (0x80 | 20, (1_700_000_000 << 20) | (1 << 19), 1_700_000_000.5),  # 2^-20
        (0x80 | 0, 1_700_000_000, 1_700_000_000.0),  # 2^0
        (0x80 | 32, 5 << 30, 1.25),  # 2^-32
        (127, 10**19, 0.0),  # 10^-127: tiny but valid
    ],
)
def test_pcapng_if_tsresol(tsresol: int, ticks: int, expected: float) -> None:
    blob = ng_shb() + ng_idb(tsresol=tsresol) + ng_epb(ticks, FRAME)
    (record,) = read_bytes(blob)
    assert record.time == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("byte_order", ["<", ">"])
def test_pcapng_if_tsoffset(byte_order: str) -> None:
    blob = (
        ng_shb(byte_order)
        + ng_idb(tsresol=3, tsoffset=1_000_000_000, byte_order=byte_order)
        + ng_idb(tsoffset=-10, byte_order=byte_order)
        + ng_epb(2_500, FRAME, interface=0, byte_order=byte_order)
        + ng_epb(20_000_000, FRAME, interface=1, byte_order=byte_order)
    )
    first, second = read_bytes(blob)
    assert first.time == 1_000_000_002.5
    assert second.time == 10.0


def test_pcapng_two_interfaces_with_different_linktypes() -> None:
    blob = (
        ng_shb()
        + ng_idb(ETHERNET)
        + ng_idb(RAW_IP, tsresol=9)
        + ng_epb(1_000_000, FRAME, interface=0)
        + ng_epb(2_000_000_000, b"\x45" + bytes(19), interface=1)
        + ng_epb(3_000_000, FRAME, interface=0)
    )
    records = read_bytes(blob)
    assert [(r.number, r.interface, r.linktype, r.time) for r in records] == [
        (1, 0, ETHERNET, 1.0),
        (2, 1, RAW_IP, 2.0),
        (3, 0, ETHERNET, 3.0),
    ]


def test_pcapng_multiple_sections_reset_interfaces() -> None:
    first = ng_shb("<") + ng_idb(ETHERNET) + ng_idb(RAW_IP) + ng_epb(1_000_000, FRAME, 1)
    second = ng_shb(">") + ng_idb(RAW_IP, tsresol=9, byte_order=">") + ng_epb(2_000_000_000, FRAME, 0, byte_order=">")
    records = read_bytes(first + second + first)
    assert [(r.number, r.interface, r.linktype, r.time) for r in records] == [
        (1, 1, RAW_IP, 1.0),
        (2, 0, RAW_IP, 2.0),
        (3, 1, RAW_IP, 1.0),
    ]
    # The second section declares a single interface: interface 1 is unknown.
    bad = second + ng_epb(0, FRAME, 1, byte_order=">")
    with pytest.raises(CaptureError, match=r"record 3 at offset .*: undeclared interface 1"):
        read_bytes(first + bad)


def test_pcapng_simple_packet_block_takes_previous_time() -> None:
    blob = (
        ng_shb()
        + ng_idb(snaplen=32)
        + ng_spb(FRAME[:32], original_length=60)
        + ng_epb(7_000_000, FRAME[:10])
        + ng_spb(FRAME[:5])
    )
    records = read_bytes(blob)
    assert records == [
        CaptureRecord(1, 0.0, FRAME[:32], 60, 0, ETHERNET),
        CaptureRecord(2, 7.0, FRAME[:10], 10, 0, ETHERNET),
        CaptureRecord(3, 7.0, FRAME[:5], 5, 0, ETHERNET),
    ]


def test_pcapng_obsolete_packet_block() -> None:
    blob = ng_shb(">") + ng_idb(byte_order=">") + ng_idb(RAW_IP, byte_order=">")
    blob += ng_pb(4_000_000, FRAME, interface=1, byte_order=">")
    assert read_bytes(blob) == [CaptureRecord(1, 4.0, FRAME, 60, 1, RAW_IP)]


def test_pcapng_unknown_blocks_are_skipped() -> None:
    name_resolution = ng_block(4, struct.pack("<HH", 0, 0))
    statistics = ng_block(5, bytes(20))
    custom = ng_block(0x00000BAD, bytes(200_000))  # bigger than one skip chunk
    blob = ng_shb() + custom + ng_idb() + name_resolution + ng_epb(0, FRAME) + statistics + ng_block(0x40000BAD, b"")
    assert [r.number for r in read_bytes(blob)] == [1]


def test_pcapng_zero_length_packet() -> None:
    blob = ng_shb() + ng_idb() + ng_epb(0, b"", original_length=64)
    assert read_bytes(blob) == [CaptureRecord(1, 0.0, b"", 64, 0, ETHERNET)]


def test_pcapng_section_without_interfaces_or_packets() -> None:
    assert read_bytes(ng_shb()) == []
    assert read_bytes(ng_shb() + ng_idb() + ng_shb(">")) == []


def test_record_numbers_continue_across_sections() -> None:
    section = ng_shb() + ng_idb() + ng_epb(0, FRAME) + ng_epb(1, FRAME)
    assert [r.number for r in read_bytes(section * 3)] == [1, 2, 3, 4, 5, 6]


# pcapng errors -----------------------------------------------------------------

SECTION = ng_shb() + ng_idb()
IDB_BODY = struct.pack("<HHI", ETHERNET, 0, 0)  # before the options


def raw_block(block_type: int, total_length: int, body: bytes, trailer: int | None = None) -> bytes:
    end = total_length if trailer is None else trailer
    return struct.pack("<II", block_type, total_length) + body + struct.pack("<I", end)


@pytest.mark.parametrize(
    ("blob", "message"),
    [
        (SECTION + raw_block(6, 34, bytes(22)), r"after record 0\): invalid block total length 34"),
        (SECTION + raw_block(0xBAD, 8, b""), r"after record 0\): invalid block total length 8"),
        (SECTION + raw_block(0xBAD, 0, b""), "invalid block total length 0"),
        (SECTION + raw_block(0xBAD, 16, bytes(4), trailer=20), "trailing block length 20 does"),
        (
            SECTION + ng_epb(0, FRAME)[:-4] + struct.pack("<I", 0),
            "record 1 .*trailing block length 0 does not match total length 92",
        ),
        (SECTION + raw_block(6, 16, bytes(4)), "record 1 .*enhanced packet block too short"),
        (SECTION + raw_block(2, 16, bytes(4)), "record 1 .*: packet block too short"),
        (SECTION + raw_block(3, 12, b""), "record 1 .*simple packet block too short"),
        (SECTION + raw_block(1, 16, bytes(4)), "interface description block too short"),
        (ng_shb() + ng_epb(0, FRAME), "record 1 .*: undeclared interface 0"),
        (ng_shb() + ng_spb(FRAME), "record 1 .*: undeclared interface 0"),
        (ng_shb(major=2), "unsupported pcapng version 2.0"),
        (ng_shb()[:8] + b"\x1a\x2b\x3c\x4e" + ng_shb()[12:], "bad section byte-order magic"),
        (SECTION + ng_shb()[:8] + bytes(4), "bad section byte-order magic"),
        (
            raw_block(0x0A0D0D0A, 24, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)[:12]),
            "section header block length 24",
        ),
        (ng_shb() + ng_block(1, IDB_BODY + ng_option(9, b"\x06\x00")), "if_tsresol option of length 2"),
        (ng_shb() + ng_block(1, IDB_BODY + ng_option(14, bytes(4))), "if_tsoffset option of length 4"),
        (ng_shb() + ng_block(1, IDB_BODY + struct.pack("<HH", 2, 200) + bytes(8)), "option 2 of length 200 overruns"),
        (
            ng_shb() + ng_idb(snaplen=16) + ng_epb(0, FRAME),
            "record 1 .*: captured length 60 exceeds the snapshot length 16",
        ),
        (
            SECTION + raw_block(6, 32, struct.pack("<IIIII", 0, 0, 0, 8, 8)),
            "record 1 .*: captured length 8 overruns its block",
        ),
        (
            SECTION + raw_block(6, 32, struct.pack("<IIIII", 0, 0, 0, 0xFFFFFFFF, 8)),
            "record 1 .*: captured length 4294967295 exceeds the maximum 262144",
        ),
        (
            ng_shb() + ng_idb(snaplen=0) + ng_spb(b"\x01\x02\x03\x04", original_length=100),
            "record 1 .*: captured length 100 overruns its block",
        ),
    ],
)
def test_pcapng_malformed_blocks(blob: bytes, message: str) -> None:
    with pytest.raises(CaptureError, match=message):
        read_bytes(blob)


def test_pcapng_huge_block_length_is_rejected_before_reading() -> None:
    blob = SECTION + ng_epb(0, FRAME) + struct.pack("<II", 6, 0xFFFFFFF0) + bytes(64)
    tracemalloc.start()
    try:
        stream = iter_capture(io.BytesIO(blob))
        assert next(stream).number == 1
        with pytest.raises(CaptureError, match="record 2 at offset 152: block length 4294967280"):
            next(stream)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1024 * 1024


def test_pcapng_huge_unknown_block_is_skipped_in_chunks() -> None:
    blob = SECTION + struct.pack("<II", 0xBAD, 0xFFFFFFF0) + bytes(300_000)
    tracemalloc.start()
    try:
        message = r"offset 60 \(after record 0\): truncated block body \(300000 of 4294967268"
        with pytest.raises(CaptureError, match=message):
            read_bytes(blob)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1024 * 1024


# Not a capture, truncation, garbage ------------------------------------------------


@pytest.mark.parametrize("blob", [b"", b"\xd4", b"\xd4\xc3\xb2", b"GIF89a" + bytes(30), bytes(100), b"\r\n\n\r"])
def test_not_a_capture_file(tmp_path: Path, blob: bytes) -> None:
    path = write(tmp_path / "f.pcap", blob)
    with pytest.raises(CaptureError, match="not a pcap or pcapng file"):
        list(read_capture(path))


def test_missing_file_raises_oserror(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        list(read_capture(tmp_path / "missing.pcap"))


def test_truncated_pcap_file_header() -> None:
    with pytest.raises(CaptureError, match="truncated pcap file header: 10 of 24 bytes"):
        read_bytes(pcap_header()[:10])


def test_truncated_pcap_record_header_names_record() -> None:
    blob = pcap_bytes(packets(3))
    stream = iter_capture(io.BytesIO(blob[: -len(FRAME[:28]) - 4]))
    assert [next(stream).number, next(stream).number] == [1, 2]
    with pytest.raises(CaptureError, match=r"record 3 at offset \d+: truncated record header \(12 of 16"):
        next(stream)


def test_truncated_pcap_record_body_names_record() -> None:
    blob = pcap_bytes(packets(3))
    stream = iter_capture(io.BytesIO(blob[:-1]))
    assert [next(stream).number, next(stream).number] == [1, 2]
    with pytest.raises(CaptureError, match=r"record 3 at offset \d+: truncated packet data \(27 of 28"):
        next(stream)


def test_pcap_records_of_any_length_and_the_offset_of_a_truncated_one() -> None:
    # records longer than the reader's 64 KiB buffer, up to the maximum, come out whole,
    # and a record cut inside its header or its data is named with its exact offset
    lengths = [60, 70_000, 1, 65_519, 200_000, 60, 262_144, 3, *range(1, 400, 7)]
    packets_ = [Packet(i, i * 10, bytes([i % 251]) * n, n + 4) for i, n in enumerate(lengths, start=1)]
    blob = pcap_header(snaplen=0) + b"".join(pcap_record(packet) for packet in packets_)
    records = list(iter_capture(io.BytesIO(blob)))
    assert [(r.number, r.data, r.original_length) for r in records] == [
        (i, packet.data, packet.wire_length) for i, packet in enumerate(packets_, start=1)
    ]
    offsets = [24]
    for packet in packets_:
        offsets.append(offsets[-1] + 16 + len(packet.data))
    fifth = offsets[4]  # the 200,000-octet record: cut inside its header, then inside its data
    with pytest.raises(CaptureError, match=rf"^record 5 at offset {fifth}: truncated record header \(9 of 16 bytes\)"):
        list(iter_capture(io.BytesIO(blob[: fifth + 9])))
    with pytest.raises(CaptureError, match=rf"^record 5 at offset {fifth}: truncated packet data \(131072 of 200000"):
        list(iter_capture(io.BytesIO(blob[: fifth + 16 + 131_072])))


def test_truncated_pcapng_block_names_record() -> None:
    blob = SECTION + ng_epb(0, FRAME) + ng_epb(1, FRAME)
    with pytest.raises(CaptureError, match=r"record 2 at offset \d+: truncated block \(54 of 84"):
        read_bytes(blob[:-30])


def record_boundaries_pcap(blob: bytes) -> set[int]:
    boundaries = {24}
    position = 24
    while position < len(blob):
        (captured,) = struct.unpack_from("<I", blob, position + 8)
        position += 16 + captured
        boundaries.add(position)
    return boundaries


def block_boundaries_pcapng(blob: bytes) -> set[int]:
    boundaries = set()
    position = 0
    byte_order = "<"
    while position < len(blob):
        if blob[position : position + 4] == b"\x0a\x0d\x0d\x0a":
            byte_order = "<" if blob[position + 8 : position + 12] == b"\x4d\x3c\x2b\x1a" else ">"
        (length,) = struct.unpack_from(byte_order + "I", blob, position + 4)
        position += length
        boundaries.add(position)
    return boundaries


def check_every_truncation(blob: bytes, clean_cuts: set[int]) -> None:
    """Each prefix of *blob* yields a prefix of its records, then maybe CaptureError.

    Only the cuts in *clean_cuts* (record or block boundaries) may end without error.
    """
    full = read_bytes(blob)
    for cut in range(len(blob)):
        got: list[CaptureRecord] = []
        try:
            for record in iter_capture(io.BytesIO(blob[:cut])):
                got.append(record)
        except CaptureError as error:
            assert cut not in clean_cuts, (cut, error)
            if cut >= min(clean_cuts):
                assert f"record {len(got)}" in str(error) or f"record {len(got) + 1}" in str(error)
        else:
            assert cut in clean_cuts, cut
        assert got == full[: len(got)], cut


@pytest.mark.parametrize("byte_order", ["<", ">"])
@pytest.mark.parametrize("nanoseconds", [False, True])
def test_every_truncation_of_a_pcap(byte_order: str, nanoseconds: bool) -> None:
    blob = pcap_bytes(packets(4), byte_order, nanoseconds=nanoseconds)
    boundaries = record_boundaries_pcap(pcap_bytes(packets(4)))
    check_every_truncation(blob, boundaries)


@pytest.mark.parametrize("byte_order", ["<", ">"])
def test_every_truncation_of_a_pcapng(byte_order: str) -> None:
    blob = (
        ng_shb(byte_order)
        + ng_idb(tsresol=9, byte_order=byte_order)
        + ng_epb(5, FRAME[:20], byte_order=byte_order)
        + ng_block(0xBAD, bytes(8), byte_order)
        + ng_spb(FRAME[:3], byte_order=byte_order)
        + ng_shb(byte_order)
        + ng_idb(RAW_IP, byte_order=byte_order)
        + ng_pb(7, FRAME[:9], byte_order=byte_order)
    )
    check_every_truncation(blob, block_boundaries_pcapng(blob))


def mutations(blob: bytes) -> st.SearchStrategy[bytes]:
    """Copies of *blob* with a few bytes overwritten."""
    edits = st.lists(st.tuples(st.integers(0, len(blob) - 1), st.integers(0, 255)), min_size=1, max_size=8)

    def apply(changes: list[tuple[int, int]]) -> bytes:
        mutable = bytearray(blob)
        for position, value in changes:
            mutable[position] = value
        return bytes(mutable)

    return edits.map(apply)


VALID_PCAP = pcap_bytes(packets(3))
VALID_PCAPNG = (
    ng_shb()
    + ng_idb(tsresol=9, tsoffset=3)
    + ng_epb(5, FRAME[:20])
    + ng_spb(FRAME[:3])
    + ng_shb(">")
    + ng_idb(byte_order=">")
    + ng_pb(1, FRAME[:9], byte_order=">")
)
MAGICS = [
    b"\xd4\xc3\xb2\xa1",
    b"\xa1\xb2\xc3\xd4",
    b"\x4d\x3c\xb2\xa1",
    b"\xa1\xb2\x3c\x4d",
    b"\x0a\x0d\x0d\x0a",
    b"\x0a\x0d\x0d\x0a\x1c\x00\x00\x00\x4d\x3c\x2b\x1a\x01\x00",
    b"\x0a\x0d\x0d\x0a\x00\x00\x00\x1c\x1a\x2b\x3c\x4d\x00\x01",
]

garbage = st.one_of(
    st.binary(max_size=300),
    st.tuples(st.sampled_from(MAGICS), st.binary(max_size=300)).map(b"".join),
    st.tuples(st.sampled_from([VALID_PCAP, VALID_PCAPNG]), st.binary(max_size=100)).map(b"".join),
    mutations(VALID_PCAP),
    mutations(VALID_PCAPNG),
)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(garbage)
def test_garbage_raises_only_capture_error(blob: bytes) -> None:
    try:
        records = read_bytes(blob)
    except CaptureError:
        return
    for number, record in enumerate(records, start=1):
        assert record.number == number
        assert len(record.data) <= MAX_RECORD_LENGTH


# Streams and memory ------------------------------------------------------------


class NonSeekable(io.RawIOBase):
    """A raw stream that can only be read, a few bytes at a time."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        chunk = self._data.read(min(len(buffer), 7))
        buffer[: len(chunk)] = chunk
        return len(chunk)


@pytest.mark.parametrize("blob", [VALID_PCAP, VALID_PCAPNG], ids=["pcap", "pcapng"])
def test_non_seekable_stream(blob: bytes) -> None:
    stream = io.BufferedReader(NonSeekable(blob), buffer_size=16)
    assert not stream.seekable()
    assert list(iter_capture(stream)) == read_bytes(blob)


def test_iter_capture_reads_from_the_current_position() -> None:
    stream = io.BytesIO(b"prefix" + VALID_PCAP)
    stream.seek(6)
    assert len(list(iter_capture(stream))) == 3


@pytest.mark.parametrize("kind", ["pcap", "pcapng"])
def test_memory_is_flat_in_file_size(tmp_path: Path, kind: str) -> None:
    count = 20_000
    path = tmp_path / f"big.{kind}"
    with path.open("wb") as f:
        if kind == "pcap":
            f.write(pcap_header())
            record = pcap_record(Packet(1, 2, FRAME))
        else:
            f.write(ng_shb() + ng_idb())
            record = ng_epb(3, FRAME)
        for _ in range(count):
            f.write(record)
    assert path.stat().st_size > count * 76
    tracemalloc.start()
    try:
        seen = 0
        for record_ in read_capture(path):
            seen = record_.number
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert seen == count
    assert peak < 256 * 1024  # the file is > 1.5 MB


# Interop captures ----------------------------------------------------------------


def read_tsv(path: Path) -> list[dict[str, str]]:
    lines = path.read_text().splitlines()
    names = lines[0].split("\t")
    return [dict(zip(names, line.split("\t"), strict=True)) for line in lines[1:] if line]


@pytest.mark.skipif(not EOAM_CAPTURES, reason="no interop captures in /work/shared/interop/eoam")
@pytest.mark.parametrize("path", EOAM_CAPTURES, ids=capture_id)
def test_eoam_interop_capture_against_saved_tshark_output(path: str) -> None:
    records = list(read_capture(path))
    assert records
    assert [r.number for r in records] == list(range(1, len(records) + 1))
    assert {(r.interface, r.linktype) for r in records} == {(0, ETHERNET)}
    times = [r.time for r in records]
    assert times == sorted(times)
    tsv = Path(path).with_suffix(".tshark.tsv")
    if not tsv.exists():
        return
    rows = read_tsv(tsv)
    assert rows
    for row in rows:
        record = records[int(row["frame.number"]) - 1]
        assert record.original_length == int(row["frame.len"])
        assert record.time - records[0].time == pytest.approx(float(row["frame.time_relative"]), abs=1e-6)
        source = bytes.fromhex(row["eth.src"].replace(":", ""))
        assert record.data[6:12] == source
        assert record.data[12:14] == b"\x88\x09"


@pytest.mark.tshark
@needs_tshark
@pytest.mark.parametrize("path", EOAM_CAPTURES + NEGATIVE_CAPTURES, ids=capture_id)
def test_interop_capture_against_tshark(path: str) -> None:
    records = assert_matches_tshark(path)
    assert records


# Files produced or converted by Wireshark's tools --------------------------------


@pytest.mark.tshark
@needs_tshark
@pytest.mark.parametrize("byte_order", ["<", ">"])
def test_own_files_agree_with_tshark(tmp_path: Path, byte_order: str) -> None:
    pcap = write(tmp_path / "a.pcap", pcap_bytes(packets(), byte_order, nanoseconds=True))
    pcapng = write(
        tmp_path / "a.pcapng",
        ng_shb(byte_order)
        + ng_idb(tsresol=0x80 | 20, byte_order=byte_order)
        + ng_idb(RAW_IP, tsresol=9, tsoffset=100, byte_order=byte_order)
        + ng_epb(3 << 19, FRAME, byte_order=byte_order)
        + ng_epb(1_234_567_891, FRAME[:20], interface=1, byte_order=byte_order)
        + ng_spb(FRAME[:30], byte_order=byte_order)
        + ng_pb(1 << 21, FRAME[:40], byte_order=byte_order),
    )
    assert_matches_tshark(pcap)
    records = assert_matches_tshark(pcapng)
    assert [r.time for r in records] == [1.5, 101.234567891, 101.234567891, 2.0]


@pytest.mark.tshark
@needs_editcap
def test_editcap_pcapng_conversion(tmp_path: Path) -> None:
    source = write(tmp_path / "in.pcap", pcap_bytes(packets(), ">", nanoseconds=True))
    converted = tmp_path / "out.pcapng"
    subprocess.run(["editcap", "-F", "pcapng", str(source), str(converted)], check=True, capture_output=True)
    assert converted.read_bytes()[:4] == b"\x0a\x0d\x0d\x0a"
    original = list(read_capture(source))
    records = assert_matches_tshark(converted)
    assert [(r.number, r.data, r.original_length, r.linktype) for r in records] == [
        (r.number, r.data, r.original_length, r.linktype) for r in original
    ]
    # editcap keeps nanosecond resolution: if_tsresol 9 in the interface block.
    assert [r.time for r in records] == [r.time for r in original]


@pytest.mark.tshark
@needs_editcap
def test_editcap_nanosecond_pcap(tmp_path: Path) -> None:
    source = write(tmp_path / "in.pcap", pcap_bytes(packets()))
    converted = tmp_path / "out.pcap"
    subprocess.run(["editcap", "-F", "nsecpcap", str(source), str(converted)], check=True, capture_output=True)
    assert converted.read_bytes()[:4] == b"\x4d\x3c\xb2\xa1"
    records = assert_matches_tshark(converted)
    assert records == list(read_capture(source))


@pytest.mark.tshark
@needs_editcap
def test_editcap_snaplen_truncation(tmp_path: Path) -> None:
    source = write(tmp_path / "in.pcap", pcap_bytes([Packet(1, 0, FRAME), Packet(2, 0, FRAME)]))
    converted = tmp_path / "out.pcapng"
    subprocess.run(
        ["editcap", "-F", "pcapng", "-s", "20", str(source), str(converted)],
        check=True,
        capture_output=True,
    )
    records = assert_matches_tshark(converted)
    assert [(r.data, r.original_length) for r in records] == [(FRAME[:20], 60)] * 2


@pytest.mark.tshark
@needs_mergecap
def test_mergecap_two_interfaces_with_different_linktypes(tmp_path: Path) -> None:
    ethernet = write(tmp_path / "eth.pcap", pcap_bytes([Packet(10, 0, FRAME), Packet(12, 0, FRAME)]))
    raw_ip = write(
        tmp_path / "ip.pcap",
        pcap_bytes([Packet(11, 5, b"\x45" + bytes(19))], nanoseconds=True, linktype=RAW_IP),
    )
    merged = tmp_path / "merged.pcapng"
    subprocess.run(
        ["mergecap", "-F", "pcapng", "-w", str(merged), str(ethernet), str(raw_ip)],
        check=True,
        capture_output=True,
    )
    records = assert_matches_tshark(merged)
    assert [(r.number, r.interface, r.linktype, r.time) for r in records] == [
        (1, 0, ETHERNET, 10.0),
        (2, 1, RAW_IP, 11.000000005),
        (3, 0, ETHERNET, 12.0),
    ]


@pytest.mark.tshark
@needs_editcap
def test_concatenated_pcapng_sections(tmp_path: Path) -> None:
    parts = []
    for name, blob in [
        ("a", pcap_bytes(packets(2))),
        ("b", pcap_bytes([Packet(5, 5, b"\x45" + bytes(19))], ">", linktype=RAW_IP)),
    ]:
        source = write(tmp_path / f"{name}.pcap", blob)
        target = tmp_path / f"{name}.pcapng"
        subprocess.run(["editcap", "-F", "pcapng", str(source), str(target)], check=True, capture_output=True)
        parts.append(target.read_bytes())
    combined = write(tmp_path / "combined.pcapng", b"".join(parts))
    records = assert_matches_tshark(combined)
    assert [(r.number, r.interface, r.linktype) for r in records] == [
        (1, 0, ETHERNET),
        (2, 0, ETHERNET),
        (3, 0, RAW_IP),
    ]
