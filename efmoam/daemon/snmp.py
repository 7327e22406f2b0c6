"""The SNMP subagent in the daemon's loop: the AgentX socket, reconnection, notifications.

Why inside the daemon rather than a process beside it: a request is answered from the
engines themselves (what SNMP reports is what show reports, at the same instant), a
notification leaves in the same wake-up as the event-log entry that raised it, and
there is no second process to supervise or snapshot to keep fresh.  The cost is bounded
by design: the socket is non-blocking, every PDU is answered at once from
`efmoam.snmp.mib` (a GetNext is a bisection and one attribute read), at most `READ_BUDGET`
bytes are read per wake-up, and the README gives the measured cost of a full walk.

The master may be absent, slow or restarted: connecting never blocks (a Unix socket
connects or fails at once; TCP finishes in the background), a master that does not
answer within `efmoam.snmp.session.TIMEOUT` is dropped, and a lost session is retried
after 1, 2, 4 ... up to `RETRY_MAX` seconds, logged once per distinct reason.  While no
session is ready, notifications wait in a queue of `QUEUE` (the oldest dropped and
counted) and leave when one is.

Writes come from the master (snmpd checks its own access control first) and reach the
engines through the control operations, audited as the operator commands they are: who
asked is snmpd's process (SO_PEERCRED), ``via=snmp`` in the arguments.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import socket
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from efmoam.config.model import SnmpConfig, agentx_address
from efmoam.core.linkmon.eventlog import EventLogEntry
from efmoam.daemon.control import ControlError, Peer, peer_of
from efmoam.daemon.journal import Journal
from efmoam.snmp.agentx import VarBind
from efmoam.snmp.mib import Mib, MibPort, WriteFailed, in_mib
from efmoam.snmp.session import Session, State

if TYPE_CHECKING:
    from efmoam.daemon.loop import Loop

RETRY_MIN = 1.0
RETRY_MAX = 30.0
QUEUE = 256  #: notifications kept while no session is ready
READ_BUDGET = 256 * 1024  #: bytes read from the master per wake-up
MAX_OUTPUT = 1 << 20  #: bytes waiting for the master beyond which it is dropped as stuck
DESCRIPTION = "efmoam: IEEE 802.3 Clause 57 OAM (DOT3-OAM-MIB)"

#: does a write (op, args, peer, now): the daemon's audited control operations
Operate = Callable[[str, dict[str, Any], Peer | None, float], Any]


class _Writes:
    """`efmoam.snmp.mib.Writer` over the control operations."""

    def __init__(self, agent: SnmpAgent, operate: Operate) -> None:
        self._agent, self._operate = agent, operate

    def _run(self, op: str, args: dict[str, Any]) -> None:
        try:
            self._operate(op, {**args, "via": "snmp"}, self._agent.peer, self._agent.clock())
        except ControlError as exc:
            raise WriteFailed(exc.message) from exc

    def set_admin(self, row: MibPort, enabled: bool) -> None:
        self._run("admin_state", {"port": row.name, "state": "enabled" if enabled else "disabled"})

    def set_loopback(self, row: MibPort, start: bool) -> None:
        self._run("loopback", {"port": row.name, "enable": start})


class SnmpAgent:
    """The subagent; `service` and `next_deadline` are the loop's, `logged` and
    `mib.invalidate` the ports'."""

    def __init__(
        self, settings: SnmpConfig, loop: Loop, journal: Journal, ports: Callable[[], Iterable[MibPort]],
        operate: Operate,
    ) -> None:  # fmt: skip
        self.settings = settings
        self.clock = loop.clock
        self._loop = loop
        self._journal = journal
        self.mib = Mib(ports, _Writes(self, operate), loop.clock)
        self.mib.writes = settings.writes
        self.peer: Peer | None = None  #: the master's process, for the audit of its writes
        self._sock: socket.socket | None = None
        self._connecting = False
        self._announced = False  #: this session's registration is logged
        self._session: Session | None = None
        self._output = bytearray()
        self._queue: collections.deque[list[VarBind]] = collections.deque()
        self._retry_at: float | None = loop.clock()
        self._retry_delay = RETRY_MIN
        self._last_problem: str | None = None
        self.stats = {"sessions": 0, "requests": 0, "notifications": 0, "notifications_dropped": 0, "failures": 0}
        self.longest = 0.0  #: seconds of the longest wake-up's SNMP work (what it held the loop)

    # -- what others call --------------------------------------------------------------

    def view(self) -> dict[str, Any]:
        """The subagent's condition, for show and metrics."""
        session = self._session
        return {
            "agentx_socket": self.settings.agentx_socket,
            "state": "down" if session is None else ("connecting" if self._connecting else session.state.value),
            "writes": self.settings.writes,
            "error": self._last_problem,
            "queued": len(self._queue),
            "longest_wakeup_ms": round(self.longest * 1e3, 3),
            **self.stats,
            "requests": self.stats["requests"] + (0 if session is None else session.requests),
        }

    def logged(self, ifindex: int, entry: EventLogEntry) -> None:
        """An event-log slot was written: the rows change, and a new entry is notified (now,
        or once a session is ready)."""
        self.mib.invalidate()
        if not entry.active or not in_mib(entry):
            return
        if len(self._queue) >= QUEUE:
            self._queue.popleft()
            self.stats["notifications_dropped"] += 1
        self._queue.append(self.mib.notification(ifindex, entry))
        if self._session is not None:
            self._after(self.clock())

    def next_deadline(self) -> float | None:
        session = self._session
        return self._retry_at if session is None else session.next_deadline()

    def service(self, now: float) -> None:
        """Time-driven work: connect when due, the session's timers (its Open, queued at
        connect, also times out a TCP connect that never completes)."""
        if self._session is None:
            if self._retry_at is not None and now >= self._retry_at:
                self._connect(now)
            return
        self._session.tick(now)
        self._after(now)

    def close(self) -> None:
        if self._session is not None and not self._connecting:
            self._session.close(self.clock())
            self._output += self._session.outgoing()
            with contextlib.suppress(OSError):
                self._write()
        self._drop()
        self._retry_at = None

    # -- the connection ----------------------------------------------------------------

    def _connect(self, now: float) -> None:
        family, address = agentx_address(self.settings.agentx_socket)  # checked with the configuration
        try:
            sock = socket.socket(family, socket.SOCK_STREAM | socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC)
        except OSError as exc:  # EMFILE, ENOBUFS ...
            self._failed(f"no socket for the master: {exc.strerror or exc}", now)
            return
        try:
            code = sock.connect_ex(address)
        except OSError as exc:  # a path the kernel refuses (too long ...)
            code = exc.errno or errno.EINVAL
        if code not in (0, errno.EINPROGRESS):
            sock.close()
            self._failed(f"cannot connect to {self.settings.agentx_socket}: {errno.errorcode.get(code, code)}", now)
            return
        self._sock = sock
        self._connecting = code == errno.EINPROGRESS
        self._loop.watch(sock, "snmp", self._on_ready, write=True)  # writable: connected
        self._session = Session(self.mib, DESCRIPTION, now)
        self._announced = False
        self.stats["sessions"] += 1
        if not self._connecting:
            self._opened(now)

    def _opened(self, now: float) -> None:
        assert self._sock is not None and self._session is not None
        self._connecting = False
        self.peer = peer_of(self._sock) if self._sock.family == socket.AF_UNIX else None
        self._after(now)

    def _on_ready(self, now: float) -> None:
        if self._sock is None:
            return  # dropped earlier in this wake-up (a failed write of a notification)
        self._read_and_answer(now)
        self.longest = max(self.longest, self.clock() - now)

    def _read_and_answer(self, now: float) -> None:
        sock, session = self._sock, self._session
        assert sock is not None and session is not None
        if self._connecting:
            code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code:
                self._failed(f"cannot connect to {self.settings.agentx_socket}: {errno.errorcode.get(code, code)}", now)
                return
            self._opened(now)
        budget = READ_BUDGET
        while budget > 0:
            try:
                data = sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as exc:
                self._failed(f"the master's socket failed: {exc.strerror or exc}", now)
                return
            if not data:
                self._failed("the master closed the connection", now)
                return
            budget -= len(data)
            session.receive(data, now)
            if len(data) < 65536:
                break  # drained: a second recv would only say EAGAIN (the selector wakes us for more)
        self._after(now)

    def _after(self, now: float) -> None:
        """After the session moved: write what it has to say, end it if it is over."""
        session = self._session
        if session is None:
            return
        if session.state is State.READY and not self._connecting:
            while self._queue:
                session.notify(self._queue.popleft(), now)
                self.stats["notifications"] += 1
        self._output += session.outgoing()
        try:
            self._write()
        except OSError as exc:
            self._failed(f"the master's socket failed: {exc.strerror or exc}", now)
            return
        if session.failure is not None:
            self._failed(session.failure, now)
        elif len(self._output) > MAX_OUTPUT:
            self._failed(f"the master takes no answers ({len(self._output)} bytes waiting)", now)
        elif session.state is State.READY and not self._announced:
            self._announced = True
            self._journal.log("notice", "snmp subagent registered", master=self.settings.agentx_socket)
            self._last_problem = None
            self._retry_delay = RETRY_MIN

    def _write(self) -> None:
        sock = self._sock
        if sock is None or self._connecting:
            return
        while self._output:
            try:
                sent = sock.send(self._output)
            except (BlockingIOError, InterruptedError):
                break
            del self._output[:sent]
        self._loop.want_write(sock, bool(self._output))

    def _failed(self, why: str, now: float) -> None:
        """The session is over: drop it, log why (once per reason) and retry later."""
        self.stats["failures"] += 1
        if why != self._last_problem:
            self._journal.log("warning", "snmp subagent not connected", reason=why, retry_in=self._retry_delay)
        self._last_problem = why
        self._drop()
        self._retry_at = now + self._retry_delay
        self._retry_delay = min(RETRY_MAX, self._retry_delay * 2)

    def _drop(self) -> None:
        if self._session is not None:
            self.stats["requests"] += self._session.requests
        sock, self._sock, self._session = self._sock, None, None
        self._connecting = False
        self._output.clear()
        self.peer = None
        if sock is not None:
            self._loop.forget(sock)
            sock.close()
