"""Transmit (57.3.2.2): the 10-per-second budget, keep-alives and immediate Information."""

from __future__ import annotations

import pytest

from efmoam.core import DiscoveryChanged, LocalProtocolError, PortSettings
from pdu import Flag, Information
from tests.core.test_support import (
    BUDGET,
    EPSILON,
    STABLE,
    Pair,
    S,
    assert_budget,
    discovered,
    gaps,
    information_times,
    lone,
    max_gap,
    max_in_window,
    notify,
    outputs,
    sent,
)

EVENTS = PortSettings(link_events=True)


def flood(pair: Pair, name: str = "a", count: int = 100, burst: int = 5) -> None:
    """`count` Organization Specific OAMPDUs and as many Event Notifications, all at once."""
    for i in range(count):
        pair.call(name, "send_org_specific", 0x001122, bytes([1 + i % 255]))
        notify(pair, name, burst=burst)


def test_flood_of_requests_never_exceeds_ten_per_second() -> None:
    pair = discovered(EVENTS, EVENTS)
    flood(pair)
    pair.run_for(30)
    times = pair.sent_times("a")
    # the flood fills the budget (less the keep-alives' reserve when no keep-alive is due) ...
    assert BUDGET - 1 <= max_in_window(times) <= BUDGET
    assert_budget(pair)  # ... and never more
    assert pair.a.stats.frames_lost_due_to_oam > 0  # the queue was bounded
    assert pair.both_in(S.SEND_ANY)


def test_keep_alives_continue_through_a_flood() -> None:
    pair = discovered(EVENTS, EVENTS)
    start = pair.now
    flood(pair)
    pair.run_for(30)
    for name in "ab":
        info = information_times(pair, name, since=start - 1.0)
        assert max_gap(info, end=pair.now) <= 1.0 + EPSILON, name
    # nobody timed out for lack of keep-alives
    assert pair.first_time_in("a", S.FAULT) is pair.first_time_in("b", S.FAULT) is None


def test_flood_is_delivered_in_order_and_counted() -> None:
    pair = discovered(PortSettings(link_events=True), EVENTS)
    for i in range(5):
        pair.call("a", "send_org_specific", 0x001122, bytes([i + 1]))
    pair.run_for(2)
    assert [p.value for _, p in sent(pair, "a", since=1.5) if not isinstance(p, Information)] == [
        bytes([i + 1]) for i in range(5)
    ]
    assert pair.a.stats.org_specific_tx == 5
    assert pair.b.stats.org_specific_rx == 5


@pytest.mark.parametrize("flag", [Flag.DYING_GASP, Flag.CRITICAL_EVENT, Flag.LINK_FAULT])
def test_critical_flag_goes_out_at_once(flag: Flag) -> None:
    pair = discovered()
    t = pair.now
    pair.call("a", "set_local_flags", flag, True)
    now = sent(pair, "a", since=t)
    assert now, "nothing sent at once"
    first_time, first = now[0]
    assert first_time <= t + 0.1 + EPSILON  # the next 0.1 s transmit slot
    assert isinstance(first, Information)
    assert first.flags == STABLE | flag
    pair.run_for(3)
    assert all(p.flags & flag for _, p in sent(pair, "a", since=t))
    # clearing it is told at once too (a peer without link monitoring may have left SEND_ANY
    # while the flag was up: only the flag itself is checked here)
    t = pair.now
    pair.call("a", "set_local_flags", flag, False)
    pair.run_for(0.5)
    cleared = [(time, p) for time, p in sent(pair, "a", since=t) if not p.flags & flag]
    assert cleared and cleared[0][0] <= t + 0.1 + EPSILON
    assert pair.both_in(S.SEND_ANY)


def test_dying_gasp_during_a_flood_waits_for_the_budget_and_goes_first() -> None:
    pair = discovered(EVENTS, EVENTS)
    flood(pair)
    pair.run_for(0.1)
    t = pair.now
    pair.call("a", "set_local_flags", Flag.DYING_GASP, True)
    pair.run_for(3)
    after = [(time, p) for time, p in sent(pair, "a", since=t) if p.flags & Flag.DYING_GASP]
    assert after
    first_time, first = after[0]
    assert isinstance(first, Information)
    assert first.flags & Flag.DYING_GASP
    assert first_time <= t + 1.0  # the next free slot of the budget
    assert_budget(pair)


def test_set_local_flags_refuses_discovery_flags() -> None:
    pair = discovered()
    with pytest.raises(LocalProtocolError):
        pair.call("a", "set_local_flags", Flag.LOCAL_STABLE, True)


def test_fast_transmit_interval_works() -> None:
    fast = PortSettings(transmit_interval=0.1)
    pair = discovered(fast, fast)
    start = pair.now
    pair.run_for(10)
    for name in "ab":
        info = information_times(pair, name, since=start)
        assert max(gaps(info)) <= 0.1 + EPSILON
        assert len(info) >= 99
    assert_budget(pair)
    assert pair.both_in(S.SEND_ANY)
    assert len(outputs(pair, "a", DiscoveryChanged)) == 4  # no flap after the first meeting


def test_fastest_lost_link_setting_survives_discovery() -> None:
    fast = PortSettings(transmit_interval=0.1, multiplier=2)
    pair = Pair(fast, fast)
    pair.run_until(10)
    assert pair.first_time_in("a", S.FAULT) is None or pair.first_time_in("a", S.FAULT) == 0.0
    assert [c.cause for c in outputs(pair, "b", DiscoveryChanged)].count("lost_link") == 0
    assert pair.both_in(S.SEND_ANY)


def test_keep_alive_gaps_stay_below_the_lost_link_time_at_the_fast_interval() -> None:
    fast = PortSettings(transmit_interval=0.1, multiplier=3)
    pair = Pair(fast, fast)
    pair.run_until(10)
    for name in "ab":
        assert max_gap(pair.sent_times(name), end=pair.now) < 0.3
    assert pair.both_in(S.SEND_ANY)


def test_fast_interval_keeps_keep_alives_through_a_flood() -> None:
    """At 0.1 s keep-alives alone fill the budget: Information and waiting OAMPDUs take turns.

    A waiting OAMPDU is never passed over twice, so Information gaps stay within two
    intervals while every gap between OAMPDUs (any of which restarts the peer's lost-link
    timer) stays at one interval.
    """
    fast = PortSettings(transmit_interval=0.1, link_events=True)
    pair = discovered(fast, fast)
    start = pair.now
    flood(pair, count=30)
    pair.run_for(10)
    info = information_times(pair, "a", since=start - 0.1)
    assert max_gap(info, end=pair.now) <= 0.2 + EPSILON
    assert max_gap(pair.sent_times("a"), start=start, end=pair.now) <= 0.1 + EPSILON
    assert pair.a.stats.org_specific_tx > 10  # the flood moves, at the budget's pace
    assert pair.both_in(S.SEND_ANY)
    assert_budget(pair)


def test_send_org_specific_needs_send_any() -> None:
    pair = lone()
    with pytest.raises(LocalProtocolError):
        pair.call("a", "send_org_specific", 0x001122, b"x")
    assert sent(pair, "a") and all(isinstance(p, Information) for _, p in sent(pair, "a"))


def test_nothing_but_information_before_send_any() -> None:
    """An active port that never completes Discovery sends only Information OAMPDUs."""
    pair = lone()
    pair.run_for(20)
    frames = sent(pair, "a")
    assert len(frames) == 21
    assert all(isinstance(p, Information) for _, p in frames)
