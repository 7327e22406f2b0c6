"""The action policy on the fake clock: every session event, every action, latches,
automatic recovery with its hold-down, tracked conditions and the causes of clears."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from efmoam.core import DiscoveryState, OamPort, PortSettings
from efmoam.core.linkmon import Location
from efmoam.core.linkmon.settings import PortAction
from efmoam.core.outputs import EventLogged, LoopbackStatus, PolicyEvent, PortServiceChanged
from efmoam.core.policy.settings import Action, EventActions, PolicySettings, Recovery, Track, TrackKind
from efmoam.core.settings import PeerPolicy
from pdu import CRITICAL_FLAGS, Code, Flag, Information, InfoTlv, OamConfig, decode, encode
from pdu.enums import InfoTlvType
from tests.core.pair import PortPair
from tests.linkmon import Feed, link_monitoring, monitor, port_settings

S = DiscoveryState
A_MAC = "02:00:00:00:00:0a"
B_MAC = "02:00:00:00:00:0b"


def policy(**fields: Any) -> PolicySettings:
    actions = {k: frozenset(Action(a) for a in v) for k, v in fields.pop("actions", {}).items()}
    return PolicySettings(event_actions=EventActions(**actions), **fields)


def with_policy(settings: PortSettings | None = None, **fields: Any) -> PortSettings:
    return attrs.evolve(settings or PortSettings(), policy=policy(**fields))


def events(pair: PortPair, name: str = "a", event: str | None = None) -> list[tuple[float, PolicyEvent]]:
    return [
        (r.time, r.output)
        for r in pair.outputs(name, PolicyEvent)
        if event is None or r.output.name == event  # type: ignore[union-attr]
    ]


def service(pair: PortPair, name: str = "a") -> PortServiceChanged | None:
    changes = pair.outputs(name, PortServiceChanged)
    return changes[-1].output if changes else None  # type: ignore[return-value]


def discovered(a: PortSettings | None = None, b: PortSettings | None = None) -> PortPair:
    pair = PortPair(a, b)
    pair.run_for(5)
    assert pair.both_in(S.SEND_ANY)
    return pair


def info_flags(pair: PortPair, name: str = "a") -> Flag:
    """The Flags of the last Information OAMPDU `name` sent."""
    sent = [r.output for r in pair.records if r.port == name and type(r.output).__name__ == "Transmit"]
    infos = [decode(o.frame) for o in sent if o.code == Code.INFORMATION]  # type: ignore[union-attr]
    return infos[-1].flags


# -- session_up and session_down --------------------------------------------------------


def test_session_up_is_a_moment_when_discovery_completes() -> None:
    pair = discovered()
    (time, up), *_ = events(pair, event="session_up")
    assert up.moment and up.active and up.actions == ("log",) and up.cause == "discovery_complete"
    assert time == pair.first_time_in("a", S.SEND_ANY)
    assert not events(pair, event="session_down")


def test_session_down_when_the_peer_is_lost_and_over_when_it_is_back() -> None:
    pair = discovered(with_policy(actions={"session_down": ["block"]}))
    pair.link["b"].cut = True
    cut = pair.now
    pair.run_for(6)
    ((time, down),) = events(pair, event="session_down")
    assert down.active and down.cause == "session_lost" and down.detail == "lost_link"
    assert 4 <= time - cut <= 5.01  # the lost-link timer: 5 x 1 s after b's last keep-alive
    change = service(pair)
    assert change is not None and change.out_of_service and change.reasons == ("session_down",)
    pair.link["b"].cut = False
    pair.run_for(6)
    ends = [e for _, e in events(pair, event="session_down") if not e.active]
    assert ends and ends[0].cause == "condition" and not ends[0].latched
    assert service(pair) == PortServiceChanged(False, (), False)  # block: back in service with the session
    assert len(events(pair, event="session_up")) == 2


def test_discovery_timeout_raises_session_down_once_and_null_never() -> None:
    silent = attrs.evolve(PortSettings(), enabled=False)
    pair = PortPair(with_policy(discovery_timeout=3.0), silent)
    pair.run_for(10)
    ((time, down),) = events(pair, event="session_down")
    assert down.cause == "discovery_timeout" and time == pytest.approx(3.0)
    quiet = PortPair(PortSettings(), silent)
    quiet.run_for(60)
    assert not events(quiet, event="session_down")


def test_a_clear_acknowledges_a_lost_session() -> None:
    pair = discovered()
    pair.link["b"].cut = True
    pair.run_for(6)
    assert events(pair, event="session_down")[-1][1].active
    pair.call("a", "clear_events", None)
    last = events(pair, event="session_down")[-1][1]
    assert not last.active and last.cause == "operator"
    pair.run_for(10)  # still no peer: not raised again until a session comes and goes
    assert not events(pair, event="session_down")[-1][1].active


# -- capabilities_conflict, with error-disable and down -----------------------------------


def demanding(**fields: Any) -> PortSettings:
    settings = with_policy(**fields)
    return attrs.evolve(settings, peer_policy=PeerPolicy(required_functions=OamConfig.LINK_EVENTS))


def test_capabilities_conflict_error_disables_until_cleared() -> None:
    pair = PortPair(demanding(actions={"capabilities_conflict": ["error-disable"]}))
    pair.run_for(5)
    assert pair.a.state is S.SEND_LOCAL_REMOTE  # refused: discovery stays where it was
    ((_, conflict),) = events(pair, event="capabilities_conflict")
    assert conflict.active and conflict.latched and conflict.recovers_at is None
    assert "0x" in conflict.detail
    assert service(pair) == PortServiceChanged(True, ("capabilities_conflict",), False)
    # the peer now advertises what we need: the event ends, the latch stays
    pair.call("b", "reconfigure", attrs.evolve(pair.b.settings, link_events=True))
    pair.run_for(5)
    assert pair.a.state is S.SEND_ANY
    end = events(pair, event="capabilities_conflict")[-1][1]
    assert not end.active and end.latched and end.cause == "condition"
    assert pair.a.out_of_service
    assert pair.a.service.reasons == ("capabilities_conflict (latched)",)
    pair.call("a", "clear_events", None)
    released = events(pair, event="capabilities_conflict")[-1][1]
    assert released.released and released.cause == "operator"
    assert service(pair) == PortServiceChanged(False, (), False)


def test_down_is_its_own_service_state() -> None:
    pair = PortPair(demanding(actions={"capabilities_conflict": ["down", "exec"]}))
    pair.run_for(3)
    ((_, conflict),) = events(pair, event="capabilities_conflict")
    assert conflict.actions == ("down", "exec")
    assert service(pair) == PortServiceChanged(False, ("capabilities_conflict",), True)
    assert pair.a.out_of_service


# -- unidirectional --------------------------------------------------------------------


def test_unidirectional_when_the_peer_stops_echoing_and_clear_when_it_echoes_again() -> None:
    pair = discovered(with_policy(actions={"unidirectional": ["block"]}))
    pair.link["a"].cut = True  # b no longer hears a; a still hears b
    cut = pair.now
    pair.run_for(15)
    ((time, uni),) = [(t, e) for t, e in events(pair, event="unidirectional") if e.active]
    # b's lost-link timer (5 s), then no echo for unidirectional_time (5 x 1 s), within an interval
    assert 9 <= time - cut <= 11.01
    assert "no Remote Information TLV" in uni.detail
    assert "unidirectional" in service(pair).reasons  # type: ignore[union-attr]
    pair.link["a"].cut = False
    pair.run_for(6)
    end = events(pair, event="unidirectional")[-1][1]
    assert not end.active and end.cause == "condition"
    assert not pair.a.out_of_service
    assert pair.both_in(S.SEND_ANY)


def test_unidirectional_time_is_configurable_and_not_raised_on_a_healthy_link() -> None:
    pair = discovered(with_policy(unidirectional_time=2.0))
    pair.run_for(30)
    assert not events(pair, event="unidirectional")
    pair.link["a"].cut = True
    cut = pair.now
    pair.run_for(10)
    (time, _), *_ = events(pair, event="unidirectional")
    assert 6 <= time - cut <= 8.01  # 4-5 s for b to lose us, then 2 s


# -- loop, with automatic recovery and hold-down -------------------------------------------


def own_frame(pair: PortPair) -> bytes:
    tlv = InfoTlv(oam_config=OamConfig.ACTIVE)
    return encode(Information(A_MAC, Flag.LOCAL_EVALUATING, (tlv,)))


def test_a_loop_error_disables_by_default() -> None:
    pair = discovered()
    pair.inject("a", own_frame(pair))
    pair.run_for(0.01)
    ((_, loop),) = events(pair, event="loop")
    assert loop.active and loop.actions == ("error-disable",) and loop.latched
    assert service(pair) == PortServiceChanged(True, ("loop",), False)
    pair.run_for(6)  # no more frames of ours: the loop is over, the latch is not
    end = events(pair, event="loop")[-1][1]
    assert not end.active and end.latched
    assert pair.a.out_of_service


def test_automatic_recovery_and_hold_down() -> None:
    pair = discovered(with_policy(recovery=Recovery(auto_after=30.0, hold_down=300.0)))
    pair.inject("a", own_frame(pair))
    pair.run_for(0.01)
    start = pair.now
    first = events(pair, event="loop")[0][1]
    assert first.recovers_at == pytest.approx(start + 30.0, abs=0.02)
    pair.run_for(31)
    released = [e for _, e in events(pair, event="loop") if e.released]
    assert released and released[0].cause == "recovery"
    assert not pair.a.out_of_service
    # a second loop within the hold-down: latched for good
    pair.inject("a", own_frame(pair))
    pair.run_for(0.01)
    again = events(pair, event="loop")[-1][1]
    assert again.active and again.latched and again.recovers_at is None
    assert pair.a.policy_view()["latches"][0]["held_down"]
    pair.run_for(120)
    assert pair.a.out_of_service
    pair.call("a", "clear_events", Location.LOCAL)
    assert not pair.a.out_of_service
    # cleared by hand: the hold-down is forgotten, the next latch recovers by itself again
    pair.inject("a", own_frame(pair))
    pair.run_for(0.01)
    assert events(pair, event="loop")[-1][1].recovers_at is not None


def test_a_frame_monitor_failure_recovers_by_itself_when_asked() -> None:
    lm = link_monitoring(errored_frame=monitor())
    lm = attrs.evolve(lm, local_sf_action=attrs.evolve(lm.local_sf_action, port_action=PortAction("error-disable")))
    settings = with_policy(port_settings(lm), recovery=Recovery(auto_after=30.0, hold_down=60.0))
    pair = discovered(settings)
    feed = Feed(pair)
    feed.sample(0)
    pair.run_for(1)
    feed.sample(5)
    assert pair.a.out_of_service
    latch = next(e for _, e in events(pair) if e.latched)
    assert latch.name == "local errored_frame_event" and latch.recovers_at is not None
    for _ in range(31):
        pair.run_for(1)
        feed.sample(0)
    assert not pair.a.out_of_service
    cleared = [r.output for r in pair.outputs("a", EventLogged) if not r.output.entry.active]  # type: ignore[union-attr]
    assert cleared[-1].cause == "recovery"  # type: ignore[union-attr]
    feed.sample(3)  # fails again within the hold-down: stays out until cleared
    assert pair.a.out_of_service and pair.a.policy_view()["latches"][0]["held_down"]


# -- wiring conflict -------------------------------------------------------------------


def test_wiring_conflict_when_the_peer_echoes_someone_else_for_longer_than_an_interval() -> None:
    pair = discovered(with_policy(actions={"wiring_conflict": ["block"]}))
    pair.link["b"].cut = True  # b's own frames are replaced by ours, which echo a stranger
    stranger = InfoTlv(type=InfoTlvType.REMOTE, oam_config=OamConfig.ACTIVE, oui=0x00AB12)
    local = pair.b.local_tlv
    start = pair.now
    for n in range(4):
        frame = encode(Information(B_MAC, Flag.LOCAL_STABLE | Flag.REMOTE_STABLE, (local, stranger)))
        pair.inject("a", frame, delay=n * 1.0)
    pair.run_for(3.5)
    ((time, _),) = [(t, e) for t, e in events(pair, event="wiring_conflict") if e.active]
    assert 1.0 <= time - start <= 2.01
    assert "wiring_conflict" in service(pair).reasons  # type: ignore[union-attr]
    pair.link["b"].cut = False
    pair.run_for(3)
    assert not events(pair, event="wiring_conflict")[-1][1].active
    assert not pair.a.out_of_service


# -- remote loopback and notify-peer ---------------------------------------------------------


def test_remote_loopback_with_notify_peer_sets_critical_event_while_it_lasts() -> None:
    a = with_policy(attrs.evolve(PortSettings(), loopback_process=True), actions={"remote_loopback": ["notify-peer"]})
    pair = discovered(a, port_settings(link_monitoring()))  # a peer that reads Critical Event as an event
    pair.call("b", "start_loopback")
    pair.run_for(2)
    assert pair.a.loopback is LoopbackStatus.LOCAL_LOOPBACK
    ((_, loop),) = events(pair, event="remote_loopback")
    assert loop.active and loop.actions == ("notify-peer",)
    assert info_flags(pair) & CRITICAL_FLAGS == Flag.CRITICAL_EVENT
    assert pair.b.peer_flags & Flag.CRITICAL_EVENT
    logged = [r.output.entry for r in pair.outputs("a", EventLogged)]  # type: ignore[union-attr]
    assert logged[-1].location is Location.LOCAL and logged[-1].event_type.name == "CRITICAL_LINK_EVENT"
    assert not pair.a.out_of_service  # notify-peer does not touch the port
    pair.call("b", "stop_loopback")
    pair.run_for(2)
    assert not events(pair, event="remote_loopback")[-1][1].active
    assert not info_flags(pair) & CRITICAL_FLAGS
    assert not pair.b.peer_flags & Flag.CRITICAL_EVENT


# -- tracked conditions ----------------------------------------------------------------


def test_a_tracked_condition_sends_critical_event_while_it_holds() -> None:
    tracked = with_policy(track=(Track(TrackKind.INTERFACE, "eth9"),))
    pair = discovered(tracked)
    pair.call("a", "set_tracked", "interface:eth9", True)
    pair.run_for(1.5)
    ((_, track),) = events(pair, event="track:interface:eth9")
    assert track.active and track.actions == ("notify-peer",)
    assert info_flags(pair) & Flag.CRITICAL_EVENT and pair.b.peer_flags & Flag.CRITICAL_EVENT
    # the operator's clear ends the log entry, but the condition holds: it comes back
    pair.call("a", "clear_events", None)
    pair.run_for(1.5)
    assert events(pair, event="track:interface:eth9")[-1][1].active
    assert info_flags(pair) & Flag.CRITICAL_EVENT
    pair.call("a", "set_tracked", "interface:eth9", False)
    pair.run_for(1.5)
    assert not events(pair, event="track:interface:eth9")[-1][1].active
    assert not info_flags(pair) & Flag.CRITICAL_EVENT and not pair.b.peer_flags & Flag.CRITICAL_EVENT
    pair.call("a", "set_tracked", "unit:not-configured", True)  # a name the port does not track
    assert not events(pair, event="track:unit:not-configured")


def test_the_operators_critical_event_and_a_tracked_one_are_independent() -> None:
    pair = discovered(with_policy(track=(Track(TrackKind.UNIT, "frr.service"),)))
    pair.call("a", "set_local_flags", Flag.CRITICAL_EVENT, True)
    pair.call("a", "set_tracked", "unit:frr.service", True)
    pair.call("a", "set_local_flags", Flag.CRITICAL_EVENT, False)
    pair.run_for(1.5)
    assert info_flags(pair) & Flag.CRITICAL_EVENT  # still wanted by the tracked condition
    pair.call("a", "set_tracked", "unit:frr.service", False)
    pair.run_for(1.5)
    assert not info_flags(pair) & Flag.CRITICAL_EVENT


# -- link monitoring's events with the new actions ------------------------------------------


def test_a_peer_flag_with_error_disable_latches_after_the_flag_clears() -> None:
    lm = link_monitoring()
    lm = attrs.evolve(lm, peer_actions=attrs.evolve(lm.peer_actions, critical_event=PortAction("error-disable")))
    pair = discovered(port_settings(lm))
    pair.call("b", "set_local_flags", Flag.CRITICAL_EVENT, True)
    pair.run_for(1.5)
    assert service(pair) == PortServiceChanged(True, ("remote critical_link_event",), False)
    pair.call("b", "set_local_flags", Flag.CRITICAL_EVENT, False)
    pair.run_for(1.5)
    cleared = [r.output for r in pair.outputs("a", EventLogged) if not r.output.entry.active]  # type: ignore[union-attr]
    assert cleared[-1].cause == "peer"  # type: ignore[union-attr]
    assert pair.a.out_of_service
    assert pair.a.service.reasons == ("remote critical_link_event (latched)",)
    pair.call("a", "clear_events", Location.LOCAL)  # a local clear leaves remote latches
    assert pair.a.out_of_service
    pair.call("a", "clear_events", Location.REMOTE)
    assert not pair.a.out_of_service


def test_a_peer_flag_with_down() -> None:
    lm = link_monitoring()
    lm = attrs.evolve(lm, peer_actions=attrs.evolve(lm.peer_actions, dying_gasp=PortAction("down")))
    pair = discovered(port_settings(lm))
    pair.call("b", "set_local_flags", Flag.DYING_GASP, True)
    pair.run_for(1.5)
    assert service(pair) == PortServiceChanged(False, ("remote dying_gasp_event",), True)


def test_every_clear_says_why() -> None:
    pair = discovered()
    pair.call("a", "set_local_flags", Flag.CRITICAL_EVENT, True)
    pair.call("a", "clear_events", None)
    pair.call("b", "set_local_flags", Flag.LINK_FAULT, True)
    pair.run_for(1.5)
    pair.call("a", "set_link", False)
    causes = [r.output.cause for r in pair.outputs("a", EventLogged)]  # type: ignore[union-attr]
    assert causes == ["raised", "operator", "raised", "link"]


# -- reload, persistence, the dying gasp ---------------------------------------------------


def test_new_actions_restart_the_event_under_them() -> None:
    pair = PortPair(demanding())
    pair.run_for(3)
    assert not pair.a.out_of_service
    blocking = policy(actions={"capabilities_conflict": ["block"]})
    pair.call("a", "reconfigure", attrs.evolve(pair.a.settings, policy=blocking))
    ended, started = [e for _, e in events(pair, event="capabilities_conflict")][-2:]
    assert not ended.active and ended.cause == "reload"
    assert started.active and started.actions == ("block",)
    assert pair.a.out_of_service


def test_latches_survive_a_restart() -> None:
    pair = discovered()
    pair.inject("a", own_frame(pair))
    pair.run_for(6)
    saved = pair.a.saved_state()
    assert saved["latches"][0]["name"] == "loop"
    again = OamPort(pair.a.settings, A_MAC, now=pair.now)
    assert again.restore(saved, now=pair.now) == []
    assert again.out_of_service and again.take_outputs()[-1] == PortServiceChanged(True, ("loop (latched)",), False)
    broken = dict(saved, latches=[{"name": "loop", "action": "block", "location": "local", "held_down": False}])
    fresh = OamPort(pair.a.settings, A_MAC, now=pair.now)
    assert any("latches" in problem for problem in fresh.restore(broken, now=pair.now))
    assert not fresh.out_of_service


@pytest.mark.parametrize("count", [1, 4])
def test_dying_gasp_count(count: int) -> None:
    pair = discovered(attrs.evolve(PortSettings(), dying_gasp_count=count))
    before = len(pair.records)
    pair.call("a", "send_dying_gasp")  # the copies go out at once: the budget allows a burst
    sent = [r.output for r in pair.records[before:] if r.port == "a" and type(r.output).__name__ == "Transmit"]
    gasps = [f for f in (decode(o.frame) for o in sent) if f.flags & Flag.DYING_GASP]  # type: ignore[union-attr]
    assert len(gasps) == count


_LATCH = {"name": "loop", "action": "error-disable", "location": "local", "key": None, "held_down": False}


@pytest.mark.parametrize(
    "latches",
    [
        "loop",
        5,
        None,
        [1],
        [{"name": 5}],
        [dict(_LATCH, name="x" * 500)],
        [dict(_LATCH, location="mars")],
        [dict(_LATCH, action="log")],
        [dict(_LATCH, held_down="no")],
        [dict(_LATCH, key={"location": "local"})],
        [dict(_LATCH, key={"location": "local", "monitor": "no-such-monitor"})],
        [dict(_LATCH, name=f"loop{n}") for n in range(65)],
        [[[[[]]]]],
    ],
)
def test_hostile_saved_latches_are_refused_and_the_rest_restored(latches: object) -> None:
    pair = discovered()
    pair.call("b", "set_local_flags", Flag.LINK_FAULT, True)
    pair.run_for(1.5)
    saved = dict(pair.a.saved_state(), latches=latches)
    fresh = OamPort(pair.a.settings, A_MAC, now=pair.now)
    problems = fresh.restore(saved, now=pair.now)
    assert [p for p in problems if p.startswith("latches not restored")], problems
    assert fresh.policy_view()["latches"] == []
    assert fresh.link_monitoring.active_events(), "the link monitoring state is restored all the same"
