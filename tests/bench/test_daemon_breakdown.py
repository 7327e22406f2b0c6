"""`tests/bench/daemon_breakdown.py` runs: a smoke run of 8 ports (root), every probe reporting."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench.probe import PROBES
from tests.daemon.lab import missing_requirements

pytestmark = [pytest.mark.bench, pytest.mark.root]

SCRIPT = Path(__file__).with_name("daemon_breakdown.py")


def test_the_breakdown_reports_every_probe_of_a_running_daemon() -> None:
    reason = missing_requirements()
    if reason:
        pytest.skip(reason)
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--ports", "8", "--seconds", "2", "--signal-failure"],
        capture_output=True, text=True, timeout=300, cwd=SCRIPT.parents[2], check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    steady, _, failure = done.stdout.partition("the poll that read every port's failure")
    assert re.search(r"cpu \(utime \+ stime\) +\d+\.\d+ us/port-s", steady)
    for _module, _cls, _method, label in PROBES:
        if label.startswith("counters: ") and label != "counters: engine":
            continue  # the poll's own steps: in the failure's table
        match = re.search(rf"^  {re.escape(label)} +(\d+\.\d+) us/port-s +(\d+\.\d+) calls/port-s", steady, re.M)
        assert match, f"{label} missing:\n{done.stdout}"
        assert float(match[1]) > 0 and float(match[2]) > 0.3  # about a call a port-second: it ran
    for label in ("counters", "counters: engine", "counters: frames first", "send"):
        match = re.search(rf"^  {re.escape(label)} +\d+\.\d+ us/port +(\d+) calls", failure, re.M)
        assert match and int(match[1]) >= 8, f"{label}:\n{done.stdout}"
    assert re.search(r"from its first read to the last port's frames sent: \d+\.\d+ ms", failure)
