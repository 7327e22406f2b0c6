"""Start-up of the commands that read a file, in an empty and in a crowded network namespace.

Issue 18: importing scapy enumerates every interface of the namespace, so ``efmoam
decode`` of a one-frame capture took seconds and hundreds of MB among a thousand veths.
Each command runs as a fresh process that has entered the namespace (nsenter, which then
becomes python), on a one-frame capture or the default configuration: wall time from
spawn to exit, and peak RSS (GNU time's ``%M``).  The crowded namespace holds `PAIRS` veth
pairs (2,049 links with ``lo``), made with one ``ip -batch``; both namespaces are deleted
afterwards.

Set ``EFMOAM_BENCH_BEFORE`` to another tree of the project (``git archive REV | tar -x -C
DIR``) to measure it beside this one in the same run.  Measures, never asserts a time::

    EFMOAM_BENCH_BEFORE=/tmp/before pytest tests/bench/test_offline_startup_bench.py --benchmark-enable -s
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.bench.test_daemon_bench import report
from tests.linux.netns import ip, needs_root
from tests.unit.test_scapy_free_runtime import one_frame_capture

TIME = "/usr/bin/time"  # GNU time
pytestmark = [
    pytest.mark.bench,
    pytest.mark.root,
    needs_root,
    pytest.mark.skipif(not os.access(TIME, os.X_OK), reason=f"needs GNU time ({TIME})"),
]

ROOT = Path(__file__).resolve().parents[2]
PAIRS = 1024
RUNS = 3
#: what runs, by name: arguments to ``python``
COMMANDS = {
    "decode one frame": ["-m", "efmoam.cli", "decode", "one.pcap"],
    "replay one frame": ["-m", "efmoam.cli", "replay", "one.pcap"],
    "config check": ["-m", "efmoam.cli", "config", "check", "default.yaml"],
    "import pdu.codec": ["-c", "import pdu.codec"],
}


@contextmanager
def namespace(pairs: int) -> Iterator[str]:
    """A new network namespace holding `pairs` veth pairs (down), deleted on exit."""
    name = f"efmoam-startup-{os.urandom(3).hex()}"
    ip("netns", "add", name)
    try:
        if pairs:
            batch = "".join(f"link add s{i} type veth peer name t{i}\n" for i in range(pairs))
            subprocess.run(["ip", "-n", name, "-batch", "-"], input=batch, text=True, check=True, timeout=300)
        yield name
    finally:
        ip("netns", "delete", name)


def run_in(netns: str, tree: Path, args: list[str], cwd: Path) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of ``python ARGS`` with `tree` first on the path, in `netns`.

    GNU time forks the child and reads its peak RSS: a child forked from this process
    would count the pages it shares with it (pytest's 40 MB) as its own.
    """
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [TIME, "-f", "%M", "nsenter", f"--net=/run/netns/{netns}", sys.executable, *args]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - start
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return elapsed, int(done.stderr.split()[-1]) / 1024


def trees() -> dict[str, Path]:
    before = os.environ.get("EFMOAM_BENCH_BEFORE")
    return {"before": Path(before), "after": ROOT} if before else {"this tree": ROOT}


def test_offline_start_up_in_a_crowded_namespace(
    benchmark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if benchmark.disabled:
        pytest.skip("a benchmark: run with --benchmark-enable")
    one_frame_capture(tmp_path)
    (tmp_path / "default.yaml").write_text((ROOT / "config" / "default.yaml").read_text())
    results: dict[str, Any] = {}

    def measure() -> None:
        for pairs in (0, PAIRS):
            with namespace(pairs) as netns:
                for command, args in COMMANDS.items():
                    for side, tree in trees().items():
                        runs = [run_in(netns, tree, args, tmp_path) for _ in range(RUNS)]
                        seconds = statistics.median(run[0] for run in runs)
                        peak = max(run[1] for run in runs)
                        key = f"{pairs} veth pairs, {command}, {side}"
                        results[key] = f"{seconds:.3f} s, {peak:.0f} MB"

    benchmark.pedantic(measure, rounds=1, iterations=1)
    benchmark.extra_info.update(results)
    report(capsys, f"start-up (median of {RUNS}) and peak RSS (max), per namespace", results)
