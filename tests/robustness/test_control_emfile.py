"""Out of file descriptors: a control server in a process with a low RLIMIT_NOFILE meets
EMFILE on accept.  It survives, counts it, does not spin while the connection waits in
the backlog, serves its connected clients meanwhile, and accepts again once fds free up."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = str(Path(__file__).resolve().parents[2])
FD_LIMIT = 40

SERVER = """
import resource, selectors, sys, time
from efmoam.daemon.control import ControlServer

resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[2]), resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
selector = selectors.DefaultSelector()
server = None

def answer(op, args, _peer):
    return dict(server.stats, clients=server.clients) if op == "stats" else args

server = ControlServer(sys.argv[1], answer, selector, max_clients=1000)
while True:
    deadline = server.next_deadline()
    for key, _ in selector.select(None if deadline is None else max(0.0, deadline - time.monotonic())):
        key.data(time.monotonic())
    now = time.monotonic()
    deadline = server.next_deadline()
    if deadline is not None and deadline <= now:
        server.service(now)
"""


class Connection:
    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(3.0)
        self.sock.connect(path)
        self.file = self.sock.makefile("rb")

    def ask(self, op: str) -> Any:
        self.sock.sendall(json.dumps({"id": 1, "op": op, "args": {"n": 1}}).encode() + b"\n")
        reply = json.loads(self.file.readline())
        assert reply["ok"], reply
        return reply["result"]

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def test_emfile_on_accept_is_survived(tmp_path: Path) -> None:
    path = str(tmp_path / "efmoam.sock")
    process = subprocess.Popen(
        [sys.executable, "-c", SERVER, path, str(FD_LIMIT)],
        env={**os.environ, "PYTHONPATH": ROOT},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    extra: list[socket.socket] = []
    try:
        deadline = time.monotonic() + 10.0
        while not os.path.exists(path):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        probe = Connection(path)
        assert probe.ask("stats")["accept_errors"] == 0

        while probe.ask("stats")["accept_errors"] == 0:  # connect until the server is out of fds
            assert time.monotonic() < deadline, "accept never failed"
            assert len(extra) < 2 * FD_LIMIT
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.setblocking(False)
            extra.append(sock)
            sock.connect(path)
            time.sleep(0.02)

        waiting = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        extra.append(waiting)
        waiting.connect(path)  # it waits in the backlog all along: the listener stays readable
        before = cpu_seconds(process.pid)
        time.sleep(1.5)
        assert cpu_seconds(process.pid) - before < 0.5, "the loop spins on a listener it cannot accept on"
        assert process.poll() is None
        stats = probe.ask("stats")
        assert stats["accept_errors"] >= 2, "it retried after resting"
        assert probe.ask("echo") == {"n": 1}, "connected clients are served meanwhile"

        for sock in extra:
            sock.close()
        extra.clear()
        deadline = time.monotonic() + 5.0
        while True:  # once the server saw those leave, fds are free again
            late = Connection(path)
            try:
                assert late.ask("echo") == {"n": 1}
                break
            except (OSError, AssertionError):
                assert time.monotonic() < deadline, "never served again"
                time.sleep(0.1)
            finally:
                late.close()
        assert process.poll() is None
        probe.close()
    finally:
        for sock in extra:
            sock.close()
        process.kill()
        _, stderr = process.communicate(timeout=10)
    assert "Traceback" not in stderr, stderr
