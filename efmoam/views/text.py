"""Plain-text rendering of the `show` views (the JSON of `-f json`), for people.

The CLI renders what the daemon sends without importing the engine or scapy: only the
monitor table (`efmoam.core.linkmon.kinds`), for the monitors' titles.  The layout
follows the `show port ... ethernet efm-oam` output that operators know: a ``Field :
Value`` block, monitors side by side, then the tables.
"""

from __future__ import annotations

import time
from typing import Any

from efmoam.core.linkmon.kinds import HEALTH, MONITORS, MonitorFacts, WindowUnit
from pdu.enums import CRITICAL_FLAGS

RULE = "=" * 79
THIN = "-" * 79


def _on(value: bool) -> str:
    return "enabled" if value else "disabled"


def _join(values: list[str]) -> str:
    return ", ".join(values) if values else "none"


def _field(name: str, value: object, width: int = 19) -> str:
    return f"{name:<{width}}: {value}"


def _wall(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds))


def _window(facts: MonitorFacts, monitor: dict[str, Any]) -> list[str]:
    if facts.window_unit is WindowUnit.FRAMES:
        return [_field("  Window", f"{monitor['window_frames']} frames")]
    lines = [_field("  Window", f"{monitor['window_seconds'] * 10:g} ds")]
    if monitor["window_symbols"] is not None:
        lines.append(_field("  Window (symbols)", monitor["window_symbols"]))
    return lines


def _monitor_block(facts: MonitorFacts, monitor: dict[str, Any]) -> list[str]:
    sd = monitor["sd_threshold"]
    return [
        facts.title,
        _field("  Enabled", "yes" if monitor["enabled"] else "no"),
        _field("  Event Notify", _on(monitor["event_notification"])),
        _field("  SF Threshold", monitor["sf_threshold"]),
        _field("  SD Threshold", sd if sd is not None else "disabled (0)"),
        *_window(facts, monitor),
        _field("  State", monitor["state"]),
        _field("  Errors (last)", "-" if monitor["errors_last_window"] is None else monitor["errors_last_window"]),
        _field("  Running Totals", f"errors {monitor['error_running_total']}, events {monitor['event_running_total']}"),
    ]


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _health_block(title: str, monitor: dict[str, Any]) -> list[str]:
    rate = monitor["counting"] == "rate"
    unit = " /s" if rate else ""
    sd = monitor["sd_threshold"]
    last = monitor["errors_last_window"]
    lines = [
        title,
        _field("  Fatal", "yes" if monitor["fatal"] else "no"),
        _field("  SF Threshold", f"{monitor['sf_threshold']:g}{unit}"),
        _field("  SD Threshold", f"{sd:g}{unit}" if sd is not None else "disabled (0)"),
        _field("  Window", f"{monitor['window_seconds']:g} s"),
        _field("  State", monitor["state"]),
        _field("  Errors (last)", "-" if last is None else f"{last} ({_number(monitor['value_last_window'])}{unit})"
               if rate else last),
    ]  # fmt: skip
    if "pre_fec_ber" in monitor:
        ber = monitor["pre_fec_ber"]
        lines.append(_field("  Pre-FEC BER", "-" if ber is None else f"{ber:.2e}"))
    lines.append(
        _field("  Running Totals", f"errors {monitor['error_running_total']}, events {monitor['event_running_total']}")
    )
    return lines


def _health_lines(view: dict[str, Any]) -> list[str]:
    """The enabled NIC health monitors, two by two, and the health counters the port's source provides."""
    monitors = view["link_monitoring"].get("health_monitors") or {}
    if not monitors:
        return []
    blocks = [_health_block(facts.title, monitors[facts.key]) for facts in HEALTH if facts.key in monitors]
    lines = ["NIC Health Monitors"]
    for at in range(0, len(blocks), 2):
        lines += _side_by_side(blocks[at], blocks[at + 1] if at + 1 < len(blocks) else [])
    provides = (view.get("counters") or {}).get("provides") or {}
    wanted = {name for facts in HEALTH if facts.key in monitors for name in facts.counters}
    health = sorted(name for name in provides if name in wanted)
    lines.append(_field("Health Counters", _join([f"{name} ({provides[name]})" for name in health])))
    return lines


def _side_by_side(left: list[str], right: list[str]) -> list[str]:
    rows = max(len(left), len(right))
    left = left + [""] * (rows - len(left))
    right = right + [""] * (rows - len(right))
    return [f"{a:<40}{b}".rstrip() for a, b in zip(left, right, strict=True)]


_CRITICAL_FLAG_NAMES = frozenset(str(flag.name).lower() for flag in CRITICAL_FLAGS)
#: the monitors as ``show port`` lays them out: two rows of two
_MONITOR_ROWS = (("errored_frame", "errored_frame_period"), ("errored_symbol_period", "errored_frame_seconds"))


def render_port(view: dict[str, Any]) -> str:
    """The full view of one port."""
    peer = view["peer"]
    lm = view["link_monitoring"]
    action = lm["local_sf_action"]
    peer_actions = lm["peer_actions"]
    lines = [
        RULE,
        f"Ethernet OAM (802.3ah) {view['name']}",
        RULE,
        _field("Admin State", view["admin_state"]),
        _field("Oper State", view["oper_status"]),
        _field("Discovery State", view["discovery_state"]),
        _field("Mode", view["mode"]),
        _field("Pdu Size", view["max_pdu_size"]),
        _field("Config Revision", view["config_revision"]),
        _field("Function Support", _join(view["functions_supported"])),
        _field("Transmit Interval", f"{view['transmit_interval'] * 1000:g} ms"),
        _field("Multiplier", view["multiplier"]),
        _field("Vendor OUI", view["vendor_oui"]),
        _field("Vendor Info", f"0x{view['vendor_info']:08x}"),
        _field("Local Flags", _join(view["local_flags"])),
    ]
    if peer is None:
        lines.append(_field("Peer", "none"))
    else:
        lines += [
            _field("Peer Mac Address", peer["mac_address"]),
            _field("Peer Vendor OUI", peer["vendor_oui"]),
            _field("Peer Vendor Info", f"0x{peer['vendor_info']:08x}"),
            _field("Peer Mode", peer["mode"]),
            _field("Peer Pdu Size", peer["max_pdu_size"]),
            _field("Peer Cfg Revision", peer["config_revision"]),
            _field("Peer Support", _join(peer["functions_supported"])),
            _field("Peer Flags", _join(peer["flags"])),
        ]
    lines += [
        _field("Loopback State", view["loopback"]["status"]),
        _field("Loopback Ignore Rx", view["loopback"]["ignore_rx"]),
        _field("Link Monitoring", _on(lm["enabled"])),
        "Peer RDI Rx",
        _field("  Critical Event", peer_actions["critical_event"]),
        _field("  Dying Gasp", peer_actions["dying_gasp"]),
        _field("  Link Fault", peer_actions["link_fault"]),
        _field("  Event Notify", peer_actions["event_notification"]),
        "Local SF Action",
        _field("  Event Burst", action["event_burst"]),
        _field("  Port Action", action["port_action"]),
        _field("  Dying Gasp", _on(action["dying_gasp"])),
        _field("  Critical Event", _on(action["critical_event"])),
    ]
    monitors = lm["monitors"]
    blocks = {facts.key: _monitor_block(facts, monitors[facts.key]) for facts in MONITORS}
    for left, right in _MONITOR_ROWS:
        lines += _side_by_side(blocks[left], blocks[right])
    lines += _health_lines(view)
    service = "down" if view.get("down") else "out of service" if view["out_of_service"] else "in service"
    reasons = f" ({_join(view['out_of_service_reasons'])})" if view["out_of_service"] else ""
    lines += [
        _field("Port", service + reasons),
        _field("Active Events", view["active_events"]),
        *_policy_lines(view.get("policy")),
        RULE,
        render_statistics(view).rstrip("\n"),
    ]
    return "\n".join(lines) + "\n"


def _policy_lines(policy: dict[str, Any] | None) -> list[str]:
    """The active session events and the latches: what each does, and how it ends."""
    if policy is None:
        return []
    lines = []
    for event in policy["events"]:
        latched = ", latched" if event["latched"] else ""
        lines.append(
            _field("Session Event", f"{event['name']} since {_wall(event['since'])} "
                   f"({_join(event['actions'])}{latched}; {event['cause']})")
        )  # fmt: skip
    for latch in policy["latches"]:
        if latch["recovers_at"] is not None:
            ends = f"recovers at {_wall(latch['recovers_at'])}"
        else:
            ends = "held down: clear by hand" if latch["held_down"] else "until cleared by hand"
        lines.append(_field("Latched", f"{latch['name']} ({latch['action']}) since {_wall(latch['since'])}, {ends}"))
    return lines


def render_statistics(view: dict[str, Any]) -> str:
    """The RFC 4878 counters as an Input/Output table, then the drops."""
    stats = view["statistics"]
    rows = [
        ("Information", "Information"),
        ("Loopback Control", "LoopbackControl"),
        ("Unique Event Notify", "UniqueEventNotification"),
        ("Duplicate Event Notify", "DuplicateEventNotification"),
        ("Variable Request", "VariableRequest"),
        ("Variable Response", "VariableResponse"),
        ("Organization Specific", "OrgSpecific"),
        ("Unsupported Codes", "UnsupportedCodes"),
    ]
    lines = [
        f"Ethernet OAM Statistics {view['name']}",
        THIN,
        f"{'':<40}{'Input':>19}{'Output':>20}",
        *(f"{label:<40}{stats[f'dot3Oam{key}Rx']:>19}{stats[f'dot3Oam{key}Tx']:>20}" for label, key in rows),
        f"{'Frames Lost':<40}{'':>19}{stats['dot3OamFramesLostDueToOam']:>20}",
    ]
    drops = view.get("drops") or {}
    if drops:
        lines.append("Frames dropped: " + ", ".join(f"{reason} {count}" for reason, count in drops.items()))
    if view.get("tx_held"):
        lines.append(f"Frames held for the 10/s limit: {view['tx_held']}")
    if view.get("internal_errors"):
        lines.append(f"Internal errors (see the log): {view['internal_errors']}")
    quirks = view.get("peer_quirks") or {}
    if quirks:
        lines.append("Peer quirks: " + ", ".join(f"{reason} {count}" for reason, count in quirks.items()))
    by_oui = view.get("org_specific_rx_by_oui") or {}
    if by_oui:
        names = view.get("org_specific_rx_oui_names") or {}
        counts = (f"{oui}{f' ({names[oui]})' if oui in names else ''} {count}" for oui, count in by_oui.items())
        lines.append("Organization Specific received per OUI: " + ", ".join(counts))
    return "\n".join(lines) + "\n"


def render_event_log(view: dict[str, Any]) -> str:
    """The 12 slots of the event log (more while more events are active than the ring holds)."""
    lines = [
        f"Ethernet OAM Event Log {view['name']}",
        THIN,
        f"{'Slot':<5}{'Time':<20}{'Loc':<7}{'Type':<25}{'Sev':<4}{'Value':>8}{'Thresh':>8}{'Window':>12}"
        f"{'Total':>8}{'Events':>7}  Port  State",
    ]
    shown: dict[int, list[dict[str, Any]]] = {}
    for entry in view["event_log"]:  # a flag slot shows a remote and a local entry while both are active
        shown.setdefault(entry["slot"], []).append(entry)
    for slot in range(1, max([12, *shown]) + 1):
        if slot not in shown:
            lines.append(f"{slot:<5}-")
        lines += [_event_line(slot, entry) for entry in shown.get(slot, ())]
    return "\n".join(lines) + "\n"


def _event_line(slot: int, entry: dict[str, Any]) -> str:
    return (
        f"{slot:<5}{_wall(entry['time']):<20}{entry['location']:<7}{entry.get('monitor') or entry['type']:<25}"
        f"{entry['severity']:<4}{_opt(entry['errors']):>8}{_opt(entry['threshold']):>8}{_window_cell(entry):>12}"
        f"{entry['error_running_total']:>8}{entry['event_running_total']:>7}  "
        f"{'yes' if entry['port_affecting'] else 'no':<4}  "
        f"{'active' if entry['active'] else 'cleared'}"
    )


def _window_cell(entry: dict[str, Any]) -> str:
    """An entry's window in its unit: seconds, frames or symbols."""
    if entry["window_seconds"] is not None:
        return f"{entry['window_seconds']:g} s"
    if entry["window_frames"] is not None:
        return f"{entry['window_frames']} fr"
    if entry["window_symbols"] is not None:
        return f"{entry['window_symbols']} sym"
    return "-"


def _opt(value: int | None) -> str:
    return "-" if value is None else str(value)


def render_summary(views: list[dict[str, Any]]) -> str:
    """One line per port."""
    lines = [f"{'Port':<16}{'Oper State':<28}{'Mode':<9}{'Peer MAC':<19}{'Flags (local/peer)':<26}{'Service':<9}Events"]
    for view in views:
        flags = "/".join(
            ",".join(f for f in view[key] if f in _CRITICAL_FLAG_NAMES) or "-" for key in ("local_flags", "peer_flags")
        )
        lines.append(
            f"{view['name']:<16}{view['oper_status']:<28}{view['mode']:<9}{view['peer_mac'] or '-':<19}"
            f"{flags:<26}{'out' if view['out_of_service'] else 'in':<9}{view['active_events']}"
        )
    return "\n".join(lines) + "\n"


def _variable_value(variable: dict[str, Any]) -> str:
    """What a Variable Container holds: a MAC address, a number, or raw octets."""
    values: list[str] = variable["values"]
    if not values:
        code = variable["indication"]
        return f"{variable['indication_name'] or 'indication'} (0x{code:02x})" if code is not None else "-"
    if len(values) > 1:
        return " ".join(values)
    (value,) = values
    if (variable["name"] or "").endswith("MACAddress") and len(value) == 12:
        return ":".join(value[i : i + 2] for i in range(0, 12, 2))
    if len(value) <= 16:
        return f"{int(value, 16)} (0x{value})"
    return value


def render_variables(port: str, variables: list[dict[str, Any]]) -> str:
    """A Variable Response: one line per container, leaf, attribute name and value."""
    lines = [f"{port}: Variable Response from the peer", f"  {'Leaf':<6}{'Attribute':<34}Value"]
    for variable in variables:
        lines.append(f"  {variable['leaf']:<6}{variable['name'] or '-':<34}{_variable_value(variable)}")
    return "\n".join(lines) + "\n"
