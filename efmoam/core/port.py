"""`OamPort`: the OAM sublayer of one Ethernet port (Clause 57), sans-IO.

Inputs are method calls, each with ``now`` (monotonic seconds): a received frame
(`receive`), a counter sample (`on_counters`), a link change (`set_link`), operator
requests (clear, loopback, variable retrieval, local flags, reconfiguration) and the
passage of time (`handle_timer`).  Outputs are data drained with `take_outputs`; the
caller sleeps until `next_deadline` (or a little after: the daemon's timer slack).
Nothing here reads a clock, sends, sleeps or logs.
`receive` and `on_counters` return False when they produced nothing and moved no deadline
earlier (the steady state below): the caller need not take outputs or reschedule.  A
deadline only ever moves later then (the lost-link timer), so a caller that still waits
for the old one wakes early once, finds nothing due and sleeps again: never late.

Every input does its own work and then runs one epilogue, `_settle`, which in this
order: hands the action policy what it reads (when that changed, or its deadline came),
passes on what link monitoring and the policy recorded, reports the service state the
policy derives if it changed, turns link monitoring's intents into Event Notifications, brings
the Information OAMPDU up to date, and sends what is due.  So an event's record comes
out before the port action and the frames it causes, and no input has to remember a
call order.  Inputs that provably change nothing the epilogue reads go straight to its
last step; they are the steady state: a repeat of the peer's last Information OAMPDU
(it only restarts the lost-link timer) and a timer that found nothing due but what the
transmitter waits for; a counter sample that changed no event needs no epilogue at all.

A counter sample may also ask for its frames first (``on_counters(frames_first=True)``,
the daemon's poll of a thousand ports): the epilogue's last step runs at once, so the
Event Notifications leave, and the rest waits until `settle_postponed` or the port's
next input, whichever comes first (every input begins with it, at the sample's time,
so a port's outputs keep their order and the judgement its time).  Nothing the
frames carry depends on what waits: a sample changes no fact the policy reads, only
link monitoring's events, which the policy turns into latches and holds (not flags),
and the Information is brought up to date before they leave.  A policy deadline that
has come (a recovery, a delay) judges first: the whole epilogue runs.

Where the rules live: Discovery in `discovery` (a table), remote loopback in `loopback`
(a table), transmission and pacing in `transmit` and `pacing`, what we know of the peer
in `peer`, Clause 30 attributes in `variables`, link monitoring in `linkmon`, what
events do to the port (session events, latches, recovery) in `policy`,
statistics in `stats`.  This module wires them together and filters what it receives:

* Receive counters (RFC 4878) count OAMPDUs accepted from the peer; frames filtered by
  ``local_pdu`` (57.3.2.2), from ourselves (a loop) or from a second MAC are reported as
  `FrameDropped` and not counted as received.  The critical flags of any OAMPDU from
  the bound peer are acted on, even where its content is filtered.
* The lost-link timer restarts on every valid OAMPDU from the peer, whatever its code.
"""

from __future__ import annotations

from typing import Any

from efmoam.core import refusals, variables
from efmoam.core.discovery import Conditions, DiscoveryState, LocalPdu, local_pdu, local_stable, step
from efmoam.core.errors import LocalProtocolError
from efmoam.core.linkmon import persist
from efmoam.core.linkmon.counters import CounterSample
from efmoam.core.linkmon.engine import LinkMonitoring
from efmoam.core.linkmon.eventlog import EventLogEntry, Location
from efmoam.core.loopback import Conditions as LoopbackConditions, Input, Loopback
from efmoam.core.outputs import (
    DiscoveryChanged,
    DropReason,
    FrameDropped,
    LinkEventsReceived,
    LoopbackStatus,
    OperStatus,
    OrgSpecificReceived,
    Output,
    PeerChanged,
    PeerFlagsChanged,
    PeerInfo,
    PeerQuirk,
    PortServiceChanged,
    QuirkSeen,
    VariablesReceived,
)
from efmoam.core.peer import PeerKnowledge, satisfied_with
from efmoam.core.policy.engine import IN_SERVICE, Facts, Policy, Service
from efmoam.core.settings import OamMode, PortSettings
from efmoam.core.stats import OamStatistics, OuiCounts
from efmoam.core.transmit import InformationContent, LocalInformation, Transmitter
from pdu.codec import PeerDecoder
from pdu.enums import (
    CRITICAL_FLAGS,
    FCS_LENGTH,
    HEADER_LENGTH,
    Code,
    Flag,
    LoopbackCommand,
    OamConfig,
    ParserAction,
)
from pdu.errors import DecodeError, DecodeReason
from pdu.model import (
    EventNotification,
    Information,
    InfoTlv,
    LinkEventTlv,
    LoopbackControl,
    Oampdu,
    OrgSpecificPdu,
    OrgSpecificTlv,
    VariableDescriptor,
    VariableRequest,
    VariableResponse,
)

S = DiscoveryState
_NO_FLAGS = Flag(0)
_NO_FUNCTIONS = OamConfig(0)
_EVALUATING_OR_STABLE = Flag.LOCAL_EVALUATING | Flag.LOCAL_STABLE
_ANY_MAC = LoopbackConditions()  #: for the loopback inputs whose guards read no MAC


class OamPort:
    """The OAM sublayer of one port, driven by its caller.

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
        #: Organization Specific OAMPDUs received, per OUI (bounded; `stats` has the total)
        self.org_specific_rx_by_oui = OuiCounts()
        #: frames not acted on, by reason (`DropReason` and `DecodeReason` values)
        self.drops: dict[str, int] = {}
        #: the peer's nonstandard habits worked around, by `PeerQuirk` value
        self.quirks: dict[str, int] = {}
        self.state: DiscoveryState = S.FAULT
        self._link_ok = link_up
        self._half_duplex = half_duplex  #: the link is half duplex: OAM cannot run
        self._outputs: list[Output] = []
        self._decoder = PeerDecoder(max_peers=8)
        self._loopback = Loopback()
        self._peer = PeerKnowledge()
        self._mac_attributes: dict[int, int] = {}
        self._tx_sequence = 0
        self._local = LocalInformation(revision, settings, self._loopback.actions)
        self.link_monitoring = LinkMonitoring(settings.link_monitoring, now, wall_clock_offset)
        self._tx = Transmitter(self.mac, self.stats, settings.transmit_interval, now)
        self._policy = Policy(settings.policy, settings.transmit_interval)
        self._policy_inputs: tuple[Any, ...] | None = None  #: what the policy last judged
        #: the policy's next deadline, kept here: every keep-alive reads it
        self._policy_deadline: float | None = None
        self._service = IN_SERVICE  #: the service state last reported
        self._service_inputs: tuple[int, int] | None = None  #: what it was derived from
        self._operator_flags = _NO_FLAGS  #: the critical flags our client set (`set_local_flags`)
        self._tracked: frozenset[str] = frozenset()  #: the tracked conditions that hold
        self._looped_until: float | None = None  #: our own OAMPDUs came back: a loop until then
        self._session_end_cause = ""  #: why Discovery last left SEND_ANY
        self._information_inputs: tuple[Any, ...] | None = None  #: what the Information was made from
        self._local_pdu = LocalPdu.RX_INFO  #: set by `_settle` with the Information
        #: a sample's frames left and the rest of its epilogue waits: that sample's time
        self._postponed_at: float | None = None
        self._discover(now, "start")
        self._settle(now)

    # -- the caller's view -------------------------------------------------------------

    def take_outputs(self) -> list[Output]:
        """Everything the port produced since the last call, oldest first."""
        outputs, self._outputs = self._outputs, []
        return outputs

    def next_deadline(self) -> float | None:
        """When `handle_timer` must run next (None: only an input can change anything)."""
        deadline = self._peer.lost_link_at
        other = self._loopback.deadline
        if other is not None and (deadline is None or other < deadline):
            deadline = other
        other = self._tx.next_send
        if other is not None and (deadline is None or other < deadline):
            deadline = other
        other = self._policy_deadline
        if other is not None and (deadline is None or other < deadline):
            deadline = other
        return deadline

    @property
    def local_pdu(self) -> LocalPdu:
        """``local_pdu`` (57.3.1.3): what may be sent and received, as of the last input."""
        return self._local_pdu

    @property
    def oper_status(self) -> OperStatus:
        """RFC 4878 dot3OamOperStatus."""
        if not self.settings.enabled:
            return OperStatus.DISABLED
        if self._half_duplex and self._link_ok:
            return OperStatus.NON_OPER_HALF_DUPLEX
        if (
            self.state is S.SEND_LOCAL_REMOTE
            and self._peer.verdict is not None
            and not self._peer.satisfied(self.settings)
        ):
            return OperStatus.OAM_PEERING_LOCALLY_REJECTED
        if self.state is S.SEND_LOCAL_REMOTE_OK and not self._peer.flags & _EVALUATING_OR_STABLE:
            return OperStatus.OAM_PEERING_REMOTELY_REJECTED
        return _OPER_STATUS[self.state]

    @property
    def peer(self) -> PeerInfo | None:
        """The peer as RFC 4878 dot3OamPeerTable, once its Local Information is known."""
        return self._peer.info()

    @property
    def lost_link_at(self) -> float | None:
        """When the peer is declared lost unless it is heard before (None: no peer timer)."""
        return self._peer.lost_link_at

    @property
    def peer_mac(self) -> str | None:
        return self._peer.mac

    @property
    def peer_flags(self) -> Flag:
        """The Flags field of the peer's last OAMPDU."""
        return self._peer.flags

    @property
    def loopback(self) -> LoopbackStatus:
        """RFC 4878 dot3OamLoopbackStatus."""
        return self._loopback.status

    @property
    def local_flags(self) -> Flag:
        """The Flags field we send now."""
        flags = int(self.link_monitoring.active.info_flags)  # ints: IntFlag arithmetic is slow
        if not self._link_ok:
            flags |= Flag.LINK_FAULT
        state = self.state
        if state in (S.ACTIVE_SEND_LOCAL, S.PASSIVE_WAIT) or (
            state is S.SEND_LOCAL_REMOTE and self._peer.verdict is None
        ):
            flags |= Flag.LOCAL_EVALUATING
        elif local_stable(state):
            flags |= Flag.LOCAL_STABLE
        if self._peer.local_tlv is not None:
            # the peer's Local Evaluating/Stable bits (3, 4) echoed as Remote ones (5, 6)
            flags |= (int(self._peer.flags) & _EVALUATING_OR_STABLE) << 2
        return Flag(flags)

    @property
    def local_tlv(self) -> InfoTlv:
        """Our Local Information TLV as it is now."""
        return self._local.current(self.settings, self._loopback.actions)

    @property
    def remote_stable(self) -> bool:
        """``remote_stable``: the peer says it is satisfied with our current information."""
        return self._peer.stable_with(self.local_tlv)

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
        """True while an event or a latch holds the port out of service (or down)."""
        return self._service.out_of_service or self._service.down

    @property
    def service(self) -> Service:
        """The service state the policy derived: out of service, down, and why."""
        return self._service

    def policy_view(self, wall_clock_offset: float | None = None) -> dict[str, Any]:
        """The active session events and latches, as plain data (``show port``)."""
        return self._policy.view(wall_clock_offset)

    def event_log(self) -> list[tuple[int, EventLogEntry]]:
        """What the 12-slot event log shows, as (slot, entry) in slot order."""
        return self.link_monitoring.log.entries()

    def update_mac_attributes(self, values: dict[int, int]) -> None:
        """Supply Clause 30 MAC statistics (leaf -> value) for variable retrieval."""
        self._mac_attributes.update(values)

    # -- inputs ------------------------------------------------------------------------

    def receive(self, frame: bytes, *, now: float) -> bool:
        """A frame arrived on the port; False: the peer repeated itself (see the module's comment)."""
        settled = self._postponed_at is not None and self.settle_postponed()  # (checked here: once per frame)
        try:
            pdu = self._decoder.decode(frame)
        except DecodeError as exc:
            self._drop(DropReason.NOT_OAMPDU if exc.reason.not_oampdu else exc.reason, str(exc))
            return True
        peer = self._peer
        if pdu is peer.last_info:  # the peer repeated itself (the steady state): see the module's comment
            self.stats.information_rx += 1  # counted in place (see `OamStatistics`)
            peer.lost_link_at = now + self.settings.lost_link_time
            return settled
        refused = self._refusal(pdu)
        if refused is not None:
            if refused[0] is DropReason.LOOP:
                self._looped_until = now + self.settings.lost_link_time
            self._drop(*refused)
        elif isinstance(pdu, Information):
            peer.lost_link_at = now + self.settings.lost_link_time
            self._receive_information(pdu, now)
        elif peer.mac is None:
            self._drop(DropReason.NOT_IN_SEND_ANY, f"code {pdu.code:#04x} before a peer")
        else:
            peer.lost_link_at = now + self.settings.lost_link_time
            # its flags act whatever its code (they may end SEND_ANY: a peer without link
            # monitoring reporting a failure); its content only in the state they leave
            self._critical_flags_of(pdu, now)
            if self.state is S.SEND_ANY:
                self._receive_other(pdu, now)
            else:
                self._drop(DropReason.NOT_IN_SEND_ANY, f"code {pdu.code:#04x} in {self.state.value}")
        self._settle(now)
        return True

    def handle_timer(self, *, now: float) -> None:
        """Act on whatever is due at `now`: keep-alives, queued frames, lost link, loopback."""
        self.settle_postponed()
        expired = False
        lost_link_at = self._peer.lost_link_at
        if lost_link_at is not None and now >= lost_link_at:
            self._discover(now, "lost_link", restart=True)
            expired = True
        deadline = self._loopback.deadline
        if deadline is not None and now >= deadline:
            self._loopback_input(Input.TIMEOUT, now)
            expired = True
        deadline = self._policy_deadline
        if deadline is not None and now >= deadline:
            expired = True
        if expired:
            self._settle(now)
        else:  # only time passed (a keep-alive or a queued frame is due): nothing derived changed
            self._tx.service(now, self._local_pdu, self._outputs)

    def on_counters(
        self, sample: CounterSample, *, now: float, rebased: bool = False, frames_first: bool = False
    ) -> bool:
        """A sample of the NIC's cumulative error counters, for link monitoring (`rebased`:
        the counter source changed, so the sample is a new baseline, see `LinkMonitoring`);
        False: no event, nothing to take (see the module's comment).  `frames_first`: the
        frames leave now, the rest of the epilogue waits for `settle_postponed` (or the
        next input)."""
        settled = self._postponed_at is not None and self.settle_postponed()
        frames = sample.frames_received
        if frames is not None:  # aFramesReceivedOK, for variable retrieval
            self._mac_attributes[variables.A_FRAMES_RECEIVED_OK] = frames
        monitoring = self.link_monitoring
        active = monitoring.active
        version = active.version
        monitoring.on_counters(sample, now, rebased)
        # windows and totals moved but no event: nothing the epilogue reads changed, and
        # what is due to be sent is the timer's
        if monitoring.outputs or active.version != version:  # (an intent always comes with an event)
            deadline = self._policy_deadline
            if frames_first and (deadline is None or now < deadline):
                self._postponed_at = now
                self._send_due(now)
            else:
                self._settle(now)
            return True
        return settled

    @property
    def postponed(self) -> bool:
        """A counter sample's frames left and the rest of its epilogue waits (`settle_postponed`)."""
        return self._postponed_at is not None

    def settle_postponed(self) -> bool:
        """Run the rest of the epilogue an ``on_counters(frames_first=True)`` left waiting,
        at that sample's time (every input begins with it); whether there was one."""
        if self._postponed_at is None:
            return False
        self._settle(self._postponed_at)
        return True

    def set_link(self, up: bool, *, now: float, speed_mbps: int | None = None, half_duplex: bool | None = None) -> None:
        """The port's link (carrier) went up or down; `speed_mbps` and `half_duplex` when known.

        OAM needs a full-duplex link: on a half-duplex one Discovery stays in FAULT,
        nothing is sent, OAMPDUs received are dropped (``half_duplex``) and the status is
        RFC 4878 nonOperHalfDuplex.  None leaves what is known of the duplex as it is.
        """
        self.settle_postponed()
        if speed_mbps is not None:
            self.link_monitoring.set_speed(speed_mbps)
        duplex_changed = half_duplex is not None and half_duplex != self._half_duplex
        if duplex_changed:
            self._half_duplex = bool(half_duplex)
        if up != self._link_ok:
            self._link_ok = up
            self.link_monitoring.link_changed()  # a link down/up clears every event
            self._discover(now, "link_up" if up else "link_down")
        elif duplex_changed:
            self._discover(now, "half_duplex" if self._half_duplex else "full_duplex")
        self._settle(now)

    def set_speed(self, speed_mbps: int | None, *, now: float) -> None:
        """The link speed (for the symbol and frame-period windows), when it is learnt apart."""
        self.settle_postponed()
        self.link_monitoring.set_speed(speed_mbps)
        self._settle(now)

    def clear_events(self, location: Location | None = None, *, now: float) -> None:
        """The clear command: end the active events of `location` (None: local and remote).

        The Information flags local events set are cleared with them.  A remote flag
        event comes back with the next OAMPDU that still carries the flag.
        """
        self.settle_postponed()
        self.link_monitoring.clear(location, now)
        self._policy.clear(location, now)
        if location is not Location.REMOTE:
            self._operator_flags = _NO_FLAGS  # the clear ended our client's flags too
        if location is not Location.LOCAL:
            self._peer.last_info = None  # process the peer's next Information in full
        self._settle(now, policy="operator")

    def reconfigure(self, settings: PortSettings, *, now: float) -> None:
        """Apply new settings; a changed Local Information TLV gets a new revision."""
        self.settle_postponed()
        restart = settings.mode is not self.settings.mode  # a new mode redoes Discovery
        self.settings = settings
        self.link_monitoring.reconfigure(settings.link_monitoring, now)
        self._policy.reconfigure(settings.policy, settings.transmit_interval, now)
        self._tx.set_interval(settings.transmit_interval)
        self._discover(now, "reconfigured", restart=restart)
        self._settle(now, policy="reload")

    def set_tracked(self, name: str, active: bool, *, now: float) -> None:
        """A tracked condition (``track``, by its name) started or stopped holding."""
        self.settle_postponed()
        tracked = self._tracked | {name} if active else self._tracked - {name}
        if tracked != self._tracked:
            self._tracked = tracked
            self._settle(now)

    def set_local_flags(self, flags: Flag, on: bool, *, now: float) -> None:
        """Set or clear Link Fault, Dying Gasp or Critical Event in what we send.

        Each flag set is a local event (never port-affecting) while it lasts.
        """
        self.settle_postponed()
        if flags & ~CRITICAL_FLAGS:
            raise LocalProtocolError(f"only link fault, dying gasp and critical event can be set, not {flags!r}")
        current = self._operator_flags
        self._operator_flags = Flag(current | flags if on else current & ~flags)
        self._settle(now, policy="operator")

    def send_dying_gasp(self, *, now: float) -> bool:
        """Set Dying Gasp in what we send, if this port sends at all (the daemon stopping).

        Returns whether it will be sent; a port that sends nothing (OAM disabled, link
        down, passive and waiting) logs no Dying Gasp event either.
        """
        self.settle_postponed()
        if not self.settings.enabled or self._half_duplex or self.local_pdu is LocalPdu.RX_INFO:
            return False
        self.set_local_flags(Flag.DYING_GASP, True, now=now)
        self._tx.repeat_information(self.settings.dying_gasp_count - 1, now)
        self._tx.service(now, self._local_pdu, self._outputs)
        return True

    def restore(self, saved: object, *, now: float) -> list[str]:
        """Put back link monitoring state saved by `saved_state` (a restart); returns what
        could not be restored.  Raises ValueError, with the port unchanged, on data it
        cannot use."""
        self.settle_postponed()
        latches: object = []
        if isinstance(saved, dict) and "latches" in saved:
            saved = dict(saved)
            latches = saved.pop("latches")
        problems = persist.restore(self.link_monitoring, saved, now)
        try:
            self._policy.restore(latches, now)
        except ValueError as exc:
            problems.append(f"latches not restored: {exc}")
        self._operator_flags = self.link_monitoring.local_flags
        self._service_inputs = None  # a new active set, whose version may equal the old one's
        self._settle(now, policy="reload")
        return problems

    def saved_state(self) -> dict[str, Any]:
        """Link monitoring state and the policy's latches as JSON-ready data, for `restore`
        after a restart."""
        saved = persist.snapshot(self.link_monitoring)
        latches = self._policy.saved()
        if latches:
            saved["latches"] = latches
        return saved

    # -- operator requests -------------------------------------------------------------

    def notify_link_events(
        self, tlvs: tuple[LinkEventTlv | OrgSpecificTlv, ...], *, now: float, burst: int = 1
    ) -> int | None:
        """Send one Event Notification as a burst of `burst` copies (same sequence number).

        Returns its sequence number, or None when it cannot be sent: outside SEND_ANY,
        to a peer that did not advertise Link Events, or with the queue full.
        """
        self.settle_postponed()
        sequence = self._send_notification(tlvs, burst)
        self._settle(now)
        return sequence

    def request_variables(self, descriptors: tuple[VariableDescriptor, ...], *, now: float) -> None:
        """Send a Variable Request; the answer arrives as `VariablesReceived`."""
        self.settle_postponed()
        _refuse(refusals.variables_refusal(self._request_context()))
        self._enqueue(VariableRequest(self.mac, 0, descriptors))
        self._settle(now)

    def send_org_specific(self, oui: int, value: bytes, *, now: float) -> None:
        """Send an Organization Specific OAMPDU (SEND_ANY only)."""
        self.settle_postponed()
        _refuse(refusals.org_specific_refusal(self._request_context()))
        self._enqueue(OrgSpecificPdu(self.mac, 0, oui, value))
        self._settle(now)

    def loopback_refusal(self, start: bool) -> str | None:
        """Why `start_loopback` (`start`) or `stop_loopback` would be refused now (None: it would not)."""
        return refusals.loopback_refusal(self._request_context(), start)

    def start_loopback(self, *, now: float) -> None:
        """Ask the peer to loop our frames back (57.2.11); confirmed by its Information."""
        self.settle_postponed()
        _refuse(self.loopback_refusal(start=True))
        self._loopback_input(Input.START, now)
        self._enqueue(LoopbackControl(self.mac, 0, LoopbackCommand.ENABLE))
        self._settle(now)

    def stop_loopback(self, *, now: float) -> None:
        """Ask the peer to stop looping our frames."""
        self.settle_postponed()
        _refuse(self.loopback_refusal(start=False))
        self._loopback_input(Input.STOP, now)
        self._enqueue(LoopbackControl(self.mac, 0, LoopbackCommand.DISABLE))
        self._settle(now)

    # -- the epilogue ------------------------------------------------------------------

    def _settle(self, now: float, policy: str = "") -> None:
        """Run at the end of every input: see the module's comment.  `policy`: judge the
        policy even if nothing it reads changed, for this cause (operator, reload)."""
        self._postponed_at = None
        monitoring = self.link_monitoring
        active = monitoring.active
        self._judge_policy(now, policy)
        if monitoring.outputs:
            self._outputs += monitoring.outputs
            monitoring.outputs = []
        judged = self._policy
        if judged.outputs:
            self._outputs += judged.outputs
            judged.outputs = []
        derived_from = (active.version, judged.version)
        if derived_from != self._service_inputs:
            self._service_inputs = derived_from
            service = judged.service(active, self.settings.link_monitoring)
            old, self._service = self._service, service
            if (service.out_of_service, service.down) != (old.out_of_service, old.down):
                self._outputs.append(PortServiceChanged(service.out_of_service, service.reasons, service.down))
        self._send_due(now)

    def _send_due(self, now: float) -> None:
        """The epilogue's last step: link monitoring's intents as Event Notifications, the
        Information brought up to date, and what is due sent."""
        monitoring = self.link_monitoring
        active = monitoring.active
        if monitoring.intents:
            intents, monitoring.intents = monitoring.intents, []
            for intent in intents:
                self._send_notification(intent.tlvs, intent.burst)
        # the Information is a function of these: remade only when one of them changed
        peer = self._peer
        inputs = (
            active.info_flags, self._link_ok, self.state, peer.verdict, peer.flags, peer.local_tlv,
            self.settings, self._loopback.status,
        )  # fmt: skip
        if inputs != self._information_inputs:
            self._information_inputs = inputs
            # kept, not a property: every keep-alive reads it, and working it out there cost 5-10 % (test_core_bench)
            self._local_pdu = local_pdu(self.state, self._link_ok, self.settings.unidirectional)
            self._tx.set_information(self._information_content(), now)
        self._tx.service(now, self._local_pdu, self._outputs)

    def _policy_reads(self) -> tuple[Any, ...]:
        """What the policy's judgement depends on (compared, not judged, by most inputs)."""
        peer = self._peer
        return (
            self.settings.enabled and not self._half_duplex, self._link_ok, self.state, peer.local_tlv, peer.verdict,
            peer.remote_tlv, self._loopback.status, self._looped_until, self._tracked,
            self.link_monitoring.active.version, self._session_end_cause, self.settings,
        )  # fmt: skip

    def _judge_policy(self, now: float, cause: str) -> None:
        """Hand the policy what it reads, when that changed or its deadline came; then carry
        out what it derived for link monitoring: the latches that recovered end their
        events, and the Critical Event it wants joins our client's flags.  `cause`: judge
        even if nothing changed (the clear command, new settings, our client's flags)."""
        policy, monitoring, peer = self._policy, self.link_monitoring, self._peer
        looped = self._looped_until
        if looped is not None and now >= looped:
            looped = self._looped_until = None
        inputs = self._policy_reads()
        deadline = policy.next_deadline()
        if not cause and inputs == self._policy_inputs and (deadline is None or now < deadline):
            return
        sending = local_pdu(self.state, self._link_ok, self.settings.unidirectional)
        facts = Facts(
            enabled=self.settings.enabled and not self._half_duplex, link_ok=self._link_ok, state=self.state,
            transmitting=sending is LocalPdu.INFO or sending is LocalPdu.ANY, peer_tlv=peer.local_tlv,
            verdict=peer.verdict, echo=peer.remote_tlv, local_tlv=self.local_tlv, loopback=self._loopback.status,
            looped_until=looped, session_end_cause=self._session_end_cause, tracked=self._tracked,
        )  # fmt: skip
        policy.evaluate(facts, monitoring.active, self.settings.link_monitoring, now)
        if policy.recovered:
            for key in policy.recovered:
                monitoring.end(key, now, "recovery")
            policy.recovered = []
        wanted = self._operator_flags | (Flag.CRITICAL_EVENT if policy.notify_peer else _NO_FLAGS)
        if wanted != monitoring.local_flags:
            monitoring.on_local_flags(wanted, now, cause or "condition")
        self._policy_inputs = self._policy_reads()  # after its own changes: judged as they are
        self._policy_deadline = policy.next_deadline()

    def _information_content(self) -> InformationContent:
        return InformationContent(
            flags=self.local_flags,
            link_fault_only=self.local_pdu is LocalPdu.LF_INFO,
            local=self.local_tlv,
            peer=self._peer.local_tlv,
            org_specific=self.settings.org_specific_tlv,
            limit=self._peer.pdu_limit(self.settings),
        )

    # -- receiving ---------------------------------------------------------------------

    def _refusal(self, pdu: Oampdu) -> tuple[DropReason, str] | None:
        """Why `pdu` is not acted on at all (None: it is), in the order the filters apply."""
        peer_mac = self._peer.mac
        if pdu.src == self.mac:
            return DropReason.LOOP, "our own OAMPDU came back"
        if not self.settings.enabled:
            return DropReason.DISABLED, ""
        if self._half_duplex:
            return DropReason.HALF_DUPLEX, ""
        if not self._link_ok:
            return DropReason.LINK_DOWN, ""
        if peer_mac is not None and pdu.src != peer_mac:
            return DropReason.SECOND_PEER, f"{pdu.src} while the peer is {peer_mac}"
        return None  # an OAMPDU other than Information is also filtered by ``local_pdu``, in `receive`

    def _drop(self, reason: DropReason | DecodeReason, detail: str = "") -> None:
        self.drops[reason.value] = self.drops.get(reason.value, 0) + 1
        self._outputs.append(FrameDropped(reason, detail))

    def _receive_information(self, pdu: Information, now: float) -> None:
        self.stats.received(Code.INFORMATION)
        peer = self._peer
        peer.mac = pdu.src  # the first Information heard after FAULT names the peer
        peer.last_info = pdu
        local = pdu.local
        if local is not None:
            peer.remote_tlv = pdu.remote
            if local != peer.local_tlv:
                peer.local_tlv = local
                peer.verdict = satisfied_with(local, self.settings)
                self._outputs.append(PeerChanged(peer.info()))
        self._peer_flags(pdu.flags, now)
        if local is not None:  # the peer's State field says whether it loops our frames
            looping = local.parser_action == ParserAction.LOOPBACK
            self._loopback_input(Input.PEER_LOOPING if looping else Input.PEER_FORWARDING, now)
        self._discover(now, "peer")

    def _peer_flags(self, flags: Flag, now: float) -> bool:
        """The Flags field of an Information OAMPDU from the bound peer; True when it changed."""
        peer = self._peer
        old, peer.flags = peer.flags, flags
        critical, old_critical = flags & CRITICAL_FLAGS, old & CRITICAL_FLAGS
        if critical != old_critical:
            self._outputs.append(PeerFlagsChanged(critical, critical & ~old_critical, old_critical & ~critical))
        self.link_monitoring.on_peer_flags(critical, now)
        return flags != old

    def _critical_flags_of(self, pdu: Oampdu, now: float) -> None:
        """The critical flags of another OAMPDU from the bound peer (57.4.2.1).  Its other
        flags (Local Evaluating/Stable) are left to Information OAMPDUs, which carry the
        peer's Discovery state: some peers send 0 there in other OAMPDUs."""
        flags = (self._peer.flags & ~CRITICAL_FLAGS) | (pdu.flags & CRITICAL_FLAGS)
        if self._peer_flags(Flag(flags), now):
            self._discover(now, "peer")  # without link monitoring, the peer's failure flags count

    def _receive_other(self, pdu: Oampdu, now: float) -> None:
        peer = self._peer
        if isinstance(pdu, EventNotification):
            duplicate, reused = peer.notification_kind(pdu)
            self.stats.received(Code.EVENT_NOTIFICATION, duplicate)
            if duplicate:
                return
            if reused:
                quirk = PeerQuirk.SEQUENCE_REUSED
                self.quirks[quirk.value] = self.quirks.get(quirk.value, 0) + 1
                self._outputs.append(QuirkSeen(quirk, f"sequence {pdu.sequence} again, with other TLVs: a new event"))
            if peer.advertises(OamConfig.LINK_EVENTS):
                self._outputs.append(LinkEventsReceived(pdu.sequence, pdu.tlvs))
                self.link_monitoring.on_link_events(pdu.tlvs, now)
            else:
                self._drop(DropReason.EVENTS_NOT_ADVERTISED, f"sequence {pdu.sequence}")
            return
        self.stats.received(pdu.code)
        if isinstance(pdu, VariableRequest):
            if not peer.active:
                self._drop(DropReason.NOT_PERMITTED, "variable request from a passive peer")
            elif self.settings.variable_retrieval:
                self._answer_variables(pdu)
            else:
                self._drop(DropReason.VARIABLE_RETRIEVAL_DISABLED, "variable request not answered")
        elif isinstance(pdu, VariableResponse):
            self._outputs.append(VariablesReceived(pdu.containers))
        elif isinstance(pdu, LoopbackControl):
            self._receive_loopback_control(pdu, now)
        elif isinstance(pdu, OrgSpecificPdu):
            self.org_specific_rx_by_oui.count(pdu.oui)
            self._outputs.append(OrgSpecificReceived(pdu))

    def _answer_variables(self, request: VariableRequest) -> None:
        readings = variables.Readings(
            enabled=self.settings.enabled,
            state=self.state,
            local_tlv=self.local_tlv,
            local_flags=int(self.local_flags),
            peer=self.peer,
            peer_flags=int(self._peer.flags),
            stats=self.stats,
            mac_attributes=dict(self._mac_attributes),
        )
        room = self._peer.pdu_limit(self.settings) - FCS_LENGTH - HEADER_LENGTH - 1  # one octet for the End branch
        containers = variables.answer_within(readings, request.descriptors, room)
        self._enqueue(VariableResponse(self.mac, 0, tuple(containers)))

    def _receive_loopback_control(self, pdu: LoopbackControl, now: float) -> None:
        if not self._peer.active:
            self._drop(DropReason.NOT_PERMITTED, "loopback control from a passive peer")
        elif not self.settings.loopback_process:
            self._drop(DropReason.LOOPBACK_IGNORED, f"command {pdu.loopback_command}")
        elif pdu.loopback_command == LoopbackCommand.ENABLE:
            higher = _mac_int(pdu.src) > _mac_int(self.mac)
            if self._loopback_input(Input.PEER_ENABLE, now, LoopbackConditions(peer_mac_higher=higher)) is None and (
                self.loopback is LoopbackStatus.INITIATING_LOOPBACK
            ):
                self._drop(DropReason.LOOPBACK_COLLISION, "the peer's MAC is higher: its command is ignored")
        elif pdu.loopback_command == LoopbackCommand.DISABLE:
            self._loopback_input(Input.PEER_DISABLE, now)
        else:
            self._drop(DropReason.BAD_LOOPBACK_COMMAND, f"command {pdu.loopback_command}")

    def _loopback_input(
        self, event: Input, now: float, conditions: LoopbackConditions = _ANY_MAC
    ) -> LoopbackStatus | None:
        """Move loopback; returns the new status when it changed."""
        change = self._loopback.handle(event, now=now, timeout=self.settings.loopback_timeout, conditions=conditions)
        if change is None:
            return None
        self._outputs.append(change)
        return change.status

    # -- discovery ---------------------------------------------------------------------

    def _discover(self, now: float, cause: str, *, restart: bool = False) -> None:
        """Run Discovery to a fixed point; `restart` forces FAULT first (lost link, new mode)."""
        peer = self._peer
        conditions = Conditions(
            begin=not self.settings.enabled or self._half_duplex,
            link_ok=self._link_ok,
            lost_link=restart,
            active=self.settings.mode is OamMode.ACTIVE,
            remote_state_valid=peer.local_tlv is not None,
            local_satisfied=self._peer.satisfied(self.settings),
            remote_stable=self.remote_stable,
        )
        for state in step(self.state, conditions):
            if state is S.FAULT:
                self._enter_fault(now)
            old, self.state = self.state, state
            if old is S.SEND_ANY:
                self._session_end_cause = cause
                self._loopback_input(Input.LEFT_SEND_ANY, now)  # loopback lives in SEND_ANY only
            self._outputs.append(DiscoveryChanged(old, state, self.oper_status, cause))
            self._tx.information_due_now(now)

    def _enter_fault(self, now: float) -> None:
        """FAULT's entry actions: forget the peer, end loopback, lose what waits to be sent."""
        old = self._peer
        self._peer = PeerKnowledge()
        self._loopback_input(Input.FAULT, now)
        critical = old.flags & CRITICAL_FLAGS
        if critical:
            self._outputs.append(PeerFlagsChanged(_NO_FLAGS, _NO_FLAGS, critical))
            self.link_monitoring.on_peer_flags(_NO_FLAGS, now)
        if old.local_tlv is not None:
            self._outputs.append(PeerChanged(None))
        self._tx.discard()

    def _request_context(self) -> refusals.RequestContext:
        """What an operator's request to the peer depends on (`refusals`)."""
        tlv = self._peer.local_tlv
        return refusals.RequestContext(
            self.settings.mode, self.state is S.SEND_ANY, self.oper_status,
            tlv.oam_config if tlv is not None else _NO_FUNCTIONS, self._loopback.status,
        )  # fmt: skip

    # -- what we send ------------------------------------------------------------------

    def _enqueue(self, pdu: Oampdu, duplicate: bool = False) -> bool:
        return self._tx.enqueue(pdu, self._peer.pdu_limit(self.settings), self.settings.tx_queue_limit, duplicate)

    def _send_notification(self, tlvs: tuple[LinkEventTlv | OrgSpecificTlv, ...], burst: int) -> int | None:
        """Queue an Event Notification and `burst` - 1 copies; its sequence number, or None."""
        if self.state is not S.SEND_ANY or not self._peer.advertises(OamConfig.LINK_EVENTS):
            return None
        self._tx.drop_duplicates()  # a copy must not follow a newer notification
        sequence = self._tx_sequence
        pdu = EventNotification(self.mac, 0, sequence, tlvs)
        try:
            if not self._enqueue(pdu):
                return None
        except LocalProtocolError:
            return None
        self._tx_sequence = (sequence + 1) & 0xFFFF
        for _ in range(burst - 1):
            self._enqueue(pdu, duplicate=True)
        return sequence


_OPER_STATUS = {
    S.FAULT: OperStatus.LINK_FAULT,
    S.ACTIVE_SEND_LOCAL: OperStatus.ACTIVE_SEND_LOCAL,
    S.PASSIVE_WAIT: OperStatus.PASSIVE_WAIT,
    S.SEND_LOCAL_REMOTE: OperStatus.SEND_LOCAL_AND_REMOTE,
    S.SEND_LOCAL_REMOTE_OK: OperStatus.SEND_LOCAL_AND_REMOTE_OK,
    S.SEND_ANY: OperStatus.OPERATIONAL,
}


def _refuse(refusal: str | None) -> None:
    """An operator's request refused (`refusals`): LocalProtocolError with the words."""
    if refusal is not None:
        raise LocalProtocolError(refusal)


def _mac_int(mac: str) -> int:
    return int(mac.replace(":", ""), 16)
