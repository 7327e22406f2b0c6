"""``efmoam show port [PORT] -f yang`` through the real daemons: valid IEEE 802.3.2 data
(yanglint), with the peer, the event log and the ifindex the daemon knows; its refusals."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.lab import Daemon, Lab, event_entries, run
from tests.views import assert_valid, validate, validator_missing

pytestmark = pytest.mark.root

LINK_OAM = "ieee802-ethernet-link-oam:link-oam"


def show_yang(side: Daemon, *port: str) -> dict[str, Any]:
    result = side.cli("show", "port", *port, "-f", "yang")
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    value = json.loads(result.stdout)
    assert isinstance(value, dict)
    return value


def test_show_port_yang_is_valid_data_of_the_daemons_ports(lab: Lab, tmp_path: Path) -> None:
    reason = validator_missing()
    if reason:
        pytest.skip(reason)
    # A has two more ports: veth2 with OAM disabled, and veth3, its other end, without a peer
    lab.a.overrides = {"ports": [{"match": "veth2", "enabled": False}, {"match": "veth*"}]}
    run(["ip", "-n", lab.ns_a, "link", "add", "veth2", "type", "veth", "peer", "name", "veth3"])
    for dev in ("veth2", "veth3"):
        run(["ip", "-n", lab.ns_a, "link", "set", dev, "up"])
    lab.start()
    lab.a.set_counters(errored_frames=20, frames_received=2000)  # an errored-frame SF on veth0
    lab.wait_for(lambda: event_entries(lab.b.fast_port(), location="remote"), 5, "B to log the remote event")
    a_view = lab.a.fast_port()

    every = show_yang(lab.a)
    one = show_yang(lab.a, "veth0")
    b_data = show_yang(lab.b, "veth1")
    for name, data in (("a-all", every), ("a-veth0", one), ("b-veth1", b_data)):
        assert_valid(validate(data, tmp_path / f"{name}.json"))

    ports = {entry["name"]: entry for entry in every["ietf-interfaces:interfaces"]["interface"]}
    assert sorted(ports) == ["veth0", "veth2", "veth3"]
    states = {name: entry[LINK_OAM]["discovery-info"]["local"]["operational-status"] for name, entry in ports.items()}
    assert states == {"veth0": "operational", "veth2": "disabled", "veth3": "active-send-local"}
    assert ports["veth3"][LINK_OAM]["discovery-info"]["remote"] == {"loopback-mode": "none"}
    (entry,) = one["ietf-interfaces:interfaces"]["interface"]
    steady = ("name", "type", "admin-status", "oper-status", "if-index", "phys-address")  # the rest moves with time
    assert {k: entry[k] for k in steady} == {k: ports["veth0"][k] for k in steady}
    assert entry["if-index"] == a_view["ifindex"]
    assert entry["phys-address"] == lab.mac(lab.a)
    oam = entry[LINK_OAM]
    assert oam["discovery-info"]["local"]["operational-status"] == "operational"
    assert oam["discovery-info"]["remote"]["mac-address"] == lab.mac(lab.b).replace(":", "-").upper()
    (local,) = [e for e in oam["event-log"]["event-log-entry"] if e["location"] == "event-location-local"]
    threshold = local["threshold"]
    assert threshold == {"threshold-event-type": "frame-event", "window": "10", "threshold": "5", "value": "20"}
    assert abs(int(local["timestamp"]) - time.time() * 1000) < 60_000  # milliseconds since the epoch
    assert oam["statistics"]["local-error-frame-log-entries"] == "1"

    (remote,) = b_data["ietf-interfaces:interfaces"]["interface"][0][LINK_OAM]["event-log"]["event-log-entry"]
    assert (remote["location"], remote["threshold"]["value"]) == ("event-location-remote", "20")

    # whole ports only, and an unknown port is an error as in the other formats
    result = lab.a.cli("show", "port", "veth0", "event-log", "-f", "yang")
    assert result.returncode == 2
    assert "-f yang shows whole ports: the model's event-log is in link-oam/event-log" in result.stderr
    result = lab.a.cli("show", "port", "nosuch", "-f", "yang")
    assert (result.returncode, result.stdout) == (1, "")
    assert "nosuch is not a port efmoam manages (ports: " in result.stderr
