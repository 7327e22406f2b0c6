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


def test_bulk_jobs_run_for_about_a_slice_of_a_wakeup() -> None:
    """Bulk jobs that take long (a Dying Gasp each, on a slow machine) stop once they have
    taken `SLICE` of the wake-up, well before `BULK_PER_WAKEUP`; the rest come next."""
    now = [100.0]  # the loop's clock: each job takes 4 ms of it
    loop = Loop(Journal(io.StringIO()), lambda: now[0])
    pairs = [socket.socketpair() for _ in range(10)]
    ran: list[int] = []  # the wake-up of each job
    wakeups = [0]
    try:
        for reader, writer in pairs:
            reader.setblocking(False)
            writer.send(b"x")

            def job(_now: float, reader: socket.socket = reader) -> None:
                reader.recv(16)
                now[0] += 0.004
                ran.append(wakeups[0])

            loop.watch(reader, "frames", job, bulk=True)

        def due(_now: float) -> None:
            wakeups[0] += 1

        loop.run(due, lambda at: at + 0.5, lambda: len(ran) == len(pairs), threading.Lock())
        per_wakeup = -(-SLICE // 0.004)  # jobs until a slice is spent: the one that crosses it included
        assert ran.count(0) == per_wakeup < BULK_PER_WAKEUP
        assert wakeups[0] == -(-len(pairs) // per_wakeup), "the rest in the next wake-ups, each a slice"
    finally:
        for reader, writer in pairs:
            reader.close()
            writer.close()


def test_a_slow_job_of_another_kind_does_not_take_the_frames_slice() -> None:
    """Each kind's slice is its own: a job that is not a port's (an SNMP request, say) taking
    longer than a slice, ready first in every wake-up, leaves the frames their slice."""
    now = [100.0]
    loop = Loop(Journal(io.StringIO()), lambda: now[0])
    hog_r, hog_w = socket.socketpair()
    hog_w.send(b"x")  # never read: ready in every wake-up
    loop.watch(hog_r, "snmp", lambda _now: now.__setitem__(0, now[0] + SLICE + 0.001))
    pairs = [socket.socketpair() for _ in range(3)]
    ran: list[int] = []
    wakeups = [0]
    try:
        for reader, writer in pairs:
            reader.setblocking(False)
            writer.send(b"x")

            def job(_now: float, reader: socket.socket = reader) -> None:
                reader.recv(16)
                now[0] += 0.001
                ran.append(wakeups[0])

            loop.watch(reader, "frames", job, bulk=True)

        def due(_now: float) -> None:
            wakeups[0] += 1

        loop.run(due, lambda at: at + 0.5, lambda: len(ran) == len(pairs) or wakeups[0] > 5, threading.Lock())
        assert ran == [0, 0, 0], "every port's frames in the first wake-up"
    finally:
        for end in (hog_r, hog_w, *(end for pair in pairs for end in pair)):
            end.close()


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
