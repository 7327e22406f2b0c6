"""How fast the CLI answers an operator (root): from process start to its first output,
against a running daemon, for ``efmoam show port`` (its table on stdout) and ``efmoam
watch`` (its "watching" line on stderr, written once the daemon confirmed the watch).
Target: under 100 ms.  ``efmoam --version`` (no daemon, no import beyond click) is the
interpreter's floor.  Measures, never asserts a time:

    pytest tests/bench/test_cli_startup_bench.py --benchmark-enable

What the CLI imports is checked in tests/cli/test_light_imports.py (no scapy, yaml or
daemon for these commands).
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.bench.test_daemon_bench import report, requirements, running_lab, spread
from tests.daemon.lab import PYTHON, ROOT

pytestmark = [pytest.mark.bench, pytest.mark.root]
__all__ = ["requirements"]  # the fixture, used by name


def first_output(args: list[str], *, on_stderr: bool = False) -> float:
    """Seconds from spawning ``python -m efmoam.cli ARGS`` to its first byte of output."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    proc = subprocess.Popen(
        [PYTHON, "-m", "efmoam.cli", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT
    )
    stream = proc.stderr if on_stderr else proc.stdout
    assert stream is not None
    first = stream.read(1)
    elapsed = time.perf_counter() - start
    assert first, (proc.wait(), proc.stderr.read() if proc.stderr else b"")
    proc.kill()
    proc.communicate()
    return elapsed


def test_cli_start_up(benchmark: Any, requirements: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    times = 20 if not benchmark.disabled else 3
    with running_lab(tmp_path) as lab:
        lab.start(lab.a, operational=False)
        socket = lab.a.socket

        def measure() -> dict[str, Any]:
            runs = {
                "show port": lambda: first_output(["show", "port", "--socket", socket]),
                "show port veth0": lambda: first_output(["show", "port", "veth0", "--socket", socket]),
                "watch": lambda: first_output(["watch", "--socket", socket], on_stderr=True),
                "--version (the floor)": lambda: first_output(["--version"]),
            }
            return {name: spread([run() for _ in range(times)]) for name, run in runs.items()}

        results = benchmark.pedantic(measure, rounds=1, iterations=1)
        benchmark.extra_info.update(results)
        report(capsys, "efmoam CLI, process start to first output, ms (target < 100 ms)", results)
