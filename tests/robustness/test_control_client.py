"""The control client (`request`, what ``efmoam show port`` uses) turns every socket
failure and every malformed reply into a ControlError with a one-line message; the CLI
prints that one line and exits 1, without a traceback."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from efmoam.daemon.control import ControlError, request
from tests.daemon.lab import efmoam

ROOT = str(Path(__file__).resolve().parents[2])


def failure(path: str, timeout: float = 0.3) -> ControlError:
    start = time.monotonic()
    with pytest.raises(ControlError) as caught:
        request(path, "show_port", {"port": "veth0"}, timeout=timeout)
    assert time.monotonic() - start < timeout + 1.0
    message = caught.value.message
    assert message and "\n" not in message
    return caught.value


@contextlib.contextmanager
def silent_listener(path: str, backlog: int = 8) -> Iterator[socket.socket]:
    """A listening socket nobody accepts on."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(path)
        listener.listen(backlog)
        yield listener


@contextlib.contextmanager
def full_backlog(path: str) -> Iterator[None]:
    """A listener whose backlog is full: a connect fails at once (EAGAIN)."""
    queued: list[socket.socket] = []
    with silent_listener(path, backlog=0):
        try:
            for _ in range(64):
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                queued.append(sock)
                sock.setblocking(False)
                try:
                    sock.connect(path)
                except BlockingIOError:
                    break
            else:
                raise AssertionError("the backlog never filled")
            yield
        finally:
            for sock in queued:
                sock.close()


@contextlib.contextmanager
def fake_daemon(path: str, behave: Callable[[socket.socket], None]) -> Iterator[None]:
    """A server that accepts connections and answers each with `behave`."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(8)
    listener.settimeout(0.1)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(5.0)
                with contextlib.suppress(OSError):
                    conn.recv(65536)
                    behave(conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(5.0)
        listener.close()


def replying(data: bytes) -> Callable[[socket.socket], None]:
    return lambda conn: conn.sendall(data)


def test_no_socket_is_not_running(tmp_path: Path) -> None:
    assert failure(str(tmp_path / "absent.sock")).code == "not_running"


def test_a_daemon_that_never_answers_is_a_timeout(tmp_path: Path) -> None:
    path = str(tmp_path / "efmoam.sock")
    with silent_listener(path):
        error = failure(path)
    assert error.code == "timeout"
    assert error.message == f"the efmoam daemon did not answer within 0.3 s on {path}"


def test_a_full_backlog_is_busy(tmp_path: Path) -> None:
    path = str(tmp_path / "efmoam.sock")
    with full_backlog(path):
        assert failure(path).code == "busy"


def test_a_reply_that_trickles_in_is_bounded_by_the_timeout(tmp_path: Path) -> None:
    def trickle(conn: socket.socket) -> None:
        for byte in b'{"id": 1, "ok": true, "result": "slow"}\n':
            conn.sendall(bytes([byte]))
            time.sleep(0.05)

    path = str(tmp_path / "efmoam.sock")
    with fake_daemon(path, trickle):
        assert failure(path, timeout=0.5).code == "timeout"


MALFORMED = {
    "not JSON": (b"garbage\n", "bad_reply"),
    "deep nesting": (b"[" * 100_000 + b"\n", "bad_reply"),
    "not UTF-8": (b'{"ok": "\xff"}\n', "bad_reply"),
    "an array": (b"[1, 2]\n", "bad_reply"),
    "no ok": (b'{"id": 1}\n', "bad_reply"),
    "error not an object": (b'{"id": 1, "ok": false, "error": "no"}\n', "error"),
    "no newline, then closed": (b'{"id": 1, "ok": true}', "disconnected"),
    "nothing, then closed": (b"", "disconnected"),
}


@pytest.mark.parametrize(("data", "code"), MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_reply_is_a_control_error(tmp_path: Path, data: bytes, code: str) -> None:
    path = str(tmp_path / "efmoam.sock")
    with fake_daemon(path, replying(data)):
        assert failure(path, timeout=2.0).code == code


def test_a_good_reply_still_works(tmp_path: Path) -> None:
    path = str(tmp_path / "efmoam.sock")
    with fake_daemon(path, replying(b'{"id": 1, "ok": true, "result": {"a": 1}}\n')):
        assert request(path, "show_ports", timeout=2.0) == {"a": 1}
    with fake_daemon(path + "2", replying(b'{"id": 1, "ok": false, "error": {"code": "x", "message": "y"}}\n')):
        with pytest.raises(ControlError) as caught:
            request(path + "2", "show_ports", timeout=2.0)
        assert (caught.value.code, caught.value.message) == ("x", "y")


# -- the CLI: one line on stderr, exit status 1 ------------------------------------------


def assert_one_line_error(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 1, result
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("efmoam: "), result.stderr


def test_the_cli_on_a_busy_daemon(tmp_path: Path) -> None:
    path = str(tmp_path / "efmoam.sock")
    with full_backlog(path):
        assert_one_line_error(efmoam("show", "port", "veth0", "--socket", path))
        result = efmoam("show", "port", "-f", "json", "--socket", path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert json.loads(result.stdout)["error"]["code"] == "busy"


def test_the_cli_on_a_daemon_that_never_answers(tmp_path: Path) -> None:
    path = str(tmp_path / "efmoam.sock")
    with silent_listener(path):  # the client's own timeout: 5 s
        assert_one_line_error(efmoam("show", "port", "veth0", "--socket", path))


def test_the_cli_on_a_malformed_reply(tmp_path: Path) -> None:
    path = str(tmp_path / "efmoam.sock")
    with fake_daemon(path, replying(b"<html>\n")):
        assert_one_line_error(efmoam("show", "port", "veth0", "--socket", path))
