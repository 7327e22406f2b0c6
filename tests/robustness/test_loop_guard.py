"""The loop's guard: a job that raises is counted by where, logged with its traceback
(rate limited), and the loop goes on to its other jobs and wake-ups."""

from __future__ import annotations

import io
import socket
import threading
import time

from efmoam.daemon.journal import Journal
from efmoam.daemon.loop import Loop, drain


def test_a_job_that_raises_ends_nothing() -> None:
    stream = io.StringIO()
    loop = Loop(Journal(stream), time.monotonic)
    reader, writer = socket.socketpair()
    reader.setblocking(False)
    calls: list[str] = []

    def bad(_now: float) -> None:
        drain(reader)
        calls.append("bad")
        raise RecursionError("maximum recursion depth exceeded")

    due_calls: list[float] = []

    def due(now: float) -> None:
        due_calls.append(now)
        if len(due_calls) == 3:
            raise MemoryError

    loop.watch(reader, "frames", bad)
    wakes = 0

    def stopped() -> bool:
        nonlocal wakes
        wakes += 1
        if wakes <= 20:
            writer.send(b"x")
        return wakes > 20

    loop.run(lambda now: loop.guard.run("due", due, now), lambda now: now + 0.01, stopped, threading.Lock())
    assert calls.count("bad") == 20 and len(due_calls) == 20  # every wake-up ran both
    assert loop.guard.errors == {"frames": 20, "due": 1}
    log = stream.getvalue()
    assert log.count("internal error in frames") == Journal.BURST  # then suppressed
    assert "RecursionError" in log and "Traceback" in log
    assert log.count("internal error in due") == 1
    reader.close()
    writer.close()
