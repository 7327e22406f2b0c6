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


@attrs.frozen
class ClosedWindow:
    """A window that ended: its errors, and its size as it goes on the wire."""

    errors: int
    wire_window: int


class Monitor:
    """One monitor's window, totals and state."""

    def __init__(self, kind: MonitorKind, settings: MonitorSettings) -> None:
        self.kind = kind
        self.info = KINDS[kind]
        self.settings = settings
        self.state = MonitorState.OK
        self.error_total = 0  #: errors (errored seconds for the summary) since reset
        self.event_total = 0  #: events raised since reset
        self.last_errors: int | None = None  #: errors of the last closed window
        self.unavailable_reported = False
        self.restart()

    def restart(self) -> None:
        """Forget the current window; the next sample opens a new one."""
        self._start: float | None = None
        self._errors = 0
        self._frames = 0
        self._last_check = 0.0
        self._last_errored_second = -1

    def window_seconds(self) -> float:
        default = WINDOW_LIMITS[self.kind][0]
        return self.settings.window if self.settings.window is not None else (default or 1.0)

    def wire_window(self, speed_mbps: int | None, symbol_rate: int | None) -> int:
        """The window as the link event TLV carries it."""
        if self.kind is MonitorKind.ERRORED_SYMBOL_PERIOD:
            return round(self.window_seconds() * (symbol_rate or symbols_per_second(speed_mbps)))
        if self.kind is MonitorKind.ERRORED_FRAME_PERIOD:
            return int(self.settings.window or min_frames_per_second(speed_mbps))
        return round(self.window_seconds() * 10)  # 100 ms units

    def observe(
        self, deltas: dict[str, int | None], now: float, speed_mbps: int | None, symbol_rate: int | None
    ) -> ClosedWindow | None:
        """Add one sample's deltas; return the window this sample closes, if any."""
        if any(deltas[name] is None for name in self.info.counters):
            self.state = MonitorState.UNAVAILABLE
            self.restart()
            return None
        if self.state is MonitorState.UNAVAILABLE:
            self.state = MonitorState.OK
            self.unavailable_reported = False
        if self._start is None:
            self._start = self._last_check = now
            return None
        errors = deltas[self.info.counters[0]] or 0
        if self.kind is MonitorKind.ERRORED_FRAME_SECONDS:
            second = int(now - self._start - 1e-9)  # the second of the window this sample ends
            if errors and second > self._last_errored_second:
                self._last_errored_second = second
                self._errors += 1
                self.error_total += 1
        else:
            self._errors += errors
            self.error_total += errors
        if not self._window_done(deltas, now, speed_mbps):
            return None
        closed = ClosedWindow(self._errors, self.wire_window(speed_mbps, symbol_rate))
        self.restart()
        self._start = self._last_check = now
        self.last_errors = closed.errors
        return closed

    def _window_done(self, deltas: dict[str, int | None], now: float, speed_mbps: int | None) -> bool:
        assert self._start is not None
        if self.kind is not MonitorKind.ERRORED_FRAME_PERIOD:
            return now >= self._start + self.window_seconds() - 1e-9
        self._frames += deltas["frames_received"] or 0
        if now < self._last_check + PERIOD_CHECK_INTERVAL - 1e-9:
            return False
        self._last_check = now
        return self._frames >= self.wire_window(speed_mbps, None)
