"""What an `OamPort` asks its caller to do or to know: plain data, drained by the caller."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

import attrs

from efmoam.core.discovery import DiscoveryState
from pdu import Flag, OamConfig
from pdu.model import EventTlvs, OrgSpecificPdu, VariableContainer

if TYPE_CHECKING:
    from efmoam.core.linkmon.eventlog import EventLogEntry


class OperStatus(enum.IntEnum):
    """RFC 4878 dot3OamOperStatus."""

    DISABLED = 1
    LINK_FAULT = 2
    PASSIVE_WAIT = 3
    ACTIVE_SEND_LOCAL = 4
    SEND_LOCAL_AND_REMOTE = 5
    SEND_LOCAL_AND_REMOTE_OK = 6
    OAM_PEERING_LOCALLY_REJECTED = 7
    OAM_PEERING_REMOTELY_REJECTED = 8
    OPERATIONAL = 9
    NON_OPER_HALF_DUPLEX = 10


class LoopbackStatus(enum.IntEnum):
    """RFC 4878 dot3OamLoopbackStatus."""

    NO_LOOPBACK = 1
    INITIATING_LOOPBACK = 2  #: we asked the peer to loop
    REMOTE_LOOPBACK = 3  #: the peer is looping our frames
    TERMINATING_LOOPBACK = 4  #: we asked the peer to stop looping
    LOCAL_LOOPBACK = 5  #: we are looping the peer's frames
    UNKNOWN = 6


@attrs.frozen
class PeerInfo:
    """What we know of the peer, as RFC 4878 dot3OamPeerTable."""

    mac: str
    oui: int
    vendor_info: int
    mode_active: bool
    max_pdu_size: int
    config_revision: int
    functions: OamConfig
    oam_version: int


@attrs.frozen
class Transmit:
    """Send this frame on the port."""

    frame: bytes
    code: int


@attrs.frozen
class DiscoveryChanged:
    """Discovery moved; `cause` says why (peer, link_down, link_up, lost_link, ...)."""

    old: DiscoveryState
    new: DiscoveryState
    oper_status: OperStatus
    cause: str


@attrs.frozen
class PeerChanged:
    """The peer's information changed, or the peer was forgotten (None)."""

    peer: PeerInfo | None


@attrs.frozen
class PeerFlagsChanged:
    """The peer's Link Fault, Dying Gasp and Critical Event flags changed."""

    flags: Flag  #: the critical flags now set by the peer
    raised: Flag
    cleared: Flag


@attrs.frozen
class LinkEventsReceived:
    """A unique Event Notification from a peer that advertised Link Events."""

    sequence: int
    tlvs: tuple[EventTlvs, ...]


@attrs.frozen
class LoopbackChanged:
    """Remote loopback changed: apply `parser_action` / `mux_action` to data frames."""

    status: LoopbackStatus
    parser_action: int  #: pdu.ParserAction: forward, loop back or discard received frames
    mux_action: int  #: pdu.MuxAction: forward or discard frames we send
    cause: str


@attrs.frozen
class VariablesReceived:
    """A Variable Response to one of our requests."""

    containers: tuple[VariableContainer, ...]


@attrs.frozen
class OrgSpecificReceived:
    """An Organization Specific OAMPDU for the caller to interpret."""

    pdu: OrgSpecificPdu


@attrs.frozen
class FrameDropped:
    """A received frame was not acted on; `reason` is a stable name for counting."""

    reason: str
    detail: str = ""


@attrs.frozen
class EventLogged:
    """An event-log slot was written: a new event, or an event that cleared."""

    slot: int
    entry: EventLogEntry


@attrs.frozen
class PortServiceChanged:
    """The port must leave service (`out_of_service`) or may return to it."""

    out_of_service: bool
    reasons: tuple[str, ...]  #: the events that hold it out of service


@attrs.frozen
class MonitorUnavailable:
    """A monitor cannot run: the counter source lacks `counters` (reported once)."""

    monitor: str
    counters: tuple[str, ...]


Output = (
    Transmit
    | DiscoveryChanged
    | PeerChanged
    | PeerFlagsChanged
    | LinkEventsReceived
    | LoopbackChanged
    | VariablesReceived
    | OrgSpecificReceived
    | FrameDropped
    | EventLogged
    | PortServiceChanged
    | MonitorUnavailable
)
