"""The SNMP test harness itself (tests/snmp/agent.py), without efmoam's subagent: a private
snmpd answers, DOT3-OAM-MIB is empty until a subagent registers, a minimal AgentX subagent
written here (RFC 2741 5-6: Open, Register, Get/GetNext, Notify) is served through the
private socket, its notification reaches the private snmptrapd with its DOT3-OAM-MIB name,
and a restart brings the socket back on the same path and port."""

from __future__ import annotations

import contextlib
import queue
import socket
import struct
import threading
import time
from pathlib import Path
from types import TracebackType

import pytest

from tests.snmp.agent import (
    COLD_START,
    DOT3_OAM_MIB,
    SNMP_TRAP_OID,
    SYS_UPTIME,
    Snmpd,
    SnmpError,
    TrapReceiver,
    missing_requirements,
    parse_output,
    processes,
    snmp_error,
)

# --- a minimal AgentX subagent (RFC 2741), big-endian, default context only ---------------

HEADER = struct.Struct("!BBBxIIII")  # version, type, flags, reserved, session, transaction, packet, length
OPEN, CLOSE, REGISTER, GET, GET_NEXT, GET_BULK, NOTIFY, RESPONSE = 1, 2, 3, 5, 6, 7, 12, 18
NETWORK_BYTE_ORDER = 0x10
INTEGER, OBJECT_ID, OCTETS, COUNTER64, NO_SUCH_OBJECT, END_OF_MIB_VIEW = 2, 6, 4, 70, 128, 130
SUBTREE = (1, 3, 6, 1, 4, 1, 99999)
VALUES = {(*SUBTREE, 1, 0): 42, (*SUBTREE, 2, 0): 43}
SILENT = (*SUBTREE, 3, 0)  # a Get of it is never answered


def oid_text(oid: tuple[int, ...]) -> str:
    return "." + ".".join(map(str, oid))


def encode_oid(oid: tuple[int, ...], include: bool = False) -> bytes:
    prefix = 0
    if len(oid) > 4 and oid[:4] == (1, 3, 6, 1) and 0 < oid[4] < 256:
        prefix, oid = oid[4], oid[5:]
    return struct.pack(f"!BBBx{len(oid)}I", len(oid), prefix, include, *oid)


def decode_oid(data: bytes, offset: int) -> tuple[tuple[int, ...], bool, int]:
    count, prefix, include = struct.unpack_from("!BBB", data, offset)
    subids = struct.unpack_from(f"!{count}I", data, offset + 4)
    return ((1, 3, 6, 1, prefix) if prefix else ()) + subids, bool(include), offset + 4 + 4 * count


def varbind(kind: int, oid: tuple[int, ...], data: bytes = b"") -> bytes:
    return struct.pack("!HH", kind, 0) + encode_oid(oid) + data


class MiniSubagent:
    """Opens a session, registers SUBTREE, answers Get/GetNext from VALUES in a thread."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(5.0)
        self.sock.connect(str(path))
        self.session = self.packet = 0
        self.seen: list[int] = []  # the PDU types the master sent
        self.responses: queue.Queue[tuple[int, int, int]] = queue.Queue()  # (sysUpTime, error, index)
        self.lock = threading.Lock()
        self.send(OPEN, struct.pack("!B3x", 5) + encode_oid(()) + struct.pack("!I4s", 4, b"mini"))
        _, _, self.session, _, _, payload = self.receive()
        self.open_uptime, error, _ = struct.unpack_from("!IHH", payload)
        self.send(REGISTER, struct.pack("!BBBx", 5, 127, 0) + encode_oid(SUBTREE))
        assert error == 0 and struct.unpack_from("!IHH", self.receive()[-1])[1] == 0, "Open or Register refused"
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def send(self, kind: int, payload: bytes, transaction: int = 0, packet: int | None = None) -> None:
        with self.lock:
            if packet is None:
                self.packet += 1
                packet = self.packet
            header = HEADER.pack(1, kind, NETWORK_BYTE_ORDER, self.session, transaction, packet, len(payload))
            self.sock.sendall(header + payload)

    def exactly(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise EOFError("the master closed the connection")
            data += chunk
        return data

    def receive(self) -> tuple[int, int, int, int, int, bytes]:
        _, kind, flags, session, transaction, packet, length = HEADER.unpack(self.exactly(HEADER.size))
        return kind, flags, session, transaction, packet, self.exactly(length)

    def serve(self) -> None:
        while True:
            try:
                kind, _, _, transaction, packet, payload = self.receive()
            except (OSError, EOFError):
                return
            self.seen.append(kind)
            if kind == GET and decode_oid(payload, 0)[0] == SILENT:
                continue
            if kind == RESPONSE:
                self.responses.put(struct.unpack_from("!IHH", payload))
                continue
            varbinds, offset = b"", 0
            while kind in (GET, GET_NEXT) and offset < len(payload):
                start, include, offset = decode_oid(payload, offset)
                end, _, offset = decode_oid(payload, offset)
                if kind == GET:
                    found = [start] if start in VALUES else []
                else:
                    found = [
                        o for o in sorted(VALUES) if (o > start or (include and o == start)) and (not end or o < end)
                    ]
                missing = NO_SUCH_OBJECT if kind == GET else END_OF_MIB_VIEW
                varbinds += (
                    varbind(INTEGER, found[0], struct.pack("!i", VALUES[found[0]]))
                    if found
                    else varbind(missing, start)
                )
            self.send(RESPONSE, struct.pack("!IHH", 0, 0, 0) + varbinds, transaction, packet)

    def notify(self, varbinds: bytes) -> tuple[int, int, int]:
        self.send(NOTIFY, varbinds)
        return self.responses.get(timeout=5.0)

    def __enter__(self) -> MiniSubagent:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        with contextlib.suppress(OSError, queue.Empty):
            self.send(CLOSE, struct.pack("!B3x", 1))  # reasonOther
            self.responses.get(timeout=5.0)
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the thread's recv (close alone does not)
        self.sock.close()
        self.thread.join(5.0)


# --- the tests ---------------------------------------------------------------------------------

ANSWER = oid_text((*SUBTREE, 1, 0))
ADMIN_STATE_1 = ".1.3.6.1.2.1.158.1.1.1.1.1"  # dot3OamAdminState.1
THRESHOLD_EVENT = (1, 3, 6, 1, 2, 1, 158, 0, 1)  # dot3OamThresholdEvent
EVENT_LOG_OUI = (1, 3, 6, 1, 2, 1, 158, 1, 6, 1, 3, 2, 1)  # dot3OamEventLogOui.2.1
EVENT_LOG_VALUE = (1, 3, 6, 1, 2, 1, 158, 1, 6, 1, 10, 2, 1)  # dot3OamEventLogValue.2.1 (CounterBasedGauge64)


@pytest.mark.root
def test_snmpd_answers_sysuptime(snmpd: Snmpd) -> None:
    ((oid, kind, ticks),) = snmpd.get(SYS_UPTIME)
    assert (oid, kind) == (SYS_UPTIME, "Timeticks") and int(ticks) >= 0
    assert snmpd.get_named(SYS_UPTIME)[0][:2] == ("SNMPv2-MIB::sysUpTime.0", "Timeticks")
    assert snmpd.agentx_socket.is_socket()
    assert f"agentXSocket unix:{snmpd.agentx_socket}" in snmpd.config_path.read_text()
    assert "Cannot find module" not in snmpd.log()


@pytest.mark.root
def test_dot3_oam_mib_is_empty_without_a_subagent(snmpd: Snmpd) -> None:
    assert snmpd.walk(DOT3_OAM_MIB) == []
    assert snmpd.walk(DOT3_OAM_MIB, bulk=True) == []
    assert snmpd.get(ADMIN_STATE_1) == [(ADMIN_STATE_1, "noSuchObject", "")]
    refused = snmpd.set(ADMIN_STATE_1, "i", 1)  # an error-status is data, not an exception
    assert refused.returncode != 0 and snmp_error(refused) == "notWritable"


@pytest.mark.root
def test_a_minimal_subagent_is_served_through_the_private_socket(snmpd: Snmpd) -> None:
    with MiniSubagent(snmpd.agentx_socket) as mini:
        assert snmpd.get(ANSWER, oid_text((*SUBTREE, 9))) == [
            (ANSWER, "INTEGER", "42"),
            (oid_text((*SUBTREE, 9)), "noSuchObject", ""),
        ]
        expected = [(ANSWER, "INTEGER", "42"), (oid_text((*SUBTREE, 2, 0)), "INTEGER", "43")]
        assert snmpd.walk(oid_text(SUBTREE)) == expected
        assert snmpd.walk(oid_text(SUBTREE), bulk=True) == expected
        assert snmpd.walk_named(oid_text(SUBTREE))[0] == ("SNMPv2-SMI::enterprises.99999.1.0", "INTEGER", "42")
        # snmpd turns the GETBULK into GetNext PDUs for its subagents
        assert GET in mini.seen and GET_NEXT in mini.seen and GET_BULK not in mini.seen
        # the master's Response carries its own sysUpTime
        assert 0 <= mini.open_uptime <= int(snmpd.get(SYS_UPTIME)[0][2])
    assert snmpd.walk(oid_text(SUBTREE)) == []  # Close unregisters


@pytest.mark.root
def test_a_subagent_that_does_not_answer_is_dropped(snmpd: Snmpd) -> None:
    with MiniSubagent(snmpd.agentx_socket) as mini:
        began = time.monotonic()
        with pytest.raises(SnmpError) as failed:
            snmpd.get(oid_text(SILENT))
        assert failed.value.reason == "genError" and time.monotonic() - began < 2.0  # agentXTimeout 1 s, no retry
        mini.thread.join(5.0)  # and snmpd closed the subagent's connection
        assert not mini.thread.is_alive()
        assert snmpd.get(ANSWER) == [(ANSWER, "noSuchObject", "")]


@pytest.mark.root
def test_a_notification_reaches_the_trap_receiver(snmpd_with_traps: Snmpd, trap_receiver: TrapReceiver) -> None:
    trap_receiver.wait_for_trap(COLD_START)  # snmpd's own, at its start
    with MiniSubagent(snmpd_with_traps.agentx_socket) as mini:
        _, error, _ = mini.notify(
            varbind(OBJECT_ID, (1, 3, 6, 1, 6, 3, 1, 1, 4, 1, 0), encode_oid(THRESHOLD_EVENT))
            + varbind(OCTETS, EVENT_LOG_OUI, struct.pack("!I3sx", 3, b"\x00\x10\x18"))
            + varbind(COUNTER64, EVENT_LOG_VALUE, struct.pack("!Q", 2**40 + 1))
        )
    assert error == 0
    trap = trap_receiver.wait_for_trap("dot3OamThresholdEvent")
    assert trap["trap_oid"] == oid_text(THRESHOLD_EVENT) and trap["version"] == "v2c"
    assert trap["community"] == "public" and trap["uptime"] is not None  # snmpd adds sysUpTime.0
    assert [v[0] for v in trap["varbinds"][:2]] == [SYS_UPTIME, SNMP_TRAP_OID]
    assert trap["objects"] == [
        (oid_text(EVENT_LOG_OUI), "Hex-STRING", "00 10 18"),
        (oid_text(EVENT_LOG_VALUE), "Counter64", str(2**40 + 1)),
    ]
    assert [name for name, _, _ in trap["named"]] == [
        "SNMPv2-MIB::sysUpTime.0",
        "SNMPv2-MIB::snmpTrapOID.0",
        "DOT3-OAM-MIB::dot3OamEventLogOui.2.1",
        "DOT3-OAM-MIB::dot3OamEventLogValue.2.1",
    ]
    assert trap["named"][1][2] == "DOT3-OAM-MIB::dot3OamThresholdEvent"


@pytest.mark.root
def test_restart_brings_the_socket_back_on_the_same_path_and_port(snmpd: Snmpd) -> None:
    path, port = snmpd.agentx_socket, snmpd.port
    with MiniSubagent(path) as mini:
        snmpd.stop()  # with a subagent connected, snmpd leaves its socket file behind
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe, pytest.raises(OSError):
            probe.connect(str(path))  # gone or refused
        mini.thread.join(5.0)  # snmpd closed the connection (no Close PDU)
        assert not mini.thread.is_alive() and CLOSE not in mini.seen
    snmpd.start()
    assert path.is_socket() and snmpd.port == port
    with MiniSubagent(path):
        assert snmpd.get(ANSWER) == [(ANSWER, "INTEGER", "42")]
    snmpd.kill()  # SIGKILL leaves the socket file; the next start replaces it
    assert path.exists()
    snmpd.restart()
    with MiniSubagent(path):
        assert snmpd.get(ANSWER) == [(ANSWER, "INTEGER", "42")]


@pytest.mark.root
def test_a_port_taken_meanwhile_is_replaced(
    snmp_requirements: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.snmp import agent

    real = agent.free_udp_port
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as squatter:
        squatter.bind(("127.0.0.1", 0))
        ports = [squatter.getsockname()[1], 0, squatter.getsockname()[1], 0]  # 0: a really free one
        monkeypatch.setattr(agent, "free_udp_port", lambda: (ports.pop(0) if ports else 0) or real())
        with TrapReceiver(tmp_path / "trapd") as receiver, Snmpd(tmp_path / "agent") as snmpd:
            receiver.start()
            snmpd.start()
            assert squatter.getsockname()[1] not in (receiver.port, snmpd.port)
            assert snmpd.get(SYS_UPTIME)[0][1] == "Timeticks"


@pytest.mark.root
def test_closing_leaves_no_process_behind(snmp_requirements: None, tmp_path: Path) -> None:
    with TrapReceiver(tmp_path / "trapd") as receiver, Snmpd(tmp_path / "agent", trap_receiver=receiver) as agent:
        receiver.start()
        agent.start()
        assert len(list(processes(tmp_path))) == 2
    assert list(processes(tmp_path)) == []
    assert not agent.running and not receiver.running


def test_output_parsing() -> None:
    text = (
        '.1.3.6.1.2.1.1.4.0 = STRING: "a\\"b\\\\c\nd"\n'
        ".1.3.6.1.2.1.1.3.0 = Timeticks: (1693) 0:00:16.93\n"
        '.1.3.6.1.2.1.1.6.0 = ""\n'
        ".1.3.6.1.2.1.2.2.1.6.2 = Hex-STRING: 1E 1A D7 ED 52 17 \n"
        ".1.3.6.1.2.1.158.1.6.1.10.1.1 = Wrong Type (should be Counter64): Gauge32: 5\n"
        ".1.3.6.1.6.3.999 = No more variables left in this MIB View (It is past the end of the MIB tree)\n"
    )
    assert parse_output(text) == [
        (".1.3.6.1.2.1.1.4.0", "STRING", 'a"b\\c\nd'),
        (".1.3.6.1.2.1.1.3.0", "Timeticks", "1693"),
        (".1.3.6.1.2.1.1.6.0", "Hex-STRING", ""),
        (".1.3.6.1.2.1.2.2.1.6.2", "Hex-STRING", "1E 1A D7 ED 52 17"),
        (".1.3.6.1.2.1.158.1.6.1.10.1.1", "Wrong Type (should be Counter64)", "Gauge32: 5"),
        (".1.3.6.1.6.3.999", "endOfMibView", ""),
    ]


def test_requirements_name_what_is_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import os
    import shutil

    from tests.snmp import agent

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    if agent.MIB_DIR.is_dir() and all(shutil.which(tool) for tool in agent.TOOLS):
        assert missing_requirements() == "needs root"
    monkeypatch.setattr(shutil, "which", lambda tool: None if tool == "snmptrapd" else f"/usr/bin/{tool}")
    if agent.MIB_DIR.is_dir():
        assert missing_requirements() == "needs snmptrapd (snmptrapd) on PATH"
    monkeypatch.setattr(agent, "MIB_DIR", tmp_path / "absent")
    assert missing_requirements() == f"needs the reference MIBs in {tmp_path / 'absent'} (DOT3-OAM-MIB and its imports)"
