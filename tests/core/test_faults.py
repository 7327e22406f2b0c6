"""Fault scenarios of robustness.md A6 that belong to the protocol engine."""

from __future__ import annotations

import attrs
import pytest

from efmoam.core import (
    DiscoveryChanged,
    LoopbackChanged,
    LoopbackStatus,
    PeerChanged,
    PeerFlagsChanged,
    PortSettings,
    Transmit,
)
from pdu import Flag, VariableDescriptor, VariableRequest
from tests.core.test_support import (
    B_MAC,
    BUDGET,
    STABLE,
    Pair,
    S,
    as_remote,
    assert_budget,
    discovered,
    frame,
    information,
    max_in_window,
    outputs,
)

CRITICAL = [Flag.DYING_GASP, Flag.CRITICAL_EVENT, Flag.LINK_FAULT]


# -- peer silent ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "lost_after"),
    [(PortSettings(), 5.0), (PortSettings(transmit_interval=0.5, multiplier=3), 1.5)],
    ids=["default", "3x0.5s"],
)
def test_silent_peer_resets_discovery_after_the_lost_link_time(settings: PortSettings, lost_after: float) -> None:
    pair = discovered(settings, PortSettings(loopback_process=True))
    pair.call("a", "start_loopback")
    pair.run_for(0.5)
    assert pair.a.loopback is LoopbackStatus.REMOTE_LOOPBACK
    pair.link["b"].cut = pair.link["a"].cut = True  # b dies
    last_rx = max(pair.sent_times("b")) + pair.link["b"].delay
    pair.run_for(lost_after + 2)
    fault = next(r for r in pair.outputs("a", DiscoveryChanged) if r.output.new is S.FAULT)
    assert fault.time == pytest.approx(last_rx + lost_after)
    assert fault.output.cause == "lost_link"
    assert pair.a.peer is None and pair.a._peer.local_tlv is None  # remote state invalid
    assert outputs(pair, "a", PeerChanged)[-1].peer is None
    change = outputs(pair, "a", LoopbackChanged)[-1]
    assert (change.status, change.cause) == (LoopbackStatus.NO_LOOPBACK, "fault")
    assert pair.a.state is S.ACTIVE_SEND_LOCAL  # and looking for a peer again


@pytest.mark.parametrize("lost", ["a", "b"], ids=["a-to-b-lost", "b-to-a-lost"])
def test_one_way_link_is_detected_within_the_timer(lost: str) -> None:
    pair = discovered()
    deaf = pair.peer_of(lost)  # the port that no longer hears anything
    pair.link[lost].cut = True
    t = pair.now
    pair.run_for(6.0)  # lost-link time plus one interval
    assert pair.first_time_in(deaf, S.FAULT) is not None
    assert pair.first_time_in(deaf, S.FAULT) <= t + 5.0
    for name in "ab":
        assert pair.ports[name].state is not S.SEND_ANY
    pair.run_for(30)
    for name in "ab":
        assert S.SEND_ANY not in [c.new for c in outputs(pair, name, DiscoveryChanged, since=t + 6)]


# -- link flap storm --------------------------------------------------------------------


@pytest.mark.parametrize("unidirectional", [False, True])
def test_flap_storm(unidirectional: bool) -> None:
    pair = discovered(PortSettings(unidirectional=unidirectional))
    violations: list[str] = []

    def check(name: str, _output: object) -> None:
        port = pair.ports[name]
        if not port.link_up and port.state is not S.FAULT:
            violations.append(f"{name} in {port.state} with its link down")

    pair.on_output = check
    start, toggles = pair.now, 100
    up = True
    for _ in range(toggles):  # every 100 ms for 10 s
        up = not up
        pair.call("a", "set_link", up)
        assert up or pair.a.state is S.FAULT
        pair.run_for(0.1)
    assert up  # an even number of toggles: the link ends up
    storm = [r for r in pair.records if r.time >= start]
    assert violations == []
    assert_budget(pair)
    for name in "ab":
        produced = [r for r in storm if r.port == name]
        assert len(produced) <= 6 * toggles, (name, len(produced))  # a constant per toggle
        per_second = max_in_window([r.time for r in produced if not isinstance(r.output, Transmit)])
        assert per_second <= 6 * 10, name
    settled = pair.now
    pair.run_for(2.0)
    assert pair.both_in(S.SEND_ANY)
    assert pair.first_time_in("a", S.SEND_ANY) is not None
    assert max(r.time for r in pair.outputs("a", DiscoveryChanged)) <= settled + 1.0


def test_link_held_down_stays_in_fault() -> None:
    pair = discovered(PortSettings(unidirectional=True))
    pair.call("a", "set_link", False)
    pair.run_for(30)
    assert pair.a.state is S.FAULT
    assert {c.new for c in outputs(pair, "a", DiscoveryChanged, since=1.5)} == {S.FAULT}
    assert max_in_window(pair.sent_times("a")) <= BUDGET


# -- forged critical flags --------------------------------------------------------------


def forged(pair: Pair, flags: Flag) -> bytes:
    """An Information OAMPDU as b would send it, with `flags`."""
    return information(B_MAC, flags, pair.b.local_tlv, as_remote(pair.a.local_tlv))


@pytest.mark.parametrize("flag", CRITICAL)
def test_forged_critical_flag_is_raised_and_cleared(flag: Flag) -> None:
    pair = discovered()
    t = pair.now
    pair.inject("a", forged(pair, STABLE | flag))
    pair.run_for(0.0)
    (raised,) = outputs(pair, "a", PeerFlagsChanged, t)
    assert (raised.flags, raised.raised, raised.cleared) == (flag, flag, Flag(0))
    assert pair.a.peer_flags & flag
    pair.run_for(1.0)  # b's next Information no longer carries it
    changes = outputs(pair, "a", PeerFlagsChanged, t)
    assert len(changes) == 2
    assert (changes[1].flags, changes[1].raised, changes[1].cleared) == (Flag(0), Flag(0), flag)
    pair.run_for(1.0)
    assert pair.both_in(S.SEND_ANY)


def test_repeated_critical_flag_is_reported_once() -> None:
    pair = discovered()
    pair.link["b"].cut = True  # only the forged frames reach a
    t = pair.now
    for _ in range(5):
        pair.inject("a", forged(pair, STABLE | Flag.DYING_GASP))
        pair.run_for(0.5)
    assert len(outputs(pair, "a", PeerFlagsChanged, t)) == 1


def test_real_critical_flag_crosses_the_link() -> None:
    pair = discovered()
    t = pair.now
    pair.call("b", "set_local_flags", Flag.DYING_GASP, True)
    pair.run_for(0.01)
    (change,) = outputs(pair, "a", PeerFlagsChanged, t)
    assert change.raised == Flag.DYING_GASP


def test_critical_flags_are_cleared_when_the_peer_is_lost() -> None:
    pair = discovered()
    pair.call("b", "set_local_flags", Flag.CRITICAL_EVENT, True)
    pair.run_for(0.5)
    pair.link["b"].cut = True
    pair.run_for(6)
    last = outputs(pair, "a", PeerFlagsChanged)[-1]
    assert (last.flags, last.cleared) == (Flag(0), Flag.CRITICAL_EVENT)


# -- flood from the peer ----------------------------------------------------------------


def test_flood_of_frames_from_the_peer_does_not_make_us_exceed_the_budget() -> None:
    """1000 frames in one second: Variable Requests (each wants an answer) and Information
    OAMPDUs whose Local TLV flips between two revisions (each wants an Information back)."""
    pair = discovered()
    queue_sizes: list[int] = []
    pair.on_output = lambda name, _output: queue_sizes.append(pair.ports[name]._tx.queued)
    start = pair.now
    request = frame(VariableRequest(B_MAC, STABLE, (VariableDescriptor(7, 251),)))
    revisions = [pair.b.local_tlv, attrs.evolve(pair.b.local_tlv, revision=pair.b.local_tlv.revision + 1)]
    infos = [information(B_MAC, STABLE, tlv, as_remote(pair.a.local_tlv)) for tlv in revisions]
    for i in range(1000):
        pair.inject("a", request if i % 2 else infos[i // 2 % 2], delay=i / 1000)
    pair.run_for(1.0)
    during = [t for t in pair.sent_times("a") if t >= start]
    assert len(during) <= BUDGET + 1  # one second (both ends included) of a full budget
    pair.run_for(10)
    assert_budget(pair)
    assert max(queue_sizes) <= pair.a.settings.tx_queue_limit
    assert pair.a.stats.frames_lost_due_to_oam > 0
    assert pair.a.stats.variable_request_rx == 500
    assert pair.both_in(S.SEND_ANY)
