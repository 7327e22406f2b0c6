"""The NIC health monitors (`kinds.HEALTH`) on the fake clock: fatal on the first increase,
rates against SD/SF, resets, missing counters, InfiniBand saturation, the pre-FEC BER
estimate, the local SF action and its flags, what ends their events, their histograms,
the log with every monitor failed at once, and their saved state."""

from __future__ import annotations

from typing import Any

import pytest

from efmoam.core.linkmon import CounterSample, LinkMonitoringSettings, LocalSfAction, Location, PortAction, Severity
from efmoam.core.linkmon.counters import COUNTERS, HEALTH_COUNTERS, CounterDeltas
from efmoam.core.linkmon.eventlog import SLOTS
from efmoam.core.linkmon.kinds import HEALTH, HEALTH_FACTS, HealthKind
from efmoam.core.linkmon.settings import HealthSettings
from efmoam.core.outputs import MonitorUnavailable
from pdu import EventLogType, Flag
from tests.core.pair import PortPair
from tests.linkmon import (
    SUPPORTIVE,
    information_flags,
    link_monitoring,
    logged,
    mark,
    monitor,
    notification_frames,
    outputs,
    port_settings,
    raised,
    service_changes,
)

ALL_HEALTH = {name: 0 for name in HEALTH_COUNTERS}


class HealthFeed:
    """Cumulative counters of port "a" (the standard three quiet), one sample a second."""

    def __init__(self, pair: PortPair, counters: dict[str, int | None]) -> None:
        self.pair = pair
        self.values: dict[str, int | None] = {"errored_frames": 0, "frames_received": 0, "symbol_errors": 0}
        self.values.update(counters)

    def sample(self, dt: float = 1.0, *, missing: tuple[str, ...] = (), **increments: int) -> None:
        self.pair.run_until(self.pair.now + dt)
        self.values["frames_received"] = (self.values["frames_received"] or 0) + 1000
        for name, step in increments.items():
            self.values[name] = (self.values[name] or 0) + step
        self.send(missing=missing)

    def send(self, *, missing: tuple[str, ...] = (), **values: int) -> None:
        """Report now; `values` overrides cumulative values (a reset, a saturated counter)."""
        self.values.update(values)
        sample = {name: None if name in missing else value for name, value in self.values.items()}
        self.pair.call("a", "on_counters", CounterSample(**sample))

    def quiet(self, seconds: int) -> None:
        for _ in range(seconds):
            self.sample()


def health(**fields: Any) -> HealthSettings:
    return HealthSettings(enabled=True, **fields)


def start_health(
    speed: int | None = 25_000, counters: dict[str, int | None] | None = None, **lm_fields: Any
) -> tuple[PortPair, HealthFeed]:
    """A discovered pair, port "a" with the given link monitoring and a baseline sample at t=1."""
    pair = PortPair(port_settings(link_monitoring(**lm_fields)), SUPPORTIVE)
    pair.run_until(0.5)
    pair.call("a", "set_link", True, speed_mbps=speed)
    pair.run_until(1.0)
    feed = HealthFeed(pair, dict(ALL_HEALTH) if counters is None else counters)
    feed.send()
    return pair, feed


def health_events(pair: PortPair) -> list[Any]:
    return [e for e in raised(pair) if e.event_type is EventLogType.NIC_HEALTH_EVENT]


#: per fatal monitor: its key and a counter whose first increase fails it
FATAL_CASES = [
    ("fec_uncorrectable", "fec_uncorrectable_blocks", {}),
    ("pause_storm", "pause_storm_events", {}),
    ("link_flaps", "carrier_down_count", {"fatal": True}),
    *[("ib_fatal", name, {}) for name in HEALTH_FACTS[HealthKind.IB_FATAL].fatal_counters],
]


# -- fatal on the first increase ------------------------------------------------------------------


@pytest.mark.parametrize(("key", "counter", "fields"), FATAL_CASES, ids=[c[1] for c in FATAL_CASES])
def test_a_fatal_counter_fails_its_monitor_on_the_first_increase(
    key: str, counter: str, fields: dict[str, Any]
) -> None:
    pair, feed = start_health(**{key: health(window=5.0, **fields)})
    feed.quiet(5)
    assert raised(pair) == []  # quiet windows close without an event
    feed.sample(**{counter: 1})
    feed.quiet(4)
    (sf,) = raised(pair)
    assert sf.event_type is EventLogType.NIC_HEALTH_EVENT and sf.monitor == key
    assert sf.severity is Severity.FAILURE and sf.location is Location.LOCAL and sf.port_affecting
    assert (sf.threshold, sf.value, sf.window) == (1, 1, 5000)  # any increase; 5 s in ms
    assert pair.a.out_of_service
    assert pair.a.service.reasons == (f"local {key}",)
    assert notification_frames(pair) == []  # no TLV type: the peer is never sent one


def test_fatal_off_compares_the_count_with_sf() -> None:
    pair, feed = start_health(fec_uncorrectable=health(window=2.0, fatal=False, sf_threshold=3))
    feed.sample(fec_uncorrectable_blocks=2)
    feed.sample()
    assert raised(pair) == []
    feed.sample(fec_uncorrectable_blocks=3)
    feed.sample()
    (sf,) = raised(pair)
    assert (sf.monitor, sf.severity, sf.threshold, sf.value) == ("fec_uncorrectable", Severity.FAILURE, 3, 3)


# -- rates ----------------------------------------------------------------------------------------


def test_fec_corrected_rate_degrades_then_fails_and_a_degrade_ends_below_sd() -> None:
    pair, feed = start_health(fec_corrected=health(window=10.0, sd_threshold=100.0, sf_threshold=1000.5))
    for _ in range(10):
        feed.sample(fec_corrected_bits=99)  # 99/s: below sd
    assert raised(pair) == []
    for _ in range(10):
        feed.sample(fec_corrected_bits=500)  # 500/s
    (sd,) = raised(pair)
    assert (sd.monitor, sd.severity, sd.port_affecting) == ("fec_corrected", Severity.DEGRADE, False)
    assert (sd.threshold, sd.value, sd.window) == (1000, 5000, 10_000)  # per window: 100/s x 10 s
    for _ in range(10):
        feed.sample(fec_corrected_bits=50)  # below sd: the degrade ends
    assert [e.entry.monitor for e in logged(pair) if not e.entry.active] == ["fec_corrected"]
    assert not pair.a.link_monitoring.active_events()
    for _ in range(10):
        feed.sample(fec_corrected_bits=2000)
    sd, sf = health_events(pair)
    assert (sf.severity, sf.threshold, sf.value, sf.port_affecting) == (Severity.FAILURE, 10_005, 20_000, True)
    assert pair.a.out_of_service
    running = pair.a.link_monitoring.running_health
    assert [m.key for m in running] == ["fec_corrected"] and running[0].last_value == pytest.approx(2000.0)


def test_pause_storm_rate_sums_frames_received_and_sent() -> None:
    pair, feed = start_health(pause_storm=health(window=2.0, sf_threshold=100.0, fatal=False))
    feed.sample(pause_frames_received=60, pause_frames_sent=30)
    feed.sample(pause_frames_received=60, pause_frames_sent=30)
    assert raised(pair) == []  # 90/s
    feed.sample(pause_frames_received=60, pause_frames_sent=50)
    feed.sample(pause_frames_received=60, pause_frames_sent=50)
    (sf,) = raised(pair)  # 110/s
    assert (sf.monitor, sf.threshold, sf.value) == ("pause_storm", 200, 220)


def test_pause_storm_fatal_off_ignores_storm_events() -> None:
    pair, feed = start_health(pause_storm=health(window=2.0, fatal=False))
    feed.sample(pause_storm_events=5)
    feed.quiet(3)
    assert raised(pair) == []


def test_link_flaps_counts_carrier_downs_per_window() -> None:
    pair, feed = start_health(link_flaps=health(window=10.0, sd_threshold=2, sf_threshold=4))
    feed.sample(carrier_down_count=1)
    feed.quiet(9)
    assert raised(pair) == []
    feed.sample(carrier_down_count=2)
    feed.quiet(9)
    (sd,) = raised(pair)
    assert (sd.monitor, sd.severity, sd.threshold, sd.value) == ("link_flaps", Severity.DEGRADE, 2, 2)
    feed.sample(carrier_down_count=4)
    feed.quiet(9)
    sf = raised(pair)[-1]
    assert (sf.severity, sf.threshold, sf.value) == (Severity.FAILURE, 4, 4)


# -- resets, saturation, missing counters -------------------------------------------------------


def test_a_counter_going_backwards_is_a_reset_its_new_value_the_delta() -> None:
    counters = dict(ALL_HEALTH, fec_uncorrectable_blocks=1_000_000)
    pair, feed = start_health(counters=counters, fec_uncorrectable=health(window=2.0))
    feed.send(fec_uncorrectable_blocks=0)  # a driver reload
    feed.quiet(3)
    assert raised(pair) == []  # from a million to 0: no increase, no huge or negative delta
    pair.run_for(1)
    feed.send(fec_uncorrectable_blocks=0)
    pair.run_for(1)
    feed.send(fec_uncorrectable_blocks=0)
    feed.sample(fec_uncorrectable_blocks=0)
    assert raised(pair) == []
    feed.send(fec_uncorrectable_blocks=900_000)  # an increase, then a reset to 2: 2 more
    feed.quiet(2)
    (sf,) = raised(pair)
    assert sf.value == 900_000
    pair.call("a", "clear_events")
    feed.quiet(2)
    pair.run_for(1)
    feed.send(fec_uncorrectable_blocks=2)
    feed.quiet(2)
    assert raised(pair)[-1].value == 2  # the reset's new value is the delta


def test_an_infiniband_counter_saturated_at_15_raises_nothing_until_it_resets_and_rises() -> None:
    counters = dict(ALL_HEALTH, ib_local_link_integrity_errors=15)  # 4 bits, saturated
    pair, feed = start_health(counters=counters, ib_fatal=health(window=2.0))
    for _ in range(6):
        feed.sample()  # stays at 15: delta 0
    assert raised(pair) == []
    pair.run_for(1)
    feed.send(ib_local_link_integrity_errors=0)  # the counters were reset (perfquery -R)
    feed.quiet(2)
    assert raised(pair) == []
    feed.sample(ib_local_link_integrity_errors=1)
    feed.quiet(2)
    (sf,) = raised(pair)
    assert (sf.monitor, sf.value) == ("ib_fatal", 1)


def test_missing_counters_make_the_monitor_unavailable_once_then_it_resumes() -> None:
    pair, feed = start_health(fec_uncorrectable=health(window=2.0))
    feed.sample(fec_uncorrectable_blocks=1)
    feed.sample()
    assert [e.monitor for e in raised(pair)] == ["fec_uncorrectable"]
    for _ in range(4):
        feed.sample(missing=("fec_uncorrectable_blocks",))
    (gone,) = outputs(pair, "a", MonitorUnavailable)
    assert gone == MonitorUnavailable("fec_uncorrectable", ("fec_uncorrectable_blocks",))
    (state,) = [m.state.value for m in pair.a.link_monitoring.running_health]
    assert state == "unavailable"
    feed.quiet(2)  # back: the failed state it had resumes
    assert [m.state.value for m in pair.a.link_monitoring.running_health] == ["failed"]
    for _ in range(2):
        feed.sample(missing=("fec_uncorrectable_blocks",))
    assert len(outputs(pair, "a", MonitorUnavailable)) == 2  # once per absence


def test_a_monitor_with_some_of_its_counters_stays_available() -> None:
    counters = dict(ALL_HEALTH, pause_storm_events=None)  # the driver has no storm counter
    pair, feed = start_health(counters=counters, pause_storm=health(window=2.0, sf_threshold=10.0))
    feed.sample(pause_frames_sent=30)
    feed.sample(pause_frames_sent=30)
    assert outputs(pair, "a", MonitorUnavailable) == []
    (sf,) = raised(pair)
    assert sf.value == 60


def test_none_of_its_counters_is_unavailable_with_all_named() -> None:
    counters: dict[str, int | None] = dict.fromkeys(HEALTH_COUNTERS)
    pair, feed = start_health(counters=counters, ib_fatal=health())
    feed.quiet(2)
    (gone,) = outputs(pair, "a", MonitorUnavailable)
    assert gone.monitor == "ib_fatal" and set(gone.counters) == set(HEALTH_FACTS[HealthKind.IB_FATAL].counters)


# -- the pre-FEC BER estimate -------------------------------------------------------------------


def test_ber_estimate_is_corrected_bits_over_the_bits_the_link_carried() -> None:
    pair, feed = start_health(speed=25_000, fec_corrected=health(window=10.0))
    assert pair.a.link_monitoring.ber_estimate is None  # no window closed yet
    for _ in range(10):
        feed.sample(fec_corrected_bits=250_000)
    # 2.5e6 bits over 25 Gb/s x 10 s
    assert pair.a.link_monitoring.ber_estimate == pytest.approx(1e-5)
    feed.sample(missing=("fec_corrected_bits", "fec_corrected_blocks"))  # the counters are gone
    assert pair.a.link_monitoring.ber_estimate is None  # unknown, not the last value


@pytest.mark.parametrize(("speed", "missing"), [(25_000, ("fec_corrected_bits",)), (None, ())])
def test_ber_estimate_is_none_from_blocks_or_without_a_speed(speed: int | None, missing: tuple[str, ...]) -> None:
    pair, feed = start_health(speed=speed, fec_corrected=health(window=2.0, sf_threshold=1000.0))
    for _ in range(4):
        feed.sample(missing=missing, fec_corrected_bits=10, fec_corrected_blocks=1000)
    assert pair.a.link_monitoring.ber_estimate is None
    (monitor_,) = pair.a.link_monitoring.running_health
    assert monitor_.last_errors == (2000 if missing else 20)  # blocks when bits are missing
    assert monitor_.histogram_count == 2


# -- the local SF action --------------------------------------------------------------------------


def test_a_health_failure_takes_the_local_sf_action_and_sets_critical_event() -> None:
    action = LocalSfAction(critical_event=True, event_burst=3)
    pair, feed = start_health(fec_uncorrectable=health(window=2.0), local_sf_action=action)
    before = mark(pair)
    feed.sample()
    feed.sample()
    assert not any(flags & Flag.CRITICAL_EVENT for flags in information_flags(pair, after=before))
    feed.sample(fec_uncorrectable_blocks=1)
    feed.sample()  # the window closes: the failure
    failed = mark(pair)
    pair.run_for(3)
    flags = information_flags(pair, after=failed)
    assert flags and all(f & Flag.CRITICAL_EVENT for f in flags)  # every Information since
    assert Flag.CRITICAL_EVENT & pair.b.peer_flags  # the peer sees it
    assert notification_frames(pair) == []  # no burst: no TLV for a health event
    assert [c.out_of_service for c in service_changes(pair)] == [True]
    pair.call("a", "clear_events")
    cleared_at = mark(pair)
    pair.run_for(3)
    assert not any(f & Flag.CRITICAL_EVENT for f in information_flags(pair, after=cleared_at))
    assert not pair.a.out_of_service


def test_error_disable_latches_a_health_failure_as_a_standard_one() -> None:
    action = LocalSfAction(port_action=PortAction.ERROR_DISABLE)
    pair, feed = start_health(link_flaps=health(window=2.0, sf_threshold=1), local_sf_action=action)
    feed.sample(carrier_down_count=1)
    feed.sample()
    assert pair.a.out_of_service
    pair.call("a", "set_link", False)  # a flap does not end a health event
    pair.call("a", "set_link", True)
    assert [e.monitor for e in pair.a.link_monitoring.active_events()] == ["link_flaps"]
    stricter = link_monitoring(link_flaps=health(window=2.0, sf_threshold=2), local_sf_action=action)
    pair.call("a", "reconfigure", port_settings(stricter))  # new thresholds end it: the latch holds the port
    assert pair.a.link_monitoring.active_events() == []
    assert pair.a.out_of_service


def test_log_only_logs_a_health_failure() -> None:
    action = LocalSfAction(port_action=PortAction.LOG_ONLY)
    pair, feed = start_health(ib_fatal=health(window=2.0), local_sf_action=action)
    feed.sample(ib_link_downed=1)
    feed.sample()
    (sf,) = raised(pair)
    assert not sf.port_affecting and not pair.a.out_of_service


# -- what ends them -------------------------------------------------------------------------------


def test_a_link_flap_neither_ends_health_events_nor_restarts_their_windows() -> None:
    pair, feed = start_health(link_flaps=health(window=10.0, sf_threshold=2), ib_fatal=health(window=10.0))
    feed.sample(ib_link_downed=1, carrier_down_count=1)
    pair.call("a", "set_link", False)
    pair.call("a", "set_link", True)
    feed.sample(ib_link_downed=0, carrier_down_count=1)
    feed.quiet(8)
    assert {e.monitor for e in health_events(pair)} == {"link_flaps", "ib_fatal"}  # the flaps were counted
    assert pair.a.out_of_service
    pair.call("a", "set_link", False)  # a flapping port stays out of service: the flap is what they count
    pair.call("a", "set_link", True)
    assert {e.monitor for e in pair.a.link_monitoring.active_events()} == {"link_flaps", "ib_fatal"}
    assert pair.a.out_of_service
    assert {m.state.value for m in pair.a.link_monitoring.running_health} == {"failed"}
    pair.call("a", "clear_events")
    assert not pair.a.link_monitoring.active_events()
    assert {m.state.value for m in pair.a.link_monitoring.running_health} == {"ok"}


def test_new_thresholds_clear_a_health_event_and_the_clear_command_too() -> None:
    pair, feed = start_health(fec_uncorrectable=health(window=2.0), link_flaps=health(window=2.0, sf_threshold=1))
    feed.sample(fec_uncorrectable_blocks=1, carrier_down_count=1)
    feed.sample()
    assert len(pair.a.link_monitoring.active_events()) == 2
    flaps = health(window=2.0, sf_threshold=2)
    new = port_settings(link_monitoring(fec_uncorrectable=health(window=2.0), link_flaps=flaps))
    pair.call("a", "reconfigure", new)
    assert [e.monitor for e in pair.a.link_monitoring.active_events()] == ["fec_uncorrectable"]
    pair.call("a", "clear_events", Location.LOCAL)
    assert pair.a.link_monitoring.active_events() == []
    assert not pair.a.out_of_service


# -- histograms (for the metrics) ------------------------------------------------------------------


def test_every_closed_window_lands_in_its_rows_buckets() -> None:
    pair, feed = start_health(link_flaps=health(window=1.0, sf_threshold=1000))
    for step in (0, 1, 2, 4, 1000, 5000):
        feed.sample(carrier_down_count=step)
    (flaps,) = pair.a.link_monitoring.running_health
    bounds = flaps.health.buckets
    assert bounds == HEALTH_FACTS[HealthKind.LINK_FLAPS].buckets
    expected = [0] * (len(bounds) + 1)
    for value in (0, 1, 2, 4, 1000, 5000):
        expected[next((i for i, b in enumerate(bounds) if value <= b), len(bounds))] += 1
    assert flaps.histogram == expected and flaps.histogram[-1] == 1  # 5000: +Inf only
    assert (flaps.histogram_count, flaps.histogram_sum) == (6, 6007.0)


# -- every monitor failed at once -----------------------------------------------------------------


def test_every_monitor_failed_at_once_grows_the_log_past_12_and_drops_no_active_entry() -> None:
    from pdu import EventTlvType
    from tests.linkmon import B_MAC, LinkEventTlv, event_frame

    everything = {
        "errored_frame": monitor(),
        "errored_frame_period": monitor(window=1000),
        "errored_symbol_period": monitor(),
        "errored_frame_seconds": monitor(window=10.0),
        **{facts.key: health(window=1.0, fatal=True if facts.fatal_counters else None) for facts in HEALTH},
        "fec_corrected": health(window=1.0, sf_threshold=1.0),
    }
    pair, feed = start_health(**everything)
    for _ in range(3):  # fill the ring with cleared entries first
        feed.send(errored_frames=(feed.values["errored_frames"] or 0) + 1)
        pair.run_for(1)
        feed.send(errored_frames=(feed.values["errored_frames"] or 0) + 1)
        pair.call("a", "clear_events")
    # the peer's four monitors fail: four remote events
    tlvs = [
        LinkEventTlv(type=t, timestamp=1, window=w, threshold=1, errors=5, error_running_total=5, event_running_total=1)
        for t, w in (
            (EventTlvType.ERRORED_SYMBOL_PERIOD, 125_000_000),
            (EventTlvType.ERRORED_FRAME, 10),
            (EventTlvType.ERRORED_FRAME_PERIOD, 1_488_095),
            (EventTlvType.ERRORED_FRAME_SECONDS_SUMMARY, 600),
        )
    ]
    pair.inject("a", event_frame(1, *tlvs, src=B_MAC))
    # and every local one, standard and health
    bump = {name: 10 for name in HEALTH_COUNTERS}
    for _ in range(11):
        feed.sample(**bump, errored_frames=1, symbol_errors=10)
    feed.values["frames_received"] = (feed.values["frames_received"] or 0) + 2_000_000
    feed.sample(errored_frames=1)
    active = pair.a.link_monitoring.active_events()
    assert len(active) == 13  # 4 remote, 4 local standard, 5 health
    shown = pair.a.event_log()
    assert {e.index for e in active} <= {e.index for _, e in shown}  # no active entry dropped
    assert max(slot for slot, _ in shown) > SLOTS
    assert len({slot for slot, _ in shown}) == len(shown)
    pair.call("a", "clear_events")
    pair.call("a", "set_link", False)
    pair.call("a", "set_link", True)
    pair.call("a", "clear_events")  # the flap's own health events (a flap does not end them)
    feed.quiet(2)
    feed.sample(ib_link_downed=1)  # one more event after the storm: the slots above 12 go
    feed.quiet(1)
    assert max(slot for slot, _ in pair.a.event_log()) <= SLOTS


# -- saved state ----------------------------------------------------------------------------------


def test_a_health_failure_survives_a_restart() -> None:
    pair, feed = start_health(pause_storm=health(window=2.0))
    feed.sample(pause_storm_events=1)
    feed.sample()
    saved = pair.a.saved_state()
    (entry,) = [e for e in saved["active"]]
    assert entry["key"] == {"location": "local", "monitor": "pause-storm"}
    assert entry["entry"]["monitor"] == "pause_storm" and entry["entry"]["window_seconds"] == 2.0
    again, _ = start_health(pause_storm=health(window=2.0))
    assert again.a.restore(saved, now=again.now) == []
    (restored,) = again.a.link_monitoring.active_events()
    assert (restored.monitor, restored.window, restored.port_affecting) == ("pause_storm", 2000, True)
    assert [m.state.value for m in again.a.link_monitoring.running_health] == ["failed"]


# -- the hot path ---------------------------------------------------------------------------------


def test_without_health_monitors_their_counters_are_not_read() -> None:
    deltas = CounterDeltas(health=False)
    sample = CounterSample(errored_frames=1, frames_received=2, symbol_errors=3, fec_corrected_bits=5)
    deltas.update(sample)
    values = deltas.update(CounterSample(errored_frames=2, frames_received=4, symbol_errors=6, fec_corrected_bits=9))
    assert values == (1, 2, 3, *[None] * len(HEALTH_COUNTERS))
    deltas.watch_health(True)
    bits = COUNTERS.index("fec_corrected_bits")
    assert deltas.update(CounterSample(errored_frames=2, fec_corrected_bits=20))[bits] == 0  # a new baseline
    assert deltas.update(CounterSample(fec_corrected_bits=25))[bits] == 5


def test_link_monitoring_off_runs_no_health_monitor() -> None:
    pair, feed = start_health()
    off = port_settings(LinkMonitoringSettings(enabled=False, ib_fatal=health()))
    pair.call("a", "reconfigure", off)
    feed.sample(ib_link_downed=1)
    feed.quiet(12)
    assert raised(pair) == [] and pair.a.link_monitoring.running_health == []


def test_a_saved_health_event_comes_back_where_the_monitor_is_now_off() -> None:
    pair, feed = start_health(ib_fatal=health(window=2.0))
    feed.sample(ib_link_downed=1)
    feed.sample()
    saved = pair.a.saved_state()
    again, _ = start_health()  # the monitor is no longer configured
    assert again.a.restore(saved, now=again.now) == []
    (restored,) = again.a.link_monitoring.active_events()
    assert restored.monitor == "ib_fatal" and again.a.out_of_service
    again.call("a", "clear_events")
    assert not again.a.out_of_service and again.a.link_monitoring.running_health == []


def test_a_saved_health_event_of_the_wrong_key_is_refused() -> None:
    pair, feed = start_health(ib_fatal=health(window=2.0))
    feed.sample(ib_link_downed=1)
    feed.sample()
    saved = pair.a.saved_state()
    saved["active"][0]["key"] = {"location": "local", "monitor": "link-flaps"}
    again, _ = start_health()
    with pytest.raises(ValueError, match="has an entry of type"):
        again.a.restore(saved, now=again.now)
    assert again.a.link_monitoring.active_events() == []


def test_a_rebased_sample_is_a_baseline_not_an_increase() -> None:
    """A counter moving to another source (a driver's total instead of the kernel's) jumps:
    the daemon says so, and the jump raises nothing."""
    pair, feed = start_health(fec_uncorrectable=health(window=2.0))
    feed.values["fec_uncorrectable_blocks"] = 5_000_000
    feed.pair.run_until(feed.pair.now + 1.0)
    feed.pair.call("a", "on_counters", CounterSample(**feed.values), rebased=True)
    feed.quiet(3)
    assert health_events(pair) == []
    feed.sample(fec_uncorrectable_blocks=1)  # counting goes on from the new baseline
    feed.quiet(2)
    assert [e.monitor for e in health_events(pair)] == ["fec_uncorrectable"]
