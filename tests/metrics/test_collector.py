"""The collector: what a scrape shows of ports driven through real engines."""

from __future__ import annotations

import threading
import urllib.request

import attrs
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from efmoam.core.stats import OamStatistics
from efmoam.daemon.metrics import MetricsServer, registry_for, snapshot
from efmoam.daemon.views import OPER_STATUS_NAMES
from tests.metrics.support import WALL, FakeDaemon, raise_sf


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
    daemon.telemetry.last_peer_frame["eth0"] = 5.0
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
    assert value(found, "efmoam_counter_available", device="eth0", counter="errored_frames") == 1
    assert value(found, "efmoam_counter_available", device="eth0", counter="symbol_errors") == 0
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
    for now in (0.0, 1.0, 2.0, 3.0):  # two engines wired back to back
        for src, dst in ((a, b), (b, a)):
            src.port.handle_timer(now=now)
            for output in src.port.take_outputs():
                frame = getattr(output, "frame", None)
                if frame is not None:
                    dst.port.receive(frame, now=now)
                    daemon.telemetry.received(dst.name, dst.port, frame, now)
            dst.port.take_outputs()
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
        thread = threading.Thread(target=lambda: rows.extend(snapshot(daemon)))
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


def test_the_endpoint_renders_what_the_collector_collects() -> None:
    from efmoam.daemon.metrics import render

    daemon = FakeDaemon()
    runtime = daemon.add("eth0")
    daemon.add('we"ird\\name', 1)
    raise_sf(runtime, daemon.telemetry)
    runtime.port.drops["truncated"] = 2
    runtime.action_error = "nft failed"
    daemon.telemetry.last_peer_frame["eth0"] = 5.25

    def parsed(text: str) -> tuple[set[tuple[str, frozenset[tuple[str, str]], float]], dict[str, str]]:
        found, types = set(), {}
        for family in text_string_to_metric_families(text):
            types[family.name] = family.type
            for sample in family.samples:
                found.add((sample.name, frozenset(sample.labels.items()), sample.value))
        return found, types

    fast, fast_types = parsed(render(daemon).decode())
    slow, slow_types = parsed(generate_latest(registry_for(daemon)).decode())
    assert fast == slow
    assert fast_types == slow_types
