"""A real daemon's scrape with NIC health monitors fed by its counter file: the fleet's
histograms, the monitors' series, ``promtool check metrics``, and the log line naming the
monitor of a health failure."""

from __future__ import annotations

import shutil
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.daemon.lab import Lab
from tests.metrics.test_scrape import promtool_check, scrape

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool (apt-get install prometheus)"),
]

METRICS_PORT = 9719  # as test_scrape's `scrape` reads it
HISTOGRAM = "efmoam_health_window_errors"
HEALTH = {
    "fec_corrected": {"enabled": True, "window": 1, "sf_threshold": 1.0e12},
    "fec_uncorrectable": {"enabled": True, "window": 1},  # fatal: the first codeword lost fails it
    "link_flaps": {"enabled": True, "window": 1, "sf_threshold": 1000},
}


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_a_real_scrape_with_health_monitors(lab: Lab) -> None:
    metrics = {"enabled": True, "address": "127.0.0.1", "port": METRICS_PORT, "detail": "full"}
    lab.a.overrides = {"daemon": {"metrics": metrics}, "defaults": {"link_monitoring": HEALTH}}
    counters = {"fec_corrected_bits": 0, "fec_uncorrectable_blocks": 0, "carrier_down_count": 0}
    lab.a.set_counters(errored_frames=0, frames_received=0, **counters)
    lab.start()
    for step in range(1, 5):  # corrected bits and a flap in every window
        lab.a.set_counters(fec_corrected_bits=step * 1_000_000, carrier_down_count=step)
        time.sleep(0.6)

    def windows() -> float:
        found = samples(scrape(lab))
        return found.get((f"{HISTOGRAM}_count", frozenset({("monitor", "link_flaps")})), 0)

    lab.wait_for(lambda: windows() >= 2, 10, "two link_flaps windows")
    text = scrape(lab)
    promtool_check(text)
    found = samples(text)
    for monitor in HEALTH:
        buckets = [v for (name, labels), v in found.items() if name == f"{HISTOGRAM}_bucket" and
                   ("monitor", monitor) in labels]  # fmt: skip
        count = found[(f"{HISTOGRAM}_count", frozenset({("monitor", monitor)}))]
        assert buckets == sorted(buckets) and buckets[-1] == count >= 1, (monitor, buckets)
        state = frozenset({("device", "veth0"), ("monitor", monitor), ("state", "ok")})
        assert found[("efmoam_monitor_state", state)] == 1
    flaps = found[(f"{HISTOGRAM}_sum", frozenset({("monitor", "link_flaps")}))]
    assert 1 <= flaps <= 4  # one flap a step, counted in the windows closed so far
    # the BER of fec_corrected's last window: its corrected bits over 10 Gb/s (veth's speed)
    # times the window's length, a second and at most a few counter reads more
    veth0 = frozenset({("device", "veth0")})
    ber = found[("efmoam_pre_fec_bit_error_ratio", veth0)]
    bits = found[("efmoam_monitor_window_errors", frozenset({*veth0, ("monitor", "fec_corrected")}))]
    assert ber == 0 if bits == 0 else 1.0 <= bits / (ber * 10e9) <= 1.5, (bits, ber)

    lab.a.set_counters(fec_uncorrectable_blocks=2)  # a codeword lost: fatal
    (line,) = lab.wait_for(lambda: lab.a.log_lines(r"link event port=veth0 .*type=nicHealthEvent"), 10, "the event")
    assert " monitor=fec_uncorrectable" in line and "severity=sf" in line
    failed = frozenset({("device", "veth0"), ("monitor", "fec_uncorrectable"), ("state", "failed")})
    assert samples(scrape(lab))[("efmoam_monitor_state", failed)] == 1
    assert not any("monitor=" in line for line in lab.a.log_lines(r"link event port=veth0 .*type=errored"))
