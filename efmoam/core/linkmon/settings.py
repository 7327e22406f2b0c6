"""Link monitoring configuration (the reference's knobs; defaults from Nokia SR OS/RFC 4878).

Link monitoring and every monitor are off by default.  A monitor once enabled uses its
standard window and an sf-threshold of 1; sd-threshold is off, and so are the clear
thresholds (sd-clear, sf-clear: hysteresis, as Nokia's 7705 SAR has).  A signal failure takes
the port out of service and sends one Event Notification; the peer's flags take the
port out of service, the peer's Event Notifications are only logged.

The NIC health monitors (`HealthSettings`) are off by default too; once enabled they use
their row of `kinds.HEALTH`: its window, sf-threshold and whether it is fatal.  Their
thresholds are counts per window or rates per second (floats) as the row says; a fatal
monitor fails on any increase of its fatal counters, whatever sf-threshold says.
"""

from __future__ import annotations

import enum
import math
from typing import Any

import attrs

from efmoam.core.linkmon.kinds import FACTS, HEALTH, HEALTH_FACTS, Counting, HealthKind, MonitorKind
from pdu.enums import Flag


class PortAction(enum.Enum):
    """What an event does to the port.  The config also takes the policy's names: ``block``
    for out-of-service, ``log`` for log-only."""

    OUT_OF_SERVICE = "out-of-service"  #: with the port's action backend while the event lasts (block)
    LOG_ONLY = "log-only"
    ERROR_DISABLE = "error-disable"  #: out of service with the backend, latched after the event ends
    DOWN = "down"  #: administratively down, latched


@attrs.frozen
class MonitorSettings:
    """One monitor.  `window` is in seconds, or in frames for errored-frame-period."""

    enabled: bool = False
    event_notification: bool = True
    sf_threshold: int = 1
    sd_threshold: int | None = None  #: None (or 0): no signal degrade
    window: float | None = None  #: None: the monitor's default
    #: a degrade ends when a window ends with fewer errors than this (None: sd-threshold)
    sd_clear: int | None = None
    #: a failed symbol monitor recovers when a window ends with fewer errors than this
    #: (None: sd-threshold, and without one it never recovers by itself)
    sf_clear: int | None = None

    @property
    def sd(self) -> int | None:
        """The effective sd-threshold (None when off)."""
        return self.sd_threshold or None

    def check(self, kind: MonitorKind) -> None:
        """Raise ValueError when a value is out of range for `kind`."""
        low, high = FACTS[kind].window_limits
        if self.window is not None and not low <= self.window <= high:
            raise ValueError(f"{kind.value} window must be between {low:g} and {high:g}, not {self.window:g}")
        if self.sf_threshold < 1:
            raise ValueError(f"{kind.value} sf-threshold must be at least 1")
        if self.sd is not None and not 0 < self.sd < self.sf_threshold:
            raise ValueError(f"{kind.value} sd-threshold {self.sd} must be lower than sf-threshold {self.sf_threshold}")
        self._check_clear(kind)

    def _check_clear(self, kind: MonitorKind) -> None:
        if self.sd_clear is not None:
            if self.sd is None:
                raise ValueError(f"{kind.value} sd-clear needs an sd-threshold")
            if not 1 <= self.sd_clear <= self.sd:
                raise ValueError(f"{kind.value} sd-clear {self.sd_clear} must be between 1 and sd-threshold {self.sd}")
        if self.sf_clear is not None:
            if kind is not MonitorKind.ERRORED_SYMBOL_PERIOD:
                raise ValueError(
                    f"{kind.value} sf-clear is only used by errored-symbol-period (a frame monitor's failure"
                    " lasts until it is cleared): remove it, or set it to null"
                )
            if not 1 <= self.sf_clear <= self.sf_threshold:
                raise ValueError(
                    f"{kind.value} sf-clear {self.sf_clear} must be between 1 and sf-threshold {self.sf_threshold}"
                )


#: the highest health threshold accepted (a rate above it is no measurement)
HEALTH_THRESHOLD_MAX = 1e15


@attrs.frozen
class HealthSettings:
    """One NIC health monitor.  None: the value of its row in `kinds.HEALTH`."""

    enabled: bool = False
    window: float | None = None  #: seconds
    sf_threshold: float | None = None  #: per window or per second, as the row counts
    sd_threshold: float | None = None  #: None (or 0): no signal degrade
    fatal: bool | None = None

    def effective(self, kind: HealthKind) -> tuple[float, float, float | None, bool]:
        """(window, sf, sd, fatal) with the row's defaults filled in."""
        facts = HEALTH_FACTS[kind]
        window = facts.default_window if self.window is None else self.window
        sf = facts.default_sf if self.sf_threshold is None else self.sf_threshold
        fatal = facts.fatal if self.fatal is None else self.fatal
        return window, sf, self.sd_threshold or None, fatal

    def check(self, kind: HealthKind) -> None:
        """Raise ValueError when a value is out of range for `kind`."""
        facts = HEALTH_FACTS[kind]
        name = facts.key
        low, high = facts.window_limits
        numbers = (("window", self.window), ("sf-threshold", self.sf_threshold), ("sd-threshold", self.sd_threshold))
        for what, value in numbers:
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise ValueError(f"{name} {what} must be a number, not {value!r}")
            if value is not None and not math.isfinite(value):
                raise ValueError(f"{name} {what} must be a finite number, not {value}")
        if self.fatal is not None and not isinstance(self.fatal, bool):
            raise ValueError(f"{name} fatal must be true or false, not {self.fatal!r}")
        if self.window is not None and not low <= self.window <= high:
            raise ValueError(f"{name} window must be between {low:g} and {high:g} seconds, not {self.window:g}")
        _, sf, sd, fatal = self.effective(kind)
        unit = facts.threshold_unit
        if not 0 < sf <= HEALTH_THRESHOLD_MAX:
            raise ValueError(f"{name} sf-threshold must be above 0 and at most {HEALTH_THRESHOLD_MAX:g}, not {sf:g}")
        if sd is not None and not 0 < sd < sf:
            raise ValueError(f"{name} sd-threshold {sd:g} must be above 0 and below sf-threshold {sf:g} ({unit})")
        if facts.counting is Counting.COUNT and any(t is not None and t != int(t) for t in (sf, sd)):
            raise ValueError(f"{name} thresholds are whole numbers ({unit})")
        if fatal and not facts.fatal_counters:
            raise ValueError(f"{name} cannot be fatal: it has no fatal counter (its rate has sd/sf thresholds)")


@attrs.frozen
class LocalSfAction:
    """What a local signal failure does (local-sf-action)."""

    port_action: PortAction = PortAction.OUT_OF_SERVICE
    event_burst: int = attrs.field(
        default=1, validator=attrs.validators.and_(attrs.validators.ge(1), attrs.validators.le(5))
    )
    dying_gasp: bool = False  #: set Dying Gasp in every Information OAMPDU while the failure lasts
    critical_event: bool = False  #: set Critical Event likewise


@attrs.frozen
class PeerActions:
    """What the peer's reports do here (peer-rdi-rx)."""

    link_fault: PortAction = PortAction.OUT_OF_SERVICE
    dying_gasp: PortAction = PortAction.OUT_OF_SERVICE
    critical_event: PortAction = PortAction.OUT_OF_SERVICE
    event_notification: PortAction = PortAction.LOG_ONLY

    def for_flag(self, flag: Flag) -> PortAction:
        """The action for the peer's Link Fault, Dying Gasp or Critical Event flag."""
        if flag is Flag.LINK_FAULT:
            return self.link_fault
        return self.dying_gasp if flag is Flag.DYING_GASP else self.critical_event


def _check_monitor(_inst: Any, attribute: Any, value: MonitorSettings) -> None:
    value.check(next(facts.kind for facts in FACTS.values() if facts.key == attribute.name))


def _check_health(_inst: Any, attribute: Any, value: HealthSettings) -> None:
    value.check(next(facts.kind for facts in HEALTH if facts.key == attribute.name))


@attrs.frozen
class LinkMonitoringSettings:
    """Link monitoring of one port.  Enabling it advertises the Link Events capability."""

    enabled: bool = False
    errored_symbol_period: MonitorSettings = attrs.field(default=MonitorSettings(), validator=_check_monitor)
    errored_frame: MonitorSettings = attrs.field(default=MonitorSettings(), validator=_check_monitor)
    errored_frame_period: MonitorSettings = attrs.field(default=MonitorSettings(), validator=_check_monitor)
    errored_frame_seconds: MonitorSettings = attrs.field(default=MonitorSettings(), validator=_check_monitor)
    fec_uncorrectable: HealthSettings = attrs.field(default=HealthSettings(), validator=_check_health)
    fec_corrected: HealthSettings = attrs.field(default=HealthSettings(), validator=_check_health)
    pause_storm: HealthSettings = attrs.field(default=HealthSettings(), validator=_check_health)
    link_flaps: HealthSettings = attrs.field(default=HealthSettings(), validator=_check_health)
    ib_fatal: HealthSettings = attrs.field(default=HealthSettings(), validator=_check_health)
    local_sf_action: LocalSfAction = LocalSfAction()
    peer_actions: PeerActions = PeerActions()
    #: symbols per second of the PHY; None: derived from the link speed
    symbol_rate: int | None = None

    def monitor(self, kind: MonitorKind) -> MonitorSettings:
        """The settings of one monitor."""
        value: MonitorSettings = getattr(self, FACTS[kind].key)
        return value

    def health(self, kind: HealthKind) -> HealthSettings:
        """The settings of one NIC health monitor."""
        value: HealthSettings = getattr(self, HEALTH_FACTS[kind].key)
        return value


# the monitors' fields are named by the table's keys
assert [a.name for a in attrs.fields(LinkMonitoringSettings) if a.name.startswith("errored_")] == [
    facts.key for facts in FACTS.values()
]
assert [a.name for a in attrs.fields(LinkMonitoringSettings) if isinstance(a.default, HealthSettings)] == [
    facts.key for facts in HEALTH
]
