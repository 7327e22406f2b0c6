"""`show` and `clear` output against golden files, plain and JSON, and the JSON schema.

The state is known: A has an active local errored-frame signal failure (out of service),
B has logged the remote event.  Volatile fields are normalised before the comparison:
MAC addresses (aa:aa:... for A, bb:bb:... for B, at the same width), timestamps,
configuration revisions, the Information OAMPDU counters, the ifindex and temporary
paths.  Everything else must match the files in tests/daemon/golden/ exactly.

To regenerate after an intended change: ``EFMOAM_UPDATE_GOLDEN=1 pytest tests/daemon/test_golden.py``,
then review the diff of the golden files by eye before committing them.
"""

from __future__ import annotations

import json
import os
import re
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.lab import Daemon, Lab, event_entries

pytestmark = pytest.mark.root

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("EFMOAM_UPDATE_GOLDEN") == "1"
MAC = re.compile(r"\b[0-9a-f]{2}(?::[0-9a-f]{2}){5}\b")
WALL = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")


class Normaliser:
    def __init__(self, lab: Lab) -> None:
        self.macs = {lab.mac(lab.a): "aa:aa:aa:aa:aa:aa", lab.mac(lab.b): "bb:bb:bb:bb:bb:bb"}
        self.paths = {str(lab.workdir): "<workdir>", lab.sockdir.as_posix(): "<sockdir>"}

    def string(self, text: str) -> str:
        for path, name in self.paths.items():
            text = text.replace(path, name)
        return MAC.sub(lambda m: self.macs.get(m.group(), "xx:xx:xx:xx:xx:xx"), text)

    def text(self, text: str) -> str:
        text = WALL.sub("YYYY-MM-DD hh:mm:ss", self.string(text))
        text = re.sub(r"^((?:Config Revision|Peer Cfg Revision)\s*: )\d+$", r"\1<rev>", text, flags=re.M)
        # the Information row: each number right-aligned in its column, so keep the width
        return re.sub(
            r"^Information .*$",
            lambda m: re.sub(r" +\d+", lambda n: " " * (len(n.group()) - 1) + "N", m.group()),
            text,
            flags=re.M,
        )

    def json(self, value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: self.json(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.json(v, key) for v in value]
        if key in ("time", "monotonic", "config_revision", "ifindex", "statistics_since") and value is not None:
            return f"<{key}>"
        if key in ("dot3OamInformationTx", "dot3OamInformationRx", "accepted", "saves", "wakeups", "long_wakeups"):
            return "<n>"  # keep-alives, control connections and coalesced state writes: timing
        if key in ("busy_seconds", "longest_wakeup_seconds"):
            return "<seconds>"
        if isinstance(value, str):
            return self.string(value)
        return value


def check_golden(name: str, actual: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(actual)
        return
    assert path.exists(), f"no golden file {path}; generate it with EFMOAM_UPDATE_GOLDEN=1 and review it"
    expected = path.read_text()
    assert actual == expected, f"{name} differs from its golden file"


def plain(side: Daemon, norm: Normaliser, name: str, *args: str) -> None:
    result = side.cli(*args)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    check_golden(f"{name}.txt", norm.text(result.stdout))


def as_json(side: Daemon, norm: Normaliser, name: str, *args: str) -> dict[str, Any]:
    result = side.cli(*args, "-f", "json")
    assert result.returncode == 0, result.stderr
    value = json.loads(result.stdout)
    check_golden(f"{name}.json", json.dumps(norm.json(value), indent=2) + "\n")
    assert isinstance(value, dict)
    return value


def quiet_window(side: Daemon) -> bool:
    return bool(side.fast_port()["link_monitoring"]["monitors"]["errored_frame"]["errors_last_window"] == 0)


def known_state(lab: Lab) -> None:
    """A: local errored-frame SF, out of service, settled; B: the remote event logged."""
    lab.start()
    lab.a.set_counters(errored_frames=20, frames_received=2000)
    lab.wait_for(lambda: lab.a.fast_port()["out_of_service"], 5, "A out of service")
    lab.wait_for(lambda: event_entries(lab.b.fast_port(), location="remote"), 5, "B to log the remote event")
    lab.wait_for(
        lambda: lab.a.fast_port()["statistics"]["dot3OamUniqueEventNotificationTx"] == 1, 5, "the notification"
    )
    for side in lab.daemons:  # a window without errors has closed since
        lab.wait_for(partial(quiet_window, side), 5, f"{side.name}: a quiet window")


def test_show_and_clear_golden(lab: Lab) -> None:
    known_state(lab)
    norm = Normaliser(lab)
    a, b = lab.a, lab.b
    plain(a, norm, "a_show_port", "show", "port", "veth0")
    as_json(a, norm, "a_show_port", "show", "port", "veth0")
    plain(a, norm, "a_event_log", "show", "port", "veth0", "event-log")
    as_json(a, norm, "a_event_log", "show", "port", "veth0", "event-log")
    plain(a, norm, "a_statistics", "show", "port", "veth0", "statistics")
    as_json(a, norm, "a_statistics", "show", "port", "veth0", "statistics")
    plain(a, norm, "a_summary", "show", "port")
    as_json(a, norm, "a_summary", "show", "port")
    plain(b, norm, "b_event_log", "show", "port", "veth1", "event-log")
    plain(b, norm, "b_summary", "show", "port")

    plain(a, norm, "a_clear_events_local", "clear", "port", "veth0", "events", "local")
    lab.wait_for(lambda: not lab.block_table_present(a), 5, "the block table to go")
    plain(a, norm, "a_event_log_cleared", "show", "port", "veth0", "event-log")
    plain(a, norm, "a_summary_cleared", "show", "port")
    plain(b, norm, "b_clear_events", "clear", "port", "veth1", "events")
    plain(b, norm, "b_event_log_cleared", "show", "port", "veth1", "event-log")
    plain(a, norm, "a_clear_statistics", "clear", "port", "veth0", "statistics")
    plain(a, norm, "a_statistics_cleared", "show", "port", "veth0", "statistics")


# -- the JSON schema (schema 2): keys and their types, not just a snapshot ----------------

INT, STR, BOOL, FLOAT = "int", "str", "bool", "float"
OPT_INT, OPT_STR, OPT_FLOAT = "int|null", "str|null", "float|null"
POLICY_EVENTS = (
    "session_down", "session_up", "capabilities_conflict", "unidirectional", "loop", "wiring_conflict",
    "remote_loopback",
)  # fmt: skip


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        return INT
    return {float: FLOAT, str: STR}.get(type(value), type(value).__name__)


def check_schema(value: Any, schema: Any, path: str = "$") -> list[str]:
    """Problems of `value` against `schema` (a dict of keys, [item schema], or "type|type")."""
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            return [f"{path}: {type_name(value)}, not an object"]
        problems = []
        if set(value) != set(schema):
            problems.append(f"{path}: keys {sorted(value)} != {sorted(schema)}")
        for key in set(value) & set(schema):
            problems += check_schema(value[key], schema[key], f"{path}.{key}")
        return problems
    if isinstance(schema, list):
        if not isinstance(value, list):
            return [f"{path}: {type_name(value)}, not a list"]
        return [p for i, item in enumerate(value) for p in check_schema(item, schema[0], f"{path}[{i}]")]
    allowed = schema.split("|")
    if FLOAT in allowed:
        allowed.append(INT)  # a JSON number; 1.0 reads back as a float anyway
    return [] if type_name(value) in allowed else [f"{path}: {type_name(value)}, not {schema}"]


MONITOR = {
    "enabled": BOOL,
    "event_notification": BOOL,
    "sf_threshold": INT,
    "sd_threshold": OPT_INT,
    "sd_clear": OPT_INT,
    "sf_clear": OPT_INT,
    "window_seconds": OPT_FLOAT,
    "window_frames": OPT_INT,
    "window_symbols": OPT_INT,
    "window_on_wire": INT,
    "state": STR,
    "errors_last_window": OPT_INT,
    "error_running_total": INT,
    "event_running_total": INT,
}
EVENT = {
    "slot": INT,
    "index": INT,
    "location": STR,
    "type": STR,
    "type_number": INT,
    "severity": STR,
    "time": FLOAT,
    "monotonic": FLOAT,
    "oui": STR,
    "window_seconds": OPT_FLOAT,
    "window_frames": OPT_INT,
    "window_symbols": OPT_INT,
    "window_on_wire": OPT_INT,
    "threshold": OPT_INT,
    "errors": OPT_INT,
    "error_running_total": INT,
    "event_running_total": INT,
    "port_affecting": BOOL,
    "active": BOOL,
}
STATISTICS = {
    f"dot3Oam{name}{way}": INT
    for name in (
        "Information",
        "UniqueEventNotification",
        "DuplicateEventNotification",
        "LoopbackControl",
        "VariableRequest",
        "VariableResponse",
        "OrgSpecific",
        "UnsupportedCodes",
    )
    for way in ("Tx", "Rx")
} | {"dot3OamFramesLostDueToOam": INT}
PORT = {
    "schema": INT,
    "name": STR,
    "mac": STR,
    "admin_state": STR,
    "oper_status": STR,
    "discovery_state": STR,
    "link_up": BOOL,
    "mode": STR,
    "max_pdu_size": INT,
    "config_revision": INT,
    "functions_supported": [STR],
    "vendor_oui": STR,
    "vendor_info": INT,
    "transmit_interval": FLOAT,
    "multiplier": INT,
    "local_flags": [STR],
    "peer": {
        "mac_address": STR,
        "vendor_oui": STR,
        "vendor_info": INT,
        "mode": STR,
        "max_pdu_size": INT,
        "config_revision": INT,
        "functions_supported": [STR],
        "flags": [STR],
    },
    "loopback": {"status": STR, "ignore_rx": STR},
    "link_monitoring": {
        "enabled": BOOL,
        "monitors": {
            "errored_symbol_period": MONITOR,
            "errored_frame": MONITOR,
            "errored_frame_period": MONITOR,
            "errored_frame_seconds": MONITOR,
        },
        "local_sf_action": {"port_action": STR, "event_burst": INT, "dying_gasp": BOOL, "critical_event": BOOL},
        "peer_actions": {"link_fault": STR, "dying_gasp": STR, "critical_event": STR, "event_notification": STR},
    },
    "out_of_service": BOOL,
    "out_of_service_reasons": [STR],
    "down": BOOL,
    "active_events": INT,
    "policy": {
        "event_actions": {name: [STR] for name in POLICY_EVENTS},
        "discovery_timeout": OPT_FLOAT,
        "unidirectional_time": OPT_FLOAT,
        "recovery": {"auto_after": OPT_FLOAT, "hold_down": FLOAT},
        "track": [{"name": STR, "kind": STR, "interval": FLOAT}],
        "events": [
            {
                "name": STR,
                "actions": [STR],
                "since": OPT_FLOAT,
                "since_monotonic": FLOAT,
                "cause": STR,
                "detail": STR,
                "latched": BOOL,
            }
        ],
        "latches": [
            {
                "name": STR,
                "action": STR,
                "location": STR,
                "since": OPT_FLOAT,
                "since_monotonic": FLOAT,
                "recovers_at": OPT_FLOAT,
                "recovers_at_monotonic": OPT_FLOAT,
                "held_down": BOOL,
                "active": BOOL,
            }
        ],
    },
    "event_log": [EVENT],
    "statistics": STATISTICS,
    "drops": {},
    "peer_quirks": {},
    "org_specific_rx_by_oui": {},
    "org_specific_rx_oui_names": {},
    "ifindex": INT,
    "counters": {"source": STR, "provides": {"errored_frames": STR, "frames_received": STR}, "error": OPT_STR},
    "action": {"backend": STR, "applied": BOOL, "pending": BOOL, "error": OPT_STR, "reapplied": INT},
    "loopback_plane": {"pending": BOOL, "error": OPT_STR},
    "rx_rate_limited": INT,
    "rx_policed": {"peer": INT, "others": INT},
    "rx_kernel_drops": INT,
    "tx_errors": INT,
    "tx_held": INT,
    "rx_errors": INT,
    "internal_errors": INT,
    "admin_override": OPT_STR,
    "admin_up": BOOL,
    "statistics_since": FLOAT,
    "state_error": OPT_STR,
}
SUMMARY = {
    "schema": INT,
    "ports": [
        {
            "name": STR,
            "oper_status": STR,
            "discovery_state": STR,
            "mode": STR,
            "peer_mac": STR,
            "peer_oui": STR,
            "local_flags": [STR],
            "peer_flags": [STR],
            "out_of_service": BOOL,
            "active_events": INT,
        }
    ],
    "daemon": {
        "errors": {},
        "state": {"path": STR, "saves": INT, "save_failures": INT, "error": OPT_STR, "set_aside": OPT_STR},
        "control": {
            "accepted": INT,
            "refused": INT,
            "accept_errors": INT,
            "idle_closed": INT,
            "output_overflow": INT,
            "bad_requests": INT,
            "internal_errors": INT,
            "line_too_long": INT,
            "watch_overflow": INT,
        },
        "snmp": "null",  # the lab runs without the subagent (tests/snmp check its view)
        "loop": {"wakeups": INT, "long_wakeups": INT, "busy_seconds": FLOAT, "longest_wakeup_seconds": FLOAT},
    },
}
OPER_STATUS = {
    "disabled", "linkFault", "passiveWait", "activeSendLocal", "sendLocalAndRemote", "sendLocalAndRemoteOk",
    "oamPeeringLocallyRejected", "oamPeeringRemotelyRejected", "operational", "nonOperHalfDuplex",
}  # fmt: skip


def test_json_schema(lab: Lab) -> None:
    known_state(lab)
    view = lab.a.show("veth0")
    assert view["schema"] == 2
    assert check_schema(view, PORT) == []
    assert view["event_log"], "the schema of an entry is checked on a real entry"
    assert view["oper_status"] in OPER_STATUS
    assert view["discovery_state"] in {"FAULT", "ACTIVE_SEND_LOCAL", "PASSIVE_WAIT", "SEND_LOCAL_REMOTE",
                                       "SEND_LOCAL_REMOTE_OK", "SEND_ANY"}  # fmt: skip
    assert all(MAC.fullmatch(mac) for mac in (view["mac"], view["peer"]["mac_address"]))
    assert re.fullmatch(r"[0-9a-f]{2}:[0-9a-f]{2}:[0-9a-f]{2}", view["vendor_oui"])
    entry = view["event_log"][0]
    assert entry["location"] in {"local", "remote"} and entry["severity"] in {"sd", "sf"}
    assert 1 <= entry["slot"] <= 12

    event_log = lab.a.show("veth0", "event-log")
    assert check_schema(event_log, {"schema": INT, "name": STR, "event_log": [EVENT]}) == []
    statistics = lab.a.show("veth0", "statistics")
    shown = {"schema": INT, "name": STR, "statistics": STATISTICS, "drops": {}, "peer_quirks": {}}
    shown |= {"org_specific_rx_by_oui": {}, "org_specific_rx_oui_names": {}}
    assert check_schema(statistics, shown) == []
    summary = lab.a.show()
    assert check_schema(summary, SUMMARY) == []
    assert summary["schema"] == 2
    # the port view and the summary agree
    [line] = summary["ports"]
    for key in ("name", "oper_status", "discovery_state", "mode", "local_flags", "out_of_service", "active_events"):
        assert line[key] == view[key], key
    assert line["peer_mac"] == view["peer"]["mac_address"]
    assert line["peer_flags"] == view["peer"]["flags"]


def test_check_schema_catches_changes() -> None:
    """The checker itself: a missing key, an extra key and a wrong type are all reported."""
    good = {"a": 1, "b": [{"c": "x"}], "d": None}
    schema = {"a": INT, "b": [{"c": STR}], "d": OPT_INT}
    assert check_schema(good, schema) == []
    assert check_schema({"a": True, "b": [{"c": "x"}], "d": None}, schema) == ["$.a: bool, not int"]
    assert check_schema({"a": 1, "b": [{"c": 2}], "d": None}, schema) == ["$.b[0].c: int, not str"]
    assert len(check_schema({"a": 1, "b": [], "d": None, "e": 0}, schema)) == 1
    assert len(check_schema({"a": 1, "b": []}, schema)) == 1


def test_monitor_names_match_the_configuration(lab: Lab) -> None:
    lab.start(lab.a, operational=False)
    monitors = set(lab.a.port()["link_monitoring"]["monitors"])
    configured = set(lab.a.config()["defaults"]["link_monitoring"]) | {
        "errored_symbol_period",
        "errored_frame_period",
        "errored_frame_seconds",  # the configuration's names (config/default.yaml)
    }
    assert monitors <= configured, monitors - configured
