"""`efmoam watch`'s plain lines: one per record, from the records the daemon's own record
builders make; whatever a record holds, a line comes out, with control characters
escaped (a port name or an operator's argument comes from any local client)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import given, strategies as st

from efmoam.cli.watch import render_record
from efmoam.config.model import EventStreamConfig
from efmoam.core.outputs import PolicyEvent
from efmoam.daemon.control import Peer
from efmoam.daemon.eventstream import EventStream

NOW, OFFSET = 1000.0, 1_795_000_000.0
WHEN = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(NOW + OFFSET)) + ".000"


class Capture:
    """The event stream's tap, as the control server is: it watches and keeps what it gets."""

    watching = True

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def publish(self, record: dict[str, Any]) -> None:
        self.records.append(record)


def built(write: Any) -> dict[str, Any]:
    """The one record `write(stream)` makes, with no sink configured (the watch's case)."""
    stream = EventStream(EventStreamConfig())
    stream.tap = capture = Capture()
    write(stream)
    (record,) = capture.records
    return record


def test_each_kind_of_record_in_one_line() -> None:
    policy = built(lambda s: s.policy_event("eth0", PolicyEvent("lost_link", True, ("out-of-service",), "timeout",
                                                                "no OAMPDU for 5 s"), NOW, OFFSET))  # fmt: skip
    assert render_record(policy) == (
        f"{WHEN}  eth0         lost_link raised (timeout): no OAMPDU for 5 s; actions: out-of-service"
    )
    action = built(lambda s: s.port_action("eth0", out_of_service=True, reasons=("local errored_frame_event",),
                                           backend="block", error=None, now=NOW, wall_clock_offset=OFFSET))  # fmt: skip
    assert (
        render_record(action)
        == f"{WHEN}  eth0         port out-of-service (local errored_frame_event) applied by block"
    )
    operator = built(
        lambda s: s.operator(
            "clear_events", port="eth0", peer=Peer(42, 1000, 1000), args={"location": "local"}, result="ok",
            now=NOW, wall_clock_offset=OFFSET,
        )
    )  # fmt: skip
    assert render_record(operator) == f"{WHEN}  eth0         operator clear_events location=local by uid 1000: ok"
    reload = built(lambda s: s.operator("reload", port=None, peer=None, args={}, result="bad_config", now=NOW,
                                        wall_clock_offset=OFFSET))  # fmt: skip
    assert render_record(reload) == f"{WHEN}  -            operator reload by unknown client: bad_config"


EVENT = {  # as a daemon wrote it (schema 3)
    "schema": 3, "kind": "event", "port": "veth0", "action": "out-of-service", "cause": "raised", "monotonic": NOW,
    "time": NOW + OFFSET, "event": {"location": "local", "type": "erroredFrameEvent", "severity": "sf", "errors": 20},
}  # fmt: skip


def test_an_event_raised_and_cleared() -> None:
    assert render_record(EVENT) == f"{WHEN}  veth0        event local erroredFrameEvent sf raised, port out of service"
    cleared = {**EVENT, "action": "cleared", "cause": "operator"}
    assert render_record(cleared) == f"{WHEN}  veth0        event local erroredFrameEvent sf cleared (operator)"


HOSTILE = {
    "control characters": ({**EVENT, "port": "eth0\x1b[2J\r\n"}, "eth0\\x1b[2J\\x0d\\x0a"),
    "an unknown kind": ({"kind": "future", "port": "eth0", "time": NOW + OFFSET, "x": 1}, "future x=1"),
    "an event without its entry": ({**EVENT, "event": None}, "event action=out-of-service cause=raised event=None"),
    "an event entry that is a list": ({**EVENT, "event": [1]}, "event=[1]"),
    "no time": ({"kind": "operator", "op": "x", "result": "ok"}, "-" * 23),
    "a time out of range": ({**EVENT, "time": 1e300}, "-" * 23),
    "a time that is not a number": ({**EVENT, "time": float("nan")}, "-" * 23),
    "a time that is a string": ({**EVENT, "time": "now"}, "-" * 23),
}


@pytest.mark.parametrize(("record", "shown"), HOSTILE.values(), ids=HOSTILE.keys())
def test_odd_records_still_give_one_line(record: dict[str, Any], shown: str) -> None:
    line = render_record(record)
    assert shown in line and "\n" not in line and "\x1b" not in line


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
)


@given(st.dictionaries(st.text(max_size=8), JSON_VALUES))
def test_any_json_object_gives_one_line(record: dict[str, Any]) -> None:
    for kind in (None, "event", "policy_event", "port_action", "operator"):
        line = render_record(record if kind is None else {**record, "kind": kind})
        assert "\n" not in line and not any(ord(c) < 32 or 127 <= ord(c) < 160 for c in line)
