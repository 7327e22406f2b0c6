"""In-process cost of ``efmoam decode --json`` per frame (no interpreter start-up).

The same two-speaker captures as ``tests/bench/decode_vs_tshark.py`` (which compares
the whole command with tshark); the figure to read is ``extra_info["us_per_frame"]``.

Run with ``pytest tests/bench --benchmark-enable``.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import pytest

from efmoam.offline.decode import EXIT_OK, run_decode
from tests.bench.decode_vs_tshark import SCENARIOS, write_pcap

FRAMES = 20_000


@pytest.mark.bench
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_decode_json_per_frame(benchmark: Any, tmp_path: Path, scenario: str) -> None:
    if benchmark.disabled:
        pytest.skip("a benchmark: run with --benchmark-enable")
    capture = tmp_path / f"{scenario}.pcap"
    write_pcap(capture, SCENARIOS[scenario](FRAMES))

    def decode_file() -> int:
        with open(os.devnull, "w") as out:
            return run_decode(capture, out, io.StringIO(), json_output=True)

    assert benchmark.pedantic(decode_file, rounds=5, iterations=1, warmup_rounds=1) == EXIT_OK
    benchmark.extra_info["us_per_frame"] = round(benchmark.stats.stats.median / FRAMES * 1e6, 2)
