"""Property tests: random link histories for a pair, random conditions for the table,
random OAMPDUs from the peer.  Example counts are modest so the suite stays quick."""

from __future__ import annotations

from typing import Any

import attrs
from hypothesis import HealthCheck, given, settings, strategies as st

import pdu
from efmoam.core import OamMode, PortSettings
from efmoam.core.discovery import TRANSITIONS, Conditions, DiscoveryState, must_fault, step
from tests.core.test_support import B_MAC, BUDGET, Pair, S, discovered, max_in_window
from tests.pdu.strategies import oampdus

PROPERTY_SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: configurations a port may be switched to (multiplier 2 at 0.1 s is left out: see
#: test_transmit.test_fastest_lost_link_setting_survives_discovery)
CONFIGURATIONS = [
    PortSettings(),
    PortSettings(vendor_info=1),
    PortSettings(mode=OamMode.PASSIVE),
    PortSettings(unidirectional=True),
    PortSettings(transmit_interval=0.1, multiplier=3),
    PortSettings(transmit_interval=0.5, multiplier=2, link_events=True),
]

ports = st.sampled_from("ab")
events = st.one_of(
    st.tuples(st.just("link"), ports, st.booleans()),
    st.tuples(st.just("cut"), ports, st.booleans()),
    st.tuples(st.just("loss"), ports, st.sampled_from([0.0, 0.3, 0.9])),
    st.tuples(st.just("reconfigure"), ports, st.sampled_from(range(len(CONFIGURATIONS)))),
    st.tuples(st.just("advance"), st.just(""), st.floats(0.0, 3.0)),
    st.tuples(st.just("send"), ports, st.integers(1, 30)),
)


# -- the invariants -------------------------------------------------------------------


def invariant_violations(pair: Pair) -> list[str]:
    problems = []
    for name, port in pair.ports.items():
        if not port.link_up and port.state is not S.FAULT:
            problems.append(f"{name}: link down but {port.state.value}")
        if port.state is S.SEND_ANY and not (port._peer.verdict is True and port.remote_stable is True):
            problems.append(f"{name}: SEND_ANY with verdict {port._peer.verdict}, remote_stable {port.remote_stable}")
    return problems


def apply(pair: Pair, event: tuple[str, str, Any]) -> None:
    kind, name, value = event
    if kind == "link":
        pair.call(name, "set_link", value)
    elif kind == "cut":
        pair.link[name].cut = value
    elif kind == "loss":
        pair.link[name].loss = value
    elif kind == "reconfigure":
        pair.call(name, "reconfigure", CONFIGURATIONS[value])
    elif kind == "send":  # an operator's burst of requests, when they are allowed
        for _ in range(value if pair.ports[name].state is S.SEND_ANY else 0):
            pair.call(name, "send_org_specific", 0x001122, b"x")
    else:
        pair.run_for(value)


@PROPERTY_SETTINGS
@given(st.lists(events, max_size=25), st.integers(0, 2**16))
def test_random_link_histories_keep_the_invariants(history: list[tuple[str, str, Any]], seed: int) -> None:
    pair = Pair(seed=seed)
    seen: list[str] = []
    pair.on_output = lambda _name, _output: seen.extend(invariant_violations(pair))
    pair.run_until(1.0)
    for event in history:
        apply(pair, event)
        seen.extend(invariant_violations(pair))
    pair.run_for(1.0)
    assert seen == []
    for name in "ab":
        assert max_in_window(pair.sent_times(name)) <= BUDGET, name


@PROPERTY_SETTINGS
@given(st.lists(events, max_size=15), st.integers(0, 2**16))
def test_pair_always_recovers_once_the_link_is_repaired(history: list[tuple[str, str, Any]], seed: int) -> None:
    pair = Pair(seed=seed)
    pair.run_until(1.0)
    for event in history:
        apply(pair, event)
    for name in "ab":  # repair everything
        pair.link[name] = attrs.evolve(pair.link[name], cut=False, loss=0.0)
        pair.call(name, "set_link", True)
        pair.call(name, "reconfigure", PortSettings())
    pair.run_for(12.0)
    assert pair.both_in(S.SEND_ANY), (pair.a.state, pair.b.state)


# -- the table ------------------------------------------------------------------------

conditions = st.builds(
    Conditions,
    begin=st.booleans(),
    link_ok=st.booleans(),
    lost_link=st.booleans(),
    active=st.booleans(),
    remote_state_valid=st.booleans(),
    local_satisfied=st.booleans(),
    remote_stable=st.booleans(),
)
ROWS = {(source, target): guard for source, guard, target in TRANSITIONS}


def effective(c: Conditions) -> Conditions:
    """The conditions the rows see after the global transition forgot the peer."""
    if not must_fault(c):
        return c
    return attrs.evolve(c, lost_link=False, remote_state_valid=False, local_satisfied=False, remote_stable=False)


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(list(DiscoveryState)), conditions)
def test_step_follows_the_table_to_a_fixed_point(state: DiscoveryState, c: Conditions) -> None:
    entered = step(state, c)
    assert len(entered) <= len(DiscoveryState)
    final = entered[-1] if entered else state
    # a fixed point: nothing moves any more under the same (remembered) conditions
    assert step(final, effective(c)) == []
    # every move is the global transition or a row whose guard holds
    previous = state
    for i, target in enumerate(entered):
        if target is S.FAULT:
            assert i == 0 and must_fault(c)
        else:
            guard = ROWS.get((previous, target))
            assert guard is not None and guard(effective(c)), (previous, target)
        previous = target


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(list(DiscoveryState)), conditions)
def test_link_failure_always_means_fault(state: DiscoveryState, c: Conditions) -> None:
    c = attrs.evolve(c, link_ok=False)
    entered = step(state, c)
    if state is S.FAULT and not c.lost_link:
        assert entered == []
    else:
        assert entered == [S.FAULT]


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(list(DiscoveryState)), conditions)
def test_send_any_needs_satisfied_and_remote_stable(state: DiscoveryState, c: Conditions) -> None:
    if S.SEND_ANY in step(state, c):
        assert c.local_satisfied and c.remote_stable and not must_fault(c)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(list(DiscoveryState)), conditions)
def test_global_conditions_win_everywhere(state: DiscoveryState, c: Conditions) -> None:
    entered = step(state, c)
    if c.begin or not c.link_ok:
        assert set(entered) <= {S.FAULT}
    if must_fault(c) and state is not S.FAULT:
        assert entered[0] is S.FAULT


# -- random OAMPDUs from the peer -----------------------------------------------------


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(oampdus, min_size=1, max_size=20), st.booleans())
def test_random_oampdus_from_the_peer_never_break_the_engine(frames: list[Any], from_peer: bool) -> None:
    pair = discovered(PortSettings(link_events=True, loopback_process=True), PortSettings(link_events=True))
    for i, oampdu in enumerate(frames):
        sent = attrs.evolve(oampdu, src=B_MAC) if from_peer else oampdu
        pair.inject("a", pdu.encode(sent), delay=i * 0.05)
    pair.run_for(3.0)
    assert invariant_violations(pair) == []
    assert max_in_window(pair.sent_times("a")) <= BUDGET
