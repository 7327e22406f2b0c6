"""What the NIC health monitors add to a Prometheus scrape of 4,096 ports (never asserted).

The fleet of tests/bench/test_metrics_bench.py (four monitors on, peers, half the ports
with a signal failure), built twice: health ``off``, and ``on`` with all five NIC health
monitors on every port (10 s windows, a known speed, each having closed windows: the
per-port series, the BER gauge and the fleet's histograms all there).  Measured per
scrape at both details, in two situations:

* ``steady``: between two scrapes only what changes every second on a healthy port
  changes (the Information counters, the peer's last OAMPDU), as in test_metrics_bench;
* ``windows``: besides, every monitor of every port closed a window (the worst case:
  every port's monitor lines are made again, and every health monitor adds to the
  histograms).

    pytest tests/bench/test_health_metrics_bench.py --benchmark-enable
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import count
from typing import Any

import attrs
import pytest

from efmoam.config.model import MetricsDetail
from efmoam.core.linkmon import CounterSample, MonitorSettings
from efmoam.core.linkmon.kinds import HEALTH
from efmoam.core.linkmon.settings import HealthSettings
from efmoam.daemon import heap
from efmoam.daemon.metrics import Renderer
from tests.bench.test_metrics_bench import PORTS, a_second_passes, series
from tests.metrics.support import FakeDaemon, FakeRuntime, discover, raise_sf

pytestmark = pytest.mark.bench

WINDOW = 10.0
CLOCK = count(100)  #: one step per round: every window closes at each


def build(health: bool) -> FakeDaemon:
    built = FakeDaemon()
    enabled = MonitorSettings(enabled=True, sf_threshold=5, sd_threshold=2)
    on = {facts.key: HealthSettings(enabled=True, window=WINDOW) for facts in HEALTH} if health else {}
    runtimes = []
    for index in range(PORTS):
        runtime = built.add(f"eth{index}", index)
        port = runtime.port
        monitors = attrs.evolve(
            port.link_monitoring.settings,
            errored_symbol_period=enabled,
            errored_frame_period=attrs.evolve(enabled, window=1000),
            errored_frame_seconds=attrs.evolve(enabled, window=60.0),
            **on,
        )
        port.reconfigure(attrs.evolve(port.settings, link_monitoring=monitors), now=0.0)
        port.set_speed(25_000, now=0.0)
        port.take_outputs()
        runtimes.append(runtime)
    for a, b in zip(runtimes[::2], runtimes[1::2], strict=True):
        discover(built, a, b)
    for runtime in runtimes[1::2]:
        raise_sf(runtime, built.telemetry)
    for _ in range(3):  # two windows closed by every monitor
        windows_close(built)
    return built


def windows_close(daemon: FakeDaemon) -> None:
    """One counter sample per port, a window after the last: every monitor's window closes."""
    step = next(CLOCK)
    for index, runtime in enumerate(daemon.ports.values()):
        sample = health_sample(runtime, step, index)
        runtime.port.on_counters(sample, now=step * WINDOW)
        runtime.port.take_outputs()


def health_sample(_runtime: FakeRuntime, step: int, index: int) -> CounterSample:
    """Cumulative counters growing at a rate that differs between ports (spread histograms)."""
    rate = 1 + index % 97
    return CounterSample(
        errored_frames=0, frames_received=step * 10_000, symbol_errors=0,
        fec_corrected_bits=step * rate * 10_000, fec_corrected_blocks=step * rate, fec_uncorrectable_blocks=0,
        pause_storm_events=0, pause_frames_received=step * rate, pause_frames_sent=0, carrier_down_count=0,
        ib_link_downed=0, ib_excessive_buffer_overrun_errors=0, ib_link_error_recovery=0,
        ib_local_link_integrity_errors=0,
    )  # fmt: skip


@pytest.fixture(scope="module", params=["off", "on"])
def fleet(request: pytest.FixtureRequest) -> Iterator[tuple[str, FakeDaemon]]:
    built = build(request.param == "on")
    heap.settle()
    yield request.param, built
    heap.release()


@pytest.mark.parametrize("situation", ["steady", "windows"])
@pytest.mark.parametrize("detail", [MetricsDetail.BASIC, MetricsDetail.FULL], ids=["basic", "full"])
def test_scrape_4096_ports_health(
    benchmark: Any, fleet: tuple[str, FakeDaemon], detail: MetricsDetail, situation: str
) -> None:
    health, daemon = fleet
    renderer = Renderer(detail)
    renderer.render(daemon)

    def setup() -> None:
        a_second_passes(daemon)
        if situation == "windows":
            windows_close(daemon)

    out = benchmark.pedantic(lambda: b"".join(renderer.render(daemon)), setup=setup, rounds=10, iterations=1)
    lines = out.count(b"\nefmoam_health_window_errors_bucket{")
    assert (lines > 0) is (health == "on") and (b"efmoam_pre_fec_bit_error_ratio{" in out) is (health == "on")
    benchmark.extra_info.update(health=health, series=series(out), bytes=len(out))
