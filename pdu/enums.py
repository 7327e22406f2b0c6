"""Numbers of IEEE 802.3 Clause 57 and RFC 4878, named once.

Every wire value used by the scapy layers, the fast codec and the engine is defined here.
Two numberings of link events exist and are kept apart on purpose: `EventTlvType` is the
IEEE 802.3 Table 57-12 TLV type on the wire, `EventLogType` is the RFC 4878
``dot3OamEventLogType`` used in the event log.  Never convert one into the other by
number (0x02 on the wire is an Errored Frame event, log type 2 is an Errored Frame
Period event).
"""

from __future__ import annotations

import enum

SLOW_PROTOCOLS_MULTICAST = b"\x01\x80\xc2\x00\x00\x02"  #: 802.3 Annex 43B destination
SLOW_PROTOCOLS_ETHERTYPE = 0x8809  #: Length/Type of every Slow Protocol frame
OAM_SUBTYPE = 0x03  #: Slow Protocols subtype of an OAMPDU
VLAN_ETHERTYPES = frozenset({0x8100, 0x88A8, 0x9100})  #: tags a slow frame must not carry

HEADER_LENGTH = 18  #: Ethernet header (14) + subtype + flags + code
MIN_FRAME_LENGTH = 60  #: minimum Ethernet frame without FCS; encode pads to this
FCS_LENGTH = 4
MAX_OAMPDU_SIZE = 1518  #: largest OAMPDU incl. FCS (RFC 4878 dot3OamMaxOamPduSize)
MIN_OAMPDU_SIZE = 64  #: smallest OAMPDU incl. FCS


class Flag(enum.IntFlag):
    """OAMPDU Flags field (Clause 57.4.2.1), sent high octet first."""

    LINK_FAULT = 0x0001  #: receive path of the sender's PHY has a fault
    DYING_GASP = 0x0002  #: unrecoverable local failure (power loss, reboot)
    CRITICAL_EVENT = 0x0004  #: unspecified critical event
    LOCAL_EVALUATING = 0x0008
    LOCAL_STABLE = 0x0010
    REMOTE_EVALUATING = 0x0020
    REMOTE_STABLE = 0x0040


#: scapy FlagsField bit names, LSB first, in the order of `Flag`.
FLAG_NAMES = [
    "link_fault",
    "dying_gasp",
    "critical_event",
    "local_evaluating",
    "local_stable",
    "remote_evaluating",
    "remote_stable",
]


class Code(enum.IntEnum):
    """OAMPDU Code field (Clause 57.4.2.2, Table 57-4)."""

    INFORMATION = 0x00
    EVENT_NOTIFICATION = 0x01
    VARIABLE_REQUEST = 0x02
    VARIABLE_RESPONSE = 0x03
    LOOPBACK_CONTROL = 0x04
    ORGANIZATION_SPECIFIC = 0xFE


class InfoTlvType(enum.IntEnum):
    """Information TLV types (Clause 57.5.2, Table 57-6)."""

    END = 0x00
    LOCAL = 0x01
    REMOTE = 0x02
    ORGANIZATION_SPECIFIC = 0xFE


class EventTlvType(enum.IntEnum):
    """Link Event TLV types on the wire (IEEE 802.3 Table 57-12)."""

    END = 0x00
    ERRORED_SYMBOL_PERIOD = 0x01
    ERRORED_FRAME = 0x02
    ERRORED_FRAME_PERIOD = 0x03
    ERRORED_FRAME_SECONDS_SUMMARY = 0x04
    ORGANIZATION_SPECIFIC = 0xFE


class EventLogType(enum.IntEnum):
    """RFC 4878 dot3OamEventLogType: the event-log numbering, not the wire one."""

    ERRORED_SYMBOL_EVENT = 1
    ERRORED_FRAME_PERIOD_EVENT = 2
    ERRORED_FRAME_EVENT = 3
    ERRORED_FRAME_SECONDS_EVENT = 4
    LINK_FAULT = 256
    DYING_GASP_EVENT = 257
    CRITICAL_LINK_EVENT = 258
    #: efmoam's own, outside RFC 4878's numbering: a NIC health monitor's event (the entry
    #: names the monitor); never in the DOT3-OAM-MIB, the YANG view or on the wire
    NIC_HEALTH_EVENT = 0x10000


#: RFC 4878 names of the event-log types (the DOT3-OAM-MIB's enumeration labels)
EVENT_LOG_TYPE_NAMES: dict[EventLogType, str] = {
    EventLogType.ERRORED_SYMBOL_EVENT: "erroredSymbolEvent",
    EventLogType.ERRORED_FRAME_PERIOD_EVENT: "erroredFramePeriodEvent",
    EventLogType.ERRORED_FRAME_EVENT: "erroredFrameEvent",
    EventLogType.ERRORED_FRAME_SECONDS_EVENT: "erroredFrameSecondsEvent",
    EventLogType.LINK_FAULT: "linkFault",
    EventLogType.DYING_GASP_EVENT: "dyingGaspEvent",
    EventLogType.CRITICAL_LINK_EVENT: "criticalLinkEvent",
    EventLogType.NIC_HEALTH_EVENT: "nicHealthEvent",
}

#: the three flags that report a critical condition (57.4.2.1); each is an event while set
CRITICAL_FLAGS = Flag.LINK_FAULT | Flag.DYING_GASP | Flag.CRITICAL_EVENT
#: the event-log type of each critical flag's event, in the order of the event log's
#: reserved slots 1-3 (dying gasp, critical link event, link fault)
FLAG_EVENT_TYPES: dict[Flag, EventLogType] = {
    Flag.DYING_GASP: EventLogType.DYING_GASP_EVENT,
    Flag.CRITICAL_EVENT: EventLogType.CRITICAL_LINK_EVENT,
    Flag.LINK_FAULT: EventLogType.LINK_FAULT,
}
assert set(FLAG_EVENT_TYPES) == set(CRITICAL_FLAGS), "one event type per critical flag"


class OamConfig(enum.IntFlag):
    """OAM Configuration field of the Information TLV (Clause 57.5.2.1)."""

    ACTIVE = 0x01  #: OAM mode: 1 Active, 0 Passive
    UNIDIRECTIONAL = 0x02  #: can send OAMPDUs when the receive path is down
    REMOTE_LOOPBACK = 0x04  #: can be put into OAM remote loopback
    LINK_EVENTS = 0x08  #: interprets Link Events
    VARIABLE_RETRIEVAL = 0x10  #: sends Variable Response OAMPDUs


OAM_CONFIG_NAMES = [
    "active",
    "unidirectional",
    "remote_loopback",
    "link_events",
    "variable_retrieval",
]


class ParserAction(enum.IntEnum):
    """State field bits 1:0 (Clause 57.5.2.1)."""

    FORWARD = 0
    LOOPBACK = 1
    DISCARD = 2


class MuxAction(enum.IntEnum):
    """State field bit 2 (Clause 57.5.2.1)."""

    FORWARD = 0
    DISCARD = 1


class LoopbackCommand(enum.IntEnum):
    """Loopback Control OAMPDU command (Clause 57.4.3.5)."""

    ENABLE = 0x01
    DISABLE = 0x02


class Branch(enum.IntEnum):
    """Variable Descriptor branch (Clause 57.6, Annex 30A arcs)."""

    END = 0x00
    OBJECT = 0x03
    PACKAGE = 0x04
    NAME_BINDING = 0x06
    ATTRIBUTE = 0x07


#: Branches whose Variable Container holds several values closed by an indication.
MULTI_VALUE_BRANCHES = frozenset({Branch.OBJECT, Branch.PACKAGE})


class VariableIndication(enum.IntEnum):
    """Variable Indication codes (low 7 bits; on the wire bit 7 is set, Table 57-17)."""

    CONTAINER_TOO_LARGE = 0x01
    ATTRIBUTE_UNDETERMINED = 0x20
    ATTRIBUTE_UNSUPPORTED = 0x21
    ATTRIBUTE_MAY_BE_CORRUPTED = 0x22
    ATTRIBUTE_HARDWARE_FAILURE = 0x23
    ATTRIBUTE_OVERFLOW = 0x24
    OBJECT_END = 0x40
    OBJECT_UNDETERMINED = 0x41
    OBJECT_UNSUPPORTED = 0x42
    OBJECT_MAY_BE_CORRUPTED = 0x43
    OBJECT_HARDWARE_FAILURE = 0x44
    PACKAGE_END = 0x60
    PACKAGE_UNDETERMINED = 0x61
    PACKAGE_UNSUPPORTED = 0x62
    PACKAGE_MAY_BE_CORRUPTED = 0x63
    PACKAGE_HARDWARE_FAILURE = 0x64


INDICATION_BIT = 0x80  #: set in the width octet when it carries an indication
MAX_VARIABLE_WIDTH = 128  #: a width octet of 0 means 128 octets
