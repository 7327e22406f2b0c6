"""The JSON event stream: every event-log record, policy event, port action and operator
command, one object per line.

For log shippers (Vector, Fluent Bit, a Kafka producer): the sink is stderr or a file,
appended to and reopened on SIGHUP so that logrotate can move it away.  Under systemd
(``$JOURNAL_STREAM`` set and the journal's socket present) the stderr sink writes to the
journal natively instead: one entry per record, ``MESSAGE`` the JSON line and one
``EFMOAM_<KEY>`` field per scalar value, nested objects flattened (``EFMOAM_EVENT_TYPE``;
``journalctl EFMOAM_PORT=eth0``).  A write that fails is reported once per distinct
error through `on_error` and the record is lost; the daemon keeps running.

Schema 2, four kinds of record (the README, "Running a fleet", documents each key):

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
from typing import TYPE_CHECKING, Any, TextIO

from efmoam.config.model import EventSink, EventStreamConfig
from efmoam.core.outputs import EventLogged, PolicyEvent

if TYPE_CHECKING:
    from efmoam.daemon.control import Peer

SCHEMA = 2
JOURNAL_SOCKET = "/run/systemd/journal/socket"
_FIELD_NAME = re.compile(r"[A-Z0-9_]+")


def journal_entry(record: dict[str, Any], line: str) -> bytes:
    """A record in the journal's native protocol (KEY=value lines; JSON has no newline)."""
    fields = {"MESSAGE": line, "SYSLOG_IDENTIFIER": "efmoam", "PRIORITY": "5"}
    for key, value in _flattened(record, "EFMOAM"):
        if isinstance(value, str | int | float | bool) and _FIELD_NAME.fullmatch(key) and "\n" not in str(value):
            fields[key] = str(value)
    return "".join(f"{name}={value}\n" for name, value in fields.items()).encode()


def _flattened(record: dict[str, Any], prefix: str) -> list[tuple[str, Any]]:
    """(PREFIX_KEY, value) for every value, the keys of nested objects joined with ``_``."""
    items: list[tuple[str, Any]] = []
    for key, value in record.items():
        name = f"{prefix}_{key.upper()}"
        items += _flattened(value, name) if isinstance(value, dict) else [(name, value)]
    return items


class EventStream:
    """Writes records to the configured sink (`EventSink.NONE`: writes nothing)."""

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
        if journal_socket is None and os.environ.get("JOURNAL_STREAM") and os.path.exists(JOURNAL_SOCKET):
            self.journal_socket = JOURNAL_SOCKET
        self._journal: socket.socket | None = None
        self._file: TextIO | None = None
        self._error: str | None = None
        if config.sink is EventSink.FILE:
            self.reopen()

    @property
    def enabled(self) -> bool:
        return self.config.sink is not EventSink.NONE

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
