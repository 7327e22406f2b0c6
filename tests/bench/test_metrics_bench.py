"""The cost of one Prometheus scrape of 4,096 ports (target: under 100 ms; never asserted).

Ports are real engines with link monitoring (four monitors on), half of them with a
signal failure on one monitor.  Measured: `render` (what the endpoint does per request,
the loop's lock held for all of it but the final join), a GET over loopback HTTP, and
for comparison the same metrics through prometheus_client's ``generate_latest``.

    pytest tests/bench/test_metrics_bench.py --benchmark-enable

The figures are in ``extra_info`` (``--benchmark-json``) and in the benchmark table.
"""

from __future__ import annotations

import time
import urllib.request
from typing import Any

import attrs
import pytest
from prometheus_client import generate_latest

from efmoam.core.linkmon import MonitorSettings
from efmoam.daemon.metrics import MetricsServer, Renderer, registry_for, render, snapshot
from tests.metrics.support import FakeDaemon, raise_sf

PORTS = 4096

pytestmark = pytest.mark.bench


@pytest.fixture(scope="module")
def daemon() -> FakeDaemon:
    built = FakeDaemon()
    for index in range(PORTS):
        runtime = built.add(f"eth{index}", index)
        lm = runtime.port.link_monitoring
        enabled = MonitorSettings(enabled=True, sf_threshold=5, sd_threshold=2)
        runtime.port.reconfigure(
            attrs.evolve(
                runtime.port.settings,
                link_monitoring=attrs.evolve(
                    lm.settings,
                    errored_symbol_period=enabled,
                    errored_frame_period=attrs.evolve(enabled, window=1000),
                    errored_frame_seconds=attrs.evolve(enabled, window=60.0),
                ),
            ),
            now=0.0,
        )
        runtime.port.take_outputs()
        if index % 2:
            raise_sf(runtime, built.telemetry)
    return built


def test_scrape_4096_ports(benchmark: Any, daemon: FakeDaemon) -> None:
    """What the daemon's endpoint does per GET /metrics (the loop waits during all but the join).

    Steady state: the endpoint's `Renderer` keeps each port's lines and redoes only those
    whose values changed; the first scrape after the start renders everything (measured
    in ``first_scrape_ms``).
    """
    started = time.perf_counter()
    render(daemon)
    first = time.perf_counter() - started
    renderer = Renderer()
    renderer.render(daemon)
    for runtime in daemon.ports.values():  # what changes every second: the Information OAMPDU counters
        runtime.port.stats.information_tx += 1
        runtime.port.stats.information_rx += 1
    body = benchmark.pedantic(renderer.render, args=(daemon,), rounds=10, iterations=1, warmup_rounds=1)
    benchmark.extra_info["first_scrape_ms"] = round(first * 1e3, 1)
    lines = sum(1 for line in body.splitlines() if not line.startswith(b"#"))
    assert lines > PORTS * 40
    benchmark.extra_info["ports"] = PORTS
    benchmark.extra_info["series"] = lines
    benchmark.extra_info["bytes"] = len(body)
    if benchmark.stats is not None:
        benchmark.extra_info["scrape_ms"] = round(benchmark.stats.stats.mean * 1e3, 1)


def test_http_scrape_4096_ports(benchmark: Any, daemon: FakeDaemon) -> None:
    """GET /metrics over loopback HTTP, as Prometheus does it."""
    server = MetricsServer(daemon, "127.0.0.1", 0)

    def get() -> bytes:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=30) as response:
            return bytes(response.read())

    try:
        body = benchmark.pedantic(get, rounds=10, iterations=1, warmup_rounds=1)
    finally:
        server.close()
    assert body.startswith(b"# HELP efmoam_oper_status")
    if benchmark.stats is not None:
        benchmark.extra_info["http_scrape_ms"] = round(benchmark.stats.stats.mean * 1e3, 1)


def test_prometheus_client_collector_4096_ports(benchmark: Any, daemon: FakeDaemon) -> None:
    """For comparison: the same metrics through prometheus_client (`PortCollector`): seconds."""
    if benchmark.disabled:
        pytest.skip("a benchmark (seconds per round): run with --benchmark-enable")
    registry = registry_for(daemon)
    body = benchmark.pedantic(generate_latest, args=(registry,), rounds=2, iterations=1)
    assert len(snapshot(daemon)) == PORTS and body
    if benchmark.stats is not None:
        benchmark.extra_info["prometheus_client_ms"] = round(benchmark.stats.stats.mean * 1e3, 1)
