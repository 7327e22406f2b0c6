"""The control server removes only a socket at its path: a file that is not a socket is
refused and left alone at start, and at close only the socket it bound is removed."""

from __future__ import annotations

import os
import selectors
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from efmoam.daemon.control import ControlError, ControlServer, request


def answer(op: str, args: dict[str, object], _peer: object) -> object:
    return {"op": op}


@pytest.fixture
def selector() -> Iterator[selectors.BaseSelector]:
    with selectors.DefaultSelector() as selector:
        yield selector


def refused(path: Path, selector: selectors.BaseSelector) -> ControlError:
    with pytest.raises(ControlError) as caught:
        ControlServer(str(path), answer, selector)
    assert not selector.get_map(), "nothing left registered"
    return caught.value


def test_a_regular_file_at_the_path_is_refused_and_kept(tmp_path: Path, selector: selectors.BaseSelector) -> None:
    path = tmp_path / "efmoam.sock"
    path.write_text("precious\n")
    error = refused(path, selector)
    assert error.code == "bad_socket_path"
    assert str(path) in error.message and "not a socket" in error.message
    assert "\n" not in error.message
    assert path.read_text() == "precious\n"


def test_a_directory_or_a_symlink_at_the_path_is_refused_and_kept(
    tmp_path: Path, selector: selectors.BaseSelector
) -> None:
    directory = tmp_path / "dir.sock"
    directory.mkdir()
    (directory / "inside").write_text("x")
    assert refused(directory, selector).code == "bad_socket_path"
    assert (directory / "inside").read_text() == "x"
    target = tmp_path / "target"
    target.write_text("kept")
    link = tmp_path / "link.sock"
    link.symlink_to(target)
    assert refused(link, selector).code == "bad_socket_path"
    assert link.is_symlink() and target.read_text() == "kept"


def test_a_stale_socket_is_replaced(tmp_path: Path, selector: selectors.BaseSelector) -> None:
    path = tmp_path / "efmoam.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()  # a killed daemon's socket: nobody listens
    server = ControlServer(str(path), answer, selector)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.connect(str(path))  # a listening socket now
    finally:
        server.close()
    assert not path.exists()


def test_a_live_socket_is_left_to_its_daemon(tmp_path: Path, selector: selectors.BaseSelector) -> None:
    path = tmp_path / "efmoam.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as live:
        live.bind(str(path))
        live.listen(1)
        inode = path.stat().st_ino
        assert refused(path, selector).code == "already_running"
        assert path.stat().st_ino == inode


def test_close_removes_only_the_socket_it_bound(tmp_path: Path, selector: selectors.BaseSelector) -> None:
    path = tmp_path / "efmoam.sock"
    server = ControlServer(str(path), answer, selector)
    path.unlink()
    path.write_text("someone else's\n")
    server.close()
    assert path.read_text() == "someone else's\n"
    path.unlink()

    server = ControlServer(str(path), answer, selector)
    os.rename(path, tmp_path / "moved.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as other:
        other.bind(str(path))  # another daemon's socket now
        inode = path.stat().st_ino
        server.close()
        assert path.is_socket() and path.stat().st_ino == inode
    path.unlink()

    server = ControlServer(str(path), answer, selector)  # no group: 0600
    assert path.stat().st_mode & 0o777 == 0o600
    server.close()
    server.close()  # twice is harmless
    assert not path.exists()
    assert not selector.get_map()


def test_a_directory_that_cannot_be_made_is_a_control_error(tmp_path: Path, selector: selectors.BaseSelector) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    error = refused(blocker / "sub" / "efmoam.sock", selector)
    assert error.code == "bad_socket_path" and "\n" not in error.message


def test_a_started_server_answers(tmp_path: Path, selector: selectors.BaseSelector) -> None:
    """The socket the tests above start is a working one (answered by stepping the selector)."""
    path = str(tmp_path / "efmoam.sock")
    server = ControlServer(path, answer, selector)
    results: list[object] = []
    asker = threading.Thread(target=lambda: results.append(request(path, "hello", timeout=3.0)))
    asker.start()
    deadline = time.monotonic() + 3.0
    while asker.is_alive() and time.monotonic() < deadline:
        for key, _ in selector.select(0.05):
            key.data(time.monotonic())
        server.service(time.monotonic())
    asker.join(1.0)
    server.close()
    assert results == [{"op": "hello"}]
