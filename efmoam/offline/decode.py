"""Decode capture files into one line per OAMPDU: the logic behind ``efmoam decode``.

Nothing here depends on click: `run_decode` takes a path and two text streams and
returns the exit status.  One table per model class (`_SCHEMAS`) maps the model to JSON;
`pdu_to_dict` / `frame_to_dict` / `error_to_dict` give JSON-ready dicts (the daemon can
reuse them), `pdu_to_json` the same object as compact JSON text, faster than
``json.dumps(pdu_to_dict(pdu))`` and equal to it (tested).  The plain-text lines are
rendered from the dicts (`format_text`); `pdu_text` gives the same line, the text of a
recurring Information TLV made once (tested equal).

Input
    A pcap or pcapng file, read record by record (`efmoam.offline.capture`), never loaded whole.
    The first record must have the Ethernet link type (1), else `NotEthernetError`.
    Later records of another link type (other pcapng interfaces) are counted and
    skipped.  Frames that are not OAMPDUs (`DecodeReason.not_oampdu`: another
    EtherType, another Slow Protocols subtype, a VLAN tag, another destination) are
    counted and skipped; malformed OAMPDUs are reported and decoding goes on.

Plain text (one line per OAMPDU, columns separated by two spaces)
    ``FRAME  TIME  SRC  FLAGS  CODE  [BODY...]`` where FRAME is the 1-based record
    number, TIME the seconds since the first record of the file with 6 decimals (as
    Wireshark's ``frame.time_relative``), FLAGS the flag names joined by commas or
    ``-``, CODE the code name, and BODY the TLVs, e.g.
    ``local(ver=1 rev=1 parser=fwd mux=fwd config=active,link_events pdu=1500
    oui=00:11:22 vendor=0x00000001)`` or ``errored_symbol_period(ts=100
    window=125000000 threshold=1 errors=3 total=3 events=1)`` (total: error running
    total, events: event running total).  Event Notifications start the body with
    ``seq=N``.  In an Information TLV, ``parser`` is fwd, lb (loopback), discard or rsvd,
    ``mux`` fwd or discard; reserved bits are shown only when set.  Other codes:
    ``descriptor(branch= leaf=)``, ``container(branch= leaf= values=HEX,.. indication=)``,
    ``command=enable(1)``, ``oui=.. value=HEX``, ``code=0x05 data=HEX``.  A known OUI
    is followed by its name, ``oui=00:00:0c(Cisco)``; an Organization Specific OAMPDU
    whose payload is public (`pdu.oui`) shows it decoded instead of ``value=``:
    ``opcode=get_response(0x02)``, one ``var(d7/0002 "DPoE ONU ID" value=HEX)`` (or
    ``code=0x80 "No Error"``, or neither for a descriptor) per variable, then
    ``truncated`` and ``rest=HEX`` when they apply.  The CTC extended Information TLV (in
    an Information OAMPDU only) shows its fields instead of ``value=``:
    ``organization_specific(oui=11:11:11(CTC) support=0x01 version=0x20
    versions=11:11:11/0x01,11:11:11/0x20)``, then ``truncated`` and ``rest=HEX`` when
    they apply.  A malformed
    OAMPDU gives ``FRAME  TIME  SRC  MALFORMED reason (octet N: detail)``.  A summary
    line goes to standard error: OAMPDUs decoded (per code), malformed, non-OAM frames
    skipped (and non-Ethernet records skipped, if any).

JSON (``--json``: one object per line, compact, keys in this order)
    Every OAMPDU:
        ``frame`` (int, 1-based record number), ``time`` (float, seconds since the
        epoch), ``src`` ("aa:bb:cc:dd:ee:ff"), ``flags`` (int), ``flag_names`` (list of
        `pdu.enums.FLAG_NAMES`, LSB first; an undefined bit appears as "0x0080"),
        ``code`` (int), ``code_name`` ("information", "event_notification",
        "variable_request", "variable_response", "loopback_control",
        "organization_specific", or "unsupported" for a reserved code), then by code:

    * information: ``tlvs``
    * event_notification: ``sequence`` (int), ``tlvs``
    * variable_request: ``descriptors``: list of {``branch``, ``leaf``}
    * variable_response: ``containers``: list of {``branch``, ``leaf``, ``values``
      (list of hex strings), ``indication`` (int or null)}
    * loopback_control: ``loopback_command`` (int), ``loopback_command_name``
      ("enable", "disable", or "unknown")
    * organization_specific: ``oui`` ("00:11:22"), ``oui_name`` (the organization's
      name, null for an OUI `pdu.oui` does not know), ``value`` (hex string, always the
      raw octets), ``decoded`` (null, or what `pdu.oui.decode_pdu` reads of the value:
      ``opcode``, ``opcode_name``, ``variables``, ``rest``, ``truncated``)
    * unsupported: ``data`` (hex string, the octets after the code, zero padding cut)

    Every TLV object has ``type`` (int, the wire type) and ``kind`` ("local",
    "remote", "errored_symbol_period", "errored_frame", "errored_frame_period",
    "errored_frame_seconds_summary", "organization_specific" or "unknown"), then the
    model's fields (`pdu.model`) by name:

    * local/remote: ``oam_version``, ``revision``, ``state_reserved``, ``mux_action``,
      ``parser_action``, ``oam_config`` (int), ``oam_config_names`` (list of
      `pdu.enums.OAM_CONFIG_NAMES`), ``oampdu_config_reserved``, ``max_pdu_size``,
      ``oui`` ("00:11:22"), ``vendor_info`` (int)
    * link events: ``timestamp``, ``window``, ``threshold``, ``errors``,
      ``error_running_total``, ``event_running_total`` (ints)
    * organization_specific: ``oui`` ("00:11:22"), ``oui_name`` (string or null),
      ``value`` (hex string, always the raw octets), ``decoded`` (null, or what
      `pdu.oui.decode_tlv` reads of the value given the OAMPDU's code: for CTC in an
      Information OAMPDU ``support``, ``version``, ``versions`` (list of {``oui``,
      ``oui_name``, ``version``}), ``rest``, ``truncated``)
    * unknown: ``value`` (hex string)

    OUIs are always "00:11:22" strings (`pdu.format_oui`), octet strings always
    lower-case hex without separators, every other number an integer.

    A malformed OAMPDU: ``frame``, ``time``, ``src`` (absent if the frame is shorter
    than 12 octets), ``error`` (the `DecodeReason` value, e.g. "tlv_too_short"),
    ``offset`` (int, the octet where decoding stopped), ``detail`` (string, may be
    empty).

Exit status (`run_decode`)
    0 when the whole file was read (malformed OAMPDUs included), 2 when the input is
    unreadable: not a pcap/pcapng file, truncated or damaged (the records before the
    damage are printed first), not Ethernet, or cannot be opened.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from operator import attrgetter
from typing import Any, BinaryIO, NamedTuple, TextIO

import attrs

from efmoam.offline.capture import CaptureError, CaptureRecord, iter_capture, read_capture
from efmoam.offline.source import source_name
from pdu import (
    Code,
    DecodeError,
    EventNotification,
    EventTlvType,
    Information,
    InfoTlv,
    InfoTlvType,
    LinkEventTlv,
    LoopbackCommand,
    LoopbackControl,
    Oampdu,
    OrgSpecificPdu,
    OrgSpecificTlv,
    PeerDecoder,
    UnknownTlv,
    UnsupportedPdu,
    VariableContainer,
    VariableDescriptor,
    VariableRequest,
    VariableResponse,
    format_oui,
)
from pdu.enums import FLAG_NAMES, OAM_CONFIG_NAMES, SLOW_PROTOCOLS_ETHERTYPE
from pdu.oui import decode_pdu as decode_org_pdu, decode_tlv as decode_org_tlv, name as oui_name

__all__ = [
    "ETHERNET",
    "EXIT_OK",
    "EXIT_UNREADABLE",
    "CaptureDecoder",
    "DecodeStats",
    "JsonObject",
    "NotEthernetError",
    "error_to_dict",
    "flag_names",
    "format_text",
    "frame_to_dict",
    "oam_config_names",
    "open_records",
    "pdu_to_dict",
    "pdu_to_json",
    "pdu_text",
    "run_decode",
    "tlv_text",
    "tlv_to_dict",
]

JsonObject = dict[str, Any]

ETHERNET = 1  #: pcap LINKTYPE_ETHERNET
EXIT_OK = 0
EXIT_UNREADABLE = 2

#: Link types one is likely to meet instead of Ethernet, for the error message.
_LINKTYPE_NAMES = {
    0: "BSD loopback",
    101: "raw IP",
    105: "IEEE 802.11",
    113: "Linux cooked capture (SLL)",
    127: "IEEE 802.11 radiotap",
    228: "raw IPv4",
    229: "raw IPv6",
    276: "Linux cooked capture v2 (SLL2)",
}

_ETHERTYPE = SLOW_PROTOCOLS_ETHERTYPE.to_bytes(2, "big")
_CODE_NAMES = {int(code): code.name.lower() for code in Code}
_UNSUPPORTED = "unsupported"
_INFO_KINDS = {int(InfoTlvType.LOCAL): "local", int(InfoTlvType.REMOTE): "remote"}
_EVENT_KINDS = {int(kind): kind.name.lower() for kind in EventTlvType if kind not in (0, 0xFE)}
_ORG_KIND = "organization_specific"
_UNKNOWN_KIND = "unknown"
_LOOPBACK_NAMES = {int(command): command.name.lower() for command in LoopbackCommand}
_PARSER_TEXT = ("fwd", "lb", "discard", "rsvd")
_MUX_TEXT = ("fwd", "discard")
_MAX_RENDERED_PEERS = 1024
_CHUNK_LINES = 1024
#: Information TLVs whose rendering is remembered, per memo (JSON, and text in each of
#: the two codes): each holds the objects it remembers, up to this many, and their text
_MAX_REMEMBERED = 1024


class NotEthernetError(Exception):
    """The capture's first record does not have the Ethernet link type."""

    def __init__(self, linktype: int) -> None:
        self.linktype = linktype
        name = _LINKTYPE_NAMES.get(linktype)
        what = f"link type {linktype}" + (f" ({name})" if name else "")
        super().__init__(f"{what} is not Ethernet (link type 1); only Ethernet captures can be decoded")


# -- model -> JSON: one table per model class ---------------------------------------------
#
# Each model class has one `_Schema`: its JSON keys, in order, with how each value is
# taken from the object.  `to_dict` and `to_json` are both derived from that table, so
# the dicts (`pdu_to_dict`, for the daemon and the plain text) and the JSON lines can
# never disagree.  `to_json` formats a template made once per class ('{"type":%d,...}')
# instead of building a dict and encoding it: for a steady stream of new frames that is
# about three times faster than json.dumps.


_dumps = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode
_quote = json.encoder.encode_basestring_ascii  # what json.dumps does with a str (C)


def _bit_names(value: int, names: tuple[str, ...], width: int) -> tuple[str, ...]:
    """Names of the bits set in *value* (LSB first); undefined bits as hex."""
    out = []
    for bit in range(value.bit_length()):
        if value >> bit & 1:
            out.append(names[bit] if bit < len(names) else f"{1 << bit:#0{width + 2}x}")
    return tuple(out)


class _BitNames:
    """Bit names of a flags field, and their JSON text, cached per value."""

    def __init__(self, names: Sequence[str], width: int) -> None:
        self._names = tuple(names)
        self._width = width
        #: value -> (names, JSON array of the names)
        self.cache: dict[int, tuple[tuple[str, ...], str]] = {}

    def entry(self, value: int) -> tuple[tuple[str, ...], str]:
        """The names of the bits set in *value*, and their JSON text."""
        entry = self.cache.get(value)
        if entry is None:
            names = _bit_names(int(value), self._names, self._width)
            entry = (names, _dumps(names))
            if len(self.cache) < 4096:
                self.cache[value] = entry
        return entry

    def names(self, value: int) -> list[str]:
        """The names of the bits set in *value*."""
        return list(self.entry(value)[0])


_FLAGS = _BitNames(FLAG_NAMES, 4)
_OAM_CONFIG = _BitNames(OAM_CONFIG_NAMES, 2)


def flag_names(flags: int) -> list[str]:
    """Names of the OAMPDU flags set in *flags*, LSB first (undefined bits as "0x0080")."""
    return _FLAGS.names(flags)


def oam_config_names(config: int) -> list[str]:
    """Names of the OAM Configuration bits set in *config*, LSB first."""
    return _OAM_CONFIG.names(config)


class _Field(NamedTuple):
    """One key of a JSON object: the value for the dict, and what the template shows."""

    key: str
    value: Callable[[Any], Any]  #: object -> JSON-ready value
    fmt: str  #: how the template shows json(object): %d, "%s" or %s
    json: Callable[[Any], Any]  #: object -> int or (JSON) text for fmt
    attribute: str | None = None  #: set when json(object) is just this attribute


def _int(key: str, attribute: str | None = None) -> _Field:
    """An integer attribute (IntEnum/IntFlag included)."""
    name = attribute or key
    get = attrgetter(name)
    return _Field(key, lambda obj: int(get(obj)), "%d", get, name)


def _text(key: str, get: Callable[[Any], str]) -> _Field:
    """A string made here of safe characters only (hex digits, names, ':'; no quote)."""
    return _Field(key, get, '"%s"', get)


def _hex(key: str, attribute: str) -> _Field:
    """An octet string, as lower-case hex."""
    get = attrgetter(attribute)
    return _text(key, lambda obj: get(obj).hex())


def _oui(key: str = "oui") -> _Field:
    """A 24-bit OUI, as "00:11:22"."""
    return _text(key, lambda obj: format_oui(obj.oui))


def _oui_name() -> _Field:
    """The organization's name of the object's OUI (`pdu.oui`), null when unknown."""

    def text(obj: Any) -> str:
        name = oui_name(obj.oui)
        return "null" if name is None else _quote(name)

    return _Field("oui_name", lambda obj: oui_name(obj.oui), "%s", text)


def _org_decoded() -> _Field:
    """What `pdu.oui.decode_pdu` reads of an Organization Specific OAMPDU, null if nothing."""

    def value(pdu: OrgSpecificPdu) -> JsonObject | None:
        return decode_org_pdu(pdu.oui, pdu.value, pdu.zeros)

    def text(pdu: OrgSpecificPdu) -> str:
        decoded = value(pdu)
        return "null" if decoded is None else _dumps(decoded)

    return _Field("decoded", value, "%s", text)


def _org_tlv_decoded(pdu_code: int | None) -> _Field:
    """What `pdu.oui.decode_tlv` reads of an Organization Specific TLV in an OAMPDU of *pdu_code*."""

    def value(tlv: OrgSpecificTlv) -> JsonObject | None:
        return decode_org_tlv(tlv.oui, tlv.value, pdu_code)

    def text(tlv: OrgSpecificTlv) -> str:
        decoded = value(tlv)
        return "null" if decoded is None else _dumps(decoded)

    return _Field("decoded", value, "%s", text)


def _names(key: str, bits: _BitNames, attribute: str) -> _Field:
    """The names of the bits set in a flags attribute."""
    get = attrgetter(attribute)
    cache = bits.cache

    def text(obj: Any) -> str:  # bits.json(get(obj)), one call less
        value = get(obj)
        return (cache.get(value) or bits.entry(value))[1]

    return _Field(key, lambda obj: bits.names(get(obj)), "%s", text)


def _any(key: str, get: Callable[[Any], Any]) -> _Field:
    """Any JSON value (encoded for each object)."""
    return _Field(key, get, "%s", lambda obj: _dumps(get(obj)))


def _objects(key: str, attribute: str, pdu_code: int | None = None) -> _Field:
    """A tuple of model objects, each by its own schema (TLVs: as in an OAMPDU of *pdu_code*)."""
    get = attrgetter(attribute)

    def value(obj: Any) -> list[JsonObject]:
        schemas = _SCHEMAS_IN[pdu_code]
        return [schemas[type(item)].to_dict(item) for item in get(obj)]

    def text(obj: Any) -> str:
        to_json = _TO_JSON_IN[pdu_code]
        return "[" + ",".join([to_json[type(item)](item) for item in get(obj)]) + "]"

    return _Field(key, value, "%s", text)


def _compile_to_json(fields: Sequence[_Field]) -> Callable[[Any], str]:
    """``lambda obj: TEMPLATE % (obj.a, json_1(obj), ...)`` for *fields*, as one function.

    Generated source (the way attrs writes ``__init__``): reading attributes directly
    instead of calling one getter per field halves the cost of a line.
    """
    template = "{" + ",".join(f'"{field.key}":{field.fmt}' for field in fields) + "}"
    namespace: dict[str, Any] = {"template": template}
    args = []
    for number, field in enumerate(fields):
        if field.attribute is not None and field.attribute.isidentifier():
            args.append(f"obj.{field.attribute}")
        else:
            namespace[f"json_{number}"] = field.json
            args.append(f"json_{number}(obj)")
    exec(f"def to_json(obj):\n    return template % ({', '.join(args)},)\n", namespace)
    to_json: Callable[[Any], str] = namespace["to_json"]
    return to_json


def _compile_to_dict(fields: Sequence[_Field]) -> Callable[[Any], JsonObject]:
    """``lambda obj: {"a": int(obj.a), "b": value_1(obj), ...}`` for *fields*, as one function.

    Generated as `_compile_to_json` is: an integer attribute is read in place instead of
    through its getter (observe mode renders every Event Notification's TLVs).
    """
    namespace: dict[str, Any] = {}
    items = []
    for number, field in enumerate(fields):
        if field.fmt == "%d" and field.attribute is not None and field.attribute.isidentifier():
            items.append(f"{field.key!r}: int(obj.{field.attribute})")
        else:
            namespace[f"value_{number}"] = field.value
            items.append(f"{field.key!r}: value_{number}(obj)")
    exec(f"def to_dict(obj):\n    return {{{', '.join(items)}}}\n", namespace)
    to_dict: Callable[[Any], JsonObject] = namespace["to_dict"]
    return to_dict


class _Schema:
    """How objects of one model class map to a JSON object."""

    def __init__(self, *fields: _Field) -> None:
        self.fields = fields

    # compiled on first use: a run meets few of the classes, and compiling them all at
    # import cost about 1.3 ms of every offline command's start-up
    @functools.cached_property
    def to_dict(self) -> Callable[[Any], JsonObject]:
        """The JSON-ready dict of an object."""
        return _compile_to_dict(self.fields)

    @functools.cached_property
    def to_json(self) -> Callable[[Any], str]:
        """The compact JSON text of an object (equal to json.dumps of `to_dict`)."""
        return _compile_to_json(self.fields)


def _kind(kinds: dict[int, str]) -> _Field:
    return _text("kind", lambda tlv: kinds.get(tlv.type, _UNKNOWN_KIND))


def _org_tlv_schema(pdu_code: int | None) -> _Schema:
    """An Organization Specific TLV's schema: its ``decoded`` depends on the OAMPDU's code."""
    return _Schema(
        _Field("type", lambda _: 0xFE, "%d", lambda _: 0xFE),
        _text("kind", lambda _: _ORG_KIND),
        _oui(),
        _oui_name(),
        _hex("value", "value"),
        _org_tlv_decoded(pdu_code),
    )


_TLV_SCHEMAS: dict[type, _Schema] = {
    InfoTlv: _Schema(
        _int("type"),
        _kind(_INFO_KINDS),
        _int("oam_version"),
        _int("revision"),
        _int("state_reserved"),
        _int("mux_action"),
        _int("parser_action"),
        _int("oam_config"),
        _names("oam_config_names", _OAM_CONFIG, "oam_config"),
        _int("oampdu_config_reserved"),
        _int("max_pdu_size"),
        _oui(),
        _int("vendor_info"),
    ),
    LinkEventTlv: _Schema(
        _int("type"),
        _kind(_EVENT_KINDS),
        _int("timestamp"),
        _int("window"),
        _int("threshold"),
        _int("errors"),
        _int("error_running_total"),
        _int("event_running_total"),
    ),
    OrgSpecificTlv: _org_tlv_schema(None),
    UnknownTlv: _Schema(_int("type"), _text("kind", lambda _: _UNKNOWN_KIND), _hex("value", "value")),
}

_HEADER = (
    # the source MAC comes from outside (a decoded frame, the daemon): quoted as JSON
    _Field("src", attrgetter("src"), "%s", lambda pdu: _quote(pdu.src)),
    _int("flags"),
    _names("flag_names", _FLAGS, "flags"),
    _int("code"),
    _text("code_name", lambda pdu: _CODE_NAMES[pdu.code]),
)

_SCHEMAS: dict[type, _Schema] = {
    **_TLV_SCHEMAS,
    VariableDescriptor: _Schema(_int("branch"), _int("leaf")),
    VariableContainer: _Schema(
        _int("branch"),
        _int("leaf"),
        _Field(
            "values",
            lambda c: [value.hex() for value in c.values],
            "%s",
            lambda c: "[" + ",".join(['"' + value.hex() + '"' for value in c.values]) + "]",
        ),
        _any("indication", attrgetter("indication")),
    ),
    Information: _Schema(*_HEADER, _objects("tlvs", "tlvs", Code.INFORMATION)),
    EventNotification: _Schema(*_HEADER, _int("sequence"), _objects("tlvs", "tlvs", Code.EVENT_NOTIFICATION)),
    VariableRequest: _Schema(*_HEADER, _objects("descriptors", "descriptors")),
    VariableResponse: _Schema(*_HEADER, _objects("containers", "containers")),
    LoopbackControl: _Schema(
        *_HEADER,
        _int("loopback_command"),
        _text("loopback_command_name", lambda pdu: _LOOPBACK_NAMES.get(pdu.loopback_command, _UNKNOWN_KIND)),
    ),
    OrgSpecificPdu: _Schema(
        *_HEADER,
        _oui(),
        _oui_name(),
        _hex("value", "value"),
        _org_decoded(),
    ),
    UnsupportedPdu: _Schema(*_HEADER[:4], _text("code_name", lambda _: _UNSUPPORTED), _hex("data", "data")),
}


#: the schemas as in an OAMPDU of a code (None: not known), which an Organization Specific
#: TLV's ``decoded`` depends on
_SCHEMAS_IN: dict[int | None, dict[type, _Schema]] = {
    pdu_code: {**_SCHEMAS, OrgSpecificTlv: _org_tlv_schema(pdu_code)} for pdu_code in (None, *map(int, Code))
}


def _remembered(render: Callable[[Any], str], size: int = _MAX_REMEMBERED) -> Callable[[Any], str]:
    """*render* remembered per object, at most *size* of them (then it starts afresh).

    The codec hands out one object per distinct Information TLV (`pdu.codec`'s memo), and
    those recur: a peer's Local TLV in every frame, echoed in the other's Remote TLV.
    Keyed by identity and holding the object, so an id is never reused while remembered;
    sound because the model's objects are frozen (their text never changes).
    """
    memo: dict[int, tuple[Any, str]] = {}

    def remembered(obj: Any) -> str:
        entry = memo.get(id(obj))
        if entry is not None and entry[0] is obj:
            return entry[1]
        text = render(obj)
        if len(memo) >= size:
            memo.clear()
        memo[id(obj)] = (obj, text)
        return text

    return remembered


class _OnFirstUse(dict[type, Callable[[Any], Any]]):
    """class -> its function, made by *make* when first asked for (KeyError if it cannot be)."""

    def __init__(self, make: Callable[[type], Callable[[Any], Any]]) -> None:
        super().__init__()
        self._make = make

    def __missing__(self, cls: type) -> Callable[[Any], Any]:
        made = self[cls] = self._make(cls)
        return made


def _to_json_in(schemas: dict[type, _Schema]) -> _OnFirstUse:
    return _OnFirstUse(lambda cls: _remembered(schemas[cls].to_json) if cls is InfoTlv else schemas[cls].to_json)


_TO_JSON_IN = {pdu_code: _to_json_in(schemas) for pdu_code, schemas in _SCHEMAS_IN.items()}


def tlv_to_dict(tlv: InfoTlv | LinkEventTlv | OrgSpecificTlv | UnknownTlv, pdu_code: int | None = None) -> JsonObject:
    """The JSON object of one TLV (see the module docstring for the keys).

    *pdu_code* is the code of the OAMPDU the TLV sits in (`pdu.enums.Code`, None when not
    known): an Organization Specific TLV is decoded only where its layout is public for it.
    """
    schemas = _SCHEMAS_IN.get(pdu_code, _SCHEMAS_IN[None])
    return schemas[type(tlv)].to_dict(tlv)


def pdu_to_dict(pdu: Oampdu) -> JsonObject:
    """The JSON object of an OAMPDU without ``frame`` and ``time`` (module docstring)."""
    return _SCHEMAS[type(pdu)].to_dict(pdu)


def pdu_to_json(pdu: Oampdu) -> str:
    """``json.dumps(pdu_to_dict(pdu), separators=(",", ":"))``, faster."""
    return _SCHEMAS[type(pdu)].to_json(pdu)


def frame_to_dict(number: int, time: float, pdu: Oampdu) -> JsonObject:
    """The JSON object printed by ``efmoam decode --json`` for a decoded OAMPDU."""
    obj: JsonObject = {"frame": number, "time": time}
    obj.update(pdu_to_dict(pdu))
    return obj


def error_to_dict(number: int, time: float, frame: bytes, error: DecodeError) -> JsonObject:
    """The JSON object printed by ``efmoam decode --json`` for a malformed OAMPDU."""
    obj: JsonObject = {"frame": number, "time": time}
    if len(frame) >= 12:
        obj["src"] = frame[6:12].hex(":")
    obj["error"] = error.reason.value
    obj["offset"] = error.offset
    obj["detail"] = error.detail
    return obj


# -- dict -> text -------------------------------------------------------------------------


def _names_text(names: list[str]) -> str:
    return ",".join(names) or "-"


def _info_tlv_text(tlv: JsonObject) -> str:
    parser = _PARSER_TEXT[tlv["parser_action"] & 3]
    mux = _MUX_TEXT[tlv["mux_action"] & 1]
    text = (
        f"{tlv['kind']}(ver={tlv['oam_version']} rev={tlv['revision']} parser={parser} mux={mux}"
        f" config={_names_text(tlv['oam_config_names'])} pdu={tlv['max_pdu_size']}"
        f" oui={tlv['oui']} vendor={tlv['vendor_info']:#010x}"
    )
    if tlv["state_reserved"]:
        text += f" state_reserved={tlv['state_reserved']:#x}"
    if tlv["oampdu_config_reserved"]:
        text += f" config_reserved={tlv['oampdu_config_reserved']:#x}"
    return text + ")"


def _event_tlv_text(tlv: JsonObject) -> str:
    return (
        f"{tlv['kind']}(ts={tlv['timestamp']} window={tlv['window']} threshold={tlv['threshold']}"
        f" errors={tlv['errors']} total={tlv['error_running_total']} events={tlv['event_running_total']})"
    )


def tlv_text(tlv: JsonObject) -> str:
    """The plain text of one TLV from its `tlv_to_dict` object (as in a decoded line)."""
    if "oam_version" in tlv:
        return _info_tlv_text(tlv)
    if "timestamp" in tlv:
        return _event_tlv_text(tlv)
    if "oui" in tlv:
        decoded = tlv["decoded"]
        if decoded is None:
            return f"{tlv['kind']}({_oui_text(tlv)} value={tlv['value'] or '-'})"
        return f"{tlv['kind']}({' '.join([_oui_text(tlv), *_org_tlv_decoded_text(decoded)])})"
    return f"{tlv['kind']}(type={tlv['type']:#04x} value={tlv['value'] or '-'})"


def _body_text(obj: JsonObject) -> list[str]:
    """The BODY columns of a plain-text line, from the PDU's JSON object."""
    parts: list[str] = []
    if "sequence" in obj:
        parts.append(f"seq={obj['sequence']}")
    # each list looked at only where the code has it (a line is made per frame)
    if tlvs := obj.get("tlvs"):
        parts.extend([tlv_text(tlv) for tlv in tlvs])
    if descriptors := obj.get("descriptors"):
        parts.extend([f"descriptor(branch={d['branch']} leaf={d['leaf']})" for d in descriptors])
    for c in obj.get("containers", ()):
        indication = "-" if c["indication"] is None else f"{c['indication']:#04x}"
        values = ",".join(c["values"]) or "-"
        parts.append(f"container(branch={c['branch']} leaf={c['leaf']} values={values} indication={indication})")
    if "loopback_command" in obj:
        parts.append(f"command={obj['loopback_command_name']}({obj['loopback_command']})")
    if obj["code_name"] == _UNSUPPORTED:
        parts.append(f"code={obj['code']:#04x} data={obj['data'] or '-'}")
    elif "oui" in obj:
        decoded = obj["decoded"]
        if decoded is None:
            parts.append(f"{_oui_text(obj)} value={obj['value'] or '-'}")
        else:
            parts.append(_oui_text(obj))
            parts.extend(_org_decoded_text(decoded))
    return parts


def _oui_text(obj: JsonObject) -> str:
    name = obj["oui_name"]
    return f"oui={obj['oui']}" + (f"({name})" if name else "")


def _org_decoded_text(decoded: JsonObject) -> list[str]:
    """The columns of a decoded Organization Specific payload (`pdu.oui.decode_pdu`)."""
    parts = [f"opcode={decoded['opcode_name']}({decoded['opcode']:#04x})"]
    for var in decoded["variables"] or ():
        text = f"var({var['branch']:02x}/{var['leaf']:04x}"
        if var["name"]:
            text += f' "{var["name"]}"'
        if var["value"] is not None:
            text += f" value={var['value'] or '-'}"
        if var["code"] is not None:
            text += f' code={var["code"]:#04x} "{var["code_name"]}"'
        parts.append(text + ")")
    if decoded["truncated"]:
        parts.append("truncated")
    if decoded["rest"]:
        parts.append(f"rest={decoded['rest']}")
    return parts


def _org_tlv_decoded_text(decoded: JsonObject) -> list[str]:
    """The fields of a decoded Organization Specific TLV (`pdu.oui.decode_tlv`: CTC Information)."""

    def octet(value: int | None) -> str:
        return "-" if value is None else f"{value:#04x}"

    versions = ",".join(f"{v['oui']}/{octet(v['version'])}" for v in decoded["versions"]) or "-"
    parts = [f"support={octet(decoded['support'])}", f"version={octet(decoded['version'])}", f"versions={versions}"]
    if decoded["truncated"]:
        parts.append("truncated")
    if decoded["rest"]:
        parts.append(f"rest={decoded['rest']}")
    return parts


def format_text(obj: JsonObject) -> str:
    """The plain-text line of a PDU from its `pdu_to_dict` object, after FRAME and TIME."""
    return "  ".join([obj["src"], _names_text(obj["flag_names"]), obj["code_name"], *_body_text(obj)])


#: the dict of an Information or Event Notification OAMPDU without its TLVs, whose text
#: follows its own in a line (and the TLVs' text is kept where the objects recur)
_HEADS = (Information, EventNotification)
_HEAD_TO_DICT = _OnFirstUse(lambda cls: _compile_to_dict([f for f in _SCHEMAS[cls].fields if f.key != "tlvs"]))


def _tlv_text_in(pdu_code: int) -> Callable[[Any], str]:
    return lambda tlv: tlv_text(tlv_to_dict(tlv, pdu_code))


_TLV_TEXT_IN = {
    int(pdu_code): {cls: _remembered(text) if cls is InfoTlv else text for cls in _TLV_SCHEMAS}
    for pdu_code in (Code.INFORMATION, Code.EVENT_NOTIFICATION)
    for text in (_tlv_text_in(pdu_code),)
}


def pdu_text(pdu: Oampdu) -> str:
    """``format_text(pdu_to_dict(pdu))``, faster when TLV objects recur (equal, tested)."""
    if not isinstance(pdu, _HEADS):
        return format_text(pdu_to_dict(pdu))
    head = _HEAD_TO_DICT[type(pdu)]
    texts = _TLV_TEXT_IN[pdu.code]
    # nothing in these two codes' lines comes after the TLVs (`_body_text`)
    return "  ".join([format_text(head(pdu)), *[texts[type(tlv)](tlv) for tlv in pdu.tlvs]])


def _error_text(obj: JsonObject) -> str:
    detail = f"octet {obj['offset']}" + (f": {obj['detail']}" if obj["detail"] else "")
    return f"{obj.get('src', '-')}  MALFORMED {obj['error']} ({detail})"


# -- the decoding loop --------------------------------------------------------------------


@attrs.define
class DecodeStats:
    """What `CaptureDecoder` has seen (complete once its lines are exhausted or closed)."""

    records: int = 0  #: records read from the capture
    oampdus: int = 0
    malformed: int = 0
    not_oam: int = 0  #: Ethernet frames that are not OAMPDUs
    not_ethernet: int = 0  #: records of another link type (after the first record)
    by_code: dict[int, int] = attrs.Factory(dict)  #: OAMPDUs per code

    def summary(self) -> str:
        """One line: OAMPDUs decoded (per code), malformed, non-OAM frames skipped."""
        per_code = ", ".join(
            f"{_CODE_NAMES.get(code, f'{_UNSUPPORTED} {code:#04x}')} {count}"
            for code, count in sorted(self.by_code.items())
        )
        text = f"{self.oampdus} OAMPDUs decoded" + (f" ({per_code})" if per_code else "")
        text += f", {self.malformed} malformed, {self.not_oam} non-OAM frames skipped"
        if self.not_ethernet:
            text += f", {self.not_ethernet} non-Ethernet records skipped"
        return text


class CaptureDecoder:
    """Turns capture records into output lines (plain text or JSON), counting as it goes.

    Decoding goes through `PeerDecoder`, which returns the very same object when a peer
    repeats its last frame; the rendered line body is kept per peer and reused when the
    object is the same, so a steady-state frame costs two dict look-ups and a compare.
    """

    def __init__(self, json_output: bool = False) -> None:
        self.stats = DecodeStats()
        self.json_output = json_output
        self._decoder = PeerDecoder()
        self._rendered: dict[str, tuple[Oampdu, str]] = {}

    def render(self, pdu: Oampdu) -> str:
        """The line of *pdu* after FRAME and TIME (for JSON: the object minus its ``{``)."""
        return pdu_to_json(pdu)[1:] if self.json_output else pdu_text(pdu)

    def _malformed_line(self, record: CaptureRecord, error: DecodeError, first_time: float) -> str:
        obj = error_to_dict(record.number, record.time, record.data, error)
        if self.json_output:
            return _dumps(obj)
        return f"{record.number}  {record.time - first_time:.6f}  {_error_text(obj)}"

    def lines(self, records: Iterable[CaptureRecord]) -> Iterator[str]:
        """Yield one line (no newline) per OAMPDU or malformed OAMPDU in *records*.

        Raises:
            NotEthernetError: the first record is not Ethernet.
            CaptureError, OSError: from *records*, after the lines of the records before.
        """
        iterator = iter(records)
        first = next(iterator, None)
        if first is None:
            return
        if first.linktype != ETHERNET:
            raise NotEthernetError(first.linktype)
        yield from self._lines(itertools.chain((first,), iterator), first.time)

    def _lines(self, records: Iterator[CaptureRecord], first_time: float) -> Iterator[str]:
        # the per-frame loop: everything it touches is a local, the busiest counters too
        stats, by_code, rendered = self.stats, self.stats.by_code, self._rendered
        decode, render, json_output = self._decoder.decode, self.render, self.json_output
        ethertype = _ETHERTYPE
        count = oampdus = 0
        try:
            for record in records:
                count += 1
                if record.linktype != ETHERNET:
                    stats.not_ethernet += 1
                    continue
                data = record.data
                # another EtherType is never an OAMPDU (DecodeReason.not_oampdu), a VLAN-tagged
                # OAMPDU neither: skip both without raising (frames under 14 octets are decoded)
                if not data.startswith(ethertype, 12) and len(data) >= 14:
                    stats.not_oam += 1
                    continue
                try:
                    pdu = decode(data)
                except DecodeError as error:
                    if error.reason.not_oampdu:
                        stats.not_oam += 1
                    else:
                        stats.malformed += 1
                        yield self._malformed_line(record, error, first_time)
                    continue
                cached = rendered.get(pdu.src)
                if cached is not None and cached[0] is pdu:
                    body = cached[1]
                else:
                    body = render(pdu)
                    if cached is None and len(rendered) >= _MAX_RENDERED_PEERS:
                        del rendered[next(iter(rendered))]
                    rendered[pdu.src] = (pdu, body)
                code = pdu.code
                by_code[code] = by_code.get(code, 0) + 1
                oampdus += 1
                if json_output:
                    yield '{"frame":%d,"time":%r,%s' % (record.number, record.time, body)  # noqa: UP031
                else:
                    yield "%d  %.6f  %s" % (record.number, record.time - first_time, body)  # noqa: UP031
        finally:
            stats.records += count
            stats.oampdus += oampdus


# -- the command --------------------------------------------------------------------------


def open_records(source: str | os.PathLike[str], stdin: BinaryIO | None = None) -> Iterator[CaptureRecord]:
    """The records of the capture file *source*; ``"-"`` reads *stdin* (a binary stream)."""
    if str(source) == "-" and stdin is not None:
        return iter_capture(stdin)
    return read_capture(source)


def _write_chunked(lines: Iterable[str], out: TextIO, chunk_lines: int) -> None:
    """Write *lines* to *out*, *chunk_lines* at a time (and what is pending on an error)."""
    iterator = iter(lines)
    chunk_lines = max(1, chunk_lines)
    pending: list[str] = []
    try:
        while True:
            # extend keeps what it took before an error, which the finally then writes
            pending.extend(itertools.islice(iterator, chunk_lines))
            if not pending:
                return
            pending.append("")  # the last newline, without copying the chunk once more
            text = "\n".join(pending)
            pending.clear()
            out.write(text)
    finally:
        if pending:
            pending.append("")
            out.write("\n".join(pending))


def run_decode(
    source: str | os.PathLike[str],
    out: TextIO,
    err: TextIO,
    *,
    json_output: bool = False,
    stdin: BinaryIO | None = None,
) -> int:
    """Decode the capture *source* to *out*, the summary and errors to *err*.

    Returns `EXIT_OK`, or `EXIT_UNREADABLE` if the input cannot be read to the end (the
    lines decoded before the problem are written first).  A `BrokenPipeError` from
    writing to *out* propagates (the caller decides how to exit).
    """
    decoder = CaptureDecoder(json_output)
    name = source_name(source, stdin)
    chunk_lines = 1 if _is_tty(out) else _CHUNK_LINES
    problem = ""
    try:
        _write_chunked(decoder.lines(open_records(source, stdin)), out, chunk_lines)
    except BrokenPipeError:
        raise
    except (CaptureError, NotEthernetError) as error:
        problem = f"{name}: {error}"
    except OSError as error:
        problem = f"cannot read {name}: {error.strerror or error}"
    out.flush()
    if decoder.stats.records or not problem:
        err.write(f"efmoam decode: {decoder.stats.summary()}\n")
    if problem:
        err.write(f"efmoam decode: error: {problem}\n")
    err.flush()
    return EXIT_UNREADABLE if problem else EXIT_OK


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except ValueError:  # closed
        return False
