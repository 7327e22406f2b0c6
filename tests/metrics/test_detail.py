"""``daemon.metrics.detail``: what basic keeps of a port, counted on real engines."""

from __future__ import annotations

import urllib.request
from collections import Counter

import attrs
import pytest
from prometheus_client.parser import text_string_to_metric_families

from efmoam.config.model import MetricsDetail
from efmoam.core.linkmon import CounterSample, MonitorSettings
from efmoam.daemon.metrics import MetricsServer, Renderer, render
from efmoam.daemon.metrics.schema import BASIC, FAMILIES
from tests.metrics.support import FakeDaemon, FakeRuntime, discover, raise_sf

BASIC_MOST = 20  #: series per port at basic detail, at most (with up to three reasons out of service)


def per_port(body: bytes) -> Counter[str]:
    """Distinct series per device."""
    series: Counter[str] = Counter()
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            if "device" in sample.labels:
                series[sample.labels["device"]] += 1
    return series


def all_monitors(runtime: FakeRuntime) -> None:
    port = runtime.port
    enabled = MonitorSettings(enabled=True, sf_threshold=5, sd_threshold=2)
    monitors = attrs.evolve(
        port.link_monitoring.settings,
        errored_symbol_period=enabled,
        errored_frame_period=attrs.evolve(enabled, window=1000),
        errored_frame_seconds=attrs.evolve(enabled, window=60.0),
    )
    port.reconfigure(attrs.evolve(port.settings, link_monitoring=monitors), now=0.0)
    port.take_outputs()


def fleet() -> tuple[FakeDaemon, list[FakeRuntime]]:
    """Four ports: two peered, one of them failed; one with every monitor on; one fresh."""
    daemon = FakeDaemon()
    ports = [daemon.add(f"eth{index}", index) for index in range(4)]
    all_monitors(ports[2])
    discover(daemon, ports[0], ports[1])
    raise_sf(ports[1], daemon.telemetry)
    ports[1].port.drops.update(truncated=3, loop=4)  # one broken OAMPDU reason, one not
    ports[1].rx_rate_limited = 5
    return daemon, ports


def test_basic_keeps_at_most_20_series_per_port_and_full_keeps_everything() -> None:
    daemon, _ = fleet()
    basic, full = per_port(render(daemon, MetricsDetail.BASIC)), per_port(render(daemon))
    # 14, and one per monitor (one, or all four on eth2)
    assert basic == {"eth0": 15, "eth1": 15, "eth2": 18, "eth3": 15}
    assert max(basic.values()) <= BASIC_MOST
    # fresh: 70; with a peer, its info and last OAMPDU; three more monitors, 6 each before a window closed
    assert full == {"eth0": 72, "eth1": 77, "eth2": 88, "eth3": 70}


def test_basic_is_a_subset_of_full_series_for_series() -> None:
    daemon, _ = fleet()

    def series(detail: MetricsDetail) -> set[tuple[str, frozenset[tuple[str, str]], float]]:
        return {
            (sample.name, frozenset(sample.labels.items()), sample.value)
            for family in text_string_to_metric_families(render(daemon, detail).decode())
            for sample in family.samples
            if not sample.name.startswith("process_")
        }

    basic, full = series(MetricsDetail.BASIC), series(MetricsDetail.FULL)
    assert basic < full
    names = {name for name, _, _ in basic}
    assert {"efmoam_rx_malformed_total", "efmoam_oper_status", "efmoam_build_info"} <= names
    assert ("efmoam_rx_malformed_total", frozenset({("device", "eth1")}), 3) in basic
    # state sets: the current state only
    assert ("efmoam_oper_status", frozenset({("device", "eth0"), ("status", "operational")}), 1) in basic
    assert not any(name == "efmoam_oper_status" and value == 0 for name, _, value in basic)
    failed = frozenset({("device", "eth1"), ("monitor", "errored_frame"), ("state", "failed")})
    assert ("efmoam_monitor_state", failed, 1) in basic


def test_basic_leaves_out_whole_families_without_their_headers() -> None:
    daemon, _ = fleet()
    text = render(daemon, MetricsDetail.BASIC).decode()
    left_out = [family for family in FAMILIES if family not in BASIC]
    assert len(left_out) >= 20
    lines = [line for line in text.splitlines() if not line.startswith("# HELP ")]
    for family in left_out:
        assert not any(line.startswith((f"{family.name} ", f"{family.name}{{")) for line in lines), family.name
        assert f"# TYPE {family.name} " not in text
    for family in BASIC:
        assert f"# TYPE {family.name} {family.type}\n" in text


def test_a_second_reason_out_of_service_adds_one_series() -> None:
    daemon, ports = fleet()
    port = ports[2].port  # every monitor on: 18 series
    for step in range(8):  # errored frames and symbols both above their SF thresholds
        sample = CounterSample(errored_frames=20 * step, frames_received=1000 + 100 * step, symbol_errors=step << 20)
        port.on_counters(sample, now=step * 1.1)
    port.take_outputs()
    assert port.service.reasons == ("local errored_symbol_event", "local errored_frame_event")
    assert per_port(render(daemon, MetricsDetail.BASIC))["eth2"] == 19 <= BASIC_MOST


@pytest.mark.parametrize("detail", list(MetricsDetail))
def test_the_kept_text_equals_a_fresh_rendering_at_either_detail(detail: MetricsDetail) -> None:
    daemon, ports = fleet()
    renderer = Renderer(detail)
    renderer.render(daemon)
    ports[0].port.stats.information_tx += 3
    raise_sf(ports[3], daemon.telemetry)
    ports[2].port.drops["too_long"] = 1
    kept = b"".join(renderer.render(daemon))
    fresh = render(daemon, detail)
    strip = lambda body: [line for line in body.splitlines() if not line.startswith(b"process_")]  # noqa: E731
    assert strip(kept) == strip(fresh)
    assert b'efmoam_rx_malformed_total{device="eth2"} 1\n' in kept


def test_the_endpoint_switches_detail_without_rebinding() -> None:
    daemon, _ = fleet()
    server = MetricsServer(daemon, "127.0.0.1", 0, MetricsDetail.BASIC)
    url = f"http://127.0.0.1:{server.port}/metrics"

    def scraped() -> Counter[str]:
        with urllib.request.urlopen(url, timeout=5) as response:
            return per_port(response.read())

    try:
        assert scraped()["eth0"] == 15
        server.detail = MetricsDetail.FULL
        assert server.detail is MetricsDetail.FULL
        assert scraped()["eth0"] > 60
        server.detail = MetricsDetail.BASIC
        assert scraped()["eth0"] == 15
    finally:
        server.close()
