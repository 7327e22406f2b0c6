"""The event loop: one selector, the ports' deadline heap, signals, and the guard.

Each wake-up runs, under the daemon's lock (a metrics scrape never sees one half done),
the jobs of what is ready, then what is due.  Jobs watched as `bulk` (the ports' sockets)
run for about `SLICE` seconds, `BULK_PER_WAKEUP` at most, to a wake-up: the others stay
readable, so the selector (level-triggered) reports them again at once, after what is due
and the control socket had their turn; a thousand ports' frames at once (a peer's Dying
Gasps) are then a few short wake-ups, not one long stall.  The counter poll and the
ports' timers take a `SLICE` each too, so a wake-up with all three busy lasts about three
slices (with 64 Dying Gasps a wake-up, a slower machine spent 33 ms on frames alone).
Every job runs under the `Guard`: an exception is counted by where it happened (metric
``efmoam_daemon_errors_total``), logged with its traceback (a burst of 5, then one a
minute per where) and the loop carries on.  Nothing that happens after start ends the
process.  A wake-up over `WakeupTimes.LONG` is counted, and logged (a line a minute at
most) with where its time went, by where (the jobs' names: ``frames``, ``counters``,
``port timers``, ``control``).
"""

from __future__ import annotations

import contextlib
import heapq
import math
import selectors
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol

from efmoam.daemon.journal import Journal

Job = Callable[[float], object]  #: work for the loop, given the time
BULK_PER_WAKEUP = 64  #: bulk jobs (sockets of ports) run in one wake-up at most
#: seconds of one wake-up that each kind of bulk work may take (the ports' frames here, the
#: counter poll, the ports' timers); what is left goes on in the next wake-up
SLICE = 0.015


class Scheduled(Protocol):
    name: str
    deadline: float | None  #: the deadline last pushed (None: none)

    def next_deadline(self) -> float | None: ...


class Guard:
    """Runs the loop's jobs; see the module's comment."""

    def __init__(self, journal: Journal, clock: Callable[[], float] = time.monotonic) -> None:
        self.journal = journal
        self.clock = clock
        self.errors: dict[str, int] = {}  #: exceptions caught, by where they happened
        #: seconds spent this wake-up, by where (`Loop.run` reports a long wake-up's)
        self.spent: dict[str, float] = {}
        self._running = 0  #: jobs under way (nested)

    def run(self, where: str, job: Callable[..., object], *args: Any) -> None:
        outermost = not self._running  # a job run inside another's: its time is already counted
        self._running += 1
        start = self.clock()
        try:
            job(*args)
        except Exception as exc:  # the point: nothing after start ends the daemon
            self.caught(where, exc)
        finally:
            self._running -= 1
        if outermost:
            self.spent[where] = self.spent.get(where, 0.0) + self.clock() - start

    def caught(self, where: str, exc: BaseException, **fields: Any) -> None:
        self.errors[where] = self.errors.get(where, 0) + 1
        trace = "".join(traceback.format_exception(exc))  # its lines after the message's (`Journal.log`)
        self.journal.limited(
            time.monotonic(), "daemon", f"internal:{where}", f"internal error in {where}; carrying on\n{trace}",
            level="error", error=repr(exc), **fields,
        )  # fmt: skip


#: a port's deadline may be served this share of the shortest transmit interval late,
#: `TIMER_SLACK_MAX` seconds at most (`timer_slack`)
TIMER_SLACK_SHARE = 0.01
TIMER_SLACK_MAX = 0.01


def timer_slack(transmit_intervals: Iterable[float]) -> float:
    """How late the ports' deadlines may be served so that deadlines close together share
    a wake-up: 1 % of the shortest transmit interval, 10 ms at most (the default 1 s).

    A thousand ports' keep-alives are otherwise a thousand wake-ups a second, each paying
    the loop's own round (the select, every service's check) for one frame.  Late by 1 %
    is well inside the timers' tolerance (the keep-alive of 57.3.2.2 at least once per
    ``pdu_timer``, the lost-link timer of 57.3.1.6, both 1 s and 5 s give or take 10 %), and
    a port's next keep-alive is due a transmit interval after its last one left, so ports
    served together stay together: at most one wake-up per slack for all the timers."""
    shortest = min(transmit_intervals, default=0.0)  # (of the rules: one that fits no port counts too)
    return min(TIMER_SLACK_MAX, shortest * TIMER_SLACK_SHARE)


class Deadlines:
    """When each port must next be looked at: a heap whose stale entries are skipped.

    The loop wakes `slack` seconds after the earliest deadline still to come, at once for
    one already come (`wake_at`: one left by a wake-up's slice, or made due meanwhile),
    and serves every deadline come by then (`pop_due`); any earlier wake-up (a frame)
    serves those come by its time."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, str]] = []  #: (deadline, name): names are unique, ties need no counter
        self.slack = 0.0  #: `timer_slack` of the configuration

    def schedule(self, item: Scheduled) -> None:
        deadline = item.next_deadline()
        if deadline != item.deadline:
            item.deadline = deadline
            if deadline is not None:
                heapq.heappush(self._heap, (deadline, item.name))

    def earliest(self, items: Mapping[str, Scheduled]) -> tuple[float, Scheduled] | None:
        heap = self._heap
        while heap:
            deadline, name = heap[0]
            item = items.get(name)
            if item is not None and item.deadline == deadline:
                return deadline, item
            heapq.heappop(heap)
        return None

    def wake_at(self, items: Mapping[str, Scheduled], now: float) -> float | None:
        """When the loop must wake for the deadlines (None: none)."""
        earliest = self.earliest(items)
        if earliest is None:
            return None
        deadline = earliest[0]
        return deadline if deadline <= now else deadline + self.slack

    def pop_due(self, items: Mapping[str, Scheduled], now: float) -> Iterator[Scheduled]:
        """The items whose deadline has come, each once (its `deadline` reset); what a job
        schedules at or before `now` meanwhile comes out in the same loop."""
        heap, pop = self._heap, heapq.heappop
        while heap and heap[0][0] <= now:
            deadline, name = pop(heap)
            item = items.get(name)
            if item is not None and item.deadline == deadline:  # else a stale entry
                item.deadline = None
                yield item


class WakeupTimes:
    """How long the loop's wake-ups take (from the select's return to the end of what was
    due): their number, their total, and the longest of the last one to two minutes (the
    metrics: a stall is what holds `show`, frames and SIGTERM)."""

    WINDOW = 60.0  #: seconds; the longest is kept for this window and the one before
    LONG = 0.05  #: seconds: a wake-up longer than this is counted as long (`long`)

    def __init__(self) -> None:
        self.count = 0
        self.long = 0  #: wake-ups that took over `LONG`
        self.busy = 0.0  #: seconds, all wake-ups together
        self._window_end = -math.inf
        self._longest = 0.0  #: in the current window
        self._previous = 0.0  #: in the window before

    def add(self, start: float, end: float) -> None:
        took = end - start
        self.count += 1
        self.busy += took
        if took > self.LONG:
            self.long += 1
        if end >= self._window_end:
            self._previous = self._longest if end < self._window_end + self.WINDOW else 0.0
            self._longest, self._window_end = 0.0, end + self.WINDOW
        self._longest = max(self._longest, took)

    def longest(self, now: float) -> float:
        """The longest wake-up that ended in the last `WINDOW` seconds at least."""
        if now >= self._window_end + self.WINDOW:
            return 0.0
        if now >= self._window_end:
            return self._longest
        return max(self._longest, self._previous)

    def view(self, now: float) -> dict[str, float]:
        return {
            "wakeups": self.count, "long_wakeups": self.long, "busy_seconds": round(self.busy, 6),
            "longest_wakeup_seconds": self.longest(now),
        }  # fmt: skip


class Loop:
    """The selector and the guard; `run` serves until `stopped()`."""

    def __init__(self, journal: Journal, clock: Callable[[], float]) -> None:
        self.selector = selectors.DefaultSelector()
        self.guard = Guard(journal, clock)
        self.clock = clock
        self.times = WakeupTimes()

    def watch(self, fileobj: Any, where: str, job: Job, *, bulk: bool = False, write: bool = False) -> None:
        """Run `job` when `fileobj` is readable (and, with `write`, writable too)."""
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if write else 0)
        self.selector.register(fileobj, events, (where, job, bulk))

    def want_write(self, fileobj: Any, write: bool) -> None:
        """Whether a watched `fileobj`'s job also runs when it is writable (output waits)."""
        key = self.selector.get_key(fileobj)
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if write else 0)
        if key.events != events:
            self.selector.modify(fileobj, events, key.data)

    def forget(self, fileobj: Any) -> None:
        """Stop watching `fileobj` (nothing if it was not watched)."""
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(fileobj)

    def run(
        self, due: Job, wakeup: Callable[[float], float | None], stopped: Callable[[], bool], lock: threading.Lock
    ) -> None:
        clock, guard, times = self.clock, self.guard, self.times
        while not stopped():
            now = clock()
            deadline = wakeup(now)
            ready = self.selector.select(None if deadline is None else max(0.0, deadline - now))
            woke = was = clock()
            with lock:
                spent = guard.spent
                spent.clear()
                bulk_left = BULK_PER_WAKEUP
                for key, _ in ready:
                    data = key.data  # (where, job, bulk) of `watch`, or the job of the control server's sockets
                    if type(data) is tuple:
                        where, job, bulk = data
                    else:
                        where, job, bulk = "control", data, False
                    if bulk:
                        if not bulk_left or spent.get(where, 0.0) >= SLICE:  # their own time, not others'
                            continue  # still readable: the next wake-up, at once
                        bulk_left -= 1
                    try:  # `Guard.run`, written out: once per frame
                        job(was)
                    except Exception as exc:
                        guard.caught(where, exc)
                    now = clock()
                    spent[where] = spent.get(where, 0.0) + now - was
                    was = now
                due(was)
                end = clock()
                times.add(woke, end)
                if end - woke > times.LONG:
                    self._report_long(woke, end, spent)

    def _report_long(self, woke: float, end: float, spent: dict[str, float]) -> None:
        """A stall: how long, and where the time went (at most a line a minute)."""
        most = sorted(spent.items(), key=lambda item: -item[1])[:4]
        where = " ".join(f"{name}:{seconds * 1e3:.1f}" for name, seconds in most)
        self.guard.journal.limited(
            end, "daemon", "long wakeup", "long wake-up", level="info", burst=1, ms=round((end - woke) * 1e3, 1),
            spent_ms=where,
        )  # fmt: skip


@contextlib.contextmanager
def signals(handler: Callable[[int, object], None], switch_interval: float) -> Iterator[socket.socket]:
    """SIGTERM, SIGINT and SIGHUP to `handler`, each also a byte on the socket yielded
    (for the selector: a signal wakes the loop); the GIL switch interval set meanwhile."""
    wake_r, wake_w = socket.socketpair()
    wake_r.setblocking(False)
    wake_w.setblocking(False)
    old_wakeup = signal.set_wakeup_fd(wake_w.fileno())
    old_switch = sys.getswitchinterval()
    sys.setswitchinterval(switch_interval)
    handlers = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    try:
        yield wake_r
    finally:
        signal.set_wakeup_fd(old_wakeup)
        sys.setswitchinterval(old_switch)
        for sig, old in handlers.items():
            signal.signal(sig, old)
        wake_r.close()
        wake_w.close()


def drain(sock: socket.socket) -> None:
    """Read and forget whatever waits on `sock` (the signals' wake-up socket)."""
    with contextlib.suppress(BlockingIOError):
        while sock.recv(4096):
            pass
