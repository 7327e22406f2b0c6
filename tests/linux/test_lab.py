"""`efmoam lab` runs its whole walk-through and leaves nothing behind."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tests.linux.netns import needs_root

pytestmark = [
    needs_root,
    pytest.mark.skipif(shutil.which("nft") is None or shutil.which("ping") is None, reason="needs nft and ping"),
]


def namespaces() -> set[str]:
    output = subprocess.run(["ip", "netns", "list"], check=True, capture_output=True, text=True).stdout
    return {line.split()[0] for line in output.splitlines() if line.strip()}


def test_lab_walks_through_degrade_failure_clear_and_recovery() -> None:
    before = namespaces()
    result = subprocess.run(
        [sys.executable, "-m", "efmoam.cli", "lab"], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    steps = [line for line in out.splitlines() if line.startswith("### ")]
    assert len(steps) == 5
    assert "ping across the pair now fails; OAM still operational" in out
    assert "remote erroredFrameEvent" in out
    assert out.count("ping across the pair: ok") == 2
    assert "Ethernet OAM (802.3ah) laba" in out  # show port output at the steps
    assert not any(name.startswith("efmoam-lab-") for name in namespaces() - before)
