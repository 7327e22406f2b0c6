"""The control operations: one handler per op, each checking its own arguments.

A handler gets the daemon, the request's ``args`` (a dict, anything inside) and the
time; it returns JSON-ready data or raises `ControlError` with a stable code.  The
argument readers below turn anything that is not what an op expects into
``bad_request``, so no request can reach the engine with a value of the wrong type.

Every op that is not read-only (`READ_ONLY`) is audited once it ran: a journal line
``operator command`` and an ``operator`` record on the event stream, with who asked (the
client's uid, gid and pid from the control socket), what (the op, its port, a short
summary of its arguments) and how it ended (``ok`` or the error code).  An op added to
the table is audited unless it is declared read-only.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from efmoam.core import LocalProtocolError
from efmoam.core.linkmon import Location
from efmoam.daemon.control import PROTOCOL_VERSION, ControlError, Peer, Subscription
from efmoam.views.data import SCHEMA, VARIABLES_SCHEMA, port_view, summary_view, variable_view
from pdu import Branch, VariableDescriptor

if TYPE_CHECKING:
    from efmoam.daemon.main import Daemon
    from efmoam.daemon.runtime import PortRuntime

Args = dict[str, Any]
Operation = Callable[["Daemon", Args, float], Any]
MAX_LEAVES = 64  #: attributes one variables request may ask for
SUMMARY_KEYS = 8  #: arguments an audit record shows (the others are counted)
SUMMARY_TEXT = 64  #: characters of a string argument (or key) an audit record shows
SUMMARY_ITEMS = 16  #: items of a list argument an audit record shows
SHOWN_PORTS = 8  #: port names an unknown_port refusal lists
_LOCATIONS = {"local": Location.LOCAL, "remote": Location.REMOTE, None: None}


def _runtime(daemon: Daemon, args: Args) -> PortRuntime:
    name = args.get("port")
    if not isinstance(name, str):
        raise ControlError("bad_request", "a port name is needed")
    runtime = daemon.ports.get(name)
    if runtime is None:
        raise ControlError("unknown_port", f"{name[:64]} is not a port efmoam manages ({_ports_in_words(daemon)})")
    return runtime


def _ports_in_words(daemon: Daemon) -> str:
    names = sorted(daemon.ports)
    if not names:
        return "it manages none now: see the configuration's ports and the log"
    listed = ", ".join(names[:SHOWN_PORTS])
    return f"ports: {listed}" + (f" and {len(names) - SHOWN_PORTS} more" if len(names) > SHOWN_PORTS else "")


def _flag(args: Args, key: str, default: bool) -> bool:
    value = args.get(key, default)
    if not isinstance(value, bool):
        raise ControlError("bad_request", f"{key} is true or false")
    return value


def _hello(daemon: Daemon, _args: Args, _now: float) -> Any:
    return {"protocol": PROTOCOL_VERSION, "ports": sorted(daemon.ports)}


def _show_ports(daemon: Daemon, args: Args, _now: float) -> Any:
    """A line per port in name order: every port, or with ``limit`` a page of at most that
    many after the port named ``after`` (absent: from the first); ``next`` is the ``after``
    of the next page, null on the last.  All of 4,096 ports at once held the loop 45 to 60
    ms: `control.all_ports` asks in pages (`control.PORTS_PAGE`, where a page's time is)."""
    after, limit = args.get("after"), args.get("limit")
    if after is not None and not isinstance(after, str):
        raise ControlError("bad_request", "after is a port name")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ControlError("bad_request", "limit is a number of ports, at least 1")
    names = sorted(daemon.ports)
    start = 0 if after is None else bisect.bisect_right(names, after)
    chosen = names[start:] if limit is None else names[start : start + limit]
    more = limit is not None and start + limit < len(names)
    ports = [summary_view(name, daemon.ports[name].port) for name in chosen]
    return {"schema": SCHEMA, "ports": ports, "next": chosen[-1] if more else None, "daemon": daemon.health()}


#: the counters of a port's view that ``clear port P statistics`` starts again from zero in
#: show (and only there: `DisplayBaseline`), and those by name that list only the names above 0
CLEARED = (
    "statistics", "drops", "peer_quirks", "rx_rate_limited", "rx_policed", "rx_kernel_drops",
    "tx_errors", "rx_errors", "internal_errors", "org_specific_rx_by_oui",
)  # fmt: skip
SPARSE = ("drops", "peer_quirks", "org_specific_rx_by_oui")


def _counted_view(daemon: Daemon, runtime: PortRuntime) -> dict[str, Any]:
    """The port's view with its counters as they are (never cleared)."""
    return port_view(runtime.name, runtime.port, daemon.port_extra(runtime))


def _show_port(daemon: Daemon, args: Args, _now: float) -> Any:
    runtime = _runtime(daemon, args)
    return runtime.display_baseline.shown(_counted_view(daemon, runtime))


def _clear_events(daemon: Daemon, args: Args, now: float) -> Any:
    runtime = _runtime(daemon, args)
    where = args.get("location")
    if not isinstance(where, str | None) or where not in _LOCATIONS:
        raise ControlError("bad_request", "location is local, remote or absent (both)")
    runtime.port.clear_events(_LOCATIONS[where], now=now)
    runtime.flush(now)
    return {"cleared": where or "both"}


def _clear_statistics(daemon: Daemon, args: Args, now: float) -> Any:
    """Show's counters start again from zero; the counters themselves (metrics, SNMP) go on."""
    runtime = _runtime(daemon, args)
    runtime.display_baseline.take(_counted_view(daemon, runtime), CLEARED, SPARSE)
    runtime.statistics_since = now + daemon.wall_clock_offset
    return {"cleared": "statistics"}


def _loopback(daemon: Daemon, args: Args, now: float) -> Any:
    runtime = _runtime(daemon, args)
    enable = _flag(args, "enable", True)
    try:
        if enable:
            runtime.port.start_loopback(now=now)
        else:
            runtime.port.stop_loopback(now=now)
    except LocalProtocolError as exc:
        verb = "start" if enable else "stop"
        raise ControlError("not_allowed", f"cannot {verb} loopback on {runtime.name}: {exc}") from exc
    runtime.flush(now)
    return {"loopback": "started" if enable else "stopping"}


_ADMIN_STATES = {"enabled": True, "disabled": False, "config": None}


def _admin_state(daemon: Daemon, args: Args, now: float) -> Any:
    """OAM administratively enabled or disabled over the configuration (``config``: as configured)."""
    runtime = _runtime(daemon, args)
    state = args.get("state")
    if not isinstance(state, str) or state not in _ADMIN_STATES:
        raise ControlError("bad_request", "state is enabled, disabled or config")
    runtime.admin_override = _ADMIN_STATES[state]
    runtime.port.reconfigure(runtime.settings(), now=now)
    runtime.flush(now)
    return {"admin_state": "enabled" if runtime.port.settings.enabled else "disabled", "override": state != "config"}


def _variables(daemon: Daemon, args: Args, now: float) -> Any:
    runtime = _runtime(daemon, args)
    leaves = args.get("leaves")
    if (
        not isinstance(leaves, list)
        or not 0 < len(leaves) <= MAX_LEAVES
        or not all(type(leaf) is int and 0 <= leaf <= 0xFFFF for leaf in leaves)
    ):
        raise ControlError("bad_request", f"leaves is a list of 1 to {MAX_LEAVES} Clause 30 attribute numbers")
    descriptors = tuple(VariableDescriptor(Branch.ATTRIBUTE, leaf) for leaf in leaves)
    try:
        runtime.port.request_variables(descriptors, now=now)
    except LocalProtocolError as exc:
        raise ControlError("not_allowed", f"cannot ask the peer on {runtime.name} for variables: {exc}") from exc
    runtime.flush(now)
    runtime.variable_requests += 1
    return {"schema": VARIABLES_SCHEMA, "requested": leaves, "request": runtime.variable_requests}


def _variable_answer(daemon: Daemon, args: Args, _now: float) -> Any:
    """The answer to request number `request`, once it came."""
    runtime = _runtime(daemon, args)
    request = args.get("request")
    if type(request) is not int:
        raise ControlError("bad_request", "request is the number the variables request returned")
    answer = runtime.variable_answer
    if answer is None or answer[0] < request:
        return {"answered": False}
    return {"schema": VARIABLES_SCHEMA, "answered": True, "variables": [variable_view(c) for c in answer[1]]}


def _watch(daemon: Daemon, args: Args, _now: float) -> Any:
    """The connection becomes a feed of the event stream's records (those of one port
    when the request names it; a port the daemon does not manage is refused)."""
    if args.get("port") is None:
        return Subscription(lambda _record: True, {"watching": None})
    name = _runtime(daemon, args).name
    return Subscription(lambda record: record.get("port") == name, {"watching": name})


def _reload(daemon: Daemon, _args: Args, now: float) -> Any:
    daemon.reload(now)
    return {"reloaded": True}


#: every control operation by its name in requests
OPERATIONS: dict[str, Operation] = {
    "hello": _hello,
    "show_ports": _show_ports,
    "show_port": _show_port,
    "clear_events": _clear_events,
    "clear_statistics": _clear_statistics,
    "loopback": _loopback,
    "admin_state": _admin_state,
    "variables": _variables,
    "variable_answer": _variable_answer,
    "reload": _reload,
    "watch": _watch,
}


#: the ops that change nothing: not audited
READ_ONLY = frozenset({"hello", "show_ports", "show_port", "variable_answer", "watch"})
assert READ_ONLY.issubset(OPERATIONS), "a read-only op that is not an op"


def handle(daemon: Daemon, op: str, args: Args, peer: Peer | None, now: float) -> Any:
    """Answer one control request from `peer`; audit it unless it is read-only."""
    operation = OPERATIONS.get(op)
    if operation is None:
        raise ControlError("bad_request", f"unknown op {op[:64]!r}")
    if op in READ_ONLY:
        return operation(daemon, args, now)
    result = "internal"
    try:
        answer = operation(daemon, args, now)
        result = "ok"
        return answer
    except ControlError as exc:
        result = exc.code
        raise
    finally:
        _audit(daemon, op, args, peer, result, now)


def _audit(daemon: Daemon, op: str, args: Args, peer: Peer | None, result: str, now: float) -> None:
    """The journal line and the event-stream record of an operator command."""
    port = args.get("port")
    port = port[:SUMMARY_TEXT] if isinstance(port, str) else None
    summary = _summary(args)
    uid, gid, pid = (None, None, None) if peer is None else (peer.uid, peer.gid, peer.pid)
    daemon.journal.log(
        "notice", "operator command", op=op, port=port, uid=uid, gid=gid, pid=pid, result=result,
        args=" ".join(f"{key}={value}" for key, value in summary.items() if value is not None) or None,
    )  # fmt: skip
    services = daemon.services
    services.events.operator(
        op, port=port, peer=peer, args=summary, result=result, now=now, wall_clock_offset=services.wall_clock_offset
    )


def _summary(args: Args) -> dict[str, Any]:
    """The arguments of a request (but its port), cut short: they come from any local client."""
    summary: dict[str, Any] = {}
    keys = [key for key in args if key != "port"]
    for key in keys[:SUMMARY_KEYS]:
        summary[str(key)[:SUMMARY_TEXT]] = _short(args[key])
    if len(keys) > SUMMARY_KEYS:
        summary["..."] = f"{len(keys) - SUMMARY_KEYS} more"
    return summary


def _short(value: Any) -> Any:
    """A scalar as it is (a string cut short), a list's first scalars, "..." for anything else."""
    if isinstance(value, list):
        items = [_scalar(item) for item in value[: SUMMARY_ITEMS + 1]]
        return items[:SUMMARY_ITEMS] + (["..."] if len(items) > SUMMARY_ITEMS else [])
    return _scalar(value)


def _scalar(value: Any) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value[:SUMMARY_TEXT]
    if isinstance(value, int) and -(1 << 63) <= value < 1 << 64:
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    return "..."
