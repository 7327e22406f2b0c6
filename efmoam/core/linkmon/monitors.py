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

`HealthMonitor` is the same state machine over a NIC health row (`kinds.HEALTH`): a time
window; its errors are the sum of its measured counters (or the first one provided), as a
count per window or divided by the window's seconds as a rate; while fatal, any increase
of a fatal counter in the window fails it (`Window.fatal`).  It is unavailable only when
the source provides none of its counters.  A failure lasts until cleared, as a frame
monitor's.  For the metrics, every closed window's value (in the thresholds' unit) goes
into a histogram with the row's fixed bounds (`histogram`, `histogram_sum`,
`histogram_count`: summed over ports they make one Prometheus histogram), and
fec_corrected keeps its last pre-FEC BER estimate (`ber_estimate`).
"""

from __future__ import annotations

import bisect
import enum
import math
from collections.abc import Callable

import attrs

from efmoam.core.linkmon.counters import COUNTERS
from efmoam.core.linkmon.eventlog import Severity
from efmoam.core.linkmon.kinds import FACTS, HEALTH_FACTS, Counting, HealthKind, MonitorKind
from efmoam.core.linkmon.rates import min_frames_per_second, symbols_per_second
from efmoam.core.linkmon.settings import HealthSettings, MonitorSettings
from pdu.enums import EventLogType


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

    errors: float  #: a count, or a rate per second (health monitors)
    sf: float
    sd: float | None
    #: fewer errors than this end a degrade (sd-clear, else sd-threshold; None: any window)
    sd_clear: float | None
    #: fewer errors than this end a failure (symbols only: sf-clear, else sd-threshold; None: never)
    sf_clear: float | None
    fatal: bool = False  #: a fatal counter of a health monitor increased in the window


Guard = Callable[[Window], bool]


def reaches_sf(w: Window) -> bool:
    return w.fatal or w.errors >= w.sf


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
    TLV carries it, which counters to read), so `observe` does arithmetic only.  Keep its
    instance attributes at 30 or fewer: beyond that CPython stops sharing their keys and
    each instance's dict grows fivefold, which thousands of ports feel per sample.
    """

    fatal_hit = False  #: a fatal counter increased in the window just closed (health monitors only)
    health_key: str | None = None  #: a health monitor's key, which its events carry

    @property
    def key(self) -> str:
        """Its configuration key, metric label and JSON key."""
        return self.facts.key

    @property
    def log_type(self) -> EventLogType:
        return self.facts.log_type

    def __init__(self, kind: MonitorKind, settings: MonitorSettings) -> None:
        self.kind: MonitorKind | HealthKind = kind
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
        self.lowest_threshold: float = settings.sd or settings.sf_threshold
        self.sf: float = settings.sf_threshold
        self.sd: float | None = settings.sd
        self._sd_clear: float | None = settings.sd_clear or settings.sd
        recovers = self.kind is MonitorKind.ERRORED_SYMBOL_PERIOD
        self._sf_clear: float | None = (settings.sf_clear or settings.sd) if recovers else None
        self._span = self.window_seconds - 1e-9  # a sample this late after the start closes the window

    # -- the state machine -------------------------------------------------------------

    def judge(self, errors: float) -> Verdict | None:
        """A window closed with `errors`: move along `TRANSITIONS`; returns the verdict."""
        window = Window(errors, self.sf, self.sd, self._sd_clear, self._sf_clear, self.fatal_hit)
        for guard, state, verdict in _ROWS[self.state]:
            if guard(window):
                self.state = state
                if verdict in (Verdict.FAILED, Verdict.DEGRADED):
                    self.event_total += 1
                return verdict
        return None

    @property
    def notifies(self) -> bool:
        """Whether its events go to the peer as Event Notifications."""
        return self.settings.event_notification

    @property
    def thresholds(self) -> tuple[object, ...]:
        """What, changed, clears its events (new thresholds)."""
        return self.sf, self.sd

    def entry_numbers(self, severity: Severity, errors: float) -> dict[str, int]:
        """The window, threshold and errors of its event-log entry for a window that closed with `errors`."""
        threshold = self.sf if severity is Severity.FAILURE else self.sd or 0
        return {"window": self.wire_window, "threshold": int(threshold), "value": int(errors)}

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

    def observe(self, deltas: tuple[int | None, ...], now: float) -> float | None:
        """Add one sample's deltas; return the errors of the window it closes, if any."""
        errors = deltas[self._errors_at]
        if errors is None or (self._period and deltas[COUNTER_FRAMES] is None):
            self._went_unavailable()
            return None
        if self._unavailable:
            self._available_again()
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

    def _available_again(self) -> None:
        """The counters are back: the state the monitor had before they went missing."""
        self._unavailable = False
        self.state = self._resume
        self.unavailable_reported = False

    def _went_unavailable(self) -> None:
        if not self._unavailable:
            self._unavailable = True
            self._resume, self.state = self.state, MonitorState.UNAVAILABLE
        self.restart()


#: the histogram's index for a value: the first bucket bound at or above it (Prometheus ``le``)
_bucket = bisect.bisect_left
#: bits per second per Mb/s of link speed
_BITS_PER_MBPS = 1_000_000
_BITS_AT = COUNTERS.index("fec_corrected_bits")


class HealthMonitor(Monitor):
    """A NIC health monitor: `Monitor`'s state machine and window over a `kinds.HEALTH` row
    (30 instance attributes at most, as `Monitor`)."""

    _sf_clear = None  # a failure lasts until cleared

    def __init__(self, kind: HealthKind, settings: HealthSettings) -> None:
        self.kind = kind
        self.health = HEALTH_FACTS[kind]
        self.state = MonitorState.OK
        self.error_total = 0  #: the measured counters' increase since reset
        self.event_total = 0
        self.last_errors: int | None = None  #: the measured counters' increase in the last closed window
        self.last_value: float | None = None  #: the last closed window's value, in the thresholds' unit
        self.last_fatal: int | None = None  #: the fatal counters' increase in the last closed window
        self.ber_estimate: float | None = None  #: fec_corrected: pre-FEC BER of the last window (None: unknown)
        self.histogram = [0] * (len(self.health.buckets) + 1)  #: closed windows per bucket, the last +Inf
        self.histogram_sum = 0.0
        self.unavailable_reported = False
        self._resume = MonitorState.OK
        self._unavailable = False
        self._measured = tuple(COUNTERS.index(name) for name in self.health.measured)
        self._counted_at: int | None = None  # the measured counter read last (first_present)
        self.speed_mbps: int | None = None
        self.configure_health(settings, None)
        self.restart()

    @property
    def key(self) -> str:
        return self.health.key

    @property
    def health_key(self) -> str:  # type: ignore[override]
        return self.health.key

    @property
    def fatal_hit(self) -> bool:  # type: ignore[override]
        """A fatal counter increased in the window just closed (while fatal)."""
        return bool(self.last_fatal) and self.fatal

    @property
    def histogram_count(self) -> int:
        """Closed windows counted in `histogram`."""
        return sum(self.histogram)

    @property
    def log_type(self) -> EventLogType:
        return self.health.log_type

    def configure(self, settings: MonitorSettings, speed_mbps: int | None, symbol_rate: int | None) -> None:
        raise TypeError("a health monitor takes HealthSettings (configure_health)")

    def configure_health(self, settings: HealthSettings, speed_mbps: int | None) -> None:
        """Take new settings or a new link speed (in the current window)."""
        self.enabled = settings.enabled
        self.window_seconds, self.sf, self.sd, self.fatal = settings.effective(self.health.kind)
        self.speed_mbps = speed_mbps
        self._fatal_at = tuple(COUNTERS.index(n) for n in self.health.fatal_counters) if self.fatal else ()
        # a fatal monitor judges every window; otherwise below the lowest threshold a window is clean
        self.lowest_threshold = 0 if self.fatal else (self.sd or self.sf)
        self._sd_clear = self.sd

    @property
    def notifies(self) -> bool:
        return False  # no TLV type: the peer learns only from the local-sf-action's flags

    @property
    def thresholds(self) -> tuple[object, ...]:
        return self.sf, self.sd, self.fatal

    def entry_numbers(self, severity: Severity, errors: float) -> dict[str, int]:
        """Window in milliseconds; threshold and errors per window (a rate's threshold times
        the window, rounded up); a fatal failure's threshold is 1 and its errors the fatal count."""
        window = round(self.window_seconds * 1000)
        if severity is Severity.FAILURE and self.fatal_hit:
            return {"window": window, "threshold": 1, "value": self.last_fatal or 0}
        threshold = self.sf if severity is Severity.FAILURE else self.sd or 0
        if self.health.counting is Counting.RATE:
            threshold = math.ceil(threshold * self.window_seconds)
        return {"window": window, "threshold": int(threshold), "value": self.last_errors or 0}

    def missing(self, deltas: tuple[int | None, ...]) -> tuple[str, ...]:
        needs = dict.fromkeys(self._measured + self._fatal_at)
        return tuple(COUNTERS[i] for i in needs if deltas[i] is None)

    def restart(self) -> None:
        self._start = None
        self._window_end = 0.0
        self._errors = self._fatal_hits = 0

    def _open(self, now: float) -> None:
        self._start = now
        self._window_end = now + self.window_seconds - 1e-9
        self._errors = self._fatal_hits = 0

    def observe(self, deltas: tuple[int | None, ...], now: float) -> float | None:
        """Add one sample's deltas; return the value of the window it closes (count or rate), if any."""
        errors: int | None = None
        for at in self._measured:
            delta = deltas[at]
            if delta is not None:
                if self.health.first_present:
                    errors, self._counted_at = delta, at
                    break
                errors = delta if errors is None else errors + delta
        fatal: int | None = None
        for at in self._fatal_at:
            delta = deltas[at]
            if delta is not None:
                fatal = delta if fatal is None else fatal + delta
        if errors is None and fatal is None:
            self._went_unavailable()
            return None
        if self._unavailable:
            self._available_again()
        start = self._start
        if start is None:
            self._open(now)
            return None
        if errors:
            self._errors += errors
            self.error_total += errors
        if fatal:
            self._fatal_hits += fatal
        if now < self._window_end:
            return None
        return self._close(now - start, now)

    def _close(self, elapsed: float, now: float) -> float:
        closed = self._errors
        value = closed / elapsed if self.health.counting is Counting.RATE else float(closed)
        self.last_errors, self.last_value, self.last_fatal = closed, value, self._fatal_hits
        self.histogram[_bucket(self.health.buckets, value)] += 1
        self.histogram_sum += value
        if self.kind is HealthKind.FEC_CORRECTED:
            bits = self._counted_at == _BITS_AT
            speed = self.speed_mbps
            self.ber_estimate = closed / (speed * _BITS_PER_MBPS * elapsed) if bits and speed else None
        self._open(now)
        return value
