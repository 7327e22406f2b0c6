"""Play mode (``efmoam replay FILE --as MAC``): cost per frame in-process.

A conversation of two speakers in SEND_ANY (one Information OAMPDU each per second),
trimmed every 100 frames by a gap of an hour: the engine runs on every frame and is
paused across every gap.  Run with ``pytest tests/bench --benchmark-enable``.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import pytest

from efmoam.offline.replay.play import run_play
from tests.replay.frames import A, conversation, write

FRAMES = 20_000


@pytest.mark.bench
def test_play_per_frame(benchmark: Any, tmp_path: Path) -> None:
    if benchmark.disabled:
        pytest.skip("a benchmark: run with --benchmark-enable")
    frames = [(t + (i // 100) * 3600.0, data) for i, (t, data) in enumerate(conversation(FRAMES // 2))]
    capture = write(tmp_path, frames)

    def play_file() -> int:
        with open(os.devnull, "w") as out:
            return run_play(str(capture), A, out, io.StringIO())

    assert benchmark.pedantic(play_file, rounds=3, iterations=1, warmup_rounds=1) in (0, 1)
    benchmark.extra_info["us_per_frame"] = round(benchmark.stats.stats.median / FRAMES * 1e6, 2)
