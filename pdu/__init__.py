"""The IEEE 802.3 Clause 57 OAMPDU wire format.

`pdu.layers` holds the scapy layers (the one definition of every field), `pdu.model`
the typed model, and this package's API decodes frames into that model and encodes it
back::

    from pdu import decode, encode, DecodeError

Nothing here imports scapy: the codec builds its struct functions from the layers' field
lists generated ahead of time (`pdu.layer_fields`), so only users of the scapy layer API
(`pdu.layers`, `pdu.reference`) load scapy, which enumerates every interface of the
network namespace at import.  The names are loaded on first use: the numbers
(`pdu.enums`) and the model need no codec, so a program that only reads a configuration
(``efmoam config check``) or renders a view builds none.  Type checkers see plain imports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pdu.codec import (
        MAX_FRAME_LENGTH as MAX_FRAME_LENGTH,
        PeerDecoder as PeerDecoder,
        decode as decode,
        encode as encode,
    )
    from pdu.enums import (
        CRITICAL_FLAGS as CRITICAL_FLAGS,
        EVENT_LOG_TYPE_NAMES as EVENT_LOG_TYPE_NAMES,
        FLAG_EVENT_TYPES as FLAG_EVENT_TYPES,
        Branch as Branch,
        Code as Code,
        EventLogType as EventLogType,
        EventTlvType as EventTlvType,
        Flag as Flag,
        InfoTlvType as InfoTlvType,
        LoopbackCommand as LoopbackCommand,
        MuxAction as MuxAction,
        OamConfig as OamConfig,
        ParserAction as ParserAction,
        VariableIndication as VariableIndication,
    )
    from pdu.errors import DecodeError as DecodeError, DecodeReason as DecodeReason, EncodeError as EncodeError
    from pdu.model import (
        EventNotification as EventNotification,
        Information as Information,
        InfoTlv as InfoTlv,
        LinkEventTlv as LinkEventTlv,
        LoopbackControl as LoopbackControl,
        Oampdu as Oampdu,
        OrgSpecificPdu as OrgSpecificPdu,
        OrgSpecificTlv as OrgSpecificTlv,
        UnknownTlv as UnknownTlv,
        UnsupportedPdu as UnsupportedPdu,
        VariableContainer as VariableContainer,
        VariableDescriptor as VariableDescriptor,
        VariableRequest as VariableRequest,
        VariableResponse as VariableResponse,
        format_oui as format_oui,
    )

#: the module each public name comes from
_HOMES = {
    "pdu.codec": ("MAX_FRAME_LENGTH", "PeerDecoder", "decode", "encode"),
    "pdu.enums": (
        "CRITICAL_FLAGS",
        "EVENT_LOG_TYPE_NAMES",
        "FLAG_EVENT_TYPES",
        "Branch",
        "Code",
        "EventLogType",
        "EventTlvType",
        "Flag",
        "InfoTlvType",
        "LoopbackCommand",
        "MuxAction",
        "OamConfig",
        "ParserAction",
        "VariableIndication",
    ),
    "pdu.errors": ("DecodeError", "DecodeReason", "EncodeError"),
    "pdu.model": (
        "EventNotification",
        "Information",
        "InfoTlv",
        "LinkEventTlv",
        "LoopbackControl",
        "Oampdu",
        "OrgSpecificPdu",
        "OrgSpecificTlv",
        "UnknownTlv",
        "UnsupportedPdu",
        "VariableContainer",
        "VariableDescriptor",
        "VariableRequest",
        "VariableResponse",
        "format_oui",
    ),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'pdu' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups are plain module attributes
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME_OF))
