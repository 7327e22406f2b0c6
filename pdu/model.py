"""The typed model of OAMPDUs: frozen attrs classes the engine works with.

Field names are those of the scapy layers in `pdu.layers` (the ``length`` octets are
implied and not stored).  Values are plain integers where the standard leaves room for
values we do not know (a reserved parser action must decode, not crash); `Flag` and
`OamConfig` are `enum.IntFlag`, which keeps unknown bits.  Reserved bits are kept, so a
decoded frame re-encodes to the same octets.

MAC addresses are lower-case ``aa:bb:cc:dd:ee:ff`` strings; OUIs are 24-bit integers
(`format_oui` renders them).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any, ClassVar

import attrs

from pdu.enums import Code, Flag, InfoTlvType, OamConfig


def to_flag(value: int) -> Flag:
    """`value` as a Flag (ValueError past 16 bits), the member itself when there is one."""
    # checked first: IntFlag turns -1 into every named bit, and keeps such a value in its
    # member map once anything has made one; Flag(value) costs about 1 us on CPython 3.11,
    # the member map is a dict lookup
    if not 0 <= value <= 0xFFFF:
        raise ValueError(f"flags {value} do not fit in 16 bits")
    member = Flag._value2member_map_.get(value)
    return member if member is not None else Flag(value)  # type: ignore[return-value]


def _oam_config(value: int) -> OamConfig:
    if not 0 <= value <= 0xFF:
        raise ValueError(f"OAM configuration {value} does not fit in 8 bits")
    member = OamConfig._value2member_map_.get(value)
    return member if member is not None else OamConfig(value)  # type: ignore[return-value]


def format_oui(oui: int) -> str:
    """``0x001122`` -> ``"00:11:22"``."""
    return oui.to_bytes(3, "big").hex(":")


# -- TLVs ------------------------------------------------------------------------------


@attrs.frozen(cache_hash=True)
class InfoTlv:
    """Local (type 0x01) or Remote (0x02) Information TLV (Clause 57.5.2.1)."""

    type: int = InfoTlvType.LOCAL
    oam_version: int = 1
    revision: int = 0
    state_reserved: int = 0
    mux_action: int = 0  #: `MuxAction`
    parser_action: int = 0  #: `ParserAction`
    oam_config: OamConfig = attrs.field(default=OamConfig(0), converter=_oam_config)
    oampdu_config_reserved: int = 0
    max_pdu_size: int = 1518
    oui: int = 0
    vendor_info: int = 0

    def same_information(self, other: InfoTlv) -> bool:
        """True if both carry the same information whatever their type (Local/Remote)."""
        return information(self) == information(other)

    def same_configuration(self, other: InfoTlv) -> bool:
        """True if both advertise the same configuration: all but the revision and State field."""
        return _configuration(self) == _configuration(other)


def _fields_but(cls: type, *left_out: str) -> tuple[str, ...]:
    """The names of every field of `cls` but `left_out`, in field order."""
    names = tuple(field.name for field in attrs.fields(cls) if field.name not in left_out)
    assert len(names) > 1 and len(names) + len(left_out) == len(attrs.fields(cls)), "left out: fields of cls"
    return names


#: what an Information TLV says, field by field: all but its type (a Remote TLV repeats the
#: peer's Local one when they say the same, 57.4.3.1)
INFORMATION_FIELDS = _fields_but(InfoTlv, "type")
information: Callable[[InfoTlv], tuple[Any, ...]] = operator.attrgetter(*INFORMATION_FIELDS)
_configuration = operator.attrgetter(
    *_fields_but(InfoTlv, "type", "revision", "mux_action", "parser_action", "state_reserved")
)


@attrs.frozen(cache_hash=True)
class LinkEventTlv:
    """One of the four standard link event TLVs (Clause 57.5.3.1-4).

    `type` is the IEEE wire type (`EventTlvType`); the field widths depend on it (see
    the scapy layers).  `timestamp` and the Frame and Frame Seconds `window` are in
    100 ms units; the Symbol Period window counts symbols, the Frame Period window frames.
    """

    type: int
    timestamp: int = 0
    window: int = 0
    threshold: int = 1
    errors: int = 0
    error_running_total: int = 0
    event_running_total: int = 0


@attrs.frozen(cache_hash=True)
class OrgSpecificTlv:
    """Organization Specific Information or Event TLV, type 0xFE."""

    oui: int
    value: bytes = b""


@attrs.frozen(cache_hash=True)
class UnknownTlv:
    """A TLV of a reserved type, kept so the engine can count it and skip it."""

    type: int
    value: bytes = b""


@attrs.frozen(cache_hash=True)
class VariableDescriptor:
    """Branch and leaf naming a Clause 30 object, package or attribute (57.6.1)."""

    branch: int
    leaf: int


@attrs.frozen(cache_hash=True)
class VariableContainer:
    """A Variable Container (57.6.2).

    `values` are the width+value entries (1..128 octets each; one for an attribute,
    any number for an object or a package); `indication` is the Variable Indication code
    (`VariableIndication`, without bit 7) that ends the container, if any.
    """

    branch: int
    leaf: int
    values: tuple[bytes, ...] = ()
    indication: int | None = None


InformationTlvs = InfoTlv | OrgSpecificTlv | UnknownTlv
EventTlvs = LinkEventTlv | OrgSpecificTlv | UnknownTlv


# -- OAMPDUs ------------------------------------------------------------------------------


@attrs.frozen(cache_hash=True)
class Information:
    """Information OAMPDU (code 0x00).  No TLVs at all is the Link Fault form."""

    code: ClassVar[int] = Code.INFORMATION
    src: str
    flags: Flag = attrs.field(converter=to_flag)
    tlvs: tuple[InformationTlvs, ...] = ()

    @property
    def local(self) -> InfoTlv | None:
        """The first Local Information TLV (a repeated one is ignored)."""
        return self._first(InfoTlvType.LOCAL)

    @property
    def remote(self) -> InfoTlv | None:
        """The first Remote Information TLV."""
        return self._first(InfoTlvType.REMOTE)

    def _first(self, kind: int) -> InfoTlv | None:
        for tlv in self.tlvs:
            if isinstance(tlv, InfoTlv) and tlv.type == kind:
                return tlv
        return None


@attrs.frozen(cache_hash=True)
class EventNotification:
    """Event Notification OAMPDU (code 0x01)."""

    code: ClassVar[int] = Code.EVENT_NOTIFICATION
    src: str
    flags: Flag = attrs.field(converter=to_flag)
    sequence: int = 0
    tlvs: tuple[EventTlvs, ...] = ()

    @property
    def link_events(self) -> tuple[LinkEventTlv, ...]:
        """The standard link event TLVs, in frame order."""
        return tuple(tlv for tlv in self.tlvs if isinstance(tlv, LinkEventTlv))


@attrs.frozen(cache_hash=True)
class VariableRequest:
    """Variable Request OAMPDU (code 0x02)."""

    code: ClassVar[int] = Code.VARIABLE_REQUEST
    src: str
    flags: Flag = attrs.field(converter=to_flag)
    descriptors: tuple[VariableDescriptor, ...] = ()


@attrs.frozen(cache_hash=True)
class VariableResponse:
    """Variable Response OAMPDU (code 0x03)."""

    code: ClassVar[int] = Code.VARIABLE_RESPONSE
    src: str
    flags: Flag = attrs.field(converter=to_flag)
    containers: tuple[VariableContainer, ...] = ()


@attrs.frozen(cache_hash=True)
class LoopbackControl:
    """Loopback Control OAMPDU (code 0x04); `loopback_command` is a `LoopbackCommand` value."""

    code: ClassVar[int] = Code.LOOPBACK_CONTROL
    src: str
    flags: Flag = attrs.field(converter=to_flag)
    loopback_command: int = 1


@attrs.frozen(cache_hash=True)
class OrgSpecificPdu:
    """Organization Specific OAMPDU (code 0xFE).

    Trailing zero octets of `value` cannot be told from Ethernet padding and are not
    kept by the decoder; `zeros` counts the zero octets that followed `value` in the
    decoded frame (so a reader of the organization's format can put them back), and is
    not part of the OAMPDU's identity (not compared, not encoded).
    """

    code: ClassVar[int] = Code.ORGANIZATION_SPECIFIC
    src: str
    flags: Flag = attrs.field(converter=to_flag)
    oui: int = 0
    value: bytes = b""
    zeros: int = attrs.field(default=0, eq=False, repr=False)


@attrs.frozen(cache_hash=True)
class UnsupportedPdu:
    """An OAMPDU with a reserved code: counted as unsupported, never acted on.

    `data` is everything after the code octet, without trailing zero padding.
    """

    src: str
    flags: Flag = attrs.field(converter=to_flag)
    code: int = 0xFF
    data: bytes = b""


Oampdu = (
    Information
    | EventNotification
    | VariableRequest
    | VariableResponse
    | LoopbackControl
    | OrgSpecificPdu
    | UnsupportedPdu
)
