"""`OamPort`: the OAM sublayer of one Ethernet port, sans-IO.

Inputs are method calls, each with ``now`` (monotonic seconds): a received frame
(`receive`), a link status change (`set_link`), operator requests (loopback, variable
retrieval, local flags, link event notifications) and the passage of time
(`handle_timer`).  Outputs are data drained with `take_outputs`: frames to send,
discovery and peer changes, loopback data-plane actions, received events.  The caller
sleeps until `next_deadline`.  Nothing here reads a clock, sends, sleeps or logs.

Transmission follows the Transmit state machine of 57.3.2.2 in effect: at most 10
OAMPDUs in any second (`TxBudget`); an Information OAMPDU at least every transmit
interval while ``local_pdu`` allows sending; another one at once (within the budget)
whenever anything it carries changes.  Information OAMPDUs go before queued ones, so
keep-alives survive a flood of requests.

Choices where the standard leaves room, for an operator's expectations:

* Receive counters (RFC 4878) count OAMPDUs accepted from the peer; frames filtered by
  ``local_pdu``, from ourselves (a loop) or from a second MAC are reported as
  `FrameDropped` with a reason and not counted as received.
* The first MAC heard after FAULT is the peer; another MAC is a point-to-point
  violation, reported and ignored until the peer is lost.
* The lost-link timer restarts on every valid OAMPDU from the peer, whatever its code.
* An Event Notification whose sequence number equals the last one received is a
  duplicate; any other number is unique (a point-to-point link does not reorder, so a
  lower number means the peer started counting again).
* ``remote_stable`` needs the peer's Local Stable flag and its Remote Information TLV
  equal to our current Local Information TLV, revision included.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import attrs

from efmoam.core import variables
from efmoam.core.discovery import Conditions, DiscoveryState, LocalPdu, local_pdu, local_stable, step
from efmoam.core.errors import LocalProtocolError
from efmoam.core.linkmon import CounterSample, EventLogEntry, LinkMonitoring, Location
from efmoam.core.outputs import (
    DiscoveryChanged,
    FrameDropped,
    LinkEventsReceived,
    LoopbackChanged,
    LoopbackStatus,
    OperStatus,
    OrgSpecificReceived,
    Output,
    PeerChanged,
    PeerFlagsChanged,
    PeerInfo,
    Transmit,
    VariablesReceived,
)
from efmoam.core.pacing import TxBudget
from efmoam.core.settings import OamMode, PortSettings
from efmoam.core.stats import OamStatistics
from pdu import (
    Code,
    DecodeError,
    EncodeError,
    EventNotification,
    Flag,
    Information,
    InfoTlv,
    InfoTlvType,
    LinkEventTlv,
    LoopbackCommand,
    LoopbackControl,
    MuxAction,
    OamConfig,
    Oampdu,
    OrgSpecificPdu,
    OrgSpecificTlv,
    ParserAction,
    PeerDecoder,
    UnsupportedPdu,
    VariableDescriptor,
    VariableRequest,
    VariableResponse,
    encode,
)
from pdu.enums import FCS_LENGTH, HEADER_LENGTH, MIN_OAMPDU_SIZE

S = DiscoveryState
CRITICAL_FLAGS = Flag.LINK_FAULT | Flag.DYING_GASP | Flag.CRITICAL_EVENT
_NO_FLAGS = Flag(0)


@attrs.frozen
class _Queued:
    """An OAMPDU waiting for the budget; its flags are filled in when it is sent."""

    pdu: Oampdu
    counter: str  #: the OamStatistics field counting it when sent


class OamPort:
    """The OAM sublayer of one port (Clause 57), driven by its caller.

    `mac` is the port's own MAC address (``aa:bb:cc:dd:ee:ff``); `revision` is the first
    revision of its Local Information TLV (0 for a new sublayer; replay starts where the
    recorded speaker was); `wall_clock_offset` (wall-clock minus monotonic seconds, given
    by the caller) stamps event-log entries with a wall-clock time for display.
    """

    def __init__(
        self,
        settings: PortSettings,
        mac: str,
        *,
        now: float,
        link_up: bool = True,
        half_duplex: bool = False,
        revision: int = 0,
        wall_clock_offset: float | None = None,
    ) -> None:
        self.settings: PortSettings = settings
        self.mac = mac.lower()
        self.stats = OamStatistics()
        #: frames not acted on, by reason (the reasons of `FrameDropped`)
        self.drops: dict[str, int] = {}
        self.state: DiscoveryState = S.FAULT
        self.local_pdu = LocalPdu.RX_INFO  #: follows the state and the link (57.3.1.3)
        self._lost_link_time = settings.lost_link_time
        self._interval = settings.transmit_interval
        self.loopback = LoopbackStatus.NO_LOOPBACK
        self._epoch = now
        self._link_ok = link_up
        self._half_duplex = half_duplex  #: the link is half duplex: OAM cannot run
        self._outputs: list[Output] = []
        self._decoder = PeerDecoder(max_peers=8)
        self._budget = TxBudget()
        self._queue: deque[_Queued] = deque()
        # what we send
        self._local_flags = _NO_FLAGS  # Link Fault / Dying Gasp / Critical Event asked by the client
        self._parser = ParserAction.FORWARD
        self._mux = MuxAction.FORWARD
        self.local_tlv: InfoTlv = self._build_local_tlv(revision)
        self._local_inputs: tuple[Any, ...] = (settings, self._parser, self._mux)
        self._info_key: tuple[Any, ...] | None = None  # what the cached Information frame carries
        self._info_output: Transmit | None = None
        self._info_stale = True  # something the Information OAMPDU carries may have changed
        self._info_due = now  # when the next Information OAMPDU is due
        self._tx_sequence = 0
        self._last_sent_info = False  # whether the last OAMPDU sent was an Information
        self._info_urgent = False  # the Information to send carries a change
        # what we know of the peer
        self.peer_mac: str | None = None
        self.peer_flags: Flag = _NO_FLAGS
        self._peer_tlv: InfoTlv | None = None
        self._peer_info: tuple[InfoTlv, PeerInfo] | None = None  #: `peer`, made from this TLV
        self._peer_remote_tlv: InfoTlv | None = None
        self._last_info: Information | None = None
        self._verdict: bool | None = None  # local_satisfied once decided
        self._remote_stable = False
        self._lost_link_at: float | None = None
        self._last_rx_sequence: int | None = None
        self._loopback_deadline: float | None = None
        self._mac_attributes: dict[int, int] = {}
        self.link_monitoring = LinkMonitoring(settings.link_monitoring, self, wall_clock_offset)
        self._evaluate(now, "start")
        self._service(now)

    # -- the caller's view -------------------------------------------------------------

    def take_outputs(self) -> list[Output]:
        """Everything the port produced since the last call, oldest first."""
        outputs, self._outputs = self._outputs, []
        return outputs

    def next_deadline(self) -> float | None:
        """When `handle_timer` must run next (None: only an input can change anything)."""
        deadline = self._lost_link_at
        if self._loopback_deadline is not None and (deadline is None or self._loopback_deadline < deadline):
            deadline = self._loopback_deadline
        if self.local_pdu is not LocalPdu.RX_INFO:
            send = self._budget.next_free(self._info_due)
            if self._queue and self.local_pdu is LocalPdu.ANY:
                send = min(send, self._budget.next_free(0.0, information=False))
            if deadline is None or send < deadline:
                deadline = send
        return deadline

    @property
    def oper_status(self) -> OperStatus:
        """RFC 4878 dot3OamOperStatus."""
        if not self.settings.enabled:
            return OperStatus.DISABLED
        if self._half_duplex and self._link_ok:
            return OperStatus.NON_OPER_HALF_DUPLEX
        if self.state is S.SEND_LOCAL_REMOTE and self._verdict is not None and not self._satisfied():
            return OperStatus.OAM_PEERING_LOCALLY_REJECTED
        if self.state is S.SEND_LOCAL_REMOTE_OK and not self.peer_flags & (Flag.LOCAL_EVALUATING | Flag.LOCAL_STABLE):
            return OperStatus.OAM_PEERING_REMOTELY_REJECTED
        return _OPER_STATUS[self.state]

    @property
    def peer(self) -> PeerInfo | None:
        """The peer as RFC 4878 dot3OamPeerTable, once its Local Information is known."""
        tlv, mac, made = self._peer_tlv, self.peer_mac, self._peer_info
        if tlv is None or mac is None:
            return None
        if made is None or made[0] is not tlv or made[1].mac != mac:  # the same object while nothing changed
            info = PeerInfo(
                mac=mac,
                oui=tlv.oui,
                vendor_info=tlv.vendor_info,
                mode_active=bool(tlv.oam_config & OamConfig.ACTIVE),
                max_pdu_size=tlv.max_pdu_size,
                config_revision=tlv.revision,
                functions=tlv.oam_config,
                oam_version=tlv.oam_version,
            )
            made = self._peer_info = (tlv, info)
        return made[1]

    @property
    def local_flags(self) -> Flag:
        """The Flags field we send now."""
        flags = int(self._local_flags) | int(self.link_monitoring.info_flags)  # ints: IntFlag arithmetic is slow
        if not self._link_ok:
            flags |= Flag.LINK_FAULT
        if self.state in (S.ACTIVE_SEND_LOCAL, S.PASSIVE_WAIT) or (
            self.state is S.SEND_LOCAL_REMOTE and self._verdict is None
        ):
            flags |= Flag.LOCAL_EVALUATING
        elif local_stable(self.state):
            flags |= Flag.LOCAL_STABLE
        if self._peer_tlv is not None:
            # the peer's Local Evaluating/Stable bits (3, 4) echoed as Remote ones (5, 6)
            flags |= (int(self.peer_flags) & (Flag.LOCAL_EVALUATING | Flag.LOCAL_STABLE)) << 2
        return Flag(flags)

    def timestamp(self, now: float) -> int:
        """An Event Time Stamp: 100 ms units since the port started, wrapping at 16 bits."""
        return int((now - self._epoch) * 10) & 0xFFFF

    def mac_attribute(self, leaf: int) -> bytes | None:
        """A MAC statistic supplied by the caller, as a Variable Container value."""
        value = self._mac_attributes.get(leaf)
        return None if value is None else (value % (1 << 64)).to_bytes(8, "big")

    def update_mac_attributes(self, values: dict[int, int]) -> None:
        """Supply Clause 30 MAC statistics (leaf -> value) for variable retrieval."""
        self._mac_attributes.update(values)

    # -- inputs ------------------------------------------------------------------------

    def set_link(self, up: bool, *, now: float, speed_mbps: int | None = None, half_duplex: bool | None = None) -> None:
        """The port's link (carrier) went up or down; `speed_mbps` and `half_duplex` when known.

        OAM needs a full-duplex link: on a half-duplex one Discovery stays in FAULT,
        nothing is sent, OAMPDUs received are dropped (``half_duplex``) and the status is
        RFC 4878 nonOperHalfDuplex.  None leaves what is known of the duplex as it is.
        """
        if speed_mbps is not None:
            self.link_monitoring.set_speed(speed_mbps)
        duplex_changed = half_duplex is not None and half_duplex != self._half_duplex
        if duplex_changed:
            self._half_duplex = bool(half_duplex)
        if up != self._link_ok:
            self._link_ok = up
            self.link_monitoring.link_changed(up)  # a link down/up clears every event
            self._changed()
            self._evaluate(now, "link_up" if up else "link_down")
        elif duplex_changed:
            self._changed()
            self._evaluate(now, "half_duplex" if self._half_duplex else "full_duplex")
        self._after_link_monitoring()
        self._service(now)

    def on_counters(self, sample: CounterSample, *, now: float) -> None:
        """A sample of the NIC's cumulative error counters, for link monitoring."""
        self.link_monitoring.on_counters(sample, now)
        if self.link_monitoring.outputs:  # only an event can change what we send
            self._after_link_monitoring()
            self._service(now)

    def clear_events(self, location: Location | None = None, *, now: float) -> None:
        """The clear command: end the active events of `location` (None: local and remote).

        A remote flag event comes back with the next Information OAMPDU that still
        carries the flag.
        """
        self.link_monitoring.clear(location, now)
        if location is not Location.LOCAL:
            self._last_info = None  # process the peer's next Information in full
        if location is not Location.REMOTE and self._local_flags:
            self._local_flags = _NO_FLAGS  # the flags local events had set
            self._changed()
        self._after_link_monitoring()
        self._service(now)

    @property
    def link_up(self) -> bool:
        """The link status last given with `set_link`."""
        return self._link_ok

    @property
    def half_duplex(self) -> bool:
        """Whether `set_link` last said the link is half duplex."""
        return self._half_duplex

    @property
    def out_of_service(self) -> bool:
        """True while an active event holds the port out of service."""
        return self.link_monitoring.out_of_service

    def event_log(self) -> list[tuple[int, EventLogEntry]]:
        """The occupied slots of the 12-slot event log, as (slot, entry)."""
        return self.link_monitoring.log.entries()

    def reconfigure(self, settings: PortSettings, *, now: float) -> None:
        """Apply new settings; a changed Local Information TLV gets a new revision."""
        restart = settings.mode is not self.settings.mode  # a new mode redoes Discovery
        self.settings = settings
        self.link_monitoring.reconfigure(settings.link_monitoring, now)
        self._changed()
        self._evaluate(now, "reconfigured", restart=restart)
        self._after_link_monitoring()
        self._service(now)

    def set_local_flags(self, flags: Flag, on: bool, *, now: float) -> None:
        """Set or clear Link Fault, Dying Gasp or Critical Event in what we send."""
        if flags & ~CRITICAL_FLAGS:
            raise LocalProtocolError(f"only link fault, dying gasp and critical event can be set, not {flags!r}")
        self._local_flags = self._local_flags | flags if on else self._local_flags & ~flags
        self.link_monitoring.on_local_flags(self._local_flags, now)
        self._after_link_monitoring()
        self._changed()
        self._service(now)

    def receive(self, frame: bytes, *, now: float) -> None:
        """A frame arrived on the port."""
        try:
            pdu = self._decoder.decode(frame)
        except DecodeError as exc:
            self._drop("not_oampdu" if exc.reason.not_oampdu else exc.reason.value, str(exc))
            return
        if pdu is self._last_info:  # the peer repeated itself (the steady state): nothing changes
            self.stats.information_rx += 1
            self._lost_link_at = now + self._lost_link_time
            return
        if pdu.src == self.mac:
            self._drop("loop", "our own OAMPDU came back")
        elif not self.settings.enabled:
            self._drop("disabled")
        elif self._half_duplex:
            self._drop("half_duplex")
        elif not self._link_ok:
            self._drop("link_down")
        elif self.peer_mac is not None and pdu.src != self.peer_mac:
            self._drop("second_peer", f"{pdu.src} while the peer is {self.peer_mac}")
        elif isinstance(pdu, Information):
            self.peer_mac = pdu.src  # the first Information heard after FAULT names the peer
            self._lost_link_at = now + self._lost_link_time
            self._receive_information(pdu, now)
        elif self.peer_mac is None or self.local_pdu is not LocalPdu.ANY:
            if self.peer_mac is not None:
                self._lost_link_at = now + self._lost_link_time
            self._drop("not_in_send_any", f"code {pdu.code:#04x} in {self.state.value}")
        else:
            self._lost_link_at = now + self._lost_link_time
            self._receive_other(pdu, now)
        self._service(now)

    def handle_timer(self, *, now: float) -> None:
        """Act on whatever is due at `now`: keep-alives, queued frames, lost link, loopback."""
        if self._lost_link_at is not None and now >= self._lost_link_at:
            self._evaluate(now, "lost_link", restart=True)
        if self._loopback_deadline is not None and now >= self._loopback_deadline:
            self._end_loopback("timeout")
        self._service(now)

    # -- operator requests -------------------------------------------------------------

    def notify_link_events(
        self, tlvs: tuple[LinkEventTlv | OrgSpecificTlv, ...], *, now: float, burst: int = 1
    ) -> int | None:
        """Send one Event Notification as a burst of `burst` copies (same sequence number).

        Returns its sequence number, or None when it cannot be sent: outside SEND_ANY or
        to a peer that did not advertise Link Events.
        """
        if self.state is not S.SEND_ANY or self._peer_tlv is None:
            return None
        if not self._peer_tlv.oam_config & OamConfig.LINK_EVENTS:
            return None
        # a duplicate must not follow a newer notification: drop pending older copies
        self._queue = deque(q for q in self._queue if q.counter != "duplicate_event_notification_tx")
        sequence = self._tx_sequence
        pdu = EventNotification(self.mac, 0, sequence, tlvs)
        try:
            if not self._enqueue(pdu, "unique_event_notification_tx"):
                return None
        except LocalProtocolError:
            return None
        self._tx_sequence = (sequence + 1) & 0xFFFF
        for _ in range(burst - 1):
            self._enqueue(pdu, "duplicate_event_notification_tx")
        self._service(now)
        return sequence

    def request_variables(self, descriptors: tuple[VariableDescriptor, ...], *, now: float) -> None:
        """Send a Variable Request; the answer arrives as `VariablesReceived`."""
        self._require_send_any_active("variable request")
        if self.peer is None or not self.peer.functions & OamConfig.VARIABLE_RETRIEVAL:
            raise LocalProtocolError("the peer does not advertise variable retrieval")
        self._enqueue(VariableRequest(self.mac, 0, descriptors), "variable_request_tx")
        self._service(now)

    def send_org_specific(self, oui: int, value: bytes, *, now: float) -> None:
        """Send an Organization Specific OAMPDU (SEND_ANY only)."""
        if self.state is not S.SEND_ANY:
            raise LocalProtocolError(f"organization specific OAMPDUs need SEND_ANY, not {self.state.value}")
        self._enqueue(OrgSpecificPdu(self.mac, 0, oui, value), "org_specific_tx")
        self._service(now)

    def start_loopback(self, *, now: float) -> None:
        """Ask the peer to loop our frames back (57.2.11); confirmed by its Information."""
        self._require_send_any_active("remote loopback")
        if self.peer is None or not self.peer.functions & OamConfig.REMOTE_LOOPBACK:
            raise LocalProtocolError("the peer does not advertise remote loopback")
        if self.loopback is not LoopbackStatus.NO_LOOPBACK:
            raise LocalProtocolError(f"loopback is {self.loopback.name.lower()}")
        self._set_loopback(LoopbackStatus.INITIATING_LOOPBACK, ParserAction.DISCARD, MuxAction.DISCARD, "start")
        self._loopback_deadline = now + self.settings.loopback_timeout
        self._enqueue(LoopbackControl(self.mac, 0, LoopbackCommand.ENABLE), "loopback_control_tx")
        self._service(now)

    def stop_loopback(self, *, now: float) -> None:
        """Ask the peer to stop looping our frames."""
        if self.loopback not in (LoopbackStatus.INITIATING_LOOPBACK, LoopbackStatus.REMOTE_LOOPBACK):
            raise LocalProtocolError(f"no loopback of ours to stop ({self.loopback.name.lower()})")
        self._set_loopback(LoopbackStatus.TERMINATING_LOOPBACK, ParserAction.DISCARD, MuxAction.DISCARD, "stop")
        self._loopback_deadline = now + self.settings.loopback_timeout
        self._enqueue(LoopbackControl(self.mac, 0, LoopbackCommand.DISABLE), "loopback_control_tx")
        self._service(now)

    def clear_statistics(self) -> None:
        """Start the RFC 4878 counters and the drop counters again from zero."""
        self.stats = OamStatistics()
        self.drops = {}

    # -- receiving ---------------------------------------------------------------------

    def _drop(self, reason: str, detail: str = "") -> None:
        self.drops[reason] = self.drops.get(reason, 0) + 1
        self._outputs.append(FrameDropped(reason, detail))

    def _receive_information(self, pdu: Information, now: float) -> None:
        self.stats.information_rx += 1
        self._last_info = pdu
        self._changed()
        old_critical = self.peer_flags & CRITICAL_FLAGS
        self.peer_flags = pdu.flags
        local = pdu.local
        if local is not None:
            self._peer_remote_tlv = pdu.remote
            if local != self._peer_tlv:
                self._peer_tlv = local
                self._verdict = self._satisfied_with(local)
                self._outputs.append(PeerChanged(self.peer))
        critical = pdu.flags & CRITICAL_FLAGS
        if critical != old_critical:
            self._outputs.append(PeerFlagsChanged(critical, critical & ~old_critical, old_critical & ~critical))
        self.link_monitoring.on_peer_flags(critical, now)
        self._after_link_monitoring()
        self._follow_peer_loopback_state(local)
        self._evaluate(now, "peer")

    def _receive_other(self, pdu: Oampdu, now: float) -> None:
        if isinstance(pdu, EventNotification):
            if pdu.sequence == self._last_rx_sequence:
                self.stats.duplicate_event_notification_rx += 1
                return
            self.stats.unique_event_notification_rx += 1
            self._last_rx_sequence = pdu.sequence
            if self._peer_tlv is not None and self._peer_tlv.oam_config & OamConfig.LINK_EVENTS:
                self._outputs.append(LinkEventsReceived(pdu.sequence, pdu.tlvs))
                self.link_monitoring.on_link_events(pdu.tlvs, now)
                self._after_link_monitoring()
            else:
                self._drop("events_not_advertised", f"sequence {pdu.sequence}")
        elif isinstance(pdu, VariableRequest):
            self.stats.variable_request_rx += 1
            if not self._peer_is_active():
                self._drop("not_permitted", "variable request from a passive peer")
            elif self.settings.variable_retrieval:
                self._answer_variables(pdu)
            else:
                self._drop("variable_retrieval_disabled", "variable request not answered")
        elif isinstance(pdu, VariableResponse):
            self.stats.variable_response_rx += 1
            self._outputs.append(VariablesReceived(pdu.containers))
        elif isinstance(pdu, LoopbackControl):
            self.stats.loopback_control_rx += 1
            self._receive_loopback_control(pdu, now)
        elif isinstance(pdu, OrgSpecificPdu):
            self.stats.org_specific_rx += 1
            self._outputs.append(OrgSpecificReceived(pdu))
        elif isinstance(pdu, UnsupportedPdu):
            self.stats.unsupported_codes_rx += 1

    def _satisfied_with(self, tlv: InfoTlv) -> bool:
        """local_satisfied: our policy over the peer's Local Information TLV."""
        policy = self.settings.peer_policy
        peer_active = bool(tlv.oam_config & OamConfig.ACTIVE)
        return (
            tlv.oam_version in policy.versions
            and tlv.oam_config & policy.required_functions == policy.required_functions
            and (policy.required_mode is None or peer_active == (policy.required_mode is OamMode.ACTIVE))
            and (peer_active or self.settings.mode is OamMode.ACTIVE)
            and tlv.max_pdu_size >= MIN_OAMPDU_SIZE
        )

    def _satisfied(self) -> bool:
        """local_satisfied: the verdict on the peer's TLV; without link monitoring (an
        "unsupportive" node, as the link-monitoring reference calls it) also no failure
        flagged by the peer, so Discovery leaves SEND_ANY while the peer reports one."""
        if not self._verdict:
            return False
        return self.settings.link_monitoring.enabled or not self.peer_flags & CRITICAL_FLAGS

    def _peer_is_active(self) -> bool:
        return self._peer_tlv is not None and bool(self._peer_tlv.oam_config & OamConfig.ACTIVE)

    def _answer_variables(self, request: VariableRequest) -> None:
        room = self._pdu_limit() - FCS_LENGTH - HEADER_LENGTH - 1  # one octet for the End branch
        containers = variables.answer_within(self, request.descriptors, room)
        self._enqueue(VariableResponse(self.mac, 0, tuple(containers)), "variable_response_tx")

    # -- loopback (57.2.11) ------------------------------------------------------------

    def _receive_loopback_control(self, pdu: LoopbackControl, now: float) -> None:
        if not self._peer_is_active():
            self._drop("not_permitted", "loopback control from a passive peer")
        elif not self.settings.loopback_process:
            self._drop("loopback_ignored", f"command {pdu.loopback_command}")
        elif pdu.loopback_command == LoopbackCommand.ENABLE:
            # both sides asked at once: the higher MAC obeys, the lower one ignores
            if self.loopback is LoopbackStatus.INITIATING_LOOPBACK and _mac_int(self.mac) < _mac_int(pdu.src):
                self._drop("loopback_collision", "the peer's MAC is higher: its command is ignored")
                return
            self._loopback_deadline = None
            self._set_loopback(LoopbackStatus.LOCAL_LOOPBACK, ParserAction.LOOPBACK, MuxAction.DISCARD, "peer")
        elif pdu.loopback_command == LoopbackCommand.DISABLE:
            if self.loopback is LoopbackStatus.LOCAL_LOOPBACK:
                self._set_loopback(LoopbackStatus.NO_LOOPBACK, ParserAction.FORWARD, MuxAction.FORWARD, "peer")
        else:
            self._drop("bad_loopback_command", f"command {pdu.loopback_command}")

    def _follow_peer_loopback_state(self, tlv: InfoTlv | None) -> None:
        """The initiator learns from the peer's State field that it loops, or stopped."""
        if tlv is None:
            return
        looping = tlv.parser_action == ParserAction.LOOPBACK
        if self.loopback is LoopbackStatus.INITIATING_LOOPBACK and looping:
            self._loopback_deadline = None
            self._set_loopback(LoopbackStatus.REMOTE_LOOPBACK, ParserAction.DISCARD, MuxAction.FORWARD, "peer")
        elif self.loopback in (LoopbackStatus.TERMINATING_LOOPBACK, LoopbackStatus.REMOTE_LOOPBACK) and not looping:
            self._end_loopback("peer")  # asked to stop, or the peer stopped by itself

    def _end_loopback(self, cause: str) -> None:
        self._loopback_deadline = None
        if self.loopback is not LoopbackStatus.NO_LOOPBACK:
            self._set_loopback(LoopbackStatus.NO_LOOPBACK, ParserAction.FORWARD, MuxAction.FORWARD, cause)

    def _set_loopback(self, status: LoopbackStatus, parser: ParserAction, mux: MuxAction, cause: str) -> None:
        self.loopback, self._parser, self._mux = status, parser, mux
        self._changed()
        self._outputs.append(LoopbackChanged(status, parser, mux, cause))

    # -- discovery ---------------------------------------------------------------------

    def _evaluate(self, now: float, cause: str, *, restart: bool = False) -> None:
        """Run Discovery to a fixed point; `restart` forces FAULT first (lost link, new mode)."""
        peer_remote = self._peer_remote_tlv
        self._remote_stable = (
            self.peer_flags & (Flag.LOCAL_STABLE | Flag.LOCAL_EVALUATING) == Flag.LOCAL_STABLE
            and peer_remote is not None
            and peer_remote.same_configuration(self._current_local_tlv())
        )
        conditions = Conditions(
            begin=not self.settings.enabled or self._half_duplex,
            link_ok=self._link_ok,
            lost_link=restart,
            active=self.settings.mode is OamMode.ACTIVE,
            remote_state_valid=self._peer_tlv is not None,
            local_satisfied=self._satisfied(),
            remote_stable=self._remote_stable,
        )
        for state in step(self.state, conditions):
            if state is S.FAULT:
                self._enter_fault(now)
            self._set_state(state, now, cause)

    def _set_state(self, state: DiscoveryState, now: float, cause: str) -> None:
        old, self.state = self.state, state
        if old is S.SEND_ANY:
            self._end_loopback("discovery")  # loopback lives in SEND_ANY only
        self._changed()
        self._outputs.append(DiscoveryChanged(old, state, self.oper_status, cause))
        self._info_due = now

    def _enter_fault(self, now: float) -> None:
        """FAULT's entry actions: forget the peer, end loopback, reset sequence bookkeeping."""
        had_peer = self._peer_tlv is not None
        critical = self.peer_flags & CRITICAL_FLAGS
        self.peer_mac = None
        self.peer_flags = _NO_FLAGS
        self._peer_tlv = self._peer_remote_tlv = self._last_info = None
        self._verdict = None
        self._remote_stable = False
        self._lost_link_at = None
        self._last_rx_sequence = None
        self._end_loopback("fault")
        if critical:
            self._outputs.append(PeerFlagsChanged(_NO_FLAGS, _NO_FLAGS, critical))
            self.link_monitoring.on_peer_flags(_NO_FLAGS, now)
            self._after_link_monitoring()
        if had_peer:
            self._outputs.append(PeerChanged(None))
        lost = [q for q in self._queue if not isinstance(q.pdu, Information)]
        self.stats.frames_lost_due_to_oam += len(lost)
        self._queue.clear()

    def _require_send_any_active(self, what: str) -> None:
        if self.settings.mode is not OamMode.ACTIVE:
            raise LocalProtocolError(f"{what} needs Active mode")
        if self.state is not S.SEND_ANY:
            raise LocalProtocolError(f"{what} needs SEND_ANY, not {self.state.value}")

    # -- transmitting ------------------------------------------------------------------

    def _after_link_monitoring(self) -> None:
        """Pass on what link monitoring produced; its flags may change what we send."""
        if self.link_monitoring.outputs:
            self._outputs += self.link_monitoring.outputs
            self.link_monitoring.outputs = []
            self._changed()

    def _changed(self) -> None:
        """An input of ``local_pdu`` or of the Information OAMPDU may have changed."""
        self._info_stale = True
        self.local_pdu = local_pdu(self.state, self._link_ok, self.settings.unidirectional)
        self._lost_link_time = self.settings.lost_link_time
        self._interval = self.settings.transmit_interval
        self._budget.reserve_for(self._interval)

    def _build_local_tlv(self, revision: int) -> InfoTlv:
        s = self.settings
        return InfoTlv(
            type=InfoTlvType.LOCAL,
            revision=revision,
            mux_action=self._mux,
            parser_action=self._parser,
            oam_config=s.oam_config,
            max_pdu_size=s.max_pdu_size,
            oui=s.oui,
            vendor_info=s.vendor_info,
        )

    def _current_local_tlv(self) -> InfoTlv:
        """The Local Information TLV; its revision grows whenever its content changes."""
        inputs = (self.settings, self._parser, self._mux)
        if inputs != self._local_inputs:
            self._local_inputs = inputs
            candidate = self._build_local_tlv(self.local_tlv.revision)
            if candidate != self.local_tlv:
                self.local_tlv = self._build_local_tlv((self.local_tlv.revision + 1) & 0xFFFF)
        return self.local_tlv

    def _pdu_limit(self) -> int:
        """The largest OAMPDU we may send: the smaller of ours and the peer's."""
        peer = self._peer_tlv.max_pdu_size if self._peer_tlv is not None else MIN_OAMPDU_SIZE
        return max(MIN_OAMPDU_SIZE, min(self.settings.max_pdu_size, peer))

    def _enqueue(self, pdu: Oampdu, counter: str) -> bool:
        """Queue an OAMPDU for the budget; False (counted) when the queue is full.

        It is encoded once here, so a PDU too large for the peer is refused at the call
        (LocalProtocolError), never later in the event loop.
        """
        try:
            encode(pdu, self._pdu_limit())
        except EncodeError as exc:
            raise LocalProtocolError(f"cannot send {type(pdu).__name__}: {exc}") from exc
        if len(self._queue) >= self.settings.tx_queue_limit:
            self.stats.frames_lost_due_to_oam += 1
            return False
        self._queue.append(_Queued(pdu, counter))
        return True

    def _information_output(self, now: float) -> Transmit:
        """The Information OAMPDU to send now, rebuilt only when its content changed."""
        if not self._info_stale and self._info_output is not None:
            return self._info_output
        self._info_stale = False
        flags = self.local_flags
        lf_info = self.local_pdu is LocalPdu.LF_INFO
        local = self._current_local_tlv()
        key = (flags, lf_info, local, self._peer_tlv, self.settings.org_specific_tlv)
        if key != self._info_key or self._info_output is None:
            tlvs: list[Any] = []
            if not lf_info:
                tlvs.append(local)
                if self._peer_tlv is not None:
                    tlvs.append(attrs.evolve(self._peer_tlv, type=InfoTlvType.REMOTE))
                if self.settings.org_specific_tlv is not None:
                    tlvs.append(OrgSpecificTlv(*self.settings.org_specific_tlv))
            frame = encode(Information(self.mac, flags, tuple(tlvs)), self._pdu_limit())
            self._info_key, self._info_output = key, Transmit(frame, Code.INFORMATION)
            self._info_due = now  # something we tell the peer changed: tell it at once,
            self._info_urgent = True  # before anything that waits
        return self._info_output

    def _service(self, now: float) -> None:
        """Send what is due and what the budget allows; Information first."""
        mode = self.local_pdu
        if mode is LocalPdu.RX_INFO:
            self._info_due = now
            return
        if self._info_due > now and not (self._queue and mode is LocalPdu.ANY) and not self._info_stale:
            return  # nothing due (the steady state between keep-alives)
        info = self._info_output
        if self._info_stale or info is None:
            info = self._information_output(now)
        budget = self._budget
        while True:
            info_due = self._info_due <= now
            queued = bool(self._queue) and mode is LocalPdu.ANY
            if not (info_due or queued) or not budget.available(now):
                break
            waiting = queued and budget.available(now, information=False)
            # a changed Information goes first; a keep-alive never passes a waiting OAMPDU twice
            if info_due and (self._info_urgent or not (waiting and self._last_sent_info)):
                budget.spend(now)
                self._outputs.append(info)
                self.stats.information_tx += 1
                self._info_due = now + self._interval
                self._last_sent_info = True
                self._info_urgent = False
            elif waiting:
                self._send_queued(now)
                self._last_sent_info = False
            else:
                break

    def _send_queued(self, now: float) -> None:
        queued = self._queue.popleft()
        pdu = attrs.evolve(queued.pdu, flags=self.local_flags)
        try:
            frame = encode(pdu, self._pdu_limit())
        except EncodeError as exc:  # the peer's limit shrank since it was queued
            self.stats.frames_lost_due_to_oam += 1
            self._outputs.append(FrameDropped("too_large_for_peer", str(exc)))
            return
        self._budget.spend(now, information=False)
        self._outputs.append(Transmit(frame, pdu.code))
        setattr(self.stats, queued.counter, getattr(self.stats, queued.counter) + 1)


_OPER_STATUS = {
    S.FAULT: OperStatus.LINK_FAULT,
    S.ACTIVE_SEND_LOCAL: OperStatus.ACTIVE_SEND_LOCAL,
    S.PASSIVE_WAIT: OperStatus.PASSIVE_WAIT,
    S.SEND_LOCAL_REMOTE: OperStatus.SEND_LOCAL_AND_REMOTE,
    S.SEND_LOCAL_REMOTE_OK: OperStatus.SEND_LOCAL_AND_REMOTE_OK,
    S.SEND_ANY: OperStatus.OPERATIONAL,
}


def _mac_int(mac: str) -> int:
    return int(mac.replace(":", ""), 16)
