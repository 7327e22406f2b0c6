"""Counter samples and their deltas.

A sample holds cumulative counters read at one time.  A counter that goes backwards was
reset (driver reload, device reset, 32-bit wrap): its new value is the delta since the
reset, never a huge or negative difference.  A counter the source does not provide is
None, and the monitors that need it stay unavailable instead of guessing.
"""

from __future__ import annotations

import attrs

#: the counters link monitoring reads, as named in `CounterSample`
COUNTERS = ("errored_frames", "frames_received", "symbol_errors")


@attrs.frozen
class CounterSample:
    """Cumulative NIC counters at one time (None: not provided by the source).

    `errored_frames` counts frames in error at the physical layer: FCS/CRC, alignment,
    runts/fragments and jabbers, not oversize jumbo frames above 9212 octets.
    """

    errored_frames: int | None = None
    frames_received: int | None = None
    symbol_errors: int | None = None


class CounterDeltas:
    """What happened between consecutive samples, counter by counter."""

    def __init__(self) -> None:
        self._last: dict[str, int] = {}

    def update(self, sample: CounterSample) -> dict[str, int | None]:
        """Deltas since the previous sample (0 for a counter seen for the first time)."""
        deltas: dict[str, int | None] = {}
        for name in COUNTERS:
            value = getattr(sample, name)
            if value is None:
                self._last.pop(name, None)
                deltas[name] = None
                continue
            previous = self._last.get(name)
            self._last[name] = value
            if previous is None:
                deltas[name] = 0
            else:
                deltas[name] = value - previous if value >= previous else value
        return deltas
