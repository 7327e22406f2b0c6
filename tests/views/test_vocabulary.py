"""One vocabulary (the README's "Field reference"): the views name a quantity the same way,
in the same unit, wherever it appears; real engines on the fake clock.

The daemon-level agreement (``show port``, the event-log JSON, the event stream, the log
line and the metrics of one event) is tests/daemon/test_vocabulary.py."""

from __future__ import annotations

import pytest

from efmoam.core.linkmon.eventlog import EventLogEntry, Location, Severity, window_view
from efmoam.core.linkmon.kinds import FACTS, MONITORS, MonitorKind
from efmoam.core.policy.settings import Recovery
from efmoam.daemon.runtime import EVENT_LOG_FIELDS
from efmoam.views import text
from efmoam.views.data import port_view
from pdu import Flag
from pdu.enums import EventLogType
from tests.core.test_policy import discovered, own_frame, with_policy
from tests.linkmon import start
from tests.views.test_yang import MONITORED, WALL, events_pair, views

#: the window keys, each named by its unit
WINDOW_KEYS = ("window_seconds", "window_frames", "window_symbols", "window_on_wire")


@pytest.mark.parametrize(
    ("kind", "on_wire", "expected"),
    [
        (MonitorKind.ERRORED_FRAME, 10, (1.0, None, None, 10)),
        (MonitorKind.ERRORED_FRAME_SECONDS, 600, (60.0, None, None, 600)),
        (MonitorKind.ERRORED_FRAME_PERIOD, 14_880_952, (None, 14_880_952, None, 14_880_952)),
        (MonitorKind.ERRORED_SYMBOL_PERIOD, 125_000_000, (None, None, 125_000_000, 125_000_000)),
    ],
)
def test_a_window_is_named_by_its_unit(kind: MonitorKind, on_wire: int, expected: tuple[object, ...]) -> None:
    view = window_view(FACTS[kind], on_wire)
    assert tuple(view[key] for key in WINDOW_KEYS) == expected


def test_a_window_given_in_seconds_keeps_them() -> None:
    """The monitor's configured seconds win over the TLV's rounding (1.05 s is 10 on the wire)."""
    assert window_view(FACTS[MonitorKind.ERRORED_FRAME], 10, 1.05)["window_seconds"] == 1.05
    assert window_view(FACTS[MonitorKind.ERRORED_SYMBOL_PERIOD], 125_000_000, 1.0)["window_seconds"] == 1.0


def test_every_monitor_of_show_port_names_its_window_by_unit() -> None:
    """errored_frame 1 s, frame seconds 60 s, the symbol window in seconds and symbols (at 1
    Gb/s: 125 M symbols a second), the period window in frames."""
    pair, _feed = start(MONITORED)
    monitors = port_view("eth0", pair.a)["link_monitoring"]["monitors"]
    assert set(monitors) == {facts.key for facts in MONITORS}
    frame, seconds = monitors["errored_frame"], monitors["errored_frame_seconds"]
    symbols, period = monitors["errored_symbol_period"], monitors["errored_frame_period"]
    assert (frame["window_seconds"], frame["window_on_wire"], frame["window_frames"]) == (1.0, 10, None)
    assert (seconds["window_seconds"], seconds["window_on_wire"]) == (60.0, 600)
    assert (symbols["window_seconds"], symbols["window_symbols"]) == (1.0, 125_000_000)
    assert (period["window_seconds"], period["window_symbols"]) == (None, None)
    assert period["window_frames"] == period["window_on_wire"] > 0
    for view in monitors.values():
        assert "window" not in view  # the old name, seconds or frames by monitor


def test_an_entry_agrees_with_its_monitor() -> None:
    """The failure's entry and its monitor: the same window, in the same unit, under the same
    names; the entry's running totals are the monitor's when it was raised."""
    pair = events_pair()
    (view,) = views(pair, "a")
    entry = next(e for e in view["event_log"] if e["type"] == "erroredFrameEvent" and e["active"])
    monitor_view = view["link_monitoring"]["monitors"]["errored_frame"]
    for key in (*WINDOW_KEYS, "error_running_total", "event_running_total"):
        assert entry[key] == monitor_view[key], key
    assert (entry["errors"], entry["threshold"]) == (20, monitor_view["sf_threshold"])
    # the peer's entry of the same event: the same names and values, from its TLV
    (peer_view,) = views(pair, "b")
    remote = next(e for e in peer_view["event_log"] if e["type"] == "erroredFrameEvent")
    for key in (*WINDOW_KEYS, "threshold", "errors", "error_running_total", "event_running_total"):
        assert remote[key] == entry[key], key


def test_times_are_wall_clock_and_monotonic_under_their_names() -> None:
    pair = events_pair()
    (view,) = views(pair, "a")
    for entry in view["event_log"]:
        assert entry["time"] == pytest.approx(entry["monotonic"] + WALL)
        assert "wall_time" not in entry
    flag = next(e for e in view["event_log"] if e["type"] == "dyingGaspEvent")
    assert all(flag[key] is None for key in (*WINDOW_KEYS, "threshold", "errors"))


def test_the_policy_times_are_wall_clock_and_monotonic_under_their_names() -> None:
    """A loop, error-disabled with recovery after 30 s: ``since`` and ``recovers_at`` are
    epoch seconds (as ``recovers_at`` of the stream's policy_event record), ``*_monotonic``
    the engine's clock."""
    pair = discovered(with_policy(recovery=Recovery(auto_after=30.0, hold_down=300.0)))
    pair.a.link_monitoring.wall_clock_offset = WALL
    pair.inject("a", own_frame(pair))
    pair.run_for(0.01)
    policy = port_view("eth0", pair.a)["policy"]
    (event,) = policy["events"]
    (latch,) = policy["latches"]
    assert event["since"] == pytest.approx(event["since_monotonic"] + WALL)
    assert latch["since"] == pytest.approx(latch["since_monotonic"] + WALL)
    assert latch["recovers_at"] == pytest.approx(latch["recovers_at_monotonic"] + WALL)
    assert latch["recovers_at_monotonic"] == pytest.approx(pair.now + 30.0, abs=0.02)
    assert not {"since_wall", "recovers_at_wall"} & (set(latch) | set(event))


def test_the_log_line_of_an_event_uses_the_entry_view_names() -> None:
    entry = EventLogEntry(
        index=1, location=Location.LOCAL, event_type=EventLogType.ERRORED_FRAME_EVENT, severity=Severity.FAILURE,
        time=1.0, window=10, threshold=5, value=20,
    )  # fmt: skip
    assert set(EVENT_LOG_FIELDS) <= set(entry.view(4))


def test_the_text_event_log_shows_the_window_in_its_unit() -> None:
    (view,) = views(events_pair(), "a")
    rendered = text.render_event_log(view)
    line = next(line for line in rendered.splitlines() if "erroredFrameEvent" in line and "active" in line)
    assert " 1 s " in line and " 20 " in line


def test_a_flag_event_of_the_peer_has_no_window() -> None:
    pair, _feed = start(MONITORED, MONITORED)
    pair.call("b", "set_local_flags", Flag.CRITICAL_EVENT, True)
    pair.run_for(1.5)
    (view,) = views(pair, "a")
    (entry,) = view["event_log"]
    assert (entry["type"], entry["location"]) == ("criticalLinkEvent", "remote")
    assert [entry[key] for key in WINDOW_KEYS] == [None] * 4
    assert text.render_event_log(view).count(" - ") >= 1
