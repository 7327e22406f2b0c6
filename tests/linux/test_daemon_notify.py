"""The daemon speaks systemd's notify protocol and makes its control socket 0660."""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

from tests.linux.netns import ip, needs_root

pytestmark = needs_root


def receive_until(sock: socket.socket, word: str, timeout: float = 10.0) -> list[str]:
    """Notifications until one contains `word`."""
    messages: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            messages.append(sock.recv(4096).decode())
        except TimeoutError:
            break
        if word in messages[-1]:
            return messages
    raise AssertionError(f"no {word} in {messages}")


def test_ready_reloading_stopping_and_socket_mode(tmp_path: Path) -> None:
    netns = f"efmoam-notify-{os.getpid()}"
    ip("netns", "add", netns)
    notify_path = tmp_path / "notify"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(str(notify_path))
    config = tmp_path / "efmoam.yaml"
    control = tmp_path / "efmoam.sock"
    config.write_text(
        f"daemon: {{control_socket: {control}, state_dir: {tmp_path}/state, control_socket_group: root}}\n"
        "ports:\n  - match: nothing-here\n"
    )
    process = subprocess.Popen(
        ["ip", "netns", "exec", netns, sys.executable, "-m", "efmoam.cli", "daemon", "-c", str(config)],
        env=os.environ | {"NOTIFY_SOCKET": str(notify_path)},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ready = receive_until(listener, "READY=1")
        assert any("STATUS=0 ports" in message for message in ready)
        assert stat.S_IMODE(control.stat().st_mode) == 0o660
        process.send_signal(signal.SIGHUP)
        reload = receive_until(listener, "READY=1")
        assert "RELOADING=1" in reload[0] and "MONOTONIC_USEC=" in reload[0]
        process.send_signal(signal.SIGTERM)
        assert any("STOPPING=1" in m for m in receive_until(listener, "STOPPING=1"))
        assert process.wait(timeout=10) == 0
        assert not control.exists()  # removed on a clean stop
    finally:
        if process.poll() is None:
            process.kill()
        listener.close()
        subprocess.run(["ip", "netns", "del", netns], check=False)
