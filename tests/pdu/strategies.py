"""Hypothesis strategies for valid model OAMPDUs, shared by the pdu, engine and daemon tests.

Every PDU drawn here is valid: `pdu.encode` accepts it with the default size limit (the
frame fits in 1514 octets) and ``decode(encode(x)) == x``.  That rules out two documented
ambiguities: `OrgSpecificPdu.value` and `UnsupportedPdu.data` never end in a zero octet
(it cannot be told from padding), and an `UnknownTlv` never uses a type the codec knows.

Field values cover the whole range of each field, reserved bits included; the common
values (Local Stable + Remote Stable flags, Active + Link Events config, branch 0x07, ...)
are drawn more often so both typical and odd frames appear.

Use::

    from tests.pdu.strategies import oampdus, information_pdus
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from hypothesis import strategies as st

from pdu import (
    Branch,
    EventNotification,
    EventTlvType,
    Flag,
    Information,
    InfoTlv,
    InfoTlvType,
    LinkEventTlv,
    LoopbackCommand,
    LoopbackControl,
    OamConfig,
    Oampdu,
    OrgSpecificPdu,
    OrgSpecificTlv,
    UnknownTlv,
    UnsupportedPdu,
    VariableContainer,
    VariableDescriptor,
    VariableIndication,
    VariableRequest,
    VariableResponse,
)

T = TypeVar("T")

HEADER_LENGTH = 18
MAX_FRAME = 1514  #: 1518-octet OAMPDU without FCS
MAX_DATA = MAX_FRAME - HEADER_LENGTH  #: octets after the code octet
MULTI_VALUE_BRANCHES = (Branch.OBJECT, Branch.PACKAGE)

#: the wire size of each standard link event TLV, by type
LINK_EVENT_SIZES = {1: 40, 2: 26, 3: 28, 4: 18}
#: bit widths of (timestamp, window, threshold, errors, error_running_total, event_running_total)
LINK_EVENT_BITS = {
    EventTlvType.ERRORED_SYMBOL_PERIOD: (16, 64, 64, 64, 64, 32),
    EventTlvType.ERRORED_FRAME: (16, 16, 32, 32, 64, 32),
    EventTlvType.ERRORED_FRAME_PERIOD: (16, 32, 32, 32, 64, 32),
    EventTlvType.ERRORED_FRAME_SECONDS_SUMMARY: (16, 16, 16, 16, 32, 32),
}
UNSUPPORTED_CODES = [*range(0x05, 0xFE), 0xFF]
DPOE_OUI = 0x001000  #: the only OUI Wireshark decodes further


def uint(bits: int) -> st.SearchStrategy[int]:
    """Any unsigned value of `bits` bits, edges included."""
    return st.integers(0, (1 << bits) - 1)


def _often(common: list[T], anything: st.SearchStrategy[T]) -> st.SearchStrategy[T]:
    return st.one_of(st.sampled_from(common), anything)


def _no_trailing_zero(data: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    return data.filter(lambda value: not value.endswith(b"\0"))


macs = st.binary(min_size=6, max_size=6).map(lambda octets: octets.hex(":"))
flags = _often(
    [Flag.LOCAL_EVALUATING, Flag.LOCAL_STABLE | Flag.REMOTE_STABLE, Flag.LINK_FAULT, 0x0052, 0x0054], uint(16)
)
ouis = _often([0x001122, 0x00AABB, 0x111111], uint(24))

# -- TLVs ---------------------------------------------------------------------------------

info_tlvs = st.builds(
    InfoTlv,
    type=st.sampled_from([InfoTlvType.LOCAL, InfoTlvType.REMOTE]),
    oam_version=_often([1], uint(8)),
    revision=uint(16),
    state_reserved=_often([0], uint(5)),
    mux_action=uint(1),
    parser_action=uint(2),
    oam_config=_often([OamConfig.ACTIVE | OamConfig.LINK_EVENTS, OamConfig.LINK_EVENTS], uint(8)),
    oampdu_config_reserved=_often([0], uint(5)),
    max_pdu_size=_often([64, 1500, 1518], uint(11)),
    oui=ouis,
    vendor_info=uint(32),
)
#: value sizes up to the largest a one-octet length allows (255 - 5)
org_tlvs = st.builds(OrgSpecificTlv, oui=ouis, value=st.binary(max_size=250))
unknown_info_tlvs = st.builds(UnknownTlv, type=st.integers(0x03, 0xFD), value=st.binary(max_size=253))


@st.composite
def link_event_tlvs(draw: st.DrawFn, types: tuple[int, ...] = tuple(LINK_EVENT_BITS)) -> LinkEventTlv:
    """One of the four standard link event TLVs with every field in its range."""
    tlv_type = draw(st.sampled_from(types))
    bits = LINK_EVENT_BITS[EventTlvType(tlv_type)]
    return LinkEventTlv(tlv_type, *(draw(uint(width)) for width in bits))


unknown_event_tlvs = st.builds(UnknownTlv, type=st.integers(0x05, 0xFD), value=st.binary(max_size=253))


def tlv_size(tlv: object) -> int:
    """Octets the TLV takes on the wire."""
    if isinstance(tlv, InfoTlv):
        return 16
    if isinstance(tlv, LinkEventTlv):
        return LINK_EVENT_SIZES[tlv.type]
    if isinstance(tlv, OrgSpecificTlv):
        return 5 + len(tlv.value)
    if isinstance(tlv, UnknownTlv):
        return 2 + len(tlv.value)
    raise TypeError(tlv)


def container_size(container: VariableContainer) -> int:
    """Octets the Variable Container takes on the wire."""
    return 3 + sum(1 + len(value) for value in container.values) + (container.indication is not None)


@st.composite
def bounded_lists(
    draw: st.DrawFn,
    elements: st.SearchStrategy[T],
    size: Callable[[T], int],
    budget: int,
    max_count: int = 12,
) -> tuple[T, ...]:
    """A tuple of elements whose wire sizes add up to at most `budget` octets."""
    out: list[T] = []
    used = 0
    for _ in range(draw(st.integers(0, max_count))):
        element = draw(elements)
        if used + size(element) > budget:
            break
        out.append(element)
        used += size(element)
    return tuple(out)


# -- Variable Request / Response ----------------------------------------------------------

branches = _often([Branch.ATTRIBUTE, Branch.OBJECT, Branch.PACKAGE, Branch.NAME_BINDING], st.integers(1, 255))
descriptors = st.builds(VariableDescriptor, branch=branches, leaf=_often([2, 5, 20, 236], uint(16)))
#: 1..128 octets; 128 is written as width 0 on the wire
variable_values = st.one_of(
    st.binary(min_size=1, max_size=8),
    st.binary(min_size=120, max_size=128),
    st.binary(min_size=1, max_size=128),
)
indications = _often([int(code) for code in VariableIndication], uint(7))


@st.composite
def variable_containers(draw: st.DrawFn) -> VariableContainer:
    """An object/package container (values closed by an indication) or a one-entry one."""
    branch = draw(branches)
    leaf = draw(uint(16))
    if branch in MULTI_VALUE_BRANCHES:
        values = tuple(draw(st.lists(variable_values, max_size=3)))
        end = VariableIndication.OBJECT_END if branch == Branch.OBJECT else VariableIndication.PACKAGE_END
        return VariableContainer(branch, leaf, values, draw(_often([int(end)], uint(7))))
    if draw(st.booleans()):
        return VariableContainer(branch, leaf, (draw(variable_values),))
    return VariableContainer(branch, leaf, (), draw(indications))


# -- OAMPDUs ------------------------------------------------------------------------------

information_tlv_kinds = st.one_of(info_tlvs, org_tlvs, unknown_info_tlvs)
information_pdus = st.builds(
    Information,
    src=macs,
    flags=flags,
    tlvs=bounded_lists(information_tlv_kinds, tlv_size, MAX_DATA),
)
event_tlv_kinds = st.one_of(link_event_tlvs(), org_tlvs, unknown_event_tlvs)
event_notifications = st.builds(
    EventNotification,
    src=macs,
    flags=flags,
    sequence=uint(16),
    tlvs=bounded_lists(event_tlv_kinds, tlv_size, MAX_DATA - 2),
)
variable_requests = st.builds(
    VariableRequest,
    src=macs,
    flags=flags,
    descriptors=bounded_lists(descriptors, lambda _: 3, MAX_DATA, max_count=40),
)
variable_responses = st.builds(
    VariableResponse,
    src=macs,
    flags=flags,
    containers=bounded_lists(variable_containers(), container_size, MAX_DATA, max_count=8),
)
loopback_controls = st.builds(
    LoopbackControl,
    src=macs,
    flags=flags,
    loopback_command=_often([LoopbackCommand.ENABLE, LoopbackCommand.DISABLE], uint(8)),
)
org_specific_pdus = st.builds(
    OrgSpecificPdu,
    src=macs,
    flags=flags,
    oui=ouis,
    value=_no_trailing_zero(st.one_of(st.binary(max_size=16), st.binary(max_size=MAX_DATA - 3))),
)
unsupported_pdus = st.builds(
    UnsupportedPdu,
    src=macs,
    flags=flags,
    code=st.sampled_from(UNSUPPORTED_CODES),
    data=_no_trailing_zero(st.one_of(st.binary(max_size=16), st.binary(max_size=MAX_DATA))),
)

#: every kind of OAMPDU by name (handy for parametrized tests)
PDU_STRATEGIES: dict[str, st.SearchStrategy[Oampdu]] = {
    "information": information_pdus,
    "event_notification": event_notifications,
    "variable_request": variable_requests,
    "variable_response": variable_responses,
    "loopback_control": loopback_controls,
    "organization_specific": org_specific_pdus,
    "unsupported": unsupported_pdus,
}
oampdus: st.SearchStrategy[Oampdu] = st.one_of(*PDU_STRATEGIES.values())
