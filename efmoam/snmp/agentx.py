"""The AgentX protocol (RFC 2741) as data: PDUs in, PDUs out, no sockets.

Only what a subagent needs: it sends Open, Register, Notify, Ping, Close and Response;
it receives Response, Get, GetNext, GetBulk, TestSet, CommitSet, UndoSet, CleanupSet and
Close.  `Decoder` cuts a byte stream into PDUs and refuses anything malformed with
`ParseError` (the session then closes with reason parseError): the master is a local
process, but nothing read from a socket may end the daemon.  Both byte orders are read
(the header's NETWORK_BYTE_ORDER flag); we always write network byte order.

An OID is a tuple of ints.  RFC 2741 5.1 compresses ``1.3.6.1.X...`` with a prefix byte;
`encode_oid` uses it and `Decoder` expands it.
"""

from __future__ import annotations

import enum
import functools
import struct
from collections.abc import Iterator, Sequence

import attrs

Oid = tuple[int, ...]
VERSION = 1
HEADER = 20
MAX_PAYLOAD = 1 << 20  #: a PDU announcing more is refused (net-snmp's are a few KiB)
MAX_SUBIDS = 128  #: RFC 2741 5.1: at most 128 sub-identifiers
INTERNET = (1, 3, 6, 1)


class PduType(enum.IntEnum):
    OPEN = 1
    CLOSE = 2
    REGISTER = 3
    UNREGISTER = 4
    GET = 5
    GET_NEXT = 6
    GET_BULK = 7
    TEST_SET = 8
    COMMIT_SET = 9
    UNDO_SET = 10
    CLEANUP_SET = 11
    NOTIFY = 12
    PING = 13
    INDEX_ALLOCATE = 14
    INDEX_DEALLOCATE = 15
    ADD_AGENT_CAPS = 16
    REMOVE_AGENT_CAPS = 17
    RESPONSE = 18


class Flag(enum.IntFlag):
    INSTANCE_REGISTRATION = 0x01
    NEW_INDEX = 0x02
    ANY_INDEX = 0x04
    NON_DEFAULT_CONTEXT = 0x08
    NETWORK_BYTE_ORDER = 0x10


class VarType(enum.IntEnum):
    INTEGER = 2
    OCTET_STRING = 4
    NULL = 5
    OBJECT_IDENTIFIER = 6
    IP_ADDRESS = 64
    COUNTER32 = 65
    GAUGE32 = 66
    TIME_TICKS = 67
    OPAQUE = 68
    COUNTER64 = 70
    NO_SUCH_OBJECT = 128
    NO_SUCH_INSTANCE = 129
    END_OF_MIB_VIEW = 130


class Error(enum.IntEnum):
    """res.error: SNMP's error-status values (RFC 3416) and AgentX's own (RFC 2741 6.2.16)."""

    NO_ERROR = 0
    TOO_BIG = 1
    GEN_ERR = 5
    WRONG_TYPE = 7
    WRONG_LENGTH = 8
    WRONG_VALUE = 10
    NO_CREATION = 11
    INCONSISTENT_VALUE = 12
    RESOURCE_UNAVAILABLE = 13
    COMMIT_FAILED = 14
    UNDO_FAILED = 15
    NOT_WRITABLE = 17
    INCONSISTENT_NAME = 18
    OPEN_FAILED = 256
    NOT_OPEN = 257
    UNSUPPORTED_CONTEXT = 262
    DUPLICATE_REGISTRATION = 263
    UNKNOWN_REGISTRATION = 264
    PARSE_ERROR = 266
    REQUEST_DENIED = 267
    PROCESSING_ERROR = 268


class CloseReason(enum.IntEnum):
    OTHER = 1
    PARSE_ERROR = 2
    PROTOCOL_ERROR = 3
    TIMEOUTS = 4
    SHUTDOWN = 5
    BY_MANAGER = 6


_NETWORK_BYTE_ORDER = int(Flag.NETWORK_BYTE_ORDER)  # plain ints on the per-PDU path: IntFlag ops are slow
_NON_DEFAULT_CONTEXT = int(Flag.NON_DEFAULT_CONTEXT)


class ParseError(ValueError):
    """Bytes that are not an AgentX PDU."""


_INTEGER_TYPES = {VarType.INTEGER, VarType.COUNTER32, VarType.GAUGE32, VarType.TIME_TICKS}
_EXCEPTIONS = {VarType.NULL, VarType.NO_SUCH_OBJECT, VarType.NO_SUCH_INSTANCE, VarType.END_OF_MIB_VIEW}


@attrs.frozen
class VarBind:
    name: Oid
    type: VarType
    value: int | bytes | Oid | None = None


@attrs.frozen
class SearchRange:
    start: Oid
    end: Oid  #: () for no upper bound
    include: bool


@attrs.frozen
class Header:
    type: int
    flags: int
    session_id: int
    transaction_id: int
    packet_id: int


@attrs.frozen
class Pdu:
    """One received PDU: the header and what its type carries (the rest left empty)."""

    header: Header
    ranges: tuple[SearchRange, ...] = ()  #: Get, GetNext, GetBulk
    varbinds: tuple[VarBind, ...] = ()  #: TestSet, Response, Notify
    non_repeaters: int = 0  #: GetBulk
    max_repetitions: int = 0  #: GetBulk
    sys_uptime: int = 0  #: Response: the master's sysUpTime, centiseconds
    error: int = 0  #: Response
    index: int = 0  #: Response
    reason: int = 0  #: Close

    @property
    def type(self) -> int:
        return self.header.type


# -- encoding (always network byte order) ---------------------------------------------


def encode_oid(oid: Sequence[int], include: bool = False) -> bytes:
    prefix = 0
    subids = tuple(oid)
    if len(subids) > 4 and subids[:4] == INTERNET and 0 < subids[4] < 256:
        prefix, subids = subids[4], subids[5:]
    return struct.pack(f"!BBBx{len(subids)}I", len(subids), prefix, include, *subids)


def encode_octets(data: bytes) -> bytes:
    return struct.pack("!I", len(data)) + data + bytes(-len(data) % 4)


def encode_varbind(vb: VarBind) -> bytes:
    head = struct.pack("!Hxx", vb.type) + encode_oid(vb.name)
    kind, value = vb.type, vb.value
    if kind in _INTEGER_TYPES:
        assert isinstance(value, int)
        return head + struct.pack("!I", value & 0xFFFFFFFF)
    if kind is VarType.COUNTER64:
        assert isinstance(value, int)
        return head + struct.pack("!Q", value & 0xFFFFFFFFFFFFFFFF)
    if kind in (VarType.OCTET_STRING, VarType.OPAQUE, VarType.IP_ADDRESS):
        assert isinstance(value, bytes)
        return head + encode_octets(value)
    if kind is VarType.OBJECT_IDENTIFIER:
        assert isinstance(value, tuple)
        return head + encode_oid(value)
    return head  # Null and the exceptions carry no data


def encode(
    pdu_type: PduType, payload: bytes, *, session_id: int, transaction_id: int = 0, packet_id: int, flags: int = 0
) -> bytes:
    header = struct.pack(
        "!BBBxIIII", VERSION, pdu_type, flags | _NETWORK_BYTE_ORDER, session_id, transaction_id, packet_id,
        len(payload),
    )  # fmt: skip
    return header + payload


def open_payload(timeout: int, oid: Oid, description: bytes) -> bytes:
    return struct.pack("!Bxxx", timeout) + encode_oid(oid) + encode_octets(description)


def register_payload(subtree: Oid, timeout: int = 0, priority: int = 127) -> bytes:
    return struct.pack("!BBBx", timeout, priority, 0) + encode_oid(subtree)


def close_payload(reason: CloseReason) -> bytes:
    return struct.pack("!Bxxx", reason)


def response_payload(varbinds: Sequence[VarBind], error: int = 0, index: int = 0, sys_uptime: int = 0) -> bytes:
    return struct.pack("!IHH", sys_uptime, error, index) + b"".join(encode_varbind(vb) for vb in varbinds)


def varbinds_payload(varbinds: Sequence[VarBind]) -> bytes:
    return b"".join(encode_varbind(vb) for vb in varbinds)


# -- decoding -------------------------------------------------------------------------


@functools.cache
def _layout(order: str, fmt: str) -> struct.Struct:
    return struct.Struct(order + fmt)


class _Reader:
    """Reads one PDU's payload in the byte order its header gave."""

    def __init__(self, data: bytes, big: bool) -> None:
        self.data, self.at = data, 0
        self.order = "!" if big else "<"

    def left(self) -> int:
        return len(self.data) - self.at

    def take(self, fmt: str) -> tuple[int, ...]:
        layout = _layout(self.order, fmt)
        if len(self.data) - self.at < layout.size:
            raise ParseError("a PDU shorter than its fields")
        values = layout.unpack_from(self.data, self.at)
        self.at += layout.size
        return values

    def oid(self) -> tuple[Oid, bool]:
        n, prefix, include = self.take("BBBx")
        if n > MAX_SUBIDS:
            raise ParseError(f"an OID of {n} sub-identifiers")
        subids = self.take(f"{n}I") if n else ()
        if prefix:
            subids = (*INTERNET, prefix, *subids)
        if include > 1:
            raise ParseError(f"an OID's include field is {include}")
        return subids, bool(include)

    def octets(self) -> bytes:
        (length,) = self.take("I")
        if length > self.left():
            raise ParseError("an octet string longer than its PDU")
        data = self.data[self.at : self.at + length]
        self.at += length + (-length % 4)
        if self.at > len(self.data):
            raise ParseError("an octet string's padding runs past its PDU")
        return data

    def varbind(self) -> VarBind:
        (kind,) = self.take("Hxx")
        name, _ = self.oid()
        try:
            var_type = VarType(kind)
        except ValueError:
            raise ParseError(f"a varbind of unknown type {kind}") from None
        if var_type in _INTEGER_TYPES:
            return VarBind(name, var_type, self.take("I")[0])
        if var_type is VarType.COUNTER64:
            return VarBind(name, var_type, self.take("Q")[0])
        if var_type in (VarType.OCTET_STRING, VarType.OPAQUE, VarType.IP_ADDRESS):
            return VarBind(name, var_type, self.octets())
        if var_type is VarType.OBJECT_IDENTIFIER:
            return VarBind(name, var_type, self.oid()[0])
        assert var_type in _EXCEPTIONS
        return VarBind(name, var_type)

    def varbinds(self) -> tuple[VarBind, ...]:
        found = []
        while self.left():
            found.append(self.varbind())
        return tuple(found)

    def ranges(self) -> tuple[SearchRange, ...]:
        found = []
        while self.left():
            start, include = self.oid()
            end, _ = self.oid()
            found.append(SearchRange(start, end, include))
        return tuple(found)


def decode_payload(header: Header, payload: bytes) -> Pdu:
    """The PDU of `header` from its payload; ParseError for anything malformed."""
    read = _Reader(payload, bool(header.flags & _NETWORK_BYTE_ORDER))
    kind = header.type
    if header.flags & _NON_DEFAULT_CONTEXT and kind in _WITH_CONTEXT:
        read.octets()  # we register in the default context only; the master checks
    if kind == PduType.RESPONSE:
        sys_uptime, error, index = read.take("IHH")
        return Pdu(header, sys_uptime=sys_uptime, error=error, index=index, varbinds=read.varbinds())
    if kind in (PduType.GET, PduType.GET_NEXT):
        return Pdu(header, ranges=read.ranges())
    if kind == PduType.GET_BULK:
        non_repeaters, max_repetitions = read.take("HH")
        return Pdu(header, ranges=read.ranges(), non_repeaters=non_repeaters, max_repetitions=max_repetitions)
    if kind in (PduType.TEST_SET, PduType.NOTIFY):
        return Pdu(header, varbinds=read.varbinds())
    if kind == PduType.CLOSE:
        return Pdu(header, reason=read.take("Bxxx")[0])
    if kind in _KNOWN:
        return Pdu(header)  # CommitSet, UndoSet, CleanupSet, Ping ...: the header says it all
    raise ParseError(f"unknown PDU type {kind}")


_KNOWN = frozenset(int(t) for t in PduType)
_WITH_CONTEXT = frozenset(
    int(t) for t in (PduType.GET, PduType.GET_NEXT, PduType.GET_BULK, PduType.TEST_SET, PduType.NOTIFY, PduType.PING)
)


class Decoder:
    """Cuts a byte stream into PDUs; holds at most one PDU's bytes."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> Iterator[Pdu]:
        """The PDUs completed by `data`; ParseError (and the stream is done) on bad bytes."""
        buffer = self._buffer
        buffer += data
        while len(buffer) >= HEADER:
            version, kind, flags = buffer[0], buffer[1], buffer[2]
            if version != VERSION:
                raise ParseError(f"AgentX version {version}")
            order = "!" if flags & _NETWORK_BYTE_ORDER else "<"
            session_id, transaction_id, packet_id, length = struct.unpack_from(order + "IIII", buffer, 4)
            if length > MAX_PAYLOAD or length % 4:
                raise ParseError(f"a payload of {length} bytes")
            if len(buffer) < HEADER + length:
                return
            payload = bytes(buffer[HEADER : HEADER + length])
            del buffer[: HEADER + length]
            yield decode_payload(Header(kind, flags, session_id, transaction_id, packet_id), payload)
