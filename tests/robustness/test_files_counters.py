"""The counter file, hostile: `FileSource.read` (every poll) raises only `CounterError`,
at once, carrying the last good values; once the file is good again it reads it.

Each read runs in a child process with a timeout and a memory limit
(`files_support.run_child`): a FIFO must not block it, /dev/zero must not fill memory.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from efmoam.core.linkmon.counters import CounterSample
from efmoam.linux.counters import FileSource
from efmoam.linux.files import COUNTER_FILE_LIMIT
from tests.robustness.files_support import PROMPT, make, run_child

GOOD = {
    ".json": '{"eth0": {"errored_frames": 3, "frames_received": 30}}',
    ".yaml": "eth0: {errored_frames: 3, frames_received: 30}\n",
}

KINDS = {
    ".json": ["dev_zero", "fifo", "directory", "socket", "too_large", "not_utf8", "deep_json"],
    ".yaml": [
        "dev_zero", "fifo", "directory", "socket", "too_large", "not_utf8", "deep_json", "deep_yaml_600",
        "deep_yaml_100000", "alias_bomb",
    ],
}  # fmt: skip

CASES = [(suffix, kind) for suffix, kinds in KINDS.items() for kind in kinds]

#: the source reads a good file, the file is replaced by the hostile one and read again,
#: then a good file comes back
READ = """
import os, shutil
from pathlib import Path
from efmoam.linux.counters import CounterError, FileSource
hostile, target, good = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
target.write_text(good)
source = FileSource(target)
first = source.read("eth0")
target.unlink()
os.rename(hostile, target)
started = time.monotonic()
try:
    value = source.read("eth0")
    outcome = {"outcome": "returned", "value": repr(value)}
except BaseException as exc:
    outcome = raised(exc)
    outcome["sample"] = repr(getattr(exc, "sample", None))
elapsed = time.monotonic() - started
provides = sorted(source.provides("eth0"))
shutil.rmtree(target) if target.is_dir() and not target.is_symlink() else target.unlink()
target.write_text(good.replace("3", "4"))
report(**outcome, first=repr(first), read_for=elapsed, provides=provides, recovered=repr(source.read("eth0")))
"""


@pytest.mark.parametrize(("suffix", "kind"), CASES)
def test_a_hostile_counter_file_is_a_counter_error_with_the_last_values(tmp_path: Path, suffix: str, kind: str) -> None:
    valid = GOOD[suffix] + ("\n" if suffix == ".json" else "#")
    path = make(kind, tmp_path / f"hostile{suffix}", valid=valid, padding_to=COUNTER_FILE_LIMIT + 1)
    result = run_child(READ, str(path), str(tmp_path / f"counters{suffix}"), GOOD[suffix])
    assert result["outcome"] == "raised", result
    assert result["type"] == "CounterError", result
    assert result["read_for"] < PROMPT, result
    assert result["lines"] == 1, result
    assert str(tmp_path / f"counters{suffix}") in result["message"], result
    assert result["first"] == result["sample"] == repr(CounterSample(errored_frames=3, frames_received=30))
    assert result["provides"] == ["errored_frames", "frames_received"]  # the last good values
    assert result["recovered"] == repr(CounterSample(errored_frames=4, frames_received=40))


@pytest.mark.parametrize(
    ("suffix", "kind"), [(".json", "deep_json"), (".yaml", "deep_yaml_600"), (".yaml", "deep_yaml_100000")]
)
def test_deep_nesting_is_named(tmp_path: Path, suffix: str, kind: str) -> None:
    path = make(kind, tmp_path / f"hostile{suffix}")
    result = run_child(READ, str(path), str(tmp_path / f"counters{suffix}"), GOOD[suffix])
    assert "nested too deeply" in result["message"], result


def test_a_file_at_the_limit_is_still_read(tmp_path: Path) -> None:
    path = make("too_large", tmp_path / "c.json", valid=GOOD[".json"] + "\n", padding_to=COUNTER_FILE_LIMIT)
    assert FileSource(path).read("eth0").frames_received == 30
