"""A real daemon's scrape: ``promtool check metrics`` passes at both details, the series per
port are counted, a reload switches the detail, and the process metrics match what the
kernel says of the daemon's process (ps, prlimit, /proc/PID/fd)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import urllib.request
from collections import Counter

import pytest
from prometheus_client.parser import text_string_to_metric_families

from efmoam.daemon.metrics.schema import BASIC, PRE_FEC_BER
from tests.daemon.lab import Lab, efmoam
from tests.linux.netns import in_netns

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool (apt-get install prometheus)"),
]

METRICS_PORT = 9719
ALL_MONITORS = {
    "errored_frame_period": {"enabled": True},
    "errored_frame_seconds": {"enabled": True, "window": 60},
    "errored_symbol_period": {"enabled": True, "window": 1},
}


def scrape(lab: Lab) -> str:
    def get() -> bytes:
        with urllib.request.urlopen(f"http://127.0.0.1:{METRICS_PORT}/metrics", timeout=5) as response:
            return bytes(response.read())

    return in_netns(lab.ns_a, get).decode()


def promtool_check(text: str) -> None:
    result = subprocess.run(
        ["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0 and not result.stdout and not result.stderr, result.stdout + result.stderr


def series(text: str) -> tuple[Counter[str], dict[str, float], dict[str, dict[str, str]]]:
    """Distinct series per device; the unlabelled samples by name; the labels of the info ones."""
    per_port: Counter[str] = Counter()
    plain, info = {}, {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if "device" in sample.labels:
                per_port[sample.labels["device"]] += 1
            elif sample.name.endswith("_info"):
                info[sample.name] = sample.labels
            elif not sample.labels:
                plain[sample.name] = sample.value
    return per_port, plain, info


def ps(pid: int, field: str) -> str:
    return subprocess.run(["ps", "-o", f"{field}=", "-p", str(pid)], capture_output=True, text=True, check=True).stdout


def test_a_real_scrape_at_full_then_basic_detail(lab: Lab) -> None:
    metrics = {"enabled": True, "address": "127.0.0.1", "port": METRICS_PORT, "detail": "full"}
    lab.a.overrides = {"daemon": {"metrics": metrics}, "defaults": {"link_monitoring": ALL_MONITORS}}
    lab.start()
    lab.a.set_counters(errored_frames=20, frames_received=2000)  # a signal failure: one reason out of service
    lab.wait_for(lambda: lab.a.fast_port()["out_of_service"], 10, "A out of service")
    time.sleep(1.5)  # every monitor with a window of a second or less closed one

    full = scrape(lab)
    promtool_check(full)
    per_port, plain, info = series(full)
    # 76 with errored_frame alone (README, "Running a fleet"); the three other monitors 6 each
    # until they close a window (no frames or symbols counted here: they do not), 7 after
    assert per_port["veth0"] == 76 + 3 * 6, per_port

    pid = lab.a.pid
    started = time.time() - int(ps(pid, "etimes"))
    assert abs(plain["process_start_time_seconds"] - started) <= 2
    assert abs(plain["process_cpu_seconds_total"] - lab.a.cpu_seconds()) <= 0.5
    assert abs(plain["process_resident_memory_bytes"] / 1024 - int(ps(pid, "rss"))) <= 4096
    assert abs(plain["process_virtual_memory_bytes"] / 1024 - int(ps(pid, "vsz"))) <= 4096
    limit = subprocess.run(["prlimit", "--pid", str(pid), "--nofile", "-o", "SOFT", "--noheadings"],
                           capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert plain["process_max_fds"] == int(limit)
    assert abs(plain["process_open_fds"] - len(os.listdir(f"/proc/{pid}/fd"))) <= 2
    assert info["efmoam_build_info"]["version"] == efmoam("--version").stdout.split()[-1]

    lab.a.overrides["daemon"]["metrics"]["detail"] = "basic"
    lab.a.write_config()
    assert lab.a.query("reload") == {"reloaded": True}
    basic = scrape(lab)
    promtool_check(basic)
    per_port, plain, _ = series(basic)
    assert per_port["veth0"] == 18, per_port  # 14, and one per monitor: at most 20
    names = {sample.name for family in text_string_to_metric_families(basic) for sample in family.samples}
    # every family basic keeps, but the BER gauge: no fec_corrected here (test_health_scrape.py has it)
    assert {family.name for family in BASIC} - {PRE_FEC_BER.name} <= names
    assert "process_cpu_seconds_total" in plain
    assert len(lab.a.log_lines("metrics served")) == 1  # the endpoint stayed bound
