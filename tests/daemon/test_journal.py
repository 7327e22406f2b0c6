"""Log lines that fit journald: detected as systemd.exec(5) says, one entry per line, a
priority per event-stream record by severity, timestamps when not under journald."""

from __future__ import annotations

import io
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from efmoam.config.model import EventSink, EventStreamConfig
from efmoam.core.linkmon.eventlog import EventLogEntry, Location, Severity
from efmoam.core.outputs import EventLogged, PolicyEvent
from efmoam.daemon import eventstream
from efmoam.daemon.eventstream import PRIORITIES, EventStream, journal_entry, situation
from efmoam.daemon.journal import Journal, quote, timestamp, under_journald
from efmoam.daemon.loop import Guard
from pdu.enums import EventLogType

ROOT = Path(__file__).resolve().parent.parent.parent
STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"


def stream_id(path: Path) -> str:
    status = path.stat()
    return f"{status.st_dev}:{status.st_ino}"


# -- detection -----------------------------------------------------------------------------


def test_journald_is_the_stream_the_variable_names(tmp_path: Path) -> None:
    log, other = tmp_path / "log", tmp_path / "other"
    log.write_text("")
    other.write_text("")
    with log.open("w") as stream:
        assert under_journald(stream, {"JOURNAL_STREAM": stream_id(log)})
        assert not under_journald(stream, {"JOURNAL_STREAM": stream_id(other)})  # inherited, redirected
        assert not under_journald(stream, {})


@pytest.mark.parametrize(
    "value",
    [
        "",
        ":",
        "1",
        "1:",
        ":1",
        "a:b",
        "1:2:3",
        " 1:2",
        "1:2\n",
        "-1:2",
        "\u0661:\u0662",
        "9" * 21 + ":1",
        "9" * 5000 + ":1",
    ],
    ids=lambda v: repr(v[:12]),
)
def test_a_malformed_variable_is_not_journald(tmp_path: Path, value: str) -> None:
    log = tmp_path / "log"
    with log.open("w") as stream:
        assert under_journald(stream, {"JOURNAL_STREAM": value}) is False


def test_a_stream_without_a_descriptor_is_not_journald(tmp_path: Path) -> None:
    closed = (tmp_path / "closed").open("w")
    closed.close()
    for stream in (io.StringIO(), closed):
        assert not under_journald(stream, {"JOURNAL_STREAM": "1:1"})


def run_refused_daemon(tmp_path: Path, journal_stream: str | None) -> str:
    """`efmoam daemon` with a configuration it refuses, stderr to a file; the file's text."""
    log = tmp_path / "stderr"
    log.write_text("")
    bad = tmp_path / "bad.yaml"
    bad.write_text("daemon:\n  counter_interval: 0\n  bogus: 1\n")
    env = {key: value for key, value in os.environ.items() if key != "JOURNAL_STREAM"}
    env["PYTHONPATH"] = str(ROOT)
    if journal_stream is not None:
        env["JOURNAL_STREAM"] = stream_id(log) if journal_stream == "the file" else journal_stream
    with log.open("a") as stderr:
        result = subprocess.run(
            [sys.executable, "-m", "efmoam.cli", "daemon", "-c", str(bad)],
            stderr=stderr,
            env=env,
            timeout=60,
            check=False,
        )
    assert result.returncode == 1
    return log.read_text()


def test_an_inherited_variable_does_not_prefix_a_redirected_file(tmp_path: Path) -> None:
    """The bug: a shell started under systemd passes $JOURNAL_STREAM on; its file is not the journal."""
    text = run_refused_daemon(tmp_path, "2049:1234567")
    lines = text.splitlines()
    assert len(lines) >= 3, text  # the headline, then one line per problem
    assert all(re.match(rf"{STAMP} ERROR ", line) for line in lines), text
    assert not re.search(r"^<\d>", text, re.M)


def test_under_journald_every_line_has_its_priority(tmp_path: Path) -> None:
    text = run_refused_daemon(tmp_path, "the file")
    lines = text.splitlines()
    assert len(lines) >= 3, text
    assert lines[0].startswith("<3>configuration refused:"), text
    assert all(line.startswith("<3>  ") for line in lines[1:]), text  # each problem its own entry
    assert not re.search(STAMP, text)  # the journal stamps its entries


# -- the lines -----------------------------------------------------------------------------


def journal(journald: bool = False) -> tuple[Journal, io.StringIO]:
    stream = io.StringIO()
    return Journal(stream, journald=journald, clock=lambda: 1795494600.1239), stream


def test_a_foreground_line_has_a_utc_timestamp_with_milliseconds() -> None:
    log, stream = journal()
    log.log("warning", "port added", port="eth0")
    assert stream.getvalue() == "2026-11-24T04:30:00.123Z WARNING port added port=eth0\n"
    assert timestamp(0.9999) == "1970-01-01T00:00:00.999Z"  # truncated: never a second ahead


def test_a_message_of_several_lines_is_one_line_each_with_its_prefix() -> None:
    for journald, prefix in ((True, "<3>"), (False, "2026-11-24T04:30:00.123Z ERROR ")):
        log, stream = journal(journald)
        log.log("error", "reload refused:\n/etc/a.yaml:1:2: bad\r\n\n/etc/a.yaml:3:4: worse\n", port="eth0")
        assert stream.getvalue().splitlines() == [
            f"{prefix}reload refused: port=eth0",
            f"{prefix}  /etc/a.yaml:1:2: bad",
            f"{prefix}  /etc/a.yaml:3:4: worse",
        ]


def test_a_guard_traceback_is_one_line_per_line() -> None:
    log, stream = journal(journald=True)

    def fails() -> None:
        raise ValueError("bad\nvalue")

    Guard(log).run("frames", fails)
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("<3>internal error in frames; carrying on port=daemon ")
    assert "error=\"ValueError('bad\\\\nvalue')\"" in lines[0]
    assert lines[1] == "<3>  Traceback (most recent call last):"
    assert len(lines) > 3 and all(line.startswith("<3>  ") for line in lines[1:])


HOSTILE = ["a\nb", "a\rb", "a\u2028b", "a\x85b", "\x1b[31mred", 'say "hi"', "back\\slash", "k=v", "", "tab\there"]


@pytest.mark.parametrize("value", HOSTILE, ids=repr)
def test_no_field_value_starts_a_line(value: str) -> None:
    log, stream = journal(journald=True)
    log.log("notice", "seen", detail=value, port="eth0")
    text = stream.getvalue()
    assert text.count("\n") == 1 and text.splitlines() == [text[:-1]], text
    assert text.endswith(" port=eth0\n")  # the next field is still a field
    quoted = quote(value)
    assert quoted.startswith('"') and quoted.endswith('"')
    assert json.loads(quoted.replace("\\x", "\\u00")) == value  # escapes, not losses


def test_a_plain_value_is_not_quoted() -> None:
    assert [quote(v) for v in ("eth0", 3, 0.5, "état", None)] == ["eth0", "3", "0.5", "état", "None"]


@pytest.mark.parametrize("line", ["\x1b]0;owned\x07title", "carriage\rreturn", "\u2029para"], ids=repr)
def test_message_lines_are_printable(line: str) -> None:
    log, stream = journal(journald=False)
    log.log("info", f"frame from {line}")
    for written in stream.getvalue().splitlines():
        assert written.isprintable(), written
        assert re.match(rf"{STAMP} INFO ", written)


# -- the event stream's priorities ------------------------------------------------------------


@pytest.fixture
def journal_socket(tmp_path: Path) -> Iterator[socket.socket]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(tmp_path / "journal"))
    sock.settimeout(2)
    yield sock
    sock.close()


def entries(sock: socket.socket, count: int) -> list[dict[str, str]]:
    received = []
    for _ in range(count):
        text = sock.recv(1 << 20).decode()
        assert text.endswith("\n")
        received.append(dict(line.split("=", 1) for line in text[:-1].split("\n")))
    return received


def entry(active: bool, severity_sf: bool) -> EventLogged:
    logged = EventLogEntry(
        index=1, location=Location.LOCAL, event_type=EventLogType.ERRORED_FRAME_EVENT,
        severity=Severity.FAILURE if severity_sf else Severity.DEGRADE, time=1.0, window=10, threshold=5, value=6,
        running_total=6, event_total=1, port_affecting=severity_sf, active=active,
    )  # fmt: skip
    return EventLogged(entry=logged, slot=1, cause="raised" if active else "operator")


def test_each_record_gets_the_priority_of_its_severity(tmp_path: Path, journal_socket: socket.socket) -> None:
    stream = EventStream(EventStreamConfig(EventSink.STDERR), journal_socket=str(tmp_path / "journal"))
    writes: list[Callable[[], None]] = [
        lambda: stream.event("eth0", entry(True, True), "out-of-service", 1.0, 1000.0),
        lambda: stream.event("eth0", entry(True, False), "log-only", 1.0, 1000.0),
        lambda: stream.event("eth0", entry(False, True), "cleared", 1.0, 1000.0),
    ]
    for out, error in ((True, "nft: Operation not permitted"), (True, None), (False, None)):
        writes.append(
            partial(
                stream.port_action,
                "eth0",
                out_of_service=out,
                reasons=("x",),
                backend="block",
                error=error,
                now=1.0,
                wall_clock_offset=0.0,
            )
        )
    for event in (
        PolicyEvent("lost_link", True, ("block",), "lost_link"),
        PolicyEvent("lost_link", True, ("log",), "lost_link"),
        PolicyEvent("lost_link", False, ("block",), "condition"),
        PolicyEvent("lost_link", False, ("error-disable",), "operator", released=True),
        PolicyEvent("session_up", True, ("log",), "peer", moment=True),
    ):
        writes.append(partial(stream.policy_event, "eth0", event, 1.0, 0.0))
    writes.append(
        partial(stream.operator, "clear_events", port="eth0", peer=None, args={}, result="ok", now=1.0,
                wall_clock_offset=0.0)
    )  # fmt: skip
    got = []
    for write in writes:  # one at a time: the socket's queue is short
        write()
        got += entries(journal_socket, 1)
    assert [e["PRIORITY"] for e in got] == ["3", "4", "5", "3", "4", "5", "4", "5", "5", "5", "6", "5"]
    assert {e["SYSLOG_IDENTIFIER"] for e in got} == {"efmoam"}
    assert json.loads(got[0]["MESSAGE"])["port"] == "eth0" and got[0]["EFMOAM_PORT"] == "eth0"
    assert set(PRIORITIES) == {situation(json.loads(e["MESSAGE"])) for e in got}  # the table, all of it


def test_a_journal_that_lags_never_holds_the_loop(tmp_path: Path, journal_socket: socket.socket) -> None:
    errors: list[str] = []
    stream = EventStream(EventStreamConfig(EventSink.STDERR), errors.append, journal_socket=str(tmp_path / "journal"))
    started = time.monotonic()
    for _ in range(200):  # nobody reads: the queue fills
        stream.operator("reload", port=None, peer=None, args={}, result="ok", now=1.0, wall_clock_offset=0.0)
    assert time.monotonic() - started < 5
    assert len(errors) == 1 and "journal:" in errors[0]  # reported once, not per record
    assert entries(journal_socket, 1)[0]["EFMOAM_OP"] == "reload"


def test_an_operator_cannot_shape_the_journal_entry() -> None:
    """An operator record carries the client's args: names and values it chose."""
    args: dict[str, Any] = {f"k{i}": "v" for i in range(500)}
    args |= {"a\nb": "x", "x" * 100: "long name", "lower": "ok", "v": "line\nbreak", "big": "y" * 5000}
    nested: dict[str, Any] = {"leaf": 1}
    for _ in range(50):
        nested = {"n": nested}
    record = {"kind": "operator", "args": {"deep": nested, **args}, "port": "eth0"}
    text = journal_entry(record, json.dumps(record)).decode()
    fields = dict(line.split("=", 1) for line in text[:-1].split("\n"))
    names = set(fields) - {"MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER"}
    assert len(names) <= eventstream.MAX_FIELDS
    assert all(re.fullmatch(r"[A-Z][A-Z0-9_]{0,63}", name) for name in names)
    assert all(len(value) <= eventstream.MAX_FIELD_VALUE for name, value in fields.items() if name != "MESSAGE")
    assert text.count("\n") == len(fields)  # no value added a line
    assert fields["PRIORITY"] == "5" and json.loads(fields["MESSAGE"]) == record


def test_an_unknown_record_is_a_notice() -> None:
    for record in ({}, {"kind": "event", "event": "not an object"}, {"kind": "policy_event", "actions": 3}):
        fields = journal_entry(record, "{}").decode()
        assert "PRIORITY=5\n" in fields or "PRIORITY=4\n" in fields


def test_the_event_stream_goes_native_only_under_journald(
    tmp_path: Path, journal_socket: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(eventstream, "JOURNAL_SOCKET", str(tmp_path / "journal"))
    log = tmp_path / "stderr"
    with log.open("w") as stderr:
        monkeypatch.setenv("JOURNAL_STREAM", "1:1")  # inherited: not this file
        assert EventStream(EventStreamConfig(EventSink.STDERR), stderr=stderr).journal_socket is None
        monkeypatch.setenv("JOURNAL_STREAM", stream_id(log))
        stream = EventStream(EventStreamConfig(EventSink.STDERR), stderr=stderr)
        assert stream.journal_socket == str(tmp_path / "journal")
        stream.operator("reload", port=None, peer=None, args={}, result="ok", now=1.0, wall_clock_offset=0.0)
    assert entries(journal_socket, 1)[0]["EFMOAM_OP"] == "reload"
    assert log.read_text() == ""
