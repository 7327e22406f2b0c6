"""``show port -f yang``: the ports as data of the IEEE 802.3.2 YANG model, in RFC 7951 JSON.

The model is ``ieee802-ethernet-link-oam`` of IEEE Std 802.3.2 (revision 2025-09-10, the
newest; the 2019-06-21 revision differs in the remote MAC address form, see below), which
augments RFC 8343's ``/if:interfaces/if:interface`` of Ethernet interfaces with a
``link-oam`` container.  `interfaces` turns the ``show port -f json`` views of
`efmoam.views.data` (plain dicts, as the daemon sends them) into one
``ietf-interfaces:interfaces`` instance: an operational-datastore document (configuration
and state together), valid against the model with every feature enabled.  Standard library
only: the CLI calls it on what the daemon sent.

RFC 7951 encoding: 64-bit integers (``uint64``, ``counter64``) are JSON strings, narrower
ones JSON numbers; identities are written with their module name; members of the
augmentation carry the module-name prefix once, on ``link-oam``.

Choices, where the view and the model do not meet exactly:

* ``ietf-interfaces``: ``type`` is ``ethernetCsmacd`` (the daemon runs on Ethernet ports
  only).  ``oper-status`` is ``down`` without carrier, ``testing`` while the port is in
  OAM remote loopback either way (it passes no user traffic), ``up`` otherwise.
  ``admin-status`` is the view's ``admin_up`` (the interface's IFF_UP) when the daemon
  sends it; without it, ``down`` while the action policy holds the port down, ``up``
  otherwise (a carrier implies it).  ``if-index`` is the view's ``ifindex``, left out when
  the view has none (a view made without the daemon).  ``statistics/discontinuity-time``
  is the view's ``statistics_since`` (when the port's counters last started from zero)
  when the daemon sends it; without it, the time of the query: counters may then have
  restarted at any time up to now, so a client never computes a rate across a reset it
  cannot see.  No ``ietf-interfaces`` counters are given: the NIC's are not ours to report.
* ``discovery-info/local``: ``operational-status`` follows RFC 4878 dot3OamOperStatus by
  number (the model names value 10 ``operational-half-duplex``; RFC 4878 and we call it
  ``nonOperHalfDuplex``: OAM does not run on a half-duplex link).  The functions are the
  bits we advertise in our Local Information TLV.  ``link-monitor/event-type`` lists the
  four monitors with the window and the signal-failure threshold they use (or would use:
  the model cannot say that a monitor is off, see the README).  Windows are in the model's
  units, which are the Link Event TLVs': symbols, deciseconds (errored frame and errored
  frame seconds), frames (errored frame period).  The deprecated ``mib-retrieval`` leaf is
  left out; ``data-retrieval`` replaces it.
* ``discovery-info/remote`` is there for every port because its ``loopback-mode`` is
  mandatory; without a peer it holds only ``loopback-mode: none``.  ``loopback-mode`` is
  derived from ours (the engine follows the peer's State field): the peer loops our frames
  while we are master or terminating, it is master while we loop its frames.  The MAC
  address is in the IEEE 802 form the 2025 revision asks for (``00-1B-21-AA-BB-CC``; the
  2019 revision wanted colons).
* ``event-log``: one entry per entry the 12-slot log shows, by index.  ``timestamp`` is the
  entry's wall-clock time in milliseconds since the epoch; an entry without one (only from
  an engine run without a wall clock, never from the daemon) is left out, as the leaf is
  mandatory.  The four monitor types are ``threshold-event-type`` with the ``threshold``
  container (window, threshold, errors: the values of the RFC 4878 entry, all-ones where it
  has none); the flags are ``link-fault-event``, ``dying-gasp-event``, ``critical-event``.
  Severity (SD/SF), active or cleared and port-affecting are beyond the model.
* ``statistics``: the 17 RFC 4878 counters by name.  ``local-error-*-log-entries`` are the
  monitors' event running totals (the SD and SF entries each monitor logged since the
  daemon started; ``clear statistics`` leaves them).  ``remote-error-*-log-entries`` count
  the peer's entries of that type the log shows now: the log keeps nine monitor entries,
  so once it has reused slots this is a lower bound and can fall.

Not provided: the actions (``remote-loopback``, ``reset-stats``; ``efmoam loopback`` and
``efmoam clear port P statistics`` do that) and the notifications (the event stream has
every event).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from typing import Any

MODULE = "ieee802-ethernet-link-oam"
REVISION = "2025-09-10"
IF_TYPE = "iana-if-type:ethernetCsmacd"
ALL_ONES = 2**64 - 1  #: RFC 4878's "no value" in an event-log entry's window, threshold and value

#: RFC 4878 dot3OamOperStatus (the view's oper_status) -> operational-state
OPERATIONAL_STATE = {
    "disabled": "disabled",
    "linkFault": "link-fault",
    "passiveWait": "passive-wait",
    "activeSendLocal": "active-send-local",
    "sendLocalAndRemote": "send-local-and-remote",
    "sendLocalAndRemoteOk": "send-local-and-remote-ok",
    "oamPeeringLocallyRejected": "peering-locally-rejected",
    "oamPeeringRemotelyRejected": "peering-remotely-rejected",
    "operational": "operational",
    "nonOperHalfDuplex": "operational-half-duplex",  # value 10 in both; the names disagree
}
#: RFC 4878 dot3OamLoopbackStatus (the view's loopback.status) -> loopback-status, ours
LOCAL_LOOPBACK = {
    "noLoopback": "none",
    "initiatingLoopback": "initiating",
    "remoteLoopback": "master-loopback",
    "terminatingLoopback": "terminating",
    "localLoopback": "local-loopback",
    "unknown": "unknown",
}
#: the same -> loopback-status of the peer: while we initiate, its State field still says
#: it forwards (our status changes when it no longer does)
REMOTE_LOOPBACK = {
    "noLoopback": "none",
    "initiatingLoopback": "none",
    "remoteLoopback": "local-loopback",
    "terminatingLoopback": "local-loopback",
    "localLoopback": "master-loopback",
    "unknown": "unknown",
}
#: the view's monitor keys -> threshold-event-enum, with the statistics of their log entries
MONITORS = {
    "errored_symbol_period": "symbol-period-event",
    "errored_frame_period": "frame-period-event",
    "errored_frame": "frame-event",
    "errored_frame_seconds": "frame-seconds-event",
}
LOG_ENTRY_STATISTICS = {
    "symbol-period-event": "error-symbol-period-log-entries",
    "frame-event": "error-frame-log-entries",
    "frame-period-event": "error-frame-period-log-entries",
    "frame-seconds-event": "error-frame-second-log-entries",
}
#: RFC 4878 dot3OamEventLogType names (the view's event_log[].type) -> (identity, threshold-event-enum)
EVENT_TYPES: dict[str, tuple[str, str | None]] = {
    "erroredSymbolEvent": ("threshold-event-type", "symbol-period-event"),
    "erroredFramePeriodEvent": ("threshold-event-type", "frame-period-event"),
    "erroredFrameEvent": ("threshold-event-type", "frame-event"),
    "erroredFrameSecondsEvent": ("threshold-event-type", "frame-seconds-event"),
    "linkFault": ("link-fault-event", None),
    "dyingGaspEvent": ("dying-gasp-event", None),
    "criticalLinkEvent": ("critical-event", None),
}
EVENT_LOCATION = {"local": "event-location-local", "remote": "event-location-remote"}
#: RFC 4878 dot3OamStatsTable names (the view's statistics) -> statistics leaves
STATISTICS = {
    "dot3OamInformationTx": "out-information",
    "dot3OamInformationRx": "in-information",
    "dot3OamUniqueEventNotificationTx": "out-unique-event-notification",
    "dot3OamUniqueEventNotificationRx": "in-unique-event-notification",
    "dot3OamDuplicateEventNotificationTx": "out-duplicate-event-notification",
    "dot3OamDuplicateEventNotificationRx": "in-duplicate-event-notification",
    "dot3OamLoopbackControlTx": "out-loopback-control",
    "dot3OamLoopbackControlRx": "in-loopback-control",
    "dot3OamVariableRequestTx": "out-variable-request",
    "dot3OamVariableRequestRx": "in-variable-request",
    "dot3OamVariableResponseTx": "out-variable-response",
    "dot3OamVariableResponseRx": "in-variable-response",
    "dot3OamOrgSpecificTx": "out-org-specific",
    "dot3OamOrgSpecificRx": "in-org-specific",
    "dot3OamUnsupportedCodesTx": "out-unsupported-codes",
    "dot3OamUnsupportedCodesRx": "in-unsupported-codes",
    "dot3OamFramesLostDueToOam": "frames-lost-due-to-oam",
}
#: functions-supported leaves of ours -> dot3OamFunctionsSupported names (the view's functions_supported)
LOCAL_FUNCTIONS = {
    "uni-directional-link-fault": "unidirectionalSupport",
    "loopback": "loopbackSupport",
    "link-monitoring": "eventSupport",  # in link-monitor
    "data-retrieval": "variableSupport",
}
#: functions-supported leaves of the peer -> the same names
REMOTE_FUNCTIONS = {
    "uni-directional-link-fault": "unidirectionalSupport",
    "loopback": "loopbackSupport",
    "link-monitoring": "eventSupport",
    "mib-retrieval": "variableSupport",
}


def interfaces(ports: Iterable[Mapping[str, Any]], *, now: float) -> dict[str, Any]:
    """The ``ietf-interfaces:interfaces`` instance of `ports` (``show port`` views);
    `now` (seconds since the epoch) stands in for a discontinuity time the views lack."""
    return {"ietf-interfaces:interfaces": {"interface": [interface(port, now=now) for port in ports]}}


def interface(port: Mapping[str, Any], *, now: float) -> dict[str, Any]:
    """One ``interface`` list entry, with the link-oam augmentation."""
    entry: dict[str, Any] = {
        "name": port["name"],
        "type": IF_TYPE,
        "admin-status": _admin_status(port),
        "oper-status": _oper_status(port),
    }
    if port.get("ifindex") is not None:
        entry["if-index"] = port["ifindex"]
    entry["phys-address"] = port["mac"]
    since = port.get("statistics_since")
    entry["statistics"] = {"discontinuity-time": date_and_time(now if since is None else since)}
    entry[f"{MODULE}:link-oam"] = link_oam(port)
    return entry


def link_oam(port: Mapping[str, Any]) -> dict[str, Any]:
    """The ``link-oam`` container of one port."""
    return {
        "admin": port["admin_state"],  # enabled | disabled in both
        "discovery-info": {"local": _local(port), "remote": _remote(port)},
        "event-log": {"event-log-entry": event_log(port["event_log"])},
        "statistics": statistics(port),
    }


#: the leaves of an entry's ``threshold`` container, and the view's keys they show
_THRESHOLD_LEAVES = {"window": "window_on_wire", "threshold": "threshold", "value": "errors"}


def event_log(entries: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The ``event-log-entry`` list of the view's event log, by index."""
    shown = []
    for entry in sorted(entries, key=lambda e: int(e["index"])):
        kind = EVENT_TYPES.get(entry["type"])
        if kind is None or entry.get("time") is None:
            continue  # a type the model has no identity for, or no time to stamp it with
        identity, threshold_type = kind
        item: dict[str, Any] = {
            "index": _u64(entry["index"]),
            "oui": oui(entry["oui"]),
            "timestamp": _u64(milliseconds(entry["time"])),
            "location": EVENT_LOCATION[entry["location"]],
            "event-type": f"{MODULE}:{identity}",
            "running-total": _u64(entry["error_running_total"]),
            "event-total": _u64(entry["event_running_total"]),
        }
        if threshold_type is not None:
            item["threshold"] = {
                "threshold-event-type": threshold_type,
                **{leaf: _u64(_or_all_ones(entry[key])) for leaf, key in _THRESHOLD_LEAVES.items()},
            }
        shown.append(item)
    return shown


def statistics(port: Mapping[str, Any]) -> dict[str, Any]:
    """The ``statistics`` container: RFC 4878 counters and the log-entry counts."""
    counters = port["statistics"]
    stats = {leaf: _u64(counters[name]) for name, leaf in STATISTICS.items()}
    monitors = port["link_monitoring"]["monitors"]
    for key, threshold_type in MONITORS.items():
        stats[f"local-{LOG_ENTRY_STATISTICS[threshold_type]}"] = _u64(monitors[key]["event_running_total"])
    remote = [EVENT_TYPES.get(e["type"], ("", None))[1] for e in port["event_log"] if e["location"] == "remote"]
    for threshold_type in MONITORS.values():
        stats[f"remote-{LOG_ENTRY_STATISTICS[threshold_type]}"] = _u64(remote.count(threshold_type))
    return stats


# -- the parts ------------------------------------------------------------------------


def _admin_status(port: Mapping[str, Any]) -> str:
    admin_up = port.get("admin_up")
    if admin_up is not None:
        return "up" if admin_up else "down"
    return "down" if port.get("down") and not port.get("link_up") else "up"


def _oper_status(port: Mapping[str, Any]) -> str:
    if port.get("link_up") is False:
        return "down"
    if port["loopback"]["status"] in ("remoteLoopback", "localLoopback"):
        return "testing"
    return "up"


def _local(port: Mapping[str, Any]) -> dict[str, Any]:
    has = {leaf: name in port["functions_supported"] for leaf, name in LOCAL_FUNCTIONS.items()}
    return {
        "operational-status": OPERATIONAL_STATE[port["oper_status"]],
        "loopback-mode": LOCAL_LOOPBACK[port["loopback"]["status"]],
        "mode": port["mode"],  # active | passive in both
        "functions-supported": {
            "uni-directional-link-fault": has["uni-directional-link-fault"],
            "loopback": has["loopback"],
            "link-monitor": {
                "link-monitoring": has["link-monitoring"],
                "event-type": _monitor_config(port["link_monitoring"]["monitors"]),
            },
            "data-retrieval": has["data-retrieval"],
        },
        "revision": _u64(port["config_revision"]),
        "oammtu": port["max_pdu_size"],
    }


def _monitor_config(monitors: Mapping[str, Any]) -> list[dict[str, Any]]:
    listed = []
    for key, threshold_type in MONITORS.items():
        monitor = monitors[key]
        item: dict[str, Any] = {"threshold-type": threshold_type}
        if monitor["window_on_wire"] is not None:
            item["window"] = _u64(monitor["window_on_wire"])
        item["threshold"] = _u64(monitor["sf_threshold"])
        listed.append(item)
    return listed


def _remote(port: Mapping[str, Any]) -> dict[str, Any]:
    loopback = REMOTE_LOOPBACK[port["loopback"]["status"]]
    peer = port["peer"]
    if peer is None:
        return {"loopback-mode": loopback}
    functions = peer["functions_supported"]
    return {
        "mac-address": mac_address(peer["mac_address"]),
        "vendor-oui": oui(peer["vendor_oui"]),
        "vendor-info": _u64(peer["vendor_info"]),
        "loopback-mode": loopback,
        "mode": peer["mode"],
        "functions-supported": {leaf: name in functions for leaf, name in REMOTE_FUNCTIONS.items()},
        "revision": _u64(peer["config_revision"]),
        "oammtu": peer["max_pdu_size"],
    }


# -- value forms ----------------------------------------------------------------------


def mac_address(mac: str) -> str:
    """``aa:bb:cc:dd:ee:ff`` -> ``AA-BB-CC-DD-EE-FF`` (IEEE 802 canonical form, ieee:mac-address)."""
    return mac.replace(":", "-").upper()


def oui(value: str) -> str:
    """``01:80:c2`` -> ``0180C2`` (the model's six-character vendor-oui)."""
    return value.replace(":", "").upper()


def milliseconds(wall_time: float) -> int:
    """Seconds since the epoch -> whole milliseconds since the epoch."""
    return round(wall_time * 1000)


def date_and_time(wall_time: float) -> str:
    """Seconds since the epoch -> RFC 6991 date-and-time, UTC, to the millisecond."""
    moment = datetime.datetime.fromtimestamp(wall_time, datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _u64(value: int) -> str:
    """A 64-bit integer as RFC 7951 writes it: a JSON string."""
    return str(int(value))


def _or_all_ones(value: int | None) -> int:
    return ALL_ONES if value is None else value
