"""Child processes started by the daemon (tracked-condition checks, action commands),
run without ever blocking the loop.

`Commands.start` spawns a program (no shell; stdin, stdout and stderr on /dev/null; the
working directory ``/``; its own session, so its process group can be killed) and
returns at once.  Each child's pidfd is watched by the loop's selector: when the child
ends it is reaped (``waitpid``) and its ``on_done(exit_status, None)`` runs under the
loop's guard.  A child still running at its deadline is killed with its whole process
group and ``on_done(None, "timed out after N s")`` runs at once (the corpse is reaped
when its pidfd says so).  A program that cannot be started (ENOENT, EACCES ...) gives
``on_done(None, error)`` at the next `service`, never from inside `start`: a caller
never sees its callback before `start` returned.

Exit statuses are `subprocess.Popen.returncode`'s: the exit code, or minus the signal
that ended the child.  At most `limit` children run at once; beyond that `start` returns
False (the caller logs that it is busy).  Time is the loop's: `start` reads the loop's
clock for the deadline, `service` is given ``now``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence

import attrs

from efmoam.daemon.loop import Loop

MAX_RUNNING = 32  #: children running at once
REAP_WAIT = 1.0  #: seconds `close` waits for the children it killed

#: called from the loop when a child ended: (exit status, None), or (None, why it did not run to its end)
OnDone = Callable[[int | None, str | None], None]


@attrs.define(eq=False)
class _Child:
    proc: subprocess.Popen[bytes]
    pidfd: int
    timeout: float
    deadline: float | None  #: when it is killed (None: it was, and waits to be reaped)
    on_done: OnDone


class Commands:
    """Runs child processes for the daemon's loop; see the module's comment."""

    def __init__(self, loop: Loop, *, limit: int = MAX_RUNNING) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self.limit = limit
        self._loop = loop
        self._children: dict[int, _Child] = {}  #: by pidfd: running, or killed and not yet reaped
        self._failed: list[tuple[float, OnDone, str]] = []  #: starts that failed, reported at `service`
        self.started = 0  #: children started
        self.timed_out = 0  #: children killed at their deadline
        self.busy = 0  #: starts refused at the limit

    @property
    def running(self) -> int:
        """Children started and not reaped yet."""
        return len(self._children)

    def start(
        self, argv: Sequence[str], *, env: Mapping[str, str] | None, timeout: float, on_done: OnDone
    ) -> bool:  # fmt: skip
        """Start `argv` (`env`: its environment; None: the daemon's); False when `limit`
        children run already (nothing started, `on_done` never called)."""
        if not argv:
            raise ValueError("no program to run")
        if len(self._children) + len(self._failed) >= self.limit:
            self.busy += 1
            return False
        now = self._loop.clock()
        try:
            proc = subprocess.Popen(
                list(argv), env=None if env is None else dict(env), cwd="/", start_new_session=True,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
        except (OSError, ValueError, subprocess.SubprocessError) as exc:  # ValueError: a NUL in an argument
            self._failed.append((now, on_done, _reason(exc)))
            return True
        child: _Child | None = None
        try:
            pidfd = os.pidfd_open(proc.pid)
            child = _Child(proc, pidfd, timeout, now + timeout, on_done)
            self._loop.watch(pidfd, "commands", lambda _now: self._ended(child))
        except OSError as exc:  # out of file descriptors or memory: a child not watched is not kept
            _kill(proc)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(REAP_WAIT)
            if child is not None:
                os.close(child.pidfd)
            self._failed.append((now, on_done, f"cannot watch the process: {_reason(exc)}"))
            return True
        self._children[pidfd] = child
        self.started += 1
        return True

    def next_deadline(self) -> float | None:
        """When `service` must run next (None: no need)."""
        times = [failed[0] for failed in self._failed]
        times += [child.deadline for child in self._children.values() if child.deadline is not None]
        return min(times, default=None)

    def service(self, now: float) -> None:
        """Report failed starts; kill the children past their deadline."""
        failed, self._failed = self._failed, []
        for _, on_done, error in failed:
            self._loop.guard.run("commands", on_done, None, error)
        for child in list(self._children.values()):
            if child.deadline is not None and child.deadline <= now:
                child.deadline = None
                _kill(child.proc)
                self.timed_out += 1
                self._loop.guard.run("commands", child.on_done, None, f"timed out after {child.timeout:g} s")

    def close(self) -> None:
        """Kill every child left (and its process group) and reap it, waiting `REAP_WAIT`
        seconds at most in all; no `on_done` is called."""
        self._failed.clear()
        children = list(self._children.values())
        for child in children:
            _kill(child.proc)
        give_up = self._loop.clock() + REAP_WAIT
        for child in children:
            with contextlib.suppress(subprocess.TimeoutExpired):  # stuck in the kernel: left to init
                child.proc.wait(max(0.0, give_up - self._loop.clock()))
            self._forget(child)

    def _ended(self, child: _Child) -> None:
        """The child's pidfd is readable: it exited."""
        if self._children.get(child.pidfd) is not child:
            return  # forgotten already
        status = child.proc.poll()  # waitpid(WNOHANG): it ended, so it is reaped here
        if status is None:
            return  # not yet (cannot happen with a pidfd; harmless)
        self._forget(child)
        if child.deadline is not None:  # a child that timed out was reported then
            child.on_done(status, None)

    def _forget(self, child: _Child) -> None:
        if self._children.get(child.pidfd) is not child:
            return
        del self._children[child.pidfd]
        self._loop.forget(child.pidfd)
        os.close(child.pidfd)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL to the child's process group (it leads its own session); the child itself if that fails.
    The child is not reaped yet, so its pid (and group id) cannot have been reused."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        with contextlib.suppress(OSError):
            proc.kill()


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        text = exc.strerror or str(exc)
        return f"{text}: {exc.filename}" if exc.filename else text
    return str(exc) or type(exc).__name__
