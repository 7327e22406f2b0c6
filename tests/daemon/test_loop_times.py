"""The loop's wake-up times (issue 18: `efmoam_daemon_loop_*`): counted, summed, and the
longest kept for one to two minutes, then forgotten."""

from __future__ import annotations

import io
import selectors
import socket
import threading
import time

from efmoam.daemon.journal import Journal
from efmoam.daemon.loop import BULK_PER_WAKEUP, SLICE, Loop, WakeupTimes


def test_the_longest_wakeup_is_kept_one_to_two_minutes() -> None:
    times = WakeupTimes()
    assert times.view(0.0) == {"wakeups": 0, "long_wakeups": 0, "busy_seconds": 0.0, "longest_wakeup_seconds": 0.0}
    times.add(10.0, 10.25)  # a stall of 250 ms
    times.add(11.0, 11.001)
    times.add(11.5, 11.54)  # 40 ms: not over `LONG`
    assert times.longest(12.0) == 0.25 and times.count == 3 and abs(times.busy - 0.291) < 1e-9
    assert times.long == 1 and times.view(12.0)["long_wakeups"] == 1
    times.add(80.0, 80.002)  # the next window: the stall is still reported
    assert times.longest(81.0) == 0.25
    times.add(150.0, 150.001)  # a window later: forgotten
    assert abs(times.longest(151.0) - 0.002) < 1e-9
    assert times.longest(400.0) == 0.0  # nothing for minutes


def test_the_loop_times_its_wakeups_and_runs_at_most_so_many_bulk_jobs_in_one() -> None:
    """Bulk jobs (the ports' sockets) beyond `BULK_PER_WAKEUP` wait for the next wake-up,
    which comes at once (still readable); a control job among them runs in the first.  (A
    clock that stands still: however slow the machine, the jobs take no slice.)"""
    loop = Loop(Journal(io.StringIO()), lambda: 100.0)
    pairs = [socket.socketpair() for _ in range(BULK_PER_WAKEUP + 6)]
    ran: list[tuple[int, str]] = []  # (wake-up, what)
    wakeups = [0]
    try:
        for index, (reader, writer) in enumerate(pairs):
            reader.setblocking(False)
            writer.send(b"x")

            def job(_now: float, reader: socket.socket = reader, index: int = index) -> None:
                reader.recv(16)
                ran.append((wakeups[0], f"port{index}"))

            loop.watch(reader, "frames", job, bulk=True)
        control_r, control_w = socket.socketpair()
        control_w.send(b"x")
        loop.selector.register(control_r, 1, lambda _now: (control_r.recv(16), ran.append((wakeups[0], "control"))))
        other_r, other_w = socket.socketpair()  # watched by name, not bulk (the SNMP agent's socket)
        other_w.send(b"x")
        loop.watch(other_r, "snmp", lambda _now: (other_r.recv(16), ran.append((wakeups[0], "snmp"))))

        def due(_now: float) -> None:
            wakeups[0] += 1

        loop.run(due, lambda now: now + 0.5, lambda: len(ran) == len(pairs) + 2, threading.Lock())
        first = [what for wake, what in ran if wake == 0]
        assert len([w for w in first if w.startswith("port")]) == BULK_PER_WAKEUP
        assert "control" in first and "snmp" in first
        assert len(ran) == len(pairs) + 2 and wakeups[0] == 2  # the rest in the very next wake-up
        assert loop.times.count == 2
        for end in (control_r, control_w, other_r, other_w):
            end.close()
    finally:
        for reader, writer in pairs:
            reader.close()
            writer.close()


class TimedPorts:
    """Ports' sockets with a frame waiting each, on a loop with a clock of its own: each
    port's job reads its frame and takes `cost` seconds of that clock; `ran` has the
    wake-up of each job.  With `hog`, a job of another kind (an SNMP request, say) is
    ready before them in every wake-up and takes more than a slice each time."""

    def __init__(self, count: int, cost: float, hog: bool = False) -> None:
        self.now = 100.0
        self.loop = Loop(Journal(io.StringIO()), lambda: self.now)
        self.sockets: list[socket.socket] = []
        self.ran: list[int] = []
        self.wakeups = 0
        if hog:
            hog_r, hog_w = socket.socketpair()
            hog_w.send(b"x")  # never read
            self.sockets += [hog_r, hog_w]
            self.loop.watch(hog_r, "snmp", self._take_more_than_a_slice)
        for _ in range(count):
            reader, writer = socket.socketpair()
            self.sockets += [reader, writer]
            reader.setblocking(False)
            writer.send(b"x")

            def job(_now: float, reader: socket.socket = reader) -> None:
                reader.recv(16)
                self.now += cost
                self.ran.append(self.wakeups)

            self.loop.watch(reader, "frames", job, bulk=True)
        self.count = count

    def _take_more_than_a_slice(self, _now: float) -> None:
        self.now += SLICE + 0.001

    def run(self, most: int = 100) -> None:
        """Serve until every port's job ran (or `most` wake-ups)."""

        def due(_now: float) -> None:
            self.wakeups += 1

        done = lambda: len(self.ran) == self.count or self.wakeups >= most  # noqa: E731
        self.loop.run(due, lambda at: at + 0.5, done, threading.Lock())

    def close(self) -> None:
        for end in self.sockets:
            end.close()


def test_bulk_jobs_run_for_about_a_slice_of_a_wakeup() -> None:
    """Bulk jobs that take long (a Dying Gasp each, on a slow machine) stop once they have
    taken `SLICE` of the wake-up, well before `BULK_PER_WAKEUP`; the rest come next."""
    ports = TimedPorts(10, cost=0.004)
    try:
        ports.run()
        per_wakeup = -(-SLICE // 0.004)  # jobs until a slice is spent: the one that crosses it included
        assert ports.ran.count(0) == per_wakeup < BULK_PER_WAKEUP
        assert ports.wakeups == -(-10 // per_wakeup), "the rest in the next wake-ups, each a slice"
    finally:
        ports.close()


def test_a_slow_job_of_another_kind_does_not_take_the_frames_slice() -> None:
    """Each kind's slice is its own: a slow job of another kind, ready first in every
    wake-up, leaves the ports' frames their slice."""
    ports = TimedPorts(3, cost=0.001, hog=True)
    try:
        ports.run(most=5)
        assert ports.ran == [0, 0, 0], "every port's frames in the first wake-up"
    finally:
        ports.close()


def test_a_long_wakeup_is_counted_and_logged_with_where_its_time_went() -> None:
    log = io.StringIO()
    loop = Loop(Journal(log, journald=False), time.monotonic)
    reader, writer = socket.socketpair()
    done = [0]
    try:
        writer.send(b"x")

        def slow(_now: float) -> None:
            reader.recv(16)
            time.sleep(0.08)  # a stall of 80 ms

        loop.watch(reader, "frames", slow, bulk=True)

        def due(_now: float) -> None:
            loop.guard.run("counters", time.sleep, 0.01)
            done[0] += 1

        loop.run(due, lambda now: now + 0.5, lambda: done[0] >= 1, threading.Lock())
    finally:
        reader.close()
        writer.close()
    assert loop.times.long == 1
    (line,) = [line for line in log.getvalue().splitlines() if "long wake-up" in line]
    fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
    assert float(fields["ms"]) >= 90
    # where the time went, most first
    assert fields["spent_ms"].startswith('"frames:') and " counters:" in line, line


def test_write_interest_is_switched_on_and_off_and_a_forgotten_socket_is_not_watched() -> None:
    loop = Loop(Journal(io.StringIO()), time.monotonic)
    reader, writer = socket.socketpair()
    try:
        loop.watch(reader, "snmp", lambda _now: None)
        assert loop.selector.get_key(reader).events == selectors.EVENT_READ
        loop.want_write(reader, True)
        assert loop.selector.get_key(reader).events == selectors.EVENT_READ | selectors.EVENT_WRITE
        assert loop.selector.get_key(reader).data[:2] == ("snmp", loop.selector.get_key(reader).data[1])
        loop.want_write(reader, False)
        assert loop.selector.get_key(reader).events == selectors.EVENT_READ
        loop.forget(reader)
        loop.forget(reader)  # twice: nothing
        assert reader not in loop.selector.get_map()
    finally:
        reader.close()
        writer.close()
