"""Fast decode and encode between frames and the typed model.

The struct formats come from the scapy layers, so there is one definition of every
field: their field lists are generated ahead of time into `pdu.layer_fields` (checked
against the layers by tests/pdu/test_layer_fields.py) and built into struct functions
here (`pdu.layout`), so that decoding and encoding never import scapy.  Decoding is
strict about framing and tolerant about padding: frames are taken as Linux hands them (no
FCS, possibly shorter than 60 octets, with or without an End-of-TLV marker, any trailing
padding), every length is checked, and `DecodeError` is the only exception that can
escape.  The work is linear in the frame length.  A TLV after the End marker is padding
and is not looked at.  The hot objects are built without attrs' generated ``__init__``
where that is shown, at import, to build the same objects (`fast_constructor`), and
Information TLVs, which recur from frame to frame, are shared through a bounded memo (as
reserved TLVs are).

Encoding pads to the 60-octet minimum.  An End marker is written only where it is not
already implied: a PDU shorter than 60 octets gets it from the zero padding, one of
exactly 60 octets needs none (the end of the frame ends the TLVs), a longer one carries
it explicitly when it fits within the size limit.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable
from typing import Any, TypeVar

import attrs

from pdu import layer_fields as F
from pdu.enums import (
    FCS_LENGTH,
    HEADER_LENGTH,
    INDICATION_BIT,
    MAX_OAMPDU_SIZE,
    MAX_VARIABLE_WIDTH,
    MIN_FRAME_LENGTH,
    MIN_OAMPDU_SIZE,
    MULTI_VALUE_BRANCHES,
    OAM_SUBTYPE,
    SLOW_PROTOCOLS_ETHERTYPE,
    SLOW_PROTOCOLS_MULTICAST,
    VLAN_ETHERTYPES,
    Code,
    EventTlvType,
    InfoTlvType,
)
from pdu.errors import DecodeError, DecodeReason, EncodeError
from pdu.layout import Layout, build_layout
from pdu.model import (
    EventNotification,
    EventTlvs,
    Information,
    InformationTlvs,
    InfoTlv,
    LinkEventTlv,
    LoopbackControl,
    Oampdu,
    OrgSpecificPdu,
    OrgSpecificTlv,
    UnknownTlv,
    UnsupportedPdu,
    VariableContainer,
    VariableDescriptor,
    VariableRequest,
    VariableResponse,
)

MAX_FRAME_LENGTH = MAX_OAMPDU_SIZE - FCS_LENGTH  #: 1514 octets as a raw socket sees it

_HEADER = build_layout(F.HEADER)
_INFO_TLV = build_layout(F.INFO_TLV)
_LINK_EVENT: dict[int, Layout] = {t: build_layout(fields) for t, fields in F.LINK_EVENTS.items()}
_LINK_EVENT_TYPES = tuple(_LINK_EVENT)
_ORG_TLV_HEAD = build_layout(F.ORG_TLV_HEAD)  # type, length, OUI
_SEQUENCE = build_layout(F.SEQUENCE)
_DESCRIPTOR = build_layout(F.DESCRIPTOR)  # also the head of a container
_COMMAND = build_layout(F.COMMAND)
_OUI = build_layout(F.OUI)
_DST = SLOW_PROTOCOLS_MULTICAST
# plain ints for the per-frame loops (enum attribute lookups cost more than the compare)
_INFO_TYPES = (int(InfoTlvType.LOCAL), int(InfoTlvType.REMOTE))
_ORG = int(InfoTlvType.ORGANIZATION_SPECIFIC)
_INFO_SIZE = _INFO_TLV.size


def _check_model(layout: Layout, model: type, skip: tuple[str, ...] = ("length",)) -> None:
    """The model's fields are the layer's fields in the same order (checked at import)."""
    expected = tuple(name for name in layout.names if name not in skip)
    actual = tuple(a.name for a in model.__attrs_attrs__)  # type: ignore[attr-defined]
    if actual != expected:
        raise TypeError(f"{model.__name__} fields {actual} do not match the layer {expected}")


_check_model(_INFO_TLV, InfoTlv)
for _layout in _LINK_EVENT.values():
    _check_model(_layout, LinkEventTlv)
_check_model(_DESCRIPTOR, VariableDescriptor)

#: per standard link event TLV type, the width in bits of each value field, from the layers
EVENT_TLV_FIELD_BITS: dict[EventTlvType, dict[str, int]] = {
    EventTlvType(tlv_type): dict(zip(layout.names, layout.bits, strict=True))
    for tlv_type, layout in _LINK_EVENT.items()
}


# -- decode -------------------------------------------------------------------------------

_T = TypeVar("_T")


def fast_constructor(cls: type[_T], sample: tuple[Any, ...]) -> Callable[..., _T]:
    """``cls(*values)`` (every field given, in order) without attrs' generated ``__init__``.

    A frozen class's ``__init__`` sets each field through ``object.__setattr__`` and costs
    as much as the rest of decoding a TLV; this sets the slots through their descriptors,
    with the fields' converters, and clears the cached hash, as ``__init__`` does.  It is
    used only if it builds an object equal to ``cls(*sample)``, with the same hash and
    repr (checked here, at import, whatever the attrs version); otherwise ``cls`` is.
    """
    try:
        fields = attrs.fields(cls)  # type: ignore[arg-type]
        names = [field.name for field in fields]
        slots = set(getattr(cls, "__slots__", ())) - {"__weakref__"}
        if slots - {*names, "_attrs_cached_hash"} or any(f.validator or not f.init for f in fields):
            return cls
        namespace: dict[str, Any] = {"new": object.__new__, "cls": cls}
        lines = [f"def build({', '.join(names)}):", "    obj = new(cls)"]
        for name, field in zip(names, fields, strict=True):
            namespace[f"set_{name}"] = getattr(cls, name).__set__
            value = name
            if field.converter is not None:
                namespace[f"convert_{name}"] = field.converter
                value = f"convert_{name}({name})"
            lines.append(f"    set_{name}(obj, {value})")
        if "_attrs_cached_hash" in slots:
            namespace["set_hash"] = cls._attrs_cached_hash.__set__  # type: ignore[attr-defined]
            lines.append("    set_hash(obj, None)")
        exec("\n".join([*lines, "    return obj"]), namespace)  # built from the field names only
        build: Callable[..., _T] = namespace["build"]
        made, expected = build(*sample), cls(*sample)
        if made == expected and hash(made) == hash(expected) and repr(made) == repr(expected):
            return build
    except Exception:  # any surprise in attrs' internals: the plain constructor
        return cls
    return cls


_SRC = "02:00:00:00:00:01"
_new_info_tlv = fast_constructor(InfoTlv, (1, 1, 2, 0, 0, 0, 0x0D, 0, 1500, 0x001122, 1))
_new_link_event = fast_constructor(LinkEventTlv, (1, 2, 3, 4, 5, 6, 7))
_new_information = fast_constructor(Information, (_SRC, 0x50, ()))
_new_event_notification = fast_constructor(EventNotification, (_SRC, 0x50, 1, ()))
# read straight into the model (the length octet is checked, not stored)
_read_info_tlv = _INFO_TLV.reader(_new_info_tlv, skip=("length",))
#: per standard link event TLV type: its size and its reader
_LINK_EVENT_READERS = {
    tlv_type: (layout.size, layout.reader(_new_link_event, skip=("length",)))
    for tlv_type, layout in _LINK_EVENT.items()
}


def decode(frame: bytes) -> Oampdu:
    """Decode one Ethernet frame (no FCS) into the model, or raise `DecodeError`."""
    n = len(frame)
    if n < 14:
        raise DecodeError(DecodeReason.SHORTER_THAN_HEADER, n, f"{n} octets")
    ethertype = frame[12] << 8 | frame[13]
    if ethertype != SLOW_PROTOCOLS_ETHERTYPE:
        if _tagged_slow_frame(frame):
            raise DecodeError(DecodeReason.VLAN_TAGGED, 12)
        raise DecodeError(DecodeReason.WRONG_ETHERTYPE, 12, f"{ethertype:#06x}")
    if n > 14 and frame[14] != OAM_SUBTYPE:
        raise DecodeError(DecodeReason.WRONG_SUBTYPE, 14, f"{frame[14]}")
    if frame[:6] != _DST:
        raise DecodeError(DecodeReason.WRONG_DESTINATION, 0, frame[:6].hex(":"))
    if n < HEADER_LENGTH:
        raise DecodeError(DecodeReason.SHORTER_THAN_HEADER, n, f"{n} octets")
    if n > MAX_FRAME_LENGTH:
        raise DecodeError(DecodeReason.TOO_LONG, MAX_FRAME_LENGTH, f"{n} octets")
    _, src, _, _, flags, code = _HEADER.unpack_from(frame, 0)
    body = _BODY_DECODERS.get(code)
    if body is None:
        return UnsupportedPdu(src.hex(":"), flags, code, frame[HEADER_LENGTH:].rstrip(b"\0"))
    return body(frame, src.hex(":"), flags)


def _tagged_slow_frame(frame: bytes) -> bool:
    """A Slow Protocols frame behind one or two VLAN tags (802.1Q, QinQ)."""
    offset = 12
    while offset <= 16 and frame[offset : offset + 2] in _VLAN_TAGS:
        offset += 4
        if frame[offset : offset + 2] == b"\x88\x09":
            return True
    return False


_VLAN_TAGS = frozenset(t.to_bytes(2, "big") for t in VLAN_ETHERTYPES)
_UNKNOWN_TLVS: dict[bytes, UnknownTlv] = {}  # memo: a flood of small TLVs costs lookups
# memo: an Information TLV recurs (a peer's Local TLV in every frame, echoed as the other's
# Remote TLV), and building the frozen object costs ten times the lookup
_INFO_TLVS: dict[bytes, InfoTlv] = {}
_MEMO_SIZE = 4096


def _unknown_tlv(frame: bytes, offset: int, length: int) -> UnknownTlv:
    raw = frame[offset : offset + length]
    tlv = _UNKNOWN_TLVS.get(raw)
    if tlv is None:
        if len(_UNKNOWN_TLVS) >= _MEMO_SIZE:
            _UNKNOWN_TLVS.clear()
        tlv = _UNKNOWN_TLVS[raw] = UnknownTlv(raw[0], raw[2:])
    return tlv


def _info_tlv(frame: bytes, offset: int) -> InfoTlv:
    """The Local or Remote Information TLV at `offset` (its length checked by the caller)."""
    raw = frame[offset : offset + _INFO_SIZE]
    tlv = _INFO_TLVS.get(raw)
    if tlv is None:
        if len(_INFO_TLVS) >= _MEMO_SIZE:
            _INFO_TLVS.clear()
        tlv = _INFO_TLVS[raw] = _read_info_tlv(raw, 0)
    return tlv


def _tlv_bounds(frame: bytes, offset: int) -> tuple[int, int]:
    """Type and length of the TLV at `offset` (not End), checked against the frame."""
    if offset + 2 > len(frame):
        raise DecodeError(DecodeReason.TLV_OVERRUN, offset, "TLV header cut")
    tlv_type, length = frame[offset], frame[offset + 1]
    if length < 2:
        raise DecodeError(DecodeReason.TLV_TOO_SHORT, offset, f"type {tlv_type:#04x} length {length}")
    if offset + length > len(frame):
        raise DecodeError(DecodeReason.TLV_OVERRUN, offset, f"type {tlv_type:#04x} length {length}")
    return tlv_type, length


def _org_tlv(frame: bytes, offset: int, length: int) -> OrgSpecificTlv:
    if length < _ORG_TLV_HEAD.size:
        raise DecodeError(DecodeReason.TLV_TOO_SHORT, offset, f"organization specific length {length}")
    return OrgSpecificTlv(_ORG_TLV_HEAD.unpack_from(frame, offset)[2], frame[offset + 5 : offset + length])


def _decode_information(frame: bytes, src: str, flags: int) -> Information:
    tlvs: list[InformationTlvs] = []
    offset, end = HEADER_LENGTH, len(frame)
    while offset < end and frame[offset]:
        tlv_type, length = _tlv_bounds(frame, offset)
        if tlv_type in _INFO_TYPES:
            if length != _INFO_SIZE:
                raise DecodeError(DecodeReason.INFO_TLV_LENGTH, offset, f"length {length}")
            tlvs.append(_info_tlv(frame, offset))
        elif tlv_type == _ORG:
            tlvs.append(_org_tlv(frame, offset, length))
        else:
            tlvs.append(_unknown_tlv(frame, offset, length))
        offset += length
    return _new_information(src, flags, tuple(tlvs))


def _decode_event_notification(frame: bytes, src: str, flags: int) -> EventNotification:
    end = len(frame)
    if end < HEADER_LENGTH + _SEQUENCE.size:
        raise DecodeError(DecodeReason.TRUNCATED, end, "no sequence number")
    (sequence,) = _SEQUENCE.unpack_from(frame, HEADER_LENGTH)
    tlvs: list[EventTlvs] = []
    offset = HEADER_LENGTH + _SEQUENCE.size
    while offset < end and frame[offset]:
        tlv_type, length = _tlv_bounds(frame, offset)
        link_event = _LINK_EVENT_READERS.get(tlv_type)
        if link_event is not None:
            size, read = link_event
            if length != size:
                raise DecodeError(
                    DecodeReason.EVENT_TLV_LENGTH, offset, f"type {tlv_type:#04x} length {length} != {size}"
                )
            tlvs.append(read(frame, offset))
        elif tlv_type == _ORG:
            tlvs.append(_org_tlv(frame, offset, length))
        else:
            tlvs.append(_unknown_tlv(frame, offset, length))
        offset += length
    return _new_event_notification(src, flags, sequence, tuple(tlvs))


def _decode_variable_request(frame: bytes, src: str, flags: int) -> VariableRequest:
    descriptors: list[VariableDescriptor] = []
    offset, end = HEADER_LENGTH, len(frame)
    while offset < end and frame[offset]:
        if offset + _DESCRIPTOR.size > end:
            raise DecodeError(DecodeReason.TRUNCATED, offset, "variable descriptor cut")
        descriptors.append(VariableDescriptor(*_DESCRIPTOR.unpack_from(frame, offset)))
        offset += _DESCRIPTOR.size
    return VariableRequest(src, flags, tuple(descriptors))


def _decode_variable_response(frame: bytes, src: str, flags: int) -> VariableResponse:
    containers: list[VariableContainer] = []
    offset, end = HEADER_LENGTH, len(frame)
    while offset < end and frame[offset]:
        if offset + _DESCRIPTOR.size > end:
            raise DecodeError(DecodeReason.TRUNCATED, offset, "variable container cut")
        branch, leaf = _DESCRIPTOR.unpack_from(frame, offset)
        offset += _DESCRIPTOR.size
        values: list[bytes] = []
        indication: int | None = None
        while indication is None and (not values or branch in MULTI_VALUE_BRANCHES):
            if offset >= end:
                raise DecodeError(DecodeReason.TRUNCATED, offset, "width or indication missing")
            width = frame[offset]
            offset += 1
            if width & INDICATION_BIT:
                indication = width & ~INDICATION_BIT
                continue
            width = width or MAX_VARIABLE_WIDTH
            if offset + width > end:
                raise DecodeError(DecodeReason.TRUNCATED, offset, f"value of width {width} cut")
            values.append(frame[offset : offset + width])
            offset += width
        containers.append(VariableContainer(branch, leaf, tuple(values), indication))
    return VariableResponse(src, flags, tuple(containers))


def _decode_loopback_control(frame: bytes, src: str, flags: int) -> LoopbackControl:
    if len(frame) < HEADER_LENGTH + _COMMAND.size:
        raise DecodeError(DecodeReason.TRUNCATED, len(frame), "no loopback command")
    return LoopbackControl(src, flags, *_COMMAND.unpack_from(frame, HEADER_LENGTH))


def _decode_org_specific(frame: bytes, src: str, flags: int) -> OrgSpecificPdu:
    if len(frame) < HEADER_LENGTH + _OUI.size:
        raise DecodeError(DecodeReason.TRUNCATED, len(frame), "no OUI")
    (oui,) = _OUI.unpack_from(frame, HEADER_LENGTH)
    data = frame[HEADER_LENGTH + _OUI.size :]
    value = data.rstrip(b"\0")
    return OrgSpecificPdu(src, flags, oui, value, len(data) - len(value))


_BODY_DECODERS: dict[int, Callable[[bytes, str, int], Oampdu]] = {
    Code.INFORMATION: _decode_information,
    Code.EVENT_NOTIFICATION: _decode_event_notification,
    Code.VARIABLE_REQUEST: _decode_variable_request,
    Code.VARIABLE_RESPONSE: _decode_variable_response,
    Code.LOOPBACK_CONTROL: _decode_loopback_control,
    Code.ORGANIZATION_SPECIFIC: _decode_org_specific,
}


class PeerDecoder:
    """`decode` that returns the previous result when a peer repeats its last frame.

    In steady state a peer sends the same Information OAMPDU every second; comparing
    octets is far cheaper than decoding them.  One entry per source MAC, at most
    `max_peers` of them (the oldest is forgotten first).
    """

    def __init__(self, max_peers: int = 1024) -> None:
        self._last: dict[bytes, tuple[bytes, Oampdu]] = {}
        self._max_peers = max_peers

    def decode(self, frame: bytes) -> Oampdu:
        """Like `decode`; the returned object is shared with earlier identical frames."""
        key = frame[6:12]
        last = self._last.get(key)
        if last is not None and last[0] == frame:
            return last[1]
        pdu = decode(frame)
        if last is None and len(self._last) >= self._max_peers:
            del self._last[next(iter(self._last))]
        self._last[key] = (frame, pdu)
        return pdu


# -- encode -------------------------------------------------------------------------------


def _encode_tlv_list(tlvs: tuple[Any, ...], fixed: Callable[[Any], bytes], fixed_types: tuple[int, ...]) -> bytes:
    out = []
    for tlv in tlvs:
        if isinstance(tlv, OrgSpecificTlv):
            out.append(_ORG_TLV_HEAD.pack(0xFE, _ORG_TLV_HEAD.size + len(tlv.value), tlv.oui) + tlv.value)
        elif isinstance(tlv, UnknownTlv):
            if tlv.type in (0, 0xFE) or tlv.type in fixed_types:
                raise EncodeError(f"unknown TLV with a known type {tlv.type:#04x}")
            out.append(bytes((tlv.type, 2 + len(tlv.value))) + tlv.value)
        else:
            out.append(fixed(tlv))
    return b"".join(out)


def _encode_info_tlv(tlv: InfoTlv) -> bytes:
    if tlv.type not in _INFO_TYPES:
        raise EncodeError(f"information TLV type {tlv.type}")
    return _INFO_TLV.pack(tlv.type, _INFO_TLV.size, *attrs_values(tlv)[1:])


def _encode_link_event(tlv: LinkEventTlv) -> bytes:
    layout = _LINK_EVENT.get(tlv.type)
    if layout is None:
        raise EncodeError(f"link event TLV type {tlv.type}")
    return layout.pack(tlv.type, layout.size, *attrs_values(tlv)[1:])


def attrs_values(obj: Any) -> tuple[Any, ...]:
    """Field values of an attrs instance, in field order."""
    return tuple(getattr(obj, a.name) for a in obj.__attrs_attrs__)


def _encode_container(container: VariableContainer) -> bytes:
    out = [_DESCRIPTOR.pack(container.branch, container.leaf)]
    for value in container.values:
        if not 1 <= len(value) <= MAX_VARIABLE_WIDTH:
            raise EncodeError(f"variable value of {len(value)} octets (1..128)")
        out.append(bytes((len(value) % MAX_VARIABLE_WIDTH,)) + value)
    if container.indication is not None:
        if not 0 <= container.indication < INDICATION_BIT:
            raise EncodeError(f"variable indication {container.indication:#x} (0..0x7f)")
        out.append(bytes((INDICATION_BIT | container.indication,)))
    return b"".join(out)


def end_marker(pdu: Oampdu) -> bytes:
    """The octets that end this PDU's TLV or descriptor list, if it has one."""
    if isinstance(pdu, (Information, EventNotification)):
        return b"\0\0"
    return b"\0" if isinstance(pdu, (VariableRequest, VariableResponse)) else b""


def _encode_body(pdu: Oampdu) -> bytes:
    """The data field after the code octet."""
    if isinstance(pdu, Information):
        return _encode_tlv_list(pdu.tlvs, _encode_info_tlv, _INFO_TYPES)
    if isinstance(pdu, EventNotification):
        return _SEQUENCE.pack(pdu.sequence) + _encode_tlv_list(pdu.tlvs, _encode_link_event, _LINK_EVENT_TYPES)
    if isinstance(pdu, VariableRequest):
        return b"".join(_DESCRIPTOR.pack(d.branch, d.leaf) for d in pdu.descriptors)
    if isinstance(pdu, VariableResponse):
        return b"".join(_encode_container(c) for c in pdu.containers)
    if isinstance(pdu, LoopbackControl):
        return _COMMAND.pack(pdu.loopback_command)
    if isinstance(pdu, OrgSpecificPdu):
        return _OUI.pack(pdu.oui) + pdu.value
    if pdu.code in _BODY_DECODERS:
        raise EncodeError(f"unsupported PDU with the supported code {pdu.code:#04x}")
    return pdu.data


#: OAMPDUs whose encoding is kept: enough for the repeats of a port's Information and
#: Event Notification bursts, small enough that a flood of distinct PDUs (Variable
#: Responses to ever-different requests) cannot grow the process
ENCODE_CACHE_SIZE = 64


@functools.lru_cache(maxsize=ENCODE_CACHE_SIZE)
def encode(pdu: Oampdu, max_pdu_size: int = MAX_OAMPDU_SIZE) -> bytes:
    """Encode an OAMPDU into a frame (no FCS), padded to 60 octets.

    `max_pdu_size` is an OAMPDU size as advertised in an Information TLV (with FCS):
    the frame is at most ``max_pdu_size - 4`` octets, else `EncodeError`.  Results are
    cached: encoding an unchanged (frozen, hashable) OAMPDU again costs a lookup.
    """
    try:
        src = bytes.fromhex(pdu.src.replace(":", ""))
        header = _HEADER.pack(_DST, src, SLOW_PROTOCOLS_ETHERTYPE, OAM_SUBTYPE, pdu.flags, pdu.code)
        body = _encode_body(pdu)
    except (struct.error, ValueError, TypeError) as exc:
        if isinstance(exc, EncodeError):
            raise
        raise EncodeError(f"{type(pdu).__name__}: {exc}") from exc
    if len(src) != 6:
        raise EncodeError(f"source MAC {pdu.src!r}")
    return finish_frame(header + body, end_marker(pdu), max_pdu_size)


#: where the Flags field starts in a frame: after the header's fields before it
FLAGS_AT = sum(width for name, width, _ in F.HEADER[: [f[0] for f in F.HEADER].index("flags")]) // 8
_FLAGS = struct.Struct("!H")
assert _HEADER.pack(_DST, bytes(6), 0, 0, 0xA55A, 0)[FLAGS_AT : FLAGS_AT + _FLAGS.size] == b"\xa5\x5a", "FLAGS_AT"


def with_flags(frame: bytes, flags: int) -> bytes:
    """`frame` (an encoded OAMPDU) with its Flags field set to `flags`: an OAMPDU queued
    for the budget takes the flags current when it leaves, without encoding it again."""
    return frame[:FLAGS_AT] + _FLAGS.pack(flags) + frame[FLAGS_AT + _FLAGS.size :]


def finish_frame(frame: bytes, end_marker: bytes, max_pdu_size: int = MAX_OAMPDU_SIZE) -> bytes:
    """Check the size limit, add the End marker where it is due, pad to 60 octets."""
    if max_pdu_size < MIN_OAMPDU_SIZE:
        raise EncodeError(f"maximum OAMPDU size {max_pdu_size} is below {MIN_OAMPDU_SIZE}")
    limit = min(max_pdu_size, MAX_OAMPDU_SIZE) - FCS_LENGTH
    if len(frame) > limit:
        raise EncodeError(f"OAMPDU of {len(frame)} octets exceeds {limit}")
    if len(frame) > MIN_FRAME_LENGTH and len(frame) + len(end_marker) <= limit:
        frame += end_marker
    return frame.ljust(MIN_FRAME_LENGTH, b"\0")
