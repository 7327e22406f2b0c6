"""Prometheus metrics, read from the ports' state at scrape time.

Nothing is updated per frame: a scrape walks the daemon's ports and reads what the
engines already keep (discovery, the peer, the RFC 4878 statistics, the monitors, the
active events, the drop counters), plus the few things the daemon records in a
`Telemetry` as they happen.

* `schema`: every family (name, type, help, labels) and how a port's samples are made:
  the one definition both renderings use; what ``detail: basic`` keeps of them (`BASIC`,
  a subset of full series for series, so the alert rules work at either detail).
* `fleet`: per NIC health monitor, the histogram of its closed windows merged over the
  ports (``efmoam_health_window_errors``, no ``device``), kept monotonic across ports
  removed and monitors disabled.
* `process`: ``efmoam_build_info`` and prometheus_client's ``process_*`` families, read
  from /proc/self.
* `exposition`: the daemon's endpoint body, the text format kept between scrapes and
  redone where values changed (`Renderer`).
* `collector`: the same metrics as a prometheus_client custom collector
  (`PortCollector`), to embed in another registry.
* `server`: the HTTP endpoint (`MetricsServer`).

Threads: the endpoint serves each scrape on its own thread while the daemon's loop
mutates the ports on the main thread.  The loop holds `Daemon.lock` while it processes
one wake-up (never while it sleeps in select); a scrape holds it while it reads a batch
of ports (`exposition.BATCH`).  Each port is therefore seen between two wake-ups, never
half-way through one, and the loop waits for one batch at most.

Counters only grow while the daemon runs: ``clear port P statistics`` is a display
baseline for show (`efmoam.core.stats.DisplayBaseline`), never a reset, so Prometheus
never sees a counter fall.

The README ("Running a fleet") lists the metrics and the series per port at each detail.
"""

from efmoam.daemon.metrics.collector import PortCollector, registry_for, snapshot
from efmoam.daemon.metrics.exposition import CONTENT_TYPE, Renderer, render
from efmoam.daemon.metrics.server import MetricsServer
from efmoam.daemon.metrics.telemetry import DaemonLike, RuntimeLike, Telemetry

__all__ = [
    "CONTENT_TYPE",
    "DaemonLike",
    "MetricsServer",
    "PortCollector",
    "Renderer",
    "RuntimeLike",
    "Telemetry",
    "registry_for",
    "render",
    "snapshot",
]
