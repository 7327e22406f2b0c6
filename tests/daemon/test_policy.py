"""The action policy end to end, daemons on a veth pair in two namespaces: a unidirectional
link made with nftables (our OAMPDUs dropped on the peer's ingress), a capabilities
conflict that error-disables the port until cleared, and automatic recovery."""

from __future__ import annotations

import signal
import time
from typing import Any

import pytest

from tests.daemon.lab import MULTIPLIER, TRANSMIT_INTERVAL, Lab, netns_run

pytestmark = pytest.mark.root

NFT_DROP = "efmoam_test_deaf"


def session_events(view: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {event["name"]: event for event in view["policy"]["events"]}


def make_peer_deaf(lab: Lab, deaf: bool) -> None:
    """Drop A's OAMPDUs on B's ingress (B stops hearing A; A still hears B)."""
    if deaf:
        ns = lab.b.netns
        netns_run(ns, "nft", "add", "table", "netdev", NFT_DROP)
        hook = f"{{ type filter hook ingress device {lab.b.ifname} priority -600; }}"
        netns_run(ns, "nft", "add", "chain", "netdev", NFT_DROP, "deaf", hook)
        rule = ["ether", "type", "0x8809", "ether", "saddr", lab.mac(lab.a), "drop"]
        netns_run(ns, "nft", "add", "rule", "netdev", NFT_DROP, "deaf", *rule)
    else:
        netns_run(lab.b.netns, "nft", "delete", "table", "netdev", NFT_DROP)


def test_a_unidirectional_link_is_blocked_and_returns_when_the_peer_hears_us_again(lab: Lab) -> None:
    lab.a.overrides = {"defaults": {"event_actions": {"unidirectional": ["block", "notify-peer"]}}}
    lab.start()
    assert lab.ping(lab.a)
    make_peer_deaf(lab, True)
    start = time.monotonic()
    lost_link = TRANSMIT_INTERVAL * MULTIPLIER  # until B stops echoing us
    unidirectional_time = 5 * TRANSMIT_INTERVAL  # the default
    view = lab.wait_view(
        lab.a, lambda v: "unidirectional" in session_events(v), lost_link + unidirectional_time + 3.0,
        "A reports a unidirectional link",
    )  # fmt: skip
    took = time.monotonic() - start
    # B's lost-link timer, then unidirectional_time, then one interval (and the CLI's polling)
    assert took <= lost_link + unidirectional_time + TRANSMIT_INTERVAL + 1.0, took
    event = session_events(view)["unidirectional"]
    assert event["actions"] == ["block", "notify-peer"] and not event["latched"]
    assert view["out_of_service"] and "unidirectional" in view["out_of_service_reasons"]
    assert lab.block_table_present(lab.a)
    assert not lab.ping(lab.a)
    assert "critical_event" in view["local_flags"]
    make_peer_deaf(lab, False)
    view = lab.wait_view(lab.a, lambda v: not v["out_of_service"], 10.0, "A back in service")
    assert "unidirectional" not in session_events(view)
    assert not lab.block_table_present(lab.a)
    lab.wait_operational()
    assert lab.ping(lab.a)
    assert lab.a.log_entries(r"event raised .*name=unidirectional")
    assert lab.a.log_entries(r"event cleared .*name=unidirectional .*cause=condition")


def conflicting(lab: Lab, **recovery: Any) -> None:
    """A requires remote loopback, which B does not offer (until reconfigured)."""
    lab.a.overrides = {
        "defaults": {
            "peer_policy": {"required_functions": ["remote_loopback"]},
            "event_actions": {"capabilities_conflict": "error-disable"},
            **({"recovery": recovery} if recovery else {}),
        }
    }
    lab.start(operational=False)


def offer_loopback(lab: Lab) -> None:
    lab.b.overrides = {"defaults": {"loopback": "process"}}
    lab.b.write_config()
    lab.b.signal(signal.SIGHUP)


def test_a_capabilities_conflict_error_disables_the_port_until_it_is_cleared(lab: Lab) -> None:
    conflicting(lab)
    view = lab.wait_view(lab.a, lambda v: v["out_of_service"], 10.0, "A error-disabled")
    event = session_events(view)["capabilities_conflict"]
    assert event["latched"] and event["actions"] == ["error-disable"]
    assert view["oper_status"] == "oamPeeringLocallyRejected"
    assert lab.block_table_present(lab.a)
    (latch,) = view["policy"]["latches"]
    assert latch["name"] == "capabilities_conflict" and latch["recovers_at"] is None
    shown = lab.a.cli("show", "port", lab.a.ifname).stdout
    assert "Latched" in shown and "until cleared by hand" in shown
    offer_loopback(lab)  # the conflict ends; the port stays error-disabled
    view = lab.wait_view(lab.a, lambda v: v["oper_status"] == "operational", 10.0, "A operational")
    assert "capabilities_conflict" not in session_events(view)
    assert view["out_of_service"] and view["out_of_service_reasons"] == ["capabilities_conflict (latched)"]
    assert lab.block_table_present(lab.a) and not lab.ping(lab.a)
    result = lab.a.cli("clear", "port", lab.a.ifname, "events")
    assert result.returncode == 0, result.stderr
    view = lab.wait_view(lab.a, lambda v: not v["out_of_service"], 5.0, "A back in service")
    assert view["policy"]["latches"] == []
    assert not lab.block_table_present(lab.a) and lab.ping(lab.a)
    assert lab.a.log_entries(r"event released .*name=capabilities_conflict .*cause=operator")


def test_an_error_disabled_port_recovers_by_itself_after_auto_after(lab: Lab) -> None:
    conflicting(lab, auto_after=30)
    view = lab.wait_view(lab.a, lambda v: v["out_of_service"], 10.0, "A error-disabled")
    (latch,) = view["policy"]["latches"]
    assert latch["recovers_at"] == pytest.approx(time.time() + 30, abs=3)
    assert "recovers at" in lab.a.cli("show", "port", lab.a.ifname).stdout
    offer_loopback(lab)
    lab.wait_view(lab.a, lambda v: v["oper_status"] == "operational", 10.0, "A operational")
    assert lab.a.port()["out_of_service"]  # latched until the recovery timer
    view = lab.wait_view(lab.a, lambda v: not v["out_of_service"], 40.0, "A recovered")
    assert view["policy"]["latches"] == []
    assert lab.a.log_entries(r"event released .*name=capabilities_conflict .*cause=recovery")
    assert not lab.block_table_present(lab.a) and lab.ping(lab.a)
