"""The actuator: port actions in batches on a worker thread, driven by the daemon's real
loop (`LoopHarness`).  The backend here is a test backend that records what it is asked
(and can hold a batch, or fail); the real ``block`` backend in batches is tested on real
veths in tests/linux/test_actions_batch.py and through the daemon in test_mass_actions.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from efmoam.daemon import actuator as actuator_module
from efmoam.daemon.actuator import Actuator, Job
from efmoam.linux.actions import ActionError, Step
from tests.daemon.children import LoopHarness

Results = list[bool | ActionError]


class Recorder:
    """A backend: ports it took out of service are out; `gate` holds every call until set."""

    name = "exec"

    def __init__(self) -> None:
        self.out: set[str] = set()
        self.calls: list[tuple[str, str, str]] = []  #: (what, port, thread name)
        self.gate = threading.Event()
        self.gate.set()
        self.running = 0
        self.overlapped = False  #: two calls ran at once (two batches in flight)
        self.fail: set[str] = set()  #: ports whose steps raise ActionError
        self.bug: set[str] = set()  #: ports whose steps raise a bug (RuntimeError)

    def _call(self, what: str, ifname: str) -> None:
        self.running += 1
        self.overlapped |= self.running > 1
        try:
            self.gate.wait(5)
            self.calls.append((what, ifname, threading.current_thread().name))
            if ifname in self.bug:
                raise RuntimeError(f"bug on {ifname}")
            if ifname in self.fail:
                raise ActionError(f"cannot act on {ifname}")
        finally:
            self.running -= 1

    def take_out_of_service(self, ifname: str, reasons: tuple[str, ...]) -> None:
        self._call("take", ifname)
        self.out.add(ifname)

    def return_to_service(self, ifname: str) -> None:
        self._call("return", ifname)
        self.out.discard(ifname)

    def is_out_of_service(self, ifname: str) -> bool:
        self._call("check", ifname)
        return ifname in self.out


class Harness(LoopHarness):
    def __init__(self) -> None:
        super().__init__()
        self.actuator = Actuator(self.loop)
        self.backend = Recorder()
        self.done: dict[str, list[Results]] = {}
        self.done_threads: set[str] = set()

    def due(self, now: float) -> None:
        super().due(now)
        self.actuator.service(now)

    def deadlines(self) -> list[float | None]:
        return [*super().deadlines(), self.actuator.next_deadline()]

    def job(self, port: str, out: bool | None, check: bool = False) -> Job:
        def on_done(results: Results, _now: float) -> None:
            self.done.setdefault(port, []).append(results)
            self.done_threads.add(threading.current_thread().name)

        return Job(((self.backend, Step(port, out, ("link-fault",))),), on_done, check=check)

    def submit(self, port: str, out: bool | None, check: bool = False) -> bool:
        return self.actuator.submit(port, self.job(port, out, check))

    def close(self) -> None:
        self.backend.gate.set()
        self.actuator.close()
        super().close()


@pytest.fixture
def harness() -> Iterator[Harness]:
    built = Harness()
    yield built
    built.close()


def test_steps_run_on_the_worker_and_results_come_back_on_the_loop(harness: Harness) -> None:
    harness.submit("p0", True)
    assert harness.actuator.pending("p0")
    harness.run_until(lambda: "p0" in harness.done)
    assert harness.done["p0"] == [[True]] and harness.backend.out == {"p0"}
    assert harness.backend.calls == [("take", "p0", "efmoam-actions")]
    assert harness.done_threads == {threading.current_thread().name}  # the loop's thread
    assert not harness.actuator.pending("p0")


def test_the_latest_decision_wins_and_waits_for_the_batch_in_flight(harness: Harness) -> None:
    backend = harness.backend
    backend.gate.clear()  # hold the first batch
    harness.submit("p0", True)
    harness.run_until(lambda: backend.running == 1)
    assert harness.actuator.batches == 1
    harness.submit("p0", False)  # arrives during the batch: next batch
    harness.submit("p1", True)
    harness.submit("p0", True)  # the latest decision for p0
    harness.run_for(0.1)
    assert harness.actuator.batches == 1  # never two batches in flight
    assert harness.actuator.pending("p0") and harness.actuator.pending("p1")
    backend.gate.set()
    harness.run_until(lambda: len(harness.done.get("p0", [])) == 2 and "p1" in harness.done)
    assert harness.actuator.batches == 2 and not backend.overlapped
    # one step for p0 (its latest decision), after p1: the order of the last decisions
    assert [call[:2] for call in backend.calls] == [("take", "p0"), ("take", "p1"), ("take", "p0")]
    assert backend.out == {"p0", "p1"}


def test_a_check_waits_for_no_one_and_is_dropped_while_an_action_is_pending(harness: Harness) -> None:
    backend = harness.backend
    backend.gate.clear()
    harness.submit("p0", True)
    harness.run_until(lambda: backend.running == 1)
    assert harness.submit("p0", None, check=True) is False  # the action in flight is read back anyway
    assert harness.submit("p1", None, check=True) is True
    harness.submit("p1", True)  # an action replaces a queued check
    backend.gate.set()
    harness.run_until(lambda: "p0" in harness.done and "p1" in harness.done)
    assert [call[:2] for call in backend.calls] == [("take", "p0"), ("take", "p1")]
    assert harness.submit("p0", None, check=True)
    harness.run_until(lambda: len(harness.done["p0"]) == 2)
    assert harness.done["p0"][1] == [True]  # the check's result: p0 is out of service


def test_one_port_failing_does_not_stop_the_others(harness: Harness) -> None:
    harness.backend.fail.add("p1")
    for port in ("p0", "p1", "p2"):
        harness.submit(port, True)
    harness.run_until(lambda: len(harness.done) == 3)
    assert harness.actuator.batches == 1
    assert harness.done["p0"] == [[True]] and harness.done["p2"] == [[True]]
    (error,) = harness.done["p1"][0]
    assert isinstance(error, ActionError) and "cannot act on p1" in str(error)


def test_a_bug_in_a_backend_is_counted_and_the_worker_carries_on(harness: Harness) -> None:
    harness.backend.bug.add("p1")
    harness.submit("p1", True)
    harness.run_until(lambda: "p1" in harness.done)
    (error,) = harness.done["p1"][0]
    assert isinstance(error, ActionError) and "internal error" in str(error)
    assert harness.loop.guard.errors == {"actions": 1}
    assert harness.lines("internal error in actions")
    harness.submit("p2", True)  # the worker is still there
    harness.run_until(lambda: "p2" in harness.done)
    assert harness.done["p2"] == [[True]]


def test_results_are_delivered_a_chunk_per_wakeup(harness: Harness) -> None:
    ports = [f"p{i}" for i in range(actuator_module.DELIVER_PER_WAKEUP * 2 + 5)]
    for port in ports:
        harness.submit(port, True)
    harness.actuator.service(time.monotonic() + actuator_module.GATHER_QUIET)  # the batch starts
    harness.backend.gate.set()
    deadline = time.monotonic() + 5
    while harness.actuator.next_deadline() is None and time.monotonic() < deadline:
        if harness.loop.selector.select(0.05):
            harness.actuator._collect(time.monotonic())  # what the loop runs when the worker is done
    assert len(harness.done) == actuator_module.DELIVER_PER_WAKEUP  # one chunk at the collect
    assert harness.actuator.next_deadline() == 0.0  # come back at once for the rest
    assert harness.actuator.pending(ports[-1])
    harness.actuator.service(time.monotonic())
    harness.actuator.service(time.monotonic())
    assert len(harness.done) == len(ports) and harness.actuator.next_deadline() is None


def test_orphaned_jobs_run_and_tell_no_one(harness: Harness) -> None:
    harness.submit("p0", True)
    harness.actuator.orphan("p0")
    harness.run_until(lambda: not harness.actuator.pending("p0"))
    assert harness.backend.out == {"p0"} and "p0" not in harness.done


def test_close_abandons_a_stuck_batch_quickly(harness: Harness) -> None:
    harness.backend.gate.clear()
    harness.submit("p0", True)
    harness.run_until(lambda: harness.backend.running == 1)
    harness.submit("p1", True)
    started = time.monotonic()
    harness.actuator.close()
    assert time.monotonic() - started < actuator_module.CLOSE_WAIT + 0.5
    assert not harness.actuator.pending("p1")  # queued jobs are dropped
    harness.actuator.service(time.monotonic())
    harness.backend.gate.set()
    time.sleep(0.1)
    assert "p1" not in {call[1] for call in harness.backend.calls}


def test_a_batch_gathers_the_jobs_that_keep_coming_for_a_bounded_time(harness: Harness) -> None:
    """An idle actuator hands a job over at once.  Right after a batch, jobs submitted close
    together leave as one batch once they stop coming, or at the latest `GATHER_MAX` after
    the first (a peer's Dying Gasps arrive over several wake-ups)."""
    clock = [100.0]
    harness.loop.clock = lambda: clock[0]
    quiet, most = actuator_module.GATHER_QUIET, actuator_module.GATHER_MAX
    harness.submit("p0", True)
    assert harness.actuator.next_deadline() == 100.0  # idle: at once
    harness.actuator.service(100.0)
    assert harness.actuator.batches == 1
    harness.run_until(lambda: "p0" in harness.done)  # finished at 100.0 (the loop's clock)
    clock[0] = 100.1
    harness.submit("p1", True)  # right after a batch: gathering
    assert harness.actuator.next_deadline() == 100.1 + quiet
    harness.actuator.service(100.1 + quiet / 2)
    assert harness.actuator.batches == 1  # still gathering
    clock[0] = 100.1 + quiet / 2
    harness.submit("p2", True)  # another came: wait on
    harness.actuator.service(100.1 + quiet)
    assert harness.actuator.batches == 1
    assert harness.actuator.next_deadline() == clock[0] + quiet
    harness.actuator.service(clock[0] + quiet)  # quiet long enough: one batch of both
    assert harness.actuator.batches == 2 and harness.actuator.next_deadline() is None
    harness.run_until(lambda: len(harness.done) == 3)
    # a steady trickle leaves at the latest GATHER_MAX after its first job
    start = clock[0] = 100.5
    while clock[0] < start + most * 2:
        harness.submit(f"q{round((clock[0] - start) * 1000)}", True)
        harness.actuator.service(clock[0])
        if harness.actuator.batches == 3:
            break
        clock[0] += quiet / 2
    assert harness.actuator.batches == 3 and start + most <= clock[0] < start + most + quiet
    # idle again a second after the last batch finished: at once
    harness.run_until(lambda: harness.actuator.next_deadline() is None and not harness.actuator.pending("q0"))
    clock[0] += actuator_module.GATHER_IDLE + 1.0
    harness.submit("r0", True)
    harness.actuator.service(clock[0])
    assert harness.actuator.batches == 4
