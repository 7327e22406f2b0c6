"""Cost of the log and systemd lines: one timestamped log line, one multi-line message,
one event-stream record as a journal entry, and the STATUS= line's pass over 4,096 ports
(made at most once a second).

Run with ``pytest tests/bench/test_journal_bench.py --benchmark-enable``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any, TextIO

import pytest

from efmoam.core import OamPort, PortSettings
from efmoam.daemon.eventstream import journal_entry
from efmoam.daemon.journal import Journal
from efmoam.daemon.main import Daemon

PORTS = 4096
RECORD = {
    "schema": 3, "kind": "event", "port": "eth1", "action": "out-of-service", "cause": "raised", "monotonic": 5123.4,
    "time": 1763820000.1, "event": {
        "slot": 4, "index": 7, "location": "local", "type": "erroredFrameEvent", "type_number": 3, "severity": "sf",
        "time": 1763820000.1, "monotonic": 5123.4, "oui": "01:80:c2", "window_seconds": 1.0, "window_frames": None,
        "window_symbols": None, "window_on_wire": 10, "threshold": 5, "errors": 20, "error_running_total": 20,
        "event_running_total": 1, "port_affecting": True, "active": True,
    },
}  # fmt: skip


@pytest.fixture
def devnull() -> Iterator[TextIO]:
    with open(os.devnull, "w") as stream:
        yield stream


def test_a_timestamped_line(benchmark: Any, devnull: TextIO) -> None:
    journal = Journal(devnull, journald=False)
    benchmark(journal.log, "warning", "port out of service", port="eth0", backend="block", reasons="local x")


def test_a_message_of_ten_lines_under_journald(benchmark: Any, devnull: TextIO) -> None:
    journal = Journal(devnull, journald=True)
    message = "reload refused:\n" + "\n".join(f"/etc/efmoam/efmoam.yaml:{i}:3: bad value" for i in range(9))
    benchmark(journal.log, "error", message)


def test_an_event_record_as_a_journal_entry(benchmark: Any) -> None:
    line = json.dumps(RECORD, separators=(",", ":"))
    entry = benchmark(journal_entry, RECORD, line)
    assert b"PRIORITY=3\n" in entry


def test_the_status_line_over_4096_ports(benchmark: Any) -> None:
    ports = {
        f"eth{i}": SimpleNamespace(
            port=OamPort(PortSettings(), f"02:00:{i >> 8 & 0xFF:02x}:{i & 0xFF:02x}:00:0a", now=0.0)
        )
        for i in range(PORTS)
    }
    daemon = SimpleNamespace(ports=ports)
    text = benchmark(Daemon._status, daemon)  # type: ignore[arg-type]
    assert text.startswith(f"{PORTS} ports, 0 sessions up")
    if benchmark.stats is not None:  # made once a second: this is the loop's cost per second
        benchmark.extra_info["ms_per_second_of_loop"] = round(benchmark.stats.stats.mean * 1e3, 3)
