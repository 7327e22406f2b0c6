"""NIC health monitoring end to end (issue 17): a pause storm fed through the file counter
source fails A's ``pause_storm`` monitor, whose local-sf-action blocks A's port with
nftables (OAM keeps flowing) and sets the Critical Event flag, which B takes as the peer's
critical link event and acts on; ``efmoam clear`` on A brings both ends back.  Before
that, the monitor is reported unavailable once while the file lacks its counters, and a
counter reset raises nothing.  The auto source reads the health counters only for the
monitors that need them, and a reload that enables one makes the port read them."""

from __future__ import annotations

import signal
import time
from functools import partial
from typing import Any

import pytest

from tests.daemon.lab import Daemon, Lab, event_entries

pytestmark = pytest.mark.root

SF_TIMEOUT = 5.0  # one 1 s window, the counter poll, nft: about 1.2 s in practice
UNAVAILABLE = r"WARNING monitor unavailable port=veth0 monitor=pause_storm "


def pause_storm(view: dict[str, Any]) -> dict[str, Any]:
    monitor = view["link_monitoring"]["health_monitors"]["pause_storm"]
    assert isinstance(monitor, dict)
    return monitor


def information_rx(side: Daemon) -> int:
    return int(side.port()["statistics"]["dot3OamInformationRx"])


def received(side: Daemon, at_least: int) -> bool:
    return information_rx(side) >= at_least


def configure(lab: Lab) -> None:
    """A: pause_storm on (fatal, 1 s windows), a failure blocks the port and sets Critical
    Event; B: the peer's Critical Event takes the port out of service (the default)."""
    lab.a.overrides = {
        "defaults": {
            "link_monitoring": {
                "pause_storm": {"enabled": True, "window": 1},
                "local_sf_action": {"port_action": "out-of-service", "critical_event": True},
            }
        }
    }
    lab.b.overrides = {"defaults": {"link_monitoring": {"peer_actions": {"critical_event": "out-of-service"}}}}


def assert_data_blocked(lab: Lab) -> None:
    assert not lab.ping(lab.a)
    assert not lab.udp_passes(lab.a)
    assert not lab.udp_passes(lab.b)


def test_pause_storm_blocks_the_port_and_raises_the_peers_critical_event(lab: Lab) -> None:
    configure(lab)
    lab.start()  # the counter file has the standard counters only
    assert lab.ping(lab.a) and lab.udp_passes(lab.a)

    # no pause counter in the file: unavailable, reported once however many polls pass
    view = lab.wait_view(lab.a, lambda v: pause_storm(v)["state"] == "unavailable", 5, "pause_storm unavailable")
    assert pause_storm(view)["fatal"] is True
    polls = view["statistics"]["dot3OamInformationRx"]
    lab.wait_for(lambda: information_rx(lab.a) >= polls + 5, 5, "a second of polls")  # 5 polls at 0.2 s
    lines = lab.a.log_lines(UNAVAILABLE)
    assert len(lines) == 1, lines
    assert lines[0].endswith("missing=pause_frames_received,pause_frames_sent,pause_storm_events")

    # the counters appear: a baseline, nothing raised
    lab.a.set_counters(pause_storm_events=7, pause_frames_received=100, pause_frames_sent=0)
    lab.wait_view(lab.a, lambda v: pause_storm(v)["state"] == "ok", 5, "pause_storm available")

    # a reset (the NIC's counters start again from zero) raises nothing; the same write
    # moves the frame counters, so a window that saw the reset shows their 50
    lab.a.set_counters(pause_storm_events=0, pause_frames_received=150)
    view = lab.wait_view(lab.a, lambda v: pause_storm(v)["errors_last_window"] == 50, 5, "the reset's window")
    assert (pause_storm(view)["state"], pause_storm(view)["fatal_last_window"]) == ("ok", 0)
    assert pause_storm(view)["event_running_total"] == 0
    assert event_entries(view, type="nicHealthEvent") == [] and not view["out_of_service"]
    assert len(lab.a.log_lines(UNAVAILABLE)) == 1

    # a pause storm: fatal, A fails
    lab.a.set_counters(pause_storm_events=3, pause_frames_received=160)
    view = lab.wait_view(lab.a, lambda v: v["out_of_service"], SF_TIMEOUT, "A out of service")
    assert pause_storm(view)["state"] == "failed"
    assert pause_storm(view)["fatal_last_window"] == 3
    assert any("pause_storm" in reason for reason in view["out_of_service_reasons"]), view["out_of_service_reasons"]
    [entry] = event_entries(view, location="local", type="nicHealthEvent")
    assert (entry["monitor"], entry["severity"], entry["errors"], entry["threshold"]) == ("pause_storm", "sf", 3, 1)
    assert entry["window_seconds"] == 1.0
    assert entry["active"] and entry["port_affecting"]
    assert view["action"] == {"backend": "block", "applied": True, "pending": False, "error": None, "reapplied": 0}
    assert "critical_event" in view["local_flags"]
    assert lab.a.log_lines(r"WARNING link event port=veth0 location=local type=nicHealthEvent severity=sf .*errors=3 ")
    assert lab.a.log_lines(r"WARNING port out of service port=veth0 backend=block")
    assert lab.block_table_present(lab.a), lab.nft_tables(lab.a)
    assert_data_blocked(lab)

    # B: the peer's Critical Event is a remote critical link event, and it acts on it
    peer = lab.wait_view(
        lab.b,
        lambda v: event_entries(v, location="remote", type="criticalLinkEvent", active=True),
        5,
        "B to raise the remote critical link event",
    )
    [remote] = event_entries(peer, location="remote", type="criticalLinkEvent")
    assert remote["active"] and remote["port_affecting"]
    assert "critical_event" in peer["peer"]["flags"]
    assert event_entries(peer, type="nicHealthEvent") == []  # never sent as a link event TLV
    assert peer["statistics"]["dot3OamUniqueEventNotificationRx"] == 0
    assert peer["out_of_service"]
    lab.wait_for(lambda: lab.block_table_present(lab.b), 5, "B's block")

    # OAM keeps flowing through both blocks
    before = {side.name: information_rx(side) for side in lab.daemons}
    for side in lab.daemons:
        lab.wait_for(partial(received, side, before[side.name] + 3), 5, f"{side.name} to keep receiving OAMPDUs")
        assert side.port()["oper_status"] == "operational"

    # clear on A: A's failure ends, its Critical Event flag with it, and B's remote event
    result = lab.a.cli("clear", "port", "veth0", "events")
    assert (result.returncode, result.stdout) == (0, "veth0: events cleared\n"), result.stderr
    lab.wait_for(lambda: not lab.block_table_present(lab.a), 5, "A's block to go")
    peer = lab.wait_view(
        lab.b,
        lambda v: event_entries(v, location="remote", type="criticalLinkEvent", active=False),
        5,
        "B to clear the remote critical link event",
    )
    assert "critical_event" not in peer["peer"]["flags"] and not peer["out_of_service"]
    lab.wait_for(lambda: not lab.block_table_present(lab.b), 5, "B's block to go")
    lab.wait_for(lambda: lab.ping(lab.a), 5, "ping to pass again")
    assert lab.udp_passes(lab.a) and lab.udp_passes(lab.b)
    view = lab.a.port()
    assert (pause_storm(view)["state"], view["out_of_service"], view["active_events"]) == ("ok", False, 0)
    assert "critical_event" not in view["local_flags"]
    [entry] = event_entries(view, location="local", type="nicHealthEvent")
    assert not entry["active"]
    assert lab.a.log_lines(r"NOTICE port back in service port=veth0 backend=block")
    assert len(lab.a.log_lines(UNAVAILABLE)) == 1


def test_without_critical_event_the_peer_learns_nothing(lab: Lab) -> None:
    """The Critical Event flag is the only way the peer hears of a health failure."""
    configure(lab)
    lab.a.overrides["defaults"]["link_monitoring"]["local_sf_action"]["critical_event"] = False
    lab.a.set_counters(errored_frames=0, frames_received=1000, pause_storm_events=0)
    lab.start()
    lab.a.set_counters(pause_storm_events=1)
    view = lab.wait_view(lab.a, lambda v: v["out_of_service"], SF_TIMEOUT, "A out of service")
    assert pause_storm(view)["state"] == "failed" and "critical_event" not in view["local_flags"]
    start = information_rx(lab.b)
    lab.wait_for(lambda: information_rx(lab.b) >= start + 3, 5, "B to receive three more OAMPDUs")
    peer = lab.b.port()
    assert peer["event_log"] == [] and not peer["out_of_service"]
    assert "critical_event" not in peer["peer"]["flags"]
    assert not lab.block_table_present(lab.b)


def provides(side: Daemon) -> dict[str, str]:
    found = side.port()["counters"]["provides"]
    assert isinstance(found, dict)
    return found


def test_auto_shows_every_counter_and_reads_a_health_counter_once_its_monitor_runs(lab: Lab) -> None:
    """veth's rtnetlink stats carry carrier_down_count: shown before any monitor needs it,
    and read by link_flaps from a reload on (which tests/daemon/test_counters_read.py
    checks read by read)."""
    lab.a.overrides = {"defaults": {"counter_source": "auto", "counter_file": None}}
    lab.start(lab.a, operational=False)
    before = lab.wait_for(partial(provides, lab.a), 5, "A's counters")
    assert set(before) == {"errored_frames", "frames_received", "carrier_down_count"}, before
    assert "health_monitors" not in lab.a.port()["link_monitoring"]

    lab.a.overrides["defaults"]["link_monitoring"] = {"link_flaps": {"enabled": True}}
    lab.a.write_config()
    reloaded = len(lab.a.log_lines("configuration reloaded"))
    lab.a.signal(signal.SIGHUP)
    lab.wait_for(lambda: len(lab.a.log_lines("configuration reloaded")) > reloaded, 5, "the reload")
    after = provides(lab.a)
    assert after == before, after
    assert after["carrier_down_count"] == "rtnetlink IFLA_CARRIER_DOWN_COUNT"  # veth has no driver count
    view = lab.wait_view(
        lab.a, lambda v: v["link_monitoring"]["health_monitors"]["link_flaps"]["state"] == "ok", 5, "ok"
    )
    assert view["counters"]["error"] is None
    assert not lab.a.log_lines(r"monitor unavailable")


def test_counters_from_a_new_source_are_a_baseline_not_an_increase(lab: Lab) -> None:
    """A reload that points the port at another counter file (another source, another
    total): the jump from 0 to 5,000,000 uncorrectable codewords raises nothing; an
    increase after it does."""
    lab.a.overrides = {
        "defaults": {"link_monitoring": {"fec_uncorrectable": {"enabled": True, "window": 1}}}
    }  # fmt: skip
    lab.a.set_counters(errored_frames=0, frames_received=1000, fec_uncorrectable_blocks=0)
    lab.start(lab.a, operational=False)

    def uncorrectable(view: dict[str, Any]) -> dict[str, Any]:
        monitor = view["link_monitoring"]["health_monitors"]["fec_uncorrectable"]
        assert isinstance(monitor, dict)
        return monitor

    lab.wait_view(lab.a, lambda v: uncorrectable(v)["state"] == "ok", 5, "fec_uncorrectable ok")
    other = lab.a.counter_file.with_name("counters-other.json")
    other.write_text('{"veth0": {"errored_frames": 0, "frames_received": 1000, "fec_uncorrectable_blocks": 5000000}}')
    lab.a.overrides["defaults"]["counter_file"] = str(other)
    lab.a.write_config()
    reloaded = len(lab.a.log_lines("configuration reloaded"))
    lab.a.signal(signal.SIGHUP)
    lab.wait_for(lambda: len(lab.a.log_lines("configuration reloaded")) > reloaded, 5, "the reload")
    lab.wait_for(lambda: lab.a.port()["counters"]["provides"]["fec_uncorrectable_blocks"].endswith(
        "counters-other.json fec_uncorrectable_blocks"), 5, "the new file read")  # fmt: skip
    time.sleep(2.5)  # two windows closed over the new source's first samples
    view = lab.a.port()
    assert uncorrectable(view)["state"] == "ok", uncorrectable(view)
    assert not event_entries(view, type="nicHealthEvent")
    other.write_text('{"veth0": {"errored_frames": 0, "frames_received": 2000, "fec_uncorrectable_blocks": 5000001}}')
    lab.wait_view(lab.a, lambda v: uncorrectable(v)["state"] == "failed", 5, "one more codeword fails it")
