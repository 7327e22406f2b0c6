"""``efmoam watch``: the daemon's records as they happen, over the control socket.

The daemon sends the event stream's own records (one vocabulary: the same JSON as its
event-stream sink, whatever that sink is); ``-f json`` prints them as they come, one
per line, and plain text renders each as one line: time, port, what happened.  The
renderer reads only the keys it shows and falls back to ``key=value`` for a record it
does not know (a newer daemon), so it never fails on a record.  Text from the daemon is
printed with control characters escaped: a port name or an operator's argument (from
any local client) cannot move the cursor or clear the terminal.

A line on standard error says the watch is in place (the daemon confirmed it).  Ctrl-C
(SIGINT) ends a watch with status 130, as the shell reports an interrupted command; the
daemon closing the connection (stopped, restarted) or ending a watch that fell behind
ends it with status 1 and one line: on standard error, or with ``-f json`` an
``{"error": {"code", "message"}}`` line on standard output, as the other commands do.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any, TextIO

from efmoam.daemon.control import ControlError, Watch

EXIT_INTERRUPTED = 130  #: 128 + SIGINT
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SKIPPED = frozenset({"schema", "kind", "port", "time", "monotonic"})  #: shown otherwise, or not for people


def run_watch(socket_path: str, port: str | None, fmt: str, out: TextIO, err: TextIO) -> int:
    """Print the records until the daemon stops or Ctrl-C; returns the exit status."""
    try:
        with Watch(socket_path, {"port": port} if port else {}) as feed:
            err.write(f"efmoam watch: {_clean(port) if port else 'every port'}; Ctrl-C ends\n")
            err.flush()
            for record in feed.records():
                line = json.dumps(record, separators=(",", ":")) if fmt == "json" else render_record(record)
                out.write(line + "\n")
                out.flush()
    except ControlError as exc:
        if fmt == "json":
            out.write(json.dumps({"error": {"code": exc.code, "message": exc.message}}) + "\n")
            out.flush()
        else:
            err.write(f"efmoam watch: {_clean(exc.message)}\n")
        return 1
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return 0  # not reached: a watch ends by an error or an interrupt


def render_record(record: dict[str, Any]) -> str:
    """One line for people: local time, port, what happened."""
    describe = _DESCRIBE.get(str(record.get("kind")), _generic)
    try:
        what = describe(record)
    except (KeyError, TypeError, AttributeError, ValueError):  # a record of another shape
        what = _generic(record)
    return f"{_time(record.get('time'))}  {_clean(str(record.get('port') or '-')):<12} {_clean(what)}"


def _time(seconds: object) -> str:
    if not isinstance(seconds, int | float) or isinstance(seconds, bool):
        return "-" * 23
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds)) + f".{int(seconds * 1000) % 1000:03d}"
    except (OverflowError, OSError, ValueError):
        return "-" * 23


def _event(record: dict[str, Any]) -> str:
    entry = record["event"]
    state = "raised" if record["cause"] == "raised" else f"cleared ({record['cause']})"
    takes = ", port out of service" if record["cause"] == "raised" and record.get("action") == "out-of-service" else ""
    return f"event {entry['location']} {entry['type']} {entry['severity']} {state}{takes}"


def _policy_event(record: dict[str, Any]) -> str:
    text = f"{record['name']} {record['state']} ({record['cause']})"
    if record.get("detail"):
        text += f": {record['detail']}"
    if record.get("actions"):
        text += f"; actions: {', '.join(map(str, record['actions']))}"
    return text


def _port_action(record: dict[str, Any]) -> str:
    reasons = ", ".join(map(str, record.get("reasons") or ())) or "-"
    text = f"port {record['action']} ({reasons}) {record['result']} by {record['backend']}"
    return text + (f": {record['error']}" if record.get("error") else "")


def _operator(record: dict[str, Any]) -> str:
    args = " ".join(f"{key}={_scalar(value)}" for key, value in (record.get("args") or {}).items() if value is not None)
    who = f"uid {record['uid']}" if record.get("uid") is not None else "unknown client"
    return f"operator {record['op']}{' ' + args if args else ''} by {who}: {record['result']}"


def _generic(record: dict[str, Any]) -> str:
    fields = " ".join(f"{key}={_scalar(value)}" for key, value in record.items() if key not in _SKIPPED)
    return f"{record.get('kind', 'record')} {fields}".rstrip()


def _scalar(value: object) -> str:
    return json.dumps(value, separators=(",", ":")) if isinstance(value, dict | list) else str(value)


def _clean(text: str) -> str:
    return _CONTROL.sub(lambda match: f"\\x{ord(match.group()):02x}", text)


_DESCRIBE: dict[str, Callable[[dict[str, Any]], str]] = {
    "event": _event,
    "policy_event": _policy_event,
    "port_action": _port_action,
    "operator": _operator,
}
