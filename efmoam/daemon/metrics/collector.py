"""The same metrics as a prometheus_client custom collector (the ``metrics`` extra).

`PortCollector` takes a snapshot of every port's groups under the daemon's lock at
collect time and turns it into prometheus_client metric families, sample by sample,
from the same `schema` as the endpoint.  Register it to embed efmoam's metrics in
another registry or exporter; a test checks that it and the endpoint agree sample for
sample.  The daemon's own endpoint does not go through it: prometheus_client formats
each sample anew on every scrape, which takes seconds at 4,096 ports
(tests/bench/test_metrics_bench.py measures both).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

from efmoam.config.model import MetricsDetail
from efmoam.daemon.metrics.fleet import Merged
from efmoam.daemon.metrics.process import OWN_FAMILIES, own_samples
from efmoam.daemon.metrics.schema import FAMILIES, GROUPS, HEALTH_WINDOWS, SELECTIONS
from efmoam.daemon.metrics.telemetry import DaemonLike

if TYPE_CHECKING:  # prometheus_client is an optional extra (efmoam[metrics]): imported when used
    from prometheus_client.core import Metric
    from prometheus_client.registry import Collector, CollectorRegistry

#: per port: its name and what each of `GROUPS` read; the daemon's health; the fleet's histograms
Snapshot = tuple[list[tuple[str, tuple[Hashable, ...]]], Mapping[str, Any], list[Merged]]


def snapshot(daemon: DaemonLike) -> Snapshot:
    """What every group reads of every port, while the loop is between two wake-ups (the
    fleet's histograms updated from every port's health monitors)."""
    with daemon.lock:
        telemetry, offset = daemon.telemetry, daemon.wall_clock_offset
        ports = [
            (runtime.name, tuple(group.read(runtime, telemetry, offset) for group in GROUPS))
            for runtime in daemon.ports.values()
        ]
        histograms = telemetry.health_windows
        histograms.observe(
            monitor for runtime in daemon.ports.values() for monitor in runtime.port.link_monitoring.running_health
        )
        return ports, daemon.health(), histograms.merged()


def families(taken: Snapshot, detail: MetricsDetail = MetricsDetail.FULL) -> list[Metric]:
    """prometheus_client's metric families of a snapshot, at `detail`."""
    from prometheus_client.core import (  # noqa: PLC0415 - optional
        CounterMetricFamily,
        GaugeMetricFamily,
        HistogramMetricFamily,
    )

    selection = SELECTIONS[detail]
    metrics: dict[object, Metric] = {
        family: (CounterMetricFamily if family.type == "counter" else GaugeMetricFamily)(
            family.name, family.help, labels=("device", *family.labels)
        )
        for family in FAMILIES
        if family in selection.families
    }
    ports, health, merged = taken
    for device, values in ports:
        for group, value in zip(GROUPS, values, strict=True):
            for sample in group.samples(value):
                if selection.keeps(sample):
                    family, labels, number = sample
                    metrics[family].add_metric((device, *labels), number)  # type: ignore[attr-defined]
    own: dict[object, Metric] = {
        family: (CounterMetricFamily if family.type == "counter" else GaugeMetricFamily)(
            family.name, family.help, labels=family.labels
        )
        for family in OWN_FAMILIES
    }
    for family, labels, number in own_samples(health):
        own[family].add_metric(labels, number)  # type: ignore[attr-defined]
    fleet = []
    if merged:
        histogram = HistogramMetricFamily(HEALTH_WINDOWS.name, HEALTH_WINDOWS.help, labels=HEALTH_WINDOWS.labels)
        for key, buckets, total in merged:
            histogram.add_metric((key,), list(buckets), total)
        fleet.append(histogram)
    return [*metrics.values(), *fleet, *own.values()]


class PortCollector:
    """A prometheus_client custom collector of a daemon's ports at `detail`: one snapshot per collect."""

    def __init__(self, daemon: DaemonLike, detail: MetricsDetail = MetricsDetail.FULL) -> None:
        self._daemon = daemon
        self._detail = detail

    def collect(self) -> Iterator[Metric]:
        yield from families(snapshot(self._daemon), self._detail)

    def describe(self) -> Iterator[Metric]:
        return iter(())  # nothing is read at registration time


def registry_for(daemon: DaemonLike, detail: MetricsDetail = MetricsDetail.FULL) -> CollectorRegistry:
    """A prometheus_client registry holding a `PortCollector` of `daemon` at `detail`."""
    from prometheus_client.registry import CollectorRegistry  # noqa: PLC0415 - optional dependency

    registry = CollectorRegistry(auto_describe=False)
    registry.register(cast("Collector", PortCollector(daemon, detail)))
    return registry
