"""Counter samples: resets (a counter going backwards), wraps, and counters the source does
not provide (None): unavailable monitors, reported once, never a false event."""

from __future__ import annotations

import pytest

from efmoam.core.linkmon import MonitorKind, MonitorState, Severity
from efmoam.core.linkmon.kinds import FACTS
from tests.linkmon import (
    CASE_IDS,
    CASES,
    MonitorCase,
    cleared,
    link_monitoring,
    monitor,
    port_settings,
    raised,
    service_changes,
    start,
    unavailable,
)

ALL_FOUR = link_monitoring(
    errored_frame=monitor(sf_threshold=3),
    errored_frame_period=monitor(sf_threshold=3),
    errored_frame_seconds=monitor(window=10.0, sf_threshold=3),
    errored_symbol_period=monitor(sf_threshold=3),
)


def state(pair, kind: MonitorKind) -> MonitorState:  # type: ignore[no-untyped-def]
    return pair.a.link_monitoring.monitors[kind].state  # type: ignore[no-any-return]


# -- resets -------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_a_counter_going_backwards_is_a_reset(case: MonitorCase) -> None:
    pair, feed = case.start(**case.settings(sf_threshold=3))
    for _ in range(case.seconds):
        feed.sample(1000, symbols=1000)  # a window far above the threshold ...
    feed.sample()
    first = raised(pair)
    pair.call("a", "clear_events")
    # ... then the driver reloads: every counter restarts from a small value
    for _ in range(2 * case.seconds):
        feed.sample()
    pair.run_for(1)
    feed.send(errored_frames=2, symbol_errors=2, frames_received=case.frames_per_second)
    for _ in range(2 * case.seconds):
        feed.sample()
    new = raised(pair)[len(first) :]
    assert new == []  # 2 errors: below the threshold, not a huge or negative delta
    monitor_ = pair.a.link_monitoring.monitors[case.kind]
    assert monitor_.last_errors is not None and 0 <= monitor_.last_errors <= 2


def test_the_value_after_a_reset_is_the_delta() -> None:
    pair, feed = start(port_settings(link_monitoring(errored_frame=monitor(sf_threshold=3))))
    feed.sample(5_000)
    pair.call("a", "clear_events")
    feed.sample()
    pair.run_for(1)
    feed.send(errored_frames=3)  # went backwards: 3 errors since the reset
    (_, sf) = raised(pair)
    assert (sf.value, sf.running_total) == (3, 5_003)


def test_a_32_bit_wrap_is_treated_as_a_reset() -> None:
    lm = link_monitoring(errored_symbol_period=monitor(sf_threshold=10))
    pair, feed = start(port_settings(lm), counters={"symbol_errors": 2**32 - 5})
    feed.sample()
    pair.run_for(1)
    feed.send(symbol_errors=4)
    assert raised(pair) == []
    assert pair.a.link_monitoring.monitors[MonitorKind.ERRORED_SYMBOL_PERIOD].error_total == 4


def test_frames_received_going_backwards_does_not_fill_the_period_window() -> None:
    pair, feed = start(
        port_settings(link_monitoring(errored_frame_period=monitor(sf_threshold=1))), frames_per_second=1_000_000
    )
    feed.sample(1)  # 1,000,000 frames of a 1,488,095-frame window
    pair.run_for(1)
    feed.send(frames_received=10)  # reset: 10 frames, not 2**64 - 999,990
    assert raised(pair) == []
    feed.sample()  # 1,000,010 + 1,000,000: now the window is reached
    (sf,) = raised(pair)
    assert sf.time == 4.0 and sf.value == 1


# -- missing counters -----------------------------------------------------------------------------


def test_a_missing_counter_makes_its_monitors_unavailable_once() -> None:
    pair, feed = start(port_settings(ALL_FOUR), frames_per_second=1_000_000)
    for _ in range(12):
        feed.sample(5, symbols=5, missing=("symbol_errors",))
    (report,) = unavailable(pair)
    assert report.monitor == "errored_symbol_period"  # the JSON key and metric label
    assert report.counters == ("symbol_errors",)
    assert state(pair, MonitorKind.ERRORED_SYMBOL_PERIOD) is MonitorState.UNAVAILABLE
    # the three frame monitors run on
    kinds = {e.event_type for e in raised(pair)}
    assert len(kinds) == 3
    assert all(e.event_type.name != "ERRORED_SYMBOL_EVENT" for e in raised(pair))


def test_missing_frames_received_makes_only_the_period_monitor_unavailable() -> None:
    pair, feed = start(port_settings(ALL_FOUR), frames_per_second=1_000_000)
    for _ in range(12):
        feed.sample(missing=("frames_received",))
    (report,) = unavailable(pair)
    assert report.monitor == "errored_frame_period"
    assert report.counters == ("frames_received",)


def test_missing_errored_frames_makes_the_three_frame_monitors_unavailable() -> None:
    pair, feed = start(port_settings(ALL_FOUR))
    for _ in range(5):
        feed.sample(missing=("errored_frames",))
    reports = unavailable(pair)
    assert sorted(r.monitor for r in reports) == sorted(
        FACTS[k].key for k in MonitorKind if k is not MonitorKind.ERRORED_SYMBOL_PERIOD
    )
    assert all("errored_frames" in r.counters for r in reports)
    assert raised(pair) == []


def test_a_counter_that_appears_recovers_the_monitor_without_a_false_event() -> None:
    pair, feed = start(port_settings(link_monitoring(errored_symbol_period=monitor(sf_threshold=5))))
    for _ in range(3):
        feed.sample(missing=("symbol_errors",))
    assert state(pair, MonitorKind.ERRORED_SYMBOL_PERIOD) is MonitorState.UNAVAILABLE
    pair.run_for(1)
    feed.send(symbol_errors=10**12)  # it appears with a large cumulative value: the baseline
    assert raised(pair) == []
    feed.sample(symbols=4)
    assert raised(pair) == []
    assert state(pair, MonitorKind.ERRORED_SYMBOL_PERIOD) is MonitorState.OK
    feed.sample(symbols=5)
    (sf,) = raised(pair)
    assert sf.value == 5
    assert len(unavailable(pair)) == 1


def test_a_counter_missing_mid_window_raises_nothing() -> None:
    pair, feed = start(port_settings(link_monitoring(errored_frame=monitor(window=3.0, sf_threshold=4))))
    feed.sample(3)
    feed.sample(missing=("errored_frames",))
    pair.run_for(1)
    feed.send(errored_frames=1000)  # back, with errors the monitor did not see counted
    feed.quiet(4)
    assert raised(pair) == []
    assert len(unavailable(pair)) == 1


def test_unavailable_again_after_recovering_is_reported_again() -> None:
    pair, feed = start(port_settings(link_monitoring(errored_symbol_period=monitor())))
    feed.sample(missing=("symbol_errors",))
    feed.sample()
    feed.sample()
    feed.sample(missing=("symbol_errors",))
    feed.sample(missing=("symbol_errors",))
    assert len(unavailable(pair)) == 2


# -- an unavailable counter while the monitor is failed ---------------------------------------------


def test_a_failed_frame_monitor_stays_failed_across_a_missing_counter() -> None:
    pair, feed = start(port_settings(link_monitoring(errored_frame=monitor(sd_threshold=2, sf_threshold=5))))
    feed.sample(6)
    (sf,) = raised(pair)
    feed.sample(missing=("errored_frames",))
    feed.sample(missing=("errored_frames",))
    feed.sample()  # the counter is back
    feed.sample(3)  # a degrade-level window: suppressed while in SF
    feed.sample(0)
    assert pair.a.out_of_service  # frame monitors never recover by themselves
    assert [c.out_of_service for c in service_changes(pair)] == [True]
    assert [e.index for e in pair.a.link_monitoring.active_events()] == [sf.index]
    assert [e.severity for e in raised(pair)] == [Severity.FAILURE]
    log_active = [e.index for _, e in pair.a.event_log() if e.active]
    assert log_active == [sf.index]


def test_a_failed_symbol_monitor_still_recovers_after_a_missing_counter() -> None:
    pair, feed = start(port_settings(link_monitoring(errored_symbol_period=monitor(sd_threshold=2, sf_threshold=5))))
    feed.sample(symbols=6)
    assert pair.a.out_of_service
    feed.sample(missing=("symbol_errors",))
    feed.sample()  # the counter is back
    feed.sample(symbols=0)
    feed.sample(symbols=0)
    assert not pair.a.out_of_service
    assert [e.severity for e in cleared(pair)] == [Severity.FAILURE]
