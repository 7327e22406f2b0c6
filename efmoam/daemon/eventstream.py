"""The JSON event stream: every event-log record, policy event, port action and operator
command, one object per line.

For log shippers (Vector, Fluent Bit, a Kafka producer): the sink is stderr or a file,
appended to and reopened on SIGHUP so that logrotate can move it away.  Under journald
(stderr is the journal stream: `efmoam.daemon.journal.under_journald`, and the journal's
socket is there) the stderr sink writes to the journal natively instead: one entry per
record, ``MESSAGE`` the JSON line, ``PRIORITY`` by what the record says (`PRIORITIES`)
and one ``EFMOAM_<KEY>`` field per scalar value, nested objects flattened
(``EFMOAM_EVENT_TYPE``; ``journalctl EFMOAM_PORT=eth0``; at most `MAX_FIELDS`, values of
one line and at most `MAX_FIELD_VALUE` characters: the rest is in ``MESSAGE`` only).  A
write that fails is reported once per distinct error through `on_error` and the record
is lost; the daemon keeps running.

Schema 3, four kinds of record (the README, "Running a fleet", documents each key; 3:
the event entry's keys renamed to the one vocabulary, see `efmoam.views.data`); every
record has ``monotonic`` and ``time`` (seconds since the epoch), when it was written:

* ``{"kind": "event", ..., "cause": ..., "event": {...}}``: an event-log entry was
  written (raised or cleared); ``event`` is the entry's one dict view
  (`EventLogEntry.view`), as in ``show port`` JSON and the saved state; ``cause`` is
  ``raised``, or why it ended (operator, window, link, reload, recovery, peer);
* ``{"kind": "policy_event", ...}``: a session event or a tracked condition started or
  ended (or happened: a moment), with the actions the policy takes on it;
* ``{"kind": "port_action", ...}``: the daemon took a port out of service or returned
  it, or tried to and failed;
* ``{"kind": "operator", ...}``: an operator's command that changes something (clear,
  loopback, variables, reload) and who gave it (uid, gid and pid of the control client).
"""

from __future__ import annotations

import errno
import json
import os
import re
import socket
import stat
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from efmoam.config.model import EventSink, EventStreamConfig
from efmoam.core.outputs import EventLogged, PolicyEvent
from efmoam.daemon.journal import under_journald

if TYPE_CHECKING:
    from efmoam.daemon.control import Peer

SCHEMA = 3
JOURNAL_SOCKET = "/run/systemd/journal/socket"
_FIELD_NAME = re.compile(r"[A-Z][A-Z0-9_]{0,63}")  #: journald's rule for a field name
MAX_FIELDS = 64  #: EFMOAM_ fields per entry (an operator's args are the client's)
MAX_FIELD_VALUE = 1024
_MAX_DEPTH = 4  #: nested objects flattened; deeper ones are in MESSAGE only

#: the journal's PRIORITY (syslog levels: 3 err, 4 warning, 5 notice, 6 info) of a record,
#: by what it says (`situation`); the README's "Running a fleet" lists it
PRIORITIES = {
    "event sf raised": 3,  #: a signal-failure event began
    "event sd raised": 4,  #: a signal-degrade event began
    "event cleared": 5,
    "port_action failed": 3,  #: taking a port out of service or returning it failed
    "port_action out-of-service": 4,
    "port_action in-service": 5,
    "policy_event raised acting": 4,  #: a session event began whose actions do more than log
    "policy_event raised": 5,
    "policy_event cleared": 5,
    "policy_event released": 5,
    "policy_event moment": 6,  #: an instant (session up): information
    "operator": 5,
}
DEFAULT_PRIORITY = 5


def situation(record: dict[str, Any]) -> str:
    """What a record says, as a key of `PRIORITIES`."""
    kind = record.get("kind")
    if kind == "event":
        entry = record.get("event")
        entry = entry if isinstance(entry, dict) else {}
        return f"event {entry.get('severity')} raised" if entry.get("active") else "event cleared"
    if kind == "port_action":
        return "port_action failed" if record.get("result") == "failed" else f"port_action {record.get('action')}"
    if kind == "policy_event":
        state, actions = record.get("state"), record.get("actions")
        acting = state == "raised" and isinstance(actions, list) and any(action != "log" for action in actions)
        return f"policy_event {state}{' acting' if acting else ''}"
    return str(kind)


def journal_entry(record: dict[str, Any], line: str) -> bytes:
    """A record in the journal's native protocol (KEY=value lines; JSON has no newline)."""
    priority = PRIORITIES.get(situation(record), DEFAULT_PRIORITY)
    fields = {"MESSAGE": line, "SYSLOG_IDENTIFIER": "efmoam", "PRIORITY": str(priority)}
    for key, value in _flattened(record, "EFMOAM", _MAX_DEPTH):
        if len(fields) - 3 >= MAX_FIELDS:
            break
        if not isinstance(value, str | int | float | bool) or not _FIELD_NAME.fullmatch(key):
            continue
        text = str(value)
        if len(text) <= MAX_FIELD_VALUE and "\n" not in text:
            fields[key] = text
    return "".join(f"{name}={value}\n" for name, value in fields.items()).encode()


def _flattened(record: dict[str, Any], prefix: str, depth: int) -> list[tuple[str, Any]]:
    """(PREFIX_KEY, value) for every value, the keys of nested objects joined with ``_``
    (`depth` levels of them)."""
    items: list[tuple[str, Any]] = []
    for key, value in record.items():
        name = f"{prefix}_{str(key).upper()}"
        if not isinstance(value, dict):
            items.append((name, value))
        elif depth > 1:
            items += _flattened(value, name, depth - 1)
    return items


class Tap(Protocol):
    """Where every record also goes, whatever the sink (the control socket's watchers)."""

    @property
    def watching(self) -> bool: ...

    def publish(self, record: dict[str, Any]) -> None: ...


class EventStream:
    """Writes records to the configured sink (`EventSink.NONE`: writes nothing) and to
    `tap` (set by the daemon once its control socket listens)."""

    def __init__(
        self,
        config: EventStreamConfig,
        on_error: Callable[[str], None] | None = None,
        stderr: TextIO | None = None,
        journal_socket: str | None = None,
    ) -> None:
        self.config = config
        self._on_error = on_error
        self._stderr = stderr
        #: the journal's socket when the stderr sink goes to the journal natively
        self.journal_socket = journal_socket
        if journal_socket is None and under_journald(stderr) and os.path.exists(JOURNAL_SOCKET):
            self.journal_socket = JOURNAL_SOCKET
        self._journal: socket.socket | None = None
        self._file: TextIO | None = None
        self._error: str | None = None
        self.tap: Tap | None = None
        if config.sink is EventSink.FILE:
            self.reopen()

    @property
    def enabled(self) -> bool:
        """Whether records go anywhere (else they need not be built)."""
        return self.config.sink is not EventSink.NONE or (self.tap is not None and self.tap.watching)

    def reopen(self) -> None:
        """Close and open the file again (after a rotation: SIGHUP)."""
        if self.config.sink is not EventSink.FILE:
            return
        self.close()
        assert self.config.path is not None
        try:
            self._file = _open_append(self.config.path)
        except OSError as exc:
            self._failed(f"cannot open {self.config.path}: {exc}")

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None
        if self._file is not None:
            try:
                self._file.close()
            except OSError as exc:
                self._failed(str(exc))
            self._file = None

    def write(self, record: dict[str, Any]) -> None:
        """One record as one line."""
        if self.tap is not None:
            self.tap.publish(record)
        if self.config.sink is EventSink.NONE:
            return
        line = json.dumps(record, separators=(",", ":"), sort_keys=False) + "\n"
        if self.config.sink is EventSink.STDERR and self.journal_socket is not None:
            self._to_journal(record, line.rstrip("\n"))
            return
        stream = self._file if self.config.sink is EventSink.FILE else (self._stderr or sys.stderr)
        if stream is None:
            self.reopen()
            stream = self._file
            if stream is None:
                return
        try:
            stream.write(line)
            stream.flush()
        except OSError as exc:
            self._failed(str(exc))
        else:
            self._error = None

    def _to_journal(self, record: dict[str, Any], line: str) -> None:
        assert self.journal_socket is not None
        try:
            if self._journal is None:
                self._journal = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                self._journal.setblocking(False)  # a journal that lags loses records, never holds the loop
            self._journal.sendto(journal_entry(record, line), self.journal_socket)
        except OSError as exc:
            self._failed(f"journal: {exc}")
        else:
            self._error = None

    def _failed(self, error: str) -> None:
        if error != self._error:
            self._error = error
            if self._on_error is not None:
                self._on_error(error)

    # -- the kinds of record ---------------------------------------------------------------

    def event(self, port: str, logged: EventLogged, action: str, now: float, wall_clock_offset: float) -> None:
        """An event-log entry was written; `action` is what it does to the port."""
        if not self.enabled:
            return
        self.write(
            {
                "schema": SCHEMA,
                "kind": "event",
                "port": port,
                "action": action,
                "cause": logged.cause,
                "monotonic": now,
                "time": now + wall_clock_offset,
                "event": logged.entry.view(logged.slot),
            }
        )

    def policy_event(self, port: str, event: PolicyEvent, now: float, wall_clock_offset: float) -> None:
        """A session event or tracked condition started, ended or happened (a moment)."""
        if not self.enabled:
            return
        self._record(
            "policy_event",
            now,
            wall_clock_offset,
            {
                "port": port,
                "name": event.name,
                "state": event.state,
                "actions": list(event.actions),
                "cause": event.cause,
                "detail": event.detail,
                "latched": event.latched,
                "recovers_at": None if event.recovers_at is None else event.recovers_at + wall_clock_offset,
            },
        )

    def _record(self, kind: str, now: float, wall_clock_offset: float, fields: dict[str, Any]) -> None:
        """Write a record of `kind`: the schema and kind first, when it was written last."""
        self.write({"schema": SCHEMA, "kind": kind, **fields, "monotonic": now, "time": now + wall_clock_offset})

    def port_action(
        self,
        port: str,
        *,
        out_of_service: bool,
        reasons: tuple[str, ...],
        backend: str,
        error: str | None,
        now: float,
        wall_clock_offset: float,
    ) -> None:
        """The daemon applied (or failed to apply) a port action."""
        if not self.enabled:
            return
        self._record(
            "port_action",
            now,
            wall_clock_offset,
            {
                "port": port,
                "action": "out-of-service" if out_of_service else "in-service",
                "reasons": list(reasons),
                "backend": backend,
                "result": "failed" if error is not None else "applied",
                "error": error,
            },
        )

    def operator(
        self,
        op: str,
        *,
        port: str | None,
        peer: Peer | None,
        args: dict[str, Any],
        result: str,
        now: float,
        wall_clock_offset: float,
    ) -> None:
        """An operator's command that changes something ran (`result`: ``ok`` or its error code)."""
        if not self.enabled:
            return
        self._record(
            "operator",
            now,
            wall_clock_offset,
            {
                "op": op,
                "port": port,
                "uid": None if peer is None else peer.uid,
                "gid": None if peer is None else peer.gid,
                "pid": None if peer is None else peer.pid,
                "args": args,
                "result": result,
                "cause": "operator",
            },
        )


def _open_append(path: str) -> TextIO:
    """`path` opened to append, only if it is a regular file (or absent: created): a FIFO
    there must not block the loop, nor a symbolic link redirect the writes."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NOCTTY
    fd = os.open(path, flags, 0o640)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        os.set_blocking(fd, True)
        return open(fd, "a", encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise
