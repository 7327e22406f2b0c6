"""The JSON event stream: one object per line, the documented keys, reopen on SIGHUP."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from efmoam.config import load_config_text
from efmoam.config.model import EventSink, EventStreamConfig, SettingError
from efmoam.core.linkmon import Location, Severity
from efmoam.core.linkmon.eventlog import EventLogEntry
from efmoam.core.outputs import EventLogged
from pdu import EventLogType

EVENT_KEYS = {"schema", "kind", "port", "action", "cause", "monotonic", "time", "event"}
ACTION_KEYS = {"schema", "kind", "port", "action", "reasons", "backend", "result", "error", "monotonic", "time"}

from efmoam.daemon.eventstream import EventStream  # noqa: E402


def logged(active: bool = True) -> EventLogged:
    entry = EventLogEntry(
        index=3, location=Location.LOCAL, event_type=EventLogType.ERRORED_FRAME_EVENT, severity=Severity.FAILURE,
        time=10.0, wall_time=1010.0, window=10, threshold=5, value=20, running_total=20, event_total=1,
        port_affecting=True, active=active,
    )  # fmt: skip
    return EventLogged(4, entry)


def test_an_event_and_an_action_on_stderr() -> None:
    stream = io.StringIO()
    events = EventStream(EventStreamConfig(EventSink.STDERR), stderr=stream)
    events.event("eth0", logged(), "out-of-service", 10.5, 1000.0)
    events.port_action(
        "eth0", out_of_service=True, reasons=("local errored_frame_event",), backend="block", error=None,
        now=10.6, wall_clock_offset=1000.0,
    )  # fmt: skip
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert set(first) == EVENT_KEYS
    event = first["event"]
    assert event == logged().entry.view(4)  # the one view of an entry, as show port and the saved state
    assert event["type"] == "erroredFrameEvent" and event["type_number"] == 3 and event["slot"] == 4
    assert (event["severity"], event["window_seconds"], event["threshold"], event["errors"]) == ("sf", 1.0, 5, 20)
    assert (event["window_on_wire"], event["window_frames"], event["window_symbols"]) == (10, None, None)
    assert (event["error_running_total"], event["event_running_total"]) == (20, 1)
    assert (event["monotonic"], event["time"], first["monotonic"], first["time"]) == (10.0, 1010.0, 10.5, 1010.5)
    assert first["action"] == "out-of-service" and first["kind"] == "event" and first["schema"] == 3
    assert set(second) == ACTION_KEYS
    assert second["action"] == "out-of-service" and second["result"] == "applied"
    assert second["reasons"] == ["local errored_frame_event"]


def test_none_writes_nothing() -> None:
    stream = io.StringIO()
    events = EventStream(EventStreamConfig(), stderr=stream)
    events.event("eth0", logged(), "log-only", 1.0, 0.0)
    assert stream.getvalue() == ""


def test_a_file_is_reopened_after_rotation(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    events = EventStream(EventStreamConfig(EventSink.FILE, str(path)))
    events.event("eth0", logged(), "out-of-service", 1.0, 0.0)
    rotated = tmp_path / "events.jsonl.1"
    path.rename(rotated)
    events.event("eth0", logged(active=False), "cleared", 2.0, 0.0)  # still into the moved file
    events.reopen()  # SIGHUP
    events.port_action(
        "eth0", out_of_service=False, reasons=(), backend="block", error="nft failed", now=3.0, wall_clock_offset=0.0
    )
    events.close()
    assert [json.loads(line)["action"] for line in rotated.read_text().splitlines()] == ["out-of-service", "cleared"]
    [line] = path.read_text().splitlines()
    assert json.loads(line)["result"] == "failed" and json.loads(line)["error"] == "nft failed"


def test_an_unwritable_file_is_reported_once(tmp_path: Path) -> None:
    errors: list[str] = []
    events = EventStream(EventStreamConfig(EventSink.FILE, str(tmp_path / "missing" / "e.jsonl")), errors.append)
    events.event("eth0", logged(), "log-only", 1.0, 0.0)
    events.event("eth0", logged(), "log-only", 1.0, 0.0)
    assert len(errors) == 1


def test_the_configuration() -> None:
    config = load_config_text(
        "daemon:\n  metrics: {enabled: false, address: '::', port: 9100}\n"
        "  event_stream: {sink: file, path: /var/log/efmoam/events.jsonl}\n"
    )
    assert (config.daemon.metrics.enabled, config.daemon.metrics.address, config.daemon.metrics.port) == (
        False, "::", 9100,
    )  # fmt: skip
    assert config.daemon.event_stream == EventStreamConfig(EventSink.FILE, "/var/log/efmoam/events.jsonl")
    with pytest.raises(SettingError):
        EventStreamConfig(EventSink.FILE)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("daemon:\n  event_stream: {sink: file}\n", "path is required when sink is file"),
        ("daemon:\n  event_stream: {sink: stderr, path: /tmp/x}\n", "only used when sink is file"),
        ("daemon:\n  metrics: {port: 70000}\n", "between 1 and 65535"),
        ("daemon:\n  metrics: {address: localhost}\n", "does not appear to be an IPv4 or IPv6 address"),
        ("daemon:\n  event_stream: {sink: syslog}\n", "must be one of none, stderr, file"),
    ],
)
def test_bad_configurations(text: str, message: str) -> None:
    from efmoam.config import ConfigError

    with pytest.raises(ConfigError) as info:
        load_config_text(text)
    assert message in str(info.value)


def test_under_systemd_records_go_to_the_journal_with_fields(tmp_path: Path) -> None:
    """A datagram socket stands in for journald's; the entry is the native protocol."""
    import socket

    path = str(tmp_path / "journal.socket")
    journal = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    journal.bind(path)
    journal.settimeout(2.0)
    stderr = io.StringIO()
    events = EventStream(EventStreamConfig(EventSink.STDERR), stderr=stderr, journal_socket=path)
    try:
        events.event("eth0", logged(), "out-of-service", 10.5, 1000.0)
        entry = journal.recv(65536).decode()
    finally:
        events.close()
        journal.close()
    fields = dict(line.split("=", 1) for line in entry.splitlines())
    assert json.loads(fields["MESSAGE"])["event"]["type"] == "erroredFrameEvent"
    assert fields["SYSLOG_IDENTIFIER"] == "efmoam"
    assert (fields["EFMOAM_PORT"], fields["EFMOAM_EVENT_TYPE"], fields["EFMOAM_EVENT_SEVERITY"]) == (
        "eth0",
        "erroredFrameEvent",
        "sf",
    )
    assert fields["EFMOAM_EVENT_ERRORS"] == "20" and fields["EFMOAM_KIND"] == "event"
    assert "EFMOAM_EVENT_MONOTONIC" in fields and "EFMOAM_EVENT" not in fields
    assert stderr.getvalue() == ""  # the journal got it, not the stderr stream


def test_a_journal_that_is_gone_is_reported_once(tmp_path: Path) -> None:
    problems: list[str] = []
    events = EventStream(
        EventStreamConfig(EventSink.STDERR), on_error=problems.append, journal_socket=str(tmp_path / "absent")
    )
    events.event("eth0", logged(), "out-of-service", 10.5, 1000.0)
    events.event("eth0", logged(False), "in-service", 11.5, 1000.0)
    events.close()
    assert len(problems) == 1 and problems[0].startswith("journal:")
