"""systemd's STATUS= kept current: sent when what it says changes, at most once a second,
nothing without $NOTIFY_SOCKET (a real AF_UNIX datagram socket stands for systemd)."""

from __future__ import annotations

import itertools
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from efmoam.daemon.sdnotify import StatusLine
from tests.linux.netns import ip, needs_root


@pytest.fixture
def manager(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[socket.socket]:
    """The socket systemd would listen on, named in $NOTIFY_SOCKET."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(tmp_path / "notify"))
    sock.setblocking(False)
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "notify"))
    yield sock
    sock.close()


def received(sock: socket.socket) -> list[str]:
    messages = []
    while True:
        try:
            messages.append(sock.recv(4096).decode())
        except BlockingIOError:
            return messages


def test_a_change_is_sent_once_and_coalesced(manager: socket.socket) -> None:
    text = ["1 ports"]
    status = StatusLine(lambda: text[0])
    status.send_now(0.0, "READY=1")
    assert received(manager) == ["READY=1\nSTATUS=1 ports"]
    assert status.next_deadline() == 1.0
    text[0] = "2 ports"
    status.service(0.5)  # not due: changes wait for the second to end
    text[0] = "3 ports"
    status.service(0.9)
    assert received(manager) == []
    status.service(1.0)
    assert received(manager) == ["STATUS=3 ports"]  # the latest, once
    for now in (2.0, 3.0, 4.0):
        status.service(now)  # nothing changed: nothing sent
    assert received(manager) == [] and status.sent == 2


def test_without_notify_socket_nothing_is_due(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    calls: list[int] = []

    def describe() -> str:
        calls.append(1)
        return "described"

    status = StatusLine(describe)
    status.service(10.0)
    status.send_now(10.0, "READY=1")
    assert status.next_deadline() is None and calls == [] and status.sent == 0


def test_a_manager_that_does_not_read_never_blocks(manager: socket.socket) -> None:
    status = StatusLine(lambda: f"{time.monotonic()}", interval=0.0)
    started = time.monotonic()
    for step in range(300):  # far more than the socket's queue holds
        status.service(float(step))
    assert time.monotonic() - started < 5
    assert 0 < status.sent < 300


def status_lines(sock: socket.socket, until: str, timeout: float) -> list[tuple[float, str]]:
    """(arrival, STATUS text) until one contains `until`."""
    lines: list[tuple[float, str]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for message in received(sock):
            lines += [(time.monotonic(), line[7:]) for line in message.split("\n") if line.startswith("STATUS=")]
        if lines and until in lines[-1][1]:
            return lines
        time.sleep(0.02)
    raise AssertionError(f"no STATUS with {until!r} in {lines}")


@needs_root
def test_the_daemon_keeps_its_status_current(tmp_path: Path, manager: socket.socket) -> None:
    netns = f"efmoam-status-{os.getpid()}"
    ip("netns", "add", netns)
    config = tmp_path / "efmoam.yaml"
    config.write_text(
        f"daemon: {{control_socket: {tmp_path}/efmoam.sock, state_dir: {tmp_path}/state, control_socket_group: null}}\n"
        "ports:\n  - match: veth*\n"
    )
    process = subprocess.Popen(
        ["ip", "netns", "exec", netns, sys.executable, "-m", "efmoam.cli", "daemon", "-c", str(config)],
        env=os.environ | {"NOTIFY_SOCKET": str(tmp_path / "notify")},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = status_lines(manager, "0 ports", 20)
        assert first[-1][1] == "0 ports, 0 sessions up, 0 out of service, 0 active events"
        ip("link", "add", "veth0", "type", "veth", "peer", "name", "veth1", netns=netns)
        ip("link", "set", "veth0", "up", netns=netns)  # no carrier while veth1 is down: no session
        lines = status_lines(manager, "2 ports", 20)
        assert lines[-1][1] == "2 ports, 0 sessions up, 0 out of service, 0 active events"
        ip("link", "set", "veth1", "up", netns=netns)
        lines += status_lines(manager, "2 sessions up", 20)  # the two ends discover each other
        texts = [text for _, text in lines]
        assert texts[-1] == "2 ports, 2 sessions up, 0 out of service, 0 active events"
        assert all(a != b for a, b in itertools.pairwise(texts))  # sent only when it changed
        arrivals = [at for at, _ in first[-1:] + lines]
        assert all(b - a > 0.8 for a, b in itertools.pairwise(arrivals)), arrivals  # at most once a second
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        subprocess.run(["ip", "netns", "del", netns], check=False)
