"""The daemon: one process, one event loop (`efmoam.daemon.loop`), every configured port.

Each wake-up reads what is ready (OAMPDU sockets, link notifications, the control
socket, signals) and runs what is due (`Daemon._due`): the counter poll
(`efmoam.daemon.polling`), the ports' deadlines, the control clients, the coalesced
state write; the frames, the poll and the timers for about `SLICE` a wake-up each.  Each
port carries out what its engine asked for (`efmoam.daemon.runtime`); control requests
are answered by `efmoam.daemon.operations`; the state file is `efmoam.daemon.state`.
Every job runs under the loop's guard: nothing that happens after start ends the process.

Failure policy: bad frames are counted and logged with a rate limit; a port action that
fails is retried until it verifies, and verified while it holds; a bad configuration on
reload is reported and the running one stays; a counter source that fails is logged
once per error and the port keeps running without that sample; a state file that
cannot be used is set aside, and a failed write is shown and retried.  Started without
a privilege it needs (`efmoam.daemon.privileges`), it says which in one line and exits 4.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from efmoam.config import Config, ConfigError, PortProfile, load_config, load_default_config
from efmoam.core import OamPort
from efmoam.core.discovery import DiscoveryState
from efmoam.daemon import access, heap, operations, privileges, tables
from efmoam.daemon.actuator import Actuator
from efmoam.daemon.commands import Commands
from efmoam.daemon.control import ControlError, ControlServer, Peer
from efmoam.daemon.eventstream import EventStream
from efmoam.daemon.journal import Journal
from efmoam.daemon.loop import SLICE, Deadlines, Loop, drain, signals, timer_slack
from efmoam.daemon.metrics import MetricsServer, Telemetry
from efmoam.daemon.policing import RxPolicer
from efmoam.daemon.polling import CounterPoll
from efmoam.daemon.runtime import PortRuntime, Services, loopback_key
from efmoam.daemon.sdnotify import StatusLine, notify
from efmoam.daemon.snmp import SnmpAgent
from efmoam.daemon.state import StateStore
from efmoam.daemon.tracking import Tracking
from efmoam.linux.actions import Step, make_backend
from efmoam.linux.counters import CounterError
from efmoam.linux.ethtool import EthtoolIoctl, LinkMode
from efmoam.linux.netlink import Link, LinkEvent, LinkMonitor
from efmoam.linux.packet import OamSocket, close_all

#: seconds a thread runs Python before another waiting for the GIL gets it (CPython's
#: default is 5 ms): a metrics scrape on its own thread holds the loop back for at most
#: about this long between two of its batches
GIL_SWITCH_INTERVAL = 0.001
#: seconds the shutdown waits for the state file's write (a disk that does not answer must not hold a SIGTERM)
STATE_SAVE_WAIT = 2.0


class Daemon:
    """Runs until SIGTERM/SIGINT; SIGHUP reloads the configuration."""

    def __init__(
        self,
        config: Config,
        config_path: str | None,
        journal: Journal | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.config_path = config_path
        self.journal = journal or Journal()
        self.loop = Loop(self.journal, clock)
        self.guard = self.loop.guard
        self._clock = clock
        self.wall_clock_offset = time.time() - clock()
        self.ports: dict[str, PortRuntime] = {}
        self._stop = False
        self._reload = False
        self._settle_heap_at: float | None = None  #: when to settle the heap (`heap`) after ports changed
        self._deadlines = Deadlines()
        self._deadlines.slack = config_slack(config)
        self._links: LinkMonitor | None = None
        self._control: ControlServer | None = None
        #: held by the loop while it processes one wake-up; a metrics scrape reads the ports under it
        self.lock = threading.Lock()
        self.telemetry = Telemetry()
        self.poll = CounterPoll(config.daemon.counter_interval, self.journal, self.telemetry, self.guard, clock)
        self._metrics: MetricsServer | None = None
        self.commands = Commands(self.loop)  #: child processes (tracked-condition checks, action commands)
        self.actuator = Actuator(self.loop)  #: port actions, batched, off the loop
        self.services = Services(
            journal=self.journal, telemetry=self.telemetry, state=StateStore(config.daemon.state_dir, background=True),
            events=EventStream(config.daemon.event_stream, self._event_stream_error),
            wall_clock_offset=self.wall_clock_offset, schedule=self._deadlines.schedule,
            action_verify_interval=config.daemon.action_verify_interval, clock=clock, commands=self.commands,
            actuator=self.actuator,
        )  # fmt: skip
        self.tracking = Tracking(self.commands, self.journal)
        self.snmp: SnmpAgent | None = None  #: the DOT3-OAM-MIB subagent (daemon.snmp)
        self.status = StatusLine(self._status)  #: systemd's STATUS=, kept current

    # -- the loop ----------------------------------------------------------------------

    def run(self) -> int:
        """Serve until asked to stop; returns the process exit status."""
        with signals(self._on_signal, GIL_SWITCH_INTERVAL) as wake:
            self._start(wake)
            self.loop.run(self._due, self._wakeup, lambda: self._stop, self.lock)
            self._shutdown()
        heap.release()
        return 0

    def _on_signal(self, signum: int, _frame: object) -> None:
        if signum == signal.SIGHUP:
            self._reload = True
        else:
            self._stop = True

    def _wakeup(self, now: float) -> float | None:
        """When the loop must wake at the latest (None: only for input)."""
        candidates = (
            self.poll.next_deadline(now, self.ports), self._deadlines.wake_at(self.ports, now), self._settle_heap_at,
            self.services.state.next_deadline(), None if self._control is None else self._control.next_deadline(),
            self.commands.next_deadline(), self.tracking.next_deadline(), self.actuator.next_deadline(),
            None if self.snmp is None else self.snmp.next_deadline(), self.status.next_deadline(),
        )  # fmt: skip
        return min((d for d in candidates if d is not None), default=None)

    def _due(self, now: float) -> None:
        """Everything due at `now`, each job under the guard."""
        run = self.guard.run
        if self._reload:
            self._reload = False
            run("reload", self._reload_on_signal, now)
        if self._settle_heap_at is not None and now >= self._settle_heap_at:
            self._settle_heap_at = None
            run("heap", self._settle_heap, now)
        run("counters", self.poll.service, self.ports, now)
        ports, caught, clock = self.ports, self.guard.caught, self._clock
        began = clock()
        end = began + SLICE
        for due in self._deadlines.pop_due(ports, now):
            try:  # (`Guard.run` written out: once per port and second)
                ports[due.name].timer(now)
            except Exception as exc:
                caught("port timer", exc)
            if clock() >= end:
                break  # the rest stay due: the next wake-up, once the sockets had their turn
        self.guard.spent["port timers"] = clock() - began
        run("commands", self.commands.service, now)
        run("tracking", self.tracking.service, now)
        if self._control is not None:
            run("control", self._control.service, now)
        if self.snmp is not None:
            run("snmp", self.snmp.service, now)
        run("actions", self.actuator.service, now)  # last: every action decided in this wake-up in one batch
        if self._clock() - now < SLICE:  # else the state write (its fsync) waits for a wake-up with time left
            run("state", self.services.state.flush, now)
        run("status", self.status.service, now)

    def _watch(self, fileobj: Any, where: str, job: Callable[[float], object], *, bulk: bool = False) -> None:
        self.loop.watch(fileobj, where, job, bulk=bulk)

    # -- start and stop ----------------------------------------------------------------

    def _start(self, wake: socket.socket) -> None:
        state = self.services.state
        problem = state.load()
        if problem:
            self.journal.log("warning", problem)
        self._watch(wake, "signals", lambda _now: drain(wake))
        self._links = LinkMonitor()
        self._watch(self._links, "link events", self._on_link_events)
        self._control = ControlServer(
            self.config.daemon.control_socket, self._answer, self.loop.selector, on_error=self._control_error,
            on_watch_drop=self._watch_dropped, clock=self._clock, group=self._control_group(),
        )  # fmt: skip
        self._warn_control_group(self._control.group_problem)
        self.services.events.tap = self._control  # `efmoam watch`: the event stream's records
        now = self._clock()
        self.tracking.set_links(self._links.links.values(), now)
        for link in self._links.links.values():
            self._consider(link, now)
        self._settle_heap_at = None  # settled now, before serving: a full collection is a stall (`heap`)
        self._settle_heap(self._clock())
        tables.reconcile(self.journal, self._out_of_service)
        self._start_metrics()
        self._start_snmp()
        self.status.send_now(self._clock(), "READY=1")
        self.journal.log("notice", "started", ports=len(self.ports), control=self.config.daemon.control_socket)

    def _shutdown(self) -> None:
        notify("STOPPING=1")
        now = began = self._clock()
        self.poll.finish(self.ports, now)  # what a counter poll kept: logged and saved
        # the Dying Gasps first: the peers act on them; stopping the metrics server alone can take its poll interval
        if self.config.daemon.dying_gasp_on_shutdown:
            # only where the port sends at all: elsewhere no Dying Gasp is sent, or logged
            # every port's frame before any port's log line and state (`send_first`): 1,024 in about 0.06 s, not 0.11
            sent = 0
            for runtime in self.ports.values():
                runtime.resume_wire()  # a loopback change on its way holds no Dying Gasp (loopback ends below)
                sent += runtime.port.send_dying_gasp(now=now)
                runtime.send_first(now)
            for runtime in self.ports.values():
                runtime.flush(now)
            self.journal.log("notice", "dying gasp", ports=sent)
            deadline = now + 0.15  # out now where the budget allows, else in the next slot
            while (now := self._clock()) < deadline:
                self._due(now)
                time.sleep(0.01)
        self._stop_metrics()
        self._stop_snmp()
        tables.end_loopbacks_at_exit(self.actuator, self.journal, self.ports.values())
        state = self.services.state
        for runtime in self.ports.values():
            with contextlib.suppress(Exception):
                state.update(runtime.name, runtime.port.saved_state(), now)
        close_all([runtime.sock for runtime in self.ports.values()])  # together: each close waits in the kernel
        self._save_now()
        self.poll.close()
        if self._control is not None:
            self._control.close()
        if self._links is not None:
            self._links.close()
        self.commands.close()
        self.services.events.close()
        self.journal.log("notice", "stopped", seconds=round(self._clock() - began, 3))  # (how long stopping took)

    def _save_now(self) -> None:
        state = self.services.state
        try:
            state.save(timeout=STATE_SAVE_WAIT)
        except OSError as exc:
            self.journal.log("error", "state not saved", path=state.path, error=exc)

    def _settle_heap(self, now: float) -> None:
        frozen = heap.settle()
        self.journal.log("info", "heap settled", frozen_objects=frozen, ms=round((self._clock() - now) * 1e3, 1))

    # -- fleet visibility: metrics and the event stream --------------------------------

    def _start_metrics(self) -> None:
        settings = self.config.daemon.metrics
        if not settings.enabled:
            return
        try:
            self._metrics = MetricsServer(self, settings.address, settings.port, settings.detail)
        except OSError as exc:  # the daemon runs on without metrics
            self.journal.log("error", "metrics not served", address=settings.address, port=settings.port, error=exc)
            return
        self.journal.log("info", "metrics served", address=settings.address, port=self._metrics.port)

    def _stop_metrics(self) -> None:
        if self._metrics is not None:
            self._metrics.close()
            self._metrics = None

    def _start_snmp(self) -> None:
        settings = self.config.daemon.snmp
        if settings.enabled:
            operate = lambda op, args, peer, now: operations.handle(self, op, args, peer, now)  # noqa: E731
            self.snmp = SnmpAgent(settings, self.loop, self.journal, self.ports.values, operate)
            self.services.snmp = self.snmp

    def _stop_snmp(self) -> None:
        if self.snmp is not None:
            self.snmp.close()
            self.snmp = self.services.snmp = None

    def _reconfigure_fleet(self, old: Config) -> None:
        """After a reload: restart what the daemon section changed."""
        metrics, before = self.config.daemon.metrics, old.daemon.metrics
        endpoint = (metrics.enabled, metrics.address, metrics.port)
        if self._metrics is not None and endpoint == (before.enabled, before.address, before.port):
            self._metrics.detail = metrics.detail  # the endpoint stays bound
        elif metrics != before:
            self._stop_metrics()
            self._start_metrics()
        if self.config.daemon.snmp != old.daemon.snmp:
            self._stop_snmp()
            self._start_snmp()
        if self.config.daemon.event_stream != old.daemon.event_stream:
            self.services.events.close()
            self.services.events = EventStream(self.config.daemon.event_stream, self._event_stream_error)
            self.services.events.tap = self._control
        if self.config.daemon.control_socket_group != old.daemon.control_socket_group and self._control is not None:
            self._warn_control_group(self._control.set_group(self._control_group()))
        self.services.action_verify_interval = self.config.daemon.action_verify_interval
        self.poll.set_interval(self.config.daemon.counter_interval, self._clock())
        for runtime in self.ports.values():
            runtime.policer.set_rates(self.config.daemon.rx_rate_limit, self.config.daemon.rx_others_rate_limit)

    def _control_group(self) -> int | None:
        """The control socket's group id; a group that does not exist is warned about."""
        gid, problem = access.group_id(self.config.daemon.control_socket_group)
        self._warn_control_group(problem)
        return gid

    def _warn_control_group(self, problem: str | None) -> None:
        if problem is not None:
            group = self.config.daemon.control_socket_group
            self.journal.log("warning", "control socket group not applied", group=group, problem=problem)

    def _event_stream_error(self, error: str) -> None:
        self.journal.log("error", "event stream not written", error=error)

    def health(self) -> dict[str, Any]:
        """The daemon's own condition, for show and metrics."""
        state = self.services.state
        return {
            "errors": dict(self.guard.errors),
            "state": {
                "path": str(state.path), "saves": state.saves, "save_failures": state.save_failures,
                "error": state.last_error, "set_aside": state.set_aside_problem,
            },
            "control": dict(self._control.stats) if self._control is not None else {},
            "snmp": None if self.snmp is None else self.snmp.view(),
            "loop": self.loop.times.view(self._clock()),
        }  # fmt: skip

    # -- ports -------------------------------------------------------------------------

    def _consider(self, link: Link, now: float) -> None:
        """Manage `link` if the configuration says so and it is Ethernet."""
        if link.name in self.ports or not link.is_ethernet or link.mac is None:
            return
        profile = self.config.profile_for(link.name, physical=link.kind is None)
        if profile is None:
            return
        try:
            self._add_port(link, profile, now)
        except (OSError, CounterError, ValueError) as exc:
            self.journal.log("error", "cannot manage port", port=link.name, error=exc)

    def _add_port(self, link: Link, profile: PortProfile, now: float) -> None:
        sock = OamSocket(link.name)
        try:
            counters = self.poll.source_for(profile)
        except BaseException:
            sock.close()
            raise
        mode = _link_mode(link.name)
        port = OamPort(
            profile.settings, link.mac or sock.mac(), now=now, link_up=link.carrier,
            half_duplex=bool(mode.half_duplex), wall_clock_offset=self.wall_clock_offset,
        )  # fmt: skip
        daemon = self.config.daemon
        runtime = PortRuntime(
            name=link.name, ifindex=link.ifindex, port=port, sock=sock, profile=profile, counters=counters,
            actions=make_backend(profile.action_backend.value, command=profile.action_command),
            policer=RxPolicer(daemon.rx_rate_limit, daemon.rx_others_rate_limit, now), services=self.services,
            statistics_since=now + self.wall_clock_offset, admin_up=link.admin_up,
        )  # fmt: skip
        self._restore(runtime, now)
        port.set_speed(mode.speed_mbps, now=now)
        self.ports[link.name] = runtime
        self._rows_changed()
        self._settle_heap_at = now + heap.SETTLE_AFTER
        self._watch(sock, "frames", runtime.read_frames, bulk=True)
        self.journal.log(
            "info", "port added", port=link.name, mac=port.mac, counters=counters.name,
            provides=",".join(sorted(counters.provides(link.name))) or "none", backend=runtime.actions.name,
        )  # fmt: skip
        runtime.flush(now)
        self.tracking.follow(runtime, now)

    def _restore(self, runtime: PortRuntime, now: float) -> None:
        """Put back the port's saved state; a state that cannot be used is set aside."""
        state = self.services.state
        saved = state.ports.get(runtime.name)
        if saved is None:
            return
        try:
            for problem in runtime.port.restore(saved, now=now):
                self.journal.log("warning", "saved state partly restored", port=runtime.name, problem=problem)
        except ValueError as exc:
            problem = state.set_aside(exc, port=runtime.name)
            self.journal.log("warning", "saved state not restored", port=runtime.name, error=exc, problem=problem)

    def _remove_port(self, name: str, why: str, release: bool = False) -> None:
        """Stop managing a port; `release` also undoes its actions and forgets its state
        (the configuration no longer names it), otherwise its state is kept for its return."""
        runtime = self.ports.get(name)
        if runtime is None:
            return
        if runtime.kept or runtime.port.postponed:  # what its last sample caused: carried out before it goes
            self.guard.run("counters", runtime.flush, self._clock())
        del self.ports[name]
        self.tracking.forget(name)
        self._rows_changed()
        self.loop.forget(runtime.sock)
        runtime.sock.close()
        now = self._clock()
        state = self.services.state
        # no loopback outlives its port, whatever the removal (after what is on its way: a
        # port back under the same name starts from no loopback)
        tables.release_port(self.actuator, self.journal, runtime, to_service=release)
        if release:
            state.forget(name, now)
        else:
            state.update(name, runtime.port.saved_state(), now)
        self.telemetry.forget(name)
        self._settle_heap_at = now + heap.SETTLE_AFTER  # and free what the port left in cycles
        self.journal.log("info", "port removed", port=name, reason=why)

    def _on_link_events(self, now: float) -> None:
        assert self._links is not None
        for event in self._links.read_events():
            self.guard.run("link event", self._link_event, event, now)
        self.guard.run("tracking", self.tracking.set_links, self._links.links.values(), now)

    def _link_event(self, event: LinkEvent, now: float) -> None:
        if event.kind == "removed":
            self._remove_port(event.name, "removed")
            return
        link = event.link
        assert link is not None
        previous = event.previous
        if previous is not None and previous.name != link.name:
            self._remove_port(previous.name, f"renamed to {link.name}")
        runtime = self.ports.get(link.name)
        if runtime is not None:
            runtime.admin_up = link.admin_up
        if runtime is not None and link.mac is not None and link.mac.lower() != runtime.port.mac:
            # a new MAC is a new OAM station: the port starts again under it, its events kept
            self._remove_port(link.name, f"MAC address changed to {link.mac}")
            runtime = None
        if runtime is None:
            self._consider(link, now)
        elif runtime.port.link_up != link.carrier:  # speed and duplex are read again at every carrier change
            mode = _link_mode(link.name)
            runtime.port.set_link(link.carrier, now=now, speed_mbps=mode.speed_mbps, half_duplex=mode.half_duplex)
            runtime.flush(now)

    def _rows_changed(self) -> None:
        if self.snmp is not None:
            self.snmp.mib.invalidate()

    def _out_of_service(self, name: str) -> bool:
        runtime = self.ports.get(name)
        return runtime is not None and runtime.port.out_of_service

    # -- control -----------------------------------------------------------------------

    def _answer(self, op: str, args: dict[str, Any], peer: Peer | None) -> Any:
        return operations.handle(self, op, args, peer, self._clock())

    def _control_error(self, op: str, exc: BaseException) -> None:
        self.guard.caught("control op", exc, op=op[:64])

    def _watch_dropped(self, peer: Peer | None, pending: int) -> None:
        uid, pid = (None, None) if peer is None else (peer.uid, peer.pid)
        self.journal.log("warning", "watcher too slow, its watch ended", uid=uid, pid=pid, pending_bytes=pending)

    def port_extra(self, runtime: PortRuntime) -> dict[str, Any]:
        """What show reports of a port beyond its engine."""
        sock, policer = runtime.sock, runtime.policer
        return {
            "ifindex": runtime.ifindex,
            "counters": {
                "source": runtime.counters.name,
                "provides": runtime.counters.provides(runtime.name),
                "error": runtime.counter_error,
            },
            "action": {
                "backend": runtime.actions.name,
                "applied": None if runtime.action_applied is None else any(runtime.action_applied),
                "pending": runtime.action_pending,
                "error": runtime.action_error,
                "reapplied": runtime.actions_reapplied,
            },
            # with the engine's drops: what the daemon dropped before the engine saw it
            "drops": {**runtime.port.drops, **{reason: n for reason, n in runtime.receive_drops if n}},
            "loopback_plane": {
                "pending": self.actuator.pending(loopback_key(runtime.name)),
                "error": runtime.loopback_error,
            },
            "rx_rate_limited": policer.policed,
            "rx_policed": {"peer": policer.peer_policed, "others": policer.others_policed},
            "rx_kernel_drops": sock.read_kernel_drops(),
            "tx_errors": sock.send_errors,
            "tx_held": runtime.wire.held_total,
            "rx_errors": sock.receive_errors,
            "internal_errors": runtime.internal_errors,
            "admin_override": {None: None, True: "enabled", False: "disabled"}[runtime.admin_override],
            "admin_up": runtime.admin_up,
            "statistics_since": runtime.statistics_since,
            "state_error": self.services.state.last_error,
        }

    # -- reload ------------------------------------------------------------------------

    def _reload_on_signal(self, now: float) -> None:
        self.services.events.reopen()  # SIGHUP: a rotated event-stream file
        with contextlib.suppress(ControlError):  # reported; the running config stays
            self.reload(now)

    def reload(self, now: float) -> None:
        """Read the configuration again; a bad one is refused (ControlError) and the running one stays."""
        notify("RELOADING=1", f"MONOTONIC_USEC={int(now * 1e6)}")
        try:
            config = load_config(self.config_path) if self.config_path else load_default_config()
        except (ConfigError, OSError, RecursionError, MemoryError) as exc:
            self.journal.log("error", f"reload refused, the running configuration stays:\n{exc}")
            notify("READY=1")
            raise ControlError("bad_config", str(exc)) from exc
        old, self.config = self.config, config
        self._deadlines.slack = config_slack(config)
        self._reconfigure_fleet(old)
        assert self._links is not None
        links = {link.name: link for link in self._links.links.values()}
        for name in list(self.ports):
            link = links.get(name)
            profile = None if link is None else config.profile_for(name, physical=link.kind is None)
            runtime = self.ports[name]
            if profile is None:
                self._remove_port(name, "no longer configured", release=True)
            elif profile != runtime.profile:
                self._reprofile(runtime, profile, now)
        for link in links.values():
            self._consider(link, now)
        self.status.send_now(self._clock(), "READY=1")
        self.journal.log("notice", "configuration reloaded", ports=len(self.ports))

    def _reprofile(self, runtime: PortRuntime, profile: PortProfile, now: float) -> None:
        runtime.counters = self.poll.source_for(profile)  # the same one unless the source or the monitors changed
        if (profile.action_backend, profile.action_command) != (
            runtime.profile.action_backend,
            runtime.profile.action_command,
        ):
            if runtime.action_applied and runtime.action_applied[0]:
                # before the new backend's action (queued after it), under a key of its own
                step = (runtime.actions, Step(runtime.name, False))
                tables.release(self.actuator, self.journal, (runtime.name, runtime.actions), step)
            runtime.actions = make_backend(profile.action_backend.value, command=profile.action_command)
            runtime.action_applied = None
            if runtime.want_out_of_service:
                runtime.apply_action(now)
        runtime.profile = profile
        runtime.port.reconfigure(runtime.settings(), now=now)
        runtime.flush(now)
        self.tracking.follow(runtime, now)

    def _status(self) -> str:
        """systemd's STATUS= (``systemctl status efmoam``): what the daemon does, in one line."""
        up = out_of_service = events = 0
        for runtime in self.ports.values():
            port = runtime.port
            up += port.state is DiscoveryState.SEND_ANY
            out_of_service += port.out_of_service
            events += len(port.link_monitoring.active)
        return f"{len(self.ports)} ports, {up} sessions up, {out_of_service} out of service, {events} active events"


def config_slack(config: Config) -> float:
    """The ports' `timer_slack` under `config` (its rules' transmit intervals)."""
    return timer_slack(rule.profile.settings.transmit_interval for rule in config.rules)


def _link_mode(name: str) -> LinkMode:
    """The link's speed and duplex as the driver reports them (unknown: None)."""
    try:
        ioctl = EthtoolIoctl()
        try:
            return ioctl.link_mode(name)
        finally:
            ioctl.close()
    except OSError:
        return LinkMode()


def run_daemon(config_path: str | None) -> int:
    """Load the configuration (or the embedded default) and serve; the `efmoam daemon` command."""
    journal = Journal()
    try:
        config = load_config(config_path) if config_path else load_default_config()
    except (ConfigError, OSError, RecursionError, MemoryError) as exc:
        journal.log("error", f"configuration refused:\n{exc}")
        return 1
    try:
        privileges.check(config.daemon.state_dir)
        return Daemon(config, config_path, journal).run()
    except privileges.NotPermitted as exc:
        journal.log("error", str(exc))
        return privileges.EXIT_NOT_PERMITTED
    except ControlError as exc:
        if exc.code == "not_permitted":
            journal.log("error", f"{exc.message} ({privileges.CONTROL_SOCKET})")
            return privileges.EXIT_NOT_PERMITTED
        journal.log("error", exc.message)
        return 1
