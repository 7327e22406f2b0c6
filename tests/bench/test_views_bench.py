"""Cost of the one vocabulary's views: `show port PORT -f json` of a port with a full event
log (the 15 entries the log can show, every window key derived per entry), the event
stream's entry of one event, and the port's saved state (the entries without their
derived keys).  They measure and never assert a time.

Run with ``pytest tests/bench/test_views_bench.py --benchmark-enable``.
"""

from __future__ import annotations

from typing import Any

import pytest

from efmoam.core import OamPort, PortSettings
from efmoam.core.linkmon import CounterSample, LinkMonitoringSettings, MonitorSettings
from efmoam.views.data import port_view
from pdu import Flag

SETTINGS = PortSettings(
    link_monitoring=LinkMonitoringSettings(
        enabled=True,
        errored_frame=MonitorSettings(enabled=True, sd_threshold=2, sf_threshold=1_000_000),
        errored_frame_period=MonitorSettings(enabled=True, sd_threshold=2, sf_threshold=1_000_000),
        errored_symbol_period=MonitorSettings(enabled=True, sd_threshold=2, sf_threshold=1_000_000),
    )
)


@pytest.fixture(scope="module")
def full_port() -> OamPort:
    """A port whose log is full: degrades come and go on three monitors, and both local
    flag events are set (12 slots, 15 entries at most)."""
    port = OamPort(SETTINGS, "02:00:00:00:00:0a", now=0.0)
    port.link_monitoring.wall_clock_offset = 1_795_471_200.0
    port.set_link(True, now=0.0, speed_mbps=1000)
    errors = frames = symbols = 0
    for second in range(1, 40):
        bad = 5 if second % 2 else 0  # a degrade, then a clean window that ends it
        errors, frames, symbols = errors + bad, frames + 1_400_000, symbols + bad
        port.on_counters(
            CounterSample(errored_frames=errors, frames_received=frames, symbol_errors=symbols), now=second
        )
    port.set_local_flags(Flag.DYING_GASP | Flag.CRITICAL_EVENT, True, now=40.0)
    port.take_outputs()
    assert len(port.event_log()) >= 11, port.event_log()
    return port


def test_show_port_view_of_a_full_log(benchmark: Any, full_port: OamPort) -> None:
    view = benchmark(port_view, "eth0", full_port)
    benchmark.extra_info["entries"] = len(view["event_log"])


def test_one_entry_view(benchmark: Any, full_port: OamPort) -> None:
    slot, entry = full_port.event_log()[-1]
    benchmark(entry.view, slot)


def test_saved_state_of_a_full_log(benchmark: Any, full_port: OamPort) -> None:
    benchmark(full_port.saved_state)
