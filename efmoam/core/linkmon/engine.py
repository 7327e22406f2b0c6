"""Link monitoring of one port: thresholds, actions, the peer's reports, the event log.

Behaviour (the reference's, with the choices it leaves open written down):

* At the end of each window a monitor compares its errors with its thresholds
  (errors >= threshold).  Reaching sf-threshold raises a signal failure: a log entry,
  the local-sf-action (out of service or log only), an Event Notification burst when
  the monitor's event-notification is on and the peer advertised link events, and the
  info-notification flags while it lasts.  Reaching only sd-threshold raises a signal
  degrade: a log entry, nothing else.  A monitor raises at most one event per window; a
  failed monitor raises nothing new (its failure stays active) and reports no degrade.
  A degrade ends when a window ends below sd-threshold.
* Frame monitors never recover by themselves: the clear command, a link down/up or a
  restart with state reset are the recovery, and none of them notifies the peer.  The
  symbol monitor with an sd-threshold recovers when a window ends below it, and tells
  the peer with a symbol TLV whose errors are below the threshold.
* The peer's Link Fault, Dying Gasp and Critical Event flags are events while they are
  set (slots 1-3 of the log).  Its link event TLVs act (when configured out of service)
  only when errors >= threshold and threshold != 0; a symbol TLV below its threshold
  clears the remote symbol event.  Remote TLVs below their threshold are not logged.
* The port is out of service exactly while some active event holds it out of service.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

import attrs

from efmoam.core.linkmon.counters import CounterDeltas, CounterSample
from efmoam.core.linkmon.eventlog import EventLog, EventLogEntry, Location, Severity
from efmoam.core.linkmon.monitors import KIND_OF_WIRE_TYPE, KINDS, Monitor, MonitorState
from efmoam.core.linkmon.settings import LinkMonitoringSettings, MonitorKind, PortAction
from efmoam.core.outputs import EventLogged, MonitorUnavailable, Output, PortServiceChanged
from pdu import EventLogType, EventTlvType, Flag, LinkEventTlv
from pdu.model import EventTlvs

#: the peer's flags that are events, with their log types
FLAG_EVENTS = {
    Flag.DYING_GASP: EventLogType.DYING_GASP_EVENT,
    Flag.CRITICAL_EVENT: EventLogType.CRITICAL_LINK_EVENT,
    Flag.LINK_FAULT: EventLogType.LINK_FAULT,
}
NO_FLAGS = Flag(0)


class Host(Protocol):
    """What link monitoring needs from its port."""

    def notify_link_events(self, tlvs: tuple[LinkEventTlv, ...], *, now: float, burst: int = 1) -> int | None:
        """Send an Event Notification; None when it cannot be sent."""

    def timestamp(self, now: float) -> int:
        """An Event Time Stamp for `now`."""


@attrs.define
class ActiveEvent:
    """An event that is still active, and what it does while it lasts."""

    key: tuple[object, ...]  #: (location, monitor kind or flag or wire type)
    entry: EventLogEntry
    flags: Flag = NO_FLAGS  #: Information flags it sets (info-notification)


class LinkMonitoring:
    """The four monitors of a port, its event log, and the events' effects."""

    def __init__(self, settings: LinkMonitoringSettings, host: Host, wall_clock_offset: float | None = None) -> None:
        self.settings = settings
        self.host = host
        #: wall-clock time minus monotonic time, to stamp log entries for display
        self.wall_clock_offset = wall_clock_offset
        self.log = EventLog()
        self.monitors = {kind: Monitor(kind, settings.monitor(kind)) for kind in MonitorKind}
        self.speed_mbps: int | None = None
        self._running: list[Monitor] = []
        self._configure_monitors()
        self.outputs: list[Output] = []
        self._deltas = CounterDeltas()
        #: the active events by key: (location, monitor kind or flag)
        self.active: dict[tuple[object, ...], ActiveEvent] = {}
        self._flag_occurrences: dict[tuple[Location, Flag], int] = {}
        self._out_of_service = False

    # -- what the port reads -----------------------------------------------------------

    @property
    def out_of_service(self) -> bool:
        return self._out_of_service

    @property
    def info_flags(self) -> Flag:
        """Flags that active local failures set in every Information OAMPDU."""
        flags = NO_FLAGS
        for event in self.active.values():
            flags |= event.flags
        return flags

    def active_events(self) -> list[EventLogEntry]:
        return [event.entry for event in self.active.values()]

    def holders(self) -> tuple[str, ...]:
        """Why the port is out of service: one name per event that holds it."""
        return holders_of(event.entry for event in self.active.values())

    @property
    def running(self) -> Sequence[Monitor]:
        """The monitors in use (link monitoring and the monitor enabled)."""
        return self._running

    # -- inputs ------------------------------------------------------------------------

    def on_counters(self, sample: CounterSample, now: float) -> None:
        """A counter sample: advance every enabled monitor's window."""
        deltas = self._deltas.update(sample)
        ok = MonitorState.OK
        for monitor in self._running:
            errors = monitor.observe(deltas, now)
            if errors is None:
                if monitor.state is MonitorState.UNAVAILABLE and not monitor.unavailable_reported:
                    monitor.unavailable_reported = True
                    self.outputs.append(MonitorUnavailable(monitor.kind.value, monitor.missing(deltas)))
            elif errors >= monitor.lowest_threshold or monitor.state is not ok:
                self._window_closed(monitor, errors, now)
        if self.outputs:
            self.refresh_service()

    def _configure_monitors(self) -> None:
        """Hand every monitor its settings and the link speed; list the ones that run."""
        for kind, monitor in self.monitors.items():
            monitor.configure(self.settings.monitor(kind), self.speed_mbps, self.settings.symbol_rate)
        enabled = self.settings.enabled
        self._running = [m for m in self.monitors.values() if enabled and m.settings.enabled]

    def on_peer_flags(self, flags: Flag, now: float) -> None:
        """The peer's flags in an Information OAMPDU (or none, when the peer is gone)."""
        actions = self.settings.peer_actions
        action = {Flag.LINK_FAULT: actions.link_fault, Flag.DYING_GASP: actions.dying_gasp}
        for flag, log_type in FLAG_EVENTS.items():
            key = (Location.REMOTE, flag)
            if flags & flag and key not in self.active:
                affects = action.get(flag, actions.critical_event) is PortAction.OUT_OF_SERVICE
                self._raise_flag(key, now, log_type, affects)
            elif not flags & flag and key in self.active:
                self._clear(key)
        self.refresh_service()

    def on_local_flags(self, flags: Flag, now: float) -> None:
        """The flags our own client set (set_local_flags): events while set, never port-affecting."""
        for flag, log_type in FLAG_EVENTS.items():
            key = (Location.LOCAL, flag)
            if flags & flag and key not in self.active:
                self._raise_flag(key, now, log_type, affects=False)
            elif not flags & flag and key in self.active:
                self._clear(key)
        self.refresh_service()

    def on_link_events(self, tlvs: tuple[EventTlvs, ...], now: float) -> None:
        """Link event TLVs of a unique Event Notification from the peer."""
        affects = self.settings.peer_actions.event_notification is PortAction.OUT_OF_SERVICE
        for tlv in tlvs:
            if not isinstance(tlv, LinkEventTlv) or tlv.type not in KIND_OF_WIRE_TYPE:
                continue
            kind = KIND_OF_WIRE_TYPE[EventTlvType(tlv.type)]
            key = (Location.REMOTE, kind)
            if tlv.threshold and tlv.errors >= tlv.threshold:
                self._clear(key)  # a newer report of the same kind replaces the old one
                self._raise(
                    key,
                    now,
                    Location.REMOTE,
                    KINDS[kind].log_type,
                    Severity.FAILURE,
                    affects,
                    window=tlv.window,
                    threshold=tlv.threshold,
                    value=tlv.errors,
                    running_total=tlv.error_running_total,
                    event_total=tlv.event_running_total,
                )
            elif kind is MonitorKind.ERRORED_SYMBOL_PERIOD and tlv.threshold and key in self.active:
                self._clear(key)  # the peer's symbol errors fell below its (non-zero) threshold
        self.refresh_service()

    def clear(self, location: Location | None, now: float) -> None:
        """The clear command: end the active events of `location` (None: both)."""
        for key, event in list(self.active.items()):
            if location is None or event.entry.location is location:
                self._clear_with_notice(key, event, now)
        self.refresh_service()

    def link_changed(self, up: bool) -> None:
        """A link down/up clears every event, local and remote, and restarts the windows."""
        for key in list(self.active):
            self._clear(key)
        for monitor in self.monitors.values():
            monitor.restart()
            monitor.reset_state()
        self.refresh_service()

    def reconfigure(self, settings: LinkMonitoringSettings, now: float) -> None:
        """New settings take effect in the current window; new thresholds clear a monitor's events."""
        old = self.settings
        self.settings = settings
        self._configure_monitors()
        for kind, monitor in self.monitors.items():
            before, after = old.monitor(kind), settings.monitor(kind)
            if (before.sf_threshold, before.sd) != (after.sf_threshold, after.sd):
                for key in [k for k in self.active if k == (Location.LOCAL, kind)]:
                    self._clear_with_notice(key, self.active[key], now)
            if not after.enabled or not settings.enabled:
                monitor.restart()
        self.refresh_service()

    def set_speed(self, speed_mbps: int | None) -> None:
        """The link speed, for the symbol and frame-period windows."""
        if speed_mbps != self.speed_mbps:
            self.speed_mbps = speed_mbps
            self._configure_monitors()

    # -- local events ------------------------------------------------------------------

    def _window_closed(self, monitor: Monitor, errors: int, now: float) -> None:
        s = monitor.settings
        key = (Location.LOCAL, monitor.kind)
        if monitor.state is MonitorState.FAILED:
            if monitor.kind is MonitorKind.ERRORED_SYMBOL_PERIOD and s.sd is not None and errors < s.sd:
                self._recover_symbols(monitor, key, errors, now)
            return
        if errors >= s.sf_threshold:
            self._clear(key)  # a degrade becomes the failure
            monitor.state = MonitorState.FAILED
            monitor.event_total += 1
            action = self.settings.local_sf_action
            flags = (Flag.DYING_GASP if action.dying_gasp else NO_FLAGS) | (
                Flag.CRITICAL_EVENT if action.critical_event else NO_FLAGS
            )
            self._raise_local(monitor, key, errors, now, Severity.FAILURE, s.sf_threshold, flags)
            if s.event_notification:
                self._notify(monitor, monitor.wire_window, s.sf_threshold, errors, now, action.event_burst)
        elif s.sd is not None and errors >= s.sd:
            if monitor.state is not MonitorState.DEGRADED:
                monitor.state = MonitorState.DEGRADED
                monitor.event_total += 1
                self._raise_local(monitor, key, errors, now, Severity.DEGRADE, s.sd, NO_FLAGS)
        elif monitor.state is MonitorState.DEGRADED:
            monitor.state = MonitorState.OK
            self._clear(key)

    def _raise_local(
        self,
        monitor: Monitor,
        key: tuple[object, ...],
        errors: int,
        now: float,
        severity: Severity,
        threshold: int,
        flags: Flag,
    ) -> None:
        affects = severity is Severity.FAILURE and (
            self.settings.local_sf_action.port_action is PortAction.OUT_OF_SERVICE
        )
        self._raise(
            key, now, Location.LOCAL, monitor.info.log_type, severity, affects,
            window=monitor.wire_window, threshold=threshold, value=errors,
            running_total=monitor.error_total, event_total=monitor.event_total, flags=flags,
        )  # fmt: skip

    def _recover_symbols(self, monitor: Monitor, key: tuple[object, ...], errors: int, now: float) -> None:
        monitor.state = MonitorState.OK
        self._clear(key)
        if monitor.settings.event_notification:
            self._notify(monitor, monitor.wire_window, monitor.settings.sf_threshold, errors, now, 1)

    def _clear_with_notice(self, key: tuple[object, ...], event: ActiveEvent, now: float) -> None:
        """Clear as the clear command does: a local symbol failure tells the peer it is over."""
        self._clear(key)
        if key[0] is not Location.LOCAL or not isinstance(key[1], MonitorKind):
            return
        monitor = self.monitors[key[1]]
        was_failed = event.entry.severity is Severity.FAILURE
        monitor.reset_state()
        if was_failed and monitor.kind is MonitorKind.ERRORED_SYMBOL_PERIOD and monitor.settings.event_notification:
            self._notify(monitor, monitor.wire_window, monitor.settings.sf_threshold, 0, now, 1)

    def _notify(self, monitor: Monitor, window: int, threshold: int, errors: int, now: float, burst: int) -> None:
        tlv = LinkEventTlv(
            type=monitor.info.wire_type,
            timestamp=self.host.timestamp(now),
            window=window,
            threshold=threshold,
            errors=errors,
            error_running_total=monitor.error_total,
            event_running_total=monitor.event_total,
        )
        self.host.notify_link_events((_fit(tlv),), now=now, burst=burst)

    # -- the active set ----------------------------------------------------------------

    def _raise(
        self, key: tuple[object, ...], now: float, location: Location, event_type: EventLogType, severity: Severity,
        affects: bool, flags: Flag = NO_FLAGS, **numbers: int,
    ) -> None:  # fmt: skip
        self._clear(key)  # a newer event of the same kind replaces the active one
        wall = None if self.wall_clock_offset is None else now + self.wall_clock_offset
        slot, entry = self.log.add(
            location=location,
            event_type=event_type,
            severity=severity,
            time=now,
            wall_time=wall,
            port_affecting=affects,
            **numbers,
        )
        self.active[key] = ActiveEvent(key, entry, flags)
        self.outputs.append(EventLogged(slot, entry))

    def _clear(self, key: tuple[object, ...]) -> None:
        event = self.active.pop(key, None)
        if event is not None:
            cleared = self.log.mark_cleared(event.entry.index)
            if cleared is not None:
                self.outputs.append(EventLogged(*cleared))

    def _raise_flag(self, key: tuple[Location, Flag], now: float, log_type: EventLogType, affects: bool) -> None:
        # a non-threshold event: both totals count its occurrences (RFC 4878)
        count = self._flag_occurrences[key] = self._flag_occurrences.get(key, 0) + 1
        self._raise(key, now, key[0], log_type, Severity.FAILURE, affects, running_total=count, event_total=count)

    def refresh_service(self) -> None:
        """Report the port's service state if the active events changed it."""
        out = any(event.entry.port_affecting for event in self.active.values())
        if out != self._out_of_service:
            self._out_of_service = out
            self.outputs.append(PortServiceChanged(out, self.holders()))


def holders_of(entries: Iterable[EventLogEntry]) -> tuple[str, ...]:
    """The names of the active events among `entries` that hold a port out of service."""
    return tuple(f"{entry.location.value} {entry.event_type.name.lower()}" for entry in entries if entry.port_affecting)


#: the largest value of each field per wire type (the TLVs' field widths)
_FIELD_BITS = {
    EventTlvType.ERRORED_SYMBOL_PERIOD: (64, 64, 64, 64, 32),
    EventTlvType.ERRORED_FRAME: (16, 32, 32, 64, 32),
    EventTlvType.ERRORED_FRAME_PERIOD: (32, 32, 32, 64, 32),
    EventTlvType.ERRORED_FRAME_SECONDS_SUMMARY: (16, 16, 16, 32, 32),
}


def _fit(tlv: LinkEventTlv) -> LinkEventTlv:
    """Saturate values that exceed their field (totals wrap, as counters do)."""
    window_bits, threshold_bits, errors_bits, total_bits, events_bits = _FIELD_BITS[EventTlvType(tlv.type)]
    return attrs.evolve(
        tlv,
        window=min(tlv.window, (1 << window_bits) - 1),
        threshold=min(tlv.threshold, (1 << threshold_bits) - 1),
        errors=min(tlv.errors, (1 << errors_bits) - 1),
        error_running_total=tlv.error_running_total % (1 << total_bits),
        event_running_total=tlv.event_running_total % (1 << events_bits),
    )
