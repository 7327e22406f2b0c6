"""Link monitoring (Clause 57.5.3 events, with signal-degrade and signal-failure thresholds)."""

from __future__ import annotations

from efmoam.core.linkmon.counters import CounterSample
from efmoam.core.linkmon.engine import LinkMonitoring
from efmoam.core.linkmon.eventlog import EventLog, EventLogEntry, Location, Severity
from efmoam.core.linkmon.monitors import MonitorState
from efmoam.core.linkmon.settings import (
    LinkMonitoringSettings,
    LocalSfAction,
    MonitorKind,
    MonitorSettings,
    PeerActions,
    PortAction,
)

__all__ = [
    "CounterSample",
    "EventLog",
    "EventLogEntry",
    "LinkMonitoring",
    "LinkMonitoringSettings",
    "LocalSfAction",
    "Location",
    "MonitorKind",
    "MonitorSettings",
    "MonitorState",
    "PeerActions",
    "PortAction",
    "Severity",
]
