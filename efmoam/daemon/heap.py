"""Keeping the ports' long-lived objects out of the garbage collector's full passes.

Now and then CPython's cyclic garbage collector examines every object the process holds
(a full, generation 2, collection), and no thread runs meanwhile.  With thousands of
ports that is hundreds of thousands of objects (engines, settings, sockets, the metrics
text) and takes 100 to 250 ms at 4,096 ports: the loop sends nothing, an Event
Notification is late, a scrape stalls.  These objects live as long as their port, so
once the set of ports has settled the daemon collects once and moves everything that
survives out of the collector's sight (`gc.freeze`).  The next time the set changes it
settles again: the collector then sees the old objects once more, and frees what a
removed port left in reference cycles.

That one collection is itself a stall (60 ms at 1,024 ports): at start it is made
before the loop serves anything (with the ports just made), so only a later change of
the set of ports costs a wake-up that long.
"""

from __future__ import annotations

import gc

#: seconds without a port added or removed before the heap is settled (a burst of
#: link notifications, or the start, settles once)
SETTLE_AFTER = 1.0


def settle() -> int:
    """Collect everything, then freeze what survives; the number of objects frozen."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def release() -> None:
    """Give the frozen objects back to the collector (the daemon stops)."""
    gc.unfreeze()
