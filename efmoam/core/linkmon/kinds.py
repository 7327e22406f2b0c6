"""The four monitors of Clause 57.5.3 and the facts that tell them apart: the one table.

Each row says, for one monitor: its configuration key (also its metric label and JSON
key), the title operators see, its Link Event TLV type on the wire (IEEE 802.3 Table
57-12) and its RFC 4878 event-log type (two numberings, never converted by number), the
counters it reads, its window as configured (unit, default, limits), the range of
windows a peer's TLV can plausibly carry (in the TLV's own unit), and the width of every
TLV field.  The widths come from the scapy layers through the codec, read on first use,
so that this table can be imported without the codec (``efmoam config check``).

Configuration loading, the views and their rendering, replay's plausibility checks and
the saturation of the TLVs we send all read this table; none restates it.

The NIC health monitors (beyond Clause 57: FEC, pause storms, link flaps, InfiniBand's fatal
counters) are the sibling table `HEALTH`, read the same way.  They have no TLV type and no
RFC 4878 type: their events are local, logged as efmoam's ``nicHealthEvent`` with the
monitor's key, and the peer learns of a failure only through the local-sf-action's
Critical Event / Dying Gasp flags.  Each row says which counters are measured against the
thresholds (summed, or the first one the source provides), which counters are fatal (any
increase in a window fails the monitor while ``fatal`` is on), whether the thresholds are a
count per window or a rate per second, and the fixed bucket bounds of its histogram of
closed windows (in the thresholds' unit).
"""

from __future__ import annotations

import enum
import functools
from typing import TYPE_CHECKING

import attrs

from efmoam.core.linkmon.counters import COUNTERS
from pdu.enums import EventLogType, EventTlvType

if TYPE_CHECKING:
    from pdu.model import LinkEventTlv


class MonitorKind(enum.Enum):
    """The four monitors, named as in the reference's configuration."""

    ERRORED_SYMBOL_PERIOD = "errored-symbol-period"
    ERRORED_FRAME = "errored-frame"
    ERRORED_FRAME_PERIOD = "errored-frame-period"
    ERRORED_FRAME_SECONDS = "errored-frame-seconds-summary"


class WindowUnit(enum.Enum):
    """How a window is configured."""

    SECONDS = "seconds"
    FRAMES = "frames"  #: received frames (the errored-frame-period monitor)


@attrs.frozen
class MonitorFacts:
    """What distinguishes one monitor from the others."""

    kind: MonitorKind
    key: str  #: configuration key, metric label, JSON key
    title: str  #: as shown by ``show port``
    wire_type: EventTlvType
    log_type: EventLogType
    counters: tuple[str, ...]  #: the counters it needs (names of `CounterSample` fields)
    window_unit: WindowUnit
    #: the window when none is configured (None: one second of minimum-size frames at the link speed)
    default_window: float | None
    window_limits: tuple[float, float]  #: lowest and highest configurable window
    wire_window_unit: str  #: what the TLV's window counts
    #: windows a TLV can plausibly carry, in `wire_window_unit` (None: no upper bound)
    plausible_wire_window: tuple[int, int | None]

    def link_event_tlv(
        self, timestamp: int, window: int, threshold: int, errors: int, error_running_total: int,
        event_running_total: int,
    ) -> LinkEventTlv:  # fmt: skip
        """This monitor's link event TLV, its values made to fit their fields: window,
        threshold and errors saturate, running totals wrap as counters do."""
        make, (window_top, threshold_top, errors_top, error_total_top, event_total_top) = _tlv_class_and_tops(
            self.wire_type
        )
        return make(
            self.wire_type, timestamp, min(window, window_top - 1), min(threshold, threshold_top - 1),
            min(errors, errors_top - 1), error_running_total % error_total_top, event_running_total % event_total_top,
        )  # fmt: skip


#: a link event TLV's fitted fields, in `MonitorFacts.link_event_tlv`'s order
_FITTED = ("window", "threshold", "errors", "error_running_total", "event_running_total")


@functools.cache
def _tlv_class_and_tops(wire_type: EventTlvType) -> tuple[type[LinkEventTlv], tuple[int, ...]]:
    """The TLV's class and one past the largest value of each of its `_FITTED` fields
    (a signal failure's hot path: made once, not a dict of widths per event)."""
    from pdu.codec import EVENT_TLV_FIELD_BITS  # noqa: PLC0415 - the codec and the model: only when a TLV is made
    from pdu.model import LinkEventTlv  # noqa: PLC0415

    bits = EVENT_TLV_FIELD_BITS[wire_type]
    return LinkEventTlv, tuple(1 << bits[name] for name in _FITTED)


MONITORS: tuple[MonitorFacts, ...] = (
    MonitorFacts(
        kind=MonitorKind.ERRORED_SYMBOL_PERIOD,
        key="errored_symbol_period",
        title="Errored Symbol Period",
        wire_type=EventTlvType.ERRORED_SYMBOL_PERIOD,
        log_type=EventLogType.ERRORED_SYMBOL_EVENT,
        counters=("symbol_errors",),
        window_unit=WindowUnit.SECONDS,
        default_window=1.0,
        window_limits=(1.0, 60.0),
        wire_window_unit="symbols",
        # a window covers at least one second (57.5.3.1): fewer symbols are far less at any rate
        plausible_wire_window=(10_000, None),
    ),
    MonitorFacts(
        kind=MonitorKind.ERRORED_FRAME,
        key="errored_frame",
        title="Errored Frame",
        wire_type=EventTlvType.ERRORED_FRAME,
        log_type=EventLogType.ERRORED_FRAME_EVENT,
        counters=("errored_frames",),
        window_unit=WindowUnit.SECONDS,
        default_window=1.0,
        window_limits=(1.0, 60.0),
        wire_window_unit="100 ms",
        plausible_wire_window=(1, 600),  # 100 ms (some vendors) .. 60 s
    ),
    MonitorFacts(
        kind=MonitorKind.ERRORED_FRAME_PERIOD,
        key="errored_frame_period",
        title="Errored Frame Period",
        wire_type=EventTlvType.ERRORED_FRAME_PERIOD,
        log_type=EventLogType.ERRORED_FRAME_PERIOD_EVENT,
        counters=("errored_frames", "frames_received"),
        window_unit=WindowUnit.FRAMES,
        default_window=None,
        window_limits=(1.0, float(0xFFFFFFFF)),
        wire_window_unit="frames",
        # at least 100 ms of minimum-size frames: 1,488 at 10 Mb/s; fewer is below that at any rate
        plausible_wire_window=(100, None),
    ),
    MonitorFacts(
        kind=MonitorKind.ERRORED_FRAME_SECONDS,
        key="errored_frame_seconds",
        title="Errored Frame Seconds Summary",
        wire_type=EventTlvType.ERRORED_FRAME_SECONDS_SUMMARY,
        log_type=EventLogType.ERRORED_FRAME_SECONDS_EVENT,
        counters=("errored_frames",),
        window_unit=WindowUnit.SECONDS,
        default_window=60.0,
        window_limits=(10.0, 900.0),
        wire_window_unit="100 ms",
        plausible_wire_window=(100, 9000),  # 10 s .. 900 s
    ),
)

FACTS: dict[MonitorKind, MonitorFacts] = {facts.kind: facts for facts in MONITORS}
BY_WIRE_TYPE: dict[int, MonitorFacts] = {int(facts.wire_type): facts for facts in MONITORS}
assert list(FACTS) == list(MonitorKind), "one row per monitor, in MonitorKind order"


class HealthKind(enum.Enum):
    """The NIC health monitors (not Clause 57's), named as in the configuration with hyphens."""

    FEC_UNCORRECTABLE = "fec-uncorrectable"
    FEC_CORRECTED = "fec-corrected"
    PAUSE_STORM = "pause-storm"
    LINK_FLAPS = "link-flaps"
    IB_FATAL = "ib-fatal"


class Counting(enum.Enum):
    """What a health monitor's thresholds compare."""

    COUNT = "per window"  #: the counters' increase in one window (whole numbers)
    RATE = "per second"  #: the increase divided by the window's seconds


@attrs.frozen
class HealthFacts:
    """What distinguishes one NIC health monitor from the others."""

    kind: HealthKind
    key: str  #: configuration key, metric label, JSON key, event name
    title: str  #: as shown by ``show port``
    #: measured against sd/sf: summed, or (`first_present`) the first one the source provides
    measured: tuple[str, ...]
    first_present: bool
    #: any increase of these in a window fails the monitor while fatal is on
    fatal_counters: tuple[str, ...]
    counting: Counting
    fatal: bool  #: fatal by default
    default_window: float  #: seconds
    window_limits: tuple[float, float]
    default_sf: float  #: in `threshold_unit`
    threshold_unit: str
    #: upper bounds of the histogram of closed windows (errors per window, or per second for a rate)
    buckets: tuple[float, ...]

    @property
    def counters(self) -> tuple[str, ...]:
        """Every counter the monitor may read, in `COUNTERS` order of appearance here."""
        return tuple(dict.fromkeys(self.measured + self.fatal_counters))

    @property
    def log_type(self) -> EventLogType:
        return EventLogType.NIC_HEALTH_EVENT


_IB_FATAL = (
    "ib_link_downed",
    "ib_excessive_buffer_overrun_errors",
    "ib_link_error_recovery",
    "ib_local_link_integrity_errors",
)
_SMALL_COUNTS = (0.0, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0, 100.0, 1000.0)
_DECADES = (0.0, 1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9)

HEALTH: tuple[HealthFacts, ...] = (
    HealthFacts(
        kind=HealthKind.FEC_UNCORRECTABLE,
        key="fec_uncorrectable",
        title="FEC Uncorrectable",
        measured=("fec_uncorrectable_blocks",),
        first_present=False,
        fatal_counters=("fec_uncorrectable_blocks",),
        counting=Counting.COUNT,
        fatal=True,  # a codeword FEC could not correct is a frame lost: the cliff has been reached
        default_window=10.0,
        window_limits=(1.0, 3600.0),
        default_sf=1.0,
        threshold_unit="codewords per window",
        buckets=_SMALL_COUNTS,
    ),
    HealthFacts(
        kind=HealthKind.FEC_CORRECTED,
        key="fec_corrected",
        title="FEC Corrected",
        measured=("fec_corrected_bits", "fec_corrected_blocks"),
        first_present=True,  # bits when the driver counts them, else codewords
        fatal_counters=(),
        counting=Counting.RATE,
        fatal=False,  # constant on PAM4 links: only its rate means something
        default_window=60.0,
        window_limits=(1.0, 3600.0),
        default_sf=1e6,
        threshold_unit="corrected bits (or codewords) per second",
        buckets=_DECADES,
    ),
    HealthFacts(
        kind=HealthKind.PAUSE_STORM,
        key="pause_storm",
        title="Pause Storm",
        measured=("pause_frames_received", "pause_frames_sent"),
        first_present=False,
        fatal_counters=("pause_storm_events",),
        counting=Counting.RATE,
        fatal=True,  # the NIC stopped honouring pause: lossless traffic is being dropped
        default_window=10.0,
        window_limits=(1.0, 3600.0),
        default_sf=10_000.0,
        threshold_unit="pause frames per second",
        buckets=_DECADES,
    ),
    HealthFacts(
        kind=HealthKind.LINK_FLAPS,
        key="link_flaps",
        title="Link Flaps",
        measured=("carrier_down_count",),
        first_present=False,
        fatal_counters=("carrier_down_count",),
        counting=Counting.COUNT,
        fatal=False,
        default_window=60.0,
        window_limits=(1.0, 86400.0),
        default_sf=3.0,  # NVSentinel: more than two carrier changes an interval
        threshold_unit="carrier-downs per window",
        buckets=_SMALL_COUNTS,
    ),
    HealthFacts(
        kind=HealthKind.IB_FATAL,
        key="ib_fatal",
        title="InfiniBand Fatal",
        measured=_IB_FATAL,
        first_present=False,
        fatal_counters=_IB_FATAL,
        counting=Counting.COUNT,
        fatal=True,  # each breaks the lossless contract (NVSentinel's fatal set)
        default_window=10.0,
        window_limits=(1.0, 3600.0),
        default_sf=1.0,
        threshold_unit="errors per window",
        buckets=_SMALL_COUNTS,
    ),
)

HEALTH_FACTS: dict[HealthKind, HealthFacts] = {facts.kind: facts for facts in HEALTH}
HEALTH_BY_KEY: dict[str, HealthFacts] = {facts.key: facts for facts in HEALTH}
assert list(HEALTH_FACTS) == list(HealthKind), "one row per health monitor, in HealthKind order"
assert all(facts.key == facts.kind.value.replace("-", "_") for facts in HEALTH), "keys are the kinds' names"
assert not {facts.key for facts in HEALTH} & {facts.key for facts in MONITORS}, "health keys are not standard keys"
assert all(list(f.buckets) == sorted(set(f.buckets)) for f in HEALTH), "bucket bounds ascend"
assert all(f.fatal <= bool(f.fatal_counters) for f in HEALTH), "fatal by default only with fatal counters"
assert all(f.window_limits[0] <= f.default_window <= f.window_limits[1] and f.default_sf > 0 for f in HEALTH), (
    "defaults within limits"
)
assert {name for f in MONITORS for name in f.counters} <= set(COUNTERS), "counters are sample fields"
assert {name for f in HEALTH for name in f.counters} <= set(COUNTERS), "counters are sample fields"
