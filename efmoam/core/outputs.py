"""What an `OamPort` asks its caller to do or to know: plain data, drained by the caller."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

import attrs

from efmoam.core.discovery import DiscoveryState
from pdu.enums import Flag, OamConfig
from pdu.errors import DecodeReason
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


class DropReason(enum.StrEnum):
    """Why a frame was not acted on, besides the decoder's reasons (`pdu.DecodeReason`).

    The values are the stable names of the log's ``reason=`` field, the ``drops`` of
    ``show port`` and the metric label ``reason``.
    """

    NOT_OAMPDU = "not_oampdu"  #: another slow protocol's frame (the decoder's reason is in the detail)
    LOOP = "loop"  #: our own OAMPDU came back
    DISABLED = "disabled"  #: OAM is administratively disabled on the port
    HALF_DUPLEX = "half_duplex"
    LINK_DOWN = "link_down"
    SECOND_PEER = "second_peer"  #: a MAC other than the peer's (point-to-point violation)
    NOT_IN_SEND_ANY = "not_in_send_any"  #: not an Information OAMPDU, before Discovery completed
    EVENTS_NOT_ADVERTISED = "events_not_advertised"  #: Event Notification from a peer without Link Events
    NOT_PERMITTED = "not_permitted"  #: a request that only an Active peer may make
    VARIABLE_RETRIEVAL_DISABLED = "variable_retrieval_disabled"
    LOOPBACK_IGNORED = "loopback_ignored"  #: loopback commands are ignored by configuration
    LOOPBACK_COLLISION = "loopback_collision"  #: both asked at once; the higher MAC wins
    BAD_LOOPBACK_COMMAND = "bad_loopback_command"
    TOO_LARGE_FOR_PEER = "too_large_for_peer"  #: a queued OAMPDU no longer fits the peer's size (sending)
    RATE_LIMIT = "rate_limit"  #: the peer over its receive rate limit, before decoding (the daemon)
    RATE_LIMIT_OTHERS = "rate_limit_others"  #: other sources over their shared rate limit (the daemon)
    SOCKET_QUEUE = "socket_queue"  #: lost in the kernel, the socket's queue full (PACKET_STATISTICS)


class PeerQuirk(enum.StrEnum):
    """Something the peer does that the standard does not, worked around and reported."""

    #: a new Event Notification (other TLVs) with the sequence number of the previous one
    SEQUENCE_REUSED = "sequence_reused"


@attrs.frozen
class FrameDropped:
    """A frame was not acted on; `reason` is counted by its value."""

    reason: DropReason | DecodeReason
    detail: str = ""


@attrs.frozen
class QuirkSeen:
    """The peer did something nonstandard that we took as it meant (counted by `quirk`)."""

    quirk: PeerQuirk
    detail: str = ""


@attrs.frozen
class EventLogged:
    """An event-log slot was written: a new event, or an event that cleared.

    `cause` says why a cleared event ended: ``operator`` (the clear command), ``window`` (a
    monitor's window ended below its threshold), ``link`` (a link down or up), ``reload``
    (new settings), ``recovery`` (automatic recovery) or ``peer`` (the peer stopped
    reporting it, or was lost); for a new event it is ``raised``.
    """

    slot: int
    entry: EventLogEntry
    cause: str = "raised"


@attrs.frozen
class PortServiceChanged:
    """The port must leave service (`out_of_service`) or may return to it."""

    out_of_service: bool  #: out of service with the port's action backend
    reasons: tuple[str, ...]  #: the events that hold it out of service (or down)
    down: bool = False  #: administratively down (the ``down`` action)


@attrs.frozen
class PolicyEvent:
    """A session event (`efmoam.core.policy.settings.EventName` value, or ``track:<name>``)
    started or ended, or a latch it left ended.

    `cause` says why: for a start the condition (``lost_link``, ``discovery_timeout``,
    ``peer``, ...), for an end ``operator``, ``recovery``, ``reload``, or ``condition`` (it
    no longer holds).  `latched`: the port stays out of service after the event until it is
    cleared or recovers (at `recovers_at`, monotonic seconds; None: by hand only).
    """

    name: str
    active: bool
    actions: tuple[str, ...]  #: `Action` values
    cause: str
    detail: str = ""
    latched: bool = False
    recovers_at: float | None = None
    moment: bool = False  #: an instant (session_up): no end follows
    released: bool = False  #: the record of a latch ending (the port may return to service)

    @property
    def state(self) -> str:
        """``raised``, ``cleared``, ``moment`` or ``released`` (a latch ended): the one name of each."""
        if self.moment:
            return "moment"
        if self.active:
            return "raised"
        return "released" if self.released else "cleared"


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
    | QuirkSeen
    | EventLogged
    | PortServiceChanged
    | MonitorUnavailable
    | PolicyEvent
)
