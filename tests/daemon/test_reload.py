"""SIGHUP: a bad configuration is refused (reported with file:line:column) and the
running one stays; a good one is applied to the running ports."""

from __future__ import annotations

import re
import signal

import pytest

from tests.daemon.lab import Daemon, Lab, event_entries

pytestmark = pytest.mark.root


def reload(lab: Lab, side: Daemon, expect: str) -> str:
    """SIGHUP and wait for one more log entry matching `expect`; return it (all its lines)."""
    before = len(side.log_entries(expect))
    side.signal(signal.SIGHUP)
    entries = lab.wait_for(lambda: side.log_entries(expect)[before:], 5, f"a log entry /{expect}/")
    return entries[-1]


def errored_frame(side: Daemon) -> dict[str, object]:
    monitor = side.port()["link_monitoring"]["monitors"]["errored_frame"]
    assert isinstance(monitor, dict)
    return monitor


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        ("ports: [\n  - match: veth0\n    bogus: 1\n", r"YAML syntax error"),
        (None, r"sd.threshold"),  # sd_threshold 5 = sf_threshold 5
        ("daemon:\n  counter_interval: 0.2\n  counter_interval: 0.3\n", r"counter_interval"),
    ],
    ids=["invalid-yaml", "sd-not-below-sf", "duplicate-key"],
)
def test_bad_config_on_reload_keeps_the_running_one(lab: Lab, bad: str | None, problem: str) -> None:
    lab.start()
    revision = lab.a.port()["config_revision"]
    if bad is None:
        lab.a.overrides = {"defaults": {"link_monitoring": {"errored_frame": {"sd_threshold": 5}}}}
        lab.a.write_config()
    else:
        lab.a.write_config(bad)
    entry = reload(lab, lab.a, r"reload refused")
    assert re.match(r"\S+Z ERROR reload refused", entry), entry
    # each problem as file:line:column: key: message (on the entry's line or the next ones)
    path = re.escape(str(lab.a.config_path))
    problems = re.findall(rf"(?:^|[\s=\"]){path}:\d+:\d+: .*", entry, flags=re.M)
    assert problems, entry
    assert any(re.search(problem, found) for found in problems), entry
    assert lab.a.running
    view = lab.a.port()
    assert view["oper_status"] == "operational"
    assert view["config_revision"] == revision
    monitor = errored_frame(lab.a)
    assert (monitor["sf_threshold"], monitor["sd_threshold"]) == (5, 2)
    assert lab.b.port()["oper_status"] == "operational"
    assert not lab.a.log_lines(r"configuration reloaded")


def test_good_config_on_reload_is_applied(lab: Lab) -> None:
    lab.start()
    lab.a.write_config("this: is: not: yaml\n")
    reload(lab, lab.a, r"reload refused")
    lab.a.overrides = {"defaults": {"link_monitoring": {"errored_frame": {"sf_threshold": 7}}}}
    lab.a.write_config()
    line = reload(lab, lab.a, r"configuration reloaded")
    assert "ports=1" in line
    monitor = errored_frame(lab.a)
    assert (monitor["sf_threshold"], monitor["sd_threshold"]) == (7, 2)
    assert lab.a.port()["oper_status"] == "operational"
    # the monitor uses the new threshold: 6 errors were an SF under 5, are an SD under 7
    lab.a.set_counters(errored_frames=6, frames_received=2000)
    view = lab.wait_view(
        lab.a,
        lambda v: event_entries(v, location="local", type="erroredFrameEvent"),
        5,
        "A to log the errors",
    )
    [entry] = event_entries(view, location="local", type="erroredFrameEvent")
    assert (entry["severity"], entry["errors"], entry["threshold"]) == ("sd", 6, 2)
    assert not view["out_of_service"]
    assert not lab.block_table_present(lab.a)


def test_reload_to_log_only_lifts_the_block(lab: Lab) -> None:
    lab.start()
    lab.a.set_counters(errored_frames=20, frames_received=2000)
    lab.wait_view(lab.a, lambda v: v["out_of_service"], 5, "A out of service")
    assert lab.block_table_present(lab.a)
    lab.a.overrides = {"defaults": {"action_backend": "log-only"}}
    lab.a.write_config()
    reload(lab, lab.a, r"configuration reloaded")
    view = lab.a.port()
    assert view["action"]["backend"] == "log-only"
    assert view["out_of_service"], "the event is still active; only the backend changed"
    lab.wait_for(lambda: not lab.block_table_present(lab.a), 5, "the block to go (off the loop)")
    lab.wait_for(lambda: lab.ping(lab.a), 5, "ping to pass")


def test_reload_that_unmanages_a_blocked_port_lifts_the_block(lab: Lab) -> None:
    lab.start()
    lab.a.set_counters(errored_frames=20, frames_received=2000)
    lab.wait_view(lab.a, lambda v: v["out_of_service"], 5, "A out of service")
    lab.a.overrides = {"ports": [{"match": "nothing*"}]}
    lab.a.write_config()
    reload(lab, lab.a, r"configuration reloaded")
    assert lab.a.show()["ports"] == []
    assert lab.a.log_lines(r"port removed port=veth0 reason=\"no longer configured\"")
    lab.wait_for(lambda: not lab.block_table_present(lab.a), 5, "the block of an unmanaged port to go")
    assert lab.ping(lab.a)
