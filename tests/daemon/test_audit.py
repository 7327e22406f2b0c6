"""Audit of operator commands: who (SO_PEERCRED at accept) did what, in the journal and on the
event stream; read-only requests leave no trace.  Also the event stream's new records."""

from __future__ import annotations

import io
import json
import os
import selectors
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from efmoam.config.model import EventSink, EventStreamConfig
from efmoam.core.linkmon import Location, Severity
from efmoam.core.linkmon.eventlog import EventLogEntry
from efmoam.core.outputs import EventLogged, PolicyEvent
from efmoam.daemon import operations
from efmoam.daemon.control import ControlError, ControlServer, Peer, request
from efmoam.daemon.eventstream import EventStream
from efmoam.daemon.journal import Journal
from pdu import EventLogType
from tests.daemon.lab import PYTHON, ROOT, Lab

OPERATOR_KEYS = {
    "schema", "kind", "op", "port", "uid", "gid", "pid", "args", "result", "cause", "monotonic", "time",
}  # fmt: skip
POLICY_KEYS = {
    "schema", "kind", "port", "name", "state", "actions", "cause", "detail", "latched", "recovers_at",
    "monotonic", "time",
}  # fmt: skip

# -- the control server gives each request its client's credentials ---------------------


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, list[tuple[str, Peer | None]]]]:
    """A ControlServer on a thread's selector loop that records each request's peer."""
    path = str(tmp_path / "control.sock")
    seen: list[tuple[str, Peer | None]] = []
    selector = selectors.DefaultSelector()

    def handler(op: str, _args: dict[str, Any], peer: Peer | None) -> Any:
        seen.append((op, peer))
        return {"pid": None if peer is None else peer.pid}

    control = ControlServer(path, handler, selector)
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            for key, _ in selector.select(0.05):
                key.data(time.monotonic())
            control.service(time.monotonic())

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield path, seen
    finally:
        stop.set()
        thread.join(5.0)
        control.close()
        selector.close()


def test_the_handler_gets_the_clients_credentials(server: tuple[str, list[tuple[str, Peer | None]]]) -> None:
    path, seen = server
    assert request(path, "whoami") == {"pid": os.getpid()}
    assert seen == [("whoami", Peer(pid=os.getpid(), uid=os.getuid(), gid=os.getgid()))]


def test_the_pid_is_the_connecting_process(server: tuple[str, list[tuple[str, Peer | None]]]) -> None:
    path, seen = server
    code = f"from efmoam.daemon.control import request; print(request({path!r}, 'whoami')['pid'])"
    child = subprocess.Popen(
        [PYTHON, "-c", code], stdout=subprocess.PIPE, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    out, _ = child.communicate(timeout=30)
    assert child.returncode == 0
    assert int(out) == child.pid != os.getpid()
    assert seen[-1][1] is not None and seen[-1][1].pid == child.pid


# -- operations: what is audited ---------------------------------------------------------


class Daemon:
    """What `operations` uses of the daemon for the ops tried here."""

    def __init__(self) -> None:
        self.log = io.StringIO()
        self.journal = Journal(self.log)
        self.stream = io.StringIO()
        events = EventStream(EventStreamConfig(EventSink.STDERR), stderr=self.stream)
        self.services = SimpleNamespace(events=events, wall_clock_offset=1000.0)
        self.ports: dict[str, Any] = {}
        self.reloads = 0

    def reload(self, _now: float) -> None:
        self.reloads += 1

    def health(self) -> dict[str, Any]:
        return {}

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stream.getvalue().splitlines()]


PEER = Peer(pid=4242, uid=1000, gid=1001)


def test_a_state_changing_op_is_audited() -> None:
    daemon = Daemon()
    assert operations.handle(daemon, "reload", {}, PEER, 5.0) == {"reloaded": True}  # type: ignore[arg-type]
    [line] = daemon.log.getvalue().splitlines()
    assert line.partition(" ")[2] == "NOTICE operator command op=reload uid=1000 gid=1001 pid=4242 result=ok"
    [record] = daemon.records()
    assert set(record) == OPERATOR_KEYS
    assert record == {
        "schema": 3, "kind": "operator", "op": "reload", "port": None, "uid": 1000, "gid": 1001, "pid": 4242,
        "args": {}, "result": "ok", "cause": "operator", "monotonic": 5.0, "time": 1005.0,
    }  # fmt: skip


def test_a_refused_op_is_audited_with_its_error() -> None:
    daemon = Daemon()
    args = {"port": "eth9", "location": "local"}
    with pytest.raises(ControlError):
        operations.handle(daemon, "clear_events", args, PEER, 5.0)  # type: ignore[arg-type]
    [record] = daemon.records()
    assert (record["op"], record["port"], record["result"], record["args"]) == (
        "clear_events", "eth9", "unknown_port", {"location": "local"},
    )  # fmt: skip
    assert "result=unknown_port" in daemon.log.getvalue() and 'args="location=local"' in daemon.log.getvalue()


def test_read_only_ops_leave_no_trace() -> None:
    daemon = Daemon()
    operations.handle(daemon, "hello", {}, PEER, 5.0)  # type: ignore[arg-type]
    operations.handle(daemon, "show_ports", {}, PEER, 5.0)  # type: ignore[arg-type]
    with pytest.raises(ControlError):
        operations.handle(daemon, "show_port", {"port": "eth9"}, PEER, 5.0)  # type: ignore[arg-type]
    assert daemon.log.getvalue() == "" and daemon.records() == []


def test_every_op_is_audited_unless_declared_read_only() -> None:
    audited = set(operations.OPERATIONS) - operations.READ_ONLY
    assert audited >= {"clear_events", "clear_statistics", "loopback", "variables", "reload"}
    assert sorted(operations.READ_ONLY) == ["hello", "show_port", "show_ports", "variable_answer", "watch"]


def test_the_arguments_are_summarised_not_copied() -> None:
    daemon = Daemon()
    args: dict[str, Any] = {
        "port": "p" * 500, "leaves": list(range(100)), "text": "x" * 500, "nested": {"a": [1, 2]},
        "huge": 10**40, "nan": float("nan"), **{f"k{n}": n for n in range(20)},
    }  # fmt: skip
    with pytest.raises(ControlError):
        operations.handle(daemon, "variables", args, None, 1.0)  # type: ignore[arg-type]
    [record] = daemon.records()
    assert record["port"] == "p" * 64 and (record["uid"], record["pid"], record["gid"]) == (None, None, None)
    summary = record["args"]
    assert summary["leaves"] == [*range(16), "..."]
    assert summary["text"] == "x" * 64
    assert summary["nested"] == "..." and summary["huge"] == "..." and summary["nan"] == "..."
    assert len(summary) == operations.SUMMARY_KEYS + 1 and summary["..."] == "17 more"


# -- the event stream's records ----------------------------------------------------------


def stream() -> tuple[EventStream, io.StringIO]:
    out = io.StringIO()
    return EventStream(EventStreamConfig(EventSink.STDERR), stderr=out), out


def test_an_event_record_says_why() -> None:
    events, out = stream()
    entry = EventLogEntry(
        index=3, location=Location.LOCAL, event_type=EventLogType.ERRORED_FRAME_EVENT, severity=Severity.FAILURE,
        time=10.0, wall_time=1010.0, window=10, threshold=5, value=20, running_total=20, event_total=1,
        port_affecting=True, active=False,
    )  # fmt: skip
    events.event("eth0", EventLogged(4, entry, "operator"), "cleared", 11.0, 1000.0)
    events.event("eth0", EventLogged(4, entry), "cleared", 11.0, 1000.0)
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert (first["cause"], second["cause"]) == ("operator", "raised")


def test_policy_event_records() -> None:
    events, out = stream()
    events.policy_event(
        "eth0", PolicyEvent("loop", True, ("error-disable",), "peer", "our OAMPDUs came back", True, 400.0), 100.0,
        1000.0,
    )  # fmt: skip
    events.policy_event("eth0", PolicyEvent("track:fault", False, ("log",), "condition"), 101.0, 1000.0)
    events.policy_event("eth0", PolicyEvent("session_up", True, ("log", "exec"), "discovery", moment=True), 102.0, 0.0)
    raised, cleared, moment = (json.loads(line) for line in out.getvalue().splitlines())
    assert set(raised) == POLICY_KEYS
    assert raised == {
        "schema": 3, "kind": "policy_event", "port": "eth0", "name": "loop", "state": "raised",
        "actions": ["error-disable"], "cause": "peer", "detail": "our OAMPDUs came back", "latched": True,
        "recovers_at": 1400.0, "monotonic": 100.0, "time": 1100.0,
    }  # fmt: skip
    assert (cleared["state"], cleared["recovers_at"], cleared["latched"]) == ("cleared", None, False)
    assert (moment["state"], moment["actions"]) == ("moment", ["log", "exec"])


def test_nothing_is_written_without_a_sink() -> None:
    out = io.StringIO()
    events = EventStream(EventStreamConfig(), stderr=out)
    events.policy_event("eth0", PolicyEvent("loop", True, ("log",), "peer"), 1.0, 0.0)
    events.operator("reload", port=None, peer=PEER, args={}, result="ok", now=1.0, wall_clock_offset=0.0)
    assert out.getvalue() == ""


# -- in the lab --------------------------------------------------------------------------


def cli_process(lab: Lab, *args: str) -> tuple[int, subprocess.CompletedProcess[str]]:
    """Run ``efmoam ARGS --socket A's socket``; its pid and its result."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("EFMOAM_SOCKET", None)
    argv = [PYTHON, "-m", "efmoam.cli", *args, "--socket", lab.a.socket]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    out, err = proc.communicate(timeout=30)
    return proc.pid, subprocess.CompletedProcess(argv, proc.returncode, out, err)


def operator_records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [record for record in records if record["kind"] == "operator"]


@pytest.mark.root
def test_an_operator_command_is_audited_with_the_clients_pid(lab: Lab, tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    lab.a.overrides = {"daemon": {"event_stream": {"sink": "file", "path": str(events)}}}
    lab.start(lab.a, operational=False)
    _, result = cli_process(lab, "show", "port", "veth0")  # read-only: no trace
    assert result.returncode == 0, result.stderr
    pid, result = cli_process(lab, "clear", "port", "veth0", "events")
    assert result.returncode == 0, result.stderr
    [line] = lab.wait_for(lambda: lab.a.log_lines("operator command"), 10.0, "the audit line")
    assert f" op=clear_events port=veth0 uid={os.getuid()} gid={os.getgid()} pid={pid} result=ok" in line
    [record] = lab.wait_for(lambda: operator_records(events), 10.0, "the operator record")
    assert set(record) == OPERATOR_KEYS
    assert (record["op"], record["port"], record["uid"], record["gid"], record["pid"]) == (
        "clear_events", "veth0", os.getuid(), os.getgid(), pid,
    )  # fmt: skip
    assert (record["result"], record["cause"], record["args"]) == ("ok", "operator", {"location": None})
    assert abs(record["time"] - time.time()) < 60
    # a second show, in-process: still only the one audited command
    assert lab.a.query("show_port", port="veth0")["name"] == "veth0"
    lab.a.query("clear_statistics", port="veth0")
    records = lab.wait_for(lambda: len(operator_records(events)) == 2 and operator_records(events), 10.0, "2nd")
    assert records[1]["op"] == "clear_statistics" and records[1]["pid"] == os.getpid()
    assert len(lab.a.log_lines("operator command")) == 2
