"""The event stream's file is opened like every file the daemon touches: a FIFO or a
symbolic link at its path is refused (and reported) at once, never blocking the loop."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from efmoam.config.model import EventSink, EventStreamConfig
from efmoam.daemon.eventstream import EventStream


def open_stream(path: Path) -> list[str]:
    errors: list[str] = []
    done = threading.Event()

    def run() -> None:
        stream = EventStream(EventStreamConfig(EventSink.FILE, str(path)), errors.append)
        stream.write({"type": "test"})
        stream.close()
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(5.0), "the event stream blocked on open"
    return errors


def test_a_fifo_at_the_event_stream_path_is_refused_without_blocking(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    os.mkfifo(path)
    errors = open_stream(path)
    assert errors and "cannot open" in errors[0]  # ENXIO with no reader, or "not a regular file"


def test_a_symbolic_link_at_the_event_stream_path_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    (tmp_path / "events.jsonl").symlink_to(target)
    errors = open_stream(tmp_path / "events.jsonl")
    assert errors and not target.exists()


def test_a_regular_file_is_appended_to(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"before":1}\n')
    assert open_stream(path) == []
    assert path.read_text().splitlines() == ['{"before":1}', '{"type":"test"}']
