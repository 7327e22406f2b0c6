"""The pure half of ``efmoam diagnose``: facts in, findings and advice out (no root)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from efmoam.views.diagnosis import Facts, Listening, Speaker, analyse, as_json, as_text, has_problem

PEER = "02:00:00:00:bb:01"


def heard(*speakers: Speaker, delivered: int | None = 3, daemon_rx: int | None = None) -> Listening:
    return Listening(seconds=2.0, speakers=list(speakers), delivered=delivered, daemon_rx=daemon_rx)


def facts(**changes: Any) -> Facts:
    """A healthy port: up, full duplex, its active peer heard past ingress."""
    base = Facts(port="eth0", admin_up=True, carrier=True, operstate="up", speed_mbps=1000, duplex="full",
                 listening=heard(Speaker(PEER, frames=3, codes=["Information"], mode="active", informations=3)),
                 counters={"source": "ethtool", "provides": {"errored_frames": "x"}, "error": None})  # fmt: skip
    for key, value in changes.items():
        setattr(base, key, value)
    return base


def view(**changes: Any) -> dict[str, Any]:
    """The daemon's show_port view of an operational active port."""
    base: dict[str, Any] = {
        "admin_state": "enabled", "oper_status": "operational", "discovery_state": "SEND_ANY", "mode": "active",
        "max_pdu_size": 1518, "functions_supported": ["eventSupport", "variableSupport"], "local_flags": [],
        "peer": {"mac_address": PEER, "mode": "active", "max_pdu_size": 1518, "flags": [],
                 "functions_supported": ["eventSupport", "variableSupport"]},
    }  # fmt: skip
    base.update(changes)
    return base


def codes(found: Facts) -> list[str]:
    return [finding.code for finding in analyse(found) if finding.severity == "problem"]


def test_a_healthy_port_has_no_problem() -> None:
    findings = analyse(facts(daemon=view()))
    assert not has_problem(findings) and findings == []


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"admin_up": False}, "admin_down"),
        ({"carrier": False, "operstate": "down"}, "no_carrier"),
        ({"duplex": "half"}, "half_duplex"),
    ],
)
def test_the_link_comes_first(changes: dict[str, Any], code: str) -> None:
    assert codes(facts(**changes)) == [code]


def test_silence_asks_for_a_trap_rule() -> None:
    found = analyse(facts(listening=heard(delivered=0)))
    (problem,) = [f for f in found if f.severity == "problem"]
    assert problem.code == "no_oampdu"
    assert problem.advice is not None and "trap rule for 01:80:c2:00:00:02 / EtherType 0x8809" in problem.advice


def test_the_daemon_hearing_counts_as_arriving() -> None:
    assert codes(facts(listening=Listening(2.0, error="listening needs root (CAP_NET_RAW)", daemon_rx=4))) == []
    assert codes(facts(listening=Listening(2.0, error="listening needs root (CAP_NET_RAW)", daemon_rx=0))) == [
        "no_oampdu"
    ]


def test_an_ingress_chain_that_drops_is_named() -> None:
    found = facts(ingress_drops=["netdev filter in"], listening=heard(Speaker(PEER, frames=2), delivered=0))
    problems = [f for f in analyse(found) if f.severity == "problem"]
    assert [p.code for p in problems] == ["ingress_drop"]
    assert "drops OAMPDUs: netdev filter in" in problems[0].message


def test_frames_seen_on_the_wire_but_not_past_ingress_without_an_nft_rule() -> None:
    assert codes(facts(listening=heard(Speaker(PEER, frames=2), delivered=0))) == ["dropped_after_tap"]


def test_two_speakers_on_a_point_to_point_link() -> None:
    found = facts(listening=heard(Speaker(PEER, frames=1), Speaker("02:00:00:00:cc:01", frames=1)))
    assert codes(found) == ["several_speakers"]


def test_a_vanished_port_stops_the_arrival_checks() -> None:
    listening = heard(delivered=0)
    listening.port_vanished = True
    assert codes(facts(listening=listening)) == ["port_vanished"]
    without_root = Listening(2.0, error="listening needs root (CAP_NET_RAW)", port_vanished=True)
    assert codes(facts(listening=without_root)) == ["port_vanished"]


def test_both_passive_from_the_peer_tlv_and_from_silence() -> None:
    passive_peer = Speaker(PEER, frames=2, codes=["Information"], mode="passive")
    known = analyse(
        facts(daemon=view(mode="passive", discovery_state="PASSIVE_WAIT", peer=None), listening=heard(passive_peer))
    )
    assert [f.message for f in known if f.code == "both_passive"] == [
        "both sides are passive: eth0 and its peer wait for each other"
    ]
    silent = facts(daemon=view(mode="passive", discovery_state="PASSIVE_WAIT", peer=None), listening=heard(delivered=0))
    assert "both_passive" in codes(silent)
    active_here = facts(daemon=view(mode="active", discovery_state="ACTIVE_SEND_LOCAL", peer=None))
    active_here.listening = heard(delivered=0)
    assert "both_passive" not in codes(active_here)


def test_the_side_that_refuses_is_named_with_what_is_missing() -> None:
    here = analyse(facts(daemon=view(
        oper_status="oamPeeringLocallyRejected", discovery_state="SEND_LOCAL_REMOTE",
        peer={**view()["peer"], "functions_supported": ["eventSupport"]},
    )))  # fmt: skip
    (refusal,) = [f for f in here if f.code == "rejected_here"]
    assert (
        refusal.message
        == "eth0 refuses its peer (our peer_policy): the peer lacks variableSupport, which the other side has"
    )
    there = analyse(facts(daemon=view(oper_status="oamPeeringRemotelyRejected", functions_supported=[])))
    (refused,) = [f for f in there if f.code == "rejected_by_peer"]
    assert "we lack eventSupport, variableSupport" in refused.message
    assert refused.advice is not None and "we advertise mode active, no optional function" in refused.advice


def test_stuck_discovery_says_on_which_side() -> None:
    waiting = analyse(facts(daemon=view(discovery_state="SEND_LOCAL_REMOTE_OK", oper_status="sendLocalAndRemoteOk")))
    assert [f.message for f in waiting if f.code == "discovery_stuck"] == [
        "discovery on eth0 is in SEND_LOCAL_REMOTE_OK: the peer has not confirmed our configuration yet"
    ]
    disabled = facts(daemon=view(discovery_state="FAULT", admin_state="disabled"))
    assert "discovery_stuck" not in codes(disabled)


def test_a_max_pdu_size_difference_is_a_note() -> None:
    found = analyse(facts(daemon=view(peer={**view()["peer"], "max_pdu_size": 128})))
    assert not has_problem(found)
    assert [f.message for f in found] == [
        "max PDU size differs: ours 1518, the peer's 128; both send at most 128 octets"
    ]


def test_counters_that_fail_are_a_problem_and_none_a_note() -> None:
    assert codes(facts(counters={"source": "ethtool", "provides": {}, "error": "gone"})) == ["counters"]
    found = analyse(facts(counters={"source": "auto", "provides": {}, "error": None}))
    assert [f.code for f in found] == ["no_counters"] and not has_problem(found)


def test_both_outputs_carry_the_same_findings() -> None:
    found = facts(daemon=view(), ingress_drops=["netdev t c"], listening=heard(Speaker(PEER, frames=2), delivered=0))
    findings = analyse(found)
    document = json.loads(as_json(found, findings))
    assert document["ok"] is False and document["port"] == "eth0"
    assert [f["code"] for f in document["findings"]] == [f.code for f in findings]
    assert document["daemon"]["oper_status"] == "operational" and "daemon" not in document["facts"]
    text = as_text(found, findings)
    assert text.startswith("eth0: problems found\n  link: up, carrier yes, 1000 Mb/s, full duplex")
    assert "problem: an nftables ingress rule on eth0 drops OAMPDUs: netdev t c" in text
    assert f"    {PEER}: 2 frame(s)" in text
