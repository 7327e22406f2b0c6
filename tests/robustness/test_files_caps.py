"""The caps of `efmoam.linux.files` leave room for the largest real files: a host of
4,096 ports, each with a full event log and every active event it can have, numbers at
their widest; a counter file for 4,096 ports; a configuration of one rule per port."""

from __future__ import annotations

import json
from typing import Any

from efmoam.config.loader import load_config_text
from efmoam.core.linkmon.eventlog import EventLogEntry, Location, Severity
from efmoam.core.linkmon.events import EventKey
from efmoam.core.linkmon.kinds import MonitorKind
from efmoam.linux.files import CONFIG_FILE_LIMIT, COUNTER_FILE_LIMIT, STATE_FILE_LIMIT
from pdu.enums import EventLogType, Flag

PORTS = 4096


def _entry(index: int, event_type: EventLogType) -> EventLogEntry:
    return EventLogEntry(
        index=2**40 + index, location=Location.REMOTE, event_type=event_type, severity=Severity.FAILURE,
        time=123456789.123456789, wall_time=1712345678.123456, window=2**40, threshold=2**33, value=2**33,
        running_total=2**60, event_total=2**40, port_affecting=True, active=True,
    )  # fmt: skip


def worst_port_snapshot() -> dict[str, Any]:
    """A port's snapshot at its largest: 15 log entries (9 ring slots, 3 flag slots of 2
    entries) and all 14 active events (4 monitors and 3 flags, each local and remote)."""
    types = list(EventLogType)
    log = [_entry(n, types[n % len(types)]).saved(n % 12 + 1) for n in range(15)]
    sources: list[MonitorKind | Flag] = [*MonitorKind, Flag.LINK_FAULT, Flag.DYING_GASP, Flag.CRITICAL_EVENT]
    keys = [EventKey(location, source) for location in Location for source in sources]
    active = [{"key": key.view(), "flags": 3, "entry": _entry(n, types[0]).saved(None)} for n, key in enumerate(keys)]
    return {"version": 3, "next_index": 2**40, "log": log, "active": active}


def test_the_state_of_4096_ports_at_their_largest_fits() -> None:
    one = len(json.dumps({"ens1f0np0.4094": worst_port_snapshot()}, separators=(",", ":")))
    assert 10_000 < one < 12_000  # measured: 11.1 KiB a port
    total = PORTS * one + 100
    assert total < 0.75 * STATE_FILE_LIMIT  # 44 MiB of 64 MiB


def test_a_counter_file_of_4096_ports_fits() -> None:
    counters = {"errored_frames": 2**64 - 1, "frames_received": 2**64 - 1, "symbol_errors": 2**64 - 1}
    document = {f"Ethernet{n // 64}/{n % 64}/1": counters for n in range(PORTS)}
    size = len(json.dumps(document, indent=4))  # pretty-printed: the largest usual form
    assert size < COUNTER_FILE_LIMIT / 4  # measured: 0.7 MiB of 4 MiB


def test_a_configuration_with_a_rule_per_port_fits() -> None:
    rule = (
        "  - match: ens{n}f0\n    mode: passive\n    counter_source: file\n"
        "    counter_file: /run/counters/ens{n}f0.json\n    link_monitoring:\n"
        "      errored_frame: {{window: 10, sf_threshold: 5, sd_threshold: 2}}\n"
    )
    text = "ports:\n" + "".join(rule.format(n=n) for n in range(PORTS))
    assert len(text) < 0.8 * CONFIG_FILE_LIMIT  # measured: 0.78 MiB of 1 MiB
    # the rule is valid (loading all 4,096 takes seconds: each rule is checked against the ones before)
    assert len(load_config_text("ports:\n" + "".join(rule.format(n=n) for n in range(20))).rules) == 20
