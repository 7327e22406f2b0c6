"""Cost of one counter poll of N ports from one counter file, before and after issue 18.

One JSON file holds the three standard counters of N ports (N = 16, 256, 1,024); a poll
reads every port once, as the daemon does.  Side by side in one run:

* ``reload-per-port``: the old `FileSource`, reproduced here only: every read loads,
  parses and validates the whole file (N loads a poll),
* ``changed``: `FileSource.read` per port, the file replaced by rename 30 ms before the
  poll (the daemon lab's way): one load, then a stat per read,
* ``changed-just-now``: the same, the poll starting at once after the rename: the reads
  within a clock tick of the change compare the file's bytes again (not parsed again),
* ``unchanged``: `FileSource.read` per port, the file as at the last poll: a stat per read.

The figures to read are ``ms_per_poll`` and ``us_per_port`` in ``extra_info``.  Measures,
never asserts a time.  Run with ``pytest tests/bench/test_file_source_bench.py --benchmark-enable``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from efmoam.core.linkmon.counters import COUNTERS, CounterSample
from efmoam.linux.counters import FileSource, _parse_document, _read_document, validate_counters

pytestmark = pytest.mark.bench

SIZES = [16, 256, 1024]
METHODS = ["reload-per-port", "changed", "changed-just-now", "unchanged"]


def write_by_rename(path: Path, ports: int, generation: int) -> None:
    document = {
        f"port{i}": {"errored_frames": generation + i, "frames_received": 1000 * generation + i, "symbol_errors": 0}
        for i in range(ports)
    }
    fresh = path.with_name(path.name + ".new")
    fresh.write_text(json.dumps(document, indent=4))
    os.rename(fresh, path)


def reload_per_port(path: Path) -> Callable[[str], CounterSample]:
    """The read of the old `FileSource`: the whole file loaded for every port."""

    def read(ifname: str) -> CounterSample:
        ports = validate_counters(_parse_document(_read_document(path), path), path)
        counters = ports.get(ifname, {})
        return CounterSample(**{name: counters.get(name) for name in COUNTERS})

    return read


@pytest.mark.parametrize("ports", SIZES)
@pytest.mark.parametrize("method", METHODS)
def test_one_poll_of_n_ports_from_one_file(benchmark: Any, tmp_path: Path, method: str, ports: int) -> None:
    path = tmp_path / "counters.json"
    names = [f"port{i}" for i in range(ports)]
    generation = [1]
    write_by_rename(path, ports, generation[0])
    source = FileSource(path)
    read = reload_per_port(path) if method == "reload-per-port" else source.read

    def before_poll() -> None:
        if method in ("changed", "changed-just-now"):
            generation[0] += 1
            write_by_rename(path, ports, generation[0])
        if method != "changed-just-now":
            time.sleep(0.03)  # more than a clock tick since the last change

    def poll() -> list[CounterSample]:
        return [read(name) for name in names]

    rounds = 3 if method == "reload-per-port" and ports == 1024 else 20
    samples = benchmark.pedantic(poll, setup=before_poll, rounds=rounds, iterations=1, warmup_rounds=1)
    expected = generation[0] + ports - 1
    assert samples[-1] == CounterSample(expected, 1000 * generation[0] + ports - 1, 0)
    if benchmark.stats is not None:
        benchmark.extra_info["ports"] = ports
        benchmark.extra_info["ms_per_poll"] = round(benchmark.stats.stats.mean * 1e3, 3)
        benchmark.extra_info["us_per_port"] = round(benchmark.stats.stats.mean / ports * 1e6, 2)
