"""Streaming reader for pcap and pcapng capture files (standard library only).

The reader never loads a whole file: it reads one record (pcap) or one block
(pcapng) at a time with ``stream.read`` and yields :class:`CaptureRecord`
objects, so memory use does not grow with the file size.  Every length read
from the file is checked against a bound *before* anything is read with it.

Supported formats:

* pcap: the microsecond (``0xA1B2C3D4``) and nanosecond (``0xA1B23C4D``)
  magics, in both byte orders.  The link type is the low 16 bits of the
  header's link-type field (the upper bits carry FCS information).  A snapshot
  length of 0 in the file header means "no limit" (only
  :data:`MAX_RECORD_LENGTH` applies).
* pcapng: Section Header Block (both byte orders, several sections per file;
  each new section forgets the interfaces of the previous one), Interface
  Description Block (link type, snapshot length, ``if_tsresol`` and
  ``if_tsoffset`` options), Enhanced Packet Block, Simple Packet Block and the
  obsolete Packet Block.  Every other block type is skipped using its length.

A Simple Packet Block carries no timestamp; its record gets the time of the
previous record in the file (0.0 if it is the first record), so record times
stay monotonic.

Errors in the input raise :class:`CaptureError`, never anything else (opening
the file may raise :class:`OSError`).  Records before the damaged one have
already been yielded when the error is raised.

Timestamps are returned as float seconds since the epoch, which for current
dates keeps a precision of about 0.25 microseconds.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from typing import BinaryIO, NamedTuple

import attrs

__all__ = [
    "MAX_RECORD_LENGTH",
    "CaptureError",
    "CaptureRecord",
    "iter_capture",
    "read_capture",
]

#: Largest captured length accepted for one packet (Wireshark's standard bound).
MAX_RECORD_LENGTH = 262144
#: Largest pcapng block that is read into memory (packet and interface blocks).
#: Blocks of other types are skipped in chunks whatever their length.
MAX_BLOCK_LENGTH = 16 * 1024 * 1024

_SKIP_CHUNK = 64 * 1024
_READ_BUFFER = 64 * 1024

_NOT_A_CAPTURE = "not a pcap or pcapng file"

# pcap ---------------------------------------------------------------------

_PCAP_MAGICS: dict[bytes, tuple[str, int]] = {
    # first four bytes -> (byte order, timestamp fraction units per second)
    b"\xd4\xc3\xb2\xa1": ("<", 1_000_000),
    b"\xa1\xb2\xc3\xd4": (">", 1_000_000),
    b"\x4d\x3c\xb2\xa1": ("<", 1_000_000_000),
    b"\xa1\xb2\x3c\x4d": (">", 1_000_000_000),
}
_PCAP_FILE_HEADER_LENGTH = 24
_PCAP_RECORD_HEADER_LENGTH = 16
# After the magic: version major, minor, thiszone, sigfigs, snaplen, linktype.
_PCAP_FILE_HEADER = {bo: struct.Struct(bo + "HHiIII") for bo in "<>"}
_PCAP_RECORD_HEADER = {bo: struct.Struct(bo + "IIII") for bo in "<>"}

# pcapng -------------------------------------------------------------------

_SHB_TYPE = b"\x0a\x0d\x0d\x0a"
_IDB_TYPE = 0x00000001
_PB_TYPE = 0x00000002
_SPB_TYPE = 0x00000003
_EPB_TYPE = 0x00000006
_BYTE_ORDER_MAGIC = 0x1A2B3C4D
_BYTE_ORDER_MAGICS = {
    struct.pack("<I", _BYTE_ORDER_MAGIC): "<",
    struct.pack(">I", _BYTE_ORDER_MAGIC): ">",
}
_MIN_BLOCK_LENGTH = 12
_OPT_ENDOFOPT = 0
_OPT_IF_TSRESOL = 9
_OPT_IF_TSOFFSET = 14


class _NgStructs(NamedTuple):
    """Structures of pcapng blocks for one byte order."""

    u32: struct.Struct  # a block's type, total length or trailing length
    block_header: struct.Struct  # block type, block total length
    shb_version: struct.Struct  # major, minor (after the byte-order magic)
    idb: struct.Struct  # linktype, reserved, snaplen
    epb: struct.Struct  # interface, ts high, ts low, captured, original
    pb: struct.Struct  # interface, drops, ts high, ts low, captured, original
    option: struct.Struct  # code, length
    i64: struct.Struct  # if_tsoffset value


_NG_STRUCTS = {
    bo: _NgStructs(
        u32=struct.Struct(bo + "I"),
        block_header=struct.Struct(bo + "II"),
        shb_version=struct.Struct(bo + "HH"),
        idb=struct.Struct(bo + "HHI"),
        epb=struct.Struct(bo + "IIIII"),
        pb=struct.Struct(bo + "HHIIII"),
        option=struct.Struct(bo + "HH"),
        i64=struct.Struct(bo + "q"),
    )
    for bo in "<>"
}


class CaptureError(Exception):
    """The capture file is not a readable pcap/pcapng file.

    The message says what is wrong and where (record number and/or byte
    offset in the file).
    """


@attrs.frozen(slots=True)
class CaptureRecord:
    """One captured packet.

    Attributes:
        number: 1-based number of the record in the file, counting every
            packet record (as Wireshark's ``frame.number``).
        time: seconds since the epoch.
        data: the captured bytes (possibly shorter than the packet on the
            wire).
        original_length: length of the packet on the wire.
        interface: pcapng interface id within its section (0 for pcap).
        linktype: link-layer type of the interface or file (1 is Ethernet).
    """

    number: int
    time: float
    data: bytes
    original_length: int
    interface: int
    linktype: int


# The attrs-generated __init__ of a frozen class sets each field through
# object.__setattr__ and is the most expensive step of the pcap loop.  The
# readers fill the slots directly through their descriptors instead (about
# 25% more records per second); the result is identical to CaptureRecord(...)
# because the class has no defaults, validators or converters (tests check it).
_new_instance = object.__new__
(
    _set_number,
    _set_time,
    _set_data,
    _set_original_length,
    _set_interface,
    _set_linktype,
) = [CaptureRecord.__dict__[field.name].__set__ for field in attrs.fields(CaptureRecord)]


def _new_record(
    number: int, time: float, data: bytes, original_length: int, interface: int, linktype: int
) -> CaptureRecord:
    """Return ``CaptureRecord(number, time, ...)``, built faster."""
    record = _new_instance(CaptureRecord)
    _set_number(record, number)
    _set_time(record, time)
    _set_data(record, data)
    _set_original_length(record, original_length)
    _set_interface(record, interface)
    _set_linktype(record, linktype)
    return record


def read_capture(path: str | os.PathLike[str]) -> Iterator[CaptureRecord]:
    """Yield the packet records of the pcap or pcapng file at *path*.

    The file is opened when iteration starts (so an :class:`OSError` for a
    missing or unreadable file comes from the first ``next()``) and closed
    when the iterator is exhausted, closed or garbage collected.

    Raises:
        CaptureError: the file is not a valid pcap or pcapng file.
        OSError: the file cannot be opened or read.
    """
    with open(path, "rb", buffering=_READ_BUFFER) as stream:
        yield from iter_capture(stream)


def iter_capture(stream: BinaryIO) -> Iterator[CaptureRecord]:
    """Yield the packet records of a pcap or pcapng file read from *stream*.

    *stream* is read sequentially from its current position (it need not be
    seekable) and is not closed.

    Raises:
        CaptureError: the data is not a valid pcap or pcapng file.
    """
    magic = stream.read(4)
    if magic == _SHB_TYPE:
        yield from _iter_pcapng(stream)
        return
    pcap_format = _PCAP_MAGICS.get(magic)
    if pcap_format is None:
        raise CaptureError(f"{_NOT_A_CAPTURE} (unknown magic {magic.hex() or 'empty'})")
    byte_order, units = pcap_format
    yield from _iter_pcap(stream, byte_order, units)


# pcap ---------------------------------------------------------------------


def _iter_pcap(stream: BinaryIO, byte_order: str, units: int) -> Iterator[CaptureRecord]:
    """Yield the records of a pcap file whose magic has been read."""
    header = stream.read(_PCAP_FILE_HEADER_LENGTH - 4)
    if len(header) < _PCAP_FILE_HEADER_LENGTH - 4:
        raise CaptureError(f"truncated pcap file header: {len(header) + 4} of {_PCAP_FILE_HEADER_LENGTH} bytes")
    _major, _minor, _zone, _sigfigs, snaplen, linktype_field = _PCAP_FILE_HEADER[byte_order].unpack(header)
    linktype = linktype_field & 0xFFFF
    limit = min(snaplen, MAX_RECORD_LENGTH) if snaplen else MAX_RECORD_LENGTH
    unpack = _PCAP_RECORD_HEADER[byte_order].unpack
    read = stream.read
    number = 0
    offset = _PCAP_FILE_HEADER_LENGTH  # of the current record header
    while True:
        record_header = read(_PCAP_RECORD_HEADER_LENGTH)
        number += 1
        if len(record_header) < _PCAP_RECORD_HEADER_LENGTH:
            if record_header:
                raise CaptureError(
                    f"record {number} at offset {offset}: truncated record header "
                    f"({len(record_header)} of {_PCAP_RECORD_HEADER_LENGTH} bytes)"
                )
            return
        seconds, fraction, captured, original = unpack(record_header)
        if captured > limit:
            raise CaptureError(_pcap_length_error(number, offset, captured, snaplen))
        data = read(captured)
        if len(data) < captured:
            raise CaptureError(
                f"record {number} at offset {offset}: truncated packet data ({len(data)} of {captured} bytes)"
            )
        yield _new_record(number, seconds + fraction / units, data, original, 0, linktype)
        offset += _PCAP_RECORD_HEADER_LENGTH + captured


def _pcap_length_error(number: int, offset: int, captured: int, snaplen: int) -> str:
    """Describe a pcap record whose captured length is out of bounds."""
    where = f"record {number} at offset {offset}"
    if captured > MAX_RECORD_LENGTH:
        return f"{where}: captured length {captured} exceeds the maximum {MAX_RECORD_LENGTH}"
    return f"{where}: captured length {captured} exceeds the snapshot length {snaplen}"


# pcapng -------------------------------------------------------------------


class _Interface(NamedTuple):
    """What a pcapng Interface Description Block says about its packets."""

    linktype: int
    snaplen: int  # 0: no limit
    ticks_per_second: int
    time_offset: int  # seconds added to every timestamp


class _Section:
    """State of the pcapng section being read."""

    __slots__ = ("interfaces", "structs")

    def __init__(self, byte_order: str) -> None:
        self.structs = _NG_STRUCTS[byte_order]
        self.interfaces: list[_Interface] = []


class _NgReader:
    """Reads a pcapng file block by block, keeping track of the position."""

    def __init__(self, stream: BinaryIO) -> None:
        self.read = stream.read
        self.offset = 0  # of the block being read
        self.number = 0  # of the last packet record started
        self.in_record = False  # whether the block being read is a packet record
        self.last_time = 0.0
        self.section = _Section("<")

    def error(self, message: str) -> CaptureError:
        """Build an error about the block at the current offset."""
        if self.in_record:
            where = f"record {self.number} at offset {self.offset}"
        else:
            where = f"pcapng block at offset {self.offset} (after record {self.number})"
        return CaptureError(f"{where}: {message}")

    def read_exactly(self, length: int, what: str) -> bytes:
        """Read *length* bytes (already checked against a bound)."""
        data = self.read(length)
        if len(data) < length:
            raise self.error(f"truncated {what} ({len(data)} of {length} bytes)")
        return data

    def skip(self, length: int) -> None:
        """Discard *length* bytes in bounded chunks."""
        remaining = length
        while remaining > 0:
            chunk = self.read(min(remaining, _SKIP_CHUNK))
            if not chunk:
                raise self.error(f"truncated block body ({length - remaining} of {length} bytes)")
            remaining -= len(chunk)

    def check_length(self, total_length: int) -> None:
        """Check a block total length read from the file."""
        if total_length % 4 or total_length < _MIN_BLOCK_LENGTH:
            raise self.error(f"invalid block total length {total_length} (must be a multiple of 4 and >= 12)")

    def check_trailer(self, trailer: bytes, total_length: int) -> None:
        """Check that a block's trailing length repeats its total length."""
        (trailing_length,) = self.section.structs.u32.unpack(trailer)
        if trailing_length != total_length:
            raise self.error(f"trailing block length {trailing_length} does not match total length {total_length}")


def _iter_pcapng(stream: BinaryIO) -> Iterator[CaptureRecord]:
    """Yield the records of a pcapng file whose first four bytes were read."""
    reader = _NgReader(stream)
    _read_section_header(reader)
    while True:
        head = reader.read(8)
        if len(head) < 8:
            if head:
                raise reader.error(f"truncated block header ({len(head)} of 8 bytes)")
            return
        if head[:4] == _SHB_TYPE:
            _read_section_header(reader, head[4:])
            continue
        block_type, total_length = reader.section.structs.block_header.unpack(head)
        reader.check_length(total_length)
        if block_type in _PACKET_PARSERS or block_type == _IDB_TYPE:
            record = _read_block(reader, block_type, total_length)
            if record is not None:
                yield record
        else:
            reader.skip(total_length - 12)
            reader.check_trailer(reader.read_exactly(4, "block trailer"), total_length)
        reader.offset += total_length


def _read_section_header(reader: _NgReader, length_bytes: bytes = b"") -> None:
    """Read a Section Header Block whose block type has been read.

    *length_bytes* holds the part of the block total length already read.
    """
    start = length_bytes + reader.read_exactly(8 - len(length_bytes), "section header block")
    byte_order = _BYTE_ORDER_MAGICS.get(start[4:])
    if byte_order is None:
        raise reader.error(f"bad section byte-order magic {start[4:].hex()}")
    reader.section = _Section(byte_order)
    structs = reader.section.structs
    (total_length,) = structs.u32.unpack(start[:4])
    reader.check_length(total_length)
    if total_length < 28 or total_length > MAX_BLOCK_LENGTH:
        raise reader.error(f"invalid section header block length {total_length}")
    body = reader.read_exactly(total_length - 12, "section header block")
    reader.check_trailer(body[-4:], total_length)
    major, minor = structs.shb_version.unpack_from(body)
    if major != 1:
        raise reader.error(f"unsupported pcapng version {major}.{minor}")
    reader.offset += total_length


def _read_block(reader: _NgReader, block_type: int, total_length: int) -> CaptureRecord | None:
    """Read an interface or packet block whose 8-byte header has been read."""
    is_packet = block_type != _IDB_TYPE
    if is_packet:
        reader.number += 1
        reader.in_record = True
    if total_length > MAX_BLOCK_LENGTH:
        raise reader.error(f"block length {total_length} exceeds the maximum {MAX_BLOCK_LENGTH}")
    body = reader.read_exactly(total_length - 8, "block")
    reader.check_trailer(body[-4:], total_length)
    body = body[:-4]
    if not is_packet:
        reader.section.interfaces.append(_parse_interface(reader, body))
        return None
    record = _PACKET_PARSERS[block_type](reader, body)
    reader.in_record = False
    reader.last_time = record.time
    return record


def _parse_interface(reader: _NgReader, body: bytes) -> _Interface:
    """Parse the body of an Interface Description Block."""
    structs = reader.section.structs
    if len(body) < structs.idb.size:
        raise reader.error("interface description block too short")
    linktype, _reserved, snaplen = structs.idb.unpack_from(body)
    ticks_per_second = 1_000_000
    time_offset = 0
    for code, value in _iter_options(reader, body, structs.idb.size):
        if code == _OPT_IF_TSRESOL:
            ticks_per_second = _ticks_per_second(reader, value)
        elif code == _OPT_IF_TSOFFSET:
            if len(value) != 8:
                raise reader.error(f"if_tsoffset option of length {len(value)} (expected 8)")
            (time_offset,) = structs.i64.unpack(value)
    return _Interface(linktype, snaplen, ticks_per_second, time_offset)


def _ticks_per_second(reader: _NgReader, value: bytes) -> int:
    """Decode an ``if_tsresol`` option value."""
    if len(value) != 1:
        raise reader.error(f"if_tsresol option of length {len(value)} (expected 1)")
    exponent = value[0] & 0x7F
    if value[0] & 0x80:
        return 1 << exponent
    ticks: int = 10**exponent
    return ticks


def _iter_options(reader: _NgReader, body: bytes, start: int) -> Iterator[tuple[int, bytes]]:
    """Yield (code, value) for the options in *body* from *start* on."""
    option = reader.section.structs.option
    position = start
    while position + option.size <= len(body):
        code, length = option.unpack_from(body, position)
        if code == _OPT_ENDOFOPT:
            return
        position += option.size
        end = position + length
        if end > len(body):
            raise reader.error(f"option {code} of length {length} overruns its block")
        yield code, body[position:end]
        position = end + (-length % 4)


def _interface(reader: _NgReader, interface_id: int) -> _Interface:
    """Return the interface *interface_id* of the current section."""
    interfaces = reader.section.interfaces
    if interface_id >= len(interfaces):
        raise reader.error(f"undeclared interface {interface_id}")
    return interfaces[interface_id]


def _packet_data(reader: _NgReader, body: bytes, start: int, captured: int, interface: _Interface) -> bytes:
    """Return the *captured* bytes of packet data at *start* in *body*."""
    if captured > MAX_RECORD_LENGTH:
        raise reader.error(f"captured length {captured} exceeds the maximum {MAX_RECORD_LENGTH}")
    if interface.snaplen and captured > interface.snaplen:
        raise reader.error(f"captured length {captured} exceeds the snapshot length {interface.snaplen}")
    if start + captured > len(body):
        raise reader.error(f"captured length {captured} overruns its block")
    return body[start : start + captured]


def _timestamp(interface: _Interface, high: int, low: int) -> float:
    """Convert a pcapng 64-bit timestamp to seconds since the epoch."""
    seconds, ticks = divmod((high << 32) | low, interface.ticks_per_second)
    return interface.time_offset + seconds + ticks / interface.ticks_per_second


def _parse_enhanced_packet(reader: _NgReader, body: bytes) -> CaptureRecord:
    """Parse the body of an Enhanced Packet Block."""
    epb = reader.section.structs.epb
    if len(body) < epb.size:
        raise reader.error("enhanced packet block too short")
    interface_id, high, low, captured, original = epb.unpack_from(body)
    interface = _interface(reader, interface_id)
    data = _packet_data(reader, body, epb.size, captured, interface)
    time = _timestamp(interface, high, low)
    return _new_record(reader.number, time, data, original, interface_id, interface.linktype)


def _parse_packet(reader: _NgReader, body: bytes) -> CaptureRecord:
    """Parse the body of an obsolete Packet Block."""
    pb = reader.section.structs.pb
    if len(body) < pb.size:
        raise reader.error("packet block too short")
    interface_id, _drops, high, low, captured, original = pb.unpack_from(body)
    interface = _interface(reader, interface_id)
    data = _packet_data(reader, body, pb.size, captured, interface)
    time = _timestamp(interface, high, low)
    return _new_record(reader.number, time, data, original, interface_id, interface.linktype)


def _parse_simple_packet(reader: _NgReader, body: bytes) -> CaptureRecord:
    """Parse the body of a Simple Packet Block (interface 0, no timestamp)."""
    u32 = reader.section.structs.u32
    if len(body) < u32.size:
        raise reader.error("simple packet block too short")
    (original,) = u32.unpack_from(body)
    interface = _interface(reader, 0)
    captured = min(original, interface.snaplen) if interface.snaplen else original
    data = _packet_data(reader, body, u32.size, captured, interface)
    return _new_record(reader.number, reader.last_time, data, original, 0, interface.linktype)


_PACKET_PARSERS = {
    _EPB_TYPE: _parse_enhanced_packet,
    _PB_TYPE: _parse_packet,
    _SPB_TYPE: _parse_simple_packet,
}
