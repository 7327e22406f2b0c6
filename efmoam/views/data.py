"""What `show port` shows, as plain data with stable keys (the JSON of `-f json`).

The one vocabulary of the daemon's outputs (the README's "Field reference"; the log, the
event stream and the metrics use the same names): keys are snake_case; enumerated
values and statistics use their RFC 4878 names (dot3OamOperStatus values such as
``activeSendLocal``, dot3OamStatsTable counters such as ``dot3OamInformationTx``,
dot3OamEventLogType names such as ``erroredFrameEvent``); ``time``, ``since`` and
``*_at`` are seconds since the epoch, ``monotonic`` and ``*_monotonic`` the daemon's
monotonic seconds; a window is named by its unit (``window_seconds``, ``window_frames``,
``window_symbols``; ``window_on_wire`` the TLV's value); other durations are seconds.
Every list stays a list, even with one item; `SCHEMA` grows when a key changes name or
meaning (2: the event-log entry's, the monitors' window and the policy's times renamed).
Keys that only some ports have are added, not renamed: ``link_monitoring.health_monitors``
(the NIC health monitors, present only when one is enabled) and an event-log entry's
``monitor`` (NIC health events only).
"""

from __future__ import annotations

from typing import Any

from efmoam.core import OamPort
from efmoam.core.linkmon.eventlog import window_view
from efmoam.core.linkmon.kinds import FACTS, HealthKind, WindowUnit
from efmoam.core.outputs import LoopbackStatus, OperStatus
from efmoam.core.policy.settings import EventName
from efmoam.core.variables import ATTRIBUTES
from pdu import Branch, Flag, OamConfig, VariableContainer, VariableIndication, format_oui

SCHEMA = 2
#: the schema of the variables JSON (``efmoam variables -f json``)
VARIABLES_SCHEMA = 1

OPER_STATUS_NAMES = {
    OperStatus.DISABLED: "disabled",
    OperStatus.LINK_FAULT: "linkFault",
    OperStatus.PASSIVE_WAIT: "passiveWait",
    OperStatus.ACTIVE_SEND_LOCAL: "activeSendLocal",
    OperStatus.SEND_LOCAL_AND_REMOTE: "sendLocalAndRemote",
    OperStatus.SEND_LOCAL_AND_REMOTE_OK: "sendLocalAndRemoteOk",
    OperStatus.OAM_PEERING_LOCALLY_REJECTED: "oamPeeringLocallyRejected",
    OperStatus.OAM_PEERING_REMOTELY_REJECTED: "oamPeeringRemotelyRejected",
    OperStatus.OPERATIONAL: "operational",
    OperStatus.NON_OPER_HALF_DUPLEX: "nonOperHalfDuplex",
}
LOOPBACK_NAMES = {
    LoopbackStatus.NO_LOOPBACK: "noLoopback",
    LoopbackStatus.INITIATING_LOOPBACK: "initiatingLoopback",
    LoopbackStatus.REMOTE_LOOPBACK: "remoteLoopback",
    LoopbackStatus.TERMINATING_LOOPBACK: "terminatingLoopback",
    LoopbackStatus.LOCAL_LOOPBACK: "localLoopback",
    LoopbackStatus.UNKNOWN: "unknown",
}
#: dot3OamFunctionsSupported bit names
FUNCTION_NAMES = {
    OamConfig.UNIDIRECTIONAL: "unidirectionalSupport",
    OamConfig.REMOTE_LOOPBACK: "loopbackSupport",
    OamConfig.LINK_EVENTS: "eventSupport",
    OamConfig.VARIABLE_RETRIEVAL: "variableSupport",
}


#: each Flags bit (an int: enum arithmetic per bit cost most of ``show ports``) and its name
_FLAG_BITS = tuple((int(flag), str(flag.name).lower()) for flag in Flag)


def flag_names(flags: int) -> list[str]:
    flags = int(flags)
    return [name for bit, name in _FLAG_BITS if flags & bit]


def function_names(config: int) -> list[str]:
    return [name for bit, name in FUNCTION_NAMES.items() if config & bit]


def _monitors_view(port: OamPort) -> dict[str, Any]:
    view: dict[str, Any] = {}
    for kind, monitor in port.link_monitoring.monitors.items():
        settings = monitor.settings
        facts = FACTS[kind]
        view[facts.key] = {
            "enabled": settings.enabled,
            "event_notification": settings.event_notification,
            "sf_threshold": settings.sf_threshold,
            "sd_threshold": settings.sd,
            "sd_clear": settings.sd_clear,
            "sf_clear": settings.sf_clear,
            **window_view(
                facts, monitor.wire_window, None if facts.window_unit is WindowUnit.FRAMES else monitor.window_seconds
            ),
            "state": monitor.state.value,
            "errors_last_window": monitor.last_errors,
            "error_running_total": monitor.error_total,
            "event_running_total": monitor.event_total,
        }
    return view


def _health_view(port: OamPort) -> dict[str, Any]:
    """The enabled NIC health monitors: settings with their defaults filled in, state, the
    last closed window (``errors_last_window`` the counters' increase, ``value_last_window``
    what the thresholds compare: a count, or a rate per second), and fec_corrected's
    ``pre_fec_ber`` (null: blocks only, unknown speed or no window yet)."""
    view: dict[str, Any] = {}
    for kind, monitor in port.link_monitoring.health_monitors.items():
        if not monitor.enabled:
            continue
        facts = monitor.health
        view[facts.key] = {
            "enabled": True,
            "fatal": monitor.fatal,
            "counting": facts.counting.name.lower(),
            "threshold_unit": facts.threshold_unit,
            "sf_threshold": monitor.sf,
            "sd_threshold": monitor.sd,
            "window_seconds": monitor.window_seconds,
            "counters": list(facts.counters),
            "state": monitor.state.value,
            "errors_last_window": monitor.last_errors,
            "value_last_window": monitor.last_value,
            "fatal_last_window": monitor.last_fatal if monitor.fatal else None,
            "error_running_total": monitor.error_total,
            "event_running_total": monitor.event_total,
            **({"pre_fec_ber": port.link_monitoring.ber_estimate} if kind is HealthKind.FEC_CORRECTED else {}),
        }
    return view


def _policy_view(port: OamPort) -> dict[str, Any]:
    """The action policy: its settings, the active session events and the latches (each with
    whether it recovers by itself, and when: ``recovers_at``, null for by hand only)."""
    policy = port.settings.policy
    return {
        "event_actions": {
            name.value: sorted(action.value for action in policy.event_actions.of(name)) for name in EventName
        },
        "discovery_timeout": policy.discovery_timeout,
        "unidirectional_time": policy.unidirectional_time,
        "recovery": {"auto_after": policy.recovery.auto_after, "hold_down": policy.recovery.hold_down},
        "track": [{"name": t.name, "kind": t.kind.value, "interval": t.interval} for t in policy.track],
        **port.policy_view(port.link_monitoring.wall_clock_offset),
    }


def _org_specific_view(port: OamPort) -> dict[str, Any]:
    """Organization Specific OAMPDUs received per OUI ("00:11:22", or "other" past those
    counted by name: `efmoam.core.stats.OuiCounts`), and the names `pdu.oui` knows of them."""
    rows = port.org_specific_rx_by_oui.labelled()
    return {
        "org_specific_rx_by_oui": {oui: count for oui, _, count in rows},
        "org_specific_rx_oui_names": {oui: name for oui, name, _ in rows if name},
    }


def port_view(name: str, port: OamPort, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything `show port NAME` shows, from the port's engine (and the daemon's `extra`)."""
    s = port.settings
    lm = s.link_monitoring
    peer = port.peer
    view: dict[str, Any] = {
        "schema": SCHEMA,
        "name": name,
        "mac": port.mac,
        "admin_state": "enabled" if s.enabled else "disabled",
        "oper_status": OPER_STATUS_NAMES[port.oper_status],
        "discovery_state": port.state.value,
        "link_up": port.link_up,
        "mode": s.mode.value,
        "max_pdu_size": s.max_pdu_size,
        "config_revision": port.local_tlv.revision,
        "functions_supported": function_names(port.local_tlv.oam_config),
        "vendor_oui": format_oui(s.oui),
        "vendor_info": s.vendor_info,
        "transmit_interval": s.transmit_interval,
        "multiplier": s.multiplier,
        "local_flags": flag_names(port.local_flags),
        "peer": None
        if peer is None
        else {
            "mac_address": peer.mac,
            "vendor_oui": format_oui(peer.oui),
            "vendor_info": peer.vendor_info,
            "mode": "active" if peer.mode_active else "passive",
            "max_pdu_size": peer.max_pdu_size,
            "config_revision": peer.config_revision,
            "functions_supported": function_names(peer.functions),
            "flags": flag_names(port.peer_flags),
        },
        "loopback": {
            "status": LOOPBACK_NAMES[port.loopback],
            "ignore_rx": "process" if s.loopback_process else "ignore",
        },
        "link_monitoring": {
            "enabled": lm.enabled,
            "monitors": _monitors_view(port),
            **({"health_monitors": health} if (health := _health_view(port)) else {}),
            "local_sf_action": {
                "port_action": lm.local_sf_action.port_action.value,
                "event_burst": lm.local_sf_action.event_burst,
                "dying_gasp": lm.local_sf_action.dying_gasp,
                "critical_event": lm.local_sf_action.critical_event,
            },
            "peer_actions": {
                "link_fault": lm.peer_actions.link_fault.value,
                "dying_gasp": lm.peer_actions.dying_gasp.value,
                "critical_event": lm.peer_actions.critical_event.value,
                "event_notification": lm.peer_actions.event_notification.value,
            },
        },
        "out_of_service": port.out_of_service,
        "out_of_service_reasons": list(port.service.reasons),
        "down": port.service.down,
        "active_events": len(port.link_monitoring.active),
        "policy": _policy_view(port),
        "event_log": [entry.view(slot) for slot, entry in port.event_log()],
        "statistics": port.stats.as_rfc4878(),
        "drops": dict(sorted(port.drops.items())),
        "peer_quirks": dict(sorted(port.quirks.items())),
        **_org_specific_view(port),
    }
    if extra:
        view.update(extra)
    return view


def summary_view(name: str, port: OamPort) -> dict[str, Any]:
    """One line of `show port` without a port name."""
    peer = port.peer
    return {
        "name": name,
        "oper_status": OPER_STATUS_NAMES[port.oper_status],
        "discovery_state": port.state.value,
        "mode": port.settings.mode.value,
        "peer_mac": None if peer is None else peer.mac,
        "peer_oui": None if peer is None else format_oui(peer.oui),
        "local_flags": flag_names(port.local_flags),
        "peer_flags": flag_names(port.peer_flags),
        "out_of_service": port.out_of_service,
        "active_events": len(port.link_monitoring.active),
    }


def variable_view(container: VariableContainer) -> dict[str, Any]:
    """One Variable Container of a Variable Response (values as hex strings)."""
    attribute = ATTRIBUTES.get(container.leaf) if container.branch == Branch.ATTRIBUTE else None
    indication = container.indication
    name = None
    if indication is not None and indication in VariableIndication._value2member_map_:
        name = VariableIndication(indication).name.lower()
    return {
        "branch": container.branch,
        "leaf": container.leaf,
        "name": None if attribute is None else attribute.name,
        "values": [value.hex() for value in container.values],
        "indication": indication,
        "indication_name": name,
    }
