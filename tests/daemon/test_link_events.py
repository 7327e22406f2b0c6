"""Link monitoring end to end: errors injected through the file counter source raise a
signal failure, the block backend takes the port out of service while OAM keeps running,
the peer logs the remote event, and the state survives a daemon restart."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import pytest

from tests.daemon.lab import Daemon, Lab, event_entries

pytestmark = pytest.mark.root

SF_TIMEOUT = 5.0  # one 1 s window, the counter poll, nft: about 1 s in practice


def information_rx(side: Daemon) -> int:
    return int(side.port()["statistics"]["dot3OamInformationRx"])


def received(side: Daemon, at_least: int) -> bool:
    return information_rx(side) >= at_least


def raise_sf(lab: Lab) -> dict[str, Any]:
    """Inject 20 errored frames on A (SF threshold 5); return A's view once out of service."""
    lab.a.set_counters(errored_frames=20, frames_received=2000)
    return lab.wait_view(lab.a, lambda v: v["out_of_service"], SF_TIMEOUT, "A out of service")


def assert_blocked(lab: Lab) -> None:
    assert lab.block_table_present(lab.a), lab.nft_tables(lab.a)
    assert not lab.ping(lab.a)
    assert not lab.ping(lab.b)
    assert not lab.udp_passes(lab.b)
    assert not lab.udp_passes(lab.a)


def test_signal_failure_blocks_data_and_keeps_oam(lab: Lab) -> None:
    lab.start()
    assert lab.ping(lab.a) and lab.udp_passes(lab.b) and lab.udp_passes(lab.a)
    assert lab.nft_tables(lab.a) == []

    view = raise_sf(lab)
    assert view["out_of_service_reasons"], view
    assert any("errored_frame" in reason for reason in view["out_of_service_reasons"])
    assert view["action"] == {"backend": "block", "applied": True, "pending": False, "error": None, "reapplied": 0}
    assert view["link_monitoring"]["monitors"]["errored_frame"]["state"] == "failed"
    [entry] = event_entries(view, location="local", type="erroredFrameEvent")
    assert (entry["severity"], entry["errors"], entry["threshold"], entry["window_seconds"]) == ("sf", 20, 5, 1.0)
    assert entry["active"] and entry["port_affecting"]
    assert lab.a.log_lines(r"WARNING port out of service port=veth0 backend=block")

    assert_blocked(lab)

    # OAM keeps flowing through the block, both ways
    before = {side.name: information_rx(side) for side in lab.daemons}
    for side in lab.daemons:
        lab.wait_for(partial(received, side, before[side.name] + 3), 5, f"{side.name} to keep receiving OAMPDUs")
        assert side.port()["oper_status"] == "operational"
    summary = lab.a.show()["ports"][0]
    assert (summary["oper_status"], summary["out_of_service"], summary["active_events"]) == ("operational", True, 1)

    # the peer logged the remote event, and only logged it (peer_actions log-only)
    peer = lab.wait_view(
        lab.b,
        lambda v: event_entries(v, location="remote", type="erroredFrameEvent"),
        5,
        "B to log the remote event",
    )
    [remote] = event_entries(peer, location="remote", type="erroredFrameEvent")
    assert (remote["severity"], remote["errors"], remote["threshold"], remote["window_seconds"]) == ("sf", 20, 5, 1.0)
    assert remote["active"] and not remote["port_affecting"]
    assert peer["statistics"]["dot3OamUniqueEventNotificationRx"] == 1
    assert lab.a.port()["statistics"]["dot3OamUniqueEventNotificationTx"] == 1  # event_burst 1
    assert not peer["out_of_service"]
    assert not lab.block_table_present(lab.b)

    result = lab.a.cli("clear", "port", "veth0", "events")
    assert (result.returncode, result.stdout) == (0, "veth0: events cleared\n"), result.stderr
    lab.wait_for(lambda: not lab.block_table_present(lab.a), 5, "the block table to go")
    assert lab.nft_tables(lab.a) == []
    lab.wait_for(lambda: lab.ping(lab.a), 5, "ping to pass again")
    assert lab.udp_passes(lab.b) and lab.udp_passes(lab.a)
    view = lab.a.port()
    assert not view["out_of_service"] and view["out_of_service_reasons"] == []
    assert view["active_events"] == 0
    [entry] = event_entries(view, location="local", type="erroredFrameEvent")
    assert not entry["active"]
    assert view["oper_status"] == "operational"
    assert lab.a.log_lines(r"NOTICE port back in service port=veth0 backend=block")


def test_signal_degrade_is_logged_only(lab: Lab) -> None:
    lab.start()
    lab.a.set_counters(errored_frames=3, frames_received=2000)  # SD 2 <= 3 < SF 5
    view = lab.wait_view(
        lab.a,
        lambda v: event_entries(v, location="local", type="erroredFrameEvent"),
        SF_TIMEOUT,
        "A to log the signal degrade",
    )
    [entry] = event_entries(view, location="local", type="erroredFrameEvent")
    assert (entry["severity"], entry["errors"], entry["threshold"]) == ("sd", 3, 2)
    assert not entry["port_affecting"]
    assert not view["out_of_service"]
    assert view["statistics"]["dot3OamUniqueEventNotificationTx"] == 0
    # give an Event Notification time to arrive: three more Information OAMPDUs at B
    start = information_rx(lab.b)
    lab.wait_for(lambda: information_rx(lab.b) >= start + 3, 5, "B to receive three more OAMPDUs")
    peer = lab.b.port()
    assert peer["event_log"] == []
    assert peer["statistics"]["dot3OamUniqueEventNotificationRx"] == 0
    assert lab.nft_tables(lab.a) == []
    assert lab.ping(lab.a)


def test_restart_keeps_block_and_event_log(lab: Lab) -> None:
    lab.start()
    raise_sf(lab)
    lab.wait_for(lambda: event_entries(lab.b.port(), location="remote", type="erroredFrameEvent"), 5, "B to log the SF")

    assert lab.a.stop() == 0
    assert lab.a.log_lines(r"NOTICE stopped")
    assert lab.a.cli("show", "port").returncode == 1, "the control socket is gone after a stop"
    assert lab.block_table_present(lab.a), "the block stays while the daemon is down"
    peer = lab.wait_view(
        lab.b,
        lambda v: event_entries(v, location="remote", type="dyingGaspEvent", active=True),
        3,
        "B to log the Dying Gasp",
    )
    assert "dying_gasp" in peer["peer"]["flags"]

    lab.a.start()
    lab.wait_operational()
    view = lab.a.port()
    assert view["out_of_service"]
    assert any("errored_frame" in reason for reason in view["out_of_service_reasons"])
    assert view["action"]["applied"] is True
    [entry] = event_entries(view, location="local", type="erroredFrameEvent")
    assert entry["active"] and (entry["errors"], entry["threshold"]) == (20, 5)
    text = lab.a.cli("show", "port", "veth0", "event-log").stdout
    [line] = [line for line in text.splitlines() if "erroredFrameEvent" in line]
    assert line.split()[0] == str(entry["slot"]) and line.endswith("active") and " local " in line
    assert_blocked(lab)

    # the peer ends the Dying Gasp event once the restarted daemon speaks again
    peer = lab.wait_view(
        lab.b,
        lambda v: event_entries(v, type="dyingGaspEvent", active=False),
        5,
        "B to clear the Dying Gasp",
    )
    assert "dying_gasp" not in peer["peer"]["flags"]
    assert event_entries(peer, location="remote", type="erroredFrameEvent", active=True)

    # the restored state is live: clearing it returns the port to service
    assert lab.a.cli("clear", "port", "veth0", "events", "local").returncode == 0
    lab.wait_for(lambda: not lab.block_table_present(lab.a), 5, "the block table to go")
    lab.wait_for(lambda: lab.ping(lab.a), 5, "ping to pass again")


def test_restart_leaves_no_active_local_event_behind(lab: Lab) -> None:
    lab.start()
    assert lab.a.port()["active_events"] == 0
    assert lab.a.stop() == 0
    lab.a.start()
    lab.wait_operational()
    view = lab.a.port()
    assert "dying_gasp" not in view["local_flags"]
    assert [e["type"] for e in view["event_log"] if e["active"] and e["location"] == "local"] == []
    assert view["active_events"] == 0
    assert lab.a.show()["ports"][0]["active_events"] == 0


def saved_active_events(lab: Lab) -> list[object]:
    """The active events of A's veth0 in its state file as written so far ([] before the first write)."""
    try:
        saved = json.loads((lab.a.state_dir / "state.json").read_text())
    except (OSError, ValueError):
        return []
    return list(saved.get("ports", {}).get("veth0", {}).get("active", []))


def test_killed_daemon_keeps_block_and_event_log(lab: Lab) -> None:
    """SIGKILL: no shutdown code runs; what was saved when the event was logged is enough.

    The write is coalesced and made off the loop, so show can say out of service a few
    milliseconds before the file has it: the kill waits for the file (a kill inside that
    window loses the event, and the next start removes the block as stale, tested below)."""
    lab.start()
    raise_sf(lab)
    lab.wait_for(lambda: saved_active_events(lab), 5, "the event in A's state file")
    lab.a.kill()
    assert lab.block_table_present(lab.a)
    lab.a.start()
    lab.wait_operational()
    view = lab.a.port()
    assert view["out_of_service"] and view["action"]["applied"] is True
    assert event_entries(view, location="local", type="erroredFrameEvent", active=True)
    assert lab.block_table_present(lab.a)
    assert not lab.ping(lab.a)


def test_start_removes_a_stale_block(lab: Lab) -> None:
    """A block table with no saved event behind it (state lost) is removed at start."""
    lab.start()
    raise_sf(lab)
    lab.a.kill()
    (lab.a.state_dir / "state.json").unlink(missing_ok=True)  # (written or not yet)
    assert lab.block_table_present(lab.a)
    lab.a.start()
    lab.wait_for(lambda: not lab.block_table_present(lab.a), 5, "the stale table to go")
    assert lab.a.log_lines(r"stale block removed port=veth0")
    view = lab.a.port()
    assert not view["out_of_service"] and view["event_log"] == []
    lab.wait_for(lambda: lab.ping(lab.a), 5, "ping to pass")


def test_unreadable_counter_file_is_reported_and_survived(lab: Lab) -> None:
    lab.start()
    lab.a.counter_file.write_text("{not json")
    view = lab.wait_view(lab.a, lambda v: v["counters"]["error"], 5, "the counter error")
    assert str(lab.a.counter_file) in view["counters"]["error"]
    assert lab.a.log_lines(r"WARNING counters not read port=veth0")
    assert view["oper_status"] == "operational"
    lab.a.set_counters(errored_frames=0, frames_received=5000)  # good again
    lab.wait_view(lab.a, lambda v: v["counters"]["error"] is None, 5, "the counter error to clear")
    lab.a.set_counters(errored_frames=20, frames_received=6000)
    raise_sf(lab)


def test_start_removes_a_stale_loopback_table(lab: Lab) -> None:
    """A loopback table left by a daemon that died in loopback is removed at start."""
    from efmoam.linux.actions import apply_loopback
    from pdu import MuxAction, ParserAction
    from tests.linux.netns import in_netns

    lab.start()
    lab.a.kill()
    in_netns(lab.ns_a, lambda: apply_loopback("veth0", ParserAction.LOOPBACK, MuxAction.DISCARD))
    assert "netdev efmoam_lb_veth0" in lab.nft_tables(lab.a)
    lab.a.start()
    lab.wait_for(lambda: "netdev efmoam_lb_veth0" not in lab.nft_tables(lab.a), 5, "the stale loopback table to go")
    assert lab.a.log_lines(r"stale loopback removed port=veth0")
    lab.wait_operational()
    assert lab.ping(lab.a)
