"""`efmoam admin` (the admin_state op): OAM administratively disabled or enabled over the
configuration, kept across a reload, back to the configuration with ``config``; anything
else a client sends is refused, the daemon carries on."""

from __future__ import annotations

import signal

import pytest

from efmoam.daemon.control import ControlError
from tests.daemon.lab import Lab

pytestmark = pytest.mark.root


def test_admin_over_the_configuration_and_back(lab: Lab) -> None:
    lab.start()
    result = lab.a.cli("admin", "veth0", "disabled")
    assert result.returncode == 0 and "administratively disabled (set here)" in result.stdout
    view = lab.wait_view(lab.a, lambda v: v["oper_status"] == "disabled", 5, "OAM disabled")
    assert (view["admin_state"], view["admin_override"]) == ("disabled", "disabled")
    lab.a.overrides = {"defaults": {"multiplier": 6}}  # a reload that re-profiles the port keeps it
    lab.a.write_config()
    lab.a.signal(signal.SIGHUP)
    lab.wait_for(lambda: lab.a.log_lines("configuration reloaded"), 5, "the reload")
    view = lab.a.show("veth0")
    assert (view["multiplier"], view["admin_state"]) == (6, "disabled")
    result = lab.a.cli("admin", "veth0", "config")
    assert result.returncode == 0 and "administratively enabled (as configured)" in result.stdout
    view = lab.wait_view(lab.a, lambda v: v["oper_status"] == "operational", 10, "operational again")
    assert view["admin_override"] is None
    assert len(lab.a.log_lines(r"operator command op=admin_state .*result=ok")) == 2


HOSTILE = [
    ({"port": "veth0"}, "bad_request"),
    ({"port": "veth0", "state": "down"}, "bad_request"),
    ({"port": "veth0", "state": True}, "bad_request"),
    ({"port": "veth0", "state": ["enabled"]}, "bad_request"),
    ({"port": "veth0", "state": "x" * 100_000}, "bad_request"),
    ({"port": "nope", "state": "disabled"}, "unknown_port"),
    ({"port": None, "state": "disabled"}, "bad_request"),
]


def test_hostile_requests_are_refused(lab: Lab) -> None:
    lab.start()
    for args, code in HOSTILE:
        with pytest.raises(ControlError) as refused:
            lab.a.query("admin_state", **args)
        assert refused.value.code == code, args
    view = lab.a.show("veth0")
    assert (view["admin_state"], view["admin_override"], view["oper_status"]) == ("enabled", None, "operational")
    assert len(lab.a.log_lines(r"operator command op=admin_state .*result=(bad_request|unknown_port)")) == len(HOSTILE)
    lab.check_alive()
