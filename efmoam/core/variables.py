"""Answering Variable Requests: the Clause 30 OAM attributes a port keeps (57.6).

Leaves are the Clause 30 attribute numbers under branch 0x07.  Counters are sent as
4 octets (they wrap at 2**32), flags and revisions as 2, configurations and states as 1,
as the attributes' sizes on the wire in the Information TLV.  MAC statistics
(aFramesReceivedOK and friends) are answered when the caller has supplied them
(`OamPort.update_mac_attributes`), as 8 octets.  Anything else is answered with the
"not supported" indication of its branch.

The answers are read from `Readings`, a snapshot the port makes when a request
arrives: nothing here reads the port itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

import attrs

from efmoam.core.discovery import DiscoveryState
from efmoam.core.outputs import PeerInfo
from efmoam.core.stats import OamStatistics
from pdu.enums import Branch, VariableIndication
from pdu.model import InfoTlv, VariableContainer, VariableDescriptor


@attrs.frozen
class Readings:
    """What the attributes are read from: a port's values when a request arrives."""

    enabled: bool
    state: DiscoveryState
    local_tlv: InfoTlv
    local_flags: int
    peer: PeerInfo | None
    peer_flags: int
    stats: OamStatistics
    #: MAC statistics the caller supplied (Clause 30 leaf -> value)
    mac_attributes: Mapping[int, int]


_Getter = Callable[[Readings], bytes | None]


def _u(size: int, read: Callable[[Readings], int | None]) -> _Getter:
    def get(readings: Readings) -> bytes | None:
        value = read(readings)
        return None if value is None else (value % (1 << (8 * size))).to_bytes(size, "big")

    return get


def _stat(name: str) -> _Getter:
    return _u(4, lambda r: getattr(r.stats, name))


def _peer(size: int, attr: str) -> _Getter:
    return _u(size, lambda r: None if r.peer is None else int(getattr(r.peer, attr)))


def _peer_mac(r: Readings) -> bytes | None:
    return None if r.peer is None else bytes.fromhex(r.peer.mac.replace(":", ""))


def _mac_statistic(leaf: int) -> _Getter:
    return _u(8, lambda r: r.mac_attributes.get(leaf))


class Attribute(NamedTuple):
    """A Clause 30 attribute a port answers: its name and how its value is read."""

    name: str
    get: _Getter


#: MAC statistics (oMACEntity) a caller may supply, by Clause 30 leaf
MAC_STATISTICS = {2: "aFramesTransmittedOK", 5: "aFramesReceivedOK"}
A_FRAMES_RECEIVED_OK = 5

#: Clause 30 attribute leaf -> the attribute
ATTRIBUTES: dict[int, Attribute] = {
    **{leaf: Attribute(name, _mac_statistic(leaf)) for leaf, name in MAC_STATISTICS.items()},
    237: Attribute("aOAMAdminState", _u(1, lambda r: 1 if r.enabled else 2)),  # enabled(1)/disabled(2)
    238: Attribute("aOAMMode", _u(1, lambda r: 1 if r.local_tlv.oam_config & 1 else 0)),  # active(1)/passive(0)
    239: Attribute("aOAMRemoteMACAddress", _peer_mac),
    240: Attribute("aOAMRemoteConfiguration", _peer(1, "functions")),
    241: Attribute("aOAMRemotePDUConfiguration", _peer(2, "max_pdu_size")),
    242: Attribute("aOAMLocalFlagsField", _u(2, lambda r: r.local_flags)),
    243: Attribute("aOAMRemoteFlagsField", _u(2, lambda r: None if r.peer is None else r.peer_flags)),
    244: Attribute("aOAMRemoteRevision", _peer(2, "config_revision")),
    246: Attribute("aOAMRemoteVendorOUI", _peer(3, "oui")),
    247: Attribute("aOAMRemoteVendorSpecificInfo", _peer(4, "vendor_info")),
    250: Attribute("aOAMUnsupportedCodesRx", _stat("unsupported_codes_rx")),
    251: Attribute("aOAMInformationTx", _stat("information_tx")),
    252: Attribute("aOAMInformationRx", _stat("information_rx")),
    254: Attribute("aOAMUniqueEventNotificationRx", _stat("unique_event_notification_rx")),
    255: Attribute("aOAMDuplicateEventNotificationRx", _stat("duplicate_event_notification_rx")),
    256: Attribute("aOAMLoopbackControlTx", _stat("loopback_control_tx")),
    257: Attribute("aOAMLoopbackControlRx", _stat("loopback_control_rx")),
    258: Attribute("aOAMVariableRequestTx", _stat("variable_request_tx")),
    259: Attribute("aOAMVariableRequestRx", _stat("variable_request_rx")),
    260: Attribute("aOAMVariableResponseTx", _stat("variable_response_tx")),
    261: Attribute("aOAMVariableResponseRx", _stat("variable_response_rx")),
    262: Attribute("aOAMOrganizationSpecificTx", _stat("org_specific_tx")),
    263: Attribute("aOAMOrganizationSpecificRx", _stat("org_specific_rx")),
    276: Attribute("aFramesLostDueToOAMError", _stat("frames_lost_due_to_oam")),
    333: Attribute("aOAMDiscoveryState", _u(1, lambda r: list(DiscoveryState).index(r.state))),
    334: Attribute("aOAMLocalConfiguration", _u(1, lambda r: int(r.local_tlv.oam_config))),
    335: Attribute("aOAMLocalPDUConfiguration", _u(2, lambda r: r.local_tlv.max_pdu_size)),
    336: Attribute("aOAMLocalRevision", _u(2, lambda r: r.local_tlv.revision)),
    337: Attribute("aOAMLocalState", _u(1, lambda r: r.local_tlv.mux_action << 2 | r.local_tlv.parser_action)),
    338: Attribute("aOAMUnsupportedCodesTx", _stat("unsupported_codes_tx")),
    339: Attribute("aOAMUniqueEventNotificationTx", _stat("unique_event_notification_tx")),
    340: Attribute("aOAMDuplicateEventNotificationTx", _stat("duplicate_event_notification_tx")),
}

_UNSUPPORTED = {
    Branch.OBJECT: VariableIndication.OBJECT_UNSUPPORTED,
    Branch.PACKAGE: VariableIndication.PACKAGE_UNSUPPORTED,
}


def answer(readings: Readings, descriptor: VariableDescriptor) -> VariableContainer:
    """The Variable Container answering one descriptor."""
    branch, leaf = descriptor.branch, descriptor.leaf
    if branch == Branch.ATTRIBUTE:
        attribute = ATTRIBUTES.get(leaf)
        value = attribute.get(readings) if attribute is not None else None
        if value is not None:
            return VariableContainer(branch, leaf, (value,))
    indication = _UNSUPPORTED.get(branch, VariableIndication.ATTRIBUTE_UNSUPPORTED)  # type: ignore[call-overload]
    return VariableContainer(branch, leaf, (), int(indication))


def container_size(container: VariableContainer) -> int:
    """Octets of a container on the wire."""
    return 3 + sum(1 + len(v) for v in container.values) + (container.indication is not None)


def answer_within(readings: Readings, descriptors: Iterable[VariableDescriptor], room: int) -> list[VariableContainer]:
    """Containers for `descriptors` that fit in `room` octets.

    When the next one would not fit, a container with the "exceeded OAMPDU data field"
    indication takes its place and the answer ends there (57.6.2).
    """
    containers: list[VariableContainer] = []
    overflow_size = 4
    for descriptor in descriptors:
        container = answer(readings, descriptor)
        size = container_size(container)
        if size + overflow_size > room:
            if overflow_size <= room:
                containers.append(
                    VariableContainer(
                        descriptor.branch, descriptor.leaf, (), int(VariableIndication.CONTAINER_TOO_LARGE)
                    )
                )
            break
        containers.append(container)
        room -= size
    return containers
