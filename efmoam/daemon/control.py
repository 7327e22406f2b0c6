"""The control socket: one JSON object per line each way (style.md B.3 #27).

A request is ``{"id": 1, "op": "show_port", "args": {"port": "eth0"}}``; the reply is
``{"id": 1, "ok": true, "result": ...}`` or ``{"id": 1, "ok": false, "error": {"code":
..., "message": ...}}``.  Lines are capped at 64 KiB.  The server side is non-blocking
and lives in the daemon's selector; `request` is the blocking client the CLI uses.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Callable
from typing import Any

MAX_LINE = 64 * 1024
PROTOCOL_VERSION = 1
DEFAULT_SOCKET = "/run/efmoam/efmoam.sock"


class ControlError(Exception):
    """A request failed; `code` is stable (unknown_port, bad_request, not_running ...)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


Handler = Callable[[str, dict[str, Any]], Any]


class ControlServer:
    """Accepts CLI connections on a Unix socket and answers each request line."""

    def __init__(self, path: str, handler: Handler, mode: int = 0o660) -> None:
        self.path = path
        self._handler = handler
        self._clients: dict[int, tuple[socket.socket, bytearray]] = {}
        _remove_stale(path)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        os.chmod(path, mode)
        listener.listen(16)
        listener.setblocking(False)
        self.listener = listener

    def accept(self) -> socket.socket | None:
        """Accept one waiting connection (for the selector to watch)."""
        try:
            conn, _ = self.listener.accept()
        except BlockingIOError:
            return None
        conn.setblocking(False)
        self._clients[conn.fileno()] = (conn, bytearray())
        return conn

    def readable(self, conn: socket.socket) -> bool:
        """Read and answer what a client sent; False when the client is gone."""
        entry = self._clients.get(conn.fileno())
        if entry is None:
            return False
        _, buffer = entry
        try:
            data = conn.recv(65536)
        except BlockingIOError:
            return True
        except OSError:
            data = b""
        if not data:
            self.drop(conn)
            return False
        buffer += data
        while b"\n" in buffer:
            line, _, rest = bytes(buffer).partition(b"\n")
            buffer[:] = rest
            self._answer(conn, line)
        if len(buffer) > MAX_LINE:
            self._reply(conn, {"id": None, "ok": False, "error": {"code": "bad_request", "message": "line too long"}})
            self.drop(conn)
            return False
        return True

    def _answer(self, conn: socket.socket, line: bytes) -> None:
        request_id = None
        try:
            request = json.loads(line)
            if not isinstance(request, dict) or not isinstance(request.get("op"), str):
                raise ControlError("bad_request", "a request is an object with an op")
            request_id = request.get("id")
            args = request.get("args") or {}
            if not isinstance(args, dict):
                raise ControlError("bad_request", "args must be an object")
            reply = {"id": request_id, "ok": True, "result": self._handler(request["op"], args)}
        except ControlError as exc:
            reply = {"id": request_id, "ok": False, "error": {"code": exc.code, "message": exc.message}}
        except ValueError as exc:
            reply = {"id": request_id, "ok": False, "error": {"code": "bad_request", "message": str(exc)}}
        self._reply(conn, reply)

    def _reply(self, conn: socket.socket, reply: dict[str, Any]) -> None:
        data = json.dumps(reply, separators=(",", ":")).encode() + b"\n"
        try:
            conn.setblocking(True)  # replies are small; a slow reader only delays itself
            conn.settimeout(2.0)
            conn.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                conn.setblocking(False)

    def drop(self, conn: socket.socket) -> None:
        self._clients.pop(conn.fileno(), None)
        conn.close()

    def close(self) -> None:
        for conn, _ in list(self._clients.values()):
            conn.close()
        self._clients.clear()
        self.listener.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


def _remove_stale(path: str) -> None:
    """Unlink a socket file nobody answers on; refuse if a daemon is alive there."""
    if not os.path.exists(path):
        return
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError:
        os.unlink(path)
        return
    finally:
        probe.close()
    raise ControlError("already_running", f"another efmoam daemon answers on {path}")


def request(path: str, op: str, args: dict[str, Any] | None = None, timeout: float = 5.0) -> Any:
    """Send one request and return its result, or raise ControlError."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        try:
            sock.connect(path)
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            raise ControlError("not_running", f"the efmoam daemon is not running (no answer on {path})") from exc
        except PermissionError as exc:
            raise ControlError("permission", f"no permission to use {path}") from exc
        sock.sendall(json.dumps({"id": 1, "op": op, "args": args or {}}).encode() + b"\n")
        buffer = b""
        while b"\n" not in buffer:
            chunk = sock.recv(65536)
            if not chunk:
                raise ControlError("disconnected", "the daemon closed the connection")
            buffer += chunk
    finally:
        sock.close()
    reply = json.loads(buffer.partition(b"\n")[0])
    if not reply.get("ok"):
        error = reply.get("error") or {}
        raise ControlError(str(error.get("code", "error")), str(error.get("message", "request failed")))
    return reply.get("result")
