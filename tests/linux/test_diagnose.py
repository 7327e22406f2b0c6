"""``efmoam diagnose`` on real veth ports without a daemon: the listeners and hostile input.

Frames are sent from the other namespace with a raw socket while the command listens;
the command runs as a subprocess (``ip netns exec``), as an operator would run it.
"""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time

from pdu import Information, InfoTlv, encode
from pdu.enums import InfoTlvType, OamConfig
from tests.daemon.lab import PYTHON, ROOT, efmoam
from tests.linux.netns import in_netns, ip, needs_root, veth_pair

pytestmark = needs_root
NO_DAEMON = "/nonexistent/efmoam.sock"


def diagnose(netns: str, *args: str) -> subprocess.CompletedProcess[str]:
    result = efmoam("diagnose", *args, "--socket", NO_DAEMON, prefix=("ip", "netns", "exec", netns))
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    return result


def information(src: str, config: OamConfig) -> bytes:
    local = InfoTlv(type=InfoTlvType.LOCAL, oam_config=config, max_pdu_size=1000)
    return encode(Information(src, 0x08, (local,)))


def sending(netns: str, ifname: str, frames: list[bytes]) -> tuple[threading.Thread, threading.Event]:
    """Send `frames` every 0.1 s from a thread in `netns` until the event is set."""
    sock = in_netns(netns, lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW))
    sock.bind((ifname, 0))
    stop = threading.Event()

    def run() -> None:
        with sock:
            while not stop.wait(0.1):
                for frame in frames:
                    sock.send(frame)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, stop


def test_the_speakers_heard_are_listed_with_what_they_said() -> None:
    with veth_pair() as (ns_a, ns_b):
        passive = information("02:00:00:00:00:0a", OamConfig.LINK_EVENTS)
        active = information("02:00:00:00:00:0b", OamConfig.ACTIVE)
        sender, stop = sending(ns_b, "veth1", [passive, active])
        try:
            result = diagnose(ns_a, "veth0", "--listen", "1.5", "-f", "json")
        finally:
            stop.set()
            sender.join()
    assert result.returncode == 1
    report = json.loads(result.stdout)
    speakers = {s["mac"]: s for s in report["facts"]["listening"]["speakers"]}
    assert set(speakers) == {"02:00:00:00:00:0a", "02:00:00:00:00:0b"}
    assert speakers["02:00:00:00:00:0a"]["mode"] == "passive"
    assert speakers["02:00:00:00:00:0a"]["functions"] == ["eventSupport"]
    assert speakers["02:00:00:00:00:0b"]["mode"] == "active"
    assert speakers["02:00:00:00:00:0b"]["max_pdu_size"] == 1000
    assert speakers["02:00:00:00:00:0b"]["flags"] == ["local_evaluating"]
    assert report["facts"]["listening"]["delivered"] >= 2
    found = {f["code"] for f in report["findings"]}
    assert "several_speakers" in found and "no_oampdu" not in found
    assert report["daemon"] is None and "no_daemon_view" in found


def test_silence_advises_a_trap_rule() -> None:
    with veth_pair() as (ns_a, _ns_b):
        result = diagnose(ns_a, "veth0", "--listen", "0.5")
    assert result.returncode == 1
    assert "problem: no OAMPDU arrived on veth0 in 0.5 s" in result.stdout
    assert "add a trap rule for 01:80:c2:00:00:02 / EtherType 0x8809 to the CPU" in result.stdout
    assert "link: up, carrier yes" in result.stdout


def test_an_unknown_port_is_a_usage_error() -> None:
    with veth_pair() as (ns_a, _ns_b):
        plain = diagnose(ns_a, "eth9")
        as_json = diagnose(ns_a, "eth9", "-f", "json")
        bad_name = diagnose(ns_a, "a/b")
    assert plain.returncode == 2 and plain.stderr.strip() == "efmoam: no port named eth9 in this network namespace"
    assert as_json.returncode == 2 and json.loads(as_json.stdout)["error"]["code"] == "cannot_diagnose"
    assert bad_name.returncode == 2 and "invalid interface name" in bad_name.stderr


def test_a_port_that_is_not_ethernet_is_refused() -> None:
    with veth_pair() as (ns_a, _ns_b):
        ip("tuntap", "add", "dev", "tun9", "mode", "tun", netns=ns_a)  # ARPHRD_NONE
        loopback, tun = diagnose(ns_a, "lo"), diagnose(ns_a, "tun9")
    for result, name in ((loopback, "lo"), (tun, "tun9")):
        assert result.returncode == 2
        assert f"efmoam: {name} is not an Ethernet port" in result.stderr


def test_a_port_that_disappears_while_listening_is_reported() -> None:
    with veth_pair() as (ns_a, ns_b):
        command = ["ip", "netns", "exec", ns_a, PYTHON, "-m", "efmoam.cli", "diagnose", "veth0",
                   "--listen", "20", "--socket", NO_DAEMON, "-f", "json"]  # fmt: skip
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        time.sleep(1.5)
        ip("link", "del", "veth1", netns=ns_b)
        out, err = proc.communicate(timeout=15)  # before the 20 s: the listening ended with the port
    assert "Traceback" not in err, err
    assert proc.returncode == 1
    report = json.loads(out)
    assert report["facts"]["listening"]["port_vanished"]
    assert "port_vanished" in {f["code"] for f in report["findings"]}
