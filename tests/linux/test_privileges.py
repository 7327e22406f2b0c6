"""Started without a privilege it needs, the daemon says which in one line and exits 4
(run as nobody through setpriv, with only the capabilities each case gives, in a netns)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from efmoam.daemon.control import request
from tests.daemon.lab import wait_for
from tests.linux.netns import ip, needs_root

pytestmark = [
    needs_root,
    pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux)"),
]

ROOT = Path(__file__).resolve().parent.parent.parent
NOBODY = 65534
CAPABILITIES = "(run as root, or with CAP_NET_RAW and CAP_NET_ADMIN)"
LINE = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z ERROR "


@pytest.fixture
def place() -> Iterator[tuple[str, Path]]:
    """A network namespace and a directory nobody may read but not write."""
    netns = f"efmoam-privileges-{os.getpid()}"
    base = Path(tempfile.mkdtemp(prefix="efmoam-privileges-", dir="/tmp"))
    base.chmod(0o755)
    ip("netns", "add", netns)
    try:
        yield netns, base
    finally:
        subprocess.run(["ip", "netns", "del", netns], check=False)
        shutil.rmtree(base, ignore_errors=True)


def run_as_nobody(
    netns: str, base: Path, caps: str, state_dir: Path, socket_dir: Path, python: tuple[str, dict[str, str]]
) -> tuple[int, list[str]]:
    config = base / "efmoam.yaml"
    config.write_text(
        f"daemon: {{control_socket: {socket_dir}/efmoam.sock, state_dir: {state_dir}, control_socket_group: null}}\n"
        "ports:\n  - match: veth*\n"
    )
    setpriv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", f"--inh-caps=-all{caps}"]
    if caps:
        setpriv.append(f"--ambient-caps={caps.lstrip(',')}")
    interpreter, env = python[0], dict(python[1])
    env.pop("JOURNAL_STREAM", None)
    result = subprocess.run(
        ["ip", "netns", "exec", netns, *setpriv, interpreter, "-m", "efmoam.cli", "daemon", "-c", str(config)],
        capture_output=True, text=True, timeout=60, cwd="/", env=env, check=False,
    )  # fmt: skip
    return result.returncode, result.stderr.splitlines()


def writable(path: Path) -> Path:
    path.mkdir()
    os.chown(path, NOBODY, NOBODY)
    return path


@pytest.mark.parametrize(
    ("caps", "expected"),
    [
        ("", rf"cannot open a raw socket \(AF_PACKET\): permission denied {re.escape(CAPABILITIES)}"),
        (",+net_raw", rf"cannot change network interfaces \(rtnetlink\): permission denied {re.escape(CAPABILITIES)}"),
    ],
    ids=["no-capabilities", "no-cap-net-admin"],
)
def test_a_missing_capability_is_one_line(
    place: tuple[str, Path], caps: str, expected: str, any_user_python: tuple[str, dict[str, str]]
) -> None:
    netns, base = place
    status, lines = run_as_nobody(netns, base, caps, writable(base / "state"), writable(base / "run"), any_user_python)
    assert status == 4
    assert len(lines) == 1, lines
    assert re.fullmatch(LINE + expected, lines[0]), lines
    assert not list((base / "run").iterdir())  # nothing was left behind


def test_a_state_directory_it_may_not_write_is_one_line(
    place: tuple[str, Path], any_user_python: tuple[str, dict[str, str]]
) -> None:
    netns, base = place
    (base / "state").mkdir()  # root's
    status, lines = run_as_nobody(
        netns, base, ",+net_raw,+net_admin", base / "state", writable(base / "run"), any_user_python
    )
    assert status == 4
    assert len(lines) == 1, lines
    assert re.fullmatch(
        LINE + rf"cannot write the state directory {base}/state: permission denied \(run as root, or as a user who "
        r"may write it \(StateDirectory=efmoam under systemd\)\)",
        lines[0],
    ), lines


def test_a_control_socket_directory_it_may_not_write_is_one_line(
    place: tuple[str, Path], any_user_python: tuple[str, dict[str, str]]
) -> None:
    netns, base = place
    status, lines = run_as_nobody(
        netns, base, ",+net_raw,+net_admin", writable(base / "state"), base / "run", any_user_python
    )
    assert status == 4
    assert len(lines) == 1, lines
    assert re.fullmatch(
        LINE + rf"cannot listen on {base}/run/efmoam.sock: Permission denied \(run as root, or as a user who may "
        r"write its directory \(RuntimeDirectory=efmoam under systemd\)\)",
        lines[0],
    ), lines


def test_with_both_capabilities_it_runs_as_nobody(
    place: tuple[str, Path], any_user_python: tuple[str, dict[str, str]]
) -> None:
    """The unit's way: a user of its own with CAP_NET_RAW and CAP_NET_ADMIN is enough."""
    netns, base = place
    ip("link", "add", "veth0", "type", "veth", "peer", "name", "veth1", netns=netns)
    config = base / "efmoam.yaml"
    state, run = writable(base / "state"), writable(base / "run")
    config.write_text(
        f"daemon: {{control_socket: {run}/efmoam.sock, state_dir: {state}, control_socket_group: null}}\n"
        "ports:\n  - match: veth*\n"
    )
    caps = "+net_raw,+net_admin"
    process = subprocess.Popen(
        ["ip", "netns", "exec", netns, "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
         f"--inh-caps=-all,{caps}", f"--ambient-caps={caps}", any_user_python[0], "-m", "efmoam.cli", "daemon",
         "-c", str(config)],
        stderr=subprocess.PIPE, text=True, cwd="/", env=any_user_python[1],
    )  # fmt: skip
    try:
        view = wait_for(lambda: request(str(run / "efmoam.sock"), "show_ports"), 20, "the daemon to answer")
        assert "veth0" in str(view) and "veth1" in str(view)  # the raw sockets opened
        assert (run / "efmoam.sock").stat().st_uid == NOBODY
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=10)
    assert process.returncode == 0, stderr
    assert "ERROR" not in stderr, stderr
