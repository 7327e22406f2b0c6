"""The four monitors' windows: SD then SF, window sizes and units, thresholds at the window
end, windows that never overlap, threshold changes in the current window, uneven samples."""

from __future__ import annotations

import pytest

from efmoam.core.linkmon import Location, MonitorKind, MonitorSettings, Severity
from pdu import EventTlvType
from tests.linkmon import (
    CASE_IDS,
    CASES,
    ERRORED_FRAME,
    FRAMES_PER_SECOND_1G,
    GIGABIT,
    SYMBOLS_PER_SECOND_1G,
    MonitorCase,
    link_monitoring,
    monitor,
    notified_tlvs,
    port_settings,
    raised,
    service_changes,
    start,
)

# -- SD then SF on each monitor --------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_degrade_then_failure(case: MonitorCase) -> None:
    pair, feed = case.start(**case.settings(sd_threshold=2, sf_threshold=4))
    begin = pair.now
    case.fill(feed, 2)
    assert pair.now == begin + case.seconds
    (sd,) = raised(pair)
    assert sd.location is Location.LOCAL
    assert sd.event_type is case.log_type
    assert sd.severity is Severity.DEGRADE
    assert (sd.window, sd.threshold, sd.value) == (case.wire_window, 2, 2)
    assert sd.time == pair.now  # raised at the end of the window, not before
    assert not sd.port_affecting
    assert not pair.a.out_of_service
    assert service_changes(pair) == []
    assert notified_tlvs(pair) == []  # a degrade is log only

    case.fill(feed, 4)
    _, sf = raised(pair)
    assert sf.severity is Severity.FAILURE
    assert sf.event_type is case.log_type
    assert (sf.window, sf.threshold, sf.value) == (case.wire_window, 4, 4)
    assert sf.time == pair.now
    assert (sf.running_total, sf.event_total) == (6, 2)
    assert sf.port_affecting
    assert pair.a.out_of_service
    (change,) = service_changes(pair)
    assert change.out_of_service and change.reasons
    (tlv,) = notified_tlvs(pair)
    assert tlv.type == case.wire_type
    assert (tlv.window, tlv.threshold, tlv.errors) == (case.wire_window, 4, 4)
    assert (tlv.error_running_total, tlv.event_running_total) == (6, 2)
    # the degrade became the failure: it is no longer active
    assert [e.index for e in pair.a.link_monitoring.active_events()] == [sf.index]


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_thresholds_are_reached_at_equality(case: MonitorCase) -> None:
    pair, feed = case.start(**case.settings(sd_threshold=3, sf_threshold=5))
    case.fill(feed, 2)  # below sd
    assert raised(pair) == []
    case.fill(feed, 3)  # sd exactly
    assert [e.severity for e in raised(pair)] == [Severity.DEGRADE]
    case.fill(feed, 4)  # still a degrade: no new event
    assert len(raised(pair)) == 1
    case.fill(feed, 5)  # sf exactly
    assert [e.severity for e in raised(pair)] == [Severity.DEGRADE, Severity.FAILURE]


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_no_event_before_the_window_ends(case: MonitorCase) -> None:
    pair, feed = case.start(**case.settings(sf_threshold=1))
    feed.sample(5, symbols=5)  # the first second already crosses the threshold
    if case.seconds > 1:
        assert raised(pair) == []
        for _ in range(case.seconds - 2):
            feed.sample()
            assert raised(pair) == []
        feed.sample()
    (sf,) = raised(pair)
    assert sf.time == 1.0 + case.seconds


def test_errored_frame_window_of_several_seconds_reports_at_its_end() -> None:
    pair, feed = start(port_settings(link_monitoring(errored_frame=monitor(window=5.0, sf_threshold=3))))
    feed.sample(10)
    for _ in range(3):
        feed.sample()
        assert raised(pair) == []
    feed.sample()
    (sf,) = raised(pair)
    assert (sf.time, sf.window, sf.value) == (6.0, 50, 10)  # 5 s = 50 units of 100 ms


# -- window sizes and units ------------------------------------------------------------------


def test_errored_frame_default_window_is_one_second() -> None:
    pair, feed = start(port_settings(link_monitoring(errored_frame=monitor())))
    feed.sample(1)
    (sf,) = raised(pair)
    assert sf.time == 2.0 and sf.window == 10
    assert notified_tlvs(pair)[0].window == 10


@pytest.mark.parametrize(
    ("speed", "window"),
    [(100, 148_809), (GIGABIT, FRAMES_PER_SECOND_1G), (10_000, 14_880_952)],
    ids=["100M", "1G", "10G"],
)
def test_errored_frame_period_default_window_is_one_second_of_minimum_frames(speed: int, window: int) -> None:
    # two thirds of the window a second: the window is reached at the second check
    rate = window * 2 // 3
    pair, feed = start(
        port_settings(link_monitoring(errored_frame_period=monitor(sf_threshold=2))),
        speed=speed,
        frames_per_second=rate,
    )
    feed.sample(1)
    assert raised(pair) == []  # 2/3 of the window: not reached
    feed.sample(1)
    (sf,) = raised(pair)
    assert (sf.time, sf.window, sf.value) == (3.0, window, 2)
    (tlv,) = notified_tlvs(pair)
    assert tlv.type == EventTlvType.ERRORED_FRAME_PERIOD and tlv.window == window


def test_errored_frame_period_window_spans_several_seconds_of_traffic() -> None:
    # 100,000 frames a second: the 1,488,095-frame window needs 15 seconds
    pair, feed = start(
        port_settings(link_monitoring(errored_frame_period=monitor(sf_threshold=3))), frames_per_second=100_000
    )
    for second in range(14):
        feed.sample(1 if second in (0, 5, 13) else 0)
    assert raised(pair) == []  # 1,400,000 frames: not yet
    feed.sample()
    (sf,) = raised(pair)
    assert (sf.time, sf.value, sf.window) == (16.0, 3, FRAMES_PER_SECOND_1G)


def test_errored_frame_period_window_is_checked_once_per_second() -> None:
    # samples every 0.25 s with 750,000 frames each: the window is full after two samples
    # (1.5 s worth at t=1.5) but only checked at whole seconds of the window
    pair, feed = start(port_settings(link_monitoring(errored_frame_period=monitor())))
    feed.sample(1, dt=0.25, frames=750_000)
    feed.sample(dt=0.25, frames=750_000)
    assert raised(pair) == []
    feed.sample(dt=0.25, frames=750_000)
    assert raised(pair) == []
    feed.sample(dt=0.25, frames=750_000)
    (sf,) = raised(pair)
    assert sf.time == 2.0


def test_errored_frame_period_configured_window_in_frames() -> None:
    pair, feed = start(
        port_settings(link_monitoring(errored_frame_period=monitor(window=5_000_000, sf_threshold=1))),
        frames_per_second=2_000_000,
    )
    feed.sample(1)
    feed.sample()
    assert raised(pair) == []
    feed.sample()
    (sf,) = raised(pair)
    assert sf.window == 5_000_000
    assert notified_tlvs(pair)[0].window == 5_000_000


def test_errored_frame_seconds_counts_errored_seconds_over_a_default_60_s_window() -> None:
    pair, feed = start(port_settings(link_monitoring(errored_frame_seconds=monitor(sf_threshold=3))))
    for second in range(59):
        feed.sample({0: 500, 10: 1, 42: 7}.get(second, 0))  # three errored seconds, 508 errors
    assert raised(pair) == []  # the window is 60 s
    feed.sample()
    (sf,) = raised(pair)
    assert (sf.time, sf.window, sf.threshold, sf.value) == (61.0, 600, 3, 3)
    (tlv,) = notified_tlvs(pair)
    assert tlv.type == EventTlvType.ERRORED_FRAME_SECONDS_SUMMARY
    assert (tlv.window, tlv.threshold, tlv.errors, tlv.error_running_total) == (600, 3, 3, 3)


def test_errored_frame_seconds_below_threshold_however_many_errors() -> None:
    pair, feed = start(port_settings(link_monitoring(errored_frame_seconds=monitor(window=10.0, sf_threshold=2))))
    feed.sample(10_000)  # one errored second, many errors
    feed.quiet(9)
    assert raised(pair) == []


@pytest.mark.parametrize(
    ("speed", "window_s", "symbols"),
    [(GIGABIT, None, SYMBOLS_PER_SECOND_1G), (GIGABIT, 5.0, 5 * SYMBOLS_PER_SECOND_1G), (10_000, None, 156_250_000)],
    ids=["1G-1s", "1G-5s", "10G-1s"],
)
def test_errored_symbol_window_is_time_converted_to_symbols(speed: int, window_s: float | None, symbols: int) -> None:
    settings = monitor(sf_threshold=2) if window_s is None else monitor(sf_threshold=2, window=window_s)
    pair, feed = start(port_settings(link_monitoring(errored_symbol_period=settings)), speed=speed)
    feed.sample(symbols=2)
    for _ in range(int(window_s or 1) - 1):
        feed.sample()
    (sf,) = raised(pair)
    assert sf.window == symbols
    assert sf.time == 1.0 + (window_s or 1)
    (tlv,) = notified_tlvs(pair)
    assert tlv.type == EventTlvType.ERRORED_SYMBOL_PERIOD
    assert (tlv.window, tlv.errors) == (symbols, 2)


def test_errored_symbol_window_uses_the_port_symbol_rate() -> None:
    lm = link_monitoring(errored_symbol_period=monitor(window=2.0), symbol_rate=1_250_000_000)  # 10GBASE-X
    pair, feed = start(port_settings(lm), speed=10_000)
    feed.sample(symbols=1)
    feed.sample()
    (sf,) = raised(pair)
    assert sf.window == 2_500_000_000
    assert notified_tlvs(pair)[0].window == 2_500_000_000


# -- windows never overlap ---------------------------------------------------------------------


def test_errors_on_both_sides_of_a_window_boundary_are_not_added() -> None:
    pair, feed = start(port_settings(link_monitoring(errored_frame=monitor(window=2.0, sf_threshold=3))))
    feed.sample(0)
    feed.sample(2)  # window [1, 3]: 2 errors
    feed.sample(2)  # window [3, 5]: 2 errors, a sliding window would see 4 over [2, 4]
    feed.sample(0)
    assert raised(pair) == []
    feed.sample(3)
    feed.sample(0)
    (sf,) = raised(pair)
    assert (sf.time, sf.value, sf.running_total) == (7.0, 3, 7)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_each_window_reports_only_its_own_errors(case: MonitorCase) -> None:
    pair, feed = case.start(**case.settings(sd_threshold=1, sf_threshold=9))
    for n in (2, 0, 3, 0, 1):
        case.fill(feed, n)
    values = [e.value for e in raised(pair)]
    assert values == [2, 3, 1]
    assert raised(pair)[-1].running_total == 6


# -- thresholds ----------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
@pytest.mark.parametrize(("sd", "sf"), [(3, 3), (4, 3)], ids=["equal", "above"])
def test_sd_threshold_must_be_lower_than_sf_threshold(case: MonitorCase, sd: int, sf: int) -> None:
    with pytest.raises(ValueError, match="sd-threshold"):
        link_monitoring(**{case.field: MonitorSettings(enabled=True, sd_threshold=sd, sf_threshold=sf)})


def test_lowering_sf_threshold_mid_window_applies_to_the_current_window() -> None:
    lm = link_monitoring(errored_frame=monitor(window=5.0, sf_threshold=10))
    pair, feed = start(port_settings(lm))
    feed.sample(3)
    feed.sample(3)  # 6 errors so far in the window [1, 6]
    pair.run_until(3.5)
    pair.call("a", "reconfigure", port_settings(link_monitoring(errored_frame=monitor(window=5.0, sf_threshold=5))))
    assert raised(pair) == []
    feed.sample(at=4.0)
    feed.sample()
    feed.sample()
    (sf,) = raised(pair)
    assert (sf.time, sf.threshold, sf.value) == (6.0, 5, 6)


def test_raising_sf_threshold_mid_window_applies_to_the_current_window() -> None:
    lm = link_monitoring(errored_frame=monitor(window=5.0, sf_threshold=5))
    pair, feed = start(port_settings(lm))
    feed.sample(6)
    pair.run_until(2.5)
    pair.call("a", "reconfigure", port_settings(link_monitoring(errored_frame=monitor(window=5.0, sf_threshold=10))))
    feed.sample(at=3.0)
    feed.quiet(3)
    assert pair.now == 6.0
    assert raised(pair) == []  # 6 < 10 at the end of the window


def test_adding_sd_threshold_mid_window_applies_to_the_current_window() -> None:
    pair, feed = start(port_settings(link_monitoring(errored_symbol_period=monitor(window=3.0, sf_threshold=10))))
    feed.sample(symbols=4)
    pair.run_until(2.5)
    new = link_monitoring(errored_symbol_period=monitor(window=3.0, sf_threshold=10, sd_threshold=4))
    pair.call("a", "reconfigure", port_settings(new))
    feed.sample(at=3.0)
    feed.sample()
    (sd,) = raised(pair)
    assert (sd.time, sd.severity, sd.threshold, sd.value) == (4.0, Severity.DEGRADE, 4, 4)


# -- late and uneven samples --------------------------------------------------------------------


def test_a_late_sample_closes_one_window_without_double_counting() -> None:
    pair, feed = start(port_settings(link_monitoring(errored_frame=monitor(sf_threshold=2))))
    feed.sample(1)  # window [1, 2]: 1 error
    feed.sample(2, dt=3.0)  # the next sample comes 3 s late: one window [2, 5]
    (sf,) = raised(pair)
    assert (sf.time, sf.value, sf.running_total) == (5.0, 2, 3)
    feed.sample(1)  # window [5, 6]
    feed.sample(1)
    assert len(raised(pair)) == 1  # failed: no new event
    assert pair.a.link_monitoring.monitors[ERRORED_FRAME.kind].error_total == 5


def test_a_late_sample_of_the_symbol_monitor_reports_the_configured_window() -> None:
    pair, feed = start(port_settings(link_monitoring(errored_symbol_period=monitor(sf_threshold=4))))
    feed.sample(symbols=1)
    feed.sample(symbols=4, dt=3.0)
    (sf,) = raised(pair)
    assert (sf.time, sf.value) == (5.0, 4)
    assert sf.window == SYMBOLS_PER_SECOND_1G


def test_samples_faster_than_the_window_are_summed_into_it() -> None:
    pair, feed = start(port_settings(link_monitoring(errored_frame=monitor(sf_threshold=3))))
    for _ in range(3):
        feed.sample(1, dt=0.25)
    assert raised(pair) == []
    feed.sample(0, dt=0.25)  # t = 2.0: the window [1, 2] ends
    (sf,) = raised(pair)
    assert (sf.time, sf.value) == (2.0, 3)


def test_a_late_sample_of_the_period_monitor_closes_one_window() -> None:
    pair, feed = start(
        port_settings(link_monitoring(errored_frame_period=monitor(sf_threshold=2))), frames_per_second=1_000_000
    )
    feed.sample(1, dt=3.0)  # 3,000,000 frames in one late sample: two windows' worth, one window
    assert raised(pair) == []  # one error: below the threshold
    feed.sample(2)  # a fresh window: 1,000,000 frames
    assert raised(pair) == []
    feed.sample()
    (sf,) = raised(pair)
    assert (sf.time, sf.value, sf.running_total) == (6.0, 2, 3)


def test_errored_seconds_count_each_second_once_with_half_second_samples() -> None:
    pair, feed = start(port_settings(link_monitoring(errored_frame_seconds=monitor(window=10.0, sf_threshold=3))))
    feed.sample(1, dt=0.5)  # second 1 of the window, first half
    feed.sample(1, dt=0.5)  # second 1, second half: the same errored second
    feed.sample(0, dt=0.5)
    feed.sample(4, dt=0.5)  # second 2
    for _ in range(16):
        feed.sample(dt=0.5)
    assert pair.now == 11.0
    assert raised(pair) == []  # two errored seconds: below 3
    monitor_ = pair.a.link_monitoring.monitors[MonitorKind.ERRORED_FRAME_SECONDS]
    assert monitor_.last_errors == 2
