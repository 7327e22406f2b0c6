"""One managed port at run time: its engine, socket, counters and action, and the
carrying out of what its engine asks for.

* Frames in: read from the socket, policed per source before decoding (`RxPolicer`),
  each given to the engine under its own guard: a frame the engine cannot handle is
  dropped and counted (``internal_error``), never the daemon.
* Outputs: each kind has its handler (`OUTPUT_HANDLERS`); a handler returns True when
  the port's saved state changed.  Frames out pass the `WireGuard`.
* The port action: applied when the engine's service state changes, retried every
  `ACTION_RETRY` seconds while it fails, and verified every ``action_verify_interval`` seconds
  while the port is out of service (a block table deleted behind our back is put back,
  counted and logged).
* Log lines caused by what the peer sends (discovery, peer and flag changes, ...) are
  rate limited per port and kind like bad input: a peer toggling its flags cannot flood
  the journal.
"""

from __future__ import annotations

import shlex
import traceback
import typing
from collections.abc import Callable
from typing import Any

import attrs

from efmoam.config import PortProfile
from efmoam.config.model import ActionBackend
from efmoam.core import (
    DiscoveryChanged,
    DropReason,
    EventLogged,
    FrameDropped,
    LinkEventsReceived,
    LoopbackChanged,
    MonitorUnavailable,
    OamPort,
    OrgSpecificReceived,
    Output,
    PeerChanged,
    PeerFlagsChanged,
    PolicyEvent,
    PortServiceChanged,
    QuirkSeen,
    Transmit,
    VariablesReceived,
)
from efmoam.core.linkmon import Location
from efmoam.core.stats import DisplayBaseline
from efmoam.daemon.actuator import Actuator, Job
from efmoam.daemon.commands import Commands
from efmoam.daemon.eventstream import EventStream
from efmoam.daemon.journal import Journal
from efmoam.daemon.metrics import Telemetry
from efmoam.daemon.policing import RxPolicer, WireGuard
from efmoam.daemon.state import StateStore
from efmoam.linux.actions import ActionError, DownBackend, LoopbackPlane, LoopbackStep, PortActionBackend, Step
from efmoam.linux.counters import BaseCounterSource
from efmoam.linux.packet import OamSocket
from efmoam.views.data import LOOPBACK_NAMES, OPER_STATUS_NAMES, flag_names
from pdu import MuxAction, ParserAction, VariableContainer

if typing.TYPE_CHECKING:
    from efmoam.core import PortSettings
    from efmoam.daemon.snmp import SnmpAgent

ACTION_RETRY = 5.0  #: seconds between attempts of a port action that failed
#: every port's remote loopback data plane (its steps batch in one nft transaction)
LOOPBACK_PLANE = LoopbackPlane()


def loopback_key(name: str) -> tuple[str, str]:
    """The actuator's key of a port's loopback data plane (its service action's is its name)."""
    return (name, "loopback")


#: seconds between two reads of a socket's kernel drop count by the counter poll: what
#: shows it (show, a scrape) reads it then, and the kernel's count is 32 bits wide
KERNEL_DROPS_INTERVAL = 60.0
RX_BATCH = 64  #: frames read from one socket per wake-up
PEER_LINES = 20  #: log lines a minute per port and kind caused by what the peer sends
#: backends whose `is_out_of_service` reads the system (the others report what they did)
VERIFIABLE = frozenset({"block", "down"})
HOOK_TIMEOUT = 10.0  #: seconds an event hook (the exec action) may run
#: the event-log entry's keys (`EventLogEntry.view`) a log line of an event carries, under the same names
EVENT_LOG_FIELDS = (
    "location", "type", "severity", "slot", "index", "window_seconds", "window_frames", "window_symbols",
    "threshold", "errors", "port_affecting",
)  # fmt: skip


@attrs.define(eq=False)
class Services:
    """What every port's runtime reports to (the daemon's, shared)."""

    journal: Journal
    telemetry: Telemetry
    state: StateStore
    events: EventStream
    wall_clock_offset: float
    action_verify_interval: float  #: seconds between checks that an applied action still holds
    clock: Callable[[], float]  #: the loop's clock, read at each send by the wire guard
    #: the loop's hook: the port's deadline may have changed
    schedule: Callable[[PortRuntime], None]
    commands: Commands  #: child processes, run without blocking the loop
    actuator: Actuator  #: carries out the port actions off the loop, in batches
    snmp: SnmpAgent | None = None  #: the SNMP subagent, when it is on


@attrs.define(eq=False)
class PortRuntime:
    """A managed interface: its engine, socket, counter source and action backend."""

    name: str
    ifindex: int
    port: OamPort
    sock: OamSocket
    profile: PortProfile
    counters: BaseCounterSource
    actions: PortActionBackend
    policer: RxPolicer
    services: Services
    wire: WireGuard = attrs.field(factory=WireGuard)
    want_out_of_service: bool = False  #: out of service with `actions`
    want_down: bool = False  #: administratively down (the ``down`` action), with `down_actions`
    #: the backend of the ``down`` action (made when first needed; the port's own when that is down)
    down_actions: PortActionBackend | None = None
    action_applied: tuple[bool, bool] | None = None  #: (out, down) as last applied (None: not yet)
    action_error: str | None = None
    action_retry_at: float | None = None
    action_verify_at: float | None = None
    actions_reapplied: int = 0  #: times an applied action was found undone and put back
    counter_error: str | None = None
    internal_errors: int = 0  #: frames or outputs the daemon failed on (a bug: logged with its traceback)
    deadline: float | None = None  #: when the loop must next look at this port
    variable_requests: int = 0  #: Variable Requests sent through the control socket
    #: the last Variable Response: the number of the latest request when it came, its containers
    variable_answer: tuple[int, tuple[VariableContainer, ...]] | None = None
    #: OAM administratively enabled (True) or disabled (False) over the configuration's
    #: ``enabled`` (None: as configured), set by ``efmoam admin`` or an SNMP write; kept
    #: across reloads, not across restarts
    admin_override: bool | None = None
    #: wall-clock seconds since the port's OAMPDU counters started from zero (added, or cleared)
    statistics_since: float = 0.0
    #: what show subtracts from the port's counters: their values at the last clear
    display_baseline: DisplayBaseline = attrs.field(factory=DisplayBaseline)
    admin_up: bool = True  #: the interface is up (IFF_UP), as the link's last notification said
    #: (profile, the counters its monitors read), worked out by the counter poll once per profile
    counters_needed: tuple[PortProfile, frozenset[str]] | None = None
    kernel_drops_due: float = 0.0  #: when the counter poll next reads the socket's kernel drops
    #: (source, its generation for the port) of the last sample: when it changes, the next is a baseline
    counter_feed: tuple[int, int] | None = None
    #: `send_first` kept something for the next `flush`: outputs (`deferred`, in order,
    #: made at `deferred_at`), or the rest of a counter sample's epilogue (`OamPort.postponed`)
    kept: bool = False
    deferred: list[Output] = attrs.field(factory=list)
    deferred_at: float = 0.0
    #: while a loopback change is on its way to the data plane: when its frames go anyway
    wire_paused_until: float | None = None
    loopback_error: str | None = None  #: the last loopback data plane change's error (None: it held)

    def settings(self) -> PortSettings:
        """The port's settings: the profile's, with the admin-state override on top."""
        settings = self.profile.settings
        override = self.admin_override
        if override is None or override == settings.enabled:
            return settings
        return attrs.evolve(settings, enabled=override)

    @property
    def rx_rate_limited(self) -> int:
        """Frames the policer dropped before decoding (the peer's and the others')."""
        return self.policer.policed

    @property
    def peer_heard_at(self) -> float | None:
        """Monotonic time of the last frame from the peer (metrics: the policer notes it)."""
        return self.policer.peer_heard_at

    @property
    def receive_drops(self) -> tuple[tuple[str, int], ...]:
        """Frames dropped before the engine saw them, by `DropReason` value."""
        return (
            (DropReason.RATE_LIMIT.value, self.policer.peer_policed),
            (DropReason.RATE_LIMIT_OTHERS.value, self.policer.others_policed),
            (DropReason.SOCKET_QUEUE.value, self.sock.read_kernel_drops()),
        )

    def next_deadline(self) -> float | None:
        deadline = self.port.next_deadline()  # (after every flush: written out, no tuple, no generator)
        other = self.action_retry_at
        if other is not None and (deadline is None or other < deadline):
            deadline = other
        other = self.action_verify_at
        if other is not None and (deadline is None or other < deadline):
            deadline = other
        if self.wire.held:
            other = self.wire.release_at
            if other is not None and (deadline is None or other < deadline):
                deadline = other
        other = self.wire_paused_until
        if other is not None and (deadline is None or other < deadline):
            deadline = other
        return deadline

    # -- frames ------------------------------------------------------------------------

    def read_frames(self, now: float) -> None:
        """Give waiting OAMPDUs to the engine, the policer first (nothing to carry out when none came)."""
        frames = self.sock.receive(RX_BATCH, now)
        if not frames:
            return
        port, policer = self.port, self.policer
        changed = False  # else every frame repeated the peer's last: nothing to take (`OamPort`)
        for frame in frames:
            refused = policer.refuse(frame, now)
            if refused is not None:
                self.services.journal.limited(now, self.name, refused, "receive rate limit reached")
                continue
            try:
                if port.receive(frame, now=now):
                    changed = True
                    policer.bind(port.peer_mac, frame, now)
            except Exception as exc:  # a frame must never end the daemon
                self.internal_error(now, "frame", exc, frame=frame[:64].hex())
                changed = True
        if changed:
            self.flush_or_keep(now)

    def internal_error(self, now: float, where: str, exc: BaseException, **fields: Any) -> None:
        """A bug met on this port: counted, logged with its traceback (rate limited)."""
        self.internal_errors += 1
        self.services.journal.limited(
            now, self.name, f"internal:{where}", f"internal error handling a {where}", level="error",
            error=repr(exc), traceback="".join(traceback.format_exception(exc)).strip(), **fields,
        )  # fmt: skip

    def timer(self, now: float) -> None:
        """The port's deadline came."""
        lost_link_at = self.port.lost_link_at
        if lost_link_at is not None and lost_link_at <= now:
            # a stall of ours (the loop starved, the process stopped) is not a silent
            # peer: read what the peer sent meanwhile before judging its lost-link timer
            self.read_frames(now)
        self.port.handle_timer(now=now)
        if self.action_retry_at is not None and self.action_retry_at <= now:
            self.apply_action(now)
        elif self.action_verify_at is not None and self.action_verify_at <= now:
            self.verify_action(now)
        paused_until = self.wire_paused_until
        if paused_until is not None and paused_until <= now:
            self.services.journal.log(
                "warning", "loopback data plane not ready; OAMPDUs sent meanwhile", port=self.name,
                waited=round(self.port.settings.lost_link_time / 2, 3),
            )  # fmt: skip
            self.resume_wire()
        if self.wire.held:
            self._send_held()
        self.flush_or_keep(now)

    def _send_held(self) -> None:
        for frame in self.wire.release(self.services.clock()):
            self.sock.send(frame)

    # -- outputs -----------------------------------------------------------------------

    def flush(self, now: float) -> None:
        """Carry out what the engine produced (after what `send_first` kept, at its time):
        each kind of output has its handler.  A counter sample's epilogue that waits
        (`OamPort.settle_postponed`) is run first, at its time."""
        self.kept = False
        self.port.settle_postponed()
        if self.deferred:
            kept, self.deferred = self.deferred, []
            self.carry_out(kept, self.deferred_at)
        self.carry_out(self.port.take_outputs(), now)

    def flush_or_keep(self, now: float) -> None:
        """`flush`, but while the counter poll keeps outputs of this port (`send_first`), a
        frame or timer input's join them: its frames go at once, the rest waits for the
        poll to carry them all out, in order (the poll's reads are not slowed by what the
        ports already read cause meanwhile)."""
        if self.kept:
            self.send_first(now)
        else:
            self.flush(now)

    def send_first(self, now: float) -> None:
        """Send the frames the engine produced now and keep its other outputs for the next
        `flush` (the counter poll: a thousand ports failing at once notify their peers
        before anything is logged, saved or acted on).  Any input's `flush` carries them
        out before its own, so their order holds; the port is rescheduled now (a burst's
        next copy, the budget's next slot).  The frames after a loopback change are kept
        with it, even from a later input: they wait for the data plane (`set_loopback`)."""
        deferred = self.deferred
        if not self.kept:
            self.kept = True
            self.deferred_at = now
        outputs = self.port.take_outputs()
        if deferred and any(type(output) is LoopbackChanged for output in deferred):
            deferred += outputs  # a kept loopback change: every later frame waits for it too
            self.services.schedule(self)
            return
        for index, output in enumerate(outputs):
            if type(output) is Transmit:
                _on_transmit(self, output, now)
            elif type(output) is LoopbackChanged:  # the frames after it wait for the data plane (`set_loopback`): kept
                deferred += outputs[index:]
                break
            else:
                deferred.append(output)
        self.services.schedule(self)

    def carry_out(self, outputs: list[Output], now: float) -> None:
        """Hand each output to its handler (in order), save the port's state if one asks, reschedule."""
        if outputs:
            save = False
            for output in outputs:
                save = OUTPUT_HANDLERS[type(output)](self, output, now) or save
            if save:
                self.services.state.update(self.name, self.port.saved_state(), now)
        self.services.schedule(self)

    def limited(self, now: float, kind: str, level: str, message: str, **fields: object) -> None:
        """A log line caused by what the peer sends: rate limited per port and kind."""
        self.services.journal.limited(now, self.name, kind, message, level, burst=PEER_LINES, named=False, **fields)

    def log(self, _now: float, _kind: str, level: str, message: str, **fields: object) -> None:
        """A log line of the port (same signature as `limited`)."""
        self.services.journal.log(level, message, port=self.name, **fields)

    # -- the loopback data plane ---------------------------------------------------------

    def set_loopback(self, output: LoopbackChanged, now: float) -> None:
        """Make the data plane loop, discard or forward as the engine now says, off the loop
        (the actuator; about 30 ms of nft each).  Until it is done the port's OAMPDUs wait
        (`WireGuard.paused`): the Information saying the port loops back must not reach the
        peer before the port does, or the peer's first test frames would not come back.
        They wait at most half the port's lost-link time (the peer's is normally the same;
        the actuator may be busy with a thousand ports' actions): then they go, and that is
        logged.  A change that fails is logged (`loopback_error`) and the frames go: the
        engine's state stays what the peer asked for."""
        if not self.wire.paused:  # at most half the lost-link time, whatever the changes meanwhile
            self.wire.paused = True
            self.wire_paused_until = now + self.port.settings.lost_link_time / 2
        step = LoopbackStep(self.name, ParserAction(output.parser_action), MuxAction(output.mux_action))
        self.services.actuator.submit(loopback_key(self.name), Job(((LOOPBACK_PLANE, step),), self._loopback_done))

    def _loopback_done(self, results: list[bool | ActionError], _now: float) -> None:
        error = results[0]
        self.loopback_error = str(error) if isinstance(error, ActionError) else None
        if isinstance(error, ActionError):
            self.services.journal.log("error", "loopback action failed", port=self.name, error=error)
        if not self.services.actuator.pending(loopback_key(self.name)):  # else the next change's frames wait for it
            self.resume_wire()

    def resume_wire(self) -> None:
        """Send what the port's loopback change held (the daemon stops: at once)."""
        self.wire_paused_until = None
        if self.wire.paused:
            self.wire.paused = False
            self._send_held()
            self.services.schedule(self)

    # -- the port action ---------------------------------------------------------------

    def apply_action(self, now: float, reasons: tuple[str, ...] = ()) -> None:
        """Ask the actuator to make the port's service state what the engine wants; the
        outcome comes back in `_action_done` (retried later on failure)."""
        want = (self.want_out_of_service, self.want_down)
        reasons = reasons or self.port.service.reasons
        if want[1] and self.down_actions is None:
            self.down_actions = DownBackend()
        steps = [(self.actions, Step(self.name, want[0], reasons))]
        if self.down_actions is not None:
            steps.append((self.down_actions, Step(self.name, want[1], reasons)))
        self.action_retry_at = self.action_verify_at = None
        on_done = lambda results, done_at: self._action_done(want, reasons, results, done_at)  # noqa: E731
        self.services.actuator.submit(self.name, Job(tuple(steps), on_done))

    @property
    def action_pending(self) -> bool:
        """An action decided and not yet carried out and verified."""
        return self.services.actuator.pending(self.name)

    def _action_done(
        self, want: tuple[bool, bool], reasons: tuple[str, ...], results: list[bool | ActionError], now: float
    ) -> None:
        """What `apply_action` asked for was carried out: record, log and report it."""
        services = self.services
        error = next((result for result in results if isinstance(result, ActionError)), None)
        newer = self.action_pending  # a later decision waits: it retries and verifies for itself
        if error is not None:
            self.action_error = str(error)
            self.action_retry_at = None if newer else now + ACTION_RETRY
            services.journal.log("error", "port action failed", port=self.name, backend=self.actions.name, error=error)
            services.events.port_action(
                self.name, out_of_service=any(want), reasons=reasons, backend=self.actions.name, error=str(error),
                now=now, wall_clock_offset=services.wall_clock_offset,
            )  # fmt: skip
            services.schedule(self)
            return
        changed = self.action_applied != want
        self.action_applied, self.action_error, self.action_retry_at = want, None, None
        verifiable = want[1] or (want[0] and self.actions.name in VERIFIABLE)
        self.action_verify_at = now + services.action_verify_interval if verifiable and not newer else None
        services.schedule(self)
        if not changed:
            return
        services.events.port_action(
            self.name, out_of_service=any(want), reasons=reasons, backend=self.actions.name, error=None,
            now=now, wall_clock_offset=services.wall_clock_offset,
        )  # fmt: skip
        services.journal.log(
            "warning" if any(want) else "notice", "port out of service" if any(want) else "port back in service",
            port=self.name, backend="down" if want[1] else self.actions.name, reasons=",".join(reasons) or None,
        )  # fmt: skip

    def verify_action(self, now: float) -> None:
        """Check (off the loop) that the port is still out of service as applied; `_verified` puts it back if not."""
        steps = []
        if self.want_out_of_service and self.actions.name in VERIFIABLE:
            steps.append((self.actions, Step(self.name, None)))
        if self.want_down and self.down_actions is not None:
            steps.append((self.down_actions, Step(self.name, None)))
        self.action_verify_at = None
        if not steps:
            self.action_verify_at = now + self.services.action_verify_interval
        else:  # dropped when an action is on its way: its outcome is read back
            self.services.actuator.submit(self.name, Job(tuple(steps), self._verified, check=True))

    def _verified(self, results: list[bool | ActionError], now: float) -> None:
        if self.action_pending:
            return  # a newer decision was taken meanwhile: it verifies for itself
        if all(result is True for result in results):
            self.action_verify_at = now + self.services.action_verify_interval
            self.services.schedule(self)
            return
        error = next((str(result) for result in results if isinstance(result, ActionError)), None)
        self.actions_reapplied += 1
        self.services.journal.log(
            "error", "port action undone behind the daemon's back; applying it again",
            port=self.name, backend=self.actions.name, error=error,
        )  # fmt: skip
        self.action_applied = None
        self.apply_action(now)


# -- the outputs' handlers: True when the port's saved state must be written -----------


def _on_transmit(runtime: PortRuntime, output: Transmit, _now: float) -> bool:
    # the time of the send, not of the wake-up: the guard judges what the wire sees
    frame = runtime.wire.offer(output.frame, runtime.services.clock())
    if frame is not None:
        runtime.sock.send(frame)
    return False


def _on_dropped(runtime: PortRuntime, output: FrameDropped, now: float) -> bool:
    runtime.services.journal.limited(now, runtime.name, output.reason, "frame dropped", detail=output.detail)
    return False


def _on_quirk(runtime: PortRuntime, output: QuirkSeen, now: float) -> bool:
    runtime.services.journal.limited(now, runtime.name, output.quirk, "peer quirk worked around", detail=output.detail)
    return False


def _on_event_logged(runtime: PortRuntime, output: EventLogged, now: float) -> bool:
    entry, view = output.entry, output.entry.view(output.slot)
    # the peer's events are rate limited (a peer toggling its flags makes one per toggle)
    log = runtime.limited if entry.location is Location.REMOTE else runtime.log
    log(
        now, "event", "warning" if entry.active and entry.port_affecting else "notice",
        "link event" if entry.active else "link event cleared",
        **{key: _word(view[key]) for key in EVENT_LOG_FIELDS}, cause=output.cause,
        monitor=view.get("monitor"),  # a NIC health event's monitor (the others have none: left out)
    )  # fmt: skip
    services = runtime.services
    services.events.event(runtime.name, output, _event_action(output), now, services.wall_clock_offset)
    services.telemetry.event_logged(runtime.name, output)  # metrics: events raised
    if services.snmp is not None:  # DOT3-OAM-MIB: the event-log rows, the notification of a new entry
        services.snmp.logged(runtime.ifindex, entry)
    return True


def _on_service_changed(runtime: PortRuntime, output: PortServiceChanged, now: float) -> bool:
    # ``down`` with a port whose backend is down (or a dry run, log-only) is that backend's
    own_down = runtime.profile.action_backend in (ActionBackend.DOWN, ActionBackend.LOG_ONLY)
    runtime.want_out_of_service = output.out_of_service or (output.down and own_down)
    runtime.want_down = output.down and not own_down
    runtime.apply_action(now, output.reasons)
    return True


def _on_policy_event(runtime: PortRuntime, output: PolicyEvent, now: float) -> bool:
    """A session event started or ended, or a latch ended: logged, streamed, counted, and
    the exec hook run when the event's actions say so."""
    state = output.state
    level = "warning" if output.active and not output.moment and output.actions != ("log",) else "notice"
    runtime.limited(
        now, "policy", level, f"event {state}", name=output.name, actions=",".join(output.actions),
        cause=output.cause, detail=output.detail or None, latched=_word(True) if output.latched else None,
    )  # fmt: skip
    services = runtime.services
    services.events.policy_event(runtime.name, output, now, services.wall_clock_offset)
    if output.active:
        services.telemetry.policy_event(runtime.name, output.name)
    command = runtime.profile.action_command
    if "exec" in output.actions and not output.released and command:
        env = {
            "EFMOAM_PORT": runtime.name, "EFMOAM_EVENT": output.name, "EFMOAM_EVENT_STATE": state,
            "EFMOAM_CAUSE": output.cause, "EFMOAM_ACTIONS": ",".join(output.actions),
            "EFMOAM_DETAIL": output.detail,
        }  # fmt: skip
        started = services.commands.start(
            shlex.split(command), env=env, timeout=HOOK_TIMEOUT,
            on_done=lambda status, error: _hook_done(runtime, output.name, status, error),
        )  # fmt: skip
        if not started:
            services.journal.log("error", "event hook not run: too many commands running", port=runtime.name)
    return False


def _hook_done(runtime: PortRuntime, event: str, status: int | None, error: str | None) -> None:
    if status != 0:
        runtime.services.journal.log(
            "error", "event hook failed", port=runtime.name, event=event, status=status, error=error,
        )  # fmt: skip


def _on_discovery(runtime: PortRuntime, output: DiscoveryChanged, now: float) -> bool:
    runtime.policer.bind(runtime.port.peer_mac)  # (FAULT forgets the peer)
    runtime.limited(
        now, "discovery", "info", "discovery", discovery_state=output.new.value,
        oper_status=OPER_STATUS_NAMES[output.oper_status], cause=output.cause,
    )  # fmt: skip
    return False


def _on_peer(runtime: PortRuntime, output: PeerChanged, now: float) -> bool:
    runtime.policer.bind(runtime.port.peer_mac)  # the peer changes only with this output or `_on_discovery`'s
    runtime.limited(now, "peer", "info", "peer", peer_mac=None if output.peer is None else output.peer.mac)
    if runtime.services.snmp is not None:  # dot3OamPeerTable has a row while a peer is known
        runtime.services.snmp.mib.invalidate()
    return False


def _on_peer_flags(runtime: PortRuntime, output: PeerFlagsChanged, now: float) -> bool:
    runtime.limited(now, "peer_flags", "notice", "peer flags", peer_flags=",".join(flag_names(output.flags)) or "none")
    return False


def _on_variables(runtime: PortRuntime, output: VariablesReceived, now: float) -> bool:
    values = " ".join(
        f"{c.leaf}={'/'.join(v.hex() for v in c.values) or f'indication:{c.indication:#x}'}" for c in output.containers
    )
    runtime.limited(now, "variables", "info", "variables", values=values or None)
    runtime.variable_answer = (runtime.variable_requests, output.containers)
    return False


def _on_peer_link_events(runtime: PortRuntime, output: LinkEventsReceived, now: float) -> bool:
    runtime.limited(now, "event_notification", "info", "event notification", sequence=output.sequence)
    return False


def _on_loopback(runtime: PortRuntime, output: LoopbackChanged, now: float) -> bool:
    runtime.limited(now, "loopback", "notice", "loopback", status=LOOPBACK_NAMES[output.status], cause=output.cause)
    runtime.set_loopback(output, now)
    return False


def _on_monitor_unavailable(runtime: PortRuntime, output: MonitorUnavailable, _now: float) -> bool:
    runtime.services.journal.log(
        "warning", "monitor unavailable", port=runtime.name, monitor=output.monitor, missing=",".join(output.counters),
    )  # fmt: skip
    return False


def _on_org_specific(_runtime: PortRuntime, _output: OrgSpecificReceived, _now: float) -> bool:
    return False  # no vendor's Organization Specific OAMPDU is interpreted (its flags are, by the engine)


#: the handler of each kind of output of an `OamPort`
OUTPUT_HANDLERS: dict[type[Output], Callable[[PortRuntime, Any, float], bool]] = {
    Transmit: _on_transmit,
    FrameDropped: _on_dropped,
    QuirkSeen: _on_quirk,
    EventLogged: _on_event_logged,
    PortServiceChanged: _on_service_changed,
    DiscoveryChanged: _on_discovery,
    PeerChanged: _on_peer,
    PeerFlagsChanged: _on_peer_flags,
    VariablesReceived: _on_variables,
    LinkEventsReceived: _on_peer_link_events,
    LoopbackChanged: _on_loopback,
    MonitorUnavailable: _on_monitor_unavailable,
    OrgSpecificReceived: _on_org_specific,
    PolicyEvent: _on_policy_event,
}
assert set(OUTPUT_HANDLERS) == set(typing.get_args(Output)), "a kind of output without a handler"


def _word(value: object) -> object:
    """A log field's value as the JSON outputs spell it (true, false)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def _event_action(logged: EventLogged) -> str:
    """What an event-log record does to the port, for the event stream."""
    entry = logged.entry
    if not entry.active:
        return "cleared"
    return "out-of-service" if entry.port_affecting else "log-only"
