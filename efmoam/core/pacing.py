"""The transmit budget of Clause 57.3.2.2: at most 10 OAMPDUs in any one second."""

from __future__ import annotations

import math
from collections import deque

PDU_LIMIT = 10  #: pdu_cnt reset value
PDU_PERIOD = 1.0  #: seconds (pdu_timer)


class TxBudget:
    """When the next OAMPDU may go out.

    A sliding window holds at most `limit` frames in any `period`, wherever it starts.
    The keep-alives of the transmit interval have a reserve in it (at most half):
    Information OAMPDUs may use the whole window, other OAMPDUs (counted apart) only what
    the reserve leaves.  Other OAMPDUs go out at once while the window has more room than
    the keep-alives need, and period/limit (0.1 s) apart after that.  Information is
    spaced the same way only when its keep-alives need more than half the budget (an
    interval under 0.2 s), where a burst of changes would otherwise push a keep-alive
    past the peer's lost-link time.  At a 1 s interval a change or an Event Notification
    goes out immediately.
    """

    def __init__(self, limit: int = PDU_LIMIT, period: float = PDU_PERIOD) -> None:
        self._sent: deque[float] = deque()  # send times within the last period, oldest first
        self._others_sent: deque[float] = deque()  # the same for OAMPDUs other than Information
        self._limit = limit
        self._period = period
        self._spacing = period / limit
        self._others = limit - 1  # the share of the window OAMPDUs other than Information may use
        self._spaced_from = limit - 1  # frames in the window from which frames are spaced
        self._space_information = False

    def reserve_for(self, transmit_interval: float) -> None:
        """Keep room for the keep-alives of this transmit interval."""
        need = math.ceil(self._period / transmit_interval - 1e-9)  # keep-alives in one period
        self._spaced_from = max(0, self._limit - need)
        self._others = self._limit - min(need, self._limit // 2)
        # keep-alives needing more than half the budget cannot afford bursts of Information
        self._space_information = need > self._limit // 2

    def next_free(self, now: float, information: bool = True) -> float:
        """The earliest time at or after `now` when an OAMPDU (or an Information) may go out."""
        n = len(self._sent)  # at least the frames that count at `now`: a safe shortcut
        if not n or (
            n < self._limit
            and (n < self._spaced_from or (information and not self._space_information))
            and (information or len(self._others_sent) < self._others)
        ):
            return now
        free = _aged_out(self._sent, self._limit, now, self._period)
        if not information:
            free = max(free, _aged_out(self._others_sent, self._others, now, self._period))
        if (self._space_information or not information) and sum(
            1 for t in self._sent if t > free - self._period
        ) >= self._spaced_from:
            free = max(free, self._sent[-1] + self._spacing)
        return free

    def available(self, now: float, information: bool = True) -> bool:
        return self.next_free(now, information) <= now

    def spend(self, now: float, information: bool = True) -> None:
        """A frame went out at `now`."""
        horizon = now - self._period
        for sent in (self._sent, self._others_sent) if not information else (self._sent,):
            sent.append(now)
        for sent in (self._sent, self._others_sent):
            while sent and sent[0] <= horizon:
                sent.popleft()


def _aged_out(sent: deque[float], cap: int, now: float, period: float) -> float:
    """When fewer than `cap` of the `sent` times fall in the period before it (at or after `now`)."""
    counted = [t for t in sent if t > now - period]
    return now if len(counted) < cap else max(now, counted[-cap] + period)
