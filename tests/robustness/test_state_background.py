"""`StateStore(background=True)`, the daemon's: the file's write, fsync and rename run on a
worker thread, so a slow or stalled disk never holds the loop.  One write in flight at
most; its outcome is counted once taken in; a change made while it was in flight keeps
the store dirty; `save` (shutdown) waits for it at most its timeout.

The stalled disk is real: a small ext4 image on a loop device, frozen with ``fsfreeze``
in a private mount namespace.  Writes to a frozen file system block in the kernel until
it is thawed; the child thaws it in a ``finally`` and from a watchdog thread, so nothing
stays frozen whatever the store does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from efmoam.daemon.state import StateStore
from tests.robustness.files_support import _PRELUDE as PRELUDE, run_child

UNSHARE = ["unshare", "--mount", "--propagation", "private"]


def snapshot(n: int) -> dict[str, Any]:
    return {"version": 2, "next_index": n + 1, "log": [{"index": n, "active": True}], "active": []}


def settled(store: StateStore, timeout: float = 10.0) -> StateStore:
    """`store` once its background write has an outcome (taken in by reading `writing`)."""
    deadline = time.monotonic() + timeout
    while store.writing:
        assert time.monotonic() < deadline, "the background write did not finish"
        time.sleep(0.002)
    return store


def test_a_background_write_is_counted_once_it_is_done(tmp_path: Path) -> None:
    store = StateStore(str(tmp_path), background=True)
    store.update("eth0", snapshot(0), 10.0)
    assert store.flush(10.0)
    assert settled(store).saves == 1 and not store.dirty and store.last_saved_at == 10.0
    assert json.loads(store.path.read_text())["ports"]["eth0"] == snapshot(0)
    assert store.next_deadline() is None


def test_a_change_made_while_the_write_is_in_flight_stays_dirty(tmp_path: Path) -> None:
    store = StateStore(str(tmp_path), background=True)
    store.update("eth0", snapshot(0), 10.0)
    assert store.flush(10.0)
    store.update("eth0", snapshot(1), 10.1)  # after the content was made: not in this write
    assert settled(store).saves == 1
    assert store.dirty and store.next_deadline() == 11.0
    assert store.flush(11.0)
    assert settled(store).saves == 2 and not store.dirty
    assert json.loads(store.path.read_text())["ports"]["eth0"] == snapshot(1)


def test_a_failed_background_write_is_counted_and_retried(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the state directory should be")
    store = StateStore(str(blocker / "state"), background=True)
    store.update("eth0", snapshot(0), 10.0)
    assert store.flush(10.0)  # began
    settled(store)
    assert (store.saves, store.save_failures, store.dirty, store.last_failed_at) == (0, 1, True, 10.0)
    assert store.last_error is not None and "Not a directory" in store.last_error
    assert not store.flush(10.5) and not store.writing  # not tried again before the interval
    with pytest.raises(OSError, match="Not a directory"):
        store.save(10.6, timeout=5)
    assert store.save_failures == 2
    blocker.unlink()
    assert store.flush(11.6)
    assert (settled(store).saves, store.save_failures, store.dirty, store.last_error) == (1, 2, False, None)
    store.save(12.0, timeout=5)
    assert store.saves == 2 and store.last_saved_at == 12.0


def _can_freeze() -> bool:
    return (
        os.geteuid() == 0
        and all(shutil.which(tool) for tool in ("unshare", "fsfreeze", "mkfs.ext4", "losetup"))
        and subprocess.run([*UNSHARE, "true"], capture_output=True, timeout=30, check=False).returncode == 0
    )


FROZEN = """
import os, subprocess, tempfile, threading
from efmoam.daemon.state import StateStore
workdir = sys.argv[1]
image, mountpoint = os.path.join(workdir, "fs.img"), os.path.join(workdir, "mnt")
os.mkdir(mountpoint)
with open(image, "wb") as stream:
    stream.truncate(8 * 1024 * 1024)
subprocess.run(["mkfs.ext4", "-q", "-F", image], check=True, capture_output=True)
if subprocess.run(["mount", "-o", "loop", image, mountpoint], capture_output=True).returncode != 0:
    report(outcome="no loop device")
    sys.exit(0)
thawed = threading.Event()
def thaw():
    if not thawed.is_set():
        thawed.set()
        subprocess.run(["fsfreeze", "-u", mountpoint], capture_output=True)
watchdog = threading.Timer(8.0, thaw)  # whatever the store does, the disk thaws
watchdog.daemon = True
watchdog.start()
steps = {}
try:
    store = StateStore(os.path.join(mountpoint, "state"), background=True)
    store.update("eth0", {"n": 1}, 0.0)
    store.flush(0.0)
    store.save(0.5, timeout=5)
    subprocess.run(["fsfreeze", "-f", mountpoint], check=True)
    store.update("eth0", {"n": 2}, 2.0)
    began = time.monotonic()
    steps["flush"] = store.flush(2.0)
    steps["flush_ms"] = (time.monotonic() - began) * 1e3
    time.sleep(0.3)
    steps["frozen"] = [store.writing, store.saves, store.dirty, store.save_failures]
    store.update("eth0", {"n": 3}, 3.0)
    began = time.monotonic()
    steps["again"] = [store.flush(3.0), store.next_deadline()]  # one write in flight at most
    try:
        store.save(3.5, timeout=0.3)
        steps["save"] = "returned"
    except OSError as exc:
        steps["save"] = str(exc)
    steps["save_ms"] = (time.monotonic() - began) * 1e3
    thaw()
    deadline = time.monotonic() + 10
    while store.writing and time.monotonic() < deadline:
        time.sleep(0.01)
    steps["thawed"] = [store.writing, store.saves, store.dirty, store.save_failures]
    with open(store.path) as stream:
        steps["on_disk"] = json.load(stream)["ports"]["eth0"]
    store.save(5.0, timeout=5)
    with open(store.path) as stream:
        steps["final"] = json.load(stream)["ports"]["eth0"]
finally:
    thaw()
report(outcome="returned", **steps)
"""


@pytest.mark.skipif(not _can_freeze(), reason="needs root, unshare --mount, fsfreeze and mkfs.ext4")
def test_a_frozen_file_system_does_not_hold_the_caller(tmp_path: Path) -> None:
    result = run_child(FROZEN, str(tmp_path), wrapper=UNSHARE)
    if result["outcome"] == "no loop device":
        pytest.skip("no loop device here")
    assert result["outcome"] == "returned", result
    assert result["flush"] is True and result["flush_ms"] < 100, result  # the write began; the disk holds it
    assert result["frozen"] == [True, 2, True, 0]  # in flight: not counted, the store still dirty
    assert result["again"] == [False, 4.0]  # no second write while one is in flight; looked at again later
    assert result["save"] == "state not written: the write in flight did not finish within 0.3 s"
    assert 250 < result["save_ms"] < 2000
    assert result["thawed"] == [False, 3, True, 0]  # written once thawed; the change at 3.0 is still to write
    assert result["on_disk"] == {"n": 2}
    assert result["final"] == {"n": 3}


STUCK_AT_EXIT = """
import atexit, os, subprocess
from efmoam.daemon.state import StateStore
mountpoint = sys.argv[1]
store = StateStore(os.path.join(mountpoint, "state"), background=True)
store.update("eth0", {"n": 1}, 0.0)
store.save(0.0, timeout=5)
subprocess.run(["fsfreeze", "-f", mountpoint], check=True)
store.update("eth0", {"n": 2}, 1.0)
try:
    store.save(1.0, timeout=0.2)  # the shutdown's save gives up on the stuck write
    gave_up = None
except OSError as exc:
    gave_up = str(exc)
atexit.register(lambda: print(json.dumps({"finalized": time.time()}), flush=True))
report(outcome="returned", gave_up=gave_up, exiting=time.time())
"""

#: in a private mount namespace: the file system, the child, and its thaw 3 s on by this
#: shell whatever the child does (a process whose thread is stuck on a frozen file system
#: cannot end, nor can its own threads thaw it once its interpreter is finalizing)
STUCK_SHELL = """
set -e
mkfs.ext4 -q -F "$1/fs.img"
mkdir "$1/mnt"
mount -o loop "$1/fs.img" "$1/mnt" || { echo '{"outcome": "no loop device"}'; exit 0; }
trap 'fsfreeze -u "$1/mnt" 2>/dev/null || true' EXIT
"$2" -c "$3" "$1/mnt" &
child=$!
sleep 3
fsfreeze -u "$1/mnt" 2>/dev/null || true
echo "{\\"thawed\\": $(date +%s.%N)}"
wait $child
"""


@pytest.mark.skipif(not _can_freeze(), reason="needs root, unshare --mount, fsfreeze and mkfs.ext4")
def test_a_write_stuck_on_the_disk_does_not_hold_the_exit(tmp_path: Path) -> None:
    """The daemon exits once `save` gave up: the interpreter's exit does not wait for a
    write the disk holds (it would for an executor's worker)."""
    with open(tmp_path / "fs.img", "wb") as stream:
        stream.truncate(8 * 1024 * 1024)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    command = [*UNSHARE, "sh", "-c", STUCK_SHELL, "sh", str(tmp_path), sys.executable, PRELUDE + STUCK_AT_EXIT]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env, check=False)
    records: dict[str, Any] = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            records.update(json.loads(line))
    if records.get("outcome") == "no loop device":
        pytest.skip("no loop device here")
    assert records.get("outcome") == "returned", (done.stdout, done.stderr[-2000:])
    assert records["gave_up"] == "state not written: the write did not finish within 0.2 s"
    assert records["finalized"] < records["thawed"], records  # the exit did not wait for the disk
    assert records["finalized"] - records["exiting"] < 1.0, records
