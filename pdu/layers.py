# scapy.contrib.description = IEEE 802.3 Clause 57 OAM (EFM OAM, Link OAM)
# scapy.contrib.status = loads
"""scapy layers for every Clause 57 OAMPDU: the one definition of the wire format.

Written the way a scapy contrib module is: field lists, then ``bind_layers`` at the
bottom.  Importing this module binds ``SlowProtocol(subtype=3)`` to `OAM`, so a user can
craft and dissect OAMPDUs in a scapy shell::

    >>> from pdu.layers import *
    >>> pkt = Ether(src="00:11:22:33:44:55") / SlowProtocol() / OAM(flags=0x08) / \\
    ...       OAMInformation(tlvs=[OAMInformationTLV(oam_config="active+link_events")])

The fast codec (`pdu.codec`) compiles its struct formats from these field lists, so a
field changed here changes both paths.  Field names are the names of the typed model
(`pdu.model`), minus the ``length`` octets the model does not carry.

The layers work with scapy 2.5 (Debian bookworm's) and every later scapy.  The two
differences that matter here are met once each: 2.5 warns at import (the quiet import of
the Ethernet layer below) and 2.6 bounds dissected lists (`_list_field`).
"""

from __future__ import annotations

import inspect
from typing import Any

from scapy.error import log_runtime
from scapy.fields import (
    BitEnumField,
    BitField,
    BitFieldLenField,
    ByteEnumField,
    ByteField,
    FieldLenField,
    FlagsField,
    IntField,
    LongField,
    OUIField,
    PacketListField,
    ShortField,
    StrField,
    StrLenField,
    XByteField,
    XIntField,
)
from scapy.packet import Packet, bind_layers

from pdu.enums import (
    FLAG_NAMES,
    MULTI_VALUE_BRANCHES,
    OAM_CONFIG_NAMES,
    OAM_SUBTYPE,
    Branch,
    Code,
    EventTlvType,
    InfoTlvType,
    LoopbackCommand,
    MuxAction,
    ParserAction,
)

# scapy 2.5 (Debian bookworm) reads the routing table when scapy.layers.l2 is imported, and
# warns on stderr when the loopback has no address (a new network namespace); later scapy
# reads it only when asked.  Nothing here routes, so scapy's logger is off for that import
# (its own switch: pdu imports no logging, tests/unit/test_sans_io.py).
_runtime_disabled = log_runtime.disabled
log_runtime.disabled = True
try:
    from scapy.contrib.slowprot import SlowProtocol
    from scapy.layers.l2 import Ether
finally:
    log_runtime.disabled = _runtime_disabled

__all__ = [
    "OAM",
    "OAMErroredFramePeriodTLV",
    "OAMErroredFrameSecondsSummaryTLV",
    "OAMErroredFrameTLV",
    "OAMErroredSymbolPeriodTLV",
    "OAMEventNotification",
    "OAMInformation",
    "OAMInformationTLV",
    "OAMLoopbackControl",
    "OAMOrganizationSpecific",
    "OAMOrganizationSpecificTLV",
    "OAMUnknownTLV",
    "OAMVariableContainer",
    "OAMVariableDescriptor",
    "OAMVariableEntry",
    "OAMVariableRequest",
    "OAMVariableResponse",
    "Ether",
    "SlowProtocol",
]

MAX_LIST = 1000  # a 1514-octet frame holds at most 748 two-octet TLVs


# scapy 2.6 and later stop dissecting a list at conf.max_list_count (100) unless the field
# gives max_count; scapy 2.5 (Debian bookworm) has neither that stop nor the argument
_LIST_BOUND: dict[str, Any] = (
    {"max_count": MAX_LIST} if "max_count" in inspect.signature(PacketListField).parameters else {}
)


def _list_field(name: str, cls: type[Packet], next_cls: Any) -> PacketListField:
    """A list of layers, each chosen by `next_cls`, up to `MAX_LIST` of them."""
    return PacketListField(name, [], cls, next_cls_cb=next_cls, **_LIST_BOUND)


def _names(enum_cls: Any) -> dict[int, str]:
    return {member.value: member.name.lower() for member in enum_cls}


class OAM(Packet):
    """OAMPDU common header after the Slow Protocols subtype (Clause 57.4.2)."""

    name = "OAMPDU"
    fields_desc = [
        FlagsField("flags", 0, 16, FLAG_NAMES),
        ByteEnumField("code", Code.INFORMATION, _names(Code)),
    ]


# -- TLVs: type, length (the whole TLV, header included), value ---------------------


class _OAMTLV(Packet):
    """Common behaviour of every TLV: the TLV's own length bounds it."""

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        return b"", s


class OAMUnknownTLV(_OAMTLV):
    """A TLV of a type this module does not know: skipped by its length."""

    name = "OAM unknown TLV"
    fields_desc = [
        XByteField("type", 0x03),
        FieldLenField("length", None, length_of="value", fmt="B", adjust=lambda _, x: x + 2),
        StrLenField("value", b"", length_from=lambda pkt: max(pkt.length - 2, 0)),
    ]


class OAMOrganizationSpecificTLV(_OAMTLV):
    """Organization Specific Information or Event TLV, type 0xFE (57.5.2.3, 57.5.3.5)."""

    name = "OAM organization specific TLV"
    fields_desc = [
        XByteField("type", 0xFE),
        FieldLenField("length", None, length_of="value", fmt="B", adjust=lambda _, x: x + 5),
        OUIField("oui", 0),
        StrLenField("value", b"", length_from=lambda pkt: max(pkt.length - 5, 0)),
    ]


class OAMInformationTLV(_OAMTLV):
    """Local (0x01) or Remote (0x02) Information TLV, 16 octets (Clause 57.5.2.1)."""

    name = "OAM information TLV"
    fields_desc = [
        ByteEnumField("type", InfoTlvType.LOCAL, _names(InfoTlvType)),
        ByteField("length", 16),
        ByteField("oam_version", 1),
        ShortField("revision", 0),
        BitField("state_reserved", 0, 5),
        BitEnumField("mux_action", MuxAction.FORWARD, 1, _names(MuxAction)),
        BitEnumField("parser_action", ParserAction.FORWARD, 2, _names(ParserAction)),
        FlagsField("oam_config", 0, 8, OAM_CONFIG_NAMES),
        BitField("oampdu_config_reserved", 0, 5),
        BitField("max_pdu_size", 1518, 11),
        OUIField("oui", 0),
        XIntField("vendor_info", 0),
    ]


class OAMErroredSymbolPeriodTLV(_OAMTLV):
    """Errored Symbol Period Event TLV, 40 octets (Clause 57.5.3.1)."""

    name = "OAM errored symbol period event"
    fields_desc = [
        ByteEnumField("type", EventTlvType.ERRORED_SYMBOL_PERIOD, _names(EventTlvType)),
        ByteField("length", 40),
        ShortField("timestamp", 0),  # 100 ms units
        LongField("window", 0),  # symbols
        LongField("threshold", 1),
        LongField("errors", 0),
        LongField("error_running_total", 0),
        IntField("event_running_total", 0),
    ]


class OAMErroredFrameTLV(_OAMTLV):
    """Errored Frame Event TLV, 26 octets (Clause 57.5.3.2)."""

    name = "OAM errored frame event"
    fields_desc = [
        ByteEnumField("type", EventTlvType.ERRORED_FRAME, _names(EventTlvType)),
        ByteField("length", 26),
        ShortField("timestamp", 0),
        ShortField("window", 10),  # 100 ms units
        IntField("threshold", 1),
        IntField("errors", 0),
        LongField("error_running_total", 0),
        IntField("event_running_total", 0),
    ]


class OAMErroredFramePeriodTLV(_OAMTLV):
    """Errored Frame Period Event TLV, 28 octets (Clause 57.5.3.3)."""

    name = "OAM errored frame period event"
    fields_desc = [
        ByteEnumField("type", EventTlvType.ERRORED_FRAME_PERIOD, _names(EventTlvType)),
        ByteField("length", 28),
        ShortField("timestamp", 0),
        IntField("window", 0),  # frames
        IntField("threshold", 1),
        IntField("errors", 0),
        LongField("error_running_total", 0),
        IntField("event_running_total", 0),
    ]


class OAMErroredFrameSecondsSummaryTLV(_OAMTLV):
    """Errored Frame Seconds Summary Event TLV, 18 octets (Clause 57.5.3.4)."""

    name = "OAM errored frame seconds summary event"
    fields_desc = [
        ByteEnumField("type", EventTlvType.ERRORED_FRAME_SECONDS_SUMMARY, _names(EventTlvType)),
        ByteField("length", 18),
        ShortField("timestamp", 0),
        ShortField("window", 600),  # 100 ms units
        ShortField("threshold", 1),
        ShortField("errors", 0),
        IntField("error_running_total", 0),
        IntField("event_running_total", 0),
    ]


#: TLV layer per type inside an Information OAMPDU; others are `OAMUnknownTLV`.
INFO_TLV_LAYERS: dict[int, type[Packet]] = {
    InfoTlvType.LOCAL: OAMInformationTLV,
    InfoTlvType.REMOTE: OAMInformationTLV,
    InfoTlvType.ORGANIZATION_SPECIFIC: OAMOrganizationSpecificTLV,
}

#: TLV layer per type inside an Event Notification OAMPDU.
EVENT_TLV_LAYERS: dict[int, type[Packet]] = {
    EventTlvType.ERRORED_SYMBOL_PERIOD: OAMErroredSymbolPeriodTLV,
    EventTlvType.ERRORED_FRAME: OAMErroredFrameTLV,
    EventTlvType.ERRORED_FRAME_PERIOD: OAMErroredFramePeriodTLV,
    EventTlvType.ERRORED_FRAME_SECONDS_SUMMARY: OAMErroredFrameSecondsSummaryTLV,
    EventTlvType.ORGANIZATION_SPECIFIC: OAMOrganizationSpecificTLV,
}


def _tlv_dispatcher(table: dict[int, type[Packet]]) -> Any:
    """A PacketListField callback: next TLV class by type, None at End or at the end."""

    def next_tlv(_pkt: Packet, _lst: list[Any], _cur: Packet | None, remain: bytes) -> type[Packet] | None:
        if not remain or remain[0] == 0:
            return None  # End of TLV marker (its length is ignored) or no bytes left
        return table.get(remain[0], OAMUnknownTLV)

    return next_tlv


class _OAMData(Packet):
    """Code-specific data: whatever follows the last TLV is Ethernet padding."""

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        return b"", s


class OAMInformation(_OAMData):
    """Information OAMPDU data, code 0x00 (Clause 57.4.3.1)."""

    name = "OAM information"
    fields_desc = [
        _list_field("tlvs", OAMUnknownTLV, _tlv_dispatcher(INFO_TLV_LAYERS)),
    ]


class OAMEventNotification(_OAMData):
    """Event Notification OAMPDU data, code 0x01 (Clause 57.4.3.2)."""

    name = "OAM event notification"
    fields_desc = [
        ShortField("sequence", 0),
        _list_field("tlvs", OAMUnknownTLV, _tlv_dispatcher(EVENT_TLV_LAYERS)),
    ]


# -- Variable Request / Response (Clause 57.4.3.3-4, 57.6) ---------------------------


class OAMVariableDescriptor(_OAMTLV):
    """Variable Descriptor: branch and leaf of a Clause 30 object, package or attribute."""

    name = "OAM variable descriptor"
    fields_desc = [
        ByteEnumField("branch", Branch.ATTRIBUTE, _names(Branch)),
        ShortField("leaf", 0),
    ]


def _next_descriptor(_pkt: Packet, _lst: list[Any], _cur: Packet | None, remain: bytes) -> type[Packet] | None:
    return OAMVariableDescriptor if remain and remain[0] != Branch.END else None


class OAMVariableRequest(_OAMData):
    """Variable Request OAMPDU data, code 0x02: descriptors up to a branch of 0."""

    name = "OAM variable request"
    fields_desc = [
        _list_field("descriptors", OAMVariableDescriptor, _next_descriptor),
    ]


class OAMVariableEntry(_OAMTLV):
    """One width+value, or an indication (bit 7 set, code in the low 7 bits)."""

    name = "OAM variable entry"
    fields_desc = [
        BitField("is_indication", 0, 1),
        BitFieldLenField("width", None, 7, length_of="value", adjust=lambda _, x: x % 128),
        StrLenField("value", b"", length_from=lambda pkt: 0 if pkt.is_indication else (pkt.width or 128)),
    ]


def _next_entry(pkt: Packet, _lst: list[Any], cur: Packet | None, remain: bytes) -> type[Packet] | None:
    # `cur` is the entry just dissected (not yet in the list), None before the first
    if not remain or (cur is not None and (pkt.branch not in MULTI_VALUE_BRANCHES or cur.is_indication)):
        return None
    return OAMVariableEntry


class OAMVariableContainer(_OAMTLV):
    """Variable Container: one entry, or for objects and packages entries up to an indication."""

    name = "OAM variable container"
    fields_desc = [
        ByteEnumField("branch", Branch.ATTRIBUTE, _names(Branch)),
        ShortField("leaf", 0),
        _list_field("entries", OAMVariableEntry, _next_entry),
    ]


def _next_container(_pkt: Packet, _lst: list[Any], _cur: Packet | None, remain: bytes) -> type[Packet] | None:
    return OAMVariableContainer if remain and remain[0] != Branch.END else None


class OAMVariableResponse(_OAMData):
    """Variable Response OAMPDU data, code 0x03: containers up to a branch of 0."""

    name = "OAM variable response"
    fields_desc = [
        _list_field("containers", OAMVariableContainer, _next_container),
    ]


class OAMLoopbackControl(_OAMData):
    """Loopback Control OAMPDU data, code 0x04 (Clause 57.4.3.5)."""

    name = "OAM loopback control"
    # not "command": that name is a method of every scapy Packet
    fields_desc = [ByteEnumField("loopback_command", LoopbackCommand.ENABLE, _names(LoopbackCommand))]


class OAMOrganizationSpecific(Packet):
    """Organization Specific OAMPDU data, code 0xFE: OUI, then the organization's octets."""

    name = "OAM organization specific"
    fields_desc = [OUIField("oui", 0), StrField("value", b"")]


bind_layers(SlowProtocol, OAM, subtype=OAM_SUBTYPE)
bind_layers(OAM, OAMInformation, code=Code.INFORMATION)
bind_layers(OAM, OAMEventNotification, code=Code.EVENT_NOTIFICATION)
bind_layers(OAM, OAMVariableRequest, code=Code.VARIABLE_REQUEST)
bind_layers(OAM, OAMVariableResponse, code=Code.VARIABLE_RESPONSE)
bind_layers(OAM, OAMLoopbackControl, code=Code.LOOPBACK_CONTROL)
bind_layers(OAM, OAMOrganizationSpecific, code=Code.ORGANIZATION_SPECIFIC)
