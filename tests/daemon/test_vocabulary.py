"""One vocabulary, end to end: one real daemon, one event (a counter file), and the same
event as `show port -f json`, `show port P event-log -f json`, the event stream, the log
line and the metrics show it: the same names, values and units (the README's "Field
reference")."""

from __future__ import annotations

import json
import re
import shlex
import time
from pathlib import Path
from typing import Any

import pytest

from efmoam.daemon.runtime import EVENT_LOG_FIELDS
from tests.daemon.lab import Lab, device_samples

pytestmark = pytest.mark.root

METRICS_PORT = 9721
RFC4878_OPER_STATUS = {
    "disabled", "linkFault", "passiveWait", "activeSendLocal", "sendLocalAndRemote", "sendLocalAndRemoteOk",
    "oamPeeringLocallyRejected", "oamPeeringRemotelyRejected", "operational", "nonOperHalfDuplex",
}  # fmt: skip


def fields(line: str) -> dict[str, str]:
    """The ``key=value`` fields of a log line (values quoted when they hold spaces)."""
    return dict(token.split("=", 1) for token in shlex.split(line) if "=" in token)


def as_logged(value: object) -> str:
    """A JSON value as the log spells it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def scrape(lab: Lab) -> dict[str, float]:
    return device_samples(lab, METRICS_PORT)


def records(path: Path, kind: str) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [r for r in map(json.loads, path.read_text().splitlines()) if r["kind"] == kind]


def test_one_event_is_named_the_same_everywhere(lab: Lab, tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    lab.a.overrides = {
        "daemon": {
            "event_stream": {"sink": "file", "path": str(events)},
            "metrics": {"enabled": True, "address": "127.0.0.1", "port": METRICS_PORT},
        }
    }
    lab.start()
    lab.a.set_counters(errored_frames=20, frames_received=10_000)
    view = lab.wait_view(
        lab.a, lambda v: any(e["active"] and e["severity"] == "sf" for e in v["event_log"]), 15, "the failure"
    )
    (entry,) = [e for e in view["event_log"] if e["active"] and e["severity"] == "sf"]
    monitor = view["link_monitoring"]["monitors"]["errored_frame"]

    # show port, show port P event-log and the event stream: the one view of the entry
    assert lab.a.show("veth0", "event-log")["event_log"] == view["event_log"]
    (raised,) = lab.wait_for(lambda: [r for r in records(events, "event") if r["event"]["active"]], 5, "the record")
    assert raised["event"] == entry
    assert (raised["time"], raised["monotonic"]) == (entry["time"], entry["monotonic"])
    assert raised["schema"] == 3 and view["schema"] == 2

    # units: the window in seconds everywhere (1 s configured, 10 on the wire in 100 ms units);
    # time the wall clock, monotonic the system's monotonic clock
    assert (entry["window_seconds"], entry["window_on_wire"], monitor["window_seconds"]) == (1.0, 10, 1.0)
    assert abs(entry["time"] - time.time()) < 60 and abs(entry["monotonic"] - time.monotonic()) < 60
    assert (entry["errors"], entry["threshold"], monitor["sf_threshold"]) == (20, 5, 5)
    assert entry["error_running_total"] == monitor["error_running_total"] == 20
    assert entry["event_running_total"] == monitor["event_running_total"]

    # the log line: the entry's names, and its values as the JSON has them
    (line,) = lab.a.log_lines(rf"link event port=veth0 .*index={entry['index']}\b")
    logged = fields(line)
    expected = {key: as_logged(entry[key]) for key in EVENT_LOG_FIELDS if entry[key] is not None}
    assert {key: logged.get(key) for key in expected} == expected
    assert logged["cause"] == raised["cause"] == "raised"
    assert not {"value", "window", "affects_port"} & set(logged)

    # the port action: backend and reasons, in the log, the stream and show port
    (action,) = lab.wait_for(lambda: records(events, "port_action"), 5, "the port action record")
    (out_line,) = lab.a.log_lines(r"port out of service port=veth0 ")
    out = fields(out_line)
    assert out["backend"] == action["backend"] == view["action"]["backend"] == "block"
    assert out["reasons"].split(",") == action["reasons"] == view["out_of_service_reasons"]

    # discovery: the log's oper_status is the RFC 4878 name the JSON and the metrics use
    statuses = [fields(x)["oper_status"] for x in lab.a.log_lines(r"discovery port=veth0 ")]
    assert statuses and set(statuses) <= RFC4878_OPER_STATUS and statuses[-1] == view["oper_status"]

    # the metrics: the same monitor name, totals, location and severity, oper status
    samples = lab.wait_for(scrape_with(lab, "efmoam_monitor_errors_total{monitor=errored_frame}"), 10, "a scrape")
    assert samples["efmoam_monitor_errors_total{monitor=errored_frame}"] == monitor["error_running_total"]
    assert samples["efmoam_monitor_events_total{monitor=errored_frame}"] == monitor["event_running_total"]
    assert samples[f"efmoam_monitor_state{{monitor=errored_frame,state={monitor['state']}}}"] == 1
    location, severity = entry["location"], entry["severity"]
    assert samples[f"efmoam_active_events{{location={location},severity={severity}}}"] == 1
    assert samples[f"efmoam_oper_status{{status={view['oper_status']}}}"] == 1
    (reason,) = view["out_of_service_reasons"]
    assert samples[f"efmoam_port_out_of_service{{reason={reason}}}"] == 1

    # cleared: the same entry, cleared, with its cause, in show, the stream and the log
    lab.a.query("clear_events", port="veth0")
    (cleared,) = lab.wait_for(
        lambda: [r for r in records(events, "event") if not r["event"]["active"]], 5, "the cleared record"
    )
    shown = next(e for e in lab.a.show("veth0")["event_log"] if e["index"] == entry["index"])
    assert cleared["event"] == shown == entry | {"active": False}
    (cleared_line,) = lab.a.log_lines(rf"link event cleared port=veth0 .*index={entry['index']}\b")
    assert fields(cleared_line)["cause"] == cleared["cause"] == "operator"
    assert fields(cleared_line)["port_affecting"] == "true"


def scrape_with(lab: Lab, name: str) -> Any:
    """A predicate for `wait_for`: a scrape once it has `name`."""

    def check() -> dict[str, float] | None:
        try:
            samples = scrape(lab)
        except OSError:
            return None
        return samples if name in samples else None

    return check


def test_log_fields_parse_as_the_helper_reads_them() -> None:
    """The test's own reader of log lines (quoted values with spaces)."""
    line = 'NOTICE link event port=veth0 location=local type=erroredFrameEvent reasons="a b" port_affecting=true'
    assert fields(line) == {
        "port": "veth0", "location": "local", "type": "erroredFrameEvent", "reasons": "a b", "port_affecting": "true",
    }  # fmt: skip
    assert re.search(r"\bport_affecting=true\b", line)
