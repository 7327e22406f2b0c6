"""One monitor: its window over counter samples and its state machine (57.5.3).

Windows are measured on the samples' clock: a window opens at a sample and closes at the
first sample at or after its end; the errors it reports are those of the samples it
spans.  Late or uneven samples stretch a window, they never split or overlap one.  The
errored-frame-period window closes, checked once per second, when it has seen the
configured number of received frames.

The state machine is the table `TRANSITIONS`, read at the end of every window whose
errors matter (the reference's behaviour, with the link-monitoring reference's choices):

* reaching sf-threshold fails the monitor (a failed monitor raises nothing new and
  reports no degrade until its failure is cleared);
* reaching only sd-threshold degrades it, once: a degrade ends when a window ends below
  sd-clear (sd-threshold when none is set), so errors between the two keep it degraded;
* a failed symbol monitor recovers by itself when a window ends below sf-clear, or
  without one below sd-threshold (without either it does not); frame monitors never do.

Outside the windows: `cleared` (the clear command, a link flap, new thresholds) returns
the monitor to OK, `restore` puts back a saved failure or degrade, and a counter the
source stops providing makes it UNAVAILABLE until the counter returns, when it resumes
the state it had.  Nothing outside this class assigns `state`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

import attrs

from efmoam.core.linkmon.counters import COUNTERS
from efmoam.core.linkmon.eventlog import Severity
from efmoam.core.linkmon.kinds import FACTS, MonitorKind
from efmoam.core.linkmon.rates import min_frames_per_second, symbols_per_second
from efmoam.core.linkmon.settings import MonitorSettings


class MonitorState(enum.Enum):
    OK = "ok"
    DEGRADED = "degraded"
    FAILED = "failed"
    UNAVAILABLE = "unavailable"  #: the counter source lacks a counter this monitor needs


class Verdict(enum.Enum):
    """What a closed window means for the monitor's events."""

    FAILED = "failed"  #: raise a signal failure
    DEGRADED = "degraded"  #: raise a signal degrade
    DEGRADE_ENDED = "degrade_ended"  #: the degrade is over
    RECOVERED = "recovered"  #: the failure is over (symbol monitor with sf-clear or sd-threshold)


@attrs.frozen
class Window:
    """A closed window as the guards read it, with the monitor's effective clear levels."""

    errors: int
    sf: int
    sd: int | None
    #: fewer errors than this end a degrade (sd-clear, else sd-threshold; None: any window)
    sd_clear: int | None
    #: fewer errors than this end a failure (symbols only: sf-clear, else sd-threshold; None: never)
    sf_clear: int | None


Guard = Callable[[Window], bool]


def reaches_sf(w: Window) -> bool:
    return w.errors >= w.sf


def reaches_sd(w: Window) -> bool:
    return w.sd is not None and w.errors >= w.sd


def below_sd_clear(w: Window) -> bool:
    return w.sd_clear is None or w.errors < w.sd_clear


def below_sf_clear(w: Window) -> bool:
    return w.sf_clear is not None and w.errors < w.sf_clear


M, V = MonitorState, Verdict
#: (state, guard, next state, verdict); within a state the first matching row wins, and a
#: window no row matches changes nothing
TRANSITIONS: tuple[tuple[MonitorState, Guard, MonitorState, Verdict], ...] = (
    (M.OK, reaches_sf, M.FAILED, V.FAILED),
    (M.OK, reaches_sd, M.DEGRADED, V.DEGRADED),
    (M.DEGRADED, reaches_sf, M.FAILED, V.FAILED),  # the failure replaces the degrade
    (M.DEGRADED, below_sd_clear, M.OK, V.DEGRADE_ENDED),
    (M.FAILED, below_sf_clear, M.OK, V.RECOVERED),
)
_ROWS: dict[MonitorState, list[tuple[Guard, MonitorState, Verdict]]] = {state: [] for state in MonitorState}
for _state, _guard, _next, _verdict in TRANSITIONS:
    _ROWS[_state].append((_guard, _next, _verdict))

PERIOD_CHECK_INTERVAL = 1.0  #: the frame-period window is checked once per second
COUNTER_FRAMES = COUNTERS.index("frames_received")
_RESTORED = {Severity.FAILURE: MonitorState.FAILED, Severity.DEGRADE: MonitorState.DEGRADED}


class Monitor:
    """One monitor's window, totals and state.

    `configure` precomputes what every sample needs (window length, the window as the
    TLV carries it, which counters to read), so `observe` does arithmetic only.
    """

    def __init__(self, kind: MonitorKind, settings: MonitorSettings) -> None:
        self.kind = kind
        self.facts = FACTS[kind]
        self.state = MonitorState.OK
        self.error_total = 0  #: errors (errored seconds for the summary) since reset
        self.event_total = 0  #: events raised since reset
        self.last_errors: int | None = None  #: errors of the last closed window
        self.unavailable_reported = False
        self._resume = MonitorState.OK  # the state to return to when the counter is back
        self._needs = tuple(COUNTERS.index(name) for name in self.facts.counters)
        self._errors_at = self._needs[0]
        self._period = kind is MonitorKind.ERRORED_FRAME_PERIOD
        self._seconds = kind is MonitorKind.ERRORED_FRAME_SECONDS
        self._unavailable = False
        self.configure(settings, None, None)
        self.restart()

    def configure(self, settings: MonitorSettings, speed_mbps: int | None, symbol_rate: int | None) -> None:
        """Take new settings or a new link speed (in the current window)."""
        self.settings = settings
        #: the window in seconds (the period monitor's is in frames, `wire_window`)
        self.window_seconds = settings.window if settings.window is not None else (self.facts.default_window or 1.0)
        if self.kind is MonitorKind.ERRORED_SYMBOL_PERIOD:
            wire = round(self.window_seconds * (symbol_rate or symbols_per_second(speed_mbps)))
        elif self._period:
            wire = int(settings.window or min_frames_per_second(speed_mbps))
        else:
            wire = round(self.window_seconds * 10)  # 100 ms units
        #: the window as the link event TLV carries it
        self.wire_window = wire
        #: the lowest threshold an event needs: below it a window is simply clean
        self.lowest_threshold = settings.sd or settings.sf_threshold
        self._sd_clear = settings.sd_clear or settings.sd
        recovers = self.kind is MonitorKind.ERRORED_SYMBOL_PERIOD
        self._sf_clear = (settings.sf_clear or settings.sd) if recovers else None
        self._span = self.window_seconds - 1e-9  # a sample this late after the start closes the window

    # -- the state machine -------------------------------------------------------------

    def judge(self, errors: int) -> Verdict | None:
        """A window closed with `errors`: move along `TRANSITIONS`; returns the verdict."""
        settings = self.settings
        window = Window(errors, settings.sf_threshold, settings.sd, self._sd_clear, self._sf_clear)
        for guard, state, verdict in _ROWS[self.state]:
            if guard(window):
                self.state = state
                if verdict in (Verdict.FAILED, Verdict.DEGRADED):
                    self.event_total += 1
                return verdict
        return None

    def cleared(self) -> None:
        """Its events were cleared: back to OK (remembered for later while unavailable)."""
        if self._unavailable:
            self._resume = MonitorState.OK
        else:
            self.state = MonitorState.OK

    def restore(self, severity: Severity) -> None:
        """A saved event of this monitor is active again: failed or degraded."""
        if self._unavailable:
            self._resume = _RESTORED[severity]
        else:
            self.state = _RESTORED[severity]

    # -- windows -----------------------------------------------------------------------

    def restart(self) -> None:
        """Forget the current window; the next sample opens a new one."""
        self._start: float | None = None
        self._window_end = 0.0  # the first sample at or after this closes a time window
        self._errors = 0
        self._frames = 0
        self._last_check = 0.0
        self._last_errored_second = -1

    def missing(self, deltas: tuple[int | None, ...]) -> tuple[str, ...]:
        """The counters this monitor needs that the sample lacks."""
        return tuple(COUNTERS[i] for i in self._needs if deltas[i] is None)

    def observe(self, deltas: tuple[int | None, ...], now: float) -> int | None:
        """Add one sample's deltas; return the errors of the window it closes, if any."""
        errors = deltas[self._errors_at]
        if errors is None or (self._period and deltas[COUNTER_FRAMES] is None):
            self._went_unavailable()
            return None
        if self._unavailable:
            self._unavailable = False
            self.state = self._resume
            self.unavailable_reported = False
        start = self._start
        if start is None:
            self._open(now)
            return None
        if errors:
            if self._seconds:
                second = int(now - start - 1e-9)  # the second of the window this sample ends
                if second > self._last_errored_second:
                    self._last_errored_second = second
                    self._errors += 1
                    self.error_total += 1
            else:
                self._errors += errors
                self.error_total += errors
        if self._period:
            self._frames += deltas[COUNTER_FRAMES] or 0
            if now < self._last_check + PERIOD_CHECK_INTERVAL - 1e-9:
                return None
            self._last_check = now
            if self._frames < self.wire_window:
                return None
        elif now < self._window_end:
            return None
        closed = self._errors
        # the next window opens at this sample (as `_open` does, inline: this is the hot path)
        self._start = self._last_check = now
        self._window_end = now + self._span
        self._errors = self._frames = 0
        self._last_errored_second = -1
        self.last_errors = closed
        return closed

    def _open(self, now: float) -> None:
        self._start = self._last_check = now
        self._window_end = now + self._span
        self._errors = self._frames = 0
        self._last_errored_second = -1

    def _went_unavailable(self) -> None:
        if not self._unavailable:
            self._unavailable = True
            self._resume, self.state = self.state, MonitorState.UNAVAILABLE
        self.restart()
