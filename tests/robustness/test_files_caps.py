"""The caps of `efmoam.linux.files` leave room for the largest real files: a host of
4,096 ports, each with a full event log and every active event it can have, numbers at
their widest; a counter file for 4,096 ports; a configuration of one rule per port."""

from __future__ import annotations

import json
from typing import Any

from efmoam.config.loader import load_config_text
from efmoam.core.linkmon.engine import LinkMonitoring
from efmoam.core.linkmon.eventlog import FLAG_SLOTS, MAX_SLOT, EventLogEntry, Location, Severity
from efmoam.core.linkmon.events import EventKey
from efmoam.core.linkmon.kinds import FACTS, HEALTH, HEALTH_FACTS, HealthKind, MonitorKind
from efmoam.core.linkmon.persist import restore
from efmoam.core.linkmon.settings import HealthSettings, LinkMonitoringSettings
from efmoam.linux.files import CONFIG_FILE_LIMIT, COUNTER_FILE_LIMIT, STATE_FILE_LIMIT
from pdu.enums import FLAG_EVENT_TYPES, EventLogType, Flag

PORTS = 4096


def _entry(index: int, key: EventKey) -> EventLogEntry:
    """The active entry of `key`'s event, every number at its widest."""
    source = key.source
    numbers: dict[str, Any]
    if isinstance(source, HealthKind):  # a window in milliseconds up to link_flaps' day, shown in seconds
        numbers = {"event_type": EventLogType.NIC_HEALTH_EVENT, "monitor": HEALTH_FACTS[source].key,
                   "window": 86_399_999, "threshold": 2**62, "value": 2**63}  # fmt: skip
    elif isinstance(source, Flag):
        numbers = {"event_type": FLAG_EVENT_TYPES[source]}
    else:
        numbers = {"event_type": FACTS[source].log_type, "window": 2**40, "threshold": 2**33, "value": 2**33}
    return EventLogEntry(
        index=2**40 + index, location=key.location, severity=Severity.FAILURE, time=123456789.123456789,
        wall_time=1712345678.123456, running_total=2**60, event_total=2**40, port_affecting=True, active=True,
        **numbers,
    )  # fmt: skip


#: every event a port can have active at once: the four monitors and the three flags, each
#: local and remote, and the five NIC health monitors (local only): 19
WORST_KEYS = [
    *(EventKey(location, source) for location in Location for source in [*MonitorKind, *FLAG_EVENT_TYPES]),
    *(EventKey(Location.LOCAL, kind) for kind in HealthKind),
]


def worst_port_snapshot() -> dict[str, Any]:
    """A port's snapshot at its largest: all 19 events active, and 19 log entries showing
    them (the 3 flag slots with a local and a remote entry each, 13 monitor entries in
    slots 4-16: the log grows past 12 only while more are active)."""
    entries = {key: _entry(n, key) for n, key in enumerate(WORST_KEYS)}
    monitor_slots = iter(range(4, MAX_SLOT + 1))
    log = [
        entry.saved(FLAG_SLOTS[entry.event_type] if key.is_flag else next(monitor_slots))
        for key, entry in entries.items()
    ]
    failure_flags = {
        key: Flag.CRITICAL_EVENT if key.location is Location.LOCAL and not key.is_flag else 0 for key in entries
    }
    active = [
        {"key": key.view(), "flags": int(failure_flags[key]), "entry": entry.saved(None)}
        for key, entry in entries.items()
    ]
    return {"version": 3, "next_index": 2**40 + len(entries), "log": log, "active": active}


def test_the_worst_snapshot_is_one_a_port_can_have() -> None:
    """The daemon restores it: every event active, every entry in its slot."""
    health: dict[str, Any] = {facts.key: HealthSettings(enabled=True) for facts in HEALTH}
    settings = LinkMonitoringSettings(enabled=True, **health)
    monitoring = LinkMonitoring(settings, epoch=0.0)
    snapshot = worst_port_snapshot()
    assert (len(snapshot["log"]), len(snapshot["active"])) == (19, 19)
    assert restore(monitoring, snapshot) == []
    # the three local flag events come back cleared (persist's rule), their entries leave the flag slots
    assert len(list(monitoring.active)) == 16
    assert sorted(slot for slot, entry in monitoring.log.entries() if entry.active) == [
        1,
        2,
        3,
        *range(4, MAX_SLOT + 1),
    ]


def test_the_state_of_4096_ports_at_their_largest_fits() -> None:
    one = len(json.dumps({"ens1f0np0.4094": worst_port_snapshot()}, separators=(",", ":")))
    assert 14_000 < one < 16_000  # measured: 14.8 KiB a port (11.1 KiB before the NIC health events)
    total = PORTS * one + 100
    # 59 MiB: the cap was 64 MiB, too close once latches (up to 64 a port) are added; now 96
    assert total < 0.65 * STATE_FILE_LIMIT


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
