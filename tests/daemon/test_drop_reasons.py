"""Drop reasons have one name each: the log's ``reason=``, ``show port``'s counters and the
metric's ``reason`` label say the same thing.  Checked on the receive rate limit, which
the daemon applies before the engine sees a frame, with a flood from the peer's side."""

from __future__ import annotations

import re
import socket
import urllib.request

import pytest

from pdu import Flag, OrgSpecificPdu, encode
from tests.daemon.lab import MAC_B, Lab
from tests.linux.netns import in_netns

pytestmark = pytest.mark.root


def flood(lab: Lab, frames: int) -> None:
    frame = encode(OrgSpecificPdu(MAC_B, Flag.LOCAL_STABLE | Flag.REMOTE_STABLE, 0x001122, b"flood"))

    def send() -> None:
        with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as raw:
            raw.bind((lab.b.ifname, 0))
            for _ in range(frames):
                raw.send(frame)

    in_netns(lab.ns_b, send)


def metrics(lab: Lab) -> str:
    def get() -> str:
        with urllib.request.urlopen("http://127.0.0.1:9717/metrics", timeout=5) as response:
            return str(response.read().decode())

    return in_netns(lab.ns_a, get)


def test_the_rate_limit_has_one_name_in_the_log_show_port_and_the_metrics(lab: Lab) -> None:
    lab.a.overrides = {"daemon": {"rx_rate_limit": 20, "metrics": {"enabled": True}}}
    lab.start()
    flood(lab, 500)
    view = lab.wait_view(lab.a, lambda v: v["rx_rate_limited"] > 0, 5, "A to limit the flood")
    limited = view["rx_rate_limited"]
    assert limited >= 100  # a burst of 20 passes; of the rest, what the socket buffer kept is limited
    [line] = lab.a.log_lines(r"receive rate limit reached")[:1]
    assert re.search(r"\breason=rate_limit\b", line), line
    samples = dict(
        re.findall(r'^efmoam_rx_dropped_total\{device="veth0",reason="([a-z_]+)",[^}]*\} (\d+)', metrics(lab), re.M)
    )
    assert int(samples["rate_limit"]) >= limited
    # the session survived the flood
    lab.wait_for(lambda: lab.a.port()["oper_status"] == "operational", 5, "A still operational")
