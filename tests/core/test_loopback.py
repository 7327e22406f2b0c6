"""OAM remote loopback (57.2.11): enable, disable, timeout, refusal, collision, teardown."""

from __future__ import annotations

import pytest

from efmoam.core import (
    LocalProtocolError,
    LoopbackChanged,
    LoopbackStatus,
    OamMode,
    PortSettings,
)
from pdu import Information, LoopbackCommand, LoopbackControl, MuxAction, ParserAction
from tests.core.test_support import (
    A_MAC,
    B_MAC,
    STABLE,
    Pair,
    S,
    as_remote,
    discovered,
    drops,
    frame,
    information,
    lone,
    outputs,
    peer_tlv,
    sent_kind,
)

LOOPS = PortSettings(loopback_process=True)
L = LoopbackStatus


def statuses(pair: Pair, name: str, since: float = 0.0) -> list[LoopbackStatus]:
    return [c.status for c in outputs(pair, name, LoopbackChanged, since)]


def looping(a: PortSettings | None = None, b: PortSettings = LOOPS) -> Pair:
    """A pair where a has put b into loopback (asserted)."""
    pair = discovered(a, b)
    pair.call("a", "start_loopback")
    pair.run_for(0.5)
    assert (pair.a.loopback, pair.b.loopback) == (L.REMOTE_LOOPBACK, L.LOCAL_LOOPBACK)
    return pair


def consistent(pair: Pair) -> bool:
    """Both ports agree: nobody loops, or a loops b's frames knowingly (either way round)."""
    return (pair.a.loopback, pair.b.loopback) in {
        (L.NO_LOOPBACK, L.NO_LOOPBACK),
        (L.REMOTE_LOOPBACK, L.LOCAL_LOOPBACK),
        (L.LOCAL_LOOPBACK, L.REMOTE_LOOPBACK),
    }


# -- enable and disable -----------------------------------------------------------------


def test_enable_puts_the_peer_into_loopback() -> None:
    pair = discovered(None, LOOPS)
    t = pair.now
    pair.call("a", "start_loopback")
    assert pair.a.loopback is L.INITIATING_LOOPBACK
    pair.run_for(1.0)
    assert statuses(pair, "a", t) == [L.INITIATING_LOOPBACK, L.REMOTE_LOOPBACK]
    assert statuses(pair, "b", t) == [L.LOCAL_LOOPBACK]
    b_change = outputs(pair, "b", LoopbackChanged, t)[-1]
    assert (b_change.parser_action, b_change.mux_action) == (ParserAction.LOOPBACK, MuxAction.DISCARD)
    a_change = outputs(pair, "a", LoopbackChanged, t)[-1]
    assert (a_change.parser_action, a_change.mux_action) == (ParserAction.DISCARD, MuxAction.FORWARD)
    # b says so in the State field of its Local Information TLV
    assert (pair.b.local_tlv.parser_action, pair.b.local_tlv.mux_action) == (1, 1)
    last_b = sent_kind(pair, "b", Information)[-1][1]
    assert last_b.local is not None
    assert (last_b.local.parser_action, last_b.local.mux_action) == (1, 1)
    assert pair.a.stats.loopback_control_tx == pair.b.stats.loopback_control_rx == 1
    assert pair.both_in(S.SEND_ANY)


def test_disable_returns_both_to_forwarding() -> None:
    pair = looping()
    t = pair.now
    pair.call("a", "stop_loopback")
    assert pair.a.loopback is L.TERMINATING_LOOPBACK
    pair.run_for(1.0)
    assert pair.a.loopback is pair.b.loopback is L.NO_LOOPBACK
    for name in "ab":
        last = outputs(pair, name, LoopbackChanged, t)[-1]
        assert (last.parser_action, last.mux_action) == (ParserAction.FORWARD, MuxAction.FORWARD)
    last_b = sent_kind(pair, "b", Information)[-1][1]
    assert last_b.local is not None and (last_b.local.parser_action, last_b.local.mux_action) == (0, 0)
    assert pair.both_in(S.SEND_ANY)
    pair.run_for(10)
    assert pair.both_in(S.SEND_ANY)


def test_loopback_can_be_repeated() -> None:
    pair = looping()
    for _ in range(3):
        pair.call("a", "stop_loopback")
        pair.run_for(0.5)
        assert pair.a.loopback is pair.b.loopback is L.NO_LOOPBACK
        pair.call("a", "start_loopback")
        pair.run_for(0.5)
        assert consistent(pair) and pair.b.loopback is L.LOCAL_LOOPBACK


# -- no confirmation ------------------------------------------------------------------


def test_timeout_when_the_command_is_lost() -> None:
    pair = discovered(None, LOOPS)
    pair.link["a"].cut = True
    t = pair.now
    pair.call("a", "start_loopback")  # the command (and an Information) are lost
    pair.run_for(0.5)  # both go out in the next 0.1 s slots, into the cut
    pair.link["a"].cut = False
    pair.run_for(5)
    changes = outputs(pair, "a", LoopbackChanged, t)
    assert [c.status for c in changes] == [L.INITIATING_LOOPBACK, L.NO_LOOPBACK]
    assert changes[-1].cause == "timeout"
    timeout_at = next(r.time for r in pair.outputs("a", LoopbackChanged) if r.output.cause == "timeout")
    assert timeout_at == pytest.approx(t + pair.a.settings.loopback_timeout)
    assert pair.b.loopback is L.NO_LOOPBACK


def test_timeout_when_the_peer_never_confirms() -> None:
    """A peer that advertises loopback, keeps talking, but never shows parser LOOPBACK."""
    pair = lone()
    peer = peer_tlv(LOOPS)
    pair.inject("a", information(B_MAC, STABLE, peer, as_remote(pair.a.local_tlv)))
    pair.run_for(0.1)
    assert pair.a.state is S.SEND_ANY
    t = pair.now
    pair.call("a", "start_loopback")
    for _ in range(5):  # the peer's keep-alives, echoing whatever a advertises
        pair.inject("a", information(B_MAC, STABLE, peer, as_remote(pair.a.local_tlv)), delay=0.5)
        pair.run_for(1)
    assert sent_kind(pair, "a", LoopbackControl, t)
    change = outputs(pair, "a", LoopbackChanged, t)[-1]
    assert (change.status, change.cause) == (L.NO_LOOPBACK, "timeout")
    timeout_at = next(r.time for r in pair.outputs("a", LoopbackChanged) if r.output.cause == "timeout")
    assert timeout_at == pytest.approx(t + pair.a.settings.loopback_timeout)
    assert (change.parser_action, change.mux_action) == (ParserAction.FORWARD, MuxAction.FORWARD)


def test_port_without_loopback_processing_ignores_the_command() -> None:
    pair = discovered(None, PortSettings(loopback_process=False))
    pair.inject("b", frame(LoopbackControl(A_MAC, STABLE, LoopbackCommand.ENABLE)))
    pair.run_for(0.1)
    assert drops(pair, "b") == ["loopback_ignored"]
    assert pair.b.loopback is L.NO_LOOPBACK
    assert pair.b.local_tlv.parser_action == ParserAction.FORWARD


# -- refused requests -----------------------------------------------------------------


def test_start_loopback_refused_in_passive_mode() -> None:
    pair = discovered(PortSettings(mode=OamMode.PASSIVE), LOOPS)
    with pytest.raises(LocalProtocolError):
        pair.call("a", "start_loopback")
    assert pair.a.loopback is L.NO_LOOPBACK


def test_start_loopback_refused_before_send_any() -> None:
    pair = lone()
    with pytest.raises(LocalProtocolError):
        pair.call("a", "start_loopback")


def test_start_loopback_refused_towards_a_peer_without_loopback() -> None:
    pair = discovered(None, PortSettings(loopback_process=False))
    with pytest.raises(LocalProtocolError):
        pair.call("a", "start_loopback")
    assert sent_kind(pair, "a", LoopbackControl) == []


def test_start_and_stop_refused_in_the_wrong_loopback_state() -> None:
    pair = looping()
    with pytest.raises(LocalProtocolError):
        pair.call("a", "start_loopback")
    with pytest.raises(LocalProtocolError):
        pair.call("b", "stop_loopback")  # b loops a's frames: it is not b's loopback to stop


def test_loopback_command_from_a_passive_peer_is_refused() -> None:
    pair = discovered(LOOPS, PortSettings(mode=OamMode.PASSIVE))
    pair.inject("a", frame(LoopbackControl("02:00:00:00:00:0b", STABLE, LoopbackCommand.ENABLE)))
    pair.run_for(0.1)
    assert drops(pair, "a") == ["not_permitted"]
    assert pair.a.loopback is L.NO_LOOPBACK


def test_reserved_loopback_command_is_dropped() -> None:
    pair = discovered(None, LOOPS)
    pair.inject("b", frame(LoopbackControl(A_MAC, STABLE, 0x07)))
    pair.run_for(0.1)
    assert drops(pair, "b") == ["bad_loopback_command"]
    assert pair.b.loopback is L.NO_LOOPBACK


# -- collision ------------------------------------------------------------------------


def test_collision_the_higher_mac_obeys() -> None:
    pair = discovered(LOOPS, LOOPS)  # a's MAC ...0a is lower than b's ...0b
    pair.call("a", "start_loopback")
    pair.call("b", "start_loopback")
    pair.run_for(5)
    assert (pair.a.loopback, pair.b.loopback) == (L.REMOTE_LOOPBACK, L.LOCAL_LOOPBACK)
    assert "loopback_collision" in drops(pair, "a")


def test_collision_never_leaves_both_sides_looping() -> None:
    pair = discovered(LOOPS, LOOPS)
    pair.call("a", "start_loopback")
    pair.call("b", "start_loopback")
    pair.run_for(5)
    assert not (pair.a.loopback is L.LOCAL_LOOPBACK and pair.b.loopback is L.LOCAL_LOOPBACK)
    assert consistent(pair)


def test_either_side_can_initiate() -> None:
    """The control for the collision: b's command alone is obeyed by the lower-MAC a."""
    pair = discovered(LOOPS, LOOPS)
    pair.call("b", "start_loopback")
    pair.run_for(1)
    assert (pair.a.loopback, pair.b.loopback) == (L.LOCAL_LOOPBACK, L.REMOTE_LOOPBACK)


# -- teardown -------------------------------------------------------------------------


def test_fault_on_both_sides_tears_loopback_down() -> None:
    pair = looping()
    t = pair.now
    pair.link["a"].cut = pair.link["b"].cut = True
    pair.run_for(6)
    assert pair.a.state is not S.SEND_ANY and pair.b.state is not S.SEND_ANY
    for name in "ab":
        change = outputs(pair, name, LoopbackChanged, t)[-1]
        assert (change.status, change.cause) == (L.NO_LOOPBACK, "fault")
        assert (change.parser_action, change.mux_action) == (ParserAction.FORWARD, MuxAction.FORWARD)


def test_link_down_tears_loopback_down() -> None:
    pair = looping()
    pair.call("b", "set_link", False)
    assert pair.b.loopback is L.NO_LOOPBACK
    assert outputs(pair, "b", LoopbackChanged)[-1].cause == "fault"


@pytest.mark.parametrize(
    "cut",
    [
        pytest.param(
            "a",
        ),
        pytest.param(
            "b",
        ),
    ],
)
def test_one_way_fault_leaves_both_sides_agreeing(cut: str) -> None:
    pair = looping()
    pair.link[cut].cut = True
    pair.run_for(6)  # the side that hears nothing goes to FAULT
    pair.link[cut].cut = False
    pair.run_for(3)
    assert pair.both_in(S.SEND_ANY)
    assert consistent(pair), (pair.a.loopback, pair.b.loopback)
