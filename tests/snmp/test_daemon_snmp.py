"""The subagent end to end (root): a daemon on a veth pair, a private snmpd as its AgentX
master, snmpwalk/snmpget/snmpset with the reference MIB, snmptrapd for notifications.

What SNMP says is compared row by row with ``show port -f json`` (the same engines);
writes are checked in ``show port``; the master restarting, dying, and misbehaving
never stops the daemon."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from efmoam.snmp.mib import names
from efmoam.views.data import LOOPBACK_NAMES, OPER_STATUS_NAMES
from tests.daemon.lab import Lab
from tests.linux.netns import in_netns
from tests.snmp.agent import Snmpd, TrapReceiver, snmp_error

pytestmark = pytest.mark.root

ALL_ONES = 2**64 - 1
COLUMN = {".".join(map(str, oid)): name for name, oid in names().items()}
OPER = {name: int(status) for status, name in OPER_STATUS_NAMES.items()}
LOOPBACK = {name: int(status) for status, name in LOOPBACK_NAMES.items()}
BITS = {"unidirectionalSupport": 0x80, "loopbackSupport": 0x40, "eventSupport": 0x20, "variableSupport": 0x10}
MONITOR_COLUMNS = {  # (window, threshold, notify enable) columns of dot3OamEventConfigTable per monitor
    "errored_frame_period": ("dot3OamErrFramePeriodWindow", "dot3OamErrFramePeriodThreshold",
                             "dot3OamErrFramePeriodEvNotifEnable"),
    "errored_frame": ("dot3OamErrFrameWindow", "dot3OamErrFrameThreshold", "dot3OamErrFrameEvNotifEnable"),
    "errored_frame_seconds": ("dot3OamErrFrameSecsSummaryWindow", "dot3OamErrFrameSecsSummaryThreshold",
                              "dot3OamErrFrameSecsEvNotifEnable"),
}  # fmt: skip


@pytest.fixture
def snmp_lab(lab: Lab, snmpd: Snmpd) -> Iterator[tuple[Lab, Snmpd]]:
    """The lab with daemon A serving DOT3-OAM-MIB to `snmpd`, writes allowed; B processes loopback."""
    lab.a.overrides = {"daemon": {"snmp": {"enabled": True, "agentx_socket": str(snmpd.agentx_socket), "writes": True}}}
    lab.b.overrides = {"defaults": {"loopback": "process"}}
    lab.start()
    lab.wait_operational()
    lab.wait_for(lambda: registered(lab), 10, "the subagent registered")
    yield lab, snmpd


def registered(lab: Lab) -> bool:
    snmp = lab.a.query("show_ports")["daemon"]["snmp"]
    return snmp is not None and snmp["state"] == "ready"


def by_name(varbinds: list[tuple[str, str, str]]) -> dict[tuple[str, tuple[int, ...]], tuple[str, str]]:
    """{(column name, index): (type, value)} of a numeric walk of the MIB."""
    table: dict[tuple[str, tuple[int, ...]], tuple[str, str]] = {}
    for oid, kind, value in varbinds:
        parts = oid.lstrip(".").split(".")
        column = ".".join(parts[:11])
        table[(COLUMN[column], tuple(int(p) for p in parts[11:]))] = (kind, value)
    return table


def octets(text: str) -> str:
    return text.replace(":", "").upper()


def expected_rows(view: dict[str, Any]) -> dict[str, int | str]:
    """What each per-port column must say for `view` (show port -f json)."""
    peer, monitors, sf_action = (
        view["peer"],
        view["link_monitoring"]["monitors"],
        view["link_monitoring"]["local_sf_action"],
    )
    truth = lambda flag: 1 if flag else 2  # noqa: E731
    rows: dict[str, int | str] = {
        "dot3OamAdminState": 1 if view["admin_state"] == "enabled" else 2,
        "dot3OamOperStatus": OPER[view["oper_status"]],
        "dot3OamMode": 2 if view["mode"] == "active" else 1,
        "dot3OamMaxOamPduSize": view["max_pdu_size"],
        "dot3OamConfigRevision": view["config_revision"],
        "dot3OamFunctionsSupported": f"{sum(BITS[n] for n in view['functions_supported']):02X}",
        "dot3OamPeerMacAddress": octets(peer["mac_address"]),
        "dot3OamPeerVendorOui": octets(peer["vendor_oui"]),
        "dot3OamPeerVendorInfo": peer["vendor_info"],
        "dot3OamPeerMode": 2 if peer["mode"] == "active" else 1,
        "dot3OamPeerMaxOamPduSize": peer["max_pdu_size"],
        "dot3OamPeerConfigRevision": peer["config_revision"],
        "dot3OamPeerFunctionsSupported": f"{sum(BITS[n] for n in peer['functions_supported']):02X}",
        "dot3OamLoopbackStatus": LOOPBACK[view["loopback"]["status"]],
        "dot3OamLoopbackIgnoreRx": 1 if view["loopback"]["ignore_rx"] == "ignore" else 2,
        "dot3OamDyingGaspEnable": truth(sf_action["dying_gasp"]),
        "dot3OamCriticalEventEnable": truth(sf_action["critical_event"]),
    }
    symbol = monitors["errored_symbol_period"]
    rows["dot3OamErrSymPeriodWindowHi"] = symbol["window_on_wire"] >> 32
    rows["dot3OamErrSymPeriodWindowLo"] = symbol["window_on_wire"] & 0xFFFFFFFF
    rows["dot3OamErrSymPeriodThresholdHi"] = symbol["sf_threshold"] >> 32
    rows["dot3OamErrSymPeriodThresholdLo"] = symbol["sf_threshold"] & 0xFFFFFFFF
    rows["dot3OamErrSymPeriodEvNotifEnable"] = truth(symbol["enabled"] and symbol["event_notification"])
    for key, (window, threshold, notify) in MONITOR_COLUMNS.items():
        rows[window] = monitors[key]["window_on_wire"]
        rows[threshold] = monitors[key]["sf_threshold"]
        rows[notify] = truth(monitors[key]["enabled"] and monitors[key]["event_notification"])
    for name, value in view["statistics"].items():
        rows[name] = value
    return rows


def first_token(value: str) -> str:
    return value.split(maxsplit=1)[0] if value else value


def test_a_walk_says_what_show_port_says(snmp_lab: tuple[Lab, Snmpd]) -> None:
    lab, snmpd = snmp_lab
    # an errored-frame failure and the peer's Dying Gasp, so that the event log has rows
    lab.a.set_counters(errored_frames=20)
    lab.wait_view(
        lab.a, lambda v: any(e["type"] == "erroredFrameEvent" for e in v["event_log"]), 5, "an errored-frame event"
    )
    before = lab.a.show("veth0")
    walked = by_name(snmpd.walk())
    after = lab.a.show("veth0")
    ifindex = before["ifindex"]
    assert after["event_log"] == before["event_log"], "the log changed during the walk: run again"
    expected = expected_rows(before)
    moving = {"dot3OamInformationTx", "dot3OamInformationRx"}  # keep-alives go on during the walk
    for name, want in expected.items():
        kind, got = walked.pop((name, (ifindex,)))
        if name in moving:
            assert want <= int(got) <= after["statistics"][name], name
        elif kind in ("Hex-STRING", "BITS"):
            assert first_token(got) == want if kind == "BITS" else got.replace(" ", "") == want, (name, got, want)
        else:
            assert int(got) == want, (name, kind, got, want)
    for entry in before["event_log"]:
        index = (ifindex, entry["index"])
        value = lambda column, index=index: walked.pop((column, index))[1]  # noqa: E731
        assert int(value("dot3OamEventLogType")) == entry["type_number"]
        assert int(value("dot3OamEventLogLocation")) == (1 if entry["location"] == "local" else 2)
        assert value("dot3OamEventLogOui").replace(" ", "") == octets(entry["oui"])
        for column, key in (("Window", "window_on_wire"), ("Threshold", "threshold")):
            number = ALL_ONES if entry[key] is None else entry[key]
            assert int(value(f"dot3OamEventLog{column}Hi")) == number >> 32
            assert int(value(f"dot3OamEventLog{column}Lo")) == number & 0xFFFFFFFF
        assert int(value("dot3OamEventLogValue")) == (ALL_ONES if entry["errors"] is None else entry["errors"])
        assert int(value("dot3OamEventLogRunningTotal")) == entry["error_running_total"]
        assert int(value("dot3OamEventLogEventTotal")) == entry["event_running_total"]
        assert int(value("dot3OamEventLogTimestamp")) > 0
    assert walked == {}, f"columns or rows show port does not have: {sorted(walked)[:5]}"
    # the same through GETBULK, and one get
    assert [oid for oid, _, _ in snmpd.walk(bulk=True)] == [oid for oid, _, _ in snmpd.walk()]
    ((_, kind, value),) = snmpd.get(f".1.3.6.1.2.1.158.1.1.1.2.{ifindex}")
    assert (kind, int(value)) == ("INTEGER", OPER["operational"])


def test_loopback_and_admin_state_written_through_snmp(snmp_lab: tuple[Lab, Snmpd]) -> None:
    lab, snmpd = snmp_lab
    ifindex = lab.a.show("veth0")["ifindex"]
    status, admin, mode = (f".1.3.6.1.2.1.158.1.{t}.1.{c}.{ifindex}" for t, c in ((3, 1), (1, 1), (1, 3)))
    result = snmpd.set(status, "i", LOOPBACK["initiatingLoopback"])
    assert snmp_error(result) is None, result.stderr
    lab.wait_view(lab.a, lambda v: v["loopback"]["status"] == "remoteLoopback", 5, "A in remote loopback")
    assert lab.wait_view(lab.b, lambda v: v["loopback"]["status"] == "localLoopback", 5, "B looping")
    assert snmp_error(snmpd.set(status, "i", LOOPBACK["initiatingLoopback"])) == "inconsistentValue"
    assert snmp_error(snmpd.set(status, "i", LOOPBACK["localLoopback"])) == "wrongValue"
    assert snmp_error(snmpd.set(status, "i", LOOPBACK["terminatingLoopback"])) is None
    lab.wait_view(lab.a, lambda v: v["loopback"]["status"] == "noLoopback", 5, "the loopback ended")
    # the administrative state, over the configuration until set back
    assert snmp_error(snmpd.set(admin, "i", 2)) is None
    view = lab.wait_view(lab.a, lambda v: v["admin_state"] == "disabled", 5, "OAM disabled")
    assert view["admin_override"] == "disabled" and view["oper_status"] == "disabled"
    assert snmp_error(snmpd.set(admin, "i", 1)) is None
    lab.wait_view(lab.a, lambda v: v["oper_status"] == "operational", 10, "operational again")
    assert snmp_error(snmpd.set(mode, "i", 1)) == "notWritable"
    assert snmp_error(snmpd.set(admin, "i", 7)) == "wrongValue"
    # every write is audited as snmpd's, via snmp
    audited = lab.a.log_lines(r"operator command op=(loopback|admin_state) .*via=snmp")
    assert len(audited) == 4, audited
    assert f"pid={snmpd.pid}" in audited[0]


def test_writes_are_refused_unless_configured(lab: Lab, snmpd: Snmpd) -> None:
    lab.a.overrides = {"daemon": {"snmp": {"enabled": True, "agentx_socket": str(snmpd.agentx_socket)}}}
    lab.start()
    lab.wait_operational()
    lab.wait_for(lambda: registered(lab), 10, "the subagent registered")
    ifindex = lab.a.show("veth0")["ifindex"]
    assert snmp_error(snmpd.set(f".1.3.6.1.2.1.158.1.1.1.1.{ifindex}", "i", 2)) == "notWritable"
    assert lab.a.show("veth0")["admin_state"] == "enabled"


def test_events_are_notified(lab: Lab, snmpd_with_traps: Snmpd, trap_receiver: TrapReceiver) -> None:
    lab.a.overrides = {"daemon": {"snmp": {"enabled": True, "agentx_socket": str(snmpd_with_traps.agentx_socket)}}}
    lab.start()
    lab.wait_operational()
    lab.wait_for(lambda: registered(lab), 10, "the subagent registered")
    ifindex = lab.a.show("veth0")["ifindex"]
    lab.a.set_counters(errored_frames=20)  # a signal failure: over 5 errored frames in the 1 s window
    trap = trap_receiver.wait_for_trap("dot3OamThresholdEvent", timeout=10)
    view = lab.a.show("veth0")
    entry = next(e for e in view["event_log"] if e["type"] == "erroredFrameEvent" and e["severity"] == "sf")
    prefix = ".1.3.6.1.2.1.158.1.6.1."
    objects = {oid[len(prefix) :]: value for oid, _, value in trap["objects"]}
    instance = f"{ifindex}.{entry['index']}"
    assert set(objects) == {f"{column}.{instance}" for column in range(2, 13)}
    assert int(objects[f"4.{instance}"]) == 3  # erroredFrameEvent
    assert int(objects[f"7.{instance}"]) == entry["window_on_wire"]
    assert int(objects[f"9.{instance}"]) == entry["threshold"]
    assert int(objects[f"10.{instance}"]) == entry["errors"]
    assert int(objects[f"12.{instance}"]) == entry["event_running_total"]
    # sent within a second of the event, on the master's own clock
    assert trap["uptime"] is not None and 0 <= trap["uptime"] - int(objects[f"2.{instance}"]) <= 100
    # the peer stops: its Dying Gasp is a non-threshold event
    lab.b.stop()
    trap = trap_receiver.wait_for_trap("dot3OamNonThresholdEvent", timeout=10)
    assert sorted(int(oid.split(".")[11]) for oid, _, _ in trap["objects"]) == [2, 3, 4, 5, 12]
    assert [int(v) for oid, _, v in trap["objects"] if oid.split(".")[11] == "4"] == [257]  # dyingGaspEvent


def test_the_master_restarting_or_gone_never_stops_the_daemon(lab: Lab, snmpd: Snmpd) -> None:
    lab.a.overrides = {"daemon": {"snmp": {"enabled": True, "agentx_socket": str(snmpd.agentx_socket)}}}
    lab.start()
    lab.wait_operational()
    lab.wait_for(lambda: registered(lab), 10, "the subagent registered")
    snmpd.restart()
    lab.wait_for(lambda: registered(lab) and snmpd.walk() != [], 15, "the subagent back after a restart")
    snmpd.kill()
    lab.wait_for(lambda: not registered(lab), 10, "the loss seen")
    assert lab.a.show("veth0")["oper_status"] == "operational"
    snmpd.start()
    lab.wait_for(lambda: registered(lab) and snmpd.walk() != [], 40, "the subagent back after the master died")
    view = lab.a.query("show_ports")["daemon"]["snmp"]
    assert view["sessions"] >= 3 and view["failures"] >= 2
    assert len(lab.a.log_lines("snmp subagent registered")) >= 3
    lab.check_alive()


class HostileMaster:
    """A Unix socket at the AgentX path that answers each connection with `reply` (bytes,
    or nothing at all) and counts the connections."""

    def __init__(self, path: str, reply: bytes | None) -> None:
        self.path, self.reply, self.connections = path, reply, 0
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(path)
        self.server.listen(8)
        self.held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.connections += 1
            self.held.append(conn)  # never answered, never closed by us (a hung master)
            if self.reply is not None:
                try:
                    conn.recv(4096)
                    conn.sendall(self.reply)
                except OSError:
                    pass

    def close(self) -> None:
        self.server.close()
        for conn in self.held:
            conn.close()


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (b"\x09" * 40, "unreadable AgentX data"),  # garbage
        (b"\x01\x12\x10\x00" + bytes(12) + (2**30).to_bytes(4, "big"), "unreadable AgentX data"),  # 1 GiB announced
        (None, "did not answer our open"),  # a master that accepts and hangs
    ],
)
def test_a_hostile_master_is_dropped_and_retried(lab: Lab, tmp_path: Path, reply: bytes | None, reason: str) -> None:
    path = str(tmp_path / "master")
    master = HostileMaster(path, reply)
    try:
        lab.a.overrides = {"daemon": {"snmp": {"enabled": True, "agentx_socket": path}}}
        lab.start()
        lab.wait_operational()
        lab.wait_for(lambda: master.connections >= 2, 20, "a second attempt")
        lines = lab.a.log_lines("snmp subagent not connected")
        assert lines and reason in lines[0], lines
        assert len(lines) == 1, "logged once per reason, not per attempt"
        assert lab.a.show("veth0")["oper_status"] == "operational"
        lab.check_alive()
    finally:
        master.close()
        os.unlink(path)


def test_no_master_at_all(lab: Lab, tmp_path: Path) -> None:
    lab.a.overrides = {"daemon": {"snmp": {"enabled": True, "agentx_socket": str(tmp_path / "nothing")}}}
    started = time.monotonic()
    lab.start()
    lab.wait_operational()
    assert time.monotonic() - started < 15
    snmp = lab.a.query("show_ports")["daemon"]["snmp"]
    assert snmp["state"] == "down" and "ENOENT" in (snmp["error"] or "")


def test_a_tcp_master_that_never_answers(lab: Lab) -> None:
    def listen() -> socket.socket:  # in A's namespace: the kernel completes the handshake
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # from the backlog, and
        listener.bind(("127.0.0.1", 0))  # nobody accepts or reads
        listener.listen(8)
        return listener

    listener = in_netns(lab.ns_a, listen)
    try:
        port = listener.getsockname()[1]
        lab.a.overrides = {"daemon": {"snmp": {"enabled": True, "agentx_socket": f"tcp:localhost:{port}"}}}
        lab.start()
        lab.wait_operational()
        lab.wait_for(lambda: lab.a.log_lines("snmp subagent not connected"), 15, "the open timed out")
        assert "did not answer our open" in lab.a.log_lines("snmp subagent not connected")[0]
        assert lab.a.show("veth0")["oper_status"] == "operational"
    finally:
        listener.close()
