"""The child-process runner: real processes, a real selector loop (the daemon's `Loop`);
every wait has a deadline."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.children import LoopHarness

Outcome = tuple[int | None, str | None]


class Runner(LoopHarness):
    """Commands started by name; their outcomes in `outcomes`."""

    def __init__(self, limit: int = 32) -> None:
        super().__init__(limit)
        self.outcomes: dict[str, Outcome] = {}

    def start(self, name: str, *argv: str, timeout: float = 5.0, env: dict[str, str] | None = None) -> bool:
        def done(status: int | None, error: str | None) -> None:
            self.outcomes[name] = (status, error)

        return self.commands.start(argv, env=env, timeout=timeout, on_done=done)

    def describe(self) -> str:
        return f"outcomes so far: {self.outcomes}; {super().describe()}"


@pytest.fixture
def runner() -> Iterator[Runner]:
    built = Runner()
    yield built
    built.close()


def gone(pid: int) -> bool:
    """The process has exited (absent, or a zombie no one reaped yet)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def test_exit_statuses_come_back_through_the_loop(runner: Runner) -> None:
    assert runner.start("true", "/bin/true")
    assert runner.start("false", "/bin/false")
    assert runner.start("three", "/bin/sh", "-c", "exit 3")
    runner.run_until(lambda: len(runner.outcomes) == 3)
    assert runner.outcomes == {"true": (0, None), "false": (1, None), "three": (3, None)}
    assert runner.commands.running == 0  # reaped
    assert runner.commands.next_deadline() is None


def test_a_signal_is_minus_its_number(runner: Runner) -> None:
    assert runner.start("killed", "/bin/sh", "-c", "kill -TERM $$")
    runner.run_until(lambda: "killed" in runner.outcomes)
    assert runner.outcomes["killed"] == (-15, None)


def test_a_command_past_its_timeout_is_killed_with_its_process_group(runner: Runner, tmp_path: Path) -> None:
    pid_file = tmp_path / "background.pid"
    # a shell that leaves a grandchild in its group: the kill must reach both
    assert runner.start("slow", "/bin/sh", "-c", f"sleep 5 & echo $! > {pid_file}; sleep 5", timeout=0.3)
    started = time.monotonic()
    runner.run_until(lambda: "slow" in runner.outcomes)
    assert runner.outcomes["slow"] == (None, "timed out after 0.3 s")
    assert time.monotonic() - started < 4.0  # not the 5 s the command wanted
    assert runner.commands.timed_out == 1
    background = int(pid_file.read_text())
    runner.run_until(lambda: runner.commands.running == 0 and gone(background))


def test_a_missing_program_is_an_error_reported_from_the_loop(runner: Runner, tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-program")
    assert runner.start("missing", missing)
    assert runner.outcomes == {}  # never from inside start
    assert runner.commands.next_deadline() is not None
    runner.run_until(lambda: "missing" in runner.outcomes)
    status, error = runner.outcomes["missing"]
    assert status is None and error is not None and "No such file" in error and missing in error
    assert runner.commands.running == 0


def test_a_program_that_is_not_executable(runner: Runner, tmp_path: Path) -> None:
    script = tmp_path / "not-executable"
    script.write_text("#!/bin/sh\nexit 0\n")
    assert runner.start("denied", str(script))
    runner.run_until(lambda: "denied" in runner.outcomes)
    status, error = runner.outcomes["denied"]
    assert status is None and error is not None and "Permission denied" in error


def test_the_environment_is_the_one_given(runner: Runner) -> None:
    env = {"PATH": "/usr/bin:/bin", "EFMOAM_TEST": "yes"}
    assert runner.start("env", "/bin/sh", "-c", 'test "$EFMOAM_TEST" = yes && test -z "$HOME"', env=env)
    runner.run_until(lambda: "env" in runner.outcomes)
    assert runner.outcomes["env"] == (0, None)


def test_beyond_the_limit_start_refuses() -> None:
    runner = Runner(limit=3)
    try:
        assert all(runner.start(f"sleep{n}", "/bin/sleep", "5") for n in range(3))
        assert not runner.start("one too many", "/bin/true")
        assert runner.commands.busy == 1 and runner.commands.running == 3
        # a failed start holds its place until it is reported, too
        runner.commands.close()
        assert runner.commands.running == 0
        assert runner.start("missing", "/nonexistent/program")
        assert runner.start("a", "/bin/sleep", "5")
        assert runner.start("b", "/bin/sleep", "5")
        assert not runner.start("c", "/bin/true")
        runner.run_until(lambda: "missing" in runner.outcomes)
        assert runner.start("c", "/bin/true")  # the failure was reported: its place is free
    finally:
        runner.close()


def test_close_kills_what_runs_and_calls_nobody(runner: Runner) -> None:
    assert runner.start("sleep", "/bin/sleep", "30")
    [child] = runner.commands._children.values()
    pid = child.proc.pid
    runner.commands.close()
    assert gone(pid)
    assert runner.commands.running == 0 and runner.outcomes == {}
    with pytest.raises(OSError):  # its pidfd closed
        os.fstat(child.pidfd)


def test_a_callback_that_raises_is_caught_and_others_run(runner: Runner) -> None:
    def broken(_status: int | None, _error: str | None) -> None:
        raise RuntimeError("a bug in a caller")

    assert runner.commands.start(["/bin/true"], env=None, timeout=5.0, on_done=broken)
    assert runner.commands.start(["/nonexistent/program"], env=None, timeout=5.0, on_done=broken)
    assert runner.start("after", "/bin/true")
    runner.run_until(lambda: "after" in runner.outcomes and runner.commands.running == 0)
    assert runner.loop.guard.errors.get("commands") == 2
    assert "internal error in commands" in runner.log.getvalue()


def test_many_at_once_all_reported(runner: Runner) -> None:
    for n in range(32):
        assert runner.start(str(n), "/bin/sh", "-c", f"exit {n % 3}")
    assert not runner.start("33rd", "/bin/true")
    runner.run_until(lambda: len(runner.outcomes) == 32)
    assert all(runner.outcomes[str(n)] == (n % 3, None) for n in range(32))
    assert runner.commands.running == 0


def test_an_empty_command_is_a_bug(runner: Runner) -> None:
    with pytest.raises(ValueError, match="no program"):
        runner.commands.start([], env=None, timeout=1.0, on_done=lambda _s, _e: None)
