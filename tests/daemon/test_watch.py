"""``efmoam watch`` against real daemons (root): it sees what the event stream writes, the
same records, filtered by port; a watcher that never reads does not hurt the daemon or
the other clients; Ctrl-C and a daemon that stops end it cleanly."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from efmoam.daemon.control import ControlError, request
from tests.daemon.lab import PYTHON, ROOT, Daemon, Lab, is_operational, run, wait_for

pytestmark = pytest.mark.root

WATCHING = "; Ctrl-C ends\n"  #: the end of the line a watch prints on stderr once it watches


class Watcher:
    """``efmoam watch ARGS`` as a process; its stdout lines are collected on a thread."""

    def __init__(self, daemon: Daemon, *args: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen(
            [PYTHON, "-m", "efmoam.cli", "watch", *args, "--socket", daemon.socket],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env,
        )  # fmt: skip
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.lines: list[str] = []
        self.stderr = self.proc.stderr.readline()  # "efmoam watch: ...; Ctrl-C ends": it watches now
        assert self.stderr.endswith(WATCHING), self.stderr + self.proc.stderr.read()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in list(self.lines)]

    def wait(self, what: str, predicate: Callable[[list[dict[str, Any]]], object], timeout: float = 10.0) -> None:
        wait_for(lambda: predicate(self.records()), timeout, what, context=lambda: "\n".join(self.lines))

    def end(self, timeout: float = 10.0) -> tuple[int, str]:
        """Its exit status and the rest of its stderr, once it ends."""
        status = self.proc.wait(timeout)
        self._reader.join(timeout)
        assert self.proc.stderr is not None
        return status, self.stderr + self.proc.stderr.read()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def add_pair(lab: Lab, a: str, b: str) -> None:
    run(["ip", "-n", lab.ns_a, "link", "add", a, "type", "veth", "peer", "name", b, "netns", lab.ns_b])
    run(["ip", "-n", lab.ns_a, "link", "set", a, "up"])
    run(["ip", "-n", lab.ns_b, "link", "set", b, "up"])


def stream_records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def events(records: list[dict[str, Any]], port: str, cause: str) -> list[dict[str, Any]]:
    return [r for r in records if r["kind"] == "event" and r["port"] == port and r["cause"] == cause]


def test_watch_shows_the_event_streams_records_by_port_and_ends_cleanly(lab: Lab, tmp_path: Path) -> None:
    stream = tmp_path / "events.jsonl"
    lab.a.overrides = {"daemon": {"event_stream": {"sink": "file", "path": str(stream)}}}
    add_pair(lab, "veth2", "veth3")
    lab.a.set_counters(errored_frames=0, frames_received=1000)
    lab.a.set_counters("veth2", errored_frames=0, frames_received=1000)
    lab.start()
    lab.wait_for(lambda: lab.a.port("veth2")["oper_status"] == "operational", 15, "veth2 operational")

    every = Watcher(lab.a, "-f", "json")
    veth2 = Watcher(lab.a, "veth2", "-f", "json")
    veth0 = Watcher(lab.a, "veth0")
    watchers = [every, veth2, veth0]
    try:
        lab.a.set_counters(errored_frames=3)  # a signal degrade on veth0
        every.wait("the veth0 event", lambda records: events(records, "veth0", "raised"))
        lab.a.set_counters("veth2", errored_frames=3)
        veth2.wait("the veth2 event", lambda records: events(records, "veth2", "raised"))
        assert lab.a.cli("clear", "port", "veth0", "events").returncode == 0
        every.wait("the clear", lambda records: [r for r in records if r["kind"] == "operator"])
        every.wait("the end of the veth0 event", lambda records: events(records, "veth0", "window"))

        # the same records as the event stream's sink, in the same order, none missed
        seen, written = every.records(), stream_records(stream)
        start = written.index(seen[0])
        assert written[start : start + len(seen)] == seen
        kinds = {record["kind"] for record in seen}
        assert {"event", "operator"} <= kinds
        assert {r["port"] for r in veth2.records()} == {"veth2"}
        assert (
            veth2.records()
            == [r for r in written[written.index(veth2.records()[0]) :] if r["port"] == "veth2"][: len(veth2.records())]
        )

        # plain: one line per record, veth0's only: time, port, what happened
        wait_for(lambda: any(" operator clear_events " in line for line in veth0.lines), 5, "the plain clear")
        plain = list(veth0.lines)
        assert plain and all(line.split()[2] == "veth0" for line in plain), plain
        assert any(line.endswith("sd raised") and " event local erroredFrameEvent " in line for line in plain), plain
        assert any(line.endswith("sd cleared (window)") for line in plain), plain
        assert any(" operator clear_events " in line and line.endswith(": ok") for line in plain), plain

        veth0.proc.send_signal(signal.SIGINT)
        status, stderr = veth0.end()
        assert (status, stderr) == (130, veth0.stderr)  # no traceback, nothing more said

        lab.a.stop()
        for watcher in (every, veth2):
            status, stderr = watcher.end()
            assert status == 1
            message = "the daemon closed the connection (it stopped or restarts)"
            assert watcher.records()[-1] == {"error": {"code": "disconnected", "message": message}}
            assert "Traceback" not in stderr
    finally:
        for watcher in watchers:
            watcher.kill()


def test_a_plain_watch_ends_in_one_line_when_the_daemon_stops(lab: Lab) -> None:
    lab.start(lab.a, operational=False)
    watcher = Watcher(lab.a)
    try:
        lab.a.stop()
        status, stderr = watcher.end()
        assert status == 1
        # the daemon's last records still reach the watch: its Dying Gasp as it stops
        assert [line.split(None, 3)[3] for line in watcher.lines] == ["event local dyingGaspEvent sf raised"]
        assert stderr.splitlines()[1:] == ["efmoam watch: the daemon closed the connection (it stopped or restarts)"]
    finally:
        watcher.kill()


def test_watch_refuses_in_words(lab: Lab) -> None:
    lab.start(lab.a, operational=False)
    result = lab.a.cli("watch", "nope")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == "efmoam watch: nope is not a port efmoam manages (ports: veth0)\n"
    for args, code in (
        ({"port": 5}, "bad_request"),
        ({"port": ["veth0"]}, "bad_request"),
        ({"port": "x" * 999}, "unknown_port"),
    ):
        with pytest.raises(ControlError) as refused:
            request(lab.a.socket, "watch", args)
        assert refused.value.code == code
    assert lab.a.running


def test_a_watcher_that_never_reads_does_not_hurt_the_daemon(lab: Lab) -> None:
    lab.start(lab.a, operational=False)
    stalled = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stalled.settimeout(10)
    stalled.connect(lab.a.socket)
    stalled.sendall(b'{"id": 1, "op": "watch"}\n')
    reader = Watcher(lab.a, "-f", "json")
    try:
        padding = {f"k{n}": "x" * 64 for n in range(8)}  # an audit record of about 900 bytes
        slowest = 0.0
        sent = 0
        while lab.a.query("show_ports")["daemon"]["control"]["watch_overflow"] == 0:
            assert sent < 5000, "the watcher that never reads was never ended"
            for _ in range(50):
                with pytest.raises(ControlError):
                    request(lab.a.socket, "clear_statistics", {"port": "nope", **padding})
                sent += 1
            start = time.monotonic()
            lab.a.query("show_port", port="veth0")
            slowest = max(slowest, time.monotonic() - start)
        assert slowest < 1.0, slowest  # other clients answered all along
        reader.wait("every audit record", lambda records: len(records) >= sent, timeout=20)
        assert [r["port"] for r in reader.records()] == ["nope"] * sent  # the reading watcher missed nothing
        assert lab.a.log_lines(r"watcher too slow, its watch ended"), lab.a.log()
        data = b""
        with stalled:
            while chunk := stalled.recv(1 << 20):
                data += chunk
        *records, last = data.splitlines()
        assert json.loads(last)["error"]["code"] == "watch_overflow"
        assert all(json.loads(line) for line in records)  # whole lines up to the end
        assert lab.a.running
    finally:
        reader.kill()
        stalled.close()


def test_sigint_before_any_record_exits_130_without_a_traceback(lab: Lab) -> None:
    lab.start(lab.a, operational=False)
    watcher = Watcher(lab.a, "veth0", "-f", "json")
    try:
        time.sleep(0.2)
        watcher.proc.send_signal(signal.SIGINT)
        status, stderr = watcher.end()
        assert (status, watcher.lines, stderr) == (130, [], "efmoam watch: veth0; Ctrl-C ends\n")
    finally:
        watcher.kill()
    assert is_operational(lab.a) or lab.a.running


def test_a_watch_outlives_a_reload_that_changes_the_event_stream(lab: Lab, tmp_path: Path) -> None:
    lab.start(lab.a, operational=False)
    watcher = Watcher(lab.a, "-f", "json")
    try:
        stream = tmp_path / "events.jsonl"
        lab.a.overrides = {"daemon": {"event_stream": {"sink": "file", "path": str(stream)}}}
        lab.a.write_config()
        assert lab.a.query("reload") == {"reloaded": True}  # a new event stream, the same watchers
        assert lab.a.cli("clear", "port", "veth0", "statistics").returncode == 0
        cleared = lambda records: [r for r in records if r.get("op") == "clear_statistics"]  # noqa: E731
        watcher.wait("the clear after the reload", cleared)
        ops = [r["op"] for r in watcher.records()]
        assert ops == ["reload", "clear_statistics"]
        assert [r["op"] for r in stream_records(stream)] == ops  # the reload's record went to the new sink
    finally:
        watcher.kill()
