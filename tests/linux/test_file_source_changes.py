"""`FileSource` reads its file only when it changed, and still sees every change (issue 18).

A poll of N ports must cost one load of the file, not N; yet a read must reflect the
file as it is then: after a rename over it (a new inode, even with the same size and
mtime), after a rewrite in place of the same size, after a rewrite that breaks it or a
removal.  A rewrite in place within the same time stamp and of the same size changes
nothing stat shows: it is tested on a real ext2 file system with whole-second stamps.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from efmoam.core.linkmon.counters import CounterSample
from efmoam.linux import counters
from efmoam.linux.counters import CounterError, FileSource


def document(errored: int, ports: int = 1) -> bytes:
    """A counter file of `ports` ports whose size does not depend on the 4-digit `errored`."""
    assert 1000 <= errored <= 9999
    return b"{" + b", ".join(b'"eth%d": {"errored_frames": %d}' % (i, errored) for i in range(ports)) + b"}"


def rewrite_in_place(path: Path, data: bytes) -> None:
    """Overwrite the file's bytes without truncating it (the inode and the size stay)."""
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def rewrite_by_rename(path: Path, data: bytes, *, keep_mtime: bool = False) -> None:
    """Write a new file next to it and rename it over (a new inode)."""
    fresh = path.with_name(path.name + ".new")
    fresh.write_bytes(data)
    if keep_mtime:
        old = os.stat(path)
        os.utime(fresh, ns=(old.st_atime_ns, old.st_mtime_ns))
    os.rename(fresh, path)


def age() -> None:
    """Let the file's last change fall behind the kernel's stamping clock (it moves once a
    tick, 10 ms at the slowest) by more than the stamp step of tmp_path's file system."""
    time.sleep(0.03)


class Calls:
    """How often the source read the file's bytes and parsed them (the real functions run)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.reads = self.parses = 0
        monkeypatch.setattr(counters, "_read_document", self._counting("reads", counters._read_document))
        monkeypatch.setattr(counters, "_parse_document", self._counting("parses", counters._parse_document))

    def _counting(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any) -> Any:
            setattr(self, name, getattr(self, name) + 1)
            return function(*args)

        return counted

    def take(self) -> tuple[int, int]:
        counts = (self.reads, self.parses)
        self.reads = self.parses = 0
        return counts


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Calls:
    return Calls(monkeypatch)


def test_a_poll_of_many_ports_loads_a_changed_file_once_and_an_unchanged_one_never(
    tmp_path: Path, calls: Calls
) -> None:
    path = tmp_path / "c.json"
    path.write_bytes(document(1000, ports=256))
    source = FileSource(path)
    names = [f"eth{i}" for i in range(256)]
    age()
    assert {source.read(name).errored_frames for name in names} == {1000}
    assert calls.take() == (1, 1)
    assert {source.read(name).errored_frames for name in names} == {1000}
    assert calls.take() == (0, 0)  # unchanged: one stat per read, nothing else
    rewrite_by_rename(path, document(2000, ports=256))
    age()
    assert {source.read(name).errored_frames for name in names} == {2000}
    assert calls.take() == (1, 1)


def test_a_poll_looks_at_the_file_once_and_the_next_poll_sees_a_rewrite_made_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`read_at` with the poll's start: one look (a stat) serves every port of the poll (the
    daemon's poll, `max_age` half its interval); the next poll looks again; an unreadable
    file fails every read of the poll that looked, with each port's last values."""
    path = tmp_path / "c.json"
    path.write_bytes(document(1000, ports=64))
    source = FileSource(path, max_age=0.5)
    looks: list[None] = []
    real_follow = source._follow_file
    monkeypatch.setattr(source, "_follow_file", lambda: looks.append(None) or real_follow())
    names = [f"eth{i}" for i in range(64)]
    assert {source.read_at(name, None, 10.0).errored_frames for name in names} == {1000}
    assert len(looks) == 1
    rewrite_by_rename(path, document(2000, ports=64))  # during the poll: the next one reads it
    assert {source.read_at(name, None, 10.0).errored_frames for name in names} == {1000}
    assert len(looks) == 1
    assert {source.read_at(name, None, 11.0).errored_frames for name in names} == {2000}
    assert len(looks) == 2
    path.unlink()
    for name in names:
        with pytest.raises(CounterError, match="No such file") as gone:
            source.read_at(name, None, 12.0)
        assert gone.value.sample == CounterSample(errored_frames=2000)
    assert len(looks) == 3
    path.write_bytes(document(3000, ports=64))
    assert source.read_at("eth5", None, 13.0).errored_frames == 3000
    assert source.read("eth5").errored_frames == 3000  # (a plain read looks every time)
    assert len(looks) == 5


def test_a_file_just_changed_is_read_again_but_parsed_once(tmp_path: Path, calls: Calls) -> None:
    path = tmp_path / "c.json"
    path.write_bytes(document(1000, ports=64))
    source = FileSource(path)
    assert [source.read(f"eth{i}").errored_frames for i in range(64)] == [1000] * 64
    reads, parses = calls.take()
    assert parses == 1
    assert reads >= 1  # within a clock tick of the change, the bytes are compared again
    age()
    source.read("eth0")
    assert calls.take()[1] == 0  # at most one last look once the stamp is old enough, then ...
    source.read("eth0")
    assert calls.take() == (0, 0)  # ... none


def test_a_rename_over_the_file_is_seen_even_with_the_same_size_and_mtime(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_bytes(document(1000))
    source = FileSource(path)
    age()
    assert source.read("eth0").errored_frames == 1000
    rewrite_by_rename(path, document(2000), keep_mtime=True)
    assert source.read("eth0").errored_frames == 2000


def test_a_rewrite_in_place_of_the_same_size_is_seen(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_bytes(document(1000))
    source = FileSource(path)
    age()
    assert source.read("eth0").errored_frames == 1000
    rewrite_in_place(path, document(3000))
    assert source.read("eth0").errored_frames == 3000


def test_an_invalid_rewrite_raises_on_every_read_with_each_ports_last_good_values(tmp_path: Path, calls: Calls) -> None:
    path = tmp_path / "c.json"
    path.write_bytes(b'{"eth0": {"errored_frames": 1}, "eth1": {"frames_received": 2}}')
    source = FileSource(path)
    assert source.read("eth0") == CounterSample(errored_frames=1)
    age()
    rewrite_by_rename(path, b'{"eth0": {"errored_frames": -1}}')
    age()
    calls.take()
    for _poll in range(3):
        for name, last in (("eth0", CounterSample(errored_frames=1)), ("eth1", CounterSample(frames_received=2))):
            with pytest.raises(CounterError, match="must be a non-negative integer") as broken:
                source.read(name)
            assert broken.value.sample == last
    assert calls.take() == (1, 1)  # the broken file is judged once, not per read
    assert source.provides("eth1") == {"frames_received": f"file {path} frames_received"}
    rewrite_in_place(path, b'{"eth0": {"errored_frames": 7}} ')  # the same size, in place
    assert source.read("eth0") == CounterSample(errored_frames=7)
    assert source.read("eth1") == CounterSample()


def test_a_deleted_file_raises_with_the_last_values_until_it_is_back(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_bytes(document(1000))
    source = FileSource(path)
    age()
    assert source.read("eth0").errored_frames == 1000
    path.unlink()
    for _read in range(2):
        with pytest.raises(CounterError, match="No such file") as gone:
            source.read("eth0")
        assert gone.value.sample == CounterSample(errored_frames=1000)
    path.write_bytes(document(1000))  # the same bytes again: still read
    assert source.read("eth0").errored_frames == 1000


def test_a_file_refused_after_a_good_one_is_retried_on_every_read(tmp_path: Path, calls: Calls) -> None:
    # a read that fails (a FIFO here; EMFILE or EIO alike) is not remembered as the file's verdict
    path = tmp_path / "c.json"
    path.write_bytes(document(1000))
    source = FileSource(path)
    age()
    assert source.read("eth0").errored_frames == 1000
    path.unlink()
    os.mkfifo(path)
    calls.take()
    for _read in range(2):
        with pytest.raises(CounterError, match="FIFO") as refused:
            source.read("eth0")
        assert refused.value.sample == CounterSample(errored_frames=1000)
    assert calls.take() == (2, 0)


# -- whole-second stamps ----------------------------------------------------------------------


@pytest.fixture
def whole_second_fs(tmp_path: Path) -> Iterator[Path]:
    """A real ext2 file system with 128-byte inodes: time stamps in whole seconds (root)."""
    if os.geteuid() != 0 or shutil.which("mkfs.ext4") is None:
        pytest.skip("needs root and mkfs.ext4 to mount a loop file system")
    image, mountpoint = tmp_path / "ext2.img", tmp_path / "mnt"
    with image.open("wb") as handle:
        handle.truncate(4 << 20)
    mountpoint.mkdir()
    make = ["mkfs.ext4", "-q", "-F", "-t", "ext2", "-I", "128", str(image)]
    mount = ["mount", "-o", "loop", str(image), str(mountpoint)]
    if any(subprocess.run(command, check=False, capture_output=True).returncode for command in (make, mount)):
        pytest.skip("cannot make and mount a loop file system here")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", str(mountpoint)], check=False, capture_output=True)


def test_a_rewrite_in_place_within_the_same_second_is_seen(whole_second_fs: Path, calls: Calls) -> None:
    path = whole_second_fs / "c.json"
    # start 0.1 s into a second: well past the stamp's own step, and every step below stays in it
    time.sleep((1.1 - time.time() % 1) % 1)
    second = int(time.time())
    path.write_bytes(document(1000))
    source = FileSource(path)
    assert source.read("eth0").errored_frames == 1000
    assert [source.read("eth0").errored_frames for _ in range(3)] == [1000] * 3
    assert calls.take() == (4, 1)  # within the stamp step every read looks, the same bytes are not parsed again
    before = os.stat(path)
    rewrite_in_place(path, document(4000))
    after = os.stat(path)
    assert int(time.time()) == second, "the second ended during the test: run it again"
    # nothing stat shows tells the two contents apart ...
    assert (after.st_ino, after.st_size, after.st_mtime_ns, after.st_ctime_ns) == (
        before.st_ino, before.st_size, before.st_mtime_ns, before.st_ctime_ns,
    )  # fmt: skip
    assert source.read("eth0").errored_frames == 4000  # ... yet the new one is read
