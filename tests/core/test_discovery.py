"""Discovery (57.3.2.1): two ports meeting, refusing, changing and losing each other."""

from __future__ import annotations

import attrs
import pytest

import pdu
from efmoam.core import (
    DiscoveryChanged,
    OamMode,
    OperStatus,
    PeerChanged,
    PeerPolicy,
    PortSettings,
    Transmit,
)
from pdu import Flag, Information, OamConfig
from tests.core.test_support import (
    A_MAC,
    B_MAC,
    STABLE,
    Pair,
    S,
    as_remote,
    discovered,
    gaps,
    information,
    information_times,
    last_sent_flags,
    lone,
    outputs,
    peer_tlv,
    sent,
    sent_kind,
)

PASSIVE = PortSettings(mode=OamMode.PASSIVE)
EVALUATION = Flag.LOCAL_EVALUATING | Flag.LOCAL_STABLE


# -- meeting --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [(PortSettings(), PortSettings()), (PortSettings(), PASSIVE), (PASSIVE, PortSettings())],
    ids=["active-active", "active-passive", "passive-active"],
)
def test_active_peer_reaches_send_any_within_a_few_transmit_slots(a: PortSettings, b: PortSettings) -> None:
    pair = Pair(a, b)
    pair.run_until(0.5)
    for name in "ab":
        reached = pair.first_time_in(name, S.SEND_ANY)
        assert reached is not None, name
        # OAMPDUs go out at least 0.1 s apart: a few such slots, not a keep-alive interval
        assert reached <= 0.35, (name, reached)
    pair.run_until(10)
    assert pair.both_in(S.SEND_ANY)
    assert pair.a.oper_status is pair.b.oper_status is OperStatus.OPERATIONAL


def test_two_passive_ports_never_meet_and_never_send() -> None:
    pair = Pair(PASSIVE, PASSIVE)
    pair.run_until(30)
    assert pair.both_in(S.PASSIVE_WAIT)
    assert pair.sent_times("a") == pair.sent_times("b") == []
    assert pair.a.oper_status is OperStatus.PASSIVE_WAIT


def test_passive_port_waits_silently_until_it_hears_the_active_peer() -> None:
    pair = Pair(PASSIVE, PASSIVE)
    pair.run_until(5)
    pair.call("a", "reconfigure", PortSettings())  # a turns Active: it starts talking
    assert pair.b.state is S.PASSIVE_WAIT
    assert pair.sent_times("b") == []
    pair.run_for(0.5)
    assert pair.both_in(S.SEND_ANY)
    assert pair.first_time_in("b", S.SEND_ANY) <= 5.35  # a few 0.1 s transmit slots


def test_lone_active_port_advertises_itself_once_per_interval() -> None:
    pair = lone()
    pair.run_until(10.5)
    assert pair.a.state is S.ACTIVE_SEND_LOCAL
    frames = sent(pair, "a")
    assert [t for t, _ in frames] == pytest.approx([float(t) for t in range(11)])
    for _, p in frames:
        assert isinstance(p, Information)
        assert p.flags == Flag.LOCAL_EVALUATING
        assert p.local == pair.a.local_tlv and p.remote is None


# -- rejection by policy ----------------------------------------------------------------


def test_policy_rejection_shows_in_both_ports_flags_and_oper_status() -> None:
    picky = PortSettings(peer_policy=PeerPolicy(required_functions=OamConfig.REMOTE_LOOPBACK))
    pair = Pair(picky, PortSettings(loopback_process=False))
    pair.run_until(10)
    assert pair.a.state is S.SEND_LOCAL_REMOTE
    assert pair.a.oper_status is OperStatus.OAM_PEERING_LOCALLY_REJECTED
    assert last_sent_flags(pair, "a") & EVALUATION == 0  # Evaluating=0, Stable=0: unsatisfied
    assert pair.b.state is S.SEND_LOCAL_REMOTE_OK
    assert pair.b.oper_status is OperStatus.OAM_PEERING_REMOTELY_REJECTED
    assert pair.first_time_in("a", S.SEND_ANY) is pair.first_time_in("b", S.SEND_ANY) is None


def test_rejection_lifts_when_the_peer_gains_the_required_function() -> None:
    picky = PortSettings(peer_policy=PeerPolicy(required_functions=OamConfig.REMOTE_LOOPBACK))
    pair = Pair(picky, PortSettings())
    pair.run_until(2.5)
    assert pair.a.oper_status is OperStatus.OAM_PEERING_LOCALLY_REJECTED
    pair.call("b", "reconfigure", PortSettings(loopback_process=True))
    pair.run_for(0.1)
    assert pair.both_in(S.SEND_ANY)


@pytest.mark.parametrize(
    ("policy", "peer"),
    [
        (PeerPolicy(required_mode=OamMode.PASSIVE), PortSettings()),
        (PeerPolicy(required_functions=OamConfig.LINK_EVENTS), PortSettings(link_events=False)),
        (PeerPolicy(versions=frozenset({2})), PortSettings()),
    ],
    ids=["mode", "link-events", "version"],
)
def test_each_policy_rule_can_reject(policy: PeerPolicy, peer: PortSettings) -> None:
    pair = Pair(PortSettings(peer_policy=policy), peer)
    pair.run_until(5)
    assert pair.a.oper_status is OperStatus.OAM_PEERING_LOCALLY_REJECTED
    assert pair.b.oper_status is OperStatus.OAM_PEERING_REMOTELY_REJECTED


# -- revision -------------------------------------------------------------------------


def test_new_vendor_info_increments_the_revision_and_rediscovers() -> None:
    pair = discovered()
    assert pair.a.local_tlv.revision == 0
    t = pair.now
    pair.call("a", "reconfigure", PortSettings(vendor_info=0x1234))
    assert pair.a.local_tlv.revision == 1
    assert pair.a.local_tlv.vendor_info == 0x1234
    pair.run_for(1.0)
    seen = [c.peer for c in outputs(pair, "b", PeerChanged, since=t)]
    assert seen and seen[-1] is not None
    assert (seen[-1].config_revision, seen[-1].vendor_info) == (1, 0x1234)
    assert pair.both_in(S.SEND_ANY)
    # b now echoes the new revision in its Remote Information TLV
    last_b = sent_kind(pair, "b", Information)[-1][1]
    assert last_b.remote is not None and last_b.remote.revision == 1


def test_reconfigure_with_the_same_settings_keeps_the_revision() -> None:
    pair = discovered()
    pair.call("a", "reconfigure", PortSettings())
    pair.run_for(1.0)
    assert pair.a.local_tlv.revision == 0
    assert pair.both_in(S.SEND_ANY)


def test_changing_the_mode_redoes_discovery() -> None:
    pair = discovered()
    t = pair.now
    pair.call("a", "reconfigure", PortSettings(mode=OamMode.PASSIVE))
    changes = [(c.old, c.new) for c in outputs(pair, "a", DiscoveryChanged, since=t)]
    assert (S.SEND_ANY, S.FAULT) in changes
    assert (S.FAULT, S.PASSIVE_WAIT) in changes
    pair.run_for(2.0)
    assert pair.both_in(S.SEND_ANY)
    assert pair.b.peer is not None and not pair.b.peer.mode_active


# -- link down and up -------------------------------------------------------------------


def test_link_down_with_unidirectional_sends_link_fault_information_each_interval() -> None:
    pair = discovered(PortSettings(unidirectional=True))
    t = pair.now
    pair.call("a", "set_link", False)
    assert pair.a.state is S.FAULT
    assert pair.a.oper_status is OperStatus.LINK_FAULT
    pair.run_for(5.2)
    frames = sent(pair, "a", since=t)
    assert [ft for ft, _ in frames] == pytest.approx([t + i for i in range(6)])
    for _, p in frames:
        assert isinstance(p, Information)
        assert p.tlvs == ()
        assert p.flags == Flag.LINK_FAULT


def test_link_down_without_unidirectional_sends_nothing() -> None:
    pair = discovered()
    t = pair.now
    pair.call("a", "set_link", False)
    assert pair.a.state is S.FAULT
    pair.run_for(10)
    assert pair.a.state is S.FAULT
    assert [ft for ft in pair.sent_times("a") if ft >= t] == []


def test_a_half_duplex_link_holds_oam_and_full_duplex_brings_it_back() -> None:
    """OAM needs full duplex: on a half-duplex link nothing is sent or accepted (nonOperHalfDuplex)."""
    pair = discovered()
    t = pair.now
    pair.call("a", "set_link", True, half_duplex=True)
    assert pair.a.state is S.FAULT and pair.a.half_duplex
    assert pair.a.oper_status is OperStatus.NON_OPER_HALF_DUPLEX
    pair.run_for(10)
    assert [ft for ft in pair.sent_times("a") if ft > t] == []
    assert pair.a.state is S.FAULT and pair.a.drops.get("half_duplex", 0) > 0  # B's frames, dropped
    assert pair.b.oper_status is not OperStatus.OPERATIONAL  # B lost its peer
    pair.call("a", "set_link", True)  # duplex not known: as it was
    assert pair.a.oper_status is OperStatus.NON_OPER_HALF_DUPLEX
    pair.call("a", "set_link", True, half_duplex=False)
    pair.run_for(3.0)
    assert pair.both_in(S.SEND_ANY)
    assert pair.a.oper_status is OperStatus.OPERATIONAL


def test_disabled_wins_over_half_duplex() -> None:
    pair = discovered()
    pair.call("a", "set_link", True, half_duplex=True)
    pair.call("a", "reconfigure", attrs.evolve(pair.a.settings, enabled=False))
    assert pair.a.oper_status is OperStatus.DISABLED


@pytest.mark.parametrize("unidirectional", [False, True])
@pytest.mark.parametrize("down_for", [2.0, 8.0], ids=["short", "longer-than-lost-link"])
def test_link_up_rediscovers(unidirectional: bool, down_for: float) -> None:
    pair = discovered(PortSettings(unidirectional=unidirectional))
    pair.call("a", "set_link", False)
    pair.run_for(down_for)
    t = pair.now
    pair.call("a", "set_link", True)
    assert pair.a.state is S.ACTIVE_SEND_LOCAL
    pair.run_for(0.5)
    assert pair.both_in(S.SEND_ANY)
    assert pair.first_time_in("a", S.SEND_ANY) is not None
    assert max(r.time for r in pair.outputs("a", DiscoveryChanged)) - t < 0.35  # a few 0.1 s slots


# -- lost link ------------------------------------------------------------------------


def _lost_link_time(settings: PortSettings, cut_at: float) -> tuple[Pair, float, float]:
    """Cut a->b at `cut_at`; return the pair, when b last heard a, and when b went to FAULT."""
    pair = Pair(settings, settings)
    pair.run_until(cut_at)
    pair.link["a"].cut = True
    last_rx = max(pair.sent_times("a")) + pair.link["a"].delay
    pair.run_for(10)
    faults = [r for r in pair.outputs("b", DiscoveryChanged) if r.output.new is S.FAULT]
    assert faults, "b never noticed"
    assert faults[0].output.cause == "lost_link"
    return pair, last_rx, faults[0].time


@pytest.mark.parametrize("cut_at", [1.5, 2.0005, 3.9])
def test_lost_link_after_five_seconds_by_default(cut_at: float) -> None:
    pair, last_rx, fault_at = _lost_link_time(PortSettings(), cut_at)
    assert fault_at == pytest.approx(last_rx + 5.0, abs=1e-9)
    assert pair.a.state is not S.FAULT  # a still hears b: only the receiver notices


def test_lost_link_after_interval_times_multiplier() -> None:
    fast = PortSettings(transmit_interval=0.1, multiplier=3)
    _, last_rx, fault_at = _lost_link_time(fast, 1.55)
    assert fault_at == pytest.approx(last_rx + 0.3, abs=1e-9)


def test_one_way_loss_keeps_both_ports_out_of_send_any_until_repaired() -> None:
    pair = discovered()
    pair.link["a"].cut = True
    t = pair.now
    pair.run_for(20)
    for name in "ab":
        states = [c.new for c in outputs(pair, name, DiscoveryChanged, since=t)]
        assert states and S.SEND_ANY not in states, (name, states)
        assert pair.ports[name].state is not S.SEND_ANY
    pair.link["a"].cut = False
    pair.run_for(1.1)
    assert pair.both_in(S.SEND_ANY)


# -- remote_stable --------------------------------------------------------------------


def test_stale_remote_copy_keeps_remote_stable_false() -> None:
    """The peer must echo our configuration; a copy that lags only in revision or State is fine.

    (The State field changes during remote loopback and the revision with it: a copy one
    round trip behind must not take the port out of SEND_ANY.)
    """
    pair = lone()
    ours = pair.a.local_tlv
    theirs = peer_tlv()
    faithful = as_remote(ours)
    for wrong in (
        attrs.evolve(faithful, vendor_info=0xBAD),
        attrs.evolve(faithful, max_pdu_size=100),
        attrs.evolve(faithful, oam_config=faithful.oam_config ^ 0x04),
    ):
        pair.inject("a", information(B_MAC, STABLE, theirs, wrong))
        pair.run_for(0.5)
        assert pair.a.state is S.SEND_LOCAL_REMOTE_OK, wrong
        assert pair.a.remote_stable is False
    # the same frame with a copy lagging in revision and State completes Discovery
    lagging = attrs.evolve(faithful, revision=ours.revision + 1, parser_action=1, mux_action=1)
    pair.inject("a", information(B_MAC, STABLE, theirs, lagging))
    pair.run_for(0.5)
    assert pair.a.state is S.SEND_ANY


def test_peer_flags_must_say_local_stable_without_evaluating() -> None:
    pair = lone()
    remote = as_remote(pair.a.local_tlv)
    for flags in (Flag(0), Flag.LOCAL_EVALUATING, Flag.LOCAL_EVALUATING | Flag.LOCAL_STABLE):
        pair.inject("a", information(B_MAC, flags, peer_tlv(), remote))
        pair.run_for(0.5)
        assert pair.a.state is S.SEND_LOCAL_REMOTE_OK, flags
    pair.inject("a", information(B_MAC, Flag.LOCAL_STABLE, peer_tlv(), remote))
    pair.run_for(0.1)
    assert pair.a.state is S.SEND_ANY


# -- flags we send ----------------------------------------------------------------------


def _flags_by_state(pair: Pair, name: str) -> list[tuple[S, Flag]]:
    """The flags of every frame `name` sent, with the Discovery state it was sent in."""
    state, result = S.FAULT, []
    for record in pair.records:
        if record.port != name:
            continue
        if isinstance(record.output, DiscoveryChanged):
            state = record.output.new
        elif isinstance(record.output, Transmit):
            result.append((state, pdu.decode(record.output.frame).flags))
    return result


def test_flags_follow_discovery_states() -> None:
    """Local Evaluating while undecided, Local Stable once satisfied, Remote bits copied."""
    pair = Pair()
    pair.run_until(3)
    for name in "ab":
        by_state = _flags_by_state(pair, name)
        assert {state for state, _ in by_state} == {S.ACTIVE_SEND_LOCAL, S.SEND_LOCAL_REMOTE_OK, S.SEND_ANY}
        for state, flags in by_state:
            if state is S.ACTIVE_SEND_LOCAL:
                assert flags == Flag.LOCAL_EVALUATING
            elif state is S.SEND_LOCAL_REMOTE_OK:
                # stable ourselves; the peer's Local Evaluating copied as Remote Evaluating
                assert flags == Flag.LOCAL_STABLE | Flag.REMOTE_EVALUATING
            else:
                assert flags == STABLE


# -- oper status and peer info ----------------------------------------------------------


def test_oper_status_of_every_state_change() -> None:
    """Every DiscoveryChanged carries the RFC 4878 dot3OamOperStatus of its new state."""
    expected = {
        S.FAULT: OperStatus.LINK_FAULT,
        S.ACTIVE_SEND_LOCAL: OperStatus.ACTIVE_SEND_LOCAL,
        S.PASSIVE_WAIT: OperStatus.PASSIVE_WAIT,
        S.SEND_LOCAL_REMOTE: OperStatus.SEND_LOCAL_AND_REMOTE,
        S.SEND_LOCAL_REMOTE_OK: OperStatus.SEND_LOCAL_AND_REMOTE_OK,
        S.SEND_ANY: OperStatus.OPERATIONAL,
    }
    pair = Pair(PortSettings(), PASSIVE)
    pair.run_until(2)
    pair.call("a", "set_link", False)
    pair.run_for(1)
    pair.call("a", "set_link", True)
    pair.run_for(2)
    changes = [r.output for r in pair.records if isinstance(r.output, DiscoveryChanged)]
    assert {c.new for c in changes} == set(expected)
    for c in changes:
        assert c.oper_status is expected[c.new], c


@pytest.mark.parametrize(
    ("settings", "status"),
    [
        (PortSettings(enabled=False), OperStatus.DISABLED),
        (PortSettings(), OperStatus.ACTIVE_SEND_LOCAL),
        (PASSIVE, OperStatus.PASSIVE_WAIT),
    ],
)
def test_oper_status_of_a_lone_port(settings: PortSettings, status: OperStatus) -> None:
    pair = lone(settings)
    pair.run_for(3)
    assert pair.a.oper_status is status


def test_disabled_port_sends_nothing_and_ignores_its_peer() -> None:
    pair = Pair(PortSettings(enabled=False), PortSettings())
    pair.run_until(5)
    assert pair.a.state is S.FAULT
    assert pair.sent_times("a") == []
    assert pair.b.state is S.ACTIVE_SEND_LOCAL


def test_peer_info_reports_the_peers_local_information() -> None:
    b = PortSettings(
        mode=OamMode.PASSIVE,
        oui=0x00_11_22,
        vendor_info=0xDEADBEEF,
        max_pdu_size=1000,
        loopback_process=True,
        link_events=True,
        variable_retrieval=False,
        unidirectional=True,
    )
    pair = discovered(PortSettings(), b)
    peer = pair.a.peer
    assert peer is not None
    assert peer.mac == B_MAC
    assert (peer.oui, peer.vendor_info, peer.max_pdu_size) == (0x001122, 0xDEADBEEF, 1000)
    assert peer.mode_active is False
    assert peer.config_revision == 0
    assert peer.functions == OamConfig.REMOTE_LOOPBACK | OamConfig.LINK_EVENTS | OamConfig.UNIDIRECTIONAL
    assert peer.oam_version == 1
    assert pair.b.peer is not None and pair.b.peer.mac == A_MAC and pair.b.peer.mode_active
    # and the peer is forgotten with the link
    pair.call("a", "set_link", False)
    assert pair.a.peer is None
    assert outputs(pair, "a", PeerChanged)[-1].peer is None


def test_information_rates_are_one_per_interval_in_steady_state() -> None:
    pair = discovered()
    t = pair.now
    pair.run_for(20)
    for name in "ab":
        times = information_times(pair, name, since=t)
        assert len(times) == 20
        assert gaps(times) == pytest.approx([1.0] * 19)
