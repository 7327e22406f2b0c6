"""The NIC health monitors in the metrics, on real engines: the fleet's histogram per monitor
(merged over ports, cumulative, never going back), the pre-FEC BER gauge, the monitors'
per-port series and what ``detail: basic`` keeps of them; a real endpoint's scrape checked by
promtool; and the event log line naming the monitor."""

from __future__ import annotations

import io
import itertools
import re
import shutil
import subprocess
import urllib.request
from typing import Any

import attrs
import pytest
import yaml
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from efmoam.config.model import EventStreamConfig, MetricsDetail
from efmoam.core.linkmon import CounterSample
from efmoam.core.linkmon.kinds import HEALTH, HealthKind
from efmoam.core.linkmon.monitors import HealthMonitor
from efmoam.core.linkmon.settings import HealthSettings
from efmoam.core.outputs import EventLogged
from efmoam.daemon.eventstream import EventStream
from efmoam.daemon.journal import Journal
from efmoam.daemon.metrics import MetricsServer, Renderer, registry_for, render
from efmoam.daemon.metrics.fleet import BOUNDS, HealthHistograms
from efmoam.daemon.metrics.schema import HEALTH_WINDOWS
from efmoam.daemon.metrics.telemetry import Telemetry
from efmoam.daemon.runtime import OUTPUT_HANDLERS
from tests.metrics.support import FakeDaemon, FakeRuntime, raise_sf, steady
from tests.metrics.test_rules import RULES

HISTOGRAM = HEALTH_WINDOWS.name
BER = "efmoam_pre_fec_bit_error_ratio"
WINDOW = 10.0
SPEED = 25_000  #: Mb/s: a 10 s window carries 2.5e11 bits
Found = dict[tuple[str, frozenset[tuple[str, str]]], float]


def enable(runtime: FakeRuntime, **monitors: Any) -> None:  # HealthSettings by key
    port = runtime.port
    settings = attrs.evolve(port.link_monitoring.settings, **monitors)
    port.reconfigure(attrs.evolve(port.settings, link_monitoring=settings), now=0.0)
    port.take_outputs()


def with_health(daemon: FakeDaemon, name: str, index: int, speed: int | None = SPEED) -> FakeRuntime:
    """A port running fec_corrected and link_flaps (10 s windows), at `speed`."""
    runtime = daemon.add(name, index)
    on = HealthSettings(enabled=True, window=WINDOW)
    enable(runtime, fec_corrected=attrs.evolve(on, sf_threshold=1e10), link_flaps=attrs.evolve(on, sf_threshold=1e4))
    runtime.port.set_speed(speed, now=0.0)
    return runtime


def windows(runtime: FakeRuntime, bits: list[int], flaps: list[int], start: float = 0.0) -> None:
    """A baseline sample at `start`, then one per window, adding `bits` and `flaps`."""
    port, total_bits, total_flaps = runtime.port, 0, 0
    samples = [(0, 0), *zip(bits, flaps, strict=True)]
    for step, (more_bits, more_flaps) in enumerate(samples):
        total_bits, total_flaps = total_bits + more_bits, total_flaps + more_flaps
        sample = CounterSample(
            errored_frames=0, frames_received=0, fec_corrected_bits=total_bits, carrier_down_count=total_flaps
        )
        port.on_counters(sample, now=start + step * WINDOW)
    port.take_outputs()


def parsed(text: str) -> Found:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def histogram(found: Found, monitor: str) -> tuple[list[tuple[str, float]], float, float]:
    """(le, cumulative count) per bucket in exposition order, the sum and the count of `monitor`."""
    buckets = [
        (dict(labels)["le"], value)
        for (name, labels), value in found.items()
        if name == f"{HISTOGRAM}_bucket" and ("monitor", monitor) in labels
    ]
    single = frozenset({("monitor", monitor)})
    return buckets, found[(f"{HISTOGRAM}_sum", single)], found[(f"{HISTOGRAM}_count", single)]


def two_ports() -> tuple[FakeDaemon, FakeRuntime, FakeRuntime]:
    """eth0 and eth1 with known windows (rates of corrected bits per second; flaps per window)."""
    daemon = FakeDaemon()
    eth0, eth1 = with_health(daemon, "eth0", 0), with_health(daemon, "eth1", 1)
    daemon.add("eth2", 2)  # no health monitor
    windows(eth0, bits=[0, 250_000], flaps=[0, 1])  # 0 and 25,000 bits/s; 0 and 1 flap
    windows(eth1, bits=[2_500_000, 25_000_000_000], flaps=[3, 60])  # 250,000 and 2.5e9 bits/s
    return daemon, eth0, eth1


#: what two_ports' windows make, merged: per monitor its cumulative buckets, sum and count
FEC_CUMULATIVE = [1, 1, 1, 1, 1, 1, 2, 3, 3, 3, 3, 4]  # le 0 .. 1e9, +Inf (2.5e9 bits/s)
FLAPS_CUMULATIVE = [1, 2, 2, 3, 3, 3, 3, 3, 4, 4, 4]  # le 0, 1, 2, 3, 5, 10, 20, 50, 100, 1000, +Inf
FEC_SUM, FLAPS_SUM = 25_000.0 + 250_000.0 + 2.5e9, 64.0


def test_the_histogram_is_merged_over_ports_cumulative_and_consistent() -> None:
    daemon, _, _ = two_ports()
    found = parsed(render(daemon).decode())
    buckets, total, count = histogram(found, "fec_corrected")
    assert buckets == list(zip(BOUNDS["fec_corrected"], FEC_CUMULATIVE, strict=True))
    assert [le for le, _ in buckets][-4:] == ["1e+07", "1e+08", "1e+09", "+Inf"]
    assert (total, count) == (FEC_SUM, 4) and count == buckets[-1][1]
    buckets, total, count = histogram(found, "link_flaps")
    assert [n for _, n in buckets] == FLAPS_CUMULATIVE
    assert (total, count) == (FLAPS_SUM, 4) == (total, buckets[-1][1])
    assert all(a <= b for (_, a), (_, b) in itertools.pairwise(buckets))
    # one series set per monitor, none per port; only the monitors some port runs
    assert not any("device" in dict(labels) for name, labels in found if name.startswith(HISTOGRAM))
    assert {dict(labels)["monitor"] for name, labels in found if name == f"{HISTOGRAM}_count"} == {
        "fec_corrected",
        "link_flaps",
    }


def test_no_health_monitor_no_histogram() -> None:
    daemon = FakeDaemon()
    raise_sf(daemon.add("eth0"), daemon.telemetry)
    text = render(daemon).decode()
    assert HISTOGRAM not in text and f"\n{BER}{{" not in text


def test_a_monitor_appears_at_zero_before_its_first_window() -> None:
    daemon = FakeDaemon()
    with_health(daemon, "eth0", 0)
    buckets, total, count = histogram(parsed(render(daemon).decode()), "link_flaps")
    assert len(buckets) == len(BOUNDS["link_flaps"]) and {n for _, n in buckets} == {0} and (total, count) == (0, 0)


def test_the_histogram_never_goes_back() -> None:
    """A port removed, a monitor disabled and enabled again, events cleared, a port made anew:
    each scrape's counts are at least the previous one's, and nothing is counted twice."""
    daemon, eth0, _ = two_ports()
    renderer = Renderer()

    def counts() -> tuple[list[float], float]:
        buckets, total, _ = histogram(parsed(b"".join(renderer.render(daemon)).decode()), "fec_corrected")
        return [n for _, n in buckets], total

    assert counts() == (FEC_CUMULATIVE, FEC_SUM)
    del daemon.ports["eth1"]  # its two windows stay counted
    assert counts() == (FEC_CUMULATIVE, FEC_SUM)
    enable(eth0, fec_corrected=HealthSettings(enabled=False))
    assert counts() == (FEC_CUMULATIVE, FEC_SUM)
    enable(eth0, fec_corrected=HealthSettings(enabled=True, window=WINDOW, sf_threshold=1e10))
    eth0.port.clear_events(now=30.0)
    eth0.port.take_outputs()
    assert counts() == (FEC_CUMULATIVE, FEC_SUM)  # enabled again: not counted twice
    windows(eth0, bits=[2_500], flaps=[0], start=30.0)  # one more window: 250 bits/s (le 1000)
    more = [n + (1 if at >= 4 else 0) for at, n in enumerate(FEC_CUMULATIVE)]
    assert counts() == (more, FEC_SUM + 250.0)
    eth1 = with_health(daemon, "eth1", 1)  # the same name, a new engine: its windows add up
    windows(eth1, bits=[0], flaps=[0])
    assert counts() == ([n + 1 for n in more], FEC_SUM + 250.0)
    assert counts() == ([n + 1 for n in more], FEC_SUM + 250.0)  # scraped again: the same


def test_a_monitor_whose_counts_fell_counts_anew() -> None:
    """The core never resets a histogram; were one to fall, the daemon's would still not."""
    histograms = HealthHistograms()
    monitor = HealthMonitor(HealthKind.LINK_FLAPS, HealthSettings(enabled=True))
    monitor.histogram[1], monitor.histogram_sum = 3, 3.0  # three windows of one flap
    histograms.observe([monitor])
    monitor.histogram[1], monitor.histogram_sum = 1, 1.0  # back to one: a new start
    histograms.observe([monitor])
    ((key, buckets, total),) = histograms.merged()
    assert (key, buckets[1], buckets[-1], total) == ("link_flaps", ("1.0", 4), ("+Inf", 4), 4.0)


def test_the_endpoint_and_the_collector_share_the_histogram() -> None:
    """Both read the ports into the one `Telemetry` instance: neither counts a window twice."""
    daemon, _, _ = two_ports()
    via_collector = parsed(generate_latest(registry_for(daemon)).decode())
    via_endpoint = parsed(render(daemon).decode())
    for found in (via_collector, via_endpoint):
        buckets, total, count = histogram(found, "fec_corrected")
        assert ([n for _, n in buckets], total, count) == (FEC_CUMULATIVE, FEC_SUM, 4)


def test_the_pre_fec_ber_gauge() -> None:
    daemon, _, _ = two_ports()
    blocks = with_health(daemon, "eth3", 3)  # counts corrected codewords only: no BER
    unknown = with_health(daemon, "eth4", 4, speed=None)  # no speed: no BER
    for runtime in (blocks, unknown):
        port = runtime.port
        for step in range(3):
            codewords = None if runtime is unknown else step * 100
            bits = step * 1000 if runtime is unknown else None
            sample = CounterSample(
                errored_frames=0, frames_received=0, fec_corrected_bits=bits, fec_corrected_blocks=codewords
            )
            port.on_counters(sample, now=step * WINDOW)
        assert port.link_monitoring.running_health[0].histogram_count == 2
    found = parsed(render(daemon).decode())
    # the last window: 250,000 bits in 10 s at 25 Gb/s (2.5e11 bits); 2.5e10 of 2.5e11
    assert found[(BER, frozenset({("device", "eth0")}))] == pytest.approx(1e-6)
    assert found[(BER, frozenset({("device", "eth1")}))] == pytest.approx(0.1)
    assert {dict(labels)["device"] for name, labels in found if name == BER} == {"eth0", "eth1"}


def test_the_health_monitors_per_port() -> None:
    daemon, eth0, _ = two_ports()
    pause = HealthSettings(enabled=True, window=WINDOW)  # fatal: a storm event fails it
    enable(eth0, pause_storm=pause)
    for step, storms in enumerate((0, 0, 2)):
        sample = CounterSample(errored_frames=0, frames_received=0, pause_storm_events=storms)
        eth0.port.on_counters(sample, now=100.0 + step * WINDOW)
    eth0.port.take_outputs()
    found = parsed(render(daemon).decode())

    def value(name: str, **labels: str) -> float:
        return found[(name, frozenset({("device", "eth0"), *labels.items()}))]

    assert value("efmoam_monitor_state", monitor="pause_storm", state="failed") == 1
    assert value("efmoam_monitor_state", monitor="pause_storm", state="ok") == 0
    # those samples lack fec_corrected's counters: unavailable (its BER stays the last one known)
    assert value("efmoam_monitor_state", monitor="fec_corrected", state="unavailable") == 1
    assert value("efmoam_monitor_events_total", monitor="pause_storm") == 1
    assert value("efmoam_monitor_errors_total", monitor="link_flaps") == 1
    assert value("efmoam_monitor_window_errors", monitor="fec_corrected") == 250_000
    assert value("efmoam_active_events", location="local", severity="sf") == 1


def per_port(text: str) -> dict[str, set[str]]:
    series: dict[str, set[str]] = {}
    for (name, labels), _ in parsed(text).items():
        device = dict(labels).get("device")
        if device is not None:
            series.setdefault(device, set()).add(f"{name}{sorted(labels)}")
    return series


def test_basic_keeps_the_ber_and_the_current_state_of_each_health_monitor() -> None:
    daemon, _, _ = two_ports()
    every = daemon.add("eth5", 5)
    enable(every, **{facts.key: HealthSettings(enabled=True, window=WINDOW) for facts in HEALTH})
    every.port.set_speed(SPEED, now=0.0)
    windows(every, bits=[0, 1000], flaps=[0, 0])  # fec_corrected has a BER
    basic_text, full_text = render(daemon, MetricsDetail.BASIC).decode(), render(daemon).decode()
    basic, full = per_port(basic_text), per_port(full_text)
    # 14, errored_frame's state, 1 per health monitor, and the BER: 21 with all five
    assert {device: len(names) for device, names in basic.items()} == {
        "eth0": 18, "eth1": 18, "eth2": 15, "eth5": 21,
    }  # fmt: skip
    assert all(basic[device] < full[device] for device in basic)
    kept = parsed(basic_text)
    assert kept[(BER, frozenset({("device", "eth5")}))] == pytest.approx(1000 / 2.5e11)
    states = [dict(labels) for (name, labels), _ in kept.items() if name == "efmoam_monitor_state"]
    current = {state["monitor"]: state["state"] for state in states if state["device"] == "eth5"}
    # its samples had fec_corrected's and link_flaps' counters only: the others are unavailable
    assert current == {
        "errored_frame": "ok", "fec_corrected": "ok", "link_flaps": "ok",
        "fec_uncorrectable": "unavailable", "pause_storm": "unavailable", "ib_fatal": "unavailable",
    }  # fmt: skip
    assert not any(name == "efmoam_monitor_state" and value == 0 for (name, _), value in kept.items())
    assert not any(name.startswith("efmoam_monitor_events") for name, _ in kept)
    # the fleet's histogram is no per-port series: basic keeps it whole
    assert [line for line in basic_text.splitlines() if line.startswith(HISTOGRAM)] == [
        line for line in full_text.splitlines() if line.startswith(HISTOGRAM)
    ]


@pytest.mark.parametrize("detail", list(MetricsDetail))
def test_the_endpoint_renders_what_the_collector_collects(detail: MetricsDetail) -> None:
    daemon, _, _ = two_ports()
    renderer = Renderer(detail)
    renderer.render(daemon)
    fast = steady(b"".join(renderer.render(daemon))).decode()
    slow = steady(generate_latest(registry_for(daemon, detail))).decode()
    assert parsed(fast) == parsed(slow)
    types = {family.name: family.type for family in text_string_to_metric_families(fast)}
    assert types[HISTOGRAM] == "histogram" == {f.name: f.type for f in text_string_to_metric_families(slow)}[HISTOGRAM]


@pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool (apt-get install prometheus)")
def test_a_scrape_of_the_endpoint_passes_promtool() -> None:
    daemon, _, _ = two_ports()
    server = MetricsServer(daemon, "127.0.0.1", 0)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=5) as response:
            text = response.read().decode()
    finally:
        server.close()
    assert f"# TYPE {HISTOGRAM} histogram\n" in text and f'{BER}{{device="eth0"}} ' in text
    result = subprocess.run(
        ["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0 and not result.stdout and not result.stderr, result.stdout + result.stderr


def test_the_health_alert_reads_exactly_the_health_monitors() -> None:
    rules = yaml.safe_load(RULES.read_text())["groups"][0]["rules"]
    (expr,) = [rule["expr"] for rule in rules if rule.get("alert") == "EfmOamNicHealthFailure"]
    (alternatives,) = re.findall(r'monitor=~"([^"]+)"', expr)
    assert set(alternatives.split("|")) == {facts.key for facts in HEALTH}
    (ber,) = [rule for rule in rules if rule.get("alert") == "EfmOamPreFecBerHigh"]
    assert BER in ber["expr"] and ber["labels"]["severity"] == "warning"


# -- the log line ------------------------------------------------------------------------------


@attrs.define
class LoggingRuntime:
    """What the event-log handler uses of a `PortRuntime`: a real journal, stream and telemetry."""

    name: str
    journal: Journal
    services: Any = None

    def __attrs_post_init__(self) -> None:
        events = EventStream(EventStreamConfig())
        self.services = attrs.make_class("S", ["journal", "events", "telemetry", "snmp", "wall_clock_offset"])(
            self.journal, events, Telemetry(), None, 0.0
        )

    def log(self, _now: float, _kind: str, level: str, message: str, **fields: object) -> None:
        self.journal.log(level, message, port=self.name, **fields)

    limited = log


def test_the_event_log_line_names_the_health_monitor() -> None:
    daemon = FakeDaemon()
    runtime = with_health(daemon, "eth0", 0)
    enable(runtime, fec_uncorrectable=HealthSettings(enabled=True, window=WINDOW))
    logged: list[EventLogged] = []
    for step, lost in enumerate((0, 0, 3)):
        sample = CounterSample(errored_frames=20 * step, frames_received=1000 * step, fec_uncorrectable_blocks=lost)
        runtime.port.on_counters(sample, now=step * WINDOW)
        logged += [o for o in runtime.port.take_outputs() if isinstance(o, EventLogged)]
    stream = io.StringIO()
    logging = LoggingRuntime("eth0", Journal(stream, journald=False))
    for output in logged:
        OUTPUT_HANDLERS[EventLogged](logging, output, 20.0)  # type: ignore[arg-type]
    lines = stream.getvalue().splitlines()
    health = [line for line in lines if "type=nicHealthEvent" in line]
    standard = [line for line in lines if "type=erroredFrameEvent" in line]
    assert len(health) == 1 and len(standard) == 1, lines
    assert health[0].endswith(" monitor=fec_uncorrectable")
    assert "monitor=" not in standard[0]
