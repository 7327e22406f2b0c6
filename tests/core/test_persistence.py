"""Link monitoring state survives a snapshot/restore (the daemon restarting)."""

from __future__ import annotations

import json

from efmoam.core import OamPort, PortSettings
from efmoam.core.linkmon import (
    CounterSample,
    LinkMonitoringSettings,
    Location,
    MonitorKind,
    MonitorSettings,
    MonitorState,
)
from efmoam.core.outputs import PortServiceChanged
from pdu import Flag
from tests.core.pair import PortPair

FRAME_SF = LinkMonitoringSettings(
    enabled=True, errored_frame=MonitorSettings(enabled=True, sd_threshold=2, sf_threshold=5)
)


def failed_pair() -> PortPair:
    pair = PortPair(PortSettings(link_monitoring=FRAME_SF), PortSettings(link_monitoring=FRAME_SF))
    pair.run_until(3)
    for t, errors in ((4, 0), (5, 3), (6, 9)):  # a degrade, then a failure
        pair.run_until(t)
        pair.call("a", "on_counters", CounterSample(errored_frames=errors))
    pair.run_until(7)
    pair.call("b", "set_local_flags", Flag.CRITICAL_EVENT, True)
    pair.run_until(8)
    return pair


def test_restored_port_stays_out_of_service_with_its_log() -> None:
    pair = failed_pair()
    assert pair.a.out_of_service
    data = json.loads(json.dumps(pair.a.saved_state()))  # through JSON, as on disk

    restarted = OamPort(PortSettings(link_monitoring=FRAME_SF), pair.a.mac, now=100.0)
    assert restarted.restore(data, now=100.0) == []
    assert restarted.out_of_service
    assert restarted.event_log() == pair.a.event_log()
    assert restarted.link_monitoring.monitors[MonitorKind.ERRORED_FRAME].state is MonitorState.FAILED
    # the restored failure and the peer's critical event both hold the port
    assert len(restarted.link_monitoring.holders()) == 2

    restarted.clear_events(Location.LOCAL, now=101.0)
    restarted.clear_events(Location.REMOTE, now=101.0)
    assert not restarted.out_of_service
    changes = [o for o in restarted.take_outputs() if isinstance(o, PortServiceChanged)]
    assert changes[-1].out_of_service is False
    # new entries continue the numbering and the ring after the restored ones
    assert restarted.link_monitoring.log.next_index == pair.a.link_monitoring.log.next_index


def test_a_snapshot_of_another_version_is_refused() -> None:
    pair = failed_pair()
    data = pair.a.saved_state() | {"version": 99}
    port = OamPort(PortSettings(link_monitoring=FRAME_SF), pair.a.mac, now=0.0)
    try:
        port.restore(data, now=0.0)
    except ValueError:
        assert not port.out_of_service
        return
    raise AssertionError("a snapshot of another version was accepted")
