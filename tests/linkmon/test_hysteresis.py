"""Clear thresholds (sd_clear, sf_clear): a degrade or a symbol failure ends only below them.

Driven at two levels: a `Monitor` judging closed windows (the table `TRANSITIONS`), and a
`LinkMonitoring` fed one counter sample per second (one-second windows), whose log and
active events show what an operator sees.  Without clear thresholds nothing changes.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from efmoam.core.linkmon import (
    CounterSample,
    LinkMonitoring,
    LinkMonitoringSettings,
    Location,
    MonitorKind,
    MonitorSettings,
    MonitorState,
    Severity,
)
from efmoam.core.linkmon.events import EventKey
from efmoam.core.linkmon.monitors import Monitor, Verdict
from efmoam.core.linkmon.persist import restore, snapshot
from efmoam.core.outputs import EventLogged

M, V = MonitorState, Verdict
SYMBOLS = MonitorKind.ERRORED_SYMBOL_PERIOD
FRAMES = MonitorKind.ERRORED_FRAME


def judged(
    kind: MonitorKind, settings: MonitorSettings, windows: list[int]
) -> list[tuple[MonitorState, Verdict | None]]:
    """The state and verdict after each closed window of `windows` errors."""
    monitor = Monitor(kind, settings)
    steps = []
    for errors in windows:
        verdict = monitor.judge(errors)
        steps.append((monitor.state, verdict))
    return steps


# -- the table ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [SYMBOLS, FRAMES])
def test_a_degrade_persists_between_sd_clear_and_sd(kind: MonitorKind) -> None:
    settings = MonitorSettings(enabled=True, sf_threshold=10, sd_threshold=5, sd_clear=2)
    assert judged(kind, settings, [5, 4, 2, 7, 1]) == [
        (M.DEGRADED, V.DEGRADED),
        (M.DEGRADED, None),  # below sd, not below sd_clear
        (M.DEGRADED, None),  # sd_clear exactly: not below it
        (M.DEGRADED, None),  # above sd again: still the one degrade, nothing new
        (M.OK, V.DEGRADE_ENDED),
    ]


@pytest.mark.parametrize("kind", [SYMBOLS, FRAMES])
def test_without_sd_clear_a_degrade_ends_below_sd(kind: MonitorKind) -> None:
    settings = MonitorSettings(enabled=True, sf_threshold=10, sd_threshold=5)
    assert judged(kind, settings, [5, 4]) == [(M.DEGRADED, V.DEGRADED), (M.OK, V.DEGRADE_ENDED)]


def test_sd_clear_equal_to_sd_is_the_default() -> None:
    windows = [6, 5, 4, 6, 0]
    plain = MonitorSettings(enabled=True, sf_threshold=10, sd_threshold=5)
    assert judged(FRAMES, attrs.evolve(plain, sd_clear=5), windows) == judged(FRAMES, plain, windows)


def test_a_degrade_with_sd_clear_still_fails_at_sf() -> None:
    settings = MonitorSettings(enabled=True, sf_threshold=10, sd_threshold=5, sd_clear=2)
    assert judged(FRAMES, settings, [5, 3, 10]) == [(M.DEGRADED, V.DEGRADED), (M.DEGRADED, None), (M.FAILED, V.FAILED)]


def test_a_symbol_failure_with_sf_clear_recovers_only_below_it() -> None:
    settings = MonitorSettings(enabled=True, sf_threshold=10, sf_clear=3)  # no sd-threshold needed
    assert judged(SYMBOLS, settings, [12, 9, 3, 2]) == [
        (M.FAILED, V.FAILED),
        (M.FAILED, None),
        (M.FAILED, None),  # sf_clear exactly: not below it
        (M.OK, V.RECOVERED),
    ]


def test_sf_clear_takes_the_place_of_sd_for_recovery() -> None:
    settings = MonitorSettings(enabled=True, sf_threshold=10, sd_threshold=5, sf_clear=2)
    assert judged(SYMBOLS, settings, [10, 4, 1]) == [(M.FAILED, V.FAILED), (M.FAILED, None), (M.OK, V.RECOVERED)]
    higher = attrs.evolve(settings, sf_clear=8)  # above sd: recovery comes sooner than at sd
    assert judged(SYMBOLS, higher, [10, 7]) == [(M.FAILED, V.FAILED), (M.OK, V.RECOVERED)]


def test_without_sf_clear_a_symbol_failure_recovers_below_sd_as_before() -> None:
    settings = MonitorSettings(enabled=True, sf_threshold=10, sd_threshold=3)
    assert judged(SYMBOLS, settings, [10, 3, 2]) == [(M.FAILED, V.FAILED), (M.FAILED, None), (M.OK, V.RECOVERED)]


def test_without_sf_clear_or_sd_a_symbol_failure_stays() -> None:
    settings = MonitorSettings(enabled=True, sf_threshold=10)
    assert judged(SYMBOLS, settings, [10, 0, 0]) == [(M.FAILED, V.FAILED), (M.FAILED, None), (M.FAILED, None)]


def test_a_frame_failure_never_recovers_by_itself() -> None:
    settings = MonitorSettings(enabled=True, sf_threshold=10, sd_threshold=5, sd_clear=1)
    assert judged(FRAMES, settings, [10, 0, 0]) == [(M.FAILED, V.FAILED), (M.FAILED, None), (M.FAILED, None)]


# -- the settings -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "fields", "message"),
    [
        (FRAMES, {"sd_clear": 2}, "errored-frame sd-clear needs an sd-threshold"),
        (FRAMES, {"sd_clear": 2, "sd_threshold": 0}, "errored-frame sd-clear needs an sd-threshold"),
        (FRAMES, {"sd_clear": 0, "sd_threshold": 5}, "errored-frame sd-clear 0 must be between 1 and sd-threshold 5"),
        (FRAMES, {"sd_clear": 6, "sd_threshold": 5}, "errored-frame sd-clear 6 must be between 1 and sd-threshold 5"),
        (SYMBOLS, {"sf_clear": 0}, "errored-symbol-period sf-clear 0 must be between 1 and sf-threshold 10"),
        (SYMBOLS, {"sf_clear": 11}, "errored-symbol-period sf-clear 11 must be between 1 and sf-threshold 10"),
        (FRAMES, {"sf_clear": 3}, "errored-frame sf-clear is only used by errored-symbol-period"),
    ],
)
def test_clear_thresholds_are_checked(kind: MonitorKind, fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MonitorSettings(enabled=True, sf_threshold=10, **fields).check(kind)


@pytest.mark.parametrize(
    ("kind", "fields"),
    [
        (FRAMES, {"sd_threshold": 5, "sd_clear": 1}),
        (FRAMES, {"sd_threshold": 5, "sd_clear": 5}),
        (SYMBOLS, {"sf_clear": 1}),
        (SYMBOLS, {"sf_clear": 10}),
        (SYMBOLS, {"sd_threshold": 5, "sd_clear": 2, "sf_clear": 7}),
    ],
)
def test_clear_thresholds_in_range(kind: MonitorKind, fields: dict[str, Any]) -> None:
    MonitorSettings(enabled=True, sf_threshold=10, **fields).check(kind)


# -- a port's link monitoring -------------------------------------------------------------


class Port:
    """A `LinkMonitoring` fed one sample a second: each sample closes a one-second window."""

    def __init__(self, **monitors: Any) -> None:
        self.monitoring = LinkMonitoring(LinkMonitoringSettings(enabled=True, **monitors), epoch=0.0)
        self.now = 0.0
        self.frames = self.symbols = 0
        self._sample()  # the baseline

    def window(self, frames: int = 0, symbols: int = 0) -> None:
        self.frames += frames
        self.symbols += symbols
        self.now += 1.0
        self._sample()

    def _sample(self) -> None:
        sample = CounterSample(errored_frames=self.frames, frames_received=0, symbol_errors=self.symbols)
        self.monitoring.on_counters(sample, self.now)

    def severities(self, kind: MonitorKind) -> list[Severity]:
        """The severity of the active local event of `kind` (empty: none)."""
        event = self.monitoring.active.get(EventKey(Location.LOCAL, kind))
        return [] if event is None else [event.entry.severity]

    def logged(self) -> list[tuple[Severity, bool]]:
        """Every log record so far: (severity, active), the clears included."""
        records = [record for record in self.monitoring.outputs if isinstance(record, EventLogged)]
        return [(record.entry.severity, record.entry.active) for record in records]


def test_a_degraded_port_stays_degraded_until_below_sd_clear() -> None:
    port = Port(errored_frame=MonitorSettings(enabled=True, sf_threshold=20, sd_threshold=8, sd_clear=3))
    port.window(frames=9)
    assert port.severities(FRAMES) == [Severity.DEGRADE]
    for errors in (7, 5, 3):
        port.window(frames=errors)
        assert port.severities(FRAMES) == [Severity.DEGRADE], errors
    port.window(frames=2)
    assert port.severities(FRAMES) == []
    assert port.logged() == [(Severity.DEGRADE, True), (Severity.DEGRADE, False)]  # one degrade, one clear


def test_a_symbol_failure_with_sf_clear_recovers_and_tells_the_peer() -> None:
    port = Port(errored_symbol_period=MonitorSettings(enabled=True, sf_threshold=10, sf_clear=4))
    port.window(symbols=10)
    assert port.severities(SYMBOLS) == [Severity.FAILURE]
    port.window(symbols=4)
    assert port.severities(SYMBOLS) == [Severity.FAILURE]
    assert port.monitoring.holders()  # still out of service
    port.window(symbols=3)
    assert port.severities(SYMBOLS) == []
    assert not port.monitoring.holders()
    failure, recovery = (intent.tlvs[0] for intent in port.monitoring.intents)
    assert (failure.errors, failure.threshold) == (10, 10)
    assert (recovery.errors, recovery.threshold) == (3, 10)  # below the threshold: the peer clears it too


def test_default_behaviour_is_unchanged() -> None:
    port = Port(
        errored_frame=MonitorSettings(enabled=True, sf_threshold=20, sd_threshold=8),
        errored_symbol_period=MonitorSettings(enabled=True, sf_threshold=10, sd_threshold=4),
    )
    port.window(frames=9, symbols=10)
    assert (port.severities(FRAMES), port.severities(SYMBOLS)) == ([Severity.DEGRADE], [Severity.FAILURE])
    port.window(frames=7, symbols=3)  # both below sd: the degrade ends, the symbol failure recovers
    assert (port.severities(FRAMES), port.severities(SYMBOLS)) == ([], [])


def test_a_restored_degrade_keeps_its_clear_threshold() -> None:
    monitors = {"errored_frame": MonitorSettings(enabled=True, sf_threshold=20, sd_threshold=8, sd_clear=3)}
    port = Port(**monitors)
    port.window(frames=9)
    saved = snapshot(port.monitoring)

    restarted = Port(**monitors)
    assert restore(restarted.monitoring, saved, now=restarted.now) == []
    assert restarted.monitoring.monitors[FRAMES].state is MonitorState.DEGRADED
    restarted.window(frames=5)  # between sd_clear and sd
    assert restarted.severities(FRAMES) == [Severity.DEGRADE]
    restarted.window(frames=2)
    assert restarted.severities(FRAMES) == []
