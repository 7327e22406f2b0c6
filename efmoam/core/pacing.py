"""The transmit budget of Clause 57.3.2.2: at most 10 OAMPDUs in any one second."""

from __future__ import annotations

from collections import deque

PDU_LIMIT = 10  #: pdu_cnt reset value
PDU_PERIOD = 1.0  #: seconds (pdu_timer)


class TxBudget:
    """A sliding window: a frame may go out when fewer than `limit` went in the last period.

    Sliding rather than reset every second, so that no window of one second, wherever
    it starts, holds more than `limit` frames.
    """

    def __init__(self, limit: int = PDU_LIMIT, period: float = PDU_PERIOD) -> None:
        self._sent: deque[float] = deque(maxlen=limit)
        self._limit = limit
        self._period = period

    def next_free(self, now: float) -> float:
        """The earliest time at or after `now` when a frame may go out."""
        if len(self._sent) < self._limit:
            return now
        free = self._sent[0] + self._period
        return free if free > now else now

    def available(self, now: float) -> bool:
        return len(self._sent) < self._limit or self._sent[0] + self._period <= now

    def spend(self, now: float) -> None:
        self._sent.append(now)
