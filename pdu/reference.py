"""The model to and from scapy packets: scapy's own reading, used as the reference.

`decode_with_scapy` dissects with the scapy layers and `encode_with_scapy` builds with
them; the tests prove that the fast codec agrees with both on every vector and on
generated frames.  scapy's dissection does not check lengths, so this path is only
meaningful for well-formed frames; for everything else the fast codec is the authority.
Model fields map to layer fields by name.
"""

from __future__ import annotations

from typing import Any

import attrs
from scapy.fields import FlagValue
from scapy.packet import Packet, Raw

from pdu import layers as L
from pdu.codec import end_marker, finish_frame
from pdu.enums import MAX_OAMPDU_SIZE, OAM_SUBTYPE, SLOW_PROTOCOLS_MULTICAST
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
)

_DST = SLOW_PROTOCOLS_MULTICAST.hex(":")


def _plain(value: Any) -> Any:
    return int(value) if isinstance(value, FlagValue) else value


def _model_of(layer: Packet, cls: type[Any]) -> Any:
    return cls(**{a.name: _plain(layer.getfieldval(a.name)) for a in attrs.fields(cls)})


def _tlv_from_scapy(layer: Packet) -> Any:
    if isinstance(layer, L.OAMInformationTLV):
        return _model_of(layer, InfoTlv)
    if isinstance(layer, L.OAMOrganizationSpecificTLV):
        return _model_of(layer, OrgSpecificTlv)
    if isinstance(layer, L.OAMUnknownTLV):
        return _model_of(layer, UnknownTlv)
    return _model_of(layer, LinkEventTlv)


def _container_from_scapy(layer: Packet) -> VariableContainer:
    values = tuple(e.value for e in layer.entries if not e.is_indication)
    ends = [e.width for e in layer.entries if e.is_indication]
    return VariableContainer(layer.branch, layer.leaf, values, ends[0] if ends else None)


def from_scapy(pkt: Packet) -> Oampdu:
    """The model of a dissected ``Ether / SlowProtocol / OAM / ...`` packet."""
    oam = pkt[L.OAM]
    src, flags, data = pkt[L.Ether].src, int(oam.flags), oam.payload
    if isinstance(data, L.OAMInformation):
        return Information(src, flags, tuple(_tlv_from_scapy(t) for t in data.tlvs))
    if isinstance(data, L.OAMEventNotification):
        return EventNotification(src, flags, data.sequence, tuple(_tlv_from_scapy(t) for t in data.tlvs))
    if isinstance(data, L.OAMVariableRequest):
        return VariableRequest(src, flags, tuple(_model_of(d, VariableDescriptor) for d in data.descriptors))
    if isinstance(data, L.OAMVariableResponse):
        return VariableResponse(src, flags, tuple(_container_from_scapy(c) for c in data.containers))
    if isinstance(data, L.OAMLoopbackControl):
        return LoopbackControl(src, flags, data.loopback_command)
    if isinstance(data, L.OAMOrganizationSpecific):
        return OrgSpecificPdu(src, flags, data.oui, data.value.rstrip(b"\0"))
    return UnsupportedPdu(src, flags, oam.code, bytes(data).rstrip(b"\0"))


def decode_with_scapy(frame: bytes) -> Oampdu:
    """Dissect `frame` with the scapy layers and return the model."""
    return from_scapy(L.Ether(frame))


def _tlv_to_scapy(tlv: Any, table: dict[int, type[Packet]]) -> Packet:
    if isinstance(tlv, OrgSpecificTlv):
        return L.OAMOrganizationSpecificTLV(oui=tlv.oui, value=tlv.value)
    if isinstance(tlv, UnknownTlv):
        return L.OAMUnknownTLV(type=tlv.type, value=tlv.value)
    return table[tlv.type](**attrs.asdict(tlv))


def _container_to_scapy(c: VariableContainer) -> Packet:
    entries = [L.OAMVariableEntry(value=v) for v in c.values]
    if c.indication is not None:
        entries.append(L.OAMVariableEntry(is_indication=1, width=c.indication))
    return L.OAMVariableContainer(branch=c.branch, leaf=c.leaf, entries=entries)


def _data_to_scapy(pdu: Oampdu) -> Packet:
    if isinstance(pdu, Information):
        return L.OAMInformation(tlvs=[_tlv_to_scapy(t, L.INFO_TLV_LAYERS) for t in pdu.tlvs])
    if isinstance(pdu, EventNotification):
        tlvs = [_tlv_to_scapy(t, L.EVENT_TLV_LAYERS) for t in pdu.tlvs]
        return L.OAMEventNotification(sequence=pdu.sequence, tlvs=tlvs)
    if isinstance(pdu, VariableRequest):
        descriptors = [L.OAMVariableDescriptor(branch=d.branch, leaf=d.leaf) for d in pdu.descriptors]
        return L.OAMVariableRequest(descriptors=descriptors)
    if isinstance(pdu, VariableResponse):
        return L.OAMVariableResponse(containers=[_container_to_scapy(c) for c in pdu.containers])
    if isinstance(pdu, LoopbackControl):
        return L.OAMLoopbackControl(loopback_command=pdu.loopback_command)
    if isinstance(pdu, OrgSpecificPdu):
        return L.OAMOrganizationSpecific(oui=pdu.oui, value=pdu.value)
    return Raw(pdu.data)


def to_scapy(pdu: Oampdu) -> Packet:
    """The scapy packet of an OAMPDU (unpadded, as scapy builds it)."""
    head = L.Ether(dst=_DST, src=pdu.src) / L.SlowProtocol(subtype=OAM_SUBTYPE)
    return head / L.OAM(flags=int(pdu.flags), code=pdu.code) / _data_to_scapy(pdu)


def encode_with_scapy(pdu: Oampdu, max_pdu_size: int = MAX_OAMPDU_SIZE) -> bytes:
    """Build the frame with scapy, then pad it as `pdu.encode` does."""
    return finish_frame(bytes(to_scapy(pdu)), end_marker(pdu), max_pdu_size)
