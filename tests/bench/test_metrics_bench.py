"""The cost of one Prometheus scrape of 4,096 ports (target: under 100 ms; never asserted).

Ports are real engines with link monitoring (four monitors on), wired in pairs that have
discovered each other (so every port has a peer), half of them with a signal failure on
one monitor; the heap is then settled as the daemon does (`efmoam.daemon.heap`).
Before every measured scrape, what changes every second on a real port changes: both
Information OAMPDU counters and the time of the peer's last OAMPDU.

Measured side by side: the endpoint's body (`Renderer.render`, the loop's lock held a
batch of ports at a time; plain and gzip) at ``detail: basic`` and ``full``, a GET over
loopback HTTP (plain and gzip, as Prometheus asks), and for comparison the same metrics
through prometheus_client's ``generate_latest`` with our custom collector.

    pytest tests/bench/test_metrics_bench.py --benchmark-enable

The figures are in ``extra_info`` (``--benchmark-json``) and in the benchmark table.
"""

from __future__ import annotations

import gzip
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from prometheus_client import generate_latest

from efmoam.config.model import MetricsDetail
from efmoam.core.linkmon import MonitorSettings
from efmoam.daemon import heap
from efmoam.daemon.metrics import MetricsServer, Renderer, registry_for, render, snapshot
from tests.metrics.support import FakeDaemon, discover, raise_sf

PORTS = 4096

pytestmark = pytest.mark.bench


@pytest.fixture(scope="module")
def daemon() -> Iterator[FakeDaemon]:
    built = FakeDaemon()
    enabled = MonitorSettings(enabled=True, sf_threshold=5, sd_threshold=2)
    runtimes = []
    for index in range(PORTS):
        runtime = built.add(f"eth{index}", index)
        port = runtime.port
        lm = port.link_monitoring.settings
        monitors = attrs.evolve(
            lm,
            errored_symbol_period=enabled,
            errored_frame_period=attrs.evolve(enabled, window=1000),
            errored_frame_seconds=attrs.evolve(enabled, window=60.0),
        )
        port.reconfigure(attrs.evolve(port.settings, link_monitoring=monitors), now=0.0)
        port.take_outputs()
        runtimes.append(runtime)
    for a, b in zip(runtimes[::2], runtimes[1::2], strict=True):
        discover(built, a, b)
    for runtime in runtimes[1::2]:
        raise_sf(runtime, built.telemetry)
    heap.settle()  # as the daemon does once its ports are set up (efmoam.daemon.heap)
    yield built
    heap.release()


def a_second_passes(daemon: FakeDaemon) -> None:
    """What changes on every port between two scrapes of a healthy fleet."""
    for runtime in daemon.ports.values():
        runtime.port.stats.information_tx += 1
        runtime.port.stats.information_rx += 1
        runtime.peer_heard_at = (runtime.peer_heard_at or 0.0) + 1.0


def series(body: bytes) -> int:
    return sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("detail", [MetricsDetail.BASIC, MetricsDetail.FULL], ids=["basic", "full"])
def test_scrape_4096_ports(benchmark: Any, daemon: FakeDaemon, detail: MetricsDetail, compressed: bool) -> None:
    """What the daemon's endpoint does per GET /metrics at `detail`, in the steady state.

    The first scrape after the start renders everything (``first_scrape_ms``).
    """
    started = time.perf_counter()
    body = render(daemon, detail)
    first = time.perf_counter() - started
    renderer = Renderer(detail)
    renderer.render(daemon, compressed=compressed)

    def scrape() -> bytes:
        return b"".join(renderer.render(daemon, compressed=compressed))

    out = benchmark.pedantic(scrape, setup=lambda: a_second_passes(daemon), rounds=15, iterations=1)
    plain = gzip.decompress(out) if compressed else out
    assert series(plain) == series(body)  # the same series as a fresh render
    if detail is MetricsDetail.FULL:
        assert series(plain) > PORTS * 60 and plain.count(b"efmoam_peer_info{") == PORTS
    else:  # four monitors on every port: 14 + 4
        assert PORTS * 18 <= series(plain) <= PORTS * 19 and b"efmoam_peer_info{" not in plain
    benchmark.extra_info.update(first_scrape_ms=round(first * 1e3, 1), series=series(plain), bytes=len(out))


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
def test_http_scrape_4096_ports(benchmark: Any, daemon: FakeDaemon, compressed: bool) -> None:
    """GET /metrics over loopback HTTP, as Prometheus does it (it accepts gzip)."""
    server = MetricsServer(daemon, "127.0.0.1", 0)
    headers = {"Accept-Encoding": "gzip"} if compressed else {}
    url = f"http://127.0.0.1:{server.port}/metrics"

    def get() -> bytes:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as response:
            assert (response.headers["Content-Encoding"] == "gzip") is compressed
            return bytes(response.read())

    try:
        body = benchmark.pedantic(get, setup=lambda: a_second_passes(daemon), rounds=15, iterations=1, warmup_rounds=1)
    finally:
        server.close()
    plain = gzip.decompress(body) if compressed else body
    assert plain.startswith(b"# HELP efmoam_oper_status")
    benchmark.extra_info["bytes"] = len(body)


def test_prometheus_client_collector_4096_ports(benchmark: Any, daemon: FakeDaemon) -> None:
    """For comparison: the same metrics through prometheus_client (`PortCollector`): seconds."""
    if benchmark.disabled:
        pytest.skip("a benchmark (seconds per round): run with --benchmark-enable")
    registry = registry_for(daemon)
    body = benchmark.pedantic(generate_latest, args=(registry,), rounds=2, iterations=1)
    assert len(snapshot(daemon)[0]) == PORTS
    assert series(body) == series(render(daemon))
