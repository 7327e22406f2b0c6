"""Link monitoring state survives a snapshot/restore (the daemon restarting)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings, strategies as st

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


# -- a saved state is input like any other ----------------------------------------------------


def restored_or_refused(data: object) -> OamPort:
    """A fresh port given `data`: restored, or refused with ValueError and left unchanged."""
    port = OamPort(PortSettings(link_monitoring=FRAME_SF), "02:00:00:00:00:0a", now=50.0)
    port.take_outputs()
    try:
        port.restore(data, now=50.0)
    except ValueError:
        assert port.event_log() == [] and not port.out_of_service and port.take_outputs() == []
    return port


def test_wrong_values_are_refused_with_value_error() -> None:
    good = failed_pair().a.saved_state()
    entry = good["log"][0]
    for bad in (
        {**entry, "monotonic": 10**400},
        {**entry, "time": 10**400},
        {**entry, "oui": "-1"},
        {**entry, "oui": "ff:ff:ff:ff"},
        {**entry, "type_number": 999},
        {**entry, "slot": 13},
        {**entry, "active": "yes"},
    ):
        port = OamPort(PortSettings(link_monitoring=FRAME_SF), "02:00:00:00:00:0a", now=50.0)
        try:
            port.restore({**good, "log": [bad, *good["log"][1:]]}, now=50.0)
        except ValueError as exc:
            assert len(str(exc)) < 200  # the value is quoted short
        else:
            raise AssertionError(f"accepted {bad}")


def test_an_active_event_must_be_what_its_key_says() -> None:
    good = failed_pair().a.saved_state()
    local = next(item for item in good["active"] if item["key"].get("monitor"))
    for wrong in (
        {**local, "key": {"location": "local", "monitor": "errored-symbol-period"}},  # entry of another monitor
        {**local, "key": {"location": "remote", "monitor": "errored-frame"}},  # entry of another location
        {**local, "flags": 0x01},  # a local failure cannot set Link Fault
    ):
        data = {**good, "active": [wrong]}
        try:
            OamPort(PortSettings(), "02:00:00:00:00:0a", now=0.0).restore(data, now=0.0)
        except ValueError:
            continue
        raise AssertionError(f"accepted {wrong}")


def test_a_log_entry_marked_active_without_its_event_is_shown_cleared() -> None:
    data = failed_pair().a.saved_state()
    data["active"] = []
    port = restored_or_refused(data)
    assert not port.out_of_service
    assert port.event_log() and not any(entry.active for _, entry in port.event_log())


def test_version_1_flag_events_whose_entry_was_overwritten_are_rebuilt() -> None:
    """Version 1 let our Dying Gasp at shutdown take slot 1 from the peer's: the peer's
    active Dying Gasp is rebuilt from its key, so the port stays out of service."""
    ours = {
        "index": 3, "location": "local", "event_type": 257, "severity": "sf", "time": 9.0, "wall_time": None,
        "window": 2**64 - 1, "threshold": 2**64 - 1, "value": 2**64 - 1, "running_total": 1, "event_total": 1,
        "oui": 0x0180C2, "port_affecting": False, "active": True,
    }  # fmt: skip
    data = {
        "version": 1,
        "log": [[1, ours]],
        "next_index": 4,
        "next_ring_slot": 4,
        "active": [
            {"key": ["remote", "flag", 2], "index": 1, "flags": 0},  # its entry 1 was overwritten by 3
            {"key": ["local", "flag", 2], "index": 3, "flags": 2},
        ],
    }
    port = OamPort(PortSettings(), "02:00:00:00:00:0a", now=50.0)
    (problem,) = port.restore(data, now=50.0)
    assert "rebuilt" in problem
    assert port.out_of_service and port.link_monitoring.holders() == ("remote dying_gasp_event",)
    assert not port.local_flags & Flag.DYING_GASP
    assert [(e.location.value, e.active) for slot, e in port.event_log() if slot == 1] == [("remote", True)]


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_any_mutation_of_a_saved_state_is_restored_or_refused(data: st.DataObject) -> None:
    """Whatever a file holds, restore either restores it (every active event shown, the
    service state what the events imply) or raises ValueError."""
    saved = json.loads(json.dumps(SAVED))
    for _ in range(data.draw(st.integers(1, 4))):
        mutate(saved, data)
    port = restored_or_refused(saved)
    shown = {entry.index: entry for _, entry in port.event_log()}
    active = port.link_monitoring.active_events()
    assert all(shown.get(entry.index) == entry for entry in active)
    assert port.out_of_service is any(entry.port_affecting for entry in active)


VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True), st.text(max_size=8),
    st.just([]), st.just({}), st.sampled_from(["local", "remote", "sf", "sd", "01:80:c2", "dying_gasp"]),
)  # fmt: skip


def mutate(node: Any, data: st.DataObject) -> None:
    """Replace, drop or add one value somewhere in the tree."""
    while True:
        if isinstance(node, dict) and node:
            key = data.draw(st.sampled_from(sorted(node)))
        elif isinstance(node, list) and node:
            key = data.draw(st.integers(0, len(node) - 1))
        else:
            return
        child = node[key]
        if isinstance(child, dict | list) and child and data.draw(st.booleans()):
            node = child
            continue
        action = data.draw(st.sampled_from(["replace", "drop", "add"]))
        if action == "replace":
            node[key] = data.draw(VALUES)
        elif action == "drop":
            del node[key]
        elif isinstance(node, dict):
            node[data.draw(st.text(max_size=6))] = data.draw(VALUES)
        else:
            node.append(data.draw(VALUES))
        return


SAVED = failed_pair().a.saved_state()
