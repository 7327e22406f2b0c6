"""The four monitors of Clause 57.5.3 and the facts that tell them apart: the one table.

Each row says, for one monitor: its configuration key (also its metric label and JSON
key), the title operators see, its Link Event TLV type on the wire (IEEE 802.3 Table
57-12) and its RFC 4878 event-log type (two numberings, never converted by number), the
counters it reads, its window as configured (unit, default, limits), the range of
windows a peer's TLV can plausibly carry (in the TLV's own unit), and the width of every
TLV field.  The widths come from the scapy layers through the compiled codec, read on
first use, so that this table can be imported without scapy (``efmoam config check``).

Configuration loading, the views and their rendering, replay's plausibility checks and
the saturation of the TLVs we send all read this table; none restates it.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Mapping

import attrs

from pdu.enums import EventLogType, EventTlvType


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

    @property
    def field_bits(self) -> Mapping[str, int]:
        """The width in bits of each field of this monitor's TLV (from the scapy layers)."""
        return _field_bits(self.wire_type)

    def saturate(self, values: Mapping[str, int]) -> dict[str, int]:
        """TLV values made to fit their fields: window, threshold and errors saturate,
        running totals wrap as counters do."""
        bits = self.field_bits
        fitted = {}
        for name, value in values.items():
            top = 1 << bits[name]
            fitted[name] = value % top if name.endswith("running_total") else min(value, top - 1)
        return fitted


@functools.cache
def _field_bits(wire_type: EventTlvType) -> Mapping[str, int]:
    from pdu.codec import EVENT_TLV_FIELD_BITS  # noqa: PLC0415 - imports scapy: only when a TLV is made

    return EVENT_TLV_FIELD_BITS[wire_type]


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
