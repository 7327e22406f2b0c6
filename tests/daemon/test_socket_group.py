"""The control socket's group (``daemon.control_socket_group``): its members use the CLI
without root, others get one line; a group that does not exist is one warning and a
socket for root only; a reload applies a changed group.  A throwaway group and two
users are made for the test (groupadd, useradd) and removed after."""

from __future__ import annotations

import grp
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from efmoam.daemon.control import ControlError, request
from tests.daemon.lab import ROOT, wait_for
from tests.linux.netns import ip

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(
        os.geteuid() != 0 or not all(shutil.which(t) for t in ("ip", "groupadd", "useradd", "setpriv")),
        reason="needs root, iproute2, groupadd/useradd and setpriv",
    ),
]


@attrs.frozen
class Accounts:
    group: str
    member: str  #: in `group`
    outsider: str  #: not in it


@pytest.fixture
def accounts() -> Iterator[Accounts]:
    suffix = f"{os.getpid() % 100000}"
    made = Accounts(f"efmtg{suffix}", f"efmtm{suffix}", f"efmto{suffix}")
    subprocess.run(["groupadd", made.group], check=True)
    try:
        subprocess.run(["useradd", "--no-create-home", "-G", made.group, made.member], check=True)
        subprocess.run(["useradd", "--no-create-home", made.outsider], check=True)
        yield made
    finally:
        for user in (made.member, made.outsider):
            subprocess.run(["userdel", user], check=False, capture_output=True)
        subprocess.run(["groupdel", made.group], check=False, capture_output=True)


@attrs.define
class Run:
    """One daemon in its own network namespace; the socket's directory is its to make."""

    base: Path
    netns: str
    python: tuple[str, dict[str, str]]  #: `any_user_python`: the users run the CLI with it
    process: subprocess.Popen[str] | None = None

    @property
    def socket(self) -> Path:
        return self.base / "run" / "efmoam.sock"

    @property
    def log(self) -> Path:
        return self.base / "daemon.log"

    def configure(self, group: str | None) -> None:
        self.base.joinpath("efmoam.yaml").write_text(
            f"daemon: {{control_socket: {self.socket}, state_dir: {self.base}/state, "
            f"control_socket_group: {'null' if group is None else group}}}\nports:\n  - match: nothing-here\n"
        )

    def start(self) -> None:
        with self.log.open("a") as log:
            self.process = subprocess.Popen(
                ["ip", "netns", "exec", self.netns, sys.executable, "-m", "efmoam.cli", "daemon", "-c",
                 str(self.base / "efmoam.yaml")],
                stdout=log, stderr=log, env={**os.environ, "PYTHONPATH": str(ROOT)}, text=True,
            )  # fmt: skip
        wait_for(self.answers, 20, "the daemon to answer", context=self.log.read_text)

    def answers(self) -> bool:
        assert self.process is not None and self.process.poll() is None, self.log.read_text()
        try:
            return request(str(self.socket), "hello") is not None
        except ControlError:
            return False

    def reload(self, group: str | None) -> None:
        assert self.process is not None
        reloads = self.log.read_text().count("configuration reloaded")
        self.configure(group)
        self.process.send_signal(signal.SIGHUP)
        wait_for(lambda: self.log.read_text().count("configuration reloaded") > reloads, 10, "the reload")

    def show_as(self, user: str) -> subprocess.CompletedProcess[str]:
        """``efmoam show port`` as `user`, with that user's groups."""
        return subprocess.run(
            ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", "--inh-caps=-all",
             self.python[0], "-m", "efmoam.cli", "show", "port", "--socket", str(self.socket)],
            capture_output=True, text=True, timeout=30, cwd="/", env=self.python[1],
            check=False,
        )  # fmt: skip

    def mode_and_group(self, path: Path) -> tuple[int, str]:
        status = path.stat()
        return stat.S_IMODE(status.st_mode), grp.getgrgid(status.st_gid).gr_name


@pytest.fixture
def run(any_user_python: tuple[str, dict[str, str]]) -> Iterator[Run]:
    base = Path(tempfile.mkdtemp(prefix="efmoam-group-", dir="/tmp"))
    base.chmod(0o755)  # the users reach the socket's directory through it
    built = Run(base, f"efmoam-group-{os.getpid()}", any_user_python)
    ip("netns", "add", built.netns)
    try:
        yield built
    finally:
        if built.process is not None and built.process.poll() is None:
            built.process.terminate()
            try:
                built.process.wait(10)
            except subprocess.TimeoutExpired:
                built.process.kill()
                built.process.wait()
        subprocess.run(["ip", "netns", "del", built.netns], check=False)
        shutil.rmtree(base, ignore_errors=True)


def refused_in_one_line(result: subprocess.CompletedProcess[str], socket: Path) -> None:
    assert result.returncode == 1
    assert result.stderr == f"efmoam: no permission to use {socket}\n"  # one line, no traceback
    assert result.stdout == ""


def test_members_of_the_group_use_the_cli_without_root(run: Run, accounts: Accounts) -> None:
    run.configure(accounts.group)
    run.start()
    assert run.mode_and_group(run.socket) == (0o660, accounts.group)
    assert run.mode_and_group(run.socket.parent) == (0o750, accounts.group)  # made by the daemon
    member = run.show_as(accounts.member)
    assert member.returncode == 0, member.stderr
    assert member.stderr == ""
    refused_in_one_line(run.show_as(accounts.outsider), run.socket)
    assert "control socket group" not in run.log.read_text()  # nothing to warn about

    run.reload(None)  # root only
    assert run.mode_and_group(run.socket)[0] == 0o600
    refused_in_one_line(run.show_as(accounts.member), run.socket)

    run.reload(accounts.group)  # back
    assert run.mode_and_group(run.socket) == (0o660, accounts.group)
    assert run.show_as(accounts.member).returncode == 0


def test_a_group_that_does_not_exist_is_one_warning_and_root_only(run: Run, accounts: Accounts) -> None:
    run.configure("efmoam-no-such-group")
    run.start()
    assert run.mode_and_group(run.socket)[0] == 0o600
    warnings = [line for line in run.log.read_text().splitlines() if "control socket group" in line]
    assert len(warnings) == 1 and " WARNING " in warnings[0] and "group=efmoam-no-such-group" in warnings[0]
    refused_in_one_line(run.show_as(accounts.member), run.socket)

    run.reload("efmoam-no-such-group")  # unchanged: no second warning
    assert len([line for line in run.log.read_text().splitlines() if "control socket group" in line]) == 1
    run.reload(accounts.group)  # a reload with a changed group applies it
    assert run.mode_and_group(run.socket) == (0o660, accounts.group)
    assert run.show_as(accounts.member).returncode == 0
