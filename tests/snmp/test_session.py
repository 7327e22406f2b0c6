"""The AgentX session (sans-IO): open, register, answer, ping, time out, close."""

from __future__ import annotations

import struct

from efmoam.core import OamPort, PortSettings
from efmoam.snmp import agentx
from efmoam.snmp.agentx import CloseReason, Decoder, Error, Pdu, PduType, VarBind, VarType
from efmoam.snmp.mib import OBJECTS, Mib
from efmoam.snmp.session import PING_INTERVAL, TIMEOUT, Session, State
from tests.snmp.test_mib import IFINDEX_A, Row, Writes, col

SESSION = 42


def new_session(now: float = 0.0) -> tuple[Session, Mib]:
    port = OamPort(PortSettings(), "02:00:00:00:00:0a", now=0.0)
    clock = [now]
    mib = Mib(lambda: [Row("a", IFINDEX_A, port)], Writes(clock), lambda: clock[0])
    return Session(mib, "test", now), mib


def sent(session: Session) -> list[Pdu]:
    return list(Decoder().feed(session.outgoing()))


def respond(session: Session, to: Pdu, now: float, error: int = 0, uptime: int = 1000) -> None:
    data = agentx.encode(
        PduType.RESPONSE, agentx.response_payload([], error, 0, uptime), session_id=SESSION,
        packet_id=to.header.packet_id,
    )  # fmt: skip
    session.receive(data, now)


def request(kind: PduType, payload: bytes = b"", session_id: int = SESSION, packet_id: int = 900) -> bytes:
    return agentx.encode(kind, payload, session_id=session_id, transaction_id=5, packet_id=packet_id)


def ready(now: float = 0.0) -> Session:
    session, _ = new_session(now)
    (opened,) = sent(session)
    respond(session, opened, now)
    (registered,) = sent(session)
    respond(session, registered, now)
    assert session.state is State.READY
    return session


def test_open_then_register_the_mib() -> None:
    session, mib = new_session()
    (opened,) = sent(session)
    assert opened.type == PduType.OPEN and session.state is State.OPENING
    respond(session, opened, 1.0, uptime=777)
    assert session.session_id == SESSION and session.state is State.REGISTERING
    assert mib.anchor == (1.0, 777)
    (registered,) = sent(session)
    assert registered.type == PduType.REGISTER and registered.header.session_id == SESSION
    respond(session, registered, 1.0)
    assert session.state is State.READY and session.failure is None


def test_a_refused_registration_ends_the_session() -> None:
    session, _ = new_session()
    (opened,) = sent(session)
    respond(session, opened, 0.0)
    (registered,) = sent(session)
    respond(session, registered, 0.0, error=Error.DUPLICATE_REGISTRATION)
    assert session.state is State.DONE
    assert session.failure is not None and "duplicate_registration" in session.failure
    (closed,) = sent(session)
    assert closed.type == PduType.CLOSE and closed.reason == CloseReason.OTHER


def test_requests_are_answered_with_the_request_ids() -> None:
    session = ready()
    ranges = agentx.encode_oid(col(1, 2, IFINDEX_A)) + agentx.encode_oid(())
    session.receive(request(PduType.GET, ranges), 1.0)
    (answer,) = sent(session)
    assert answer.type == PduType.RESPONSE
    assert (answer.header.session_id, answer.header.transaction_id, answer.header.packet_id) == (SESSION, 5, 900)
    assert answer.varbinds == (VarBind(col(1, 2, IFINDEX_A), VarType.INTEGER, 4),)  # activeSendLocal
    assert session.requests == 1


def test_cleanup_set_gets_no_response_and_test_set_does() -> None:
    session = ready()
    varbind = agentx.encode_varbind(VarBind(col(1, 1, IFINDEX_A), VarType.INTEGER, 2))
    session.receive(request(PduType.TEST_SET, varbind), 1.0)
    (answer,) = sent(session)
    assert (answer.error, answer.index) == (Error.NOT_WRITABLE, 1)  # writes are off
    session.receive(request(PduType.CLEANUP_SET), 1.0)
    assert sent(session) == []


def test_a_request_before_ready_is_not_open() -> None:
    session, _ = new_session()
    sent(session)
    session.receive(request(PduType.GET, agentx.encode_oid(OBJECTS) + agentx.encode_oid(())), 0.0)
    (answer,) = sent(session)
    assert answer.error == Error.NOT_OPEN


def test_pings_when_idle_and_gives_up_on_a_silent_master() -> None:
    session = ready()
    assert session.next_deadline() == PING_INTERVAL
    session.tick(PING_INTERVAL)
    (ping,) = sent(session)
    assert ping.type == PduType.PING
    assert session.next_deadline() == PING_INTERVAL + TIMEOUT
    session.tick(PING_INTERVAL + TIMEOUT)
    assert session.state is State.DONE and "did not answer our ping" in (session.failure or "")


def test_an_unanswered_open_times_out() -> None:
    session, _ = new_session()
    sent(session)
    session.tick(TIMEOUT - 0.1)
    assert session.state is State.OPENING
    session.tick(TIMEOUT)
    assert session.state is State.DONE


def test_garbage_closes_with_parse_error() -> None:
    session = ready()
    session.receive(b"\x02" + bytes(19), 1.0)
    assert session.state is State.DONE and "unreadable" in (session.failure or "")
    (closed,) = sent(session)
    assert closed.type == PduType.CLOSE and closed.reason == CloseReason.PARSE_ERROR
    session.receive(request(PduType.GET, b""), 2.0)  # nothing more is read or answered
    assert sent(session) == []


def test_the_master_closing_ends_the_session() -> None:
    session = ready()
    session.receive(request(PduType.CLOSE, struct.pack("!Bxxx", CloseReason.SHUTDOWN)), 1.0)
    assert session.state is State.DONE and session.failure == "the master closed the session (shutdown)"
    assert session.next_deadline() is None


def test_a_notification_only_when_ready() -> None:
    session, _ = new_session()
    sent(session)
    varbinds = [VarBind((1, 3, 6, 1, 6, 3, 1, 1, 4, 1, 0), VarType.OBJECT_IDENTIFIER, (1, 3, 6, 1, 2, 1, 158, 0, 2))]
    assert session.notify(varbinds, 0.0) is False
    session = ready()
    assert session.notify(varbinds, 1.0) is True
    (notify,) = sent(session)
    assert notify.type == PduType.NOTIFY and notify.varbinds == tuple(varbinds)
