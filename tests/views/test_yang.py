"""`show port -f yang` (`efmoam.views.yang`): real port views, from engines on the fake clock,
in every state a port can be in, made into IEEE 802.3.2 data and validated with libyang
(yanglint); mutations that the model forbids are rejected (the validator really runs);
and the values the mapping must get right, one by one."""

from __future__ import annotations

import copy
from collections.abc import Callable
from itertools import count
from pathlib import Path
from typing import Any

import pytest

from efmoam.core import LoopbackStatus, OamPort, PortSettings
from efmoam.views.data import port_view
from efmoam.views.yang import interfaces
from pdu import Flag
from tests.core.pair import PortPair
from tests.core.test_support import discovered, lone
from tests.linkmon import Pair, link_monitoring, monitor, port_settings, start
from tests.views import assert_valid, validate, validator_missing

WALL = 1_795_471_200.0  #: the wall clock at t=0 of the fake clock: 2026-11-23T22:00:00Z
NOW = WALL + 3600.0  #: when the data is asked for
LINK_OAM = "ieee802-ethernet-link-oam:link-oam"
IDENTITY = "ieee802-ethernet-link-oam:"
#: errored-frame: SD at 2 errors a window, SF at 5 (both sides); the other monitors as configured by default
MONITORED = port_settings(link_monitoring(errored_frame=monitor(sf_threshold=5, sd_threshold=2)), oui=0x001B21)
LOOPS = PortSettings(loopback_process=True)

Views = list[dict[str, Any]]


def wall_clock(pair: PortPair) -> PortPair:
    """Give the pair's engines a wall clock, as the daemon does (log entries get a wall time)."""
    for port in pair.ports.values():
        port.link_monitoring.wall_clock_offset = WALL
    return pair


def views(pair: PortPair, *names: str) -> Views:
    """The ``show port`` views of the pair's ports, named eth0 (a) and eth1 (b)."""
    return [port_view(f"eth{i}", pair.ports[name], {"ifindex": i + 2}) for i, name in enumerate(names)]


def yang(ports: Views) -> dict[str, Any]:
    return interfaces(ports, now=NOW)


def link_oam(data: dict[str, Any], at: int = 0) -> dict[str, Any]:
    oam: dict[str, Any] = data["ietf-interfaces:interfaces"]["interface"][at][LINK_OAM]
    return oam


# -- the states -------------------------------------------------------------------------------


def no_peer() -> Views:
    """A port alone: Active, sending, nobody answers."""
    return views(wall_clock(lone()), "a")


def operational() -> Views:
    return views(wall_clock(discovered(MONITORED, PortSettings(oui=0x001B21))), "a", "b")


def loopback() -> Views:
    """a has put b into remote loopback."""
    pair = wall_clock(discovered(None, LOOPS))
    pair.call("a", "start_loopback")
    pair.run_for(0.5)
    assert (pair.a.loopback, pair.b.loopback) == (LoopbackStatus.REMOTE_LOOPBACK, LoopbackStatus.LOCAL_LOOPBACK)
    return views(pair, "a", "b")


def events_pair() -> Pair:
    """a: a local errored-frame SD (2 errors at t=2, replaced) then SF (20 at t=3); b logs it as
    the peer's; b sets Dying Gasp at t=4 (a local flag event of b's, a remote one of a's)."""
    pair, feed = start(MONITORED, MONITORED)
    wall_clock(pair)
    feed.sample(3)
    feed.sample(20)
    pair.run_until(4.0)
    pair.call("b", "set_local_flags", Flag.DYING_GASP, True)
    pair.run_for(0.5)
    assert [e.active for e in pair.a.link_monitoring.active_events()] == [True, True]
    return pair


def events_active() -> Views:
    return views(events_pair(), "a", "b")


def events_cleared() -> Views:
    pair = events_pair()
    pair.call("a", "clear_events")
    pair.call("b", "clear_events")
    pair.run_for(0.5)
    ports = views(pair, "a", "b")
    assert all(not entry["active"] for port in ports for entry in port["event_log"])
    return ports


def link_down() -> Views:
    pair = wall_clock(discovered())
    pair.call("a", "set_link", False)
    pair.run_for(0.5)
    return views(pair, "a")


def oam_disabled() -> Views:
    return views(wall_clock(lone(PortSettings(enabled=False))), "a")


STATES: dict[str, Callable[[], Views]] = {
    "no-peer": no_peer,
    "operational": operational,
    "loopback": loopback,
    "events-active": events_active,
    "events-cleared": events_cleared,
    "link-down": link_down,
    "oam-disabled": oam_disabled,
}


@pytest.fixture
def check(tmp_path: Path) -> Callable[[Any], Any]:
    """Validate a document with yanglint (skips without the IEEE modules or yanglint)."""
    reason = validator_missing()
    if reason:
        pytest.skip(reason)
    numbers = count()
    return lambda data: validate(data, tmp_path / f"data-{next(numbers)}.json")


# -- valid in every state -----------------------------------------------------------------------


@pytest.mark.parametrize("state", list(STATES))
def test_every_state_is_valid_ieee_802_3_2_data(state: str, check: Callable[[Any], Any]) -> None:
    data = yang(STATES[state]())
    assert_valid(check(data))


def test_all_states_in_one_document_are_valid(check: Callable[[Any], Any]) -> None:
    """``show port -f yang`` without a port: every port in one list (names are its key)."""
    ports = [view for make in STATES.values() for view in make()]
    for i, view in enumerate(ports):
        view["name"], view["ifindex"] = f"eth{i}", i + 2
    data = yang(ports)
    assert len(data["ietf-interfaces:interfaces"]["interface"]) == len(ports) == 11
    assert_valid(check(data))


def test_no_ports_is_an_empty_list(check: Callable[[Any], Any]) -> None:
    data = yang([])
    assert data == {"ietf-interfaces:interfaces": {"interface": []}}
    assert_valid(check(data))


# -- the validator is applied: what the model forbids fails -----------------------------------


def _config_threshold_zero(oam: dict[str, Any]) -> None:
    oam["discovery-info"]["local"]["functions-supported"]["link-monitor"]["event-type"][0]["threshold"] = "0"


def _remote_mac_with_colons(oam: dict[str, Any]) -> None:
    remote = oam["discovery-info"]["remote"]
    remote["mac-address"] = remote["mac-address"].replace("-", ":")


def _statistic_missing(oam: dict[str, Any]) -> None:
    del oam["statistics"]["remote-error-frame-log-entries"]


def _threshold_container_missing(oam: dict[str, Any]) -> None:
    del oam["event-log"]["event-log-entry"][0]["threshold"]


def _threshold_on_a_flag_event(oam: dict[str, Any]) -> None:
    entries = oam["event-log"]["event-log-entry"]
    flag = next(e for e in entries if e["event-type"].endswith("dying-gasp-event"))
    flag["threshold"] = entries[0]["threshold"]


def _counter64_as_number(oam: dict[str, Any]) -> None:
    oam["statistics"]["out-information"] = int(oam["statistics"]["out-information"])


def _uint16_as_string(oam: dict[str, Any]) -> None:
    oam["discovery-info"]["local"]["oammtu"] = str(oam["discovery-info"]["local"]["oammtu"])


def _oui_with_colons(oam: dict[str, Any]) -> None:
    oam["event-log"]["event-log-entry"][0]["oui"] = "01:80:c2"


def _remote_loopback_mode_missing(oam: dict[str, Any]) -> None:
    del oam["discovery-info"]["remote"]["loopback-mode"]


MUTATIONS: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "config-threshold-0": (_config_threshold_zero, "out of the allowed range"),
    "remote-mac-colons": (_remote_mac_with_colons, "Unsatisfied pattern"),
    "statistic-missing": (_statistic_missing, 'Mandatory node "remote-error-frame-log-entries"'),
    "threshold-container-missing": (_threshold_container_missing, 'Mandatory node "threshold-event-type"'),
    "threshold-on-flag-event": (_threshold_on_a_flag_event, "When condition"),
    "counter64-as-number": (_counter64_as_number, "non-num64-encoded"),
    "uint16-as-string": (_uint16_as_string, "non-number-encoded"),
    "oui-with-colons": (_oui_with_colons, "length"),
    "remote-loopback-mode-missing": (_remote_loopback_mode_missing, 'Mandatory node "loopback-mode"'),
}


@pytest.fixture(scope="module")
def events_document() -> dict[str, Any]:
    return yang(events_active())


@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_the_validator_rejects_what_the_model_forbids(
    mutation: str, events_document: dict[str, Any], check: Callable[[Any], Any]
) -> None:
    mutate, message = MUTATIONS[mutation]
    data = copy.deepcopy(events_document)
    mutate(link_oam(data, 1 if mutation == "threshold-on-flag-event" else 0))
    result = check(data)
    assert result.returncode != 0
    assert message in result.stdout + result.stderr, result.stdout + result.stderr


# -- the values ---------------------------------------------------------------------------------


def test_interface_leaves() -> None:
    (entry,) = yang(no_peer())["ietf-interfaces:interfaces"]["interface"]
    assert {k: v for k, v in entry.items() if k != LINK_OAM} == {
        "name": "eth0",
        "type": "iana-if-type:ethernetCsmacd",
        "admin-status": "up",
        "oper-status": "up",
        "if-index": 2,  # int32: a JSON number
        "phys-address": "02:00:00:00:00:0a",
        "statistics": {"discontinuity-time": "2026-11-23T23:00:00.000Z"},  # NOW: no statistics_since in the view
    }


def test_daemon_keys_when_present_win() -> None:
    """admin_up (IFF_UP) and statistics_since, when the daemon's view has them."""
    (view,) = no_peer()
    view |= {"admin_up": False, "statistics_since": WALL + 0.25}
    (entry,) = yang([view])["ietf-interfaces:interfaces"]["interface"]
    assert entry["admin-status"] == "down"
    assert entry["statistics"] == {"discontinuity-time": "2026-11-23T22:00:00.250Z"}
    del view["ifindex"]
    (entry,) = yang([view])["ietf-interfaces:interfaces"]["interface"]
    assert "if-index" not in entry


def test_oper_status_follows_the_link_and_loopback() -> None:
    def oper(ports: Views) -> list[str]:
        return [i["oper-status"] for i in yang(ports)["ietf-interfaces:interfaces"]["interface"]]

    assert oper(operational()) == ["up", "up"]
    assert oper(link_down()) == ["down"]
    assert oper(loopback()) == ["testing", "testing"]


def test_local_discovery_info_and_monitor_windows_in_the_models_units() -> None:
    local = link_oam(yang(operational()))["discovery-info"]["local"]
    assert local == {
        "operational-status": "operational",
        "loopback-mode": "none",
        "mode": "active",
        "functions-supported": {
            "uni-directional-link-fault": False,
            "loopback": False,
            "link-monitor": {
                "link-monitoring": True,
                "event-type": [
                    # symbols: one second at the default speed's symbol rate
                    {"threshold-type": "symbol-period-event", "window": "125000000", "threshold": "1"},
                    # frames: one second of minimum-size frames
                    {"threshold-type": "frame-period-event", "window": "1488095", "threshold": "1"},
                    # deciseconds: 1 s; the signal-failure threshold (the SD threshold is not in the model)
                    {"threshold-type": "frame-event", "window": "10", "threshold": "5"},
                    {"threshold-type": "frame-seconds-event", "window": "600", "threshold": "1"},  # 60 s
                ],
            },
            "data-retrieval": True,
        },
        "revision": local["revision"],
        "oammtu": 1518,  # uint16: a JSON number
    }
    assert local["revision"].isdigit()  # uint64: a JSON string


def test_remote_discovery_info_mac_and_oui_forms() -> None:
    remote = link_oam(yang(operational()))["discovery-info"]["remote"]
    assert remote == {
        "mac-address": "02-00-00-00-00-0B",  # ieee:mac-address: hyphens, upper case
        "vendor-oui": "001B21",  # six characters
        "vendor-info": "0",
        "loopback-mode": "none",
        "mode": "active",
        "functions-supported": {
            "uni-directional-link-fault": False,
            "loopback": False,
            "link-monitoring": False,  # b advertises no Link Events
            "mib-retrieval": True,
        },
        "revision": remote["revision"],
        "oammtu": 1518,
    }


def test_without_a_peer_remote_holds_only_its_mandatory_loopback_mode() -> None:
    info = link_oam(yang(no_peer()))["discovery-info"]
    assert info["local"]["operational-status"] == "active-send-local"
    assert info["remote"] == {"loopback-mode": "none"}


def test_loopback_modes_of_both_ends() -> None:
    data = yang(loopback())
    master, looped = link_oam(data, 0)["discovery-info"], link_oam(data, 1)["discovery-info"]
    modes = [(info["local"]["loopback-mode"], info["remote"]["loopback-mode"]) for info in (master, looped)]
    assert modes == [("master-loopback", "local-loopback"), ("local-loopback", "master-loopback")]
    assert looped["local"]["functions-supported"]["loopback"] is True
    assert master["remote"]["functions-supported"]["loopback"] is True


def test_oam_disabled_and_link_fault_operational_states() -> None:
    oam = link_oam(yang(oam_disabled()))
    assert (oam["admin"], oam["discovery-info"]["local"]["operational-status"]) == ("disabled", "disabled")
    assert link_oam(yang(link_down()))["discovery-info"]["local"]["operational-status"] == "link-fault"


def test_event_log_entries_with_millisecond_timestamps() -> None:
    data = yang(events_active())
    a_log = link_oam(data, 0)["event-log"]["event-log-entry"]
    assert a_log == [
        {  # the SD: 3 errors >= 2 at t=2 (replaced by the SF a second later)
            "index": "1",
            "oui": "0180C2",
            "timestamp": "1795471202000",
            "location": "event-location-local",
            "event-type": IDENTITY + "threshold-event-type",
            "running-total": "3",
            "event-total": "1",
            "threshold": {"threshold-event-type": "frame-event", "window": "10", "threshold": "2", "value": "3"},
        },
        {  # the SF: 20 errors >= 5 at t=3
            "index": "2",
            "oui": "0180C2",
            "timestamp": "1795471203000",
            "location": "event-location-local",
            "event-type": IDENTITY + "threshold-event-type",
            "running-total": "23",
            "event-total": "2",
            "threshold": {"threshold-event-type": "frame-event", "window": "10", "threshold": "5", "value": "20"},
        },
        {  # b's Dying Gasp flag, seen at t=4 (+ the link's millisecond)
            "index": "3",
            "oui": "0180C2",
            "timestamp": "1795471204001",
            "location": "event-location-remote",
            "event-type": IDENTITY + "dying-gasp-event",
            "running-total": "1",
            "event-total": "1",
        },
    ]
    b_log = link_oam(data, 1)["event-log"]["event-log-entry"]
    assert [(e["location"], e["event-type"], e.get("threshold")) for e in b_log] == [
        (
            "event-location-remote",  # a's Event Notification, a millisecond on the link
            IDENTITY + "threshold-event-type",
            {"threshold-event-type": "frame-event", "window": "10", "threshold": "5", "value": "20"},
        ),
        ("event-location-local", IDENTITY + "dying-gasp-event", None),
    ]
    assert b_log[0]["timestamp"] == "1795471203001"


def test_cleared_events_stay_in_the_log() -> None:
    active, cleared = yang(events_active()), yang(events_cleared())
    for at in (0, 1):
        assert link_oam(cleared, at)["event-log"] == link_oam(active, at)["event-log"]


def test_statistics_counters_and_log_entry_counts() -> None:
    data = yang(events_active())
    a_stats, b_stats = link_oam(data, 0)["statistics"], link_oam(data, 1)["statistics"]
    assert len(a_stats) == len(b_stats) == 25
    assert all(isinstance(v, str) and v.isdigit() for v in [*a_stats.values(), *b_stats.values()])
    assert (a_stats["out-unique-event-notification"], b_stats["in-unique-event-notification"]) == ("1", "1")
    assert int(a_stats["out-information"]) > 0 and int(a_stats["in-information"]) > 0
    # a: its monitor logged the SD and the SF; the peer's Dying Gasp is no monitor entry
    assert {k: v for k, v in a_stats.items() if "log-entries" in k and v != "0"} == {
        "local-error-frame-log-entries": "2"
    }
    # b: the one Event Notification it logged as the peer's errored frame event
    assert {k: v for k, v in b_stats.items() if "log-entries" in k and v != "0"} == {
        "remote-error-frame-log-entries": "1"
    }


def test_an_entry_without_a_wall_clock_time_is_left_out() -> None:
    """An engine without a wall clock stamps no wall time; the model's timestamp is mandatory."""
    pair, feed = start(MONITORED, MONITORED)
    feed.sample(20)
    (view,) = views(pair, "a")
    assert [e["time"] for e in view["event_log"]] == [None]
    assert link_oam(yang([view]))["event-log"] == {"event-log-entry": []}
    assert link_oam(yang([view]))["statistics"]["local-error-frame-log-entries"] == "1"


def test_the_view_module_imports_nothing_of_the_engine() -> None:
    """The CLI turns the daemon's JSON into YANG data: standard library only."""
    import ast

    import efmoam.views.yang as module

    tree = ast.parse(Path(module.__file__).read_text())
    imported = {
        name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for name in ([a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""])
    }
    assert imported <= {"__future__", "datetime", "collections", "typing"}, imported


def test_port_view_carries_the_link_state() -> None:
    port = OamPort(PortSettings(), "02:00:00:00:00:0a", now=0.0, link_up=False)
    assert port_view("eth0", port)["link_up"] is False


def test_without_the_ieee_modules_the_tests_skip_and_say_why(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import tests.views

    monkeypatch.setattr(tests.views, "YANG_DIR", tmp_path / "absent")
    reason = validator_missing()
    assert reason is not None and "../shared/reference/yang" in reason and "not shipped" in reason
