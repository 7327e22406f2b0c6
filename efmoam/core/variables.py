"""Answering Variable Requests: the Clause 30 OAM attributes a port keeps (57.6).

Leaves are the Clause 30 attribute numbers under branch 0x07.  Counters are sent as
4 octets (they wrap at 2**32), flags and revisions as 2, configurations and states as 1,
as the attributes' sizes on the wire in the Information TLV.  MAC statistics
(aFramesTransmittedOK and friends) are answered when the caller has supplied them with
`OamPort.update_mac_attributes`, as 8 octets.  Anything else is answered with the
"not supported" indication of its branch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from efmoam.core.discovery import DiscoveryState
from pdu import Branch, VariableContainer, VariableDescriptor, VariableIndication

if TYPE_CHECKING:
    from efmoam.core.port import OamPort

_Getter = Callable[["OamPort"], bytes | None]


def _u(size: int, read: Callable[[OamPort], int | None]) -> _Getter:
    def get(port: OamPort) -> bytes | None:
        value = read(port)
        return None if value is None else (value % (1 << (8 * size))).to_bytes(size, "big")

    return get


def _stat(name: str) -> _Getter:
    return _u(4, lambda port: getattr(port.stats, name))


def _peer(size: int, attr: str) -> _Getter:
    return _u(size, lambda port: None if port.peer is None else int(getattr(port.peer, attr)))


def _peer_mac(port: OamPort) -> bytes | None:
    return None if port.peer is None else bytes.fromhex(port.peer.mac.replace(":", ""))


#: Clause 30 attribute leaf -> value getter (None when there is nothing to report)
ATTRIBUTES: dict[int, _Getter] = {
    237: _u(1, lambda port: 1 if port.settings.enabled else 2),  # aOAMAdminState: enabled(1)/disabled(2)
    238: _u(1, lambda port: 1 if port.settings.oam_config & 1 else 0),  # aOAMMode: active(1)/passive(0)
    239: _peer_mac,  # aOAMRemoteMACAddress
    240: _peer(1, "functions"),  # aOAMRemoteConfiguration
    241: _peer(2, "max_pdu_size"),  # aOAMRemotePDUConfiguration
    242: _u(2, lambda port: int(port.local_flags)),  # aOAMLocalFlagsField
    243: _u(2, lambda port: None if port.peer is None else int(port.peer_flags)),  # aOAMRemoteFlagsField
    244: _peer(2, "config_revision"),  # aOAMRemoteRevision
    246: _peer(3, "oui"),  # aOAMRemoteVendorOUI
    247: _peer(4, "vendor_info"),  # aOAMRemoteVendorSpecificInfo
    250: _stat("unsupported_codes_rx"),
    251: _stat("information_tx"),
    252: _stat("information_rx"),
    254: _stat("unique_event_notification_rx"),
    255: _stat("duplicate_event_notification_rx"),
    256: _stat("loopback_control_tx"),
    257: _stat("loopback_control_rx"),
    258: _stat("variable_request_tx"),
    259: _stat("variable_request_rx"),
    260: _stat("variable_response_tx"),
    261: _stat("variable_response_rx"),
    262: _stat("org_specific_tx"),
    263: _stat("org_specific_rx"),
    276: _stat("frames_lost_due_to_oam"),  # aFramesLostDueToOAMError
    333: _u(1, lambda port: list(DiscoveryState).index(port.state)),  # aOAMDiscoveryState
    334: _u(1, lambda port: int(port.local_tlv.oam_config)),  # aOAMLocalConfiguration
    335: _u(2, lambda port: port.local_tlv.max_pdu_size),  # aOAMLocalPDUConfiguration
    336: _u(2, lambda port: port.local_tlv.revision),  # aOAMLocalRevision
    337: _u(1, lambda port: port.local_tlv.mux_action << 2 | port.local_tlv.parser_action),  # aOAMLocalState
    338: _stat("unsupported_codes_tx"),
    339: _stat("unique_event_notification_tx"),
    340: _stat("duplicate_event_notification_tx"),
}

_UNSUPPORTED = {
    Branch.OBJECT: VariableIndication.OBJECT_UNSUPPORTED,
    Branch.PACKAGE: VariableIndication.PACKAGE_UNSUPPORTED,
}


def answer(port: OamPort, descriptor: VariableDescriptor) -> VariableContainer:
    """The Variable Container answering one descriptor."""
    branch, leaf = descriptor.branch, descriptor.leaf
    if branch == Branch.ATTRIBUTE:
        getter = ATTRIBUTES.get(leaf)
        value = getter(port) if getter is not None else port.mac_attribute(leaf)
        if value is not None:
            return VariableContainer(branch, leaf, (value,))
    indication = _UNSUPPORTED.get(branch, VariableIndication.ATTRIBUTE_UNSUPPORTED)  # type: ignore[call-overload]
    return VariableContainer(branch, leaf, (), int(indication))


def container_size(container: VariableContainer) -> int:
    """Octets of a container on the wire."""
    return 3 + sum(1 + len(v) for v in container.values) + (container.indication is not None)


def answer_within(port: OamPort, descriptors: Iterable[VariableDescriptor], room: int) -> list[VariableContainer]:
    """Containers for `descriptors` that fit in `room` octets.

    When the next one would not fit, a container with the "exceeded OAMPDU data field"
    indication takes its place and the answer ends there (57.6.2).
    """
    containers: list[VariableContainer] = []
    overflow_size = 4
    for descriptor in descriptors:
        container = answer(port, descriptor)
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
