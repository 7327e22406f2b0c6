"""`efmoam lab` runs its whole walk-through and leaves nothing behind; without root it says
so in one line; a failing ``ip`` is shown with its own message."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.daemon.lab import ROOT
from tests.daemon.test_control import as_nobody, nobody_python
from tests.linux.netns import needs_root

pytestmark = [
    needs_root,
    pytest.mark.skipif(shutil.which("nft") is None or shutil.which("ping") is None, reason="needs nft and ping"),
]


def namespaces() -> set[str]:
    output = subprocess.run(["ip", "netns", "list"], check=True, capture_output=True, text=True).stdout
    return {line.split()[0] for line in output.splitlines() if line.strip()}


def lab(env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "efmoam.cli", "lab"], capture_output=True, text=True, timeout=120, check=False, env=env
    )


def test_lab_walks_through_degrade_failure_clear_and_recovery() -> None:
    before = namespaces()
    result = lab()
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    steps = [line for line in out.splitlines() if line.startswith("### ")]
    assert len(steps) == 7
    assert "ping across the pair now fails; OAM still operational" in out
    assert "remote erroredFrameEvent" in out
    assert out.count("ping across the pair: ok") == 2
    assert "Ethernet OAM (802.3ah) laba" in out  # show port output at the steps
    # variables, loopback, metrics, the log, the peer's remote event after the clear
    assert "$ efmoam variables laba 251 239" in out and "aOAMRemoteMACAddress              02:00:5e:00:0a:01" in out
    assert "loopback status now remoteLoopback" in out and "loopback status now noLoopback" in out
    assert 'efmoam_port_out_of_service{device="laba",reason="local errored_frame_event"} 1' in out
    log = out.split("the daemon's log (side a), last notices:\n")[1].split("\n###")[0].splitlines()
    assert log and any("port out of service port=laba" in line for line in log), log
    after_clear = out.split("### 7.")[1]
    assert "Clause 57 has no message that ends an event" in after_clear
    shown = after_clear.split("Clause 57 has no message")[1].splitlines()
    assert [line for line in shown if " remote erroredFrameEvent " in line and line.endswith("active")], shown
    assert "remote events still active: 0" in after_clear
    assert not any(name.startswith("efmoam-lab-") for name in namespaces() - before)


def test_lab_without_root_says_so_in_one_line() -> None:
    prefix = as_nobody()
    if prefix is None:
        pytest.skip("needs setpriv or runuser to run as another user")
    found = nobody_python(prefix)
    if found is None:
        pytest.skip("no Python interpreter that nobody (uid 65534) may run with click importable")
    python, path = found
    result = subprocess.run(
        [*prefix, "env", f"PYTHONPATH={path}", python, "-m", "efmoam.cli", "lab"],
        capture_output=True, text=True, cwd="/", timeout=30, check=False,
    )  # fmt: skip
    assert result.returncode == 1
    assert (result.stdout + result.stderr).splitlines() == [
        "efmoam lab needs root: it creates network namespaces and runs two daemons (try: sudo efmoam lab)"
    ]


def test_lab_shows_what_ip_said_when_it_fails(tmp_path: Path) -> None:
    fake = tmp_path / "ip"
    fake.write_text("#!/bin/sh\necho 'RTNETLINK answers: Operation not supported' >&2\nexit 2\n")
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT)}
    result = lab(env)
    assert result.returncode == 1
    (failed,) = [line for line in result.stdout.splitlines() if line.startswith("lab failed: ")]
    assert failed.startswith("lab failed: `ip netns add efmoam-lab-a-")
    assert failed.endswith("` failed: RTNETLINK answers: Operation not supported")
    assert "Traceback" not in result.stdout + result.stderr
