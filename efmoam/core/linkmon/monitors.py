"""The four monitors: errors counted over windows that never overlap.

Windows are measured on the samples' clock: a window opens at a sample and closes at the
first sample at or after its end; the errors it reports are those of the samples it
spans.  Late or uneven samples stretch a window, they never split or overlap one.  The
errored-frame-period window closes, checked once per second, when it has seen the
configured number of received frames.
"""

from __future__ import annotations

import enum

import attrs

from efmoam.core.linkmon.counters import COUNTERS
from efmoam.core.linkmon.rates import min_frames_per_second, symbols_per_second
from efmoam.core.linkmon.settings import WINDOW_LIMITS, MonitorKind, MonitorSettings
from pdu import EventLogType, EventTlvType


class MonitorState(enum.Enum):
    OK = "ok"
    DEGRADED = "degraded"
    FAILED = "failed"
    UNAVAILABLE = "unavailable"  #: the counter source lacks a counter this monitor needs


@attrs.frozen
class MonitorKindInfo:
    """What distinguishes one monitor from another."""

    counters: tuple[str, ...]  #: the counters it needs
    wire_type: EventTlvType
    log_type: EventLogType


KINDS: dict[MonitorKind, MonitorKindInfo] = {
    MonitorKind.ERRORED_SYMBOL_PERIOD: MonitorKindInfo(
        ("symbol_errors",), EventTlvType.ERRORED_SYMBOL_PERIOD, EventLogType.ERRORED_SYMBOL_EVENT
    ),
    MonitorKind.ERRORED_FRAME: MonitorKindInfo(
        ("errored_frames",), EventTlvType.ERRORED_FRAME, EventLogType.ERRORED_FRAME_EVENT
    ),
    MonitorKind.ERRORED_FRAME_PERIOD: MonitorKindInfo(
        ("errored_frames", "frames_received"),
        EventTlvType.ERRORED_FRAME_PERIOD,
        EventLogType.ERRORED_FRAME_PERIOD_EVENT,
    ),
    MonitorKind.ERRORED_FRAME_SECONDS: MonitorKindInfo(
        ("errored_frames",), EventTlvType.ERRORED_FRAME_SECONDS_SUMMARY, EventLogType.ERRORED_FRAME_SECONDS_EVENT
    ),
}

#: the kind whose wire TLV type is this (IEEE numbering)
KIND_OF_WIRE_TYPE = {info.wire_type: kind for kind, info in KINDS.items()}

PERIOD_CHECK_INTERVAL = 1.0  #: the frame-period window is checked once per second
COUNTER_FRAMES = COUNTERS.index("frames_received")


class Monitor:
    """One monitor's window, totals and state.

    `configure` precomputes what every sample needs (window length, the window as the
    TLV carries it, which counters to read), so `observe` does arithmetic only.
    """

    def __init__(self, kind: MonitorKind, settings: MonitorSettings) -> None:
        self.kind = kind
        self.info = KINDS[kind]
        self.state = MonitorState.OK
        self.error_total = 0  #: errors (errored seconds for the summary) since reset
        self.event_total = 0  #: events raised since reset
        self.last_errors: int | None = None  #: errors of the last closed window
        self.unavailable_reported = False
        self._resume = MonitorState.OK  # the state to return to when the counter is back
        self._needs = tuple(COUNTERS.index(name) for name in self.info.counters)
        self._errors_at = self._needs[0]
        self._period = kind is MonitorKind.ERRORED_FRAME_PERIOD
        self._unavailable = False
        self.configure(settings, None, None)
        self.restart()

    def configure(self, settings: MonitorSettings, speed_mbps: int | None, symbol_rate: int | None) -> None:
        """Take new settings or a new link speed (in the current window)."""
        self.settings = settings
        default = WINDOW_LIMITS[self.kind][0]
        #: the window in seconds (the period monitor's is in frames, `wire_window`)
        self.window_seconds = settings.window if settings.window is not None else (default or 1.0)
        if self.kind is MonitorKind.ERRORED_SYMBOL_PERIOD:
            wire = round(self.window_seconds * (symbol_rate or symbols_per_second(speed_mbps)))
        elif self.kind is MonitorKind.ERRORED_FRAME_PERIOD:
            wire = int(settings.window or min_frames_per_second(speed_mbps))
        else:
            wire = round(self.window_seconds * 10)  # 100 ms units
        #: the window as the link event TLV carries it
        self.wire_window = wire
        #: the lowest threshold an event needs: below it a window is simply clean
        self.lowest_threshold = settings.sd or settings.sf_threshold
        self._span = self.window_seconds - 1e-9  # a sample this late after the start closes the window

    def restart(self) -> None:
        """Forget the current window; the next sample opens a new one."""
        self._start: float | None = None
        self._window_end = 0.0  # the first sample at or after this closes a time window
        self._errors = 0
        self._frames = 0
        self._last_check = 0.0
        self._last_errored_second = -1

    def reset_state(self) -> None:
        """Back to OK (events cleared), remembered for later if the counter is missing now."""
        if self._unavailable:
            self._resume = MonitorState.OK
        else:
            self.state = MonitorState.OK

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
            if self.kind is MonitorKind.ERRORED_FRAME_SECONDS:
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
