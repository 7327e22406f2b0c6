"""`StateStore` writes coalesced: a port whose snapshot changes a thousand times in half a
second costs one or two writes, not a thousand fsyncs in the event loop; a failed write
is counted, kept and tried again at the next interval; the file keeps its format."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from efmoam.daemon.state import StateStore


def snapshot(n: int) -> dict[str, Any]:
    return {"version": 2, "next_index": n + 1, "log": [{"index": n, "active": True}], "active": []}


def on_disk(store: StateStore) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(store.path.read_text())
    return data


def test_a_thousand_updates_in_half_a_second_are_one_or_two_writes(tmp_path: Path) -> None:
    store = StateStore(str(tmp_path))
    inodes, mtimes = set(), set()
    now = 1000.0
    for n in range(1000):
        now = 1000.0 + n * 0.0005  # 1,000 updates within 0.5 s, each wake-up followed by a flush
        store.update("eth0", snapshot(n), now)
        store.flush(now)
        status = store.path.stat()
        inodes.add(status.st_ino)
        mtimes.add(status.st_mtime_ns)
    assert store.saves == 1  # the first change at once, the rest wait for the interval
    assert len(inodes) == 1 and len(mtimes) == 1
    assert store.dirty and store.next_deadline() == 1001.0
    assert not store.flush(now)
    assert store.flush(1001.0)
    assert store.saves == 2 and not store.dirty and store.next_deadline() is None
    assert on_disk(store) == {"version": 1, "ports": {"eth0": snapshot(999)}}
    assert store.last_saved_at == 1001.0


def test_the_deadline(tmp_path: Path) -> None:
    store = StateStore(str(tmp_path), min_interval=2.0)
    assert store.next_deadline() is None
    store.update("eth0", snapshot(0))
    assert store.next_deadline() == -math.inf  # no time given, never written: at once
    store.update("eth0", snapshot(1), 50.0)
    assert store.next_deadline() == 50.0
    assert store.flush(50.0)
    assert store.next_deadline() is None
    store.update("eth0", snapshot(2), 51.0)
    assert store.next_deadline() == 52.0  # min_interval after the last write
    assert not store.flush(51.9)
    assert store.flush(52.0)
    store.update("eth0", snapshot(3), 60.0)  # long after: at once
    assert store.next_deadline() == 60.0


def test_flush_force_writes_at_once(tmp_path: Path) -> None:
    store = StateStore(str(tmp_path))
    store.update("eth0", snapshot(0), 10.0)
    assert store.flush(10.0)
    store.update("eth0", snapshot(1), 10.1)
    assert not store.flush(10.1)
    assert store.flush(10.1, force=True)
    assert on_disk(store)["ports"]["eth0"] == snapshot(1)
    assert not store.flush(10.2, force=True)  # clean: nothing to write


def test_save_writes_even_when_clean(tmp_path: Path) -> None:
    store = StateStore(str(tmp_path / "new"), clock=lambda: 77.0)
    store.save()
    assert on_disk(store) == {"version": 1, "ports": {}}
    assert (store.saves, store.last_saved_at) == (1, 77.0)


def test_an_unchanged_snapshot_is_not_a_change(tmp_path: Path) -> None:
    store = StateStore(str(tmp_path))
    store.update("eth0", snapshot(0), 1.0)
    store.flush(1.0)
    store.update("eth0", snapshot(0), 5.0)  # equal, another object
    assert not store.dirty and not store.flush(5.0)


def test_forget(tmp_path: Path) -> None:
    store = StateStore(str(tmp_path))
    store.update("eth0", snapshot(0), 1.0)
    store.update("eth1", snapshot(1), 1.0)
    store.flush(1.0)
    store.forget("eth0", 3.0)
    store.forget("eth7", 3.0)  # unknown: nothing
    assert store.flush(3.0)
    assert on_disk(store) == {"version": 1, "ports": {"eth1": snapshot(1)}}
    store.forget("eth7", 9.0)
    assert not store.dirty


def test_the_format_is_what_json_dump_wrote(tmp_path: Path) -> None:
    store = StateStore(str(tmp_path))
    ports = {"eth0": snapshot(0), "ens1f0": snapshot(5), "é": {"text": "ünïcode", "list": [1.5, None, True]}}
    for name, value in ports.items():
        store.update(name, value, 0.0)
    store.save()
    expected = json.dumps({"version": 1, "ports": ports}, separators=(",", ":"))
    assert store.path.read_text() == expected
    reloaded = StateStore(str(tmp_path))
    assert reloaded.load() is None
    assert reloaded.ports == ports
    reloaded.update("eth0", snapshot(9), 0.0)  # a port changed: only it is encoded again, the file is whole
    reloaded.save()
    assert on_disk(reloaded) == {"version": 1, "ports": {**ports, "eth0": snapshot(9)}}


def test_no_temporary_file_is_left(tmp_path: Path) -> None:
    store = StateStore(str(tmp_path))
    for n in range(5):
        store.update("eth0", snapshot(n), float(n))
        store.flush(float(n))
    assert sorted(os.listdir(tmp_path)) == ["state.json"]


def test_a_symbolic_link_or_fifo_at_the_temporary_name_is_not_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("untouched")
    (tmp_path / "state.tmp").symlink_to(victim)
    store = StateStore(str(tmp_path))
    store.update("eth0", snapshot(0), 0.0)
    assert store.flush(0.0)
    assert victim.read_text() == "untouched"
    os.mkfifo(tmp_path / "state.tmp")
    store.update("eth0", snapshot(1), 5.0)
    assert store.flush(5.0)  # a FIFO there would block a plain open for writing
    assert on_disk(store)["ports"]["eth0"] == snapshot(1)


def test_a_failed_write_is_counted_kept_and_retried(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the state directory should be")
    store = StateStore(str(blocker / "state"))
    store.update("eth0", snapshot(0), 10.0)
    assert not store.flush(10.0)  # never raises
    assert (store.saves, store.save_failures, store.dirty) == (0, 1, True)
    assert store.last_error is not None and "Not a directory" in store.last_error
    assert store.last_failed_at == 10.0
    assert store.next_deadline() == 11.0
    assert not store.flush(10.5)
    assert store.save_failures == 1  # not tried before the interval
    with pytest.raises(OSError, match="Not a directory"):
        store.save(10.6)
    assert store.save_failures == 2
    blocker.unlink()
    assert store.flush(11.6)
    assert (store.saves, store.save_failures, store.dirty) == (1, 2, False)
    assert store.last_error is None
    assert on_disk(store)["ports"]["eth0"] == snapshot(0)


def test_a_snapshot_that_cannot_be_encoded_is_a_failure_not_a_crash(tmp_path: Path) -> None:
    store = StateStore(str(tmp_path))
    store.update("eth0", {"not json": object()}, 0.0)
    assert not store.flush(0.0)
    assert store.save_failures == 1 and store.last_error is not None and "TypeError" in store.last_error
    with pytest.raises(OSError, match="state not written"):
        store.save()
