"""The transmit budget of Clause 57.3.2.2: at most 10 OAMPDUs in any one second."""

from __future__ import annotations

from collections import deque

PDU_LIMIT = 10  #: pdu_cnt reset value
PDU_PERIOD = 1.0  #: seconds (pdu_timer)


class TxBudget:
    """When the next OAMPDU may go out.

    Two rules: frames are at least period/limit apart (0.1 s: the budget is spent
    evenly, so a burst of changes cannot leave a gap in the keep-alives longer than the
    transmit interval), and a sliding window holds at most `limit` frames in any period
    wherever it starts.
    """

    def __init__(self, limit: int = PDU_LIMIT, period: float = PDU_PERIOD) -> None:
        self._sent: deque[float] = deque(maxlen=limit)
        self._limit = limit
        self._period = period
        self._spacing = period / limit
        self._free = float("-inf")  # the earliest time the next frame may go out

    def next_free(self, now: float) -> float:
        """The earliest time at or after `now` when a frame may go out."""
        return self._free if self._free > now else now

    def available(self, now: float) -> bool:
        return self._free <= now

    def spend(self, now: float) -> None:
        self._sent.append(now)
        free = now + self._spacing
        if len(self._sent) == self._limit:
            free = max(free, self._sent[0] + self._period)
        self._free = free
