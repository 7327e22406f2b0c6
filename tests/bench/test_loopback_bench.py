"""Remote loopback changes and the event loop (root, nftables): daemon A starts and stops
remote loopback of daemon B `CYCLES` times, waiting each time until A reports the new
status (and, where the tree has it, no change on its way).  Reported for B: its loop's
busy seconds over the run, its longest wake-up, and the slowest ``show_port`` it answered
meanwhile (asked between A's checks).  Measures, never asserts a time:

    pytest tests/bench/test_loopback_bench.py --benchmark-enable -s

With ``EFMOAM_BENCH_BASELINE=DIR`` (another tree, e.g. ``git archive REV | tar -x -C DIR``)
the same is measured with that tree's daemons right after, side by side.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.lab import Lab, missing_requirements

pytestmark = [pytest.mark.bench, pytest.mark.root]

CYCLES = 10


def measure(workdir: Path, tree: str | None) -> dict[str, Any]:
    lab = Lab(workdir)
    try:
        if tree is not None:
            for daemon in lab.daemons:
                daemon.python = ["env", f"PYTHONPATH={Path(tree).resolve()}", sys.executable, "-P"]
        lab.b.overrides = {"defaults": {"loopback": "process"}}
        lab.start()
        before = lab.b.query("show_ports")["daemon"]["loop"]
        began, slowest_show = time.monotonic(), 0.0
        for _ in range(CYCLES):
            for enable, status in ((True, "remoteLoopback"), (False, "noLoopback")):
                lab.a.query("loopback", port="veth0", enable=enable)
                give_up = time.monotonic() + 30
                while True:
                    assert time.monotonic() < give_up, f"A never reported {status}"
                    asked = time.monotonic()
                    lab.b.fast_port()
                    slowest_show = max(slowest_show, time.monotonic() - asked)
                    a = lab.a.fast_port()
                    if a["loopback"]["status"] == status and not a.get("loopback_plane", {}).get("pending"):
                        break
                    time.sleep(0.01)
        took = time.monotonic() - began
        after = lab.b.query("show_ports")["daemon"]["loop"]
        return {
            "changes": 2 * CYCLES,
            "seconds": round(took, 2),
            "B busy seconds": round(after["busy_seconds"] - before["busy_seconds"], 3),
            "B longest wake-up ms": round(1e3 * after["longest_wakeup_seconds"], 1),
            "B show_port slowest ms": round(1e3 * slowest_show, 1),
        }
    finally:
        lab.close()


def test_loopback_changes_and_the_loop(benchmark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if benchmark.disabled:
        pytest.skip("a benchmark: run with --benchmark-enable")
    reason = missing_requirements()
    if reason:
        pytest.skip(reason)
    (tmp_path / "this").mkdir()
    results = {"this tree": measure(tmp_path / "this", None)}
    baseline = os.environ.get("EFMOAM_BENCH_BASELINE")
    if baseline:
        (tmp_path / "baseline").mkdir()
        results[f"baseline {baseline}"] = measure(tmp_path / "baseline", baseline)
    with capsys.disabled():
        for name, figures in results.items():
            print(f"\n--- loopback changes, {name}")
            for key, value in figures.items():
                print(f"    {key}: {value}")
