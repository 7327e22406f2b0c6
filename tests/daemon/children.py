"""The daemon's loop with its child-process runner, driven the way the daemon drives it,
for tests of `Commands` and of what runs on it (`Tracking`).  Every wait has a deadline."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable

from efmoam.daemon.commands import Commands
from efmoam.daemon.journal import Journal
from efmoam.daemon.loop import Loop


class LoopHarness:
    """A real selector loop (the daemon's `Loop`) with a `Commands` on it; the log in `log`."""

    def __init__(self, limit: int = 32) -> None:
        self.log = io.StringIO()
        self.loop = Loop(Journal(self.log), time.monotonic)
        self.commands = Commands(self.loop, limit=limit)

    def now(self) -> float:
        return time.monotonic()

    def due(self, now: float) -> None:
        """What the daemon's `_due` runs of these objects."""
        self.commands.service(now)

    def deadlines(self) -> list[float | None]:
        return [self.commands.next_deadline()]

    def describe(self) -> str:
        """What a timed-out wait reports."""
        return f"log:\n{self.log.getvalue()}"

    def run_until(self, predicate: Callable[[], object], timeout: float = 5.0) -> None:
        """Run the loop until `predicate` holds; fail after `timeout` seconds."""
        give_up = time.monotonic() + timeout

        def wakeup(now: float) -> float:  # at least every 50 ms: the predicate may watch other processes
            return min([*(d for d in self.deadlines() if d is not None), now + 0.05, give_up])

        self.loop.run(self.due, wakeup, lambda: bool(predicate()) or time.monotonic() >= give_up, threading.Lock())
        assert predicate(), f"timed out; {self.describe()}"

    def run_for(self, seconds: float) -> None:
        until = time.monotonic() + seconds
        self.run_until(lambda: time.monotonic() >= until, seconds + 1.0)

    def lines(self, text: str) -> list[str]:
        return [line for line in self.log.getvalue().splitlines() if text in line]

    def close(self) -> None:
        self.commands.close()
        self.loop.selector.close()
