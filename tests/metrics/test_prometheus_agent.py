"""Beyond one Prometheus: an agent scrapes two daemons and remote-writes to a receiver that
evaluates the alert rules (README, "Running a fleet").

Both Prometheus processes run in namespace A (``ip netns exec``).  The agent
(``--enable-feature=agent``: scrape and forward, no queries, no rules) scrapes daemon A on
127.0.0.1 and daemon B over the veth pair, both at ``detail: basic``, and remote-writes
every second to the receiver (``--web.enable-remote-write-receiver``), which holds the
series and evaluates config/prometheus/efmoam-rules.yaml.  Errors in A's counter file
raise a signal failure; the alert must fire at the receiver, from series that came
through the agent.  In production the receiver is Mimir, Thanos Receive or
VictoriaMetrics, and there is an agent per host or per rack.
"""

from __future__ import annotations

import shutil
import urllib.error

import pytest

from tests.daemon.lab import ADDR_B, Lab
from tests.metrics.test_prometheus_e2e import RULES, api, firing, start_prometheus, stop_prometheus

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(shutil.which("prometheus") is None, reason="needs prometheus (apt-get install prometheus)"),
]

METRICS_PORT = 9720
RECEIVER = "127.0.0.1:9091"
AGENT = "127.0.0.1:9092"
TARGETS = {f"127.0.0.1:{METRICS_PORT}": "veth0", f"{ADDR_B}:{METRICS_PORT}": "veth1"}


def test_an_agent_forwards_two_daemons_to_a_receiver_where_the_rules_fire(lab: Lab) -> None:
    lab.a.overrides = {
        "defaults": {"action_backend": "log-only"},  # the veth pair keeps carrying B's scrapes
        "daemon": {"metrics": {"enabled": True, "address": "127.0.0.1", "port": METRICS_PORT, "detail": "basic"}},
    }
    lab.b.overrides = {
        "defaults": {"action_backend": "log-only"},
        "daemon": {"metrics": {"enabled": True, "address": ADDR_B, "port": METRICS_PORT, "detail": "basic"}},
    }
    lab.start()
    receiver_config = {"global": {"evaluation_interval": "1s"}, "rule_files": [str(RULES)]}
    agent_config = {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "external_labels": {"agent": "rack1"}},
        "scrape_configs": [{"job_name": "efmoam", "static_configs": [{"targets": list(TARGETS)}]}],
        "remote_write": [{"url": f"http://{RECEIVER}/api/v1/write", "queue_config": {"batch_send_deadline": "1s"}}],
    }
    receiver = start_prometheus(
        lab, "receiver", receiver_config, RECEIVER,
        f"--storage.tsdb.path={lab.workdir / 'receiver-data'}", "--web.enable-remote-write-receiver",
    )  # fmt: skip
    agent = start_prometheus(
        lab,
        "agent",
        agent_config,
        AGENT,
        "--enable-feature=agent",
        f"--storage.agent.path={lab.workdir / 'agent-data'}",
    )
    logs = lambda: "\n".join((lab.workdir / f"{n}.log").read_text(errors="replace") for n in ("receiver", "agent"))  # noqa: E731
    try:

        def arrived() -> dict[str, str]:
            result = api(lab, "query", RECEIVER, query="efmoam_oper_status == 1")["result"]
            return {sample["metric"]["instance"]: sample["metric"]["device"] for sample in result}

        lab.wait_for(lambda: arrived() == TARGETS, 30, "both daemons' series at the receiver", interval=0.5)
        [one] = api(lab, "query", RECEIVER, query='efmoam_oper_status{device="veth0"}')["result"]
        assert one["metric"]["agent"] == "rack1" and one["metric"]["status"] == "operational"  # through the agent
        builds = api(lab, "query", RECEIVER, query="efmoam_build_info")["result"]
        assert sorted(sample["metric"]["instance"] for sample in builds) == sorted(TARGETS)
        per_port = api(lab, "query", RECEIVER, query="count by (instance, device) ({device!=''})")["result"]
        assert len(per_port) == 2 and all(int(sample["value"][1]) <= 20 for sample in per_port), per_port
        assert not firing(lab, "EfmOamSignalFailure", RECEIVER)

        lab.a.set_counters(errored_frames=20, frames_received=2000)  # SF threshold 5 in a 1 s window
        [alert] = lab.wait_for(
            lambda: firing(lab, "EfmOamSignalFailure", RECEIVER, device="veth0", location="local"),
            20, "EfmOamSignalFailure to fire at the receiver", interval=0.5,
        )  # fmt: skip
        assert alert["labels"]["instance"] == f"127.0.0.1:{METRICS_PORT}" and alert["labels"]["agent"] == "rack1"
        lab.wait_for(
            lambda: firing(lab, "EfmOamSignalFailure", RECEIVER, device="veth1", location="remote"),
            20, "B's remote signal failure to fire", interval=0.5,
        )  # fmt: skip
        lab.wait_for(lambda: firing(lab, "EfmOamPortOutOfService", RECEIVER, device="veth0"), 10, "out of service")
        with pytest.raises(urllib.error.HTTPError) as refused:
            api(lab, "query", AGENT, query="up")  # the agent keeps nothing to query
        assert refused.value.code == 422
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{logs()}") from None
    finally:
        stop_prometheus(agent)
        stop_prometheus(receiver)
