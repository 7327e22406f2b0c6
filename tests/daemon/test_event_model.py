"""The event model end to end (two daemons in network namespaces):

* a failure that stays active while the peer raises nine more events (the log's ring
  wraps) is still in the log, and a restart restores it: the port stays blocked;
* a peer that sends its Dying Gasp in an Organization Specific OAMPDU and goes silent
  is acted on at once, not at the lost-link timer;
* at shutdown, a Dying Gasp is logged only on ports that send it.
"""

from __future__ import annotations

import socket

import pytest

from pdu import Flag, OrgSpecificPdu, encode
from tests.daemon.lab import MAC_B, Lab, event_entries, run
from tests.linux.netns import in_netns

pytestmark = pytest.mark.root

#: B's three monitors, each failing at the first errored window; log-only, so B keeps forwarding
PEER_MONITORING = {
    "link_monitoring": {
        "errored_frame": {"enabled": True, "window": 1, "sf_threshold": 1, "sd_threshold": None},
        "errored_frame_period": {"enabled": True, "window": 1000, "sf_threshold": 1},
        "errored_symbol_period": {"enabled": True, "window": 1, "sf_threshold": 1},
        "local_sf_action": {"port_action": "log-only"},
    }
}


def remote_events_raised(lab: Lab) -> int:
    return len(lab.a.log_lines(r"link event port=veth0 location=remote"))


def test_a_failure_outlives_nine_peer_events_and_a_restart(lab: Lab) -> None:
    lab.b.overrides = {"defaults": PEER_MONITORING}
    lab.a.set_counters(errored_frames=0, frames_received=0, symbol_errors=0)
    lab.b.set_counters(errored_frames=0, frames_received=0, symbol_errors=0)
    lab.start()
    lab.a.set_counters(errored_frames=20, frames_received=2000)
    view = lab.wait_view(lab.a, lambda v: v["out_of_service"], 5, "A out of service")
    [failure] = event_entries(view, location="local", type="erroredFrameEvent", active=True)

    frames = errors = 0
    for round_ in range(1, 4):  # B fails on its three monitors three times: nine events at A
        frames, errors = frames + 5000, errors + 3
        lab.b.set_counters(errored_frames=errors, frames_received=frames, symbol_errors=errors)
        lab.wait_for(lambda r=round_: remote_events_raised(lab) >= 3 * r, 10, f"round {round_} of B's events at A")
        assert lab.b.cli("clear", "port", "veth1", "events", "local").returncode == 0
    assert remote_events_raised(lab) >= 9
    view = lab.a.port()
    shown = [e for e in view["event_log"] if e["index"] == failure["index"]]
    assert shown == [failure], "the active failure fell out of the event log"
    assert view["out_of_service"] and lab.block_table_present(lab.a)

    assert lab.a.stop() == 0
    lab.a.start()
    lab.wait_operational()
    view = lab.a.port()
    assert view["out_of_service"] and view["action"]["applied"] is True
    assert view["out_of_service_reasons"] == ["local errored_frame_event"]
    assert view["link_monitoring"]["monitors"]["errored_frame"]["state"] == "failed"
    assert [e for e in view["event_log"] if e["index"] == failure["index"]] == [failure]
    assert not lab.a.log_lines(r"saved state (not|partly) restored"), lab.a.log()
    assert lab.block_table_present(lab.a) and not lab.ping(lab.a)


def send_from_b(lab: Lab, frame: bytes) -> None:
    """Send one raw frame out of B's interface (as a vendor's device would)."""

    def send() -> None:
        with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as raw:
            raw.bind((lab.b.ifname, 0))
            raw.send(frame)

    in_netns(lab.ns_b, send)


def test_a_vendor_dying_gasp_in_an_organization_specific_oampdu_acts_at_once(lab: Lab) -> None:
    # a lost-link time of 5 s: long enough to tell "at once" from "at the lost-link timer"
    lab.a.overrides = {
        "defaults": {
            "transmit_interval": 0.5,
            "multiplier": 10,
            "link_monitoring": {"peer_actions": {"dying_gasp": "out-of-service"}},
        }
    }
    lab.start()
    lab.b.kill()  # silent from now on, as a device losing power
    flags = Flag.DYING_GASP | Flag.LOCAL_STABLE | Flag.REMOTE_STABLE  # 0x0052
    send_from_b(lab, encode(OrgSpecificPdu(MAC_B, flags, 0x00000C, b"\x00\x01\x02")))
    view = lab.wait_view(lab.a, lambda v: v["out_of_service"], 2.0, "A to act on the Dying Gasp")
    [event] = event_entries(view, location="remote", type="dyingGaspEvent", active=True)
    assert event["port_affecting"] and view["out_of_service_reasons"] == ["remote dying_gasp_event"]
    assert "dying_gasp" in view["peer"]["flags"]
    assert view["statistics"]["dot3OamOrgSpecificRx"] == 1
    assert view["discovery_state"] == "SEND_ANY"  # well before the lost-link timer
    assert lab.block_table_present(lab.a)


def test_shutdown_dying_gasp_is_logged_only_where_it_is_sent(lab: Lab) -> None:
    """Two ports on A: veth0 runs OAM, veth2 has OAM disabled (it sends nothing)."""

    lab.a.overrides = {"ports": [{"match": "veth2", "enabled": False}, {"match": "veth*"}]}
    run(["ip", "-n", lab.ns_a, "link", "add", "veth2", "type", "veth", "peer", "name", "veth3"])
    for dev in ("veth2", "veth3"):
        run(["ip", "-n", lab.ns_a, "link", "set", dev, "up"])
    lab.start()
    lab.wait_for(lambda: {p["name"] for p in lab.a.show()["ports"]} >= {"veth0", "veth2", "veth3"}, 5, "A's ports")
    assert lab.a.stop() == 0
    assert lab.a.log_lines(r"NOTICE dying gasp ports=2")  # veth0 and veth3, not the disabled veth2
    logged = lab.a.log_lines(r"link event port=\S+ location=local type=dyingGaspEvent")
    assert sorted(line.split("port=")[1].split()[0] for line in logged) == ["veth0", "veth3"]
