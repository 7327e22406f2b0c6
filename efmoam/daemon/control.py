"""The control socket: one JSON object per line each way (style.md B.3 #27).

A request is ``{"id": 1, "op": "show_port", "args": {"port": "eth0"}}``; the reply is
``{"id": 1, "ok": true, "result": ...}`` or ``{"id": 1, "ok": false, "error": {"code":
..., "message": ...}}``.  Lines are capped at 64 KiB.  `request` (one request) and
`Session` (several over one connection; `all_ports` lists every port in pages) are the
blocking clients the CLI uses; whatever goes wrong, they raise a `ControlError` with a
one-line message.

The server, ``ControlServer(path, handler, selector, *, on_error=None, group=None,
max_clients=64, idle_timeout=30.0, max_output=1 MiB, requests_per_wake=16,
max_watch_output=256 KiB, on_watch_drop=None, clock=time.monotonic)``, lives in the
daemon's loop and cannot freeze or end it, whatever its clients do:

- It registers its listener and its clients in `selector` itself, each with ``data`` a
  callable taking ``now`` (the daemon's monotonic clock): the loop calls ``key.data(now)``
  for each ready key.  Those callbacks only move bytes.  Requests are answered in
  ``service(now)``, which the loop calls when ``next_deadline()`` is due (None: nothing
  to do): at once (a time already past) while requests wait, else the earliest idle
  timeout or the end of an accept pause.  ``service`` returns how many it answered.
- ``handler(op, args, peer)`` returns a JSON-able result or raises `ControlError`;
  ``peer`` is the client's `Peer` (its pid, uid and gid as the kernel gave them at
  accept: SO_PEERCRED), None in the unlikely case they could not be read.  Any other
  exception (or a result that is not JSON-able) is answered ``internal``, counted, and
  passed to ``on_error(op, exc)``, called inside the ``except`` (it may log the traceback;
  an exception out of it is ignored).  A line that is not a request object is answered
  ``bad_request``.  The connection stays open either way.
- Bounds: ``requests_per_wake`` requests per client per ``service``; a client with over
  64 KiB of replies pending is not read until it takes them (backpressure); it is
  disconnected with over ``max_output`` bytes pending besides the reply it is taking and
  the last one answered (a reply is never cut for its own size: ``show_ports`` of
  thousands of ports is over a megabyte; what a client holds is bounded by the pause,
  64 KiB and a reply), after the ``bad_request`` reply to a line over 64 KiB, or when for
  ``idle_timeout`` seconds it has sent no complete request and taken no reply bytes.
  Connections beyond ``max_clients`` get a ``busy`` reply and are closed.  When accept
  fails (EMFILE, ENFILE, ENOBUFS, ENOMEM ...) the listener is not watched for a second.
- Watchers: a handler that returns a `Subscription` turns its client into a watcher:
  after the reply, ``publish(record)`` queues each record the subscription accepts as
  one JSON line (what the client sends from then on is read and ignored; its end of
  input ends the watch).  A watcher waiting with nothing queued is never idle; its queue
  is bounded by ``max_watch_output`` (256 KiB): past it the watch ends, its unsent
  records are dropped, it gets a ``watch_overflow`` error line, ``on_watch_drop(peer,
  pending bytes)`` is called, and the server never blocks or grows for a slow reader.
  Watchers count against ``max_clients``.  `Watch` is the blocking client.
- ``stats`` (read-only) counts accepted, refused, accept_errors, idle_closed,
  output_overflow, bad_requests (lines that are not a request: handler ControlErrors are
  not counted), internal_errors, line_too_long and watch_overflow; ``clients`` is the
  number connected.
- Only a socket is ever removed from `path`: anything else there is a ``bad_socket_path``
  ControlError (as is a path it cannot bind), a socket someone answers on is
  ``already_running``, and ``close()`` removes the socket only if it is still the one
  it bound.  A path it may not create is a ``not_permitted`` ControlError.
- ``group`` (a gid) may use the socket: mode 0660 and that group, a directory it makes
  for the socket 0750 and the group's; None, or a group it cannot give, 0600
  (`efmoam.daemon.access`).  ``set_group`` changes it (a reload); ``group_problem``
  says why the group was not given.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import selectors
import socket
import stat
import struct
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple, Self

from efmoam.daemon import access

MAX_LINE = 64 * 1024
PROTOCOL_VERSION = 1
DEFAULT_SOCKET = "/run/efmoam/efmoam.sock"
PAUSE_OUTPUT = 64 * 1024  #: a client with more replies pending than this is not read
ACCEPT_REST = 1.0  #: seconds the listener rests after accept failed for lack of resources
ACCEPTS_PER_WAKE = 16
_STATS = (
    "accepted",
    "refused",
    "accept_errors",
    "idle_closed",
    "output_overflow",
    "bad_requests",
    "internal_errors",
    "line_too_long",
    "watch_overflow",
)


class ControlError(Exception):
    """A request failed; `code` is stable (unknown_port, bad_request, not_running ...)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


_UCRED = struct.Struct("3i")  #: struct ucred: pid, uid, gid


class Peer(NamedTuple):  # not attrs: the CLI imports this module, and starts faster without it
    """The process that connected to the control socket (SO_PEERCRED, read at accept)."""

    pid: int
    uid: int
    gid: int


class Subscription(NamedTuple):
    """What a handler returns to turn its client into a watcher: `reply` is the request's
    result, then every published record `accepts` follows as one JSON line."""

    accepts: Callable[[dict[str, Any]], bool]
    reply: Any = None


Handler = Callable[[str, dict[str, Any], Peer | None], Any]
ErrorCallback = Callable[[str, Exception], None]
WatchDropCallback = Callable[[Peer | None, int], None]


class _Client:
    def __init__(self, sock: socket.socket, now: float) -> None:
        self.sock = sock
        self.peer = peer_of(sock)
        self.inbox = bytearray()
        self.outbox = bytearray()
        self.sent = 0  #: bytes of output taken since it connected
        #: where each reply still (partly) in `outbox` ends, counted like `sent`: at most the
        #: replies of PAUSE_OUTPUT bytes and one more, as answering pauses past that
        self.reply_ends: deque[int] = deque()
        self.active_at = now  #: the last complete request or reply bytes taken
        self.ready_at: float | None = None  #: since when requests wait for `service`
        self.reading = True  #: False after end of input or a line too long
        self.events = 0  #: the selector events it is registered for (0: not registered)
        self.on_io: Callable[[float], None] = lambda _now: None  #: its selector callback
        self.open = True
        self.subscription: Subscription | None = None  #: set once it watches (`publish`)


class ControlServer:
    """Accepts CLI connections on a Unix socket and answers each request line."""

    def __init__(
        self,
        path: str,
        handler: Handler,
        selector: selectors.BaseSelector,
        *,
        on_error: ErrorCallback | None = None,
        group: int | None = None,
        max_clients: int = 64,
        idle_timeout: float = 30.0,
        max_output: int = 1 << 20,
        requests_per_wake: int = 16,
        max_watch_output: int = 256 << 10,
        on_watch_drop: WatchDropCallback | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if min(max_clients, max_output, requests_per_wake, max_watch_output) < 1 or not idle_timeout > 0:
            raise ValueError("the control server's limits must be positive")
        self.path = path
        self._handler = handler
        self._selector = selector
        self._on_error = on_error
        self.max_clients = max_clients
        self.idle_timeout = idle_timeout
        self.max_output = max_output
        self.requests_per_wake = requests_per_wake
        self.max_watch_output = max_watch_output
        self._on_watch_drop = on_watch_drop
        self._clock = clock
        self._stats = dict.fromkeys(_STATS, 0)
        self._clients: dict[int, _Client] = {}
        self._resting_until: float | None = None
        self._closed = False
        _remove_stale(path)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            directory = os.path.dirname(path) or "."
            #: the socket's directory when the server made it (it follows the group too)
            self._directory = directory if access.make_directory(directory) else None
            self.listener.bind(path)
            self._bound = _identity(os.lstat(path))
            #: why the socket is not the group's as configured (None: it is)
            self.group_problem = access.grant(path, group, self._directory)
            self.listener.listen(16)
        except OSError as exc:
            self.listener.close()
            code = "not_permitted" if isinstance(exc, PermissionError) else "bad_socket_path"
            raise ControlError(code, f"cannot listen on {path}: {exc.strerror or exc}") from exc
        self.listener.setblocking(False)
        selector.register(self.listener, selectors.EVENT_READ, self._on_accept)

    @property
    def stats(self) -> Mapping[str, int]:
        return MappingProxyType(self._stats)

    def set_group(self, group: int | None) -> str | None:
        """Give the socket to group `group` (mode 0660; None: 0600, see `efmoam.daemon.access`);
        returns why it could not be given, or None."""
        try:
            self.group_problem = access.grant(self.path, group, self._directory)
        except OSError as exc:
            self.group_problem = f"cannot set the control socket's mode: {exc.strerror or exc}"
        return self.group_problem

    @property
    def clients(self) -> int:
        return len(self._clients)

    @property
    def watching(self) -> bool:
        """Whether any client watches (`publish` has somewhere to send records)."""
        return any(client.subscription is not None for client in self._clients.values())

    def next_deadline(self) -> float | None:
        """When `service` must run next (now or earlier while requests wait); None: no need."""
        times = [] if self._resting_until is None else [self._resting_until]
        for client in self._clients.values():
            if client.ready_at is not None:
                times.append(client.ready_at)
            elif not _waiting_for_records(client):
                times.append(client.active_at + self.idle_timeout)
        return min(times, default=None)

    def service(self, now: float) -> int:
        """Answer waiting requests, close idle clients, end an accept pause; the requests answered."""
        if self._resting_until is not None and now >= self._resting_until and not self._closed:
            self._resting_until = None
            self._selector.register(self.listener, selectors.EVENT_READ, self._on_accept)
        answered = 0
        for client in list(self._clients.values()):
            if not client.open:  # dropped meanwhile (by a handler that closed the server)
                continue
            if client.ready_at is not None:
                answered += self._answer_waiting(client, now)
                self._send(client, now)
                self._settle(client, now)
            elif now - client.active_at >= self.idle_timeout and not _waiting_for_records(client):
                self._stats["idle_closed"] += 1
                self._drop(client)
        return answered

    def close(self) -> None:
        """Close every connection and the listener; remove the socket file if it is still ours."""
        if self._closed:
            return
        self._closed = True
        now = self._clock()
        for client in list(self._clients.values()):
            self._send(client, now)  # a watcher's last records, as far as its socket takes them now
            self._drop(client)
        if self._resting_until is None:
            self._selector.unregister(self.listener)
        with contextlib.suppress(OSError):  # while the listener still holds its inode number
            if _identity(os.lstat(self.path)) == self._bound:
                os.unlink(self.path)
        self.listener.close()

    # -- connections -------------------------------------------------------------------

    def _on_accept(self, now: float) -> None:
        for _ in range(ACCEPTS_PER_WAKE):
            try:
                conn, _ = self.listener.accept()
            except (BlockingIOError, ConnectionAbortedError):
                return
            except OSError:
                # EMFILE, ENFILE, ENOBUFS, ENOMEM (or anything unexpected): the connection
                # stays in the backlog, so retrying at once would spin; rest instead.
                self._stats["accept_errors"] += 1
                self._selector.unregister(self.listener)
                self._resting_until = now + ACCEPT_REST
                return
            conn.setblocking(False)
            if len(self._clients) >= self.max_clients:
                self._stats["refused"] += 1
                with contextlib.suppress(OSError):  # an empty socket buffer: it fits
                    conn.send(_error_line(None, "busy", "the daemon has too many control connections"))
                conn.close()
                continue
            self._stats["accepted"] += 1
            client = _Client(conn, now)
            client.on_io = functools.partial(self._on_io, client)
            self._clients[conn.fileno()] = client
            self._settle(client, now)

    def _on_io(self, client: _Client, now: float) -> None:
        """The selector saw the client readable or writable (it does not say which)."""
        self._send(client, now)
        if client.open and self._wants_input(client):
            try:
                data = client.sock.recv(65536)
            except BlockingIOError:
                data = None
            except OSError:
                self._drop(client)
                return
            if data == b"":
                client.reading = False
                if client.subscription is not None:  # a watcher hung up
                    self._drop(client)
                    return
            elif data and client.subscription is None:  # a watcher's input is read and ignored
                client.inbox += data
        self._settle(client, now)

    def _wants_input(self, client: _Client) -> bool:
        return client.reading and len(client.outbox) <= PAUSE_OUTPUT and b"\n" not in client.inbox

    def _send(self, client: _Client, now: float) -> None:
        if not client.open or not client.outbox:
            return
        try:
            sent = client.sock.send(client.outbox)
        except BlockingIOError:
            sent = 0
        except OSError:
            self._drop(client)
            return
        if sent:
            del client.outbox[:sent]
            client.sent += sent
            client.active_at = now
        ends = client.reply_ends
        while ends and ends[0] <= client.sent:
            ends.popleft()
        # the rest of the reply it is reading, and the last one answered (a client asking
        # without waiting gets the next answer once the one it reads has 64 KiB left)
        taking = ends[0] - client.sent if ends else 0
        newest = ends[-1] - ends[-2] if len(ends) > 1 else 0
        if len(client.outbox) - taking - newest > self.max_output:
            self._stats["output_overflow"] += 1
            self._drop(client)

    def _settle(self, client: _Client, now: float) -> None:
        """After any change: enforce the line cap, close when done, note waiting requests, watch."""
        if not client.open:
            return
        if client.reading and len(client.inbox) > MAX_LINE and b"\n" not in client.inbox:
            self._stats["line_too_long"] += 1
            client.reading = False
            client.inbox.clear()
            client.outbox += _error_line(None, "bad_request", f"line longer than {MAX_LINE} bytes")
            self._send(client, now)
            if not client.open:
                return
        waiting = b"\n" in client.inbox
        if not client.reading and not waiting and not client.outbox:
            self._drop(client)
            return
        if not waiting or len(client.outbox) > PAUSE_OUTPUT:
            client.ready_at = None
        elif client.ready_at is None:
            client.ready_at = now
        self._watch(client)

    def _watch(self, client: _Client) -> None:
        """Register for input only when it will be read (else the selector would report it
        again and again), for output while replies are pending; not at all while neither."""
        events = (selectors.EVENT_READ if self._wants_input(client) else 0) | (
            selectors.EVENT_WRITE if client.outbox else 0
        )
        if events == client.events:
            return
        try:
            if not client.events:
                self._selector.register(client.sock, events, client.on_io)
            elif not events:
                self._selector.unregister(client.sock)
            else:
                self._selector.modify(client.sock, events, client.on_io)
        except OSError:  # the kernel refused to watch it (out of memory)
            self._drop(client)
            return
        client.events = events

    def _drop(self, client: _Client) -> None:
        if not client.open:
            return
        client.open = False
        if client.events:
            self._selector.unregister(client.sock)
        self._clients.pop(client.sock.fileno(), None)
        client.sock.close()

    # -- watchers ----------------------------------------------------------------------

    def publish(self, record: dict[str, Any]) -> None:
        """Queue `record` as one JSON line to every watcher that accepts it; never blocks
        (the selector sends it).  A watcher whose queue would pass `max_watch_output`,
        even after a send of what its socket takes at once, is ended: its unsent records
        are dropped, it gets a ``watch_overflow`` error line."""
        line: bytes | None = None
        for client in list(self._clients.values()):
            subscription = client.subscription
            if subscription is None or not client.open or not subscription.accepts(record):
                continue
            if line is None:
                try:
                    line = json.dumps(record, separators=(",", ":")).encode() + b"\n"
                except (TypeError, ValueError, RecursionError):  # the daemon's bug: counted, not raised
                    self._stats["internal_errors"] += 1
                    return
            if len(client.outbox) + len(line) > self.max_watch_output:
                self._send(client, self._clock())  # a burst: what the socket takes now is not queued
                if not client.open:
                    continue
            if len(client.outbox) + len(line) > self.max_watch_output:
                self._end_watch(client)
                continue
            if not client.outbox:  # its idle clock runs while records wait
                client.active_at = self._clock()
            client.outbox += line
            self._watch(client)

    def _end_watch(self, client: _Client) -> None:
        self._stats["watch_overflow"] += 1
        pending = len(client.outbox)
        client.subscription = None
        client.reading = False
        head = client.outbox.find(b"\n") + 1  # the first line may be half sent: it goes out whole
        del client.outbox[head:]
        message = f"this watch fell {pending >> 10} KiB of records behind and was ended; watch again"
        client.outbox += _error_line(None, "watch_overflow", message)
        self._watch(client)
        if self._on_watch_drop is not None:
            with contextlib.suppress(Exception):
                self._on_watch_drop(client.peer, pending)

    # -- requests ----------------------------------------------------------------------

    def _answer_waiting(self, client: _Client, now: float) -> int:
        answered = 0
        while client.open and answered < self.requests_per_wake and len(client.outbox) <= PAUSE_OUTPUT:
            end = client.inbox.find(b"\n")
            if end < 0:
                break
            line = bytes(client.inbox[:end])
            del client.inbox[: end + 1]
            client.outbox += self._answer(line, client)
            client.reply_ends.append(client.sent + len(client.outbox))
            client.active_at = now
            answered += 1
            if client.subscription is not None:  # a watcher from now on: records only
                client.inbox.clear()
                break
        return answered

    def _answer(self, line: bytes, client: _Client) -> bytes:
        try:
            request = json.loads(line)
        except (ValueError, RecursionError, MemoryError) as exc:  # UnicodeDecodeError is a ValueError
            self._stats["bad_requests"] += 1
            return _error_line(None, "bad_request", f"not JSON: {str(exc)[:200] or type(exc).__name__}")
        if not isinstance(request, dict) or not isinstance(request.get("op"), str):
            self._stats["bad_requests"] += 1
            return _error_line(None, "bad_request", "a request is an object with an op")
        request_id = request.get("id")
        args = request.get("args") or {}
        if not isinstance(args, dict):
            self._stats["bad_requests"] += 1
            return _error_line(request_id, "bad_request", "args must be an object")
        op = request["op"]
        try:
            result = self._handler(op, args, client.peer)
            if isinstance(result, Subscription):
                reply = _line({"id": request_id, "ok": True, "result": result.reply})
                client.subscription = result
                return reply
            return _line({"id": request_id, "ok": True, "result": result})
        except ControlError as exc:
            return _error_line(request_id, exc.code, exc.message)
        except Exception as exc:  # the daemon's bug: answered and reported, never raised
            self._stats["internal_errors"] += 1
            if self._on_error is not None:
                with contextlib.suppress(Exception):
                    self._on_error(op, exc)
            return _error_line(request_id, "internal", f"internal error ({type(exc).__name__}); see the daemon's log")


def _waiting_for_records(client: _Client) -> bool:
    """A watcher with nothing pending is not idle: it waits for the daemon."""
    return client.subscription is not None and not client.outbox


def _line(reply: dict[str, Any]) -> bytes:
    return json.dumps(reply, separators=(",", ":")).encode() + b"\n"


def _error_line(request_id: Any, code: str, message: str) -> bytes:
    error = {"code": code, "message": message}
    try:
        return _line({"id": request_id, "ok": False, "error": error})
    except (ValueError, RecursionError):  # an id nested as deep as the decoder allows
        return _line({"id": None, "ok": False, "error": error})


def peer_of(sock: socket.socket) -> Peer | None:
    """Who is at the other end of an accepted connection, as the kernel saw it at connect."""
    try:
        return Peer(*_UCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)))
    except (OSError, struct.error):
        return None


def _identity(status: os.stat_result) -> tuple[int, int] | None:
    return (status.st_dev, status.st_ino) if stat.S_ISSOCK(status.st_mode) else None


def _remove_stale(path: str) -> None:
    """Unlink a socket file nobody listens on; refuse if a daemon is alive there or it is no socket."""
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ControlError("bad_socket_path", f"cannot use {path} as the control socket: {exc.strerror}") from exc
    if not stat.S_ISSOCK(status.st_mode):
        message = f"{path} exists and is not a socket: left alone (remove it or set another control_socket)"
        raise ControlError("bad_socket_path", message)
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(path)
    except ConnectionRefusedError:  # nobody listens: a killed daemon's socket
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    except (BlockingIOError, TimeoutError):
        pass  # listening, too busy to take us: alive
    except OSError as exc:
        raise ControlError("bad_socket_path", f"cannot use {path} as the control socket: {exc.strerror}") from exc
    finally:
        probe.close()
    raise ControlError("already_running", f"another efmoam daemon answers on {path}")


# -- the client --------------------------------------------------------------------------

MAX_REPLY = 64 << 20  #: a longer "reply" is not from an efmoam daemon


def request(path: str, op: str, args: dict[str, Any] | None = None, timeout: float = 5.0) -> Any:
    """Send one request and return its result, or raise ControlError (within about `timeout` s)."""
    with Session(path, timeout) as session:
        return session.request(op, args)


#: the codes of `ControlError` that say the connection itself failed (the others are the daemon's answer)
_TRANSPORT_ERRORS = frozenset({"timeout", "disconnected", "socket_error", "bad_reply"})


class Session:
    """One connection for several requests, one at a time (`request` makes one per
    request): a listing in pages, or every port one by one, costs one connect."""

    def __init__(self, path: str, timeout: float = 5.0) -> None:
        self.path = path
        self.timeout = timeout  #: seconds each request may take
        self._buffer = bytearray()
        self._sock = _connect(path, timeout)
        self._broken: ControlError | None = None  #: what ended the conversation

    def request(self, op: str, args: dict[str, Any] | None = None) -> Any:
        """The result of one request, or ControlError (within about `timeout` s).  After a
        transport error (a timeout, a lost or garbled connection) every later request fails
        with it: a late reply must not be taken for the next request's."""
        if self._broken is not None:
            raise ControlError(self._broken.code, self._broken.message)
        try:
            return _result(_exchange(self._sock, self.path, op, args, self.timeout, self._buffer), self.path)
        except ControlError as exc:
            if exc.code in _TRANSPORT_ERRORS:
                self._broken = exc
                self.close()
            raise

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


#: ports one ``show_ports`` page holds (`all_ports`): about 3 ms of the daemon's loop (a
#: page of 1,024 held it about 12 ms, up to 20 on a VM two to three times slower), so a
#: listing adds little to a busy wake-up; up to this many ports are one request
PORTS_PAGE = 256


def all_ports(session: Session, page: int | None = None) -> dict[str, Any]:
    """``show_ports`` of every port, asked in pages of `page` ports (`PORTS_PAGE`) so that
    no request holds the daemon for long: the last page's result with every page's ports
    (in name order, each port once; a port added or removed meanwhile may be in it or not)."""
    page = page or PORTS_PAGE
    ports: list[Any] = []
    args: dict[str, Any] = {"limit": page}
    while True:
        result = session.request("show_ports", args)
        if not isinstance(result, dict) or not isinstance(result.get("ports"), list):
            raise ControlError("bad_reply", f"the answer on {session.path} is not a list of ports")
        ports += result["ports"]
        after = result.pop("next", None)
        if not isinstance(after, str):  # the last page (a daemon without pages sends them all at once)
            return {**result, "ports": ports}
        if "after" in args and after <= args["after"]:
            raise ControlError("bad_reply", f"the pages on {session.path} do not advance")
        args = {"limit": page, "after": after}


def _connect(path: str, timeout: float) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
    except BaseException as exc:
        sock.close()
        if isinstance(exc, FileNotFoundError | ConnectionRefusedError):
            raise ControlError("not_running", f"the efmoam daemon is not running (no answer on {path})") from exc
        if isinstance(exc, PermissionError):
            raise ControlError("permission", f"no permission to use {path}") from exc
        if isinstance(exc, BlockingIOError | TimeoutError):
            raise ControlError("busy", f"the efmoam daemon takes no connection on {path} now; try again") from exc
        if isinstance(exc, OSError):
            raise ControlError("socket_error", f"cannot connect to {path}: {_reason(exc)}") from exc
        raise
    return sock


def _exchange(
    sock: socket.socket, path: str, op: str, args: dict[str, Any] | None, timeout: float, buffer: bytearray
) -> bytes:
    """Send one request and return its reply line; what came after it stays in `buffer`."""
    deadline = time.monotonic() + timeout
    try:
        sock.sendall(json.dumps({"id": 1, "op": op, "args": args or {}}).encode() + b"\n")
        while b"\n" not in buffer:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            chunk = sock.recv(65536)
            if not chunk:
                raise ControlError("disconnected", "the daemon closed the connection without an answer")
            buffer += chunk
            if len(buffer) > MAX_REPLY:
                raise ControlError("bad_reply", f"the answer on {path} is not an efmoam reply (too long)")
    except TimeoutError as exc:
        raise ControlError("timeout", f"the efmoam daemon did not answer within {timeout:g} s on {path}") from exc
    except (BrokenPipeError, ConnectionResetError) as exc:
        raise ControlError("disconnected", "the daemon closed the connection without an answer") from exc
    except OSError as exc:
        raise ControlError("socket_error", f"talking to {path}: {_reason(exc)}") from exc
    line, _, rest = buffer.partition(b"\n")
    buffer[:] = rest
    return bytes(line)


class Watch(Session):
    """A subscription to the daemon's records (the ``watch`` op): `result` is the daemon's
    answer, `records()` yields each record as it comes, blocking; it ends by raising
    ControlError: ``disconnected`` when the daemon closes (it stopped), or the daemon's
    error (``watch_overflow``: this client read too slowly)."""

    def __init__(self, path: str, args: dict[str, Any] | None = None, timeout: float = 5.0) -> None:
        super().__init__(path, timeout)
        try:
            self.result = self.request("watch", args)
            self._sock.settimeout(None)
        except BaseException:
            self.close()
            raise

    def records(self) -> Iterator[dict[str, Any]]:
        while True:
            end = self._buffer.find(b"\n")
            if end < 0:
                if len(self._buffer) > MAX_REPLY:
                    raise ControlError("bad_reply", f"a record on {self.path} is not an efmoam record (too long)")
                try:
                    chunk = self._sock.recv(65536)
                except OSError as exc:
                    raise ControlError("disconnected", f"the connection to the daemon failed: {_reason(exc)}") from exc
                if not chunk:
                    raise ControlError("disconnected", "the daemon closed the connection (it stopped or restarts)")
                self._buffer += chunk
                continue
            line = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            yield _record(line, self.path)


def _record(line: bytes, path: str) -> dict[str, Any]:
    """A watched record; an error line from the daemon (the watch ended) is raised."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise ControlError("bad_reply", f"a record on {path} is not an efmoam record (not JSON)") from exc
    if not isinstance(record, dict):
        raise ControlError("bad_reply", f"a record on {path} is not an efmoam record")
    if record.get("ok") is False:
        _result(line, path)  # raises the daemon's error
    return record


def _result(line: bytes, path: str) -> Any:
    try:
        reply = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise ControlError("bad_reply", f"the answer on {path} is not an efmoam reply (not JSON)") from exc
    if not isinstance(reply, dict) or not isinstance(reply.get("ok"), bool):
        raise ControlError("bad_reply", f"the answer on {path} is not an efmoam reply")
    if not reply["ok"]:
        error = reply.get("error")
        if not isinstance(error, dict):
            error = {}
        raise ControlError(str(error.get("code", "error")), str(error.get("message", "request failed")))
    return reply.get("result")


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__
