"""Faults and drift (end to end, two daemons in namespaces): a stall of ours is not a
silent peer, an action undone behind the daemon's back is put back, a MAC change is
followed, a failed state write is visible, stalled scrapers do not pile up threads,
and no hostile request, configuration, counter or state file ends the daemon."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
import urllib.request
from pathlib import Path

import pytest

from tests.daemon.lab import MAC_A, Lab, netns_run
from tests.linux.netns import in_netns
from tests.robustness.wire import information, send_paced

pytestmark = pytest.mark.root
METRICS_PORT = 9717


def metrics(lab: Lab) -> str:
    def get() -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{METRICS_PORT}/metrics", timeout=5) as response:
            return str(response.read().decode())

    return str(in_netns(lab.ns_a, get))


def sample(text: str, name: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rpartition(" ")[2])
    return None


def raise_sf(lab: Lab) -> None:
    """20 errored frames in A's 1 s window (SF threshold 5): A goes out of service."""
    lab.a.set_counters(errored_frames=20, frames_received=2000)
    lab.wait_for(lambda: lab.block_table_present(lab.a), 10, "A's block table")


def test_a_stall_of_ours_is_not_taken_for_a_silent_peer(lab: Lab) -> None:
    lab.start()
    lost = len(lab.a.log_lines(r"cause=lost_link"))
    lab.a.signal(signal.SIGSTOP)  # 3 s: three times the lab's lost-link time; B keeps sending
    time.sleep(3.0)
    lab.a.signal(signal.SIGCONT)
    time.sleep(1.0)
    lab.a.check_alive()
    assert len(lab.a.log_lines(r"cause=lost_link")) == lost, lab.a.log_lines(r"cause=lost_link")


def test_a_block_table_deleted_behind_the_daemons_back_is_put_back(lab: Lab) -> None:
    lab.a.overrides = {"daemon": {"action_verify_interval": 0.5, "metrics": {"enabled": True}}}
    lab.start()
    raise_sf(lab)
    assert not lab.ping(lab.a)
    netns_run(lab.ns_a, "nft", "delete", "table", "netdev", "efmoam_block_veth0")
    view = lab.wait_view(lab.a, lambda v: v["action"]["reapplied"] >= 1, 10, "the block put back")
    assert view["action"]["applied"] is True and view["action"]["error"] is None
    assert lab.block_table_present(lab.a)
    assert not lab.ping(lab.a)
    assert sample(metrics(lab), 'efmoam_port_action_reapplied_total{device="veth0"}') == 1
    assert lab.a.log_lines(r"undone behind the daemon's back")


def test_a_mac_change_is_followed(lab: Lab) -> None:
    lab.start()
    new = "02:00:00:00:aa:99"
    netns_run(lab.ns_a, "ip", "link", "set", "veth0", "address", new)
    lab.wait_view(lab.a, lambda v: v["mac"] == new, 10, "A's show to report the new MAC")
    lab.wait_view(lab.b, lambda v: (v.get("peer") or {}).get("mac_address") == new, 10, "B to see A's new MAC")
    lab.wait_operational()
    # a frame carrying our new MAC is a loop, and never a peer
    send_paced(lab, lambda _n: information(new), 20, 0.5)
    view = lab.wait_view(lab.a, lambda v: v["drops"].get("loop", 0) > 0, 5, "the loop counted")
    assert view["peer"]["mac_address"] != new and view["peer"]["mac_address"] != MAC_A


def test_a_failed_state_write_is_visible(lab: Lab, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    lab.a.overrides = {"daemon": {"state_dir": str(blocker / "state"), "metrics": {"enabled": True}}}
    lab.start()
    raise_sf(lab)  # an event: the state must be written, and cannot be
    health = lab.wait_for(
        lambda: (h := lab.a.query("show_ports")["daemon"])["state"]["save_failures"] > 0 and h, 10, "a failed write"
    )
    assert health["state"]["error"]
    assert lab.a.fast_port()["state_error"]
    text = metrics(lab)
    assert sample(text, "efmoam_state_saved") == 0
    assert (sample(text, "efmoam_state_save_failures_total") or 0) >= 1


def test_stalled_scrapers_are_timed_out(lab: Lab) -> None:
    lab.a.overrides = {"daemon": {"metrics": {"enabled": True}}}
    lab.start()
    threads = len(os.listdir(f"/proc/{lab.a.pid}/task"))

    def stall() -> list[socket.socket]:
        return [socket.create_connection(("127.0.0.1", METRICS_PORT)) for _ in range(30)]

    stalled = in_netns(lab.ns_a, stall)
    try:
        time.sleep(0.5)
        assert "efmoam_oper_status" in metrics(lab)  # a real scrape is still served
        lab.wait_for(lambda: len(os.listdir(f"/proc/{lab.a.pid}/task")) <= threads, 20, "stalled threads gone")
    finally:
        for sock in stalled:
            sock.close()


def test_hostile_control_requests_end_nothing(lab: Lab) -> None:
    lab.start(lab.a, operational=False)

    def raw(line: bytes) -> dict[str, object]:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect(lab.a.socket)
            sock.sendall(line + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = sock.recv(65536)
                assert chunk, "the daemon closed the connection"
                data += chunk
        reply = json.loads(data)
        assert isinstance(reply, dict)
        return reply

    for line in (
        b"[" * 60_000,
        b'{"op":"clear_events","args":{"port":"veth0","location":[]}}',
        b'{"op":"variables","args":{"port":"veth0","leaves":[1e400]}}',
        b'{"op":"loopback","args":{"port":"veth0","enable":"yes"}}',
        b'{"op":"variable_answer","args":{"port":"veth0","request":true}}',
        b'{"op":"show_port","args":{"port":["veth0"]}}',
        b'{"op":' + b'"x' * 1000 + b'"}',
    ):
        reply = raw(line)
        assert reply["ok"] is False, reply
        assert reply["error"]["code"] == "bad_request", reply  # type: ignore[index]
    lab.a.check_alive()
    assert lab.a.query("hello")["ports"] == ["veth0"]


def test_hostile_files_end_nothing(lab: Lab) -> None:
    # a state file of the wrong shape: the daemon starts, the file is set aside
    lab.a.state_dir.mkdir(parents=True, exist_ok=True)
    (lab.a.state_dir / "state.json").write_text('{"version": 1, "ports": {"veth0": []}}')
    lab.start(lab.a, operational=False)
    assert lab.a.query("show_ports")["daemon"]["state"]["set_aside"]
    assert (lab.a.state_dir / "state.bad").read_text() == '{"version": 1, "ports": {"veth0": []}}'
    # a counter file nested 100,000 deep: counters not read, the daemon runs on
    lab.a.counter_file.write_text("[" * 100_000 + "]" * 100_000)
    lab.wait_view(lab.a, lambda v: v["counters"]["error"], 10, "the counter error shown")
    # SIGHUP with a configuration nested 600 deep: refused, the running one stays
    good = lab.a.config_path.read_text()
    lab.a.config_path.write_text("a:\n" + "".join("  " * n + "- \n" for n in range(600)) + "[" * 600)
    lab.a.signal(signal.SIGHUP)
    lab.wait_for(lambda: lab.a.log_lines(r"reload refused"), 10, "the reload refused")
    lab.a.config_path.write_text(good)
    # a configuration that is a FIFO: refused, never blocks the loop
    lab.a.config_path.unlink()
    os.mkfifo(lab.a.config_path)
    lab.a.signal(signal.SIGHUP)
    lab.wait_for(lambda: len(lab.a.log_lines(r"reload refused")) >= 2, 10, "the FIFO refused")
    assert lab.a.query("hello")["ports"] == ["veth0"]
    lab.a.check_alive()
