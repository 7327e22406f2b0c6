"""Link monitoring of one port: the monitors, the peer's reports, the events they raise.

Behaviour (the link-monitoring reference's, with the choices it leaves open written down):

* At the end of each window a monitor judges its errors (`monitors.TRANSITIONS`).  A
  signal failure is a log entry, the local-sf-action (out of service or log only), an
  Event Notification burst when the monitor's event-notification is on, and the
  info-notification flags while it lasts.  A signal degrade is a log entry, nothing
  else.  A symbol monitor that recovers by itself tells the peer with a symbol TLV whose
  errors are below the threshold.
* The clear command, a link down/up and new thresholds end events without notifying the
  peer, except that clearing a local symbol failure sends a symbol TLV with 0 errors.
* The peer's Link Fault, Dying Gasp and Critical Event flags, in any OAMPDU (57.4.2.1),
  are events while they are set (slots 1-3 of the log).  Its link event TLVs act (when
  configured out of service) only when errors >= threshold and threshold != 0; a symbol
  TLV below its (non-zero) threshold ends the remote symbol event.  Remote TLVs below
  their threshold are not logged.
* The flags our own client sets (`on_local_flags`) are local events while set; they never
  affect the port, and they are the flags the port sends.  The clear command ends them;
  a link flap does not.

The NIC health monitors (`monitors.HealthMonitor`, off by default) run beside the four
over the same samples and raise local events through the same path (a failure takes the
local-sf-action, its port action and its flags), but never an Event Notification: no TLV
type exists for them.  A link flap ends their events as it ends the others', but does not
restart their windows: the flap is what link_flaps and InfiniBand's link_downed count.

Outputs are data, never calls: `outputs` holds `EventLogged` and `MonitorUnavailable`
records and `intents` the Event Notifications to send (`NotifyPeer`).  The port drains
both after every input, the records first, so that the event comes out before the
frames it causes.  The Information flags are derived from `active`
(`events.ActiveEvents`), never kept here; whether the port is out of service is the
action policy's to derive from it (`efmoam.core.policy`).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from efmoam.core.linkmon.counters import CounterDeltas, CounterSample
from efmoam.core.linkmon.eventlog import EventLog, EventLogEntry, Location, Severity
from efmoam.core.linkmon.events import NO_FLAGS, ActiveEvent, ActiveEvents, EventKey
from efmoam.core.linkmon.kinds import BY_WIRE_TYPE, HealthKind, MonitorKind
from efmoam.core.linkmon.monitors import HealthMonitor, Monitor, MonitorState, Verdict
from efmoam.core.linkmon.settings import LinkMonitoringSettings, PortAction
from efmoam.core.outputs import EventLogged, MonitorUnavailable
from pdu.enums import CRITICAL_FLAGS, FLAG_EVENT_TYPES, EventLogType, Flag
from pdu.model import EventTlvs, LinkEventTlv


@attrs.frozen
class NotifyPeer:
    """An intent: send these link event TLVs in one Event Notification, `burst` copies."""

    tlvs: tuple[LinkEventTlv, ...]
    burst: int = 1


#: the event keys of the critical flags, made once (they are read for every OAMPDU from the peer)
_REMOTE_FLAG_KEYS = {flag: EventKey(Location.REMOTE, flag) for flag in FLAG_EVENT_TYPES}
_LOCAL_FLAG_KEYS = {flag: EventKey(Location.LOCAL, flag) for flag in FLAG_EVENT_TYPES}
#: the event key of each monitor's local events, made once (a window that closes over a threshold reads it)
_LOCAL_MONITOR_KEYS = {kind: EventKey(Location.LOCAL, kind) for kind in (*MonitorKind, *HealthKind)}
#: the Information flags a local signal failure sets while it lasts, by (dying_gasp, critical_event)
_SF_FLAGS = {
    (dying_gasp, critical): Flag((Flag.DYING_GASP if dying_gasp else 0) | (Flag.CRITICAL_EVENT if critical else 0))
    for dying_gasp in (False, True)
    for critical in (False, True)
}


def event_timestamp(epoch: float, now: float) -> int:
    """An Event Time Stamp: 100 ms units since `epoch` (the port's start), wrapping at 16 bits."""
    return int((now - epoch) * 10) & 0xFFFF


class LinkMonitoring:
    """The monitors of a port (the four and the NIC health ones), its event log, and its active events."""

    def __init__(self, settings: LinkMonitoringSettings, epoch: float, wall_clock_offset: float | None = None) -> None:
        self.settings = settings
        self.epoch = epoch  #: the port's start, for Event Time Stamps
        #: wall-clock time minus monotonic time, to stamp log entries for display
        self.wall_clock_offset = wall_clock_offset
        self.log = EventLog()
        self.active = ActiveEvents()
        self.monitors = {kind: Monitor(kind, settings.monitor(kind)) for kind in MonitorKind}
        #: the NIC health monitors ever enabled (made then: a port without any keeps its memory
        #: footprint, and so its per-sample cost among thousands); `running_health`: the ones in use
        self.health_monitors: dict[HealthKind, HealthMonitor] = {}
        self._by_kind: dict[MonitorKind | HealthKind, Monitor] = {kind: m for kind, m in self.monitors.items()}
        self.speed_mbps: int | None = None
        self._running: list[Monitor] = []
        self._running_health: list[HealthMonitor] = []
        self._sampled: list[Monitor] = []  # both, in the order windows are read
        self._deltas = CounterDeltas(health=False)
        self._configure_monitors()
        self.outputs: list[EventLogged | MonitorUnavailable] = []
        self.intents: list[NotifyPeer] = []
        self._flag_occurrences: dict[EventKey, int] = {}

    @property
    def running(self) -> Sequence[Monitor]:
        """The four standard monitors in use (link monitoring and the monitor enabled)."""
        return self._running

    @property
    def running_health(self) -> Sequence[HealthMonitor]:
        """The NIC health monitors in use (link monitoring and the monitor enabled)."""
        return self._running_health

    @property
    def ber_estimate(self) -> float | None:
        """The pre-FEC bit error rate of fec_corrected's last window (None: not running, or unknown)."""
        monitor = self.health_monitors.get(HealthKind.FEC_CORRECTED)
        if monitor is None or monitor not in self._running_health or monitor.state is MonitorState.UNAVAILABLE:
            return None  # unknown: not running, or its counters are gone (a stale value would mislead)
        return monitor.ber_estimate

    def active_events(self) -> list[EventLogEntry]:
        """The log entries of the active events."""
        return list(self.active.entries())

    def holders(self) -> tuple[str, ...]:
        """Why the port is out of service: one name per active event that holds it."""
        return self.active.holders()

    # -- inputs ------------------------------------------------------------------------

    def on_counters(self, sample: CounterSample, now: float, rebased: bool = False) -> None:
        """A counter sample: advance every running monitor's window.  `rebased`: its counters
        may come from other sources than the last sample's: a baseline, not an increase."""
        if rebased:
            self._deltas.rebase()
        deltas = self._deltas.update(sample)
        ok = MonitorState.OK
        for monitor in self._sampled:
            errors = monitor.observe(deltas, now)
            if errors is None:
                if monitor.state is MonitorState.UNAVAILABLE and not monitor.unavailable_reported:
                    monitor.unavailable_reported = True
                    self.outputs.append(MonitorUnavailable(monitor.key, monitor.missing(deltas)))
            elif errors >= monitor.lowest_threshold or monitor.state is not ok:  # else simply a clean window
                self._window_closed(monitor, errors, now)

    def on_peer_flags(self, flags: Flag, now: float) -> None:
        """The peer's critical flags, from any OAMPDU (none: the peer is gone)."""
        actions = self.settings.peer_actions
        for flag, key in _REMOTE_FLAG_KEYS.items():
            if flags & flag and key not in self.active:
                self._raise_flag(key, now, affects=actions.for_flag(flag) is not PortAction.LOG_ONLY)
            elif not flags & flag and key in self.active:
                self._clear(key, "peer")

    def on_local_flags(self, flags: Flag, now: float, cause: str = "operator") -> None:
        """The critical flags our own client wants sent: events while set, never port-affecting."""
        for flag, key in _LOCAL_FLAG_KEYS.items():
            if flags & flag and key not in self.active:
                self._raise_flag(key, now, affects=False, sets=flag)
            elif not flags & flag and key in self.active:
                self._clear(key, cause)

    @property
    def local_flags(self) -> Flag:
        """The critical flags our own client set (the active local flag events)."""
        flags = 0
        for flag, key in _LOCAL_FLAG_KEYS.items():
            if key in self.active:
                flags |= flag
        return Flag(flags)

    def on_link_events(self, tlvs: tuple[EventTlvs, ...], now: float) -> None:
        """Link event TLVs of a unique Event Notification from the peer."""
        affects = self.settings.peer_actions.event_notification is not PortAction.LOG_ONLY
        for tlv in tlvs:
            facts = BY_WIRE_TYPE.get(tlv.type) if isinstance(tlv, LinkEventTlv) else None
            if facts is None:
                continue  # an Organization Specific or unknown TLV
            assert isinstance(tlv, LinkEventTlv)
            key = EventKey(Location.REMOTE, facts.kind)
            if tlv.threshold and tlv.errors >= tlv.threshold:
                self._raise(
                    key, now, facts.log_type, Severity.FAILURE, affects,
                    window=tlv.window, threshold=tlv.threshold, value=tlv.errors,
                    running_total=tlv.error_running_total, event_total=tlv.event_running_total,
                )  # fmt: skip
            elif facts.kind is MonitorKind.ERRORED_SYMBOL_PERIOD and tlv.threshold:
                self._clear(key, "peer")  # the peer's symbol errors fell below its (non-zero) threshold

    def clear(self, location: Location | None, now: float) -> None:
        """The clear command: end the active events of `location` (None: both)."""
        for event in self.active:
            if location is None or event.key.location is location:
                self._clear_with_notice(event.key, now, "operator")

    def end(self, key: EventKey, now: float, cause: str) -> None:
        """End one event as the clear command does (automatic recovery), its monitor back to OK."""
        if key in self.active:
            self._clear_with_notice(key, now, cause)

    def link_changed(self) -> None:
        """A link down/up clears every standard monitor event, local and remote, and every
        flag event of the peer, and restarts the standard windows.  The flags our own client
        set stay: they are its to clear.  So do the NIC health events and windows: they are
        the NIC's, not the OAM session's, and a flap is what link_flaps and ib_fatal count
        (clearing them at the next flap would let a flapping port in and out of service)."""
        for event in self.active:
            key = event.key
            if not (key.location is Location.LOCAL and (key.is_flag or isinstance(key.source, HealthKind))):
                self._clear(key, "link")
        for monitor in self.monitors.values():
            monitor.restart()
            monitor.cleared()

    def reconfigure(self, settings: LinkMonitoringSettings, now: float) -> None:
        """New settings take effect in the current window; new thresholds clear a monitor's events."""
        before = {kind: monitor.thresholds for kind, monitor in self._by_kind.items()}
        self.settings = settings
        self._configure_monitors()
        running = set(self._sampled)
        for kind, monitor in self._by_kind.items():
            if before.get(kind, monitor.thresholds) != monitor.thresholds:
                key = _LOCAL_MONITOR_KEYS[kind]
                if key in self.active:
                    self._clear_with_notice(key, now, "reload")
            if monitor not in running:
                monitor.restart()

    def set_speed(self, speed_mbps: int | None) -> None:
        """The link speed, for the symbol and frame-period windows."""
        if speed_mbps != self.speed_mbps:
            self.speed_mbps = speed_mbps
            self._configure_monitors()

    def restore_event(self, event: ActiveEvent) -> None:
        """A saved active event is active again (a restart), shown in the log."""
        if not self.log.shows(event.entry):
            self.log.place(event.entry)
        self.active.add(event)
        source = event.key.source
        if event.key.location is Location.LOCAL and not isinstance(source, Flag):
            self._monitor(source).restore(event.entry.severity)

    # -- local events ------------------------------------------------------------------

    def _configure_monitors(self) -> None:
        """Hand every monitor its settings and the link speed; list the ones that run."""
        settings = self.settings
        for kind, monitor in self.monitors.items():
            monitor.configure(settings.monitor(kind), self.speed_mbps, settings.symbol_rate)
        for health_kind in HealthKind:
            health_settings = settings.health(health_kind)
            if health_settings.enabled or health_kind in self.health_monitors:
                self._health(health_kind).configure_health(health_settings, self.speed_mbps)
        enabled = settings.enabled
        self._running = [m for m in self.monitors.values() if enabled and m.settings.enabled]
        self._running_health = [m for m in self.health_monitors.values() if enabled and m.enabled]
        self._sampled = [*self._running, *self._running_health]
        self._deltas.watch_health(bool(self._running_health))

    def _health(self, kind: HealthKind) -> HealthMonitor:
        monitor = self.health_monitors.get(kind)
        if monitor is None:
            monitor = self.health_monitors[kind] = HealthMonitor(kind, self.settings.health(kind))
            monitor.configure_health(self.settings.health(kind), self.speed_mbps)
            self._by_kind[kind] = monitor
        return monitor

    def _monitor(self, kind: MonitorKind | HealthKind) -> Monitor:
        return self._health(kind) if isinstance(kind, HealthKind) else self.monitors[kind]

    def _window_closed(self, monitor: Monitor, errors: float, now: float) -> None:
        verdict = monitor.judge(errors)
        if verdict is None:
            return
        key = _LOCAL_MONITOR_KEYS[monitor.kind]
        if verdict is Verdict.FAILED:
            action = self.settings.local_sf_action
            flags = _SF_FLAGS[bool(action.dying_gasp), bool(action.critical_event)]
            affects = action.port_action is not PortAction.LOG_ONLY
            self._raise_local(monitor, key, errors, now, Severity.FAILURE, affects, flags)
            if monitor.notifies:
                self._notify(monitor, monitor.settings.sf_threshold, int(errors), now, action.event_burst)
        elif verdict is Verdict.DEGRADED:
            self._raise_local(monitor, key, errors, now, Severity.DEGRADE, False, NO_FLAGS)
        elif verdict is Verdict.DEGRADE_ENDED:
            self._clear(key, "window")
        else:  # recovered
            self._clear(key, "window")
            if monitor.notifies:
                self._notify(monitor, monitor.settings.sf_threshold, int(errors), now, 1)

    def _raise_local(
        self, monitor: Monitor, key: EventKey, errors: float, now: float, severity: Severity, affects: bool,
        flags: Flag,
    ) -> None:  # fmt: skip
        self._raise(
            key, now, monitor.log_type, severity, affects, flags, monitor=monitor.health_key,
            **monitor.entry_numbers(severity, errors),
            running_total=monitor.error_total, event_total=monitor.event_total,
        )  # fmt: skip

    def _clear_with_notice(self, key: EventKey, now: float, cause: str) -> None:
        """Clear as the clear command does: a local symbol failure tells the peer it is over."""
        event = self._clear(key, cause)
        source = key.source
        if key.location is not Location.LOCAL or isinstance(source, Flag):
            return
        monitor = self._monitor(source)
        monitor.cleared()
        failed = event is not None and event.entry.severity is Severity.FAILURE
        if failed and source is MonitorKind.ERRORED_SYMBOL_PERIOD and monitor.notifies:
            self._notify(monitor, monitor.settings.sf_threshold, 0, now, 1)

    def _notify(self, monitor: Monitor, threshold: int, errors: int, now: float, burst: int) -> None:
        tlv = monitor.facts.link_event_tlv(
            event_timestamp(self.epoch, now), monitor.wire_window, threshold, errors, monitor.error_total,
            monitor.event_total,
        )  # fmt: skip
        self.intents.append(NotifyPeer((tlv,), burst))

    # -- the active set ----------------------------------------------------------------

    def _raise(
        self, key: EventKey, now: float, event_type: EventLogType, severity: Severity, affects: bool,
        flags: Flag = NO_FLAGS, monitor: str | None = None, **numbers: int,
    ) -> None:  # fmt: skip
        """A new event of `key`, replacing the active one of that key (`monitor`: a health event's monitor)."""
        self._clear(key, "replaced")
        wall = None if self.wall_clock_offset is None else now + self.wall_clock_offset
        slot, entry = self.log.add(
            location=key.location, event_type=event_type, severity=severity, time=now, wall_time=wall,
            port_affecting=affects, monitor=monitor, **numbers,
        )  # fmt: skip
        self.active.add(ActiveEvent(key, entry, flags))
        self.outputs.append(EventLogged(slot, entry))

    def _clear(self, key: EventKey, cause: str) -> ActiveEvent | None:
        event = self.active.remove(key)
        if event is not None:
            cleared = self.log.mark_cleared(event.entry)
            if cleared is not None:
                self.outputs.append(EventLogged(*cleared, cause))
        return event

    def _raise_flag(self, key: EventKey, now: float, affects: bool, sets: Flag = NO_FLAGS) -> None:
        # a non-threshold event: both totals count its occurrences (RFC 4878)
        count = self._flag_occurrences[key] = self._flag_occurrences.get(key, 0) + 1
        assert isinstance(key.source, Flag) and key.source & CRITICAL_FLAGS
        log_type = FLAG_EVENT_TYPES[key.source]
        self._raise(key, now, log_type, Severity.FAILURE, affects, sets, running_total=count, event_total=count)
