"""Observe-mode replay: cost per frame in-process, and the issue's bars against tshark.

The captures are those of ``tests/bench/replay_vs_tshark.py`` (``steady``, ``distinct``:
every frame news, ``realistic``: another implementation's session repeated).  Run with
``pytest tests/bench --benchmark-enable``; ``tests/bench/replay_vs_tshark.py`` prints the
full comparison (with ``--baseline``, against another tree; and the peak RSS at
1,000,000 frames).
"""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from efmoam.offline.replay.report import run_observe
from tests.bench.decode_vs_tshark import write_pcap
from tests.bench.replay_vs_tshark import GENERATORS, RATIO, RSS_GROWTH, compare, generate, replay_command, run_measured

FRAMES = 20_000


@pytest.mark.bench
@pytest.mark.parametrize("json_output", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("scenario", sorted(GENERATORS))
def test_replay_per_frame(benchmark: Any, tmp_path: Path, scenario: str, json_output: bool) -> None:
    if benchmark.disabled:
        pytest.skip("a benchmark: run with --benchmark-enable")
    capture = tmp_path / f"{scenario}.pcap"
    write_pcap(capture, GENERATORS[scenario](FRAMES))

    def replay_file() -> int:
        with open(os.devnull, "w") as out:
            return run_observe(capture, out, io.StringIO(), json_output=json_output)

    assert benchmark.pedantic(replay_file, rounds=5, iterations=1, warmup_rounds=1) in (0, 1)
    benchmark.extra_info["us_per_frame"] = round(benchmark.stats.stats.median / FRAMES * 1e6, 2)


@pytest.mark.bench
@pytest.mark.tshark
@pytest.mark.skipif(shutil.which("tshark") is None, reason="needs tshark")
@pytest.mark.parametrize("scenario", sorted(GENERATORS))
def test_replay_time_next_to_tshark(benchmark: Any, tmp_path: Path, scenario: str) -> None:
    """Both on the same 100,000-frame capture; the ratio (target >= 2) is reported, not asserted."""
    if benchmark.disabled:
        pytest.skip("a benchmark: run with --benchmark-enable")
    capture = tmp_path / f"{scenario}.pcap"
    generate(capture, scenario, 100_000)
    results = benchmark.pedantic(compare, args=(capture, 3, None, tmp_path / "pycache"), rounds=1, iterations=1)
    ratio = results["tshark"][0] / results["replay"][0]
    benchmark.extra_info.update(
        ratio=round(ratio, 2), target=RATIO, **{name: round(r[0], 3) for name, r in results.items()}
    )


@pytest.mark.bench
def test_replay_memory_does_not_grow_with_the_capture(benchmark: Any, tmp_path: Path) -> None:
    if benchmark.disabled:
        pytest.skip("a benchmark: run with --benchmark-enable")
    captures = {}
    for frames in (100_000, 400_000):
        captures[frames] = tmp_path / f"steady-{frames}.pcap"
        generate(captures[frames], "steady", frames)

    def peak_rss() -> dict[int, int]:
        return {frames: run_measured(replay_command(path))[1] for frames, path in captures.items()}

    rss = benchmark.pedantic(peak_rss, rounds=1, iterations=1)
    benchmark.extra_info["peak_rss_kib"] = rss
    assert rss[400_000] - rss[100_000] < RSS_GROWTH, rss
