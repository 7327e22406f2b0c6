"""A small netlink client: rtnetlink links, link events and `rtnl_link_stats64` (linux.md 1.1).

Messages are packed and parsed with `struct`; nothing outside the standard library and
attrs.  Parsing is bounded: every length is checked against the bytes that are really
there, an attribute whose length is wrong for its type is skipped, and a message or an
attribute list whose framing is broken is dropped from that point on; garbage from the
kernel (or a fuzzer) never raises anything but `NetlinkError` from a request.

A netlink socket belongs to the network namespace of the thread that created it, so a
client made inside a namespace (see ``tests/linux/netns.in_netns``) keeps talking to that
namespace from any thread.

Entry points: `RtnlClient` (`dump_links`, `get_link`, `link_stats64` and `dump_stats`, with
the link's carrier-down count on request), the module functions of the same names that use a
throw-away client, and `LinkMonitor`, which follows RTMGRP_LINK notifications for a selector.

The counter poll of many ports (`RtnlClient.dump_link_stats`, `dump_link_counters`) is one
dump for every interface, read with one call per datagram (the kernel fills dump datagrams
up to 32 KiB for a reader with a large buffer) and parsed in place: no `Message`, no dict
per interface, only the `rtnl_link_stats64` fields asked for (`Stats64Picker`, one
`struct` call).  RTM_GETSTATS with IFLA_STATS_LINK_64 costs the kernel and the parser a
fraction of RTM_GETLINK, whose messages carry some forty attributes (the AF_SPEC ones
alone are larger than the statistics); only RTM_GETLINK names the link and carries
IFLA_CARRIER_DOWN_COUNT.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import select
import socket
import struct
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Literal, TypeVar

import attrs

NETLINK_ROUTE = 0
NETLINK_GENERIC = 16
SOL_NETLINK = 270
NETLINK_CAP_ACK = 10
NETLINK_EXT_ACK = 11

NLMSG_NOOP, NLMSG_ERROR, NLMSG_DONE, NLMSG_OVERRUN = 1, 2, 3, 4
NLM_F_REQUEST, NLM_F_MULTI, NLM_F_ACK, NLM_F_DUMP_INTR = 0x1, 0x2, 0x4, 0x10
NLM_F_DUMP = 0x300
NLM_F_ACK_TLVS = 0x200
NLMSGERR_ATTR_MSG = 1
NLA_F_NESTED = 0x8000
NLA_TYPE_MASK = 0x3FFF

RTM_NEWLINK, RTM_DELLINK, RTM_GETLINK = 16, 17, 18
RTM_NEWSTATS, RTM_GETSTATS = 92, 94
RTMGRP_LINK = 0x1

IFLA_ADDRESS = 1
IFLA_IFNAME = 3
IFLA_MTU = 4
IFLA_OPERSTATE = 16
IFLA_LINKINFO = 18
IFLA_INFO_KIND = 1
IFLA_STATS64 = 23
IFLA_EXT_MASK = 29
IFLA_CARRIER_DOWN_COUNT = 48
IFLA_STATS_LINK_64 = 1
RTEXT_FILTER_SKIP_STATS = 1 << 3

IFF_UP = 0x1
IFF_LOWER_UP = 0x10000
ARPHRD_ETHER = 1
AF_UNSPEC = 0

_NLMSGHDR = struct.Struct("=IHHII")  # len, type, flags, seq, pid
_NLATTR = struct.Struct("=HH")  # len, type
_IFINFOMSG = struct.Struct("=BxHiII")  # family, type, index, flags, change
_IFSTATSMSG = struct.Struct("=BBHII")  # family, pad, pad, ifindex, filter_mask
_ERRNO = struct.Struct("=i")

#: `struct rtnl_link_stats64` in kernel order; a kernel sends a prefix of this (older) or more (newer)
STATS64_FIELDS = (
    "rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_errors", "tx_errors",
    "rx_dropped", "tx_dropped", "multicast", "collisions",
    "rx_length_errors", "rx_over_errors", "rx_crc_errors", "rx_frame_errors",
    "rx_fifo_errors", "rx_missed_errors",
    "tx_aborted_errors", "tx_carrier_errors", "tx_fifo_errors", "tx_heartbeat_errors",
    "tx_window_errors", "rx_compressed", "tx_compressed", "rx_nohandler", "rx_otherhost_dropped",
)  # fmt: skip

#: IF_OPER_* values of IFLA_OPERSTATE (RFC 2863 names)
OPERSTATES = ("unknown", "notpresent", "down", "lowerlayerdown", "testing", "dormant", "up")

_RECV_BUFFER = 64 * 1024  #: twice the largest dump datagram the kernel makes (32 KiB) unless one message is larger
_PEEK_TRUNC = int(socket.MSG_PEEK | socket.MSG_TRUNC)
_DUMP_TRIES = 3

T = TypeVar("T")
#: parses one reply message in place: (datagram, payload start, payload end) -> a result or None
ParseReply = Callable[[bytearray, int, int], T | None]


class NetlinkError(OSError):
    """The kernel refused a request (errno set), or the conversation broke down."""


class DumpInterrupted(NetlinkError):
    """The kernel flagged a dump as inconsistent (NLM_F_DUMP_INTR): the caller retries."""


# --------------------------------------------------------------------------- attributes


def align4(length: int) -> int:
    """`length` rounded up to the 4-octet netlink alignment."""
    return (length + 3) & ~3


def pack_attr(attr_type: int, payload: bytes) -> bytes:
    """One netlink attribute (type, length header, payload, padding)."""
    length = _NLATTR.size + len(payload)
    return _NLATTR.pack(length, attr_type) + payload + bytes(align4(length) - length)


def pack_nested(attr_type: int, *attributes: bytes) -> bytes:
    """A nested attribute holding already packed `attributes`."""
    return pack_attr(attr_type | NLA_F_NESTED, b"".join(attributes))


def pack_string(attr_type: int, value: str) -> bytes:
    """A NUL-terminated string attribute."""
    return pack_attr(attr_type, value.encode() + b"\0")


def pack_u32(attr_type: int, value: int) -> bytes:
    """A host-order u32 attribute."""
    return pack_attr(attr_type, struct.pack("=I", value))


def iter_attrs(data: bytes, start: int = 0, end: int | None = None) -> Iterator[tuple[int, bytes]]:
    """(type without flag bits, payload) for each attribute in ``data[start:end]``.

    Stops at the first attribute whose length is impossible: without a valid length the
    next attribute cannot be found.
    """
    end = len(data) if end is None else min(end, len(data))
    offset = start
    while offset + _NLATTR.size <= end:
        length, attr_type = _NLATTR.unpack_from(data, offset)
        if length < _NLATTR.size or offset + length > end:
            return
        yield attr_type & NLA_TYPE_MASK, data[offset + _NLATTR.size : offset + length]
        offset += align4(length)


def parse_attrs(data: bytes, start: int = 0, wanted: frozenset[int] | None = None) -> dict[int, bytes]:
    """Attributes by type, only the `wanted` types if given.

    Without `wanted` the last attribute of a type wins; with it the first one does and the
    walk stops as soon as every wanted type was seen, so picking two attributes out of a
    link message (about forty) stays cheap.  Same bounds as `iter_attrs`.
    """
    if wanted is None:
        return dict(iter_attrs(data, start))
    found: dict[int, bytes] = {}
    end = len(data)
    offset = start
    unpack = _NLATTR.unpack_from
    while offset + 4 <= end:
        length, attr_type = unpack(data, offset)
        if length < 4 or offset + length > end:
            break
        attr_type &= NLA_TYPE_MASK
        if attr_type in wanted and attr_type not in found:
            found[attr_type] = data[offset + 4 : offset + length]
            if len(found) == len(wanted):
                break
        offset += (length + 3) & ~3
    return found


def attr_uint(payload: bytes | None, size: int) -> int | None:
    """An unsigned host-order integer of exactly `size` octets, else None."""
    if payload is None or len(payload) != size:
        return None
    return int.from_bytes(payload, sys.byteorder)


def attr_str(payload: bytes | None) -> str | None:
    """A NUL-terminated (or not) string attribute, else None."""
    if not payload:
        return None
    return payload.split(b"\0", 1)[0].decode(errors="replace") or None


# --------------------------------------------------------------------------- messages


@attrs.frozen
class Message:
    """One netlink message: header fields and the payload after the header."""

    type: int
    flags: int
    seq: int
    pid: int
    payload: bytes


def pack_message(msg_type: int, flags: int, seq: int, payload: bytes) -> bytes:
    """A netlink message with its header."""
    return _NLMSGHDR.pack(_NLMSGHDR.size + len(payload), msg_type, flags, seq, 0) + payload


def parse_messages(data: bytes) -> list[Message]:
    """The messages of one datagram; a broken header ends the list."""
    messages: list[Message] = []
    offset = 0
    while offset + _NLMSGHDR.size <= len(data):
        length, msg_type, flags, seq, pid = _NLMSGHDR.unpack_from(data, offset)
        if length < _NLMSGHDR.size or offset + length > len(data):
            break
        messages.append(Message(msg_type, flags, seq, pid, data[offset + _NLMSGHDR.size : offset + length]))
        offset += align4(length)
    return messages


def error_of(message: Message) -> NetlinkError | None:
    """The error an NLMSG_ERROR (or a failed NLMSG_DONE) carries; None for an ACK."""
    if len(message.payload) < _ERRNO.size:
        return NetlinkError(errno.EPROTO, "truncated netlink error message")
    (code,) = _ERRNO.unpack_from(message.payload)
    if code == 0:
        return None
    code = -code
    text = os.strerror(code)
    if message.type == NLMSG_ERROR and message.flags & NLM_F_ACK_TLVS:
        # with NETLINK_CAP_ACK only the request's header follows the error code
        extack = attr_str(parse_attrs(message.payload, _ERRNO.size + _NLMSGHDR.size).get(NLMSGERR_ATTR_MSG))
        if extack:
            text = f"{text}: {extack}"
    return NetlinkError(code, text)


@contextlib.contextmanager
def _as_netlink_errors() -> Iterator[None]:
    """A conversation's failures as `NetlinkError` (a timeout is ETIMEDOUT)."""
    try:
        yield
    except TimeoutError as exc:
        raise NetlinkError(errno.ETIMEDOUT, "no answer from the kernel") from exc
    except NetlinkError:
        raise
    except OSError as exc:
        raise NetlinkError(exc.errno or errno.EIO, exc.strerror or str(exc)) from exc


class NetlinkSocket:
    """An AF_NETLINK socket that sends requests and collects their replies."""

    def __init__(self, protocol: int, groups: int = 0, *, timeout: float | None = 5.0, rcvbuf: int = 0) -> None:
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, protocol)
        try:
            if rcvbuf:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            for option in (NETLINK_CAP_ACK, NETLINK_EXT_ACK):
                with contextlib.suppress(OSError):  # older kernels: plain errors
                    sock.setsockopt(SOL_NETLINK, option, 1)
            sock.bind((0, groups))
            sock.settimeout(timeout)
        except BaseException:
            sock.close()
            raise
        self._sock = sock
        self._seq = 0
        self._buffer = bytearray(_RECV_BUFFER)

    def fileno(self) -> int:
        """The descriptor, for a selector."""
        return self._sock.fileno()

    def close(self) -> None:
        """Release the socket."""
        self._sock.close()

    def __enter__(self) -> NetlinkSocket:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def send(self, msg_type: int, flags: int, payload: bytes) -> int:
        """Send one message; returns its sequence number."""
        self._seq = self._seq % 0x7FFFFFFF + 1
        self._sock.send(pack_message(msg_type, flags, self._seq, payload))
        return self._seq

    def receive(self) -> list[Message]:
        """The messages of the next datagram (blocks unless the socket is non-blocking).

        The datagram is peeked first so that one larger than the buffer grows the buffer
        instead of being cut.
        """
        size = self._sock.recv_into(self._buffer, len(self._buffer), _PEEK_TRUNC)
        if size > len(self._buffer):
            self._buffer = bytearray(align4(size))
        size = self._sock.recv_into(self._buffer, len(self._buffer))
        return parse_messages(bytes(memoryview(self._buffer)[:size]))

    def request(self, msg_type: int, payload: bytes, *, dump: bool = False, ack: bool = True) -> list[Message]:
        """Send a request and return its replies (all parts of a dump), minus the ACK.

        ``ack=False`` suits a GET that the kernel answers with exactly one message (or an
        error): the reply ends the request and no separate ACK datagram is read.
        """
        flags = NLM_F_REQUEST | (NLM_F_DUMP if dump else NLM_F_ACK if ack else 0)
        with _as_netlink_errors():
            seq = self.send(msg_type, flags, payload)
            return self._replies(seq, single=not dump and not ack)

    def dump(self, msg_type: int, payload: bytes) -> list[Message]:
        """A dump request, repeated (a few times) while the kernel reports it inconsistent."""
        for attempt in range(_DUMP_TRIES):
            try:
                return self.request(msg_type, payload, dump=True)
            except DumpInterrupted:
                if attempt == _DUMP_TRIES - 1:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def dump_parsed(self, msg_type: int, payload: bytes, reply_type: int, parse: ParseReply[T]) -> list[T]:
        """A dump whose `reply_type` messages go to `parse` in place (the payload is valid
        only during the call): what it returns, None left out.  Each datagram is read with
        one call; one larger than the buffer grows it and the dump is asked again, as it
        is (a few times) while the kernel reports it inconsistent."""
        for attempt in range(_DUMP_TRIES):
            try:
                with _as_netlink_errors():
                    seq = self.send(msg_type, NLM_F_REQUEST | NLM_F_DUMP, payload)
                    return self._parsed_replies(seq, reply_type, parse)
            except DumpInterrupted:
                if attempt == _DUMP_TRIES - 1:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _parsed_replies(self, seq: int, reply_type: int, parse: ParseReply[T]) -> list[T]:
        results: list[T] = []
        interrupted = False
        unpack = _NLMSGHDR.unpack_from
        while True:
            buffer = self._buffer
            size = self._sock.recv_into(buffer, len(buffer), socket.MSG_TRUNC)
            if size > len(buffer):
                self._after_cut(size)
                raise DumpInterrupted(errno.EMSGSIZE, "a dump datagram larger than the buffer")
            offset = 0
            while offset + 16 <= size:
                length, msg_type, flags, msg_seq, _pid = unpack(buffer, offset)
                if length < 16 or offset + length > size:
                    break
                if msg_seq == seq:
                    if msg_type == reply_type:
                        interrupted |= bool(flags & NLM_F_DUMP_INTR)
                        result = parse(buffer, offset + 16, offset + length)
                        if result is not None:
                            results.append(result)
                    elif msg_type in (NLMSG_ERROR, NLMSG_DONE):
                        end = Message(msg_type, flags, msg_seq, 0, bytes(buffer[offset + 16 : offset + length]))
                        error = error_of(end) if len(end.payload) >= _ERRNO.size else None
                        if error is not None:
                            raise error
                        if interrupted:
                            raise DumpInterrupted(errno.EAGAIN, "dump interrupted by a concurrent change")
                        return results
                offset += (length + 3) & ~3

    def _after_cut(self, size: int) -> None:
        """A datagram of `size` octets was cut (its messages, perhaps the dump's end, are
        lost): grow the buffer and read away what the dump still queues, so that the
        kernel has ended it before it is asked again (it runs one dump at a time).  The
        kernel queues a dump's next datagram while the last one is read, so an empty
        queue means the dump has ended."""
        self._buffer = bytearray(align4(size))
        ready = select.poll()  # not select(): a daemon of a thousand ports has descriptors over 1,023
        ready.register(self._sock, select.POLLIN)
        while ready.poll(0):
            size = self._sock.recv_into(self._buffer, len(self._buffer), socket.MSG_TRUNC)
            if size > len(self._buffer):
                self._buffer = bytearray(align4(size))

    def _replies(self, seq: int, *, single: bool = False) -> list[Message]:
        replies: list[Message] = []
        interrupted = False
        while True:
            for message in self.receive():
                if message.seq != seq:
                    continue  # a stray reply to an abandoned request
                if message.type in (NLMSG_ERROR, NLMSG_DONE):
                    # a request ends with its ACK (an error of 0) or, for a dump, with DONE
                    error = error_of(message) if len(message.payload) >= _ERRNO.size else None
                    if error is not None:
                        raise error
                    if interrupted:
                        raise DumpInterrupted(errno.EAGAIN, "dump interrupted by a concurrent change")
                    return replies
                if message.type in (NLMSG_NOOP, NLMSG_OVERRUN):
                    continue
                interrupted |= bool(message.flags & NLM_F_DUMP_INTR)
                replies.append(message)
                if single:
                    return replies


# --------------------------------------------------------------------------- links


@attrs.frozen
class Link:
    """One network interface as rtnetlink describes it (speed is not here: see ethtool.py)."""

    ifindex: int
    name: str
    mac: str | None  #: IFLA_ADDRESS as aa:bb:..., None when the device has none
    admin_up: bool  #: IFF_UP
    carrier: bool  #: IFF_LOWER_UP, or operstate "up"
    operstate: str  #: one of `OPERSTATES`
    arphrd: int  #: device type (ARPHRD_ETHER = 1 for Ethernet and veth)
    kind: str | None  #: IFLA_INFO_KIND ("veth", "bridge", ...), None for physical devices
    mtu: int | None
    flags: int  #: the raw IFF_* flags

    @property
    def is_ethernet(self) -> bool:
        """True for Ethernet-type devices (ARPHRD_ETHER)."""
        return self.arphrd == ARPHRD_ETHER


_LINK_ATTRS = frozenset({IFLA_IFNAME, IFLA_ADDRESS, IFLA_OPERSTATE, IFLA_LINKINFO, IFLA_MTU})
_STATS_ATTRS = frozenset({IFLA_IFNAME, IFLA_STATS64})
# the kernel puts IFLA_CARRIER_DOWN_COUNT before IFLA_STATS64: asking for it walks no further
_STATS_CARRIER_ATTRS = _STATS_ATTRS | {IFLA_CARRIER_DOWN_COUNT}
#: the key `RtnlClient.link_stats64(..., with_carrier=True)` adds for IFLA_CARRIER_DOWN_COUNT
CARRIER_DOWN_COUNT = "carrier_down_count"


def parse_link(payload: bytes) -> tuple[int, Link] | None:
    """(ifinfomsg family, Link) of an RTM_NEWLINK/RTM_DELLINK payload; None if malformed."""
    if len(payload) < _IFINFOMSG.size:
        return None
    family, arphrd, index, flags, _change = _IFINFOMSG.unpack_from(payload)
    attrs_ = parse_attrs(payload, _IFINFOMSG.size, _LINK_ATTRS)
    name = attr_str(attrs_.get(IFLA_IFNAME))
    if name is None or index <= 0:
        return None
    address = attrs_.get(IFLA_ADDRESS)
    oper_code = attr_uint(attrs_.get(IFLA_OPERSTATE), 1)
    operstate = OPERSTATES[oper_code] if oper_code is not None and oper_code < len(OPERSTATES) else "unknown"
    link = Link(
        ifindex=index,
        name=name,
        mac=address.hex(":") if address else None,
        admin_up=bool(flags & IFF_UP),
        carrier=bool(flags & IFF_LOWER_UP) or operstate == "up",
        operstate=operstate,
        arphrd=arphrd,
        kind=_link_kind(attrs_.get(IFLA_LINKINFO)),
        mtu=attr_uint(attrs_.get(IFLA_MTU), 4),
        flags=flags,
    )
    return family, link


def _link_kind(linkinfo: bytes | None) -> str | None:
    if linkinfo is None:
        return None
    return attr_str(parse_attrs(linkinfo).get(IFLA_INFO_KIND))


def parse_stats64(payload: bytes | None) -> dict[str, int] | None:
    """`rtnl_link_stats64` by field name; None unless the payload is whole u64s."""
    if payload is None or not payload or len(payload) % 8:
        return None
    count = min(len(payload) // 8, len(STATS64_FIELDS))
    values = struct.unpack_from(f"={count}Q", payload)
    return dict(zip(STATS64_FIELDS[:count], values, strict=True))


def _ifinfomsg(index: int = 0) -> bytes:
    return _IFINFOMSG.pack(AF_UNSPEC, 0, index, 0, 0)


# --------------------------------------------------------------------------- counter dumps

#: picked `rtnl_link_stats64` values, in the order asked (None: not in the kernel's struct)
Picked = tuple[int | None, ...]


class Stats64Picker:
    """Chosen fields of `rtnl_link_stats64`, read with one `struct` call.

    `pick` returns them in the order asked; a field past the end of what the kernel sent
    (an older kernel sends fewer) is None, and a payload that is not whole u64s gives None.
    """

    def __init__(self, fields: Sequence[str]) -> None:
        unknown = sorted(set(fields) - set(STATS64_FIELDS))
        if unknown or not fields:
            raise ValueError(f"not rtnl_link_stats64 fields: {unknown or 'none asked'}")
        self.fields = tuple(fields)
        self._indices = tuple(STATS64_FIELDS.index(name) for name in fields)
        order = sorted(set(self._indices))
        layout, at = "=", 0
        for index in order:
            layout += f"{(index - at) * 8}xQ" if index > at else "Q"
            at = index + 1
        self._struct = struct.Struct(layout)  # up to the last field asked, skipping the others
        self._positions = tuple(order.index(index) for index in self._indices)
        self._in_order = self._positions == tuple(range(len(order))) and len(order) == len(self._indices)

    def pick(self, data: bytes | bytearray, start: int, length: int) -> Picked | None:
        """The fields of the `length` octets of statistics at ``data[start:]``."""
        if length <= 0 or length % 8:
            return None
        if length >= self._struct.size:
            values = self._struct.unpack_from(data, start)
            return values if self._in_order else tuple(values[at] for at in self._positions)
        count = length // 8
        return tuple(
            int.from_bytes(data[start + 8 * index : start + 8 * index + 8], sys.byteorder) if index < count else None
            for index in self._indices
        )


_IFSTATS_INDEX = struct.Struct("=4xI")  # ifstatsmsg's ifindex


def pick_link_stats(picker: Stats64Picker, data: bytearray, start: int, end: int) -> tuple[int, Picked] | None:
    """(ifindex, picked IFLA_STATS_LINK_64 values) of the RTM_NEWSTATS payload at
    ``data[start:end]``; None when it has no index or no such statistics."""
    if end - start < _IFSTATSMSG.size:
        return None
    (index,) = _IFSTATS_INDEX.unpack_from(data, start)
    offset = start + _IFSTATSMSG.size
    while offset + 4 <= end:  # the kernel sends only what the filter asked: the first is it
        length, attr_type = _NLATTR.unpack_from(data, offset)
        if length < 4 or offset + length > end:
            return None
        if attr_type & NLA_TYPE_MASK == IFLA_STATS_LINK_64:
            values = picker.pick(data, offset + 4, length - 4)
            return None if values is None or index <= 0 else (index, values)
        offset += (length + 3) & ~3
    return None


#: one interface in a counter dump of RTM_GETLINK: (name, picked IFLA_STATS64, IFLA_CARRIER_DOWN_COUNT)
LinkCounters = tuple[str, Picked, int | None]
_IFINFO_INDEX = struct.Struct("=4xi")  # ifinfomsg's ifindex


def pick_link_counters(picker: Stats64Picker, data: bytearray, start: int, end: int) -> tuple[int, LinkCounters] | None:
    """(ifindex, `LinkCounters`) of the RTM_NEWLINK payload at ``data[start:end]``; None
    without an index, a name or IFLA_STATS64.  The attribute walk stops once the three
    are found (the kernel puts them before the large ones)."""
    if end - start < _IFINFOMSG.size:
        return None
    (index,) = _IFINFO_INDEX.unpack_from(data, start)
    name: str | None = None
    values: Picked | None = None
    carrier_down: int | None = None
    found = 0
    offset = start + _IFINFOMSG.size
    unpack = _NLATTR.unpack_from
    while offset + 4 <= end and found < 3:
        length, attr_type = unpack(data, offset)
        if length < 4 or offset + length > end:
            break
        attr_type &= NLA_TYPE_MASK
        if attr_type == IFLA_STATS64 and values is None:
            values = picker.pick(data, offset + 4, length - 4)
            found += 1
        elif attr_type == IFLA_IFNAME and name is None:
            name = attr_str(bytes(data[offset + 4 : offset + length]))
            found += 1
        elif attr_type == IFLA_CARRIER_DOWN_COUNT and carrier_down is None:
            carrier_down = attr_uint(bytes(data[offset + 4 : offset + length]), 4)
            found += 1
        offset += (length + 3) & ~3
    if index <= 0 or name is None or values is None:
        return None
    return index, (name, values, carrier_down)


class RtnlClient:
    """Requests to NETLINK_ROUTE over one socket (made in the caller's network namespace)."""

    def __init__(self, *, timeout: float | None = 5.0) -> None:
        self._sock = NetlinkSocket(NETLINK_ROUTE, timeout=timeout)

    def close(self) -> None:
        """Release the socket."""
        self._sock.close()

    def __enter__(self) -> RtnlClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def dump_links(self) -> list[Link]:
        """Every interface of the namespace (statistics left out of the dump)."""
        payload = _ifinfomsg() + pack_u32(IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS)
        return [link for _family, link in self._links(self._sock.dump(RTM_GETLINK, payload))]

    def get_link(self, ifname: str) -> Link:
        """One interface by name (NetlinkError ENODEV when there is none)."""
        links = list(self._links(self._sock.request(RTM_GETLINK, self._by_name(ifname), ack=False)))
        if not links:
            raise NetlinkError(errno.ENODEV, f"no link in the reply for {ifname}")
        return links[0][1]

    def link_stats64(self, ifname: str, *, with_carrier: bool = False) -> dict[str, int]:
        """IFLA_STATS64 of one interface (NetlinkError ENODEV when there is none).

        `with_carrier` adds `CARRIER_DOWN_COUNT` (IFLA_CARRIER_DOWN_COUNT, kernel >= 4.16)
        when the kernel sends it.
        """
        for message in self._sock.request(RTM_GETLINK, self._by_name(ifname), ack=False):
            stats = self._stats_of_link(message, with_carrier)
            if stats is not None:
                return stats[1]
        raise NetlinkError(errno.ENODATA, f"no IFLA_STATS64 for {ifname}")

    def dump_stats(self, *, with_carrier: bool = False) -> dict[str, dict[str, int]]:
        """IFLA_STATS64 of every interface, by name, in one RTM_GETLINK dump (`with_carrier`: as above)."""
        stats: dict[str, dict[str, int]] = {}
        for message in self._sock.dump(RTM_GETLINK, _ifinfomsg()):
            entry = self._stats_of_link(message, with_carrier)
            if entry is not None:
                stats[entry[0]] = entry[1]
        return stats

    def dump_stats_by_index(self) -> dict[int, dict[str, int]]:
        """IFLA_STATS_LINK_64 of every interface, by ifindex (RTM_GETSTATS: no names, cheaper)."""
        payload = _IFSTATSMSG.pack(AF_UNSPEC, 0, 0, 0, 1 << (IFLA_STATS_LINK_64 - 1))
        stats: dict[int, dict[str, int]] = {}
        for message in self._sock.dump(RTM_GETSTATS, payload):
            if message.type != RTM_NEWSTATS or len(message.payload) < _IFSTATSMSG.size:
                continue
            _family, _pad1, _pad2, index, _mask = _IFSTATSMSG.unpack_from(message.payload)
            values = parse_stats64(parse_attrs(message.payload, _IFSTATSMSG.size).get(IFLA_STATS_LINK_64))
            if values is not None:
                stats[index] = values
        return stats

    def dump_link_stats(self, picker: Stats64Picker) -> dict[int, Picked]:
        """`picker`'s fields of IFLA_STATS_LINK_64 of every interface, by ifindex: one
        RTM_GETSTATS dump parsed in place (no names, no carrier-down count)."""
        payload = _IFSTATSMSG.pack(AF_UNSPEC, 0, 0, 0, 1 << (IFLA_STATS_LINK_64 - 1))
        parse = functools.partial(pick_link_stats, picker)
        return dict(self._sock.dump_parsed(RTM_GETSTATS, payload, RTM_NEWSTATS, parse))

    def dump_link_counters(self, picker: Stats64Picker) -> dict[int, LinkCounters]:
        """`picker`'s fields of IFLA_STATS64, the name and IFLA_CARRIER_DOWN_COUNT of every
        interface, by ifindex: one RTM_GETLINK dump parsed in place."""
        parse = functools.partial(pick_link_counters, picker)
        return dict(self._sock.dump_parsed(RTM_GETLINK, _ifinfomsg(), RTM_NEWLINK, parse))

    @staticmethod
    def _by_name(ifname: str) -> bytes:
        return _ifinfomsg() + pack_string(IFLA_IFNAME, ifname)

    @staticmethod
    def _links(messages: list[Message]) -> Iterator[tuple[int, Link]]:
        for message in messages:
            if message.type == RTM_NEWLINK:
                parsed = parse_link(message.payload)
                if parsed is not None and parsed[0] == AF_UNSPEC:
                    yield parsed

    @staticmethod
    def _stats_of_link(message: Message, with_carrier: bool = False) -> tuple[str, dict[str, int]] | None:
        if message.type != RTM_NEWLINK or len(message.payload) < _IFINFOMSG.size:
            return None
        wanted = _STATS_CARRIER_ATTRS if with_carrier else _STATS_ATTRS
        attributes = parse_attrs(message.payload, _IFINFOMSG.size, wanted)
        name = attr_str(attributes.get(IFLA_IFNAME))
        stats = parse_stats64(attributes.get(IFLA_STATS64))
        if name is None or stats is None:
            return None
        if with_carrier:
            carrier_down = attr_uint(attributes.get(IFLA_CARRIER_DOWN_COUNT), 4)
            if carrier_down is not None:
                stats[CARRIER_DOWN_COUNT] = carrier_down
        return name, stats


def dump_links() -> list[Link]:
    """Every interface of the calling thread's network namespace."""
    with RtnlClient() as client:
        return client.dump_links()


def dump_stats() -> dict[str, dict[str, int]]:
    """IFLA_STATS64 of every interface of the calling thread's namespace, by name."""
    with RtnlClient() as client:
        return client.dump_stats()


def link_stats64(ifname: str) -> dict[str, int]:
    """IFLA_STATS64 of one interface of the calling thread's namespace."""
    with RtnlClient() as client:
        return client.link_stats64(ifname)


# --------------------------------------------------------------------------- events


@attrs.frozen
class LinkEvent:
    """A link appeared, changed (a rename included) or went away.

    `link` is the new state (None for "removed"); `previous` the state before a change.
    """

    kind: Literal["added", "changed", "removed"]
    ifindex: int
    name: str
    link: Link | None = None
    previous: Link | None = None


class LinkMonitor:
    """Link notifications (RTMGRP_LINK) of the namespace it was created in, for a selector.

    The monitor keeps the table of known links: a notification that changes nothing the
    `Link` shows (the kernel sends several per change, and statistics updates) yields no
    event.  Notifications about bridge ports (family AF_BRIDGE) are not link changes and
    are ignored.  When the kernel drops notifications (ENOBUFS) the monitor dumps the
    links again and reports the differences.
    """

    def __init__(self, *, rcvbuf: int = 1 << 20) -> None:
        self._events = NetlinkSocket(NETLINK_ROUTE, RTMGRP_LINK, timeout=0.0, rcvbuf=rcvbuf)
        self.resyncs = 0  #: times the kernel dropped notifications and the links were dumped again
        try:
            self._client = RtnlClient()
            self._links = {link.ifindex: link for link in self._client.dump_links()}  # after subscribing
        except BaseException:
            self._events.close()
            raise

    @property
    def links(self) -> dict[int, Link]:
        """The current links by ifindex (a copy)."""
        return dict(self._links)

    def fileno(self) -> int:
        """The notification socket, readable when events are waiting."""
        return self._events.fileno()

    def close(self) -> None:
        """Release both sockets."""
        self._events.close()
        self._client.close()

    def __enter__(self) -> LinkMonitor:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def read_events(self, max_datagrams: int = 256) -> list[LinkEvent]:
        """The events waiting now (never blocks); at most `max_datagrams` datagrams are read."""
        events: list[LinkEvent] = []
        for _ in range(max_datagrams):
            try:
                messages = self._events.receive()
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno != errno.ENOBUFS:
                    raise
                self.resyncs += 1
                events += self.resync()
                continue
            for message in messages:
                events += self._apply(message)
        return events

    def resync(self) -> list[LinkEvent]:
        """Dump the links again and report what differs from the table.

        Notifications already queued are dropped first: the dump is newer than they are.
        """
        self._discard_queued()
        current = {link.ifindex: link for link in self._client.dump_links()}
        events = [
            LinkEvent("removed", index, link.name, previous=link)
            for index, link in self._links.items()
            if index not in current
        ]
        for link in current.values():
            events += self._update(link)
        self._links = current
        return events

    def _discard_queued(self, limit: int = 4096) -> None:
        for _ in range(limit):
            try:
                self._events.receive()
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno != errno.ENOBUFS:
                    raise

    def _apply(self, message: Message) -> list[LinkEvent]:
        if message.type not in (RTM_NEWLINK, RTM_DELLINK):
            return []
        parsed = parse_link(message.payload)
        if parsed is None or parsed[0] != AF_UNSPEC:
            return []
        link = parsed[1]
        if message.type == RTM_DELLINK:
            previous = self._links.pop(link.ifindex, None)
            return [LinkEvent("removed", link.ifindex, link.name, previous=previous)]
        events = self._update(link)
        self._links[link.ifindex] = link
        return events

    def _update(self, link: Link) -> list[LinkEvent]:
        previous = self._links.get(link.ifindex)
        if previous is None:
            return [LinkEvent("added", link.ifindex, link.name, link)]
        if previous != link:
            return [LinkEvent("changed", link.ifindex, link.name, link, previous)]
        return []
