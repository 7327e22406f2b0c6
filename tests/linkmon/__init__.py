"""Link monitoring tests, and the helpers they share.

The tests drive a `PortPair` on its fake clock and feed port "a" (or "b") scripted
*cumulative* counter samples, one per second unless a test is about uneven samples, the
way the daemon feeds `OamPort.on_counters`.  What the ports did is read back from the
pair's record: `EventLogged`, `PortServiceChanged`, `MonitorUnavailable` outputs and the
frames they sent, decoded.

`MonitorCase` describes how to fill one window of each of the four monitors with a given
number of errors, so one test can be run over all four.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import attrs

import pdu
from efmoam.core import DiscoveryState, PortSettings, Transmit
from efmoam.core.linkmon import (
    CounterSample,
    EventLogEntry,
    LinkMonitoringSettings,
    LocalSfAction,
    MonitorKind,
    MonitorSettings,
    PeerActions,
)
from efmoam.core.outputs import EventLogged, MonitorUnavailable, PortServiceChanged
from pdu import Code, EventLogType, EventNotification, EventTlvType, Flag, LinkEventTlv, Oampdu
from tests.core.pair import PortPair

S = DiscoveryState
T = TypeVar("T")

A_MAC = "02:00:00:00:00:0a"
B_MAC = "02:00:00:00:00:0b"
ALL_ONES = 2**64 - 1
IEEE_OUI = 0x0180C2
STABLE = Flag.LOCAL_STABLE | Flag.REMOTE_STABLE  #: 0x50, the flags of a port in SEND_ANY

GIGABIT = 1000
FRAMES_PER_SECOND_1G = 1_488_095  #: minimum-size frames in one second at 1 Gb/s
SYMBOLS_PER_SECOND_1G = 125_000_000


# -- settings ---------------------------------------------------------------------------


def monitor(**fields: Any) -> MonitorSettings:
    """An enabled monitor (defaults otherwise)."""
    return MonitorSettings(enabled=True, **fields)


def link_monitoring(**fields: Any) -> LinkMonitoringSettings:
    """Link monitoring enabled, with the given monitors and actions."""
    return LinkMonitoringSettings(enabled=True, **fields)


def port_settings(lm: LinkMonitoringSettings | None = None, **fields: Any) -> PortSettings:
    return PortSettings(link_monitoring=lm if lm is not None else LinkMonitoringSettings(), **fields)


#: a peer that supports link monitoring (advertises Link Events) but monitors nothing
SUPPORTIVE = port_settings(link_monitoring())
#: a peer without link monitoring that does not advertise Link Events
UNSUPPORTIVE = port_settings(LinkMonitoringSettings(enabled=False), link_events=False)


# -- the pair ---------------------------------------------------------------------------


Pair = PortPair  # the shared harness (tests/core/pair.py)


class Feed:
    """The cumulative counters of one port, and the samples that report them.

    Each `sample` advances the clock (one second by default), adds the increments and
    calls ``on_counters`` with the new cumulative values; a counter named in `missing`
    is reported as None (not provided).  `mark` is the record position just before the
    latest sample's outputs (after the keep-alives due at the same instant).
    """

    def __init__(self, pair: PortPair, name: str = "a", frames_per_second: int = 1000) -> None:
        self.pair = pair
        self.name = name
        self.frames_per_second = frames_per_second
        self.errored_frames = 0
        self.frames_received = 0
        self.symbol_errors = 0
        self.mark = 0

    def sample(
        self,
        errors: int = 0,
        *,
        symbols: int = 0,
        frames: int | None = None,
        dt: float = 1.0,
        at: float | None = None,
        missing: tuple[str, ...] = (),
    ) -> None:
        when = self.pair.now + dt if at is None else at
        self.pair.run_until(when)
        self.errored_frames += errors
        self.symbol_errors += symbols
        self.frames_received += round(self.frames_per_second * dt) if frames is None else frames
        self.send(missing=missing)

    def send(self, *, missing: tuple[str, ...] = (), **values: int) -> None:
        """Report the counters now (`values` overrides a cumulative value, e.g. after a reset)."""
        for name, value in values.items():
            setattr(self, name, value)
        self.mark = len(self.pair.records)  # the record just before this sample's outputs
        counters = {
            name: None if name in missing else getattr(self, name)
            for name in ("errored_frames", "frames_received", "symbol_errors")
        }
        self.pair.call(self.name, "on_counters", CounterSample(**counters))

    def quiet(self, seconds: int) -> None:
        """`seconds` samples without errors."""
        for _ in range(seconds):
            self.sample()


def start(
    a: PortSettings,
    b: PortSettings | None = None,
    *,
    speed: int = GIGABIT,
    frames_per_second: int = 1000,
    expect: DiscoveryState = S.SEND_ANY,
    counters: dict[str, int] | None = None,
) -> tuple[Pair, Feed]:
    """A discovered pair at t=1.0, the link speed of "a" set, and a first (baseline) sample
    (of the cumulative `counters`, zero by default)."""
    pair = Pair(a, b if b is not None else SUPPORTIVE)
    pair.run_until(0.5)
    assert pair.a.state is expect and pair.b.state is expect, (pair.a.state, pair.b.state)
    pair.call("a", "set_link", True, speed_mbps=speed)
    feed = Feed(pair, "a", frames_per_second)
    for name, value in (counters or {}).items():
        setattr(feed, name, value)
    feed.sample(at=1.0, frames=0)
    return pair, feed


# -- reading the record -------------------------------------------------------------------


def outputs(pair: PortPair, name: str, kind: type[T], since: float = 0.0) -> list[T]:
    return [r.output for r in pair.outputs(name, kind) if r.time >= since]  # type: ignore[misc]


def logged(pair: PortPair, name: str = "a", since: float = 0.0) -> list[EventLogged]:
    return outputs(pair, name, EventLogged, since)


def raised(pair: PortPair, name: str = "a", since: float = 0.0) -> list[EventLogEntry]:
    """New events (an `EventLogged` whose entry is active), oldest first."""
    return [e.entry for e in logged(pair, name, since) if e.entry.active]


def cleared(pair: PortPair, name: str = "a", since: float = 0.0) -> list[EventLogEntry]:
    return [e.entry for e in logged(pair, name, since) if not e.entry.active]


def service_changes(pair: PortPair, name: str = "a", since: float = 0.0) -> list[PortServiceChanged]:
    return outputs(pair, name, PortServiceChanged, since)


def unavailable(pair: PortPair, name: str = "a") -> list[MonitorUnavailable]:
    return outputs(pair, name, MonitorUnavailable)


def mark(pair: PortPair) -> int:
    """A point in the record: outputs after it came after the call (same time or not)."""
    return len(pair.records)


def sent(pair: PortPair, name: str = "a", since: float = 0.0, after: int = 0) -> list[tuple[float, Oampdu]]:
    """Every frame `name` sent from `since` on (and after record `after`), decoded, with its time."""
    return [
        (r.time, pdu.decode(r.output.frame))
        for r in pair.records[after:]
        if r.port == name and isinstance(r.output, Transmit) and r.time >= since
    ]


def notification_frames(pair: PortPair, name: str = "a", since: float = 0.0) -> list[EventNotification]:
    """The Event Notification OAMPDUs (code 0x01) `name` sent, copies included."""
    frames = [r for r in pair.outputs(name, Transmit) if r.time >= since and r.output.code == Code.EVENT_NOTIFICATION]
    decoded = [pdu.decode(r.output.frame) for r in frames]
    assert all(isinstance(p, EventNotification) for p in decoded)
    return decoded  # type: ignore[return-value]


def notified_tlvs(pair: PortPair, name: str = "a", since: float = 0.0) -> list[LinkEventTlv]:
    """The link event TLVs of the unique notifications `name` sent (one per sequence number)."""
    seen: dict[int, EventNotification] = {}
    for p in notification_frames(pair, name, since):
        seen.setdefault(p.sequence, p)
    return [tlv for p in seen.values() for tlv in p.link_events]


def information_flags(pair: PortPair, name: str = "a", *, after: int = 0, before: int | None = None) -> list[Flag]:
    """The Flags field of every Information OAMPDU `name` sent between two record marks."""
    records = pair.records[after:before]
    return [
        pdu.decode(r.output.frame).flags
        for r in records
        if r.port == name and isinstance(r.output, Transmit) and r.output.code == Code.INFORMATION
    ]


def event_frame(sequence: int, *tlvs: LinkEventTlv, src: str = B_MAC) -> bytes:
    """An Event Notification OAMPDU from the peer, as bytes for `PortPair.inject`."""
    return pdu.encode(EventNotification(src=src, flags=STABLE, sequence=sequence, tlvs=tlvs))


def active_affecting(port: Any) -> bool:
    return any(e.port_affecting for e in port.link_monitoring.active_events())


# -- the four monitors ------------------------------------------------------------------


@attrs.frozen
class MonitorCase:
    """How a test fills one window of a monitor with `n` errors (errored seconds for the summary)."""

    kind: MonitorKind
    field: str  #: its LinkMonitoringSettings field
    wire_type: EventTlvType
    log_type: EventLogType
    window: float | None  #: the window the tests configure (None: the default)
    wire_window: int  #: the window as the TLV and the log carry it, at 1 Gb/s
    seconds: int  #: samples (seconds) per window
    fill: Callable[[Feed, int], None]
    frames_per_second: int = 1000

    def settings(self, **monitor_fields: Any) -> dict[str, MonitorSettings]:
        """The `link_monitoring` keyword argument that enables this monitor alone."""
        if self.window is not None:
            monitor_fields.setdefault("window", self.window)
        return {self.field: monitor(**monitor_fields)}

    def start(self, *, b: PortSettings | None = None, **lm_fields: Any) -> tuple[Pair, Feed]:
        return start(port_settings(link_monitoring(**lm_fields)), b, frames_per_second=self.frames_per_second)


def _fill_frame(feed: Feed, n: int) -> None:
    feed.sample(n)


def _fill_period(feed: Feed, n: int) -> None:
    # 600,000 frames a second: the 1,488,095-frame window is reached at the third check
    feed.sample(n)
    feed.sample()
    feed.sample()


def _fill_seconds(feed: Feed, n: int) -> None:
    assert n <= 10
    for second in range(10):
        feed.sample(3 if second < n else 0)  # several errors in an errored second count once


def _fill_symbols(feed: Feed, n: int) -> None:
    feed.sample(symbols=n)


ERRORED_FRAME = MonitorCase(
    MonitorKind.ERRORED_FRAME, "errored_frame", EventTlvType.ERRORED_FRAME, EventLogType.ERRORED_FRAME_EVENT,
    None, 10, 1, _fill_frame,
)  # fmt: skip
ERRORED_FRAME_PERIOD = MonitorCase(
    MonitorKind.ERRORED_FRAME_PERIOD, "errored_frame_period", EventTlvType.ERRORED_FRAME_PERIOD,
    EventLogType.ERRORED_FRAME_PERIOD_EVENT, None, FRAMES_PER_SECOND_1G, 3, _fill_period, 600_000,
)  # fmt: skip
ERRORED_FRAME_SECONDS = MonitorCase(
    MonitorKind.ERRORED_FRAME_SECONDS, "errored_frame_seconds", EventTlvType.ERRORED_FRAME_SECONDS_SUMMARY,
    EventLogType.ERRORED_FRAME_SECONDS_EVENT, 10.0, 100, 10, _fill_seconds,
)  # fmt: skip
ERRORED_SYMBOL_PERIOD = MonitorCase(
    MonitorKind.ERRORED_SYMBOL_PERIOD, "errored_symbol_period", EventTlvType.ERRORED_SYMBOL_PERIOD,
    EventLogType.ERRORED_SYMBOL_EVENT, None, SYMBOLS_PER_SECOND_1G, 1, _fill_symbols,
)  # fmt: skip

CASES = [ERRORED_FRAME, ERRORED_FRAME_PERIOD, ERRORED_FRAME_SECONDS, ERRORED_SYMBOL_PERIOD]
FRAME_CASES = [ERRORED_FRAME, ERRORED_FRAME_PERIOD, ERRORED_FRAME_SECONDS]
CASE_IDS = [c.kind.value for c in CASES]
FRAME_CASE_IDS = [c.kind.value for c in FRAME_CASES]

__all__ = [
    "A_MAC",
    "ALL_ONES",
    "B_MAC",
    "CASES",
    "CASE_IDS",
    "ERRORED_FRAME",
    "ERRORED_FRAME_PERIOD",
    "ERRORED_FRAME_SECONDS",
    "ERRORED_SYMBOL_PERIOD",
    "FRAMES_PER_SECOND_1G",
    "FRAME_CASES",
    "FRAME_CASE_IDS",
    "GIGABIT",
    "IEEE_OUI",
    "STABLE",
    "SUPPORTIVE",
    "SYMBOLS_PER_SECOND_1G",
    "UNSUPPORTIVE",
    "Feed",
    "LocalSfAction",
    "MonitorCase",
    "Pair",
    "PeerActions",
    "S",
    "active_affecting",
    "cleared",
    "event_frame",
    "information_flags",
    "link_monitoring",
    "logged",
    "mark",
    "monitor",
    "notification_frames",
    "notified_tlvs",
    "outputs",
    "port_settings",
    "raised",
    "sent",
    "service_changes",
    "start",
    "unavailable",
]
