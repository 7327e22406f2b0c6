"""One AgentX session with the master (RFC 2741 7.1), sans-IO: bytes in, bytes out.

    connected -> OPENING (Open sent) -> REGISTERING (Register sent) -> READY -> done

`receive` takes what the socket read, `outgoing` what to write, `tick` the time; `failure`
says why the session is over (the caller closes the socket and connects again later).
In READY, the master's requests are answered from `Mib` at once, in the order they came;
Notify and Ping are sent from here.  Everything read is judged here: a malformed PDU
ends the session with Close(parseError), a request the master does not answer within
`timeout` ends it too (a master that hangs is as good as gone).  Cleanup-Set gets no
Response (RFC 2741 7.2.4.4); a Response to our Notify is only checked for its error.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Sequence

from efmoam.snmp import agentx
from efmoam.snmp.agentx import CloseReason, Error, Pdu, PduType, VarBind
from efmoam.snmp.mib import OBJECTS, Mib

PING_INTERVAL = 15.0  #: seconds between Pings while nothing else is asked of the master
TIMEOUT = 5.0  #: seconds the master has to answer one of our PDUs
#: our Open's o.timeout (seconds the master waits for our answers; 0: its default)
RESPONSE_TIMEOUT = 5


class State(enum.Enum):
    OPENING = "opening"
    REGISTERING = "registering"
    READY = "ready"
    DONE = "done"


class Session:
    """See the module's comment.  Counters: `requests` answered, `notifications` sent."""

    def __init__(self, mib: Mib, description: str, now: float) -> None:
        self.mib = mib
        self.state = State.OPENING
        self.failure: str | None = None
        self.session_id = 0
        self.requests = 0
        self.notifications = 0
        self.notify_errors = 0
        self._decoder = agentx.Decoder()
        self._out: list[bytes] = []
        self._packet_ids = itertools.count(1)
        self._waiting: dict[int, tuple[PduType, float]] = {}  #: our PDUs not yet answered
        self._last_sent = now
        self._send(PduType.OPEN, agentx.open_payload(RESPONSE_TIMEOUT, OBJECTS, description.encode()[:255]), now)

    # -- the caller's side -------------------------------------------------------------

    def receive(self, data: bytes, now: float) -> None:
        try:
            for pdu in self._decoder.feed(data):
                if self.state is State.DONE:
                    return
                self._on_pdu(pdu, now)
        except agentx.ParseError as exc:
            self._close(CloseReason.PARSE_ERROR, f"unreadable AgentX data from the master: {exc}", now)

    def outgoing(self) -> bytes:
        data = b"".join(self._out)
        self._out = []
        return data

    def notify(self, varbinds: Sequence[VarBind], now: float) -> bool:
        """Send a notification (False: not READY, nothing sent)."""
        if self.state is not State.READY:
            return False
        self._send(PduType.NOTIFY, agentx.varbinds_payload(varbinds), now)
        self.notifications += 1
        return True

    def close(self, now: float) -> None:
        """End the session as the daemon stops or the agent is switched off."""
        self._close(CloseReason.SHUTDOWN, "closed", now)

    def next_deadline(self) -> float | None:
        if self.state is State.DONE:
            return None
        if self._waiting:
            return min(sent for _, sent in self._waiting.values()) + TIMEOUT
        return self._last_sent + PING_INTERVAL if self.state is State.READY else None

    def tick(self, now: float) -> None:
        if self.state is State.DONE:
            return
        for kind, sent in self._waiting.values():
            if now - sent >= TIMEOUT:
                self.failure = f"the master did not answer our {kind.name.lower().replace('_', '-')} in {TIMEOUT:g} s"
                self.state = State.DONE
                return
        if self.state is State.READY and not self._waiting and now - self._last_sent >= PING_INTERVAL:
            self._send(PduType.PING, b"", now)

    # -- the protocol ------------------------------------------------------------------

    def _send(self, kind: PduType, payload: bytes, now: float) -> None:
        packet_id = next(self._packet_ids) & 0xFFFFFFFF
        self._out.append(agentx.encode(kind, payload, session_id=self.session_id, packet_id=packet_id))
        if kind is not PduType.CLOSE:
            self._waiting[packet_id] = (kind, now)
        self._last_sent = now

    def _answer(self, request: Pdu, varbinds: Sequence[VarBind] = (), error: int = 0, index: int = 0) -> None:
        header = request.header
        self._out.append(
            agentx.encode(
                PduType.RESPONSE, agentx.response_payload(varbinds, error, index), session_id=header.session_id,
                transaction_id=header.transaction_id, packet_id=header.packet_id,
            )
        )  # fmt: skip

    def _close(self, reason: CloseReason, why: str, now: float) -> None:
        if self.state is not State.DONE:
            self._send(PduType.CLOSE, agentx.close_payload(reason), now)
            self.state = State.DONE
            self.failure = why

    def _on_pdu(self, pdu: Pdu, now: float) -> None:
        kind = pdu.type
        if kind == PduType.RESPONSE:
            self._on_response(pdu, now)
        elif kind == PduType.CLOSE:
            self.state = State.DONE
            self.failure = f"the master closed the session ({_name(CloseReason, pdu.reason)})"
        elif self.state is not State.READY or pdu.header.session_id != self.session_id:
            self._answer(pdu, error=Error.NOT_OPEN)
        else:
            self.requests += 1
            self._on_request(pdu)

    def _on_response(self, pdu: Pdu, now: float) -> None:
        sent = self._waiting.pop(pdu.header.packet_id, None)
        if sent is None:
            return  # an answer to nothing we wait for: the master's own business
        self.mib.anchor = (now, pdu.sys_uptime)
        kind = sent[0]
        if kind is PduType.OPEN:
            if pdu.error:
                self._close(CloseReason.OTHER, f"the master refused our open ({_name(Error, pdu.error)})", now)
                return
            self.session_id = pdu.header.session_id
            self.state = State.REGISTERING
            self._send(PduType.REGISTER, agentx.register_payload(OBJECTS), now)
        elif kind is PduType.REGISTER:
            if pdu.error:
                self._close(CloseReason.OTHER, f"the master refused our registration ({_name(Error, pdu.error)})", now)
                return
            self.state = State.READY
        elif kind is PduType.NOTIFY and pdu.error:
            self.notify_errors += 1

    def _on_request(self, pdu: Pdu) -> None:
        mib, kind = self.mib, pdu.type
        if kind == PduType.GET:
            self._answer(pdu, [mib.get(r.start) for r in pdu.ranges])
        elif kind == PduType.GET_NEXT:
            self._answer(pdu, [mib.get_next(r) for r in pdu.ranges])
        elif kind == PduType.GET_BULK:
            self._answer(pdu, mib.get_bulk(pdu.ranges, pdu.non_repeaters, pdu.max_repetitions))
        elif kind == PduType.TEST_SET:
            error, index = mib.test(pdu.varbinds)
            self._answer(pdu, error=error, index=index)
        elif kind == PduType.COMMIT_SET:
            error, index = mib.commit()
            self._answer(pdu, error=error, index=index)
        elif kind == PduType.UNDO_SET:
            error, index = mib.undo()
            self._answer(pdu, error=error, index=index)
        elif kind == PduType.CLEANUP_SET:
            mib.cleanup()  # no Response: RFC 2741 7.2.4.4
        else:  # a PDU a master does not send a subagent
            self._answer(pdu, error=Error.PROCESSING_ERROR)


def _name(kind: type[enum.IntEnum], code: int) -> str:
    """A code's name as RFC 2741 writes it, lower case (its number when unknown)."""
    return kind(code).name.lower() if code in kind._value2member_map_ else str(code)
