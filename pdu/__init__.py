"""The IEEE 802.3 Clause 57 OAMPDU wire format.

`pdu.layers` holds the scapy layers (the one definition of every field), `pdu.model`
the typed model, and this package's API decodes frames into that model and encodes it
back::

    from pdu import decode, encode, DecodeError
"""

from __future__ import annotations

from pdu.codec import MAX_FRAME_LENGTH, PeerDecoder, decode, encode
from pdu.enums import (
    Branch,
    Code,
    EventLogType,
    EventTlvType,
    Flag,
    InfoTlvType,
    LoopbackCommand,
    MuxAction,
    OamConfig,
    ParserAction,
    VariableIndication,
)
from pdu.errors import DecodeError, DecodeReason, EncodeError
from pdu.model import (
    EventNotification,
    Information,
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
    format_oui,
)

__all__ = [
    "MAX_FRAME_LENGTH",
    "Branch",
    "Code",
    "DecodeError",
    "DecodeReason",
    "EncodeError",
    "EventLogType",
    "EventNotification",
    "EventTlvType",
    "Flag",
    "InfoTlv",
    "InfoTlvType",
    "Information",
    "LinkEventTlv",
    "LoopbackCommand",
    "LoopbackControl",
    "MuxAction",
    "OamConfig",
    "Oampdu",
    "OrgSpecificPdu",
    "OrgSpecificTlv",
    "ParserAction",
    "PeerDecoder",
    "UnknownTlv",
    "UnsupportedPdu",
    "VariableContainer",
    "VariableDescriptor",
    "VariableIndication",
    "VariableRequest",
    "VariableResponse",
    "decode",
    "encode",
    "format_oui",
]
