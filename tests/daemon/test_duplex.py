"""A half-duplex link: the daemon reads the duplex, holds OAM and reports nonOperHalfDuplex.

veth is always full duplex, so the port here is a TAP device in namespace A: its link
settings can be set with ``ethtool -s`` and the test holds its file descriptor, so it
controls the carrier and sees every frame the daemon sends.
"""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import time
from collections.abc import Iterator

import pytest

from tests.daemon.lab import Lab, run
from tests.linux.netns import in_netns

pytestmark = pytest.mark.root

TAP = "tap0"
TUNSETIFF = 0x400454CA
IFF_TAP, IFF_NO_PI = 0x0002, 0x1000
SLOW_PROTOCOLS = b"\x88\x09\x03"  # EtherType and the OAM subtype


def attach(netns: str) -> int:
    """Open TAP in `netns`: the link gets its carrier while the descriptor is open."""

    def open_tap() -> int:
        fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
        fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", TAP.encode(), IFF_TAP | IFF_NO_PI))
        return fd

    return in_netns(netns, open_tap)


def oampdus(fd: int, seconds: float) -> int:
    """How many OAMPDUs the daemon sent on the TAP during `seconds`."""
    count, end = 0, time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        if select.select([fd], [], [], left)[0]:
            frame = os.read(fd, 2048)
            count += frame[12:15] == SLOW_PROTOCOLS
    return count


def set_duplex(lab: Lab, duplex: str) -> None:
    command = [
        "ip",
        "netns",
        "exec",
        lab.ns_a,
        "ethtool",
        "-s",
        TAP,
        "speed",
        "100",
        "duplex",
        duplex,
        "autoneg",
        "off",
    ]
    subprocess.run(command, check=True, capture_output=True)


@pytest.fixture
def tap(lab: Lab) -> Iterator[None]:
    run(["ip", "-n", lab.ns_a, "tuntap", "add", "dev", TAP, "mode", "tap"])
    run(["ip", "-n", lab.ns_a, "link", "set", TAP, "address", "02:00:00:00:aa:77", "up"])
    yield
    subprocess.run(["ip", "-n", lab.ns_a, "link", "del", TAP], check=False, capture_output=True)


@pytest.mark.usefixtures("tap")
def test_a_half_duplex_port_holds_oam_until_it_is_full_duplex(lab: Lab) -> None:
    lab.a.overrides = {"ports": [{"match": TAP}]}
    set_duplex(lab, "half")
    fd = attach(lab.ns_a)
    try:
        lab.start(lab.a, operational=False)
        view = lab.wait_view(lab.a, lambda v: v["oper_status"] != "linkFault", 5, "the TAP's carrier", port=TAP)
        assert view["oper_status"] == "nonOperHalfDuplex"
        assert view["discovery_state"] == "FAULT"
        assert oampdus(fd, 1.0) == 0  # nothing is sent on a half-duplex link
        set_duplex(lab, "full")
        os.close(fd)  # the carrier goes, and comes back full duplex
        lab.wait_view(lab.a, lambda v: v["oper_status"] == "linkFault", 5, "the carrier to go", port=TAP)
        fd = attach(lab.ns_a)
        view = lab.wait_view(lab.a, lambda v: v["oper_status"] == "activeSendLocal", 5, "OAM to start", port=TAP)
        assert oampdus(fd, 1.0) >= 3  # Information OAMPDUs every 0.2 s
    finally:
        os.close(fd)
