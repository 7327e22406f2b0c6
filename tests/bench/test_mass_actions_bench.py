"""Mass port actions (root, nftables): N ports taken out of service at once, and back.

They measure and never assert a time; they are skipped unless ``--benchmark-enable``:

    pytest tests/bench/test_mass_actions_bench.py --benchmark-enable -s

* ``test_block_backend``: N ports (N/2 veth pairs in one namespace).  Per port, one
  `BlockBackend.take_out_of_service` call after the other (the path every action took
  before batching: each one held the loop), against one `Actuator` batch driven by the
  daemon's real `Loop`: the wall time until every port is applied and verified, the
  commands run, and the longest the loop's thread went without running (it ticks every
  millisecond; the worker's Python competes for the GIL).  Then the same back in service.
* ``test_daemon``: two daemons over N veth pairs (`tests.daemon.mass.MassLab`); daemon B
  stops (a Dying Gasp on every port) and daemon A blocks every port: from B's SIGTERM to
  A's last "port out of service" line (A's own journal: logged once a port's table is
  written and read back; polling nft from here takes seconds itself at a thousand
  tables), nft transactions, and the longest a control-socket ``show_port`` took
  meanwhile (asked every 10 ms); then every table is checked to be there.  Then all
  back in service at once (A's lost-link timers end the Dying Gasp events), and at last
  SIGTERM to A while a batch of every port is in flight: the time until it exited, and
  how long its shutdown took as its "stopped" line says.
"""

from __future__ import annotations

import datetime
import os
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from efmoam.daemon.actuator import Actuator, Job
from efmoam.daemon.journal import Journal
from efmoam.daemon.loop import Loop
from efmoam.linux.actions import ActionError, BlockBackend, Step, stale_block_tables
from tests.daemon.lab import missing_requirements, wait_for
from tests.daemon.mass import MassLab, Poller
from tests.linux.test_actions_batch import Counting

pytestmark = [pytest.mark.bench, pytest.mark.root]

OUT_OF_SERVICE = r"WARNING port out of service port="  #: A's line once a port's action is applied


def journal_time(line: str) -> float:
    """The wall-clock time a journal line starts with (``2026-11-24T11:14:19.903Z``)."""
    stamp = datetime.datetime.strptime(line.split(maxsplit=1)[0], "%Y-%m-%dT%H:%M:%S.%fZ")
    return stamp.replace(tzinfo=datetime.UTC).timestamp()


@pytest.fixture
def enabled(benchmark: Any) -> None:
    if benchmark.disabled:
        pytest.skip("a benchmark: run with --benchmark-enable")
    reason = missing_requirements()
    if reason:
        pytest.skip(reason)


def report(capsys: pytest.CaptureFixture[str], title: str, lines: dict[str, Any]) -> None:
    with capsys.disabled():
        print(f"\n--- {title}")
        for key, value in lines.items():
            print(f"    {key}: {value}")


@pytest.fixture
def namespace_with(request: pytest.FixtureRequest) -> Iterator[tuple[str, list[str]]]:
    ports: int = request.param
    netns = f"efmoam-mb-{uuid.uuid4().hex[:8]}"
    subprocess.run(["ip", "netns", "add", netns], check=True)
    try:
        batch = [f"link add p{i} type veth peer name q{i}" for i in range(ports // 2)]
        batch += [f"link set {end}{i} up" for i in range(ports // 2) for end in "pq"]
        subprocess.run(["ip", "-n", netns, "-batch", "-"], input="\n".join(batch) + "\n", text=True, check=True)
        yield netns, [f"{end}{i}" for i in range(ports // 2) for end in "pq"]
    finally:
        subprocess.run(["ip", "netns", "del", netns], check=False, capture_output=True)


class Ticking:
    """The daemon's `Loop` with an `Actuator`, run on this thread, ticking every millisecond:
    the longest gap between two ticks is the longest the loop was held."""

    def __init__(self) -> None:
        self.loop = Loop(Journal(open(os.devnull, "w")), time.monotonic)  # noqa: SIM115
        self.actuator = Actuator(self.loop)
        self.longest = 0.0
        self._last = 0.0

    def run_until(self, done: Any, timeout: float = 120.0) -> None:
        give_up = time.monotonic() + timeout
        self._last = time.monotonic()

        def due(now: float) -> None:
            self.longest = max(self.longest, now - self._last)
            self._last = now
            self.actuator.service(now)

        def wakeup(now: float) -> float:
            deadline = self.actuator.next_deadline()
            return min(now + 0.001, give_up if deadline is None else deadline)

        self.loop.run(due, wakeup, lambda: bool(done()) or time.monotonic() > give_up, threading.Lock())
        assert done(), "timed out"


def in_one_batch(
    ticking: Ticking, backend: BlockBackend, names: list[str], out: bool
) -> dict[str, list[bool | ActionError]]:
    """Every port's step submitted in one wake-up; the results once all are delivered."""
    done: dict[str, list[bool | ActionError]] = {}

    def job(name: str) -> Job:
        return Job(
            ((backend, Step(name, out, ("dying-gasp",))),), lambda results, _now: done.__setitem__(name, results)
        )

    for name in names:
        ticking.actuator.submit(name, job(name))
    ticking.run_until(lambda: len(done) == len(names))
    return done


@pytest.mark.parametrize("namespace_with", [256, 1024], indirect=True)
def test_block_backend(
    benchmark: Any, enabled: None, namespace_with: tuple[str, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    netns, names = namespace_with
    runner = Counting(netns)
    backend = BlockBackend(runner)
    figures: dict[str, Any] = {"ports": len(names)}

    for out in (True, False):
        what = "out" if out else "back"
        started = time.monotonic()
        longest = 0.0
        for name in names:
            call = time.monotonic()
            if out:
                backend.take_out_of_service(name, ("dying-gasp",))
            else:
                backend.return_to_service(name)
            longest = max(longest, time.monotonic() - call)
        figures[f"per_port_{what}_s"] = round(time.monotonic() - started, 2)
        figures[f"per_port_{what}_longest_call_ms"] = round(longest * 1e3, 1)
        figures[f"per_port_{what}_commands"] = len(runner.taken())
        assert len(stale_block_tables(runner)) == (len(names) if out else 0)
        runner.taken()

    for out in (True, False):
        what = "out" if out else "back"
        ticking = Ticking()
        started = time.monotonic()
        done = in_one_batch(ticking, backend, names, out)
        figures[f"batch_{what}_s"] = round(time.monotonic() - started, 3)
        figures[f"batch_{what}_loop_longest_gap_ms"] = round(ticking.longest * 1e3, 1)
        figures[f"batch_{what}_commands"] = len(runner.taken())
        assert all(result == [out] for result in done.values())
        ticking.actuator.close()
    benchmark.extra_info.update(figures)
    report(capsys, f"block backend, {len(names)} ports", figures)


@pytest.mark.parametrize("pairs", [256, 1024])
def test_daemon(benchmark: Any, enabled: None, tmp_path: Path, pairs: int, capsys: pytest.CaptureFixture[str]) -> None:
    mass = MassLab(tmp_path, pairs)
    figures: dict[str, Any] = {"ports": pairs}
    last = f"a{pairs - 1}"
    try:
        started = time.monotonic()
        mass.start(timeout=300)
        figures["start_and_discovery_s"] = round(time.monotonic() - started, 1)
        before = len(mass.nft_calls())
        poller = Poller(mass.a, last)
        stopped = time.time()  # the journal's clock
        mass.shut_peer_down()  # a Dying Gasp on every port
        wait_for(
            lambda: len(mass.a.log_lines(OUT_OF_SERVICE)) >= pairs, 60, "every port out of service",
            interval=0.05, context=mass.logs,
        )  # fmt: skip
        figures["out_sigterm_to_all_applied_s"] = round(journal_time(mass.a.log_lines(OUT_OF_SERVICE)[-1]) - stopped, 2)
        figures["out_ports"] = mass.out_of_service()
        #: A's own measure of its longest wake-up in the last minute or two (start-up and discovery too)
        loop = mass.a.query("show_ports")["daemon"]["loop"]
        figures["out_loop_longest_wakeup_ms"] = round(loop["longest_wakeup_seconds"] * 1e3, 1)
        assert mass.blocked() == pairs
        poller.stop()
        calls = mass.nft_calls()[before:]
        figures["out_nft_transactions"] = sum(call == "-f -" for call in calls)
        figures["out_nft_commands"] = len(calls)
        figures["out_show_port_answers"] = len(poller.answers)
        figures["out_show_port_longest_ms"] = round(poller.longest * 1e3, 1)
        figures["out_show_port_errors"] = len(poller.errors)

        # the lost-link timers end the Dying Gasp events: all back in service at once
        poller = Poller(mass.a, last)
        wait_for(lambda: poller.answers and poller.answers[-1][2]["pending"], 120, "back in service on its way")
        pending_at = time.monotonic()
        wait_for(lambda: not poller.answers[-1][2]["applied"], 60, "back in service", interval=0.01)
        figures["back_pending_to_last_port_verified_s"] = round(time.monotonic() - pending_at, 2)
        poller.stop()
        figures["back_show_port_longest_ms"] = round(poller.longest * 1e3, 1)

        # SIGTERM while a batch of every port is in flight
        mass.b.proc.wait(60)  # type: ignore[union-attr]
        mass.b.start(timeout=300)
        wait_for(lambda: mass.operational() == pairs, 120, "sessions up again")
        mass.shut_peer_down()
        poller = Poller(mass.a, last, interval=0.005)
        wait_for(lambda: poller.answers and poller.answers[-1][2]["pending"], 60, "a batch in flight", interval=0.005)
        poller.stop()
        term = time.monotonic()
        mass.a.stop(timeout=60)
        figures["sigterm_during_batch_to_exit_s"] = round(time.monotonic() - term, 2)
        figures["shutdown_as_logged_s"] = float(mass.a.log_lines(r"NOTICE stopped")[-1].split("seconds=")[1].split()[0])
    finally:
        mass.close()
    benchmark.extra_info.update(figures)
    report(capsys, f"daemon, {pairs} ports blocked at once and back", figures)
