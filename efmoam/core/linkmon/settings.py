"""Link monitoring configuration (the reference's knobs; defaults from Nokia SR OS/RFC 4878).

Link monitoring and every monitor are off by default.  A monitor once enabled uses its
standard window and an sf-threshold of 1; sd-threshold is off.  A signal failure takes
the port out of service and sends one Event Notification; the peer's flags take the
port out of service, the peer's Event Notifications are only logged.
"""

from __future__ import annotations

import enum
from typing import Any

import attrs


class PortAction(enum.Enum):
    """What an event does to the port."""

    OUT_OF_SERVICE = "out-of-service"
    LOG_ONLY = "log-only"


class MonitorKind(enum.Enum):
    """The four monitors, named as in the configuration."""

    ERRORED_SYMBOL_PERIOD = "errored-symbol-period"
    ERRORED_FRAME = "errored-frame"
    ERRORED_FRAME_PERIOD = "errored-frame-period"
    ERRORED_FRAME_SECONDS = "errored-frame-seconds-summary"


#: per monitor: (default window, lowest, highest); seconds, except frames for the period monitor
WINDOW_LIMITS: dict[MonitorKind, tuple[float | None, float, float]] = {
    MonitorKind.ERRORED_SYMBOL_PERIOD: (1.0, 1.0, 60.0),
    MonitorKind.ERRORED_FRAME: (1.0, 1.0, 60.0),
    MonitorKind.ERRORED_FRAME_PERIOD: (None, 1.0, float(0xFFFFFFFF)),  # None: one second of minimum frames
    MonitorKind.ERRORED_FRAME_SECONDS: (60.0, 10.0, 900.0),
}


@attrs.frozen
class MonitorSettings:
    """One monitor.  `window` is in seconds, or in frames for errored-frame-period."""

    enabled: bool = False
    event_notification: bool = True
    sf_threshold: int = 1
    sd_threshold: int | None = None  #: None (or 0): no signal degrade
    window: float | None = None  #: None: the monitor's default

    @property
    def sd(self) -> int | None:
        """The effective sd-threshold (None when off)."""
        return self.sd_threshold or None

    def check(self, kind: MonitorKind) -> None:
        """Raise ValueError when a value is out of range for `kind`."""
        _, low, high = WINDOW_LIMITS[kind]
        if self.window is not None and not low <= self.window <= high:
            raise ValueError(f"{kind.value} window must be between {low:g} and {high:g}, not {self.window:g}")
        if self.sf_threshold < 1:
            raise ValueError(f"{kind.value} sf-threshold must be at least 1")
        if self.sd is not None and not 0 < self.sd < self.sf_threshold:
            raise ValueError(f"{kind.value} sd-threshold {self.sd} must be lower than sf-threshold {self.sf_threshold}")


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


def _check_monitor(_inst: Any, attribute: Any, value: MonitorSettings) -> None:
    value.check(next(kind for kind, name in _FIELD.items() if name == attribute.name))


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

    @staticmethod
    def key(kind: MonitorKind) -> str:
        """The configuration key of a monitor (errored_frame_seconds, ...)."""
        return _FIELD[kind]

    def monitor(self, kind: MonitorKind) -> MonitorSettings:
        """The settings of one monitor."""
        value: MonitorSettings = getattr(self, _FIELD[kind])
        return value


_FIELD = {
    MonitorKind.ERRORED_SYMBOL_PERIOD: "errored_symbol_period",
    MonitorKind.ERRORED_FRAME: "errored_frame",
    MonitorKind.ERRORED_FRAME_PERIOD: "errored_frame_period",
    MonitorKind.ERRORED_FRAME_SECONDS: "errored_frame_seconds",
}
