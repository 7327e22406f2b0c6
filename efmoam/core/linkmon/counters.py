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


def _delta(value: int | None, previous: int | None) -> int | None:
    if value is None:
        return None
    if previous is None:
        return 0  # a counter seen for the first time: its baseline
    return value - previous if value >= previous else value  # gone backwards: reset


class CounterDeltas:
    """What happened between consecutive samples, counter by counter."""

    def __init__(self) -> None:
        self._last: tuple[int | None, int | None, int | None] = (None, None, None)

    def update(self, sample: CounterSample) -> tuple[int | None, int | None, int | None]:
        """Deltas since the previous sample, in `COUNTERS` order (0 for a counter seen first)."""
        errored, frames, symbols = sample.errored_frames, sample.frames_received, sample.symbol_errors
        last_errored, last_frames, last_symbols = self._last
        self._last = (errored, frames, symbols)
        return _delta(errored, last_errored), _delta(frames, last_frames), _delta(symbols, last_symbols)
