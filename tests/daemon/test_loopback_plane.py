"""Remote loopback's data plane is changed off the loop, and the peer hears of it only once
it is in place (`PortRuntime.set_loopback`).

B's ``nft`` is slow here: a wrapper first in B's PATH sleeps `NFT_DELAY` seconds before the
real nft (a loaded router, a ruleset of thousands of tables).  A starts remote loopback of B:

* B's loop is not held by the change: its control socket answers throughout;
* B's Information saying it loops back leaves only once its loopback table is in: the
  first frame A sends once its own daemon reports remote loopback comes back;
* the change is reported as on its way (``loopback_plane.pending``) while it is.
"""

from __future__ import annotations

import os
import select
import shutil
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.daemon.lab import Lab, run
from tests.linux.netns import in_netns

NFT_DELAY = 0.3  #: seconds B's nft sleeps before each command (a change runs three: about 1 s)
PROBE_ETHERTYPE = 0x88B5  #: IEEE local experimental: a test frame, not an OAMPDU
ETH_P_ALL = 0x0003


def slow_nft(directory: Path, delay: float) -> str:
    """A directory holding an ``nft`` that waits `delay` seconds, then runs the real one."""
    real = shutil.which("nft")
    assert real is not None
    directory.mkdir()
    wrapper = directory / "nft"
    wrapper.write_text(f'#!/bin/sh\nsleep {delay}\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    return str(directory)


def start_with_a_slow_nft_on_b(lab: Lab, tmp_path: Path, delay: float = NFT_DELAY) -> None:
    """Both daemons up, B processing loopback commands with a slow nft; a lost-link time of
    6 s, so B's frames may wait 3 s for a change (a loaded test machine slows nft too)."""
    timing = {"transmit_interval": 1.0, "multiplier": 6}
    lab.a.overrides = {"defaults": timing}
    lab.b.overrides = {"defaults": {**timing, "loopback": "process"}}
    lab.b.env = {"PATH": f"{slow_nft(tmp_path / 'slow', delay)}:{os.environ.get('PATH', '/usr/sbin:/usr/bin')}"}
    lab.start()


def settled(status: str) -> Callable[[dict[str, Any]], bool]:
    """A view predicate: the port's loopback status is `status`, no change on its way."""
    return lambda view: view["loopback"]["status"] == status and not view["loopback_plane"]["pending"]


def looped_back(lab: Lab, timeout: float = 1.0) -> bool:
    """One test frame from A's port to B's; True when it comes back to A unchanged."""
    mac_a, mac_b = (bytes.fromhex(lab.mac(side).replace(":", "")) for side in (lab.a, lab.b))
    frame = mac_b + mac_a + PROBE_ETHERTYPE.to_bytes(2, "big") + os.urandom(46)

    def open_socket() -> socket.socket:  # every frame, seen before A's ingress hook (A's parser discards)
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        sock.bind((lab.a.ifname, ETH_P_ALL))
        return sock

    sock = in_netns(lab.a.netns, open_socket)
    try:
        sock.send(frame)
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            if not select.select([sock], [], [], left)[0]:
                return False
            data, address = sock.recvfrom(2048)
            if address[2] != socket.PACKET_OUTGOING and data[: len(frame)] == frame:
                return True
        return False
    finally:
        sock.close()


def test_the_loopback_data_plane_is_in_place_before_the_peer_hears_and_the_loop_is_not_held(
    lab: Lab, tmp_path: Path
) -> None:
    start_with_a_slow_nft_on_b(lab, tmp_path)
    assert lab.a.query("loopback", port="veth0", enable=True)
    slowest, pending_seen = 0.0, False
    deadline = time.monotonic() + 15
    while True:
        began = time.monotonic()
        b = lab.b.fast_port()
        slowest = max(slowest, time.monotonic() - began)
        pending_seen |= b["loopback_plane"]["pending"]
        a = lab.a.fast_port()
        if a["loopback"]["status"] == "remoteLoopback" and not a["loopback_plane"]["pending"]:
            break
        assert time.monotonic() < deadline, (a["loopback"], b["loopback"], b["loopback_plane"])
        time.sleep(0.02)
    assert looped_back(lab), "A's first frame once it reports remote loopback did not come back"
    assert slowest < 0.5, f"B's control socket took {slowest:.3f} s while its nft ran"  # held: about 1 s
    assert b["loopback"]["status"] == "localLoopback" and b["loopback_plane"]["error"] is None
    assert pending_seen, "B's change was never seen on its way"
    assert "netdev efmoam_lb_veth1" in lab.nft_tables(lab.b)
    assert not lab.b.log_entries("loopback data plane not ready")
    assert lab.a.query("loopback", port="veth0", enable=False)
    lab.wait_view(lab.b, settled("noLoopback"), 10, "B forwards")
    lab.wait_for(lambda: "netdev efmoam_lb_veth1" not in lab.nft_tables(lab.b), 5, "B's loopback table removed")
    assert not looped_back(lab, 0.3)
    assert lab.b.running and lab.a.running


def test_a_loopback_change_on_its_way_at_shutdown_leaves_no_table(lab: Lab, tmp_path: Path) -> None:
    """SIGTERM while B's loopback table is being written: B waits for it, then returns the
    port to forwarding before it exits (a stopped daemon must not keep looping traffic)."""
    start_with_a_slow_nft_on_b(lab, tmp_path, 0.15)  # a change of about 0.5 s: within the 1.1 s waited for it
    assert lab.a.query("loopback", port="veth0", enable=True)
    lab.wait_view(lab.b, lambda v: v["loopback_plane"]["pending"], 10, "B's change on its way")
    lab.b.stop(timeout=30)
    assert "netdev efmoam_lb_veth1" not in lab.nft_tables(lab.b)
    assert not lab.b.log_entries("loopback not ended") and not lab.b.log_entries("still on its way at exit")


def test_a_port_that_starts_again_under_a_new_mac_loops_nothing(lab: Lab) -> None:
    """A port removed (here: its MAC address changed, so it starts again) leaves no loopback
    table behind: its return starts from no loopback."""
    lab.b.overrides = {"defaults": {"loopback": "process"}}
    lab.start()
    assert lab.a.query("loopback", port="veth0", enable=True)
    lab.wait_view(lab.b, settled("localLoopback"), 10, "B loops")
    assert "netdev efmoam_lb_veth1" in lab.nft_tables(lab.b)
    run(["ip", "-n", lab.b.netns, "link", "set", "veth1", "address", "02:00:00:00:bb:02"])
    lab.wait_for(lambda: "netdev efmoam_lb_veth1" not in lab.nft_tables(lab.b), 10, "B's loopback table removed")
    lab.wait_view(
        lab.b, lambda v: v["mac"] == "02:00:00:00:bb:02" and v["loopback"]["status"] == "noLoopback", 10, "B again"
    )
    assert "netdev efmoam_lb_veth1" not in lab.nft_tables(lab.b)
