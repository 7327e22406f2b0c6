"""``efmoam diagnose PORT`` against two real daemons on a veth pair, one scenario each.

The command runs as root inside side A's namespace (``ip netns exec``), so both of its
listeners (the tap and the OAM socket) are real, and asks A's daemon over its socket.
"""

from __future__ import annotations

import grp
import json
import os
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.daemon.lab import MAC_B, Daemon, Lab, deep_merge, efmoam, is_operational


def diagnose(side: Daemon, *args: str) -> tuple[int, dict[str, Any], subprocess.CompletedProcess[str]]:
    """(exit status, the JSON report, the process) of diagnose on the side's port."""
    result = efmoam("diagnose", side.ifname, "--socket", side.socket, "-f", "json", *args,
                    prefix=("ip", "netns", "exec", side.netns))  # fmt: skip
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, json.loads(result.stdout), result


def codes(report: dict[str, Any], severity: str = "problem") -> set[str]:
    return {finding["code"] for finding in report["findings"] if finding["severity"] == severity}


def test_a_healthy_pair_is_ok(lab: Lab) -> None:
    lab.start()
    status, report, _ = diagnose(lab.a)
    assert status == 0, report["findings"]
    assert report["ok"] and codes(report) == set()
    heard = report["facts"]["listening"]
    assert [speaker["mac"] for speaker in heard["speakers"]] == [MAC_B]
    assert heard["speakers"][0]["mode"] == "active" and "Information" in heard["speakers"][0]["codes"]
    assert heard["delivered"] >= 1 and heard["daemon_rx"] >= 1
    assert report["facts"]["counters"]["source"] == "file"
    assert report["daemon"]["oper_status"] == "operational"
    assert report["facts"]["carrier"] and report["facts"]["duplex"] == "full"


def test_an_nftables_ingress_rule_dropping_oampdus_is_named(lab: Lab) -> None:
    lab.start()
    script = (
        "table netdev trapless {\n chain in {\n  type filter hook ingress device veth0 priority 0;\n"
        "  ether type 0x8809 counter drop\n }\n}\n"
    )
    subprocess.run(["ip", "netns", "exec", lab.a.netns, "nft", "-f", "-"], input=script, text=True, check=True)
    lab.wait_for(lambda: not is_operational(lab.a), 10.0, "A to lose its peer")
    status, report, _ = diagnose(lab.a)
    assert status == 1
    assert {"ingress_drop", "discovery_stuck"} <= codes(report)
    assert report["facts"]["ingress_drops"] == ["netdev trapless in"]
    heard = report["facts"]["listening"]
    assert [speaker["mac"] for speaker in heard["speakers"]] == [MAC_B]  # on the wire, before the hook
    assert heard["delivered"] == 0 and heard["daemon_rx"] == 0
    plain = efmoam("diagnose", "veth0", "--socket", lab.a.socket, prefix=("ip", "netns", "exec", lab.a.netns))
    assert plain.returncode == 1
    assert "an nftables ingress rule on veth0 drops OAMPDUs: netdev trapless in" in plain.stdout


def test_a_passive_passive_pair_is_reported(lab: Lab) -> None:
    for side in lab.daemons:
        side.overrides = {"defaults": {"mode": "passive"}}
    lab.start(operational=False)
    status, report, _ = diagnose(lab.a, "--listen", "1")
    assert status == 1
    assert "both_passive" in codes(report)
    finding = next(f for f in report["findings"] if f["code"] == "both_passive")
    assert finding["message"].startswith("both sides are passive")
    assert finding["advice"].startswith("one side must be active")
    assert report["daemon"]["mode"] == "passive" and report["facts"]["listening"]["speakers"] == []


def test_a_capability_mismatch_says_which_side_refuses(lab: Lab) -> None:
    lab.a.overrides = {"defaults": {"variable_retrieval": False}}
    lab.b.overrides = {"defaults": {"peer_policy": {"required_functions": ["variable_retrieval"]}}}
    lab.start(operational=False)
    lab.wait_view(lab.b, lambda view: view["oper_status"] == "oamPeeringLocallyRejected", 10.0, "B to refuse A")
    status_b, report_b, _ = diagnose(lab.b)
    assert status_b == 1 and "rejected_here" in codes(report_b)
    refusal = next(f for f in report_b["findings"] if f["code"] == "rejected_here")
    assert "the peer lacks variableSupport" in refusal["message"] and "peer_policy" in refusal["advice"]
    status_a, report_a, _ = diagnose(lab.a)
    assert status_a == 1 and "rejected_by_peer" in codes(report_a)
    refused = next(f for f in report_a["findings"] if f["code"] == "rejected_by_peer")
    assert "we lack variableSupport" in refused["message"]


@pytest.fixture
def socket_group(lab: Lab) -> Iterator[str]:
    """A group made for the test, the control socket group of A: the default (``efmoam``)
    exists only where the package was installed, and without a group the socket is root's
    alone (mode 0600), which is not what these tests are about."""
    group = f"efmdg{os.getpid() % 100000}"
    subprocess.run(["groupadd", group], check=True)
    try:
        lab.a.overrides = deep_merge(lab.a.overrides, {"daemon": {"control_socket_group": group}})
        yield group
    finally:
        subprocess.run(["groupdel", group], check=False, capture_output=True)


def unprivileged(side: Daemon) -> tuple[str, ...]:
    """``ip netns exec`` as nobody in the group of the side's socket: all but CAP_NET_RAW."""
    gid = os.stat(side.socket).st_gid
    return ("ip", "netns", "exec", side.netns, "setpriv", "--reuid=nobody", f"--regid={gid}", "--clear-groups",
            "--inh-caps=-all")  # fmt: skip


def test_without_root_the_daemon_is_the_listener(
    lab: Lab, socket_group: str, any_user_python: tuple[str, dict[str, str]]
) -> None:
    lab.start()
    assert grp.getgrgid(os.stat(lab.a.socket).st_gid).gr_name == socket_group
    python, env = any_user_python
    result = subprocess.run(
        [*unprivileged(lab.a), python, "-m", "efmoam.cli", "diagnose", "veth0", "--socket", lab.a.socket, "-f", "json"],
        capture_output=True, text=True, timeout=30, cwd="/", env=env, check=False,
    )  # fmt: skip
    assert "Traceback" not in result.stderr, result.stderr
    report = json.loads(result.stdout)
    heard = report["facts"]["listening"]
    assert heard["error"] == "listening needs root (CAP_NET_RAW)"
    assert heard["speakers"] == [] and heard["delivered"] is None
    assert heard["daemon_rx"] >= 1  # two transmit intervals of the daemon's own socket
    assert result.returncode == 0, report["findings"]
    assert report["daemon"]["peer"]["mac_address"] == MAC_B


def test_a_port_that_disappears_while_the_daemon_listens_is_reported(
    lab: Lab, socket_group: str, any_user_python: tuple[str, dict[str, str]]
) -> None:
    lab.start()
    python, env = any_user_python
    command = [*unprivileged(lab.a), python, "-m", "efmoam.cli", "diagnose", "veth0", "--listen", "20",
               "--socket", lab.a.socket, "-f", "json"]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd="/", env=env)
    time.sleep(1.5)
    subprocess.run(["ip", "-n", lab.b.netns, "link", "del", "veth1"], check=True)
    out, err = proc.communicate(timeout=15)  # before the 20 s: the listening ended with the port
    assert "Traceback" not in err, err
    assert proc.returncode == 1, out
    assert "port_vanished" in codes(json.loads(out))
