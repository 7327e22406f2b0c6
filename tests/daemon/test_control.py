"""The control socket and the CLI's errors: permissions, an unknown port, no daemon."""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import attr
import attrs
import click
import pytest

from tests.daemon.lab import MAC_A, ROOT, Lab, efmoam

NOBODY = 65534


def as_nobody() -> list[str] | None:
    """A command prefix that runs as uid/gid 65534 with no supplementary groups."""
    if shutil.which("setpriv"):
        return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    if shutil.which("runuser"):
        return ["runuser", "-u", "nobody", "--"]
    return None


def readable_copy() -> str:
    """The efmoam and pdu packages, click and attrs, copied where any user can read them (the checkout and
    the venv may sit under a directory only root may enter, such as a mktemp -d clone)."""
    shared = Path(tempfile.mkdtemp(prefix="efmoam-nobody-"))
    shared.chmod(0o755)
    atexit.register(shutil.rmtree, shared, True)
    skip = shutil.ignore_patterns("__pycache__")
    for package in ("efmoam", "pdu"):  # the text views read the monitor table and pdu's numbers
        shutil.copytree(Path(ROOT) / package, shared / package, ignore=skip)
    for module in (click, attr, attrs):
        source = Path(module.__file__).resolve().parent
        shutil.copytree(source, shared / source.name, ignore=skip)
    for entry in shared.rglob("*"):
        entry.chmod(0o755 if entry.is_dir() else 0o644)
    return str(shared)


def nobody_python(prefix: Sequence[str]) -> tuple[str, str] | None:
    """An interpreter nobody may run that can import click, with the PYTHONPATH it needs."""
    path = readable_copy()
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    for python in (sys.executable, f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"):
        if not os.path.exists(python):
            continue
        probe = subprocess.run(
            [*prefix, "env", f"PYTHONPATH={path}", python, "-c", "import click, efmoam.views.text"],
            capture_output=True,
            check=False,
        )
        if probe.returncode == 0:
            return python, path
    return None


def run_as_nobody(lab: Lab, *args: str) -> subprocess.CompletedProcess[str]:
    prefix = as_nobody()
    if prefix is None:
        pytest.skip("needs setpriv or runuser to run the CLI as another user")
    found = nobody_python(prefix)
    if found is None:
        pytest.skip("no Python interpreter that nobody (uid 65534) may run with click importable")
    python, path = found
    command = [*prefix, "env", f"PYTHONPATH={path}", python, "-m", "efmoam.cli", *args, "--socket", lab.a.socket]
    return subprocess.run(command, capture_output=True, text=True, cwd="/", timeout=30, check=False)


@pytest.mark.root
def test_control_socket_is_0660_and_refuses_others(lab: Lab) -> None:
    lab.a.overrides = {"daemon": {"control_socket_group": "root"}}  # a group that exists on every host
    lab.start(lab.a, operational=False)
    mode = os.stat(lab.a.socket).st_mode
    assert stat.S_ISSOCK(mode)
    assert stat.S_IMODE(mode) == 0o660
    result = run_as_nobody(lab, "show", "port")
    assert result.returncode == 1, result
    assert result.stdout == ""
    assert result.stderr == f"efmoam: no permission to use {lab.a.socket}\n"
    result = run_as_nobody(lab, "show", "port", "-f", "json")
    assert result.returncode == 1
    assert json.loads(result.stdout)["error"]["code"] == "permission"
    # the group bits are what lets an operator group in: give the socket nobody's group
    os.chown(lab.a.socket, -1, NOBODY)
    result = run_as_nobody(lab, "show", "port", "-f", "json")
    assert result.returncode == 0, result.stderr
    assert [port["name"] for port in json.loads(result.stdout)["ports"]] == ["veth0"]


@pytest.mark.root
def test_unknown_port(lab: Lab) -> None:
    lab.start(lab.a, operational=False)
    message = "efmoam: veth9 is not a port efmoam manages (ports: veth0)\n"
    for args in (
        ("show", "port", "veth9"),
        ("show", "port", "veth9", "event-log"),
        ("show", "port", "veth9", "statistics"),
        ("clear", "port", "veth9", "events"),
        ("clear", "port", "veth9", "statistics"),
        ("loopback", "veth9", "start"),
    ):
        result = lab.a.cli(*args)
        assert (result.returncode, result.stdout, result.stderr) == (1, "", message), args
    result = lab.a.cli("show", "port", "veth9", "-f", "json")
    assert result.returncode == 1
    assert json.loads(result.stdout) == {
        "error": {"code": "unknown_port", "message": "veth9 is not a port efmoam manages (ports: veth0)"}
    }
    assert lab.a.running


def not_running_message(path: str) -> str:
    return f"efmoam: the efmoam daemon is not running (no answer on {path})\n"


def test_no_daemon_no_socket(tmp_path: Path) -> None:
    path = str(tmp_path / "absent.sock")
    for args in (("show", "port"), ("show", "port", "veth0"), ("clear", "port", "veth0", "events")):
        result = efmoam(*args, "--socket", path)
        assert (result.returncode, result.stdout, result.stderr) == (1, "", not_running_message(path)), args
    result = efmoam("show", "port", "-f", "json", "--socket", path)
    assert result.returncode == 1
    assert json.loads(result.stdout)["error"]["code"] == "not_running"


def test_no_daemon_stale_socket(tmp_path: Path) -> None:
    """A socket file left by a daemon that was killed: nobody listens, connect is refused."""
    path = str(tmp_path / "stale.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.close()
    result = efmoam("show", "port", "--socket", path)
    assert (result.returncode, result.stdout, result.stderr) == (1, "", not_running_message(path))


@pytest.mark.root
def test_stopped_and_killed_daemon_is_not_running(lab: Lab) -> None:
    lab.start(lab.a, operational=False)
    assert lab.a.stop() == 0
    assert not os.path.exists(lab.a.socket), "a stopped daemon removes its socket"
    result = lab.a.cli("show", "port")
    assert (result.returncode, result.stderr) == (1, not_running_message(lab.a.socket))
    lab.a.start(write_config=False)
    lab.a.kill()
    assert os.path.exists(lab.a.socket)  # SIGKILL leaves it behind
    result = lab.a.cli("show", "port", "veth0")
    assert (result.returncode, result.stderr) == (1, not_running_message(lab.a.socket))
    lab.a.start(write_config=False)  # and the next start takes the stale socket over
    assert lab.a.show()["ports"][0]["name"] == "veth0"


def test_variable_retrieval_through_the_control_socket(lab: Lab) -> None:
    """`efmoam variables`: the peer answers a Variable Request; the CLI prints the answer."""
    lab.start(lab.a, lab.b)
    result = lab.a.cli("variables", "veth0", "251", "239", "999")
    assert result.returncode == 0, result.stderr
    assert lab.b.port()["statistics"]["dot3OamVariableRequestRx"] == 1
    # 251 aOAMInformationTx: 4 octets; 239 aOAMRemoteMACAddress: B's view of its peer, A's MAC;
    # 999 is no attribute we keep: "not supported" (0x21)
    lines = result.stdout.splitlines()
    assert lines[:2] == ["veth0: Variable Response from the peer", "  Leaf  Attribute                         Value"]
    assert re.fullmatch(r"  251   aOAMInformationTx                 \d+ \(0x[0-9a-f]{8}\)", lines[2])
    assert lines[3:] == [
        f"  239   aOAMRemoteMACAddress              {MAC_A}",
        "  999   -                                 attribute_unsupported (0x21)",
    ]
    line = lab.wait_for(
        lambda: next((x for x in lab.a.log().splitlines() if " variables " in f" {x} "), None), 10, "the log line"
    )
    assert f"239={MAC_A.replace(':', '')}" in line and "999=indication:0x21" in line
    assert lab.a.port()["statistics"]["dot3OamVariableResponseRx"] == 1

    result = lab.a.cli("variables", "veth0", "252", "-f", "json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert (document["schema"], document["port"]) == (1, "veth0")  # variables JSON schema 1
    [answer] = document["variables"]
    assert answer["leaf"] == 252 and answer["name"] == "aOAMInformationRx" and answer["indication"] is None
    assert int(answer["values"][0], 16) > 0

    sent = lab.a.cli("variables", "veth0", "251", "--wait", "0")
    assert (sent.returncode, sent.stdout) == (0, "veth0: variable request sent for 251\n")

    os.kill(lab.b.pid, signal.SIGSTOP)  # B stops answering (A keeps its peer for 1 s)
    try:
        late = lab.a.cli("variables", "veth0", "251", "--wait", "0.3")
    finally:
        os.kill(lab.b.pid, signal.SIGCONT)
    assert (late.returncode, late.stderr) == (
        1,
        "efmoam: veth0: no Variable Response within 0.3 s (the request was sent)\n",
    )
    bad = lab.a.cli("variables", "veth9", "251")
    assert (bad.returncode, bad.stderr) == (1, "efmoam: veth9 is not a port efmoam manages (ports: veth0)\n")
