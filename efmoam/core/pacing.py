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
        """The earliest time at or after `now` when an OAMPDU (or an Information) may go out.

        The send times are sorted, so "k frames in the period before t" is a look at the
        k-th newest: each rule costs O(1).
        """
        sent = self._sent
        n = len(sent)
        if not n or (information and n < self._spaced_from):
            return now  # the window has room and no spacing applies (the common case)
        period = self._period
        free = now
        if n >= self._limit:  # the window is full until its oldest frame ages out
            free = max(free, sent[-self._limit] + period)
        if not information:
            others, cap = self._others_sent, self._others
            if len(others) >= cap:
                free = max(free, others[-cap] + period)
        spaced = self._spaced_from
        if (self._space_information or not information) and (
            spaced == 0 or (n >= spaced and sent[-spaced] > free - period)
        ):
            free = max(free, sent[-1] + self._spacing)
        return free

    def available(self, now: float, information: bool = True) -> bool:
        return self.next_free(now, information) <= now

    def spend(self, now: float, information: bool = True) -> None:
        """A frame went out at `now`."""
        horizon = now - self._period
        sent = self._sent
        sent.append(now)
        while sent[0] <= horizon:
            sent.popleft()
        others = self._others_sent
        if not information:
            others.append(now)
        while others and others[0] <= horizon:
            others.popleft()
