"""End to end: two daemons over veth, a real Prometheus scraping both, the rules firing.

Prometheus (Debian package ``prometheus``) runs inside namespace A (``ip netns exec``)
with a temporary configuration and storage directory, scrape and evaluation interval
1 s.  It scrapes daemon A on 127.0.0.1 (A's loopback) and daemon B on B's veth address
over the veth pair; both daemons' actions are log-only, so that the pair keeps carrying
the scrapes of B while A is "out of service".  Errors injected on A raise a signal
failure; the test sees EfmOamSignalFailure and EfmOamPortOutOfService fire through
Prometheus's HTTP API, clears A's events over the control socket, and sees them resolve.
The JSON event stream of A (a file) carries the event and the port action.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.daemon.lab import ADDR_B, Lab
from tests.linux.netns import in_netns

pytestmark = pytest.mark.root

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "config" / "prometheus" / "efmoam-rules.yaml"
METRICS_PORT = 9717
PROMETHEUS = "127.0.0.1:9090"


def start_prometheus(lab: Lab, name: str, config: dict[str, Any], listen: str, *flags: str) -> subprocess.Popen[bytes]:
    """Prometheus in namespace A with `config`, listening on `listen`; its log is ``<name>.log``.

    `flags` are its storage and mode (``--storage.tsdb.path=...``, or agent mode's).
    """
    path = lab.workdir / f"{name}.yml"
    path.write_text(yaml.safe_dump(config))
    log = open(lab.workdir / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        ["ip", "netns", "exec", lab.ns_a, "prometheus", f"--config.file={path}", f"--web.listen-address={listen}",
         *flags],
        stdin=subprocess.DEVNULL, stdout=log, stderr=log,
    )  # fmt: skip


def stop_prometheus(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def api(lab: Lab, path: str, server: str = PROMETHEUS, **params: str) -> Any:
    """GET the HTTP API of the Prometheus at `server` from inside namespace A; the `data` of its answer."""
    url = f"http://{server}/api/v1/{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")

    def get() -> Any:
        with urllib.request.urlopen(url, timeout=5) as response:
            return json.load(response)

    answer = in_netns(lab.ns_a, get)
    assert answer["status"] == "success", answer
    return answer["data"]


def firing(lab: Lab, alertname: str, server: str = PROMETHEUS, **labels: str) -> list[dict[str, Any]]:
    return [
        alert
        for alert in api(lab, "alerts", server)["alerts"]
        if alert["labels"].get("alertname") == alertname
        and alert["state"] == "firing"
        and all(alert["labels"].get(k) == v for k, v in labels.items())
    ]


@pytest.mark.skipif(shutil.which("prometheus") is None, reason="needs prometheus (apt-get install prometheus)")
def test_prometheus_sees_a_signal_failure_fire_and_resolve(lab: Lab) -> None:
    events = lab.workdir / "events-a.jsonl"
    common = {"defaults": {"action_backend": "log-only", "expect_peer": True}}
    lab.a.overrides = {
        **common,
        "daemon": {
            "metrics": {"enabled": True, "address": "127.0.0.1", "port": METRICS_PORT},
            "event_stream": {"sink": "file", "path": str(events)},
        },
    }
    lab.b.overrides = {**common, "daemon": {"metrics": {"enabled": True, "address": ADDR_B, "port": METRICS_PORT}}}
    lab.start()
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s", "scrape_timeout": "1s"},
        "rule_files": [str(RULES)],
        "scrape_configs": [
            {
                "job_name": "efmoam",
                "static_configs": [{"targets": [f"127.0.0.1:{METRICS_PORT}", f"{ADDR_B}:{METRICS_PORT}"]}],
            }
        ],
    }
    storage = lab.workdir / "prometheus-data"
    prometheus = start_prometheus(lab, "prometheus", config, PROMETHEUS, f"--storage.tsdb.path={storage}")
    try:
        context = lambda: lab.logs() + "\n" + (lab.workdir / "prometheus.log").read_text(errors="replace")  # noqa: E731

        def both_up() -> bool:
            result = api(lab, "query", query="up")["result"]
            return len(result) == 2 and all(sample["value"][1] == "1" for sample in result)

        lab.wait_for(both_up, 30, "Prometheus to scrape both daemons", interval=0.5)
        operational = api(lab, "query", query='efmoam_oper_status{status="operational"} == 1')["result"]
        assert sorted(sample["metric"]["device"] for sample in operational) == ["veth0", "veth1"]
        # Prometheus asks for gzip: the body is one gzip member per family, and it reads them
        # all (the drop counters are the last family, the peer expectation in the middle)
        last = api(lab, "query", query='efmoam_rx_dropped_total{reason="rate_limit"}')["result"]
        assert sorted(sample["metric"]["device"] for sample in last) == ["veth0", "veth1"]
        expected = api(lab, "query", query="efmoam_peer_expected == 1")["result"]
        assert sorted(sample["metric"]["device"] for sample in expected) == ["veth0", "veth1"]
        assert not firing(lab, "EfmOamSignalFailure")
        assert not firing(lab, "EfmOamPeerMissing")

        lab.a.set_counters(errored_frames=20, frames_received=2000)  # SF threshold 5 in a 1 s window
        [alert] = lab.wait_for(
            lambda: firing(lab, "EfmOamSignalFailure", device="veth0", location="local"),
            20, "EfmOamSignalFailure to fire for veth0", interval=0.5,
        )  # fmt: skip
        assert alert["labels"]["instance"] == f"127.0.0.1:{METRICS_PORT}"
        lab.wait_for(lambda: firing(lab, "EfmOamPortOutOfService", device="veth0"), 10, "out of service", interval=0.5)
        lab.wait_for(
            lambda: firing(lab, "EfmOamSignalFailure", device="veth1", location="remote"),
            20, "B's remote signal failure to fire", interval=0.5,
        )  # fmt: skip

        lab.a.query("clear_events", port="veth0")
        lab.wait_for(
            lambda: not firing(lab, "EfmOamSignalFailure", device="veth0", location="local")
            and not firing(lab, "EfmOamPortOutOfService", device="veth0"),
            20, "the alerts of veth0 to resolve", interval=0.5,
        )  # fmt: skip
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{context()}") from None
    finally:
        stop_prometheus(prometheus)

    records = [json.loads(line) for line in events.read_text().splitlines()]
    raised = [
        r
        for r in records
        if r["kind"] == "event" and r["event"]["active"] and r["event"]["type"] == "erroredFrameEvent"
    ]
    event = raised[0]["event"] if raised else {}
    assert event and event["severity"] == "sf" and event["errors"] == 20 and event["threshold"] == 5
    assert raised[0]["action"] == "out-of-service" and raised[0]["port"] == "veth0"
    actions = [(r["action"], r["result"]) for r in records if r["kind"] == "port_action"]
    assert actions[:2] == [("out-of-service", "applied"), ("in-service", "applied")]
