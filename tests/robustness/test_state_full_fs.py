"""`StateStore` on a file system that is full, or read-only: the write fails, is counted
(`save_failures`), kept (`last_error`), tried again at the next interval, and succeeds once
there is room; the file on disk stays the last one written; no temporary file is left.

The file systems are small tmpfs mounted in a private mount namespace (``unshare -m``),
so nothing is left mounted whatever happens; root ignores permissions, so read-only is
a ``remount,ro``, not a chmod.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.robustness.files_support import run_child

UNSHARE = ["unshare", "--mount", "--propagation", "private"]


def _can_unshare() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    done = subprocess.run([*UNSHARE, "true"], capture_output=True, timeout=30, check=False)
    return done.returncode == 0


pytestmark = pytest.mark.skipif(not _can_unshare(), reason="needs root and unshare --mount")

FULL = """
import os, subprocess
from efmoam.daemon.state import StateStore
mountpoint = sys.argv[1]
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", mountpoint], check=True)
store = StateStore(os.path.join(mountpoint, "state"))
small = {"version": 2, "next_index": 1, "log": [], "active": []}
big = {**small, "padding": "x" * 65536}
steps = {}
store.update("eth0", small, 0.0)
steps["first"] = store.flush(0.0)
store.update("eth0", big, 5.0)
steps["full"] = store.flush(5.0)
steps["after_full"] = [store.saves, store.save_failures, store.dirty, store.last_error, store.last_failed_at]
with open(store.path) as stream:
    steps["on_disk"] = json.load(stream)["ports"]["eth0"] == small
steps["listing"] = sorted(os.listdir(store.path.parent))
steps["not_due"] = [store.flush(5.5), store.save_failures]
steps["retried"] = [store.flush(6.0), store.save_failures, store.next_deadline()]
try:
    store.save(6.2)
    steps["save"] = "saved"
except OSError as exc:
    steps["save"] = f"OSError: {exc.strerror}"
store.update("eth0", {**small, "next_index": 2}, 6.5)
steps["room_again"] = [store.flush(7.2), store.saves, store.save_failures, store.last_error, store.dirty]
with open(store.path) as stream:
    steps["final"] = json.load(stream)["ports"]["eth0"]["next_index"]
report(outcome="returned", **steps)
"""


def test_a_full_file_system(tmp_path: Path) -> None:
    result = run_child(FULL, str(tmp_path), wrapper=UNSHARE)
    assert result["outcome"] == "returned", result
    assert result["first"] is True
    assert result["full"] is False
    saves, failures, dirty, error, failed_at = result["after_full"]
    assert (saves, failures, dirty, failed_at) == (1, 1, True, 5.0)
    assert error.endswith("No space left on device")
    assert result["on_disk"] is True  # the last file written is still there, whole
    assert result["listing"] == ["state.json"]  # no temporary file left to take the room
    assert result["not_due"] == [False, 1]
    assert result["retried"] == [False, 2, 7.0]
    assert result["save"] == "OSError: No space left on device"
    assert result["room_again"] == [True, 2, 3, None, False]
    assert result["final"] == 2


READ_ONLY = """
import os, subprocess
from efmoam.daemon.state import StateStore
mountpoint = sys.argv[1]
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mountpoint], check=True)
store = StateStore(mountpoint)
store.update("eth0", {"n": 1}, 0.0)
steps = {"first": store.flush(0.0)}
subprocess.run(["mount", "-o", "remount,ro", mountpoint], check=True)
store.update("eth0", {"n": 2}, 3.0)
steps["read_only"] = [store.flush(3.0), store.save_failures, store.last_error]
subprocess.run(["mount", "-o", "remount,rw", mountpoint], check=True)
steps["too_soon"] = store.flush(3.5)
steps["writable"] = [store.flush(4.0), store.saves, store.last_error]
with open(store.path) as stream:
    steps["final"] = json.load(stream)["ports"]["eth0"]
report(outcome="returned", **steps)
"""


def test_a_read_only_file_system(tmp_path: Path) -> None:
    result = run_child(READ_ONLY, str(tmp_path), wrapper=UNSHARE)
    assert result["outcome"] == "returned", result
    assert result["first"] is True
    written, failures, error = result["read_only"]
    assert (written, failures) == (False, 1)
    assert "Read-only file system" in error
    assert result["too_soon"] is False
    assert result["writable"] == [True, 2, None]
    assert result["final"] == {"n": 2}


def test_nothing_stayed_mounted(tmp_path: Path) -> None:
    run_child(READ_ONLY, str(tmp_path), wrapper=UNSHARE)
    with open("/proc/self/mountinfo") as stream:
        assert str(tmp_path) not in stream.read()
