"""Link monitoring configuration (the reference's knobs; defaults from Nokia SR OS/RFC 4878).

Link monitoring and every monitor are off by default.  A monitor once enabled uses its
standard window and an sf-threshold of 1; sd-threshold is off, and so are the clear
thresholds (sd-clear, sf-clear: hysteresis, as Nokia's 7705 SAR has).  A signal failure takes
the port out of service and sends one Event Notification; the peer's flags take the
port out of service, the peer's Event Notifications are only logged.
"""

from __future__ import annotations

import enum
from typing import Any

import attrs

from efmoam.core.linkmon.kinds import FACTS, MonitorKind
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


@attrs.frozen
class LinkMonitoringSettings:
    """Link monitoring of one port.  Enabling it advertises the Link Events capability."""

    enabled: bool = False
    errored_symbol_period: MonitorSettings = attrs.field(default=MonitorSettings(), validator=_check_monitor)
    errored_frame: MonitorSettings = attrs.field(default=MonitorSettings(), validator=_check_monitor)
    errored_frame_period: MonitorSettings = attrs.field(default=MonitorSettings(), validator=_check_monitor)
    errored_frame_seconds: MonitorSettings = attrs.field(default=MonitorSettings(), validator=_check_monitor)
    local_sf_action: LocalSfAction = LocalSfAction()
    peer_actions: PeerActions = PeerActions()
    #: symbols per second of the PHY; None: derived from the link speed
    symbol_rate: int | None = None

    def monitor(self, kind: MonitorKind) -> MonitorSettings:
        """The settings of one monitor."""
        value: MonitorSettings = getattr(self, FACTS[kind].key)
        return value


# the monitors' fields are named by the table's keys
assert [a.name for a in attrs.fields(LinkMonitoringSettings) if a.name.startswith("errored_")] == [
    facts.key for facts in FACTS.values()
]
