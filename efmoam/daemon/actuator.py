"""Port actions carried out off the loop: in batches, on one worker thread.

A port action runs commands (nft, ip, the exec command) that take milliseconds to
seconds; a thousand ports taken out of service at once must not hold the loop that
answers `show`, receives OAMPDUs and honours SIGTERM.  Design:

* `submit` queues a job (the steps of one port, `efmoam.linux.actions.Step`) under a
  key, normally the port's name.  The latest job per key wins and moves to the end, so
  jobs run in the order of their last decision.  A check (verifying that an applied
  action holds) is dropped while its key has a job queued or in flight: that job's
  outcome is read back anyway.
* `service`, at the end of every wake-up, hands everything queued to the worker as one
  batch, unless a batch is in flight or its results are still being delivered: never
  two batches at once, so a port's steps reach the system in the order decided.  An
  idle actuator (no batch finished in the last `GATHER_IDLE` seconds) hands over at
  once: a lone action is not delayed.  Right after a batch, while jobs keep coming (the
  last less than `GATHER_QUIET` ago), the next batch waits for them, at most
  `GATHER_MAX` after the first: a peer's thousand Dying Gasps arrive over a few
  wake-ups, and nft's time per table grows with the tables already there, so one big
  batch is cheaper than several (measured: 1.06 s for 1,024 at once; 1.5 s as 10, 430
  and 584).
* The worker groups a batch's steps by backend: every ``block`` step with the same
  runner goes to `BlockBackend.carry_out` together (one nft transaction, one
  read-back), every remote loopback step to `LoopbackPlane.carry_out` likewise, the other
  backends' steps run one after the other.  Then it writes a byte
  on a socket the loop watches.
* The loop delivers each job's results to its ``on_done`` under the guard, at most
  `DELIVER_PER_WAKEUP` jobs per wake-up (a thousand log lines at once would be a stall
  of their own).  A key is `pending` from `submit` until its job's ``on_done`` ran.
* `close` at shutdown drops the queued jobs and waits at most `CLOSE_WAIT` seconds for
  the batch in flight (`CLOSE_WAIT_LONGER` more for one the daemon says so of: a loopback
  change), then abandons it (a daemon thread): what is on the system is read back at the
  next start.
"""

from __future__ import annotations

import contextlib
import math
import queue
import socket
import threading
from collections import deque
from collections.abc import Callable, Hashable, Sequence

import attrs

from efmoam.daemon.loop import Loop, drain
from efmoam.linux.actions import (
    ActionError,
    BlockBackend,
    LoopbackPlane,
    LoopbackStep,
    PortActionBackend,
    Step,
    carry_out,
)

DELIVER_PER_WAKEUP = 32  #: jobs whose results the loop delivers in one wake-up
GATHER_QUIET = 0.02  #: seconds without a new job after which the queued ones leave as a batch
GATHER_MAX = 0.5  #: seconds the first queued job waits at most for others to join its batch
GATHER_IDLE = 1.0  #: seconds after a batch finished from which the actuator is idle (no gathering)
CLOSE_WAIT = 0.1  #: seconds `close` waits for the batch in flight (then abandons it: read back at the next start)
CLOSE_WAIT_LONGER = 1.0  #: seconds more for a batch that changes what must not outlive the daemon (loopback)

#: a job's results, one per step (whether the port is out of service now, or the step's error), and the time
OnDone = Callable[[list[bool | ActionError], float], None]


@attrs.define(eq=False)
class Job:
    """What to do to one port: its steps, each with its backend, and whom to tell."""

    steps: tuple[tuple[PortActionBackend, Step] | tuple[LoopbackPlane, LoopbackStep], ...]
    on_done: OnDone | None = None
    check: bool = False  #: only reads back (dropped while the key has another job)


Batch = list[tuple[Hashable, Job]]


class Actuator:
    """Carries out port actions for the loop; see the module's comment."""

    def __init__(self, loop: Loop) -> None:
        self._loop = loop
        self._queued: dict[Hashable, Job] = {}  #: for the next batch, in the order of the last submit
        self._flight: dict[Hashable, Job] = {}  #: the batch in flight or being delivered
        self._finished: deque[tuple[Hashable, Job, list[bool | ActionError]]] = deque()
        self._inbox: queue.SimpleQueue[Batch | None] = queue.SimpleQueue()
        self._outbox: queue.SimpleQueue[tuple[list[list[bool | ActionError]], list[BaseException]]] = (
            queue.SimpleQueue()
        )
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        loop.watch(self._wake_r, "actions", self._collect)
        self._thread: threading.Thread | None = None  #: started with the first batch
        self.batches = 0  #: batches handed to the worker
        self._gathering: tuple[float, float] | None = None  #: (first, last) submit since the last batch
        self._finished_at = -math.inf  #: when the worker last finished a batch
        self.jobs = 0  #: jobs carried out

    def submit(self, key: Hashable, job: Job) -> bool:
        """Queue `job` for the next batch (replacing the key's queued one); False when a
        check was dropped because the key has a job queued or in flight."""
        if job.check and self.pending(key):
            return False
        self._queued.pop(key, None)
        self._queued[key] = job
        now = self._loop.clock()
        self._gathering = (now, now) if self._gathering is None else (self._gathering[0], now)
        return True

    def pending(self, key: Hashable) -> bool:
        """Whether the key has a job queued, in flight, or not yet delivered."""
        return key in self._queued or key in self._flight

    def orphan(self, key: Hashable) -> None:
        """The key's owner is gone: its jobs still run, nobody is told."""
        for jobs in (self._queued, self._flight):
            job = jobs.get(key)
            if job is not None:
                job.on_done = None

    def next_deadline(self) -> float | None:
        """0 while results wait to be delivered (the loop must come back at once); when a
        gathering batch must leave; else None."""
        if self._finished:
            return 0.0
        return None if self._flight or not self._queued else self._leaves_at()

    def _leaves_at(self) -> float:
        first, last = self._gathering or (-GATHER_MAX, -GATHER_MAX)
        if first >= self._finished_at + GATHER_IDLE:  # came to an idle actuator: at once
            return first
        return min(last + GATHER_QUIET, first + GATHER_MAX)

    def service(self, now: float) -> None:
        """Deliver finished jobs (a chunk); start the next batch when the last is done."""
        guard = self._loop.guard
        for _ in range(min(DELIVER_PER_WAKEUP, len(self._finished))):
            key, job, results = self._finished.popleft()
            self._flight.pop(key, None)
            if job.on_done is not None:
                guard.run("actions", job.on_done, results, now)
        if not self._flight and self._queued and now >= self._leaves_at():
            batch, self._queued = list(self._queued.items()), {}
            self._gathering = None
            self._flight = dict(batch)
            self.batches += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="efmoam-actions", daemon=True)
                self._thread.start()
            self._inbox.put(batch)

    def pending_keys(self) -> set[Hashable]:
        """The keys with a job queued or in flight."""
        return {*self._queued, *self._flight}

    def close(self, longer_for: Callable[[Job], bool] = lambda _job: False) -> bool:
        """Drop the queued jobs, wait `CLOSE_WAIT` seconds at most for the batch in flight,
        `CLOSE_WAIT_LONGER` when it holds a job `longer_for` says must not be abandoned
        lightly.  True when the batch was abandoned (still running)."""
        self._queued.clear()
        self._gathering = None
        abandoned = False
        if self._thread is not None:
            self._inbox.put(None)
            self._thread.join(CLOSE_WAIT)
            if self._thread.is_alive() and any(longer_for(job) for job in self._flight.values()):
                self._thread.join(CLOSE_WAIT_LONGER)
            abandoned = self._thread.is_alive()
        self._loop.forget(self._wake_r)
        self._wake_r.close()
        self._wake_w.close()
        return abandoned

    # -- the loop's side ---------------------------------------------------------------

    def _collect(self, now: float) -> None:
        """The worker finished a batch: its results wait for delivery."""
        drain(self._wake_r)
        while True:
            try:
                results, failures = self._outbox.get_nowait()
            except queue.Empty:
                break
            for exc in failures:  # a bug, not a failed action: counted and logged with its traceback
                self._loop.guard.caught("actions", exc)
            jobs = list(self._flight.items())
            self._finished.extend((key, job, result) for (key, job), result in zip(jobs, results, strict=True))
            self.jobs += len(jobs)
            self._finished_at = now
        self.service(now)

    # -- the worker's side -------------------------------------------------------------

    def _work(self) -> None:
        while (batch := self._inbox.get()) is not None:
            self._outbox.put(run_batch([job for _, job in batch]))
            with contextlib.suppress(OSError):  # closed: the daemon stops, nobody waits
                self._wake_w.send(b"\0")


def run_batch(jobs: Sequence[Job]) -> tuple[list[list[bool | ActionError]], list[BaseException]]:
    """Carry out the jobs' steps, batched per backend (module comment): the results per
    job and step, and the exceptions that are bugs (their steps fail with them)."""
    results: list[list[bool | ActionError]] = [[False] * len(job.steps) for job in jobs]
    groups: dict[Hashable, tuple[PortActionBackend | LoopbackPlane, list[tuple[int, int]]]] = {}
    for j, job in enumerate(jobs):
        for s, (backend, _) in enumerate(job.steps):
            key = (backend.name, backend.runner) if isinstance(backend, (BlockBackend, LoopbackPlane)) else id(backend)
            groups.setdefault(key, (backend, []))[1].append((j, s))
    failures: list[BaseException] = []
    for backend, places in groups.values():
        steps = [jobs[j].steps[s][1] for j, s in places]
        try:
            outcome = carry_out(backend, steps)
        except Exception as exc:  # a bug must not end the worker: each step fails with it
            failures.append(exc)
            outcome = [ActionError(f"internal error: {exc!r}")] * len(steps)
        for (j, s), result in zip(places, outcome, strict=True):
            results[j][s] = result
    return results, failures
