"""Floods from anyone on the segment (end to end, two daemons in namespaces): the session
survives, what is policed is counted, the wire never carries more than 10 OAMPDUs in a
second, and valid-but-hostile input cannot flood the log or the disk."""

from __future__ import annotations

import re
import signal
import time
from pathlib import Path

import pytest

from pdu import Flag
from tests.daemon.lab import MAC_A, MAC_B, Lab
from tests.robustness.wire import STRANGER, Capture, information, most_in_one_second, send_paced, variable_request

pytestmark = pytest.mark.root


def lost_link_lines(lab: Lab) -> list[str]:
    return lab.a.log_lines(r"discovery .*cause=lost_link")


def assert_session_held(lab: Lab, lost_before: int) -> None:
    view = lab.a.fast_port()
    assert view["oper_status"] == "operational", view["oper_status"]
    assert view["peer"]["mac_address"] == MAC_B
    assert len(lost_link_lines(lab)) == lost_before, lost_link_lines(lab)


def test_a_stranger_flood_never_takes_the_session(lab: Lab) -> None:
    lab.start()
    lost = len(lost_link_lines(lab))
    # 10,000 Information OAMPDUs/s from one stranger for 4 s: 4 times the lab's lost-link time
    sent = send_paced(lab, lambda _n: information(STRANGER), 10_000, 4.0)
    assert sent > 20_000
    assert_session_held(lab, lost)
    view = lab.a.fast_port()
    assert view["rx_policed"]["others"] > sent // 2
    assert view["rx_policed"]["peer"] == 0
    assert view["drops"]["rate_limit_others"] == view["rx_policed"]["others"]


def test_a_thousand_strangers_and_a_malformed_flood_never_take_the_session(lab: Lab) -> None:
    lab.start()
    lost = len(lost_link_lines(lab))
    macs = [f"02:77:00:00:{n >> 8:02x}:{n & 0xFF:02x}" for n in range(1000)]
    frames = [information(mac) for mac in macs]
    send_paced(lab, lambda n: frames[n % 1000], 5_000, 2.0)
    truncated = information(STRANGER)[:30]  # an OAMPDU cut inside its Local Information TLV
    send_paced(lab, lambda _n: truncated, 1_000, 2.0)
    assert_session_held(lab, lost)


def test_a_peer_over_twice_its_allowance_is_policed_and_counted(lab: Lab) -> None:
    lab.start()
    # the peer's MAC at 50 OAMPDUs/s (with the default limits: 20/s for the peer)
    send_paced(lab, lambda n: variable_request(MAC_B, 251), 50, 3.0)
    view = lab.a.fast_port()
    assert view["rx_policed"]["peer"] > 50, view["rx_policed"]
    assert view["drops"]["rate_limit"] == view["rx_policed"]["peer"]
    lab.a.query("clear_statistics", port="veth0")
    view = lab.a.fast_port()
    assert view["rx_rate_limited"] == 0 and "rate_limit" not in view["drops"]


def test_under_a_variable_request_flood_the_wire_carries_at_most_10_oampdus_a_second(lab: Lab, tmp_path: Path) -> None:
    lab.a.overrides = {"daemon": {"rx_rate_limit": 2000}}  # let the whole flood reach the engine
    lab.start()
    capture = Capture(lab, tmp_path / "a.pcap", MAC_A)
    send_paced(lab, lambda n: variable_request(MAC_B, 200 + n % 100), 1_000, 4.0)
    times = capture.stop()
    assert len(times) > 20, "A sent almost nothing"
    assert most_in_one_second(times) <= 10, most_in_one_second(times)
    lab.a.check_alive()


def test_a_kernel_queue_overflow_is_counted(lab: Lab) -> None:
    lab.start()
    frame = information(STRANGER)
    lab.a.signal(signal.SIGSTOP)  # the daemon reads nothing: the socket's queue fills
    try:
        send_paced(lab, lambda _n: frame, 50_000, 0.5)
    finally:
        lab.a.signal(signal.SIGCONT)
    view = lab.wait_for(lambda: (v := lab.a.fast_port())["rx_kernel_drops"] > 0 and v, 5, "kernel drops counted")
    assert view["drops"]["socket_queue"] == view["rx_kernel_drops"]


def test_a_peer_toggling_its_flags_cannot_flood_the_log_or_the_disk(lab: Lab) -> None:
    lab.a.overrides = {"daemon": {"rx_rate_limit": 2000}}  # every toggle reaches the engine
    lab.start()
    lines_before = len(lab.a.log().splitlines())
    saves_before = lab.a.query("show_ports")["daemon"]["state"]["saves"]
    base = Flag.LOCAL_STABLE | Flag.REMOTE_STABLE
    frames = [information(MAC_B, base), information(MAC_B, base | Flag.CRITICAL_EVENT)]
    started = time.monotonic()
    send_paced(lab, lambda n: frames[n % 2], 1_000, 3.0)
    elapsed = time.monotonic() - started
    logged = len(lab.a.log().splitlines()) - lines_before
    saves = lab.a.query("show_ports")["daemon"]["state"]["saves"] - saves_before
    assert logged < 120, f"{logged} log lines for 3,000 flag toggles"
    assert saves <= elapsed + 3, f"{saves} state writes in {elapsed:.1f} s"
    lab.a.check_alive()
    assert re.search(r"operational|send", lab.a.fast_port()["oper_status"])
