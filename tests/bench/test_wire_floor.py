"""`tests/bench/wire_floor.py` runs: a smoke run of 8 ports (root), each design speaking both ways."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.daemon.lab import missing_requirements

pytestmark = [pytest.mark.bench, pytest.mark.root]

SCRIPT = Path(__file__).with_name("wire_floor.py")


def test_each_design_sends_and_reads_a_frame_a_port_second() -> None:
    reason = missing_requirements()
    if reason:
        pytest.skip(reason)
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--ports", "8", "--seconds", "5"],
        capture_output=True, text=True, timeout=300, cwd=SCRIPT.parents[2], check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    for design in ("per-port", "shared"):
        cpu = re.search(rf"^  {design} +cpu \(utime \+ stime\) +(\d+\.\d+) us/port-s", done.stdout, re.M)
        frames = re.search(rf"^  {design} +frames +sent (\d+\.\d+), read (\d+\.\d+) a port-second", done.stdout, re.M)
        assert cpu and frames, done.stdout
        # a frame a port-second each way (read: what the peer sent); a port sends 5 +- 1 in the window
        assert 0.7 < float(frames[1]) < 1.3 and 0.7 < float(frames[2]) < 1.3, done.stdout
    assert re.search(r"^  per-port +one send, one recv +\d+\.\d+ us, \d+\.\d+ us", done.stdout, re.M)
