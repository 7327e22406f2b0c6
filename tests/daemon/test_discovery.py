"""Discovery between two daemons over a veth pair, and what ends it: link loss, a killed
peer, an interface deleted and created again."""

from __future__ import annotations

import time
from functools import partial

import pytest

from tests.daemon.lab import (
    MULTIPLIER,
    TRANSMIT_INTERVAL,
    Daemon,
    Lab,
    event_entries,
    run,
)

pytestmark = pytest.mark.root


def no_ports(side: Daemon) -> bool:
    return bool(side.show()["ports"] == [])


@pytest.mark.parametrize("mode_b", ["active", "passive"])
def test_two_daemons_reach_send_any(lab: Lab, mode_b: str) -> None:
    lab.b.overrides = {"defaults": {"mode": mode_b}}
    lab.start()
    mac_a, mac_b = lab.mac(lab.a), lab.mac(lab.b)
    for side, own, other, other_mode in ((lab.a, mac_a, mac_b, mode_b), (lab.b, mac_b, mac_a, "active")):
        view = side.port()
        assert view["oper_status"] == "operational"
        assert view["discovery_state"] == "SEND_ANY"
        assert view["mac"] == own
        assert view["peer"]["mac_address"] == other
        assert view["peer"]["mode"] == other_mode
        assert {"local_stable", "remote_stable"} <= set(view["local_flags"])
        assert {"local_stable", "remote_stable"} <= set(view["peer"]["flags"])
        assert view["statistics"]["dot3OamInformationRx"] > 0
        assert view["statistics"]["dot3OamInformationTx"] > 0
        summary = side.show()["ports"]
        assert [(p["name"], p["oper_status"], p["peer_mac"]) for p in summary] == [(side.ifname, "operational", other)]
    assert lab.a.port()["mode"] == "active"
    assert lab.b.port()["mode"] == mode_b


def test_carrier_loss_is_link_fault(lab: Lab) -> None:
    """B's daemon stopped, B's end set down: A loses carrier, goes to FAULT, and comes back."""
    lab.start()
    lab.b.stop()
    lab.set_link(lab.b, up=False)
    view = lab.wait_view(lab.a, lambda v: v["oper_status"] == "linkFault", 5, "A in linkFault")
    assert view["discovery_state"] == "FAULT"
    assert view["peer"] is None
    assert "link_fault" in view["local_flags"]
    lab.set_link(lab.b, up=True)
    view = lab.wait_view(lab.a, lambda v: v["oper_status"] == "activeSendLocal", 5, "A sending again")
    assert "link_fault" not in view["local_flags"]
    lab.b.start()
    lab.wait_operational()


def test_peer_link_down_is_link_fault_on_both_sides(lab: Lab) -> None:
    lab.start()
    lab.set_link(lab.b, up=False)  # veth: A loses carrier, B is admin down
    view = lab.wait_view(lab.a, lambda v: v["oper_status"] == "linkFault", 5, "A in linkFault")
    assert "link_fault" in view["local_flags"]
    assert view["peer"] is None
    lab.wait_for(lambda: lab.b.port()["oper_status"] == "linkFault", 5, "B in linkFault")
    time.sleep(0.5)  # a crash after the state change would still show here
    lab.check_alive()
    lab.set_link(lab.b, up=True)
    lab.wait_operational()
    for side in lab.daemons:
        assert "link_fault" not in side.port()["local_flags"]


def test_unidirectional_port_reports_link_fault_and_recovers(lab: Lab) -> None:
    lab.a.overrides = {"defaults": {"unidirectional": True}}
    lab.start()
    assert "unidirectionalSupport" in lab.a.port()["functions_supported"]
    assert "unidirectionalSupport" in lab.b.port()["peer"]["functions_supported"]
    assert "unidirectionalSupport" not in lab.a.port()["peer"]["functions_supported"]
    lab.set_link(lab.b, up=False)  # A's own carrier is lost (and B's: a veth pair fails together)
    view = lab.wait_view(lab.a, lambda v: v["oper_status"] == "linkFault", 5, "A in linkFault")
    assert "link_fault" in view["local_flags"]
    lab.wait_for(lambda: lab.b.port()["oper_status"] == "linkFault", 5, "B in linkFault")
    lab.set_link(lab.b, up=True)
    lab.wait_operational()
    assert "unidirectionalSupport" in lab.b.port()["peer"]["functions_supported"]
    assert "link_fault" not in lab.a.port()["local_flags"]


def test_killed_peer_is_a_lost_link(lab: Lab) -> None:
    lab.start()
    lost_after = TRANSMIT_INTERVAL * MULTIPLIER
    lab.b.kill()
    killed = time.monotonic()

    def left_operational() -> str | None:
        status = str(lab.a.fast_port()["oper_status"])
        return status if status != "operational" else None

    status = lab.wait_for(left_operational, lost_after + 3.0, "A to leave operational", interval=0.01)
    elapsed = time.monotonic() - killed
    # the lost-link timer started at the last PDU from B, at most one interval before the kill
    assert lost_after - TRANSMIT_INTERVAL - 0.05 <= elapsed <= lost_after + 0.5, elapsed
    assert status in ("linkFault", "activeSendLocal")
    view = lab.wait_view(lab.a, lambda v: v["oper_status"] == "activeSendLocal", 3, "activeSendLocal")
    assert view["discovery_state"] == "ACTIVE_SEND_LOCAL"
    assert view["peer"] is None
    assert not event_entries(view, type="dyingGaspEvent"), "SIGKILL sends no Dying Gasp"
    assert lab.a.log_lines(r"discovery port=veth0 discovery_state=FAULT .*cause=lost_link")
    lab.b.start()
    lab.wait_operational()


def settled(side: Daemon) -> int:
    return len(side.log_lines(r"heap settled frozen_objects=[1-9]"))


def test_interface_deleted_and_created_again(lab: Lab) -> None:
    """The port goes and comes back; the heap is settled (efmoam.daemon.heap) once after
    the start and once after each change of the ports."""
    lab.start()
    lab.wait_for(lambda: settled(lab.a) == 1, 5, "A to settle its heap after the start")
    old_index = {side.name: side.port()["ifindex"] for side in lab.daemons}
    run(["ip", "-n", lab.ns_a, "link", "del", "veth0"])  # deletes veth1 in B too
    for side in lab.daemons:
        lab.wait_for(partial(no_ports, side), 5, f"{side.name} to drop its port")
        assert side.log_lines(rf"port removed port={side.ifname} reason=removed")
    lab.wait_for(lambda: settled(lab.a) == 2, 5, "A to settle its heap after the port went")
    new_a, new_b = "02:00:00:00:aa:02", "02:00:00:00:bb:02"
    lab.create_pair(mac_a=new_a, mac_b=new_b)
    lab.wait_operational()
    for side, own, other in ((lab.a, new_a, new_b), (lab.b, new_b, new_a)):
        view = side.port()
        assert view["ifindex"] != old_index[side.name]
        assert view["mac"] == own
        assert view["peer"]["mac_address"] == other
        assert [p["name"] for p in side.show()["ports"]] == [side.ifname]
    lab.wait_for(lambda: settled(lab.a) == 3, 5, "A to settle its heap after the port came back")
