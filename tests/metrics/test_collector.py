"""The collector: what a scrape shows of ports driven through real engines."""

from __future__ import annotations

import gzip
import sys
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import attrs
import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from efmoam.config.model import MetricsDetail, PortProfile
from efmoam.core.stats import OamStatistics
from efmoam.daemon.main import GIL_SWITCH_INTERVAL
from efmoam.daemon.metrics import MetricsServer, Renderer, registry_for, render, snapshot
from efmoam.daemon.metrics.exposition import BATCH
from efmoam.views.data import OPER_STATUS_NAMES
from tests.metrics.support import WALL, FakeDaemon, discover, raise_sf, steady


def samples(daemon: FakeDaemon) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    text = generate_latest(registry_for(daemon)).decode()
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def value(found: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return found[(name, frozenset(labels.items()))]


def test_a_fresh_port() -> None:
    daemon = FakeDaemon()
    daemon.add("eth0")
    found = samples(daemon)
    statuses = {labels: v for (name, labels), v in found.items() if name == "efmoam_oper_status"}
    assert len(statuses) == len(OPER_STATUS_NAMES) == 10
    assert sum(statuses.values()) == 1
    assert value(found, "efmoam_oper_status", device="eth0", status="activeSendLocal") == 1
    assert value(found, "efmoam_port_out_of_service", device="eth0", reason="") == 0  # Prometheus drops ""
    for field in ("information_rx", "unsupported_codes_rx", "frames_lost_due_to_oam"):
        assert value(found, f"efmoam_{field}_total", device="eth0") == 0
    stats = {f"efmoam_{attribute.name}_total" for attribute in attrs.fields(OamStatistics)}
    assert len(stats) == 17
    assert stats <= {name for name, _ in found}
    for reason in ("rate_limit", "loop", "second_peer"):
        assert value(found, "efmoam_rx_dropped_total", device="eth0", reason=reason, malformed="false") == 0
    assert not any(name == "efmoam_peer_info" for name, _ in found)
    assert not any(name == "efmoam_last_peer_oampdu_timestamp_seconds" for name, _ in found)


def test_a_signal_failure() -> None:
    daemon = FakeDaemon()
    runtime = daemon.add("eth0")
    daemon.add("eth1", 1)
    raise_sf(runtime, daemon.telemetry)
    runtime.rx_rate_limited = 7
    runtime.port.drops["truncated"] = 2
    runtime.peer_heard_at = 5.0
    found = samples(daemon)
    reason = "local errored_frame_event"
    assert value(found, "efmoam_port_out_of_service", device="eth0", reason=reason) == 1
    assert value(found, "efmoam_port_out_of_service", device="eth1", reason="") == 0
    assert value(found, "efmoam_active_events", device="eth0", location="local", severity="sf") == 1
    assert value(found, "efmoam_active_events", device="eth1", location="local", severity="sf") == 0
    monitor = {"device": "eth0", "monitor": "errored_frame"}
    assert value(found, "efmoam_monitor_state", state="failed", **monitor) == 1
    assert value(found, "efmoam_monitor_state", state="ok", **monitor) == 0
    assert value(found, "efmoam_monitor_errors_total", **monitor) == 20
    assert value(found, "efmoam_monitor_events_total", **monitor) == 1
    assert value(found, "efmoam_link_stat_available", device="eth0", stat="errored_frames") == 1
    assert value(found, "efmoam_link_stat_available", device="eth0", stat="symbol_errors") == 0
    assert value(found, "efmoam_rx_dropped_total", device="eth0", reason="rate_limit", malformed="false") == 7
    assert value(found, "efmoam_rx_dropped_total", device="eth0", reason="truncated", malformed="true") == 2
    assert value(found, "efmoam_last_peer_oampdu_timestamp_seconds", device="eth0") == WALL + 5.0


def test_events_raised_are_counted() -> None:
    from efmoam.core.outputs import EventLogged

    daemon = FakeDaemon()
    runtime = daemon.add("eth0")
    port = runtime.port
    from efmoam.core.linkmon import CounterSample

    logged = []
    for now, errors in ((0.0, 0), (1.1, 3), (2.2, 6), (3.3, 9)):  # three windows of 3 errors: SD 2, SF 5
        port.on_counters(CounterSample(errored_frames=errors, frames_received=1000), now=now)
        logged += [o for o in port.take_outputs() if isinstance(o, EventLogged)]
    for output in logged:
        daemon.telemetry.event_logged("eth0", output)
    found = samples(daemon)
    raised = sum(1 for output in logged if output.entry.active and output.entry.severity.value == "sd")
    assert raised >= 1
    assert value(found, "efmoam_events_total", device="eth0", location="local", severity="sd") == raised


def test_the_peer_info() -> None:
    daemon = FakeDaemon()
    a, b = daemon.add("eth0", 1), daemon.add("eth1", 2)
    discover(daemon, a, b)
    found = samples(daemon)
    assert value(found, "efmoam_oper_status", device="eth0", status="operational") == 1
    info = [dict(labels) for name, labels in found if name == "efmoam_peer_info" and ("device", "eth0") in labels]
    assert info == [
        {"device": "eth0", "mac": b.port.mac, "oui": "00:00:00", "vendor_info": "0x00000000", "mode": "active"}
    ]
    assert value(found, "efmoam_last_peer_oampdu_timestamp_seconds", device="eth0") >= WALL


def test_a_scrape_waits_for_the_loop() -> None:
    daemon = FakeDaemon()
    daemon.add("eth0")
    rows: list[object] = []
    with daemon.lock:
        thread = threading.Thread(target=lambda: rows.extend(snapshot(daemon)[0]))
        thread.start()
        thread.join(0.2)
        assert thread.is_alive() and not rows  # blocked while the loop holds the lock
    thread.join(5)
    assert len(rows) == 1


def test_the_http_endpoint() -> None:
    daemon = FakeDaemon()
    daemon.add("eth0")
    server = MetricsServer(daemon, "127.0.0.1", 0)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=5) as response:
            text = response.read().decode()
    finally:
        server.close()
    assert 'efmoam_oper_status{device="eth0",status="activeSendLocal"} 1\n' in text
    assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")


@pytest.mark.parametrize("detail", list(MetricsDetail))
def test_the_endpoint_renders_what_the_collector_collects(detail: MetricsDetail) -> None:
    daemon = FakeDaemon()
    runtime = daemon.add("eth0")
    daemon.add('we"ird\\name', 1)
    raise_sf(runtime, daemon.telemetry)
    runtime.port.drops["truncated"] = 2
    runtime.action_error = "nft failed"
    runtime.peer_heard_at = 5.25

    def parsed(text: str) -> tuple[set[tuple[str, frozenset[tuple[str, str]], float]], dict[str, str]]:
        found, types = set(), {}
        for family in text_string_to_metric_families(text):
            types[family.name] = family.type
            for sample in family.samples:
                moving = sample.name.startswith("process_")  # the process's CPU and memory: read twice
                found.add((sample.name, frozenset(sample.labels.items()), 0 if moving else sample.value))
        return found, types

    fast, fast_types = parsed(render(daemon, detail).decode())
    slow, slow_types = parsed(generate_latest(registry_for(daemon, detail)).decode())
    assert fast == slow
    assert fast_types == slow_types
    assert ("efmoam_port_action_failed", frozenset({("device", "eth0")}), 1) in fast


def test_a_port_that_should_have_a_peer() -> None:
    daemon = FakeDaemon()
    daemon.add("eth0").profile = PortProfile(expect_peer=True)
    daemon.add("eth1", 1)
    found = samples(daemon)
    assert value(found, "efmoam_peer_expected", device="eth0") == 1
    assert value(found, "efmoam_peer_expected", device="eth1") == 0


def test_gzip_is_served_when_asked_and_holds_the_same_text() -> None:
    daemon = FakeDaemon()
    for index in range(3):
        daemon.add(f"eth{index}", index)
    server = MetricsServer(daemon, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.port}/metrics"
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            plain = steady(response.read())
            assert response.headers["Content-Encoding"] is None
        for accept in ("gzip", "deflate, gzip;q=0.5", "br, GZIP"):
            request = urllib.request.Request(url, headers={"Accept-Encoding": accept})
            with urllib.request.urlopen(request, timeout=5) as response:
                assert response.headers["Content-Encoding"] == "gzip"
                assert steady(gzip.decompress(response.read())) == plain
        for accept in ("gzip;q=0", "deflate", "identity"):
            request = urllib.request.Request(url, headers={"Accept-Encoding": accept})
            with urllib.request.urlopen(request, timeout=5) as response:
                assert response.headers["Content-Encoding"] is None
                assert steady(response.read()) == plain
    finally:
        server.close()


def test_an_unknown_path_is_not_found() -> None:
    daemon = FakeDaemon()
    server = MetricsServer(daemon, "127.0.0.1", 0)
    try:
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(f"http://127.0.0.1:{server.port}/other", timeout=5)
        assert caught.value.code == 404
    finally:
        server.close()


class CountingLock:
    """A lock that counts the ports read while it is held (by a `WatchedRuntime`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.held = False
        self.reads = 0
        self.most_reads_per_hold = 0

    def __enter__(self) -> None:
        self._lock.acquire()
        self.held, self.reads = True, 0

    def __exit__(self, *_: object) -> None:
        self.most_reads_per_hold = max(self.most_reads_per_hold, self.reads)
        self.held = False
        self._lock.release()


class WatchedRuntime:
    """A port's runtime whose engine may be read only under a `CountingLock`."""

    def __init__(self, runtime: Any, lock: CountingLock) -> None:
        self._runtime, self._lock = runtime, lock

    @property
    def port(self) -> Any:
        assert self._lock.held, "a port read without the daemon's lock"
        self._lock.reads += 1
        return self._runtime.port

    def __getattr__(self, name: str) -> Any:  # the rest of the runtime, as it is
        return getattr(self._runtime, name)


def test_a_scrape_reads_every_port_under_the_lock_a_batch_at_a_time() -> None:
    daemon = FakeDaemon()
    lock = CountingLock()
    daemon.lock = lock  # type: ignore[assignment]
    for index in range(BATCH * 2 + 7):
        daemon.add(f"eth{index}", index)
    daemon.ports = {name: WatchedRuntime(runtime, lock) for name, runtime in daemon.ports.items()}  # type: ignore[misc]
    body = Renderer().render(daemon)  # type: ignore[arg-type]
    assert b"".join(body).count(b'efmoam_oper_status{device="eth%d",status="operational"} 0\n' % (BATCH * 2 + 6)) == 1
    reads_per_port = lock.most_reads_per_hold / BATCH
    assert 1 <= reads_per_port <= 20  # every group reads .port a few times; one batch per hold


def fresh_and_cached_agree(daemon: FakeDaemon, renderer: Renderer) -> None:
    cached = steady(b"".join(renderer.render(daemon)))
    assert cached == steady(render(daemon))
    assert steady(gzip.decompress(b"".join(renderer.render(daemon, compressed=True)))) == cached


def test_the_kept_lines_always_equal_a_fresh_rendering() -> None:
    """Whatever changes between scrapes, the endpoint's kept text equals one made from scratch."""
    daemon = FakeDaemon()
    renderer = Renderer()
    ports = [daemon.add(f"eth{index}", index) for index in range(4)]
    fresh_and_cached_agree(daemon, renderer)
    discover(daemon, ports[0], ports[1])
    fresh_and_cached_agree(daemon, renderer)
    ports[2].port.stats.information_tx += 5
    ports[2].peer_heard_at = 7.5
    fresh_and_cached_agree(daemon, renderer)
    raise_sf(ports[3], daemon.telemetry)
    ports[3].action_error = "nft: no such table"
    fresh_and_cached_agree(daemon, renderer)
    ports[3].port.clear_events(now=10.0)  # the SF clears: out of service no more
    ports[3].port.take_outputs()
    ports[3].action_error = None
    ports[2].port.drops["truncated"] = 1
    ports[2].rx_rate_limited = 4
    fresh_and_cached_agree(daemon, renderer)
    del daemon.ports["eth1"]  # a port goes
    daemon.add('we"ird%d\\name', 9)  # and one comes, with every character the format escapes
    ports[0].profile = PortProfile(expect_peer=True)
    fresh_and_cached_agree(daemon, renderer)
    daemon.ports = dict(reversed(daemon.ports.items()))  # the same ports in another order
    fresh_and_cached_agree(daemon, renderer)
    daemon.ports.clear()
    fresh_and_cached_agree(daemon, renderer)


def test_the_loop_runs_while_a_scrape_reads_the_ports() -> None:
    """Between two batches a scrape lets the loop, waiting for the lock, take it.

    A thread plays the loop (wake up every 2 ms, take the lock, work briefly) while the
    endpoint renders many ports; the loop must get the lock several times during one
    scrape (without the hand-over it gets it once, after the scrape).  Run with the
    daemon's GIL switch interval.
    """
    daemon = FakeDaemon()
    for index in range(BATCH * 8):
        daemon.add(f"eth{index}", index)
    renderer = Renderer()
    renderer.render(daemon)
    during: list[float] = []
    scraping = threading.Event()
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            time.sleep(0.002)
            with daemon.lock:
                if scraping.is_set():
                    during.append(time.perf_counter())

    old_switch = sys.getswitchinterval()
    sys.setswitchinterval(GIL_SWITCH_INTERVAL)
    thread = threading.Thread(target=loop)
    thread.start()
    try:
        for port in daemon.ports.values():  # every port's counters change: a full scrape's work
            port.port.stats.information_tx += 1
        scraping.set()
        started = time.perf_counter()
        renderer.render(daemon)
        took = time.perf_counter() - started
        scraping.clear()
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(old_switch)
    assert len(during) >= 3, f"the loop ran {len(during)} times during a {took * 1e3:.0f} ms scrape"
