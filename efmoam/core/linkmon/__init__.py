"""Link monitoring (Clause 57.5.3 events, with signal-degrade and signal-failure thresholds).

The modules, from the facts up: `kinds` (the table of the four monitors, and its sibling
of the NIC health monitors), `settings`,
`counters` and `rates` (what a sample holds and what a link carries), `monitors` (a
window and its state machine), `eventlog` (the 12 slots, a display), `events` (the
active events, the truth), `engine` (`LinkMonitoring`: events from samples and from the
peer) and `persist` (saved state).  Names are exported here and loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from efmoam.core.exports import exports

if TYPE_CHECKING:
    from efmoam.core.linkmon.counters import CounterSample as CounterSample
    from efmoam.core.linkmon.engine import LinkMonitoring as LinkMonitoring, NotifyPeer as NotifyPeer
    from efmoam.core.linkmon.eventlog import (
        EventLog as EventLog,
        EventLogEntry as EventLogEntry,
        Location as Location,
        Severity as Severity,
    )
    from efmoam.core.linkmon.events import (
        ActiveEvent as ActiveEvent,
        ActiveEvents as ActiveEvents,
        EventKey as EventKey,
    )
    from efmoam.core.linkmon.kinds import (
        FACTS as FACTS,
        HEALTH as HEALTH,
        HealthFacts as HealthFacts,
        HealthKind as HealthKind,
        MonitorFacts as MonitorFacts,
        MonitorKind as MonitorKind,
    )
    from efmoam.core.linkmon.monitors import HealthMonitor as HealthMonitor, MonitorState as MonitorState
    from efmoam.core.linkmon.settings import (
        HealthSettings as HealthSettings,
        LinkMonitoringSettings as LinkMonitoringSettings,
        LocalSfAction as LocalSfAction,
        MonitorSettings as MonitorSettings,
        PeerActions as PeerActions,
        PortAction as PortAction,
    )

exports(
    __name__,
    globals(),
    {
        ".counters": ("CounterSample",),
        ".engine": ("LinkMonitoring", "NotifyPeer"),
        ".eventlog": ("EventLog", "EventLogEntry", "Location", "Severity"),
        ".events": ("ActiveEvent", "ActiveEvents", "EventKey"),
        ".kinds": ("FACTS", "HEALTH", "HealthFacts", "HealthKind", "MonitorFacts", "MonitorKind"),
        ".monitors": ("HealthMonitor", "MonitorState"),
        ".settings": (
            "HealthSettings",
            "LinkMonitoringSettings",
            "LocalSfAction",
            "MonitorSettings",
            "PeerActions",
            "PortAction",
        ),
    },
)
