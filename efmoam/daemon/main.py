"""The daemon: one process, one selector loop, every configured port.

The loop is the only place that reads the monotonic clock.  Each wake-up reads what is
ready (OAMPDU sockets, link notifications, the control socket, signals), runs what is
due (the ports' deadlines, the counter poll), and carries out what the ports asked for:
frames to send, port actions, log lines, saved state.

Failure policy: bad frames are counted and logged with a rate limit; a port action
that fails is logged and retried every `ACTION_RETRY` seconds until it verifies; a bad
configuration on reload is reported and the running one stays; a counter source that
fails is logged once per error and the port keeps running without that sample.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import selectors
import signal
import socket
import sys
import threading
import time
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from efmoam.config import Config, ConfigError, PortProfile, load_config, load_default_config
from efmoam.core import (
    DiscoveryChanged,
    DropReason,
    EventLogged,
    FrameDropped,
    LinkEventsReceived,
    LocalProtocolError,
    LoopbackChanged,
    LoopbackStatus,
    MonitorUnavailable,
    OamPort,
    OrgSpecificReceived,
    Output,
    PeerChanged,
    PeerFlagsChanged,
    PortServiceChanged,
    QuirkSeen,
    Transmit,
    VariablesReceived,
)
from efmoam.core.linkmon import Location
from efmoam.core.variables import A_FRAMES_RECEIVED_OK
from efmoam.daemon import heap
from efmoam.daemon.control import PROTOCOL_VERSION, ControlError, ControlServer
from efmoam.daemon.eventstream import EventStream
from efmoam.daemon.journal import Journal
from efmoam.daemon.metrics import MetricsServer, Telemetry
from efmoam.daemon.sdnotify import notify
from efmoam.daemon.state import StateStore
from efmoam.linux.actions import (
    ActionError,
    PortActionBackend,
    apply_loopback,
    make_backend,
    stale_block_tables,
    stale_loopback_tables,
)
from efmoam.linux.counters import BaseCounterSource, CounterError, RtnetlinkSource, open_counter_source
from efmoam.linux.ethtool import EthtoolIoctl, LinkMode
from efmoam.linux.netlink import Link, LinkEvent, LinkMonitor
from efmoam.linux.packet import OamSocket
from efmoam.views.data import port_view, summary_view, variable_view
from pdu import Branch, Flag, MuxAction, ParserAction, VariableContainer, VariableDescriptor

ACTION_RETRY = 5.0  #: seconds between attempts of a port action that failed
RX_BATCH = 64  #: frames read from one socket per wake-up
#: seconds a thread runs Python before another waiting for the GIL gets it (CPython's
#: default is 5 ms): a metrics scrape on its own thread holds the loop back for at most
#: about this long between two of its batches
GIL_SWITCH_INTERVAL = 0.001


@attrs.define
class PortRuntime:
    """A managed interface: its engine, socket, counter source and action backend."""

    name: str
    ifindex: int
    port: OamPort
    sock: OamSocket
    profile: PortProfile
    counters: BaseCounterSource
    actions: PortActionBackend
    rx_tokens: float
    rx_stamp: float
    rx_rate_limited: int = 0
    want_out_of_service: bool = False
    action_applied: bool | None = None  #: what the backend last verified (None: not yet)
    action_error: str | None = None
    action_retry_at: float | None = None
    counter_error: str | None = None
    deadline: float | None = None  #: when the loop must next look at this port
    variable_requests: int = 0  #: Variable Requests sent through the control socket
    #: the last Variable Response: the number of the latest request when it came, its containers
    variable_answer: tuple[int, tuple[VariableContainer, ...]] | None = None


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
        self._clock = clock
        self.wall_clock_offset = time.time() - clock()
        self.ports: dict[str, PortRuntime] = {}
        self.state = StateStore(config.daemon.state_dir)
        self._selector = selectors.DefaultSelector()
        self._stop = False
        self._reload = False
        self._next_poll = 0.0
        self._settle_heap_at: float | None = None  #: when to settle the heap (`heap`) after ports changed
        self._deadlines: list[tuple[float, int, str]] = []  # a heap; stale entries are skipped
        self._pushes = itertools.count()
        self._sources: dict[tuple[str, str | None], BaseCounterSource] = {}
        self._links: LinkMonitor | None = None
        self._control: ControlServer | None = None
        # -- fleet visibility: metrics and the event stream (efmoam.daemon.metrics) --
        #: held by the loop while it processes one wake-up; a metrics scrape reads the ports under it
        self.lock = threading.Lock()
        self.telemetry = Telemetry()
        self.events = EventStream(config.daemon.event_stream, self._event_stream_error)
        self._metrics: MetricsServer | None = None
        # -- end of fleet visibility --

    # -- the loop ----------------------------------------------------------------------

    def run(self) -> int:
        """Serve until asked to stop; returns the process exit status."""
        wake_r, wake_w = socket.socketpair()
        wake_r.setblocking(False)
        wake_w.setblocking(False)
        old_wakeup = signal.set_wakeup_fd(wake_w.fileno())
        old_switch = sys.getswitchinterval()
        sys.setswitchinterval(GIL_SWITCH_INTERVAL)
        handlers = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
        try:
            self._start(wake_r)
            while not self._stop:
                now = self._clock()
                timeout = self._next_wakeup(now)
                ready = self._selector.select(None if timeout is None else max(0.0, timeout - now))
                with self.lock:  # a metrics scrape never sees a wake-up half done
                    for key, _ in ready:
                        key.data(self._clock())
                    now = self._clock()
                    if self._reload:
                        self._reload = False
                        self.events.reopen()  # SIGHUP: a rotated event-stream file
                        with contextlib.suppress(ControlError):  # reported; the running config stays
                            self._do_reload(now)
                    self._run_due(now)
            self._shutdown()
        finally:
            signal.set_wakeup_fd(old_wakeup)
            sys.setswitchinterval(old_switch)
            heap.release()
            for sig, handler in handlers.items():
                signal.signal(sig, handler)
            wake_r.close()
            wake_w.close()
        return 0

    def _on_signal(self, signum: int, _frame: object) -> None:
        if signum == signal.SIGHUP:
            self._reload = True
        else:
            self._stop = True

    def _start(self, wake: socket.socket) -> None:
        problem = self.state.load()
        if problem:
            self.journal.log("warning", problem)
        self._selector.register(wake, selectors.EVENT_READ, lambda _now: _drain(wake))
        self._links = LinkMonitor()
        self._selector.register(self._links, selectors.EVENT_READ, self._on_link_events)
        self._control = ControlServer(self.config.daemon.control_socket, self._handle)
        self._selector.register(self._control.listener, selectors.EVENT_READ, self._on_control_accept)
        now = self._clock()
        for link in self._links.links.values():
            self._consider(link, now)
        self._reconcile_tables()
        self._flush(now)
        self._start_metrics()
        notify("READY=1", f"STATUS={self._status()}")
        self.journal.log("notice", "started", ports=len(self.ports), control=self.config.daemon.control_socket)

    # -- fleet visibility: metrics and the event stream --------------------------------

    def _start_metrics(self) -> None:
        settings = self.config.daemon.metrics
        if not settings.enabled:
            return
        try:
            self._metrics = MetricsServer(self, settings.address, settings.port)
        except OSError as exc:  # the daemon runs on without metrics
            self.journal.log("error", "metrics not served", address=settings.address, port=settings.port, error=exc)
            return
        self.journal.log("info", "metrics served", address=settings.address, port=self._metrics.port)

    def _stop_metrics(self) -> None:
        if self._metrics is not None:
            self._metrics.close()
            self._metrics = None

    def _reconfigure_fleet(self, old: Config) -> None:
        """After a reload: restart what the daemon section changed."""
        if self.config.daemon.metrics != old.daemon.metrics:
            self._stop_metrics()
            self._start_metrics()
        if self.config.daemon.event_stream != old.daemon.event_stream:
            self.events.close()
            self.events = EventStream(self.config.daemon.event_stream, self._event_stream_error)

    def _event_stream_error(self, error: str) -> None:
        self.journal.log("error", "event stream not written", error=error)

    # -- end of fleet visibility -------------------------------------------------------

    def _touch(self, runtime: PortRuntime) -> None:
        """Note when the loop must next look at this port (after anything changed it)."""
        deadlines = [d for d in (runtime.port.next_deadline(), runtime.action_retry_at) if d is not None]
        deadline = min(deadlines, default=None)
        if deadline != runtime.deadline:
            runtime.deadline = deadline
            if deadline is not None:
                heapq.heappush(self._deadlines, (deadline, next(self._pushes), runtime.name))

    def _earliest(self) -> tuple[float, PortRuntime] | None:
        """The port due first, dropping heap entries that no longer hold."""
        while self._deadlines:
            deadline, _, name = self._deadlines[0]
            runtime = self.ports.get(name)
            if runtime is not None and runtime.deadline == deadline:
                return deadline, runtime
            heapq.heappop(self._deadlines)
        return None

    def _next_wakeup(self, now: float) -> float | None:
        earliest = self._earliest()
        deadlines = [self._next_poll] if self.ports else []
        if earliest is not None:
            deadlines.append(earliest[0])
        if self._settle_heap_at is not None:
            deadlines.append(self._settle_heap_at)
        return min(deadlines, default=None)

    def _run_due(self, now: float) -> None:
        if self._settle_heap_at is not None and now >= self._settle_heap_at:
            self._settle_heap_at = None
            frozen = heap.settle()
            self.journal.log("info", "heap settled", frozen_objects=frozen, ms=round((self._clock() - now) * 1e3, 1))
        if now >= self._next_poll:
            self._poll_counters(now)
            self._next_poll = now + self.config.daemon.counter_interval
        while (earliest := self._earliest()) is not None and earliest[0] <= now:
            heapq.heappop(self._deadlines)
            runtime = earliest[1]
            runtime.deadline = None
            runtime.port.handle_timer(now=now)
            if runtime.action_retry_at is not None and runtime.action_retry_at <= now:
                self._apply_action(runtime, now)
            self._flush_port(runtime, now)

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
            counters = self._counter_source(profile)
        except BaseException:
            sock.close()
            raise
        mode = _link_mode(link.name)
        port = OamPort(
            profile.settings, link.mac or sock.mac(), now=now, link_up=link.carrier,
            half_duplex=bool(mode.half_duplex), wall_clock_offset=self.wall_clock_offset,
        )  # fmt: skip
        runtime = PortRuntime(
            name=link.name,
            ifindex=link.ifindex,
            port=port,
            sock=sock,
            profile=profile,
            counters=counters,
            actions=make_backend(profile.action_backend.value, command=profile.action_command),
            rx_tokens=float(self.config.daemon.rx_rate_limit),
            rx_stamp=now,
        )
        saved = self.state.ports.get(link.name)
        if saved is not None:
            try:
                for problem in port.restore(saved, now=now):
                    self.journal.log("warning", "saved state partly restored", port=link.name, problem=problem)
            except ValueError as exc:
                self.journal.log("warning", "saved state not restored", port=link.name, error=exc)
        port.set_speed(mode.speed_mbps, now=now)
        self.ports[link.name] = runtime
        self._settle_heap_at = now + heap.SETTLE_AFTER
        self._selector.register(sock, selectors.EVENT_READ, lambda t, r=runtime: self._on_frames(r, t))
        self.journal.log(
            "info", "port added", port=link.name, mac=port.mac, counters=counters.name,
            provides=",".join(sorted(counters.provides(link.name))) or "none", action=runtime.actions.name,
        )  # fmt: skip

    def _remove_port(self, name: str, why: str, release: bool = False) -> None:
        """Stop managing a port; `release` also undoes its actions and forgets its state
        (the configuration no longer names it), otherwise its state is kept for its return."""
        runtime = self.ports.pop(name, None)
        if runtime is None:
            return
        self._selector.unregister(runtime.sock)
        runtime.sock.close()
        if release:
            try:
                runtime.actions.return_to_service(name)
                _end_loopback(name)
            except ActionError as exc:
                self.journal.log("error", "action not undone", port=name, error=exc)
            self.state.ports.pop(name, None)
            with contextlib.suppress(OSError):
                self.state.save()
        else:
            self._save_port(runtime)
        self.telemetry.forget(name)
        self._settle_heap_at = self._clock() + heap.SETTLE_AFTER  # and free what the port left in cycles
        self.journal.log("info", "port removed", port=name, reason=why)

    def _on_link_events(self, now: float) -> None:
        assert self._links is not None
        for event in self._links.read_events():
            self._link_event(event, now)
        self._flush(now)

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
        if runtime is None:
            self._consider(link, now)
        elif runtime.port.link_up != link.carrier:  # speed and duplex are read again at every carrier change
            mode = _link_mode(link.name)
            runtime.port.set_link(link.carrier, now=now, speed_mbps=mode.speed_mbps, half_duplex=mode.half_duplex)

    # -- frames ------------------------------------------------------------------------

    def _on_frames(self, runtime: PortRuntime, now: float) -> None:
        """Read waiting OAMPDUs; the per-port rate limit applies before decoding."""
        if self.ports.get(runtime.name) is not runtime:
            return  # removed earlier in this wake-up (its socket is closed)
        limit = float(self.config.daemon.rx_rate_limit)
        runtime.rx_tokens = min(limit, runtime.rx_tokens + (now - runtime.rx_stamp) * limit)
        runtime.rx_stamp = now
        frames = runtime.sock.receive(RX_BATCH)
        for frame in frames:
            if runtime.rx_tokens < 1.0:
                runtime.rx_rate_limited += 1
                self.journal.limited(now, runtime.name, DropReason.RATE_LIMIT, "receive rate limit reached")
                continue
            runtime.rx_tokens -= 1.0
            runtime.port.receive(frame, now=now)
            self.telemetry.received(runtime.name, runtime.port, frame, now)  # metrics: last OAMPDU from the peer
        self._flush_port(runtime, now)

    def _flush(self, now: float) -> None:
        for runtime in list(self.ports.values()):
            self._flush_port(runtime, now)

    def _flush_port(self, runtime: PortRuntime, now: float) -> None:
        """Carry out what the port produced: each kind of output has its handler (`OUTPUT_HANDLERS`)."""
        save = False
        for output in runtime.port.take_outputs():
            save = OUTPUT_HANDLERS[type(output)](self, runtime, output, now) or save
        if save:
            self._save_port(runtime)
        self._touch(runtime)

    # -- the outputs' handlers: True when the port's saved state must be written -------

    def _on_transmit(self, runtime: PortRuntime, output: Transmit, _now: float) -> bool:
        runtime.sock.send(output.frame)
        return False

    def _on_dropped(self, runtime: PortRuntime, output: FrameDropped, now: float) -> bool:
        self.journal.limited(now, runtime.name, output.reason, "frame dropped", detail=output.detail)
        return False

    def _on_quirk(self, runtime: PortRuntime, output: QuirkSeen, now: float) -> bool:
        self.journal.limited(now, runtime.name, output.quirk, "peer quirk worked around", detail=output.detail)
        return False

    def _on_event_logged(self, runtime: PortRuntime, output: EventLogged, now: float) -> bool:
        self._log_event(runtime.name, output)
        self.events.event(runtime.name, output, _event_action(output), now, self.wall_clock_offset)
        self.telemetry.event_logged(runtime.name, output)  # metrics: events raised
        return True

    def _on_service_changed(self, runtime: PortRuntime, output: PortServiceChanged, now: float) -> bool:
        runtime.want_out_of_service = output.out_of_service
        self._apply_action(runtime, now, output.reasons)
        return True

    def _on_discovery(self, runtime: PortRuntime, output: DiscoveryChanged, _now: float) -> bool:
        self.journal.log(
            "info", "discovery", port=runtime.name, state=output.new.value,
            oper_status=output.oper_status.name.lower(), cause=output.cause,
        )  # fmt: skip
        return False

    def _on_peer(self, runtime: PortRuntime, output: PeerChanged, _now: float) -> bool:
        self.journal.log("info", "peer", port=runtime.name, mac=None if output.peer is None else output.peer.mac)
        return False

    def _on_peer_flags(self, runtime: PortRuntime, output: PeerFlagsChanged, _now: float) -> bool:
        self.journal.log("notice", "peer flags", port=runtime.name, flags=_flags(output.flags))
        return False

    def _on_variables(self, runtime: PortRuntime, output: VariablesReceived, _now: float) -> bool:
        values = " ".join(
            f"{c.leaf}={'/'.join(v.hex() for v in c.values) or f'indication:{c.indication:#x}'}"
            for c in output.containers
        )
        self.journal.log("info", "variables", port=runtime.name, values=values or None)
        runtime.variable_answer = (runtime.variable_requests, output.containers)
        return False

    def _on_peer_link_events(self, runtime: PortRuntime, output: LinkEventsReceived, _now: float) -> bool:
        self.journal.log("info", "event notification", port=runtime.name, sequence=output.sequence)
        return False

    def _on_loopback(self, runtime: PortRuntime, output: LoopbackChanged, _now: float) -> bool:
        name = runtime.name
        self.journal.log("notice", "loopback", port=name, status=output.status.name.lower(), cause=output.cause)
        try:
            apply_loopback(name, output.parser_action, output.mux_action)
        except ActionError as exc:
            self.journal.log("error", "loopback action failed", port=name, error=exc)
        return False

    def _on_monitor_unavailable(self, runtime: PortRuntime, output: MonitorUnavailable, _now: float) -> bool:
        self.journal.log(
            "warning", "monitor unavailable", port=runtime.name, monitor=output.monitor,
            missing=",".join(output.counters),
        )  # fmt: skip
        return False

    def _on_org_specific(self, _runtime: PortRuntime, _output: OrgSpecificReceived, _now: float) -> bool:
        return False  # no vendor's Organization Specific OAMPDU is interpreted (its flags are, by the engine)

    def _log_event(self, name: str, logged: EventLogged) -> None:
        entry, view = logged.entry, logged.entry.view(logged.slot)
        self.journal.log(
            "warning" if entry.active and entry.port_affecting else "notice",
            "link event" if entry.active else "link event cleared",
            port=name, location=view["location"], type=view["type"], severity=view["severity"], slot=logged.slot,
            value=view["value"], threshold=view["threshold"], window=view["window"], affects_port=entry.port_affecting,
        )  # fmt: skip

    # -- actions -----------------------------------------------------------------------

    def _apply_action(self, runtime: PortRuntime, now: float, reasons: tuple[str, ...] = ()) -> None:
        """Make the port's service state what the engine wants; retry later on failure."""
        want = runtime.want_out_of_service
        try:
            if want:
                runtime.actions.take_out_of_service(runtime.name, reasons or runtime.port.link_monitoring.holders())
            else:
                runtime.actions.return_to_service(runtime.name)
        except ActionError as exc:
            runtime.action_error = str(exc)
            runtime.action_retry_at = now + ACTION_RETRY
            self.journal.log("error", "port action failed", port=runtime.name, action=runtime.actions.name, error=exc)
            self.events.port_action(
                runtime.name, out_of_service=want, reasons=reasons or runtime.port.link_monitoring.holders(),
                backend=runtime.actions.name, error=str(exc), now=now, wall_clock_offset=self.wall_clock_offset,
            )  # fmt: skip
            return
        runtime.action_applied, runtime.action_error, runtime.action_retry_at = want, None, None
        self.events.port_action(
            runtime.name, out_of_service=want, reasons=reasons or runtime.port.link_monitoring.holders(),
            backend=runtime.actions.name, error=None, now=now, wall_clock_offset=self.wall_clock_offset,
        )  # fmt: skip
        self.journal.log(
            "warning" if want else "notice", "port out of service" if want else "port back in service",
            port=runtime.name, action=runtime.actions.name, reasons=",".join(reasons) or None,
        )  # fmt: skip

    def _reconcile_tables(self) -> None:
        """Remove the nftables tables a previous run left behind: blocks of ports that are
        not out of service now, and every loopback table (no loopback survives a restart)."""
        kinds: tuple[tuple[str, Callable[[], list[str]], Callable[[str], None], Callable[[str], bool]], ...] = (
            ("block", stale_block_tables, make_backend("block").return_to_service, self._out_of_service),
            ("loopback", stale_loopback_tables, _end_loopback, lambda _name: False),
        )
        for what, list_stale, remove, keep in kinds:
            try:
                stale = list_stale()
            except ActionError as exc:
                self.journal.log("warning", "cannot list nftables tables", error=exc)
                return
            for name in stale:
                if keep(name):
                    continue
                try:
                    remove(name)
                    self.journal.log("notice", f"stale {what} removed", port=name)
                except ActionError as exc:
                    self.journal.log("error", f"stale {what} not removed", port=name, error=exc)

    def _out_of_service(self, name: str) -> bool:
        runtime = self.ports.get(name)
        return runtime is not None and runtime.port.out_of_service

    # -- counters ----------------------------------------------------------------------

    def _counter_source(self, profile: PortProfile) -> BaseCounterSource:
        """One source per kind (and file) for every port; rtnetlink reads share a dump per poll."""
        key = (profile.counter_source.value, profile.counter_file)
        source = self._sources.get(key)
        if source is None:
            source = open_counter_source(key[0], counter_file=_path(key[1]))
            for part in [source, *getattr(source, "sources", [])]:
                if isinstance(part, RtnetlinkSource):
                    part.max_age = self.config.daemon.counter_interval / 2
            self._sources[key] = source
        return source

    def _poll_counters(self, now: float) -> None:
        for runtime in self.ports.values():
            try:
                sample = runtime.counters.read(runtime.name)
            except (CounterError, OSError) as exc:
                if str(exc) != runtime.counter_error:
                    runtime.counter_error = str(exc)
                    self.journal.log("warning", "counters not read", port=runtime.name, error=exc)
                continue
            runtime.counter_error = None
            self.telemetry.counters_read(runtime.name, sample)  # metrics: counter availability
            if sample.frames_received is not None:  # for variable retrieval
                runtime.port.update_mac_attributes({A_FRAMES_RECEIVED_OK: sample.frames_received})
            runtime.port.on_counters(sample, now=now)
            self._flush_port(runtime, now)

    # -- state -------------------------------------------------------------------------

    def _save_port(self, runtime: PortRuntime) -> None:
        self.state.ports[runtime.name] = runtime.port.saved_state()
        try:
            self.state.save()
        except OSError as exc:
            self.journal.log("error", "state not saved", path=self.state.path, error=exc)

    # -- control -----------------------------------------------------------------------

    def _on_control_accept(self, _now: float) -> None:
        assert self._control is not None
        conn = self._control.accept()
        if conn is not None:
            self._selector.register(conn, selectors.EVENT_READ, lambda t, c=conn: self._on_control_readable(c, t))

    def _on_control_readable(self, conn: socket.socket, now: float) -> None:
        assert self._control is not None
        fd = conn.fileno()
        if not self._control.readable(conn):
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(fd)
        self._flush(self._clock())

    def _runtime(self, args: dict[str, Any]) -> PortRuntime:
        name = args.get("port")
        if not isinstance(name, str):
            raise ControlError("bad_request", "a port name is needed")
        runtime = self.ports.get(name)
        if runtime is None:
            raise ControlError("unknown_port", f"{name} is not a port this daemon manages")
        return runtime

    def _handle(self, op: str, args: dict[str, Any]) -> Any:
        """Answer one control request."""
        now = self._clock()
        if op == "hello":
            return {"protocol": PROTOCOL_VERSION, "ports": sorted(self.ports)}
        if op == "show_ports":
            return {"schema": 1, "ports": [summary_view(n, r.port) for n, r in sorted(self.ports.items())]}
        if op == "show_port":
            runtime = self._runtime(args)
            return port_view(runtime.name, runtime.port, self._extra(runtime))
        if op == "clear_events":
            runtime = self._runtime(args)
            location = {"local": Location.LOCAL, "remote": Location.REMOTE, None: None}.get(args.get("location"), "?")
            if location == "?":
                raise ControlError("bad_request", "location is local, remote or absent (both)")
            runtime.port.clear_events(location, now=now)  # type: ignore[arg-type]
            return {"cleared": args.get("location") or "both"}
        if op == "clear_statistics":
            self._runtime(args).port.clear_statistics()
            return {"cleared": "statistics"}
        if op == "loopback":
            runtime = self._runtime(args)
            try:
                if args.get("enable", True):
                    runtime.port.start_loopback(now=now)
                else:
                    runtime.port.stop_loopback(now=now)
            except LocalProtocolError as exc:
                raise ControlError("not_allowed", str(exc)) from exc
            return {"loopback": "started" if args.get("enable", True) else "stopping"}
        if op == "variables":
            runtime = self._runtime(args)
            leaves = args.get("leaves")
            if not isinstance(leaves, list) or not leaves or not all(isinstance(x, int) for x in leaves):
                raise ControlError("bad_request", "leaves is a list of Clause 30 attribute numbers")
            descriptors = tuple(VariableDescriptor(Branch.ATTRIBUTE, leaf) for leaf in leaves)
            try:
                runtime.port.request_variables(descriptors, now=now)
            except LocalProtocolError as exc:
                raise ControlError("not_allowed", str(exc)) from exc
            runtime.variable_requests += 1
            return {"requested": leaves, "request": runtime.variable_requests}
        if op == "variable_answer":  # the answer to request number `request`, once it came
            runtime = self._runtime(args)
            request = args.get("request")
            if not isinstance(request, int):
                raise ControlError("bad_request", "request is the number the variables request returned")
            answer = runtime.variable_answer
            if answer is None or answer[0] < request:
                return {"answered": False}
            return {"answered": True, "variables": [variable_view(c) for c in answer[1]]}
        if op == "reload":
            self._do_reload(now)
            return {"reloaded": True}
        raise ControlError("bad_request", f"unknown op {op!r}")

    def _extra(self, runtime: PortRuntime) -> dict[str, Any]:
        return {
            "ifindex": runtime.ifindex,
            "counters": {
                "source": runtime.counters.name,
                "provides": runtime.counters.provides(runtime.name),
                "error": runtime.counter_error,
            },
            "action": {
                "backend": runtime.actions.name,
                "applied": runtime.action_applied,
                "error": runtime.action_error,
            },
            "rx_rate_limited": runtime.rx_rate_limited,
            "tx_errors": runtime.sock.send_errors,
            "rx_errors": runtime.sock.receive_errors,
        }

    # -- reload and shutdown -----------------------------------------------------------

    def _do_reload(self, now: float) -> None:
        notify("RELOADING=1", f"MONOTONIC_USEC={int(now * 1e6)}")
        try:
            config = load_config(self.config_path) if self.config_path else load_default_config()
        except (ConfigError, OSError) as exc:
            self.journal.log("error", f"reload refused, the running configuration stays:\n{exc}")
            notify("READY=1")
            raise ControlError("bad_config", str(exc)) from exc
        old, self.config = self.config, config
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
        self._flush(now)
        notify("READY=1", f"STATUS={self._status()}")
        self.journal.log("notice", "configuration reloaded", ports=len(self.ports))

    def _reprofile(self, runtime: PortRuntime, profile: PortProfile, now: float) -> None:
        if (profile.counter_source, profile.counter_file) != (
            runtime.profile.counter_source,
            runtime.profile.counter_file,
        ):
            runtime.counters = self._counter_source(profile)
        if (profile.action_backend, profile.action_command) != (
            runtime.profile.action_backend,
            runtime.profile.action_command,
        ):
            if runtime.action_applied:
                with contextlib.suppress(ActionError):
                    runtime.actions.return_to_service(runtime.name)
            runtime.actions = make_backend(profile.action_backend.value, command=profile.action_command)
            runtime.action_applied = None
            if runtime.want_out_of_service:
                self._apply_action(runtime, now)
        runtime.profile = profile
        runtime.port.reconfigure(profile.settings, now=now)

    def _shutdown(self) -> None:
        notify("STOPPING=1")
        self._stop_metrics()
        now = self._clock()
        if self.config.daemon.dying_gasp_on_shutdown:
            # only where the port sends at all: elsewhere no Dying Gasp is sent, or logged
            sent = [runtime.name for runtime in self.ports.values() if runtime.port.send_dying_gasp(now=now)]
            self.journal.log("notice", "dying gasp", ports=len(sent))
            self._flush(now)  # out now where the budget allows, else in the next slot:
            deadline = now + 0.15
            while (now := self._clock()) < deadline:
                self._run_due(now)
                time.sleep(0.01)
        for runtime in self.ports.values():
            self._save_port(runtime)
            if runtime.port.loopback is not LoopbackStatus.NO_LOOPBACK:  # leave no loopback behind
                with contextlib.suppress(ActionError):
                    _end_loopback(runtime.name)
            runtime.sock.close()
        for source in self._sources.values():
            with contextlib.suppress(Exception):
                source.close()
        if self._control is not None:
            self._control.close()
        if self._links is not None:
            self._links.close()
        self.events.close()
        self.journal.log("notice", "stopped")

    def _status(self) -> str:
        states: dict[str, int] = {}
        for runtime in self.ports.values():
            states[runtime.port.state.value] = states.get(runtime.port.state.value, 0) + 1
        return f"{len(self.ports)} ports" + "".join(f", {n} {s}" for s, n in sorted(states.items()))


#: the handler of each kind of output of an `OamPort`
OUTPUT_HANDLERS: dict[type[Output], Callable[[Daemon, PortRuntime, Any, float], bool]] = {
    Transmit: Daemon._on_transmit,
    FrameDropped: Daemon._on_dropped,
    QuirkSeen: Daemon._on_quirk,
    EventLogged: Daemon._on_event_logged,
    PortServiceChanged: Daemon._on_service_changed,
    DiscoveryChanged: Daemon._on_discovery,
    PeerChanged: Daemon._on_peer,
    PeerFlagsChanged: Daemon._on_peer_flags,
    VariablesReceived: Daemon._on_variables,
    LinkEventsReceived: Daemon._on_peer_link_events,
    LoopbackChanged: Daemon._on_loopback,
    MonitorUnavailable: Daemon._on_monitor_unavailable,
    OrgSpecificReceived: Daemon._on_org_specific,
}
assert set(OUTPUT_HANDLERS) == set(typing.get_args(Output)), "a kind of output without a handler"


def _drain(sock: socket.socket) -> None:
    with contextlib.suppress(BlockingIOError):
        while sock.recv(4096):
            pass


def _end_loopback(name: str) -> None:
    apply_loopback(name, ParserAction.FORWARD, MuxAction.FORWARD)


def _path(value: str | None) -> Path | None:
    return None if value is None else Path(value)


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


def _flags(flags: Flag) -> str:
    return ",".join(str(f.name).lower() for f in Flag if flags & f) or "none"


def _event_action(logged: EventLogged) -> str:
    """What an event-log record does to the port, for the event stream."""
    entry = logged.entry
    if not entry.active:
        return "cleared"
    return "out-of-service" if entry.port_affecting else "log-only"


def run_daemon(config_path: str | None) -> int:
    """Load the configuration (or the embedded default) and serve; the `efmoam daemon` command."""
    journal = Journal()
    try:
        config = load_config(config_path) if config_path else load_default_config()
    except (ConfigError, OSError) as exc:
        journal.log("error", f"configuration refused:\n{exc}")
        return 1
    try:
        return Daemon(config, config_path, journal).run()
    except ControlError as exc:
        journal.log("error", exc.message)
        return 1
