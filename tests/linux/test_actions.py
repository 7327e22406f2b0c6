"""Port actions and the loopback data plane on real veth pairs, plus the parts that need no kernel.

Actions run through a runner that prefixes ``ip netns exec <ns>``, so the nft and ip
commands act on the test namespace; frames and datagrams go through sockets created inside
the namespaces.  Neighbours are static, so a datagram from A to B crosses only B's ingress
hook and one from B to A only B's egress hook (no ARP exchange that needs both ways).
"""

from __future__ import annotations

import json
import select
import shutil
import socket
import stat
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from efmoam.linux.actions import (
    BLOCK_PREFIX,
    LOOPBACK_PREFIX,
    ActionError,
    BlockBackend,
    ExecBackend,
    Runner,
    _decode_ifname,
    _encode_ifname,
    apply_loopback,
    block_table_name,
    loopback_table_name,
    make_backend,
    stale_block_tables,
    stale_loopback_tables,
)
from pdu.enums import MuxAction, ParserAction
from tests.linux.netns import in_netns, ip, needs_root, veth_pair

needs_nft = pytest.mark.skipif(shutil.which("nft") is None, reason="needs nftables (nft)")

MAC_A, MAC_B = "02:00:00:00:aa:01", "02:00:00:00:bb:01"
ADDR_A, ADDR_B = "10.57.0.1", "10.57.0.2"
SLOW_MULTICAST = "01:80:c2:00:00:02"
ETH_P_SLOW, ETH_P_TEST = 0x8809, 0x88B5  # 0x88b5: IEEE local experimental EtherType
UDP_PORT = 5757


def netns_runner(netns: str) -> Runner:
    """A runner that runs every command inside `netns` (``ip netns exec``)."""

    def run(
        argv: Sequence[str],
        *,
        stdin: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 10.0,
    ) -> subprocess.CompletedProcess[str]:
        command = ["ip", "netns", "exec", netns, *argv]
        return subprocess.run(
            command, input=stdin, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )

    return run


def frame(dst: str, src: str, ethertype: int, payload: bytes) -> bytes:
    header = bytes.fromhex(dst.replace(":", "") + src.replace(":", "")) + ethertype.to_bytes(2, "big")
    return (header + payload).ljust(60, b"\0")


def oampdu(src: str) -> bytes:
    """A 60-octet Information OAMPDU with no TLVs: subtype 3, flags 0, code 0."""
    return frame(SLOW_MULTICAST, src, ETH_P_SLOW, bytes([3, 0, 0, 0]))


def packet_socket(netns: str, ifname: str, ethertype: int) -> socket.socket:
    """An AF_PACKET socket for one EtherType on `ifname`, created inside `netns`."""

    def create() -> socket.socket:
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ethertype))
        sock.bind((ifname, ethertype))
        return sock

    return in_netns(netns, create)


def received(sock: socket.socket, expected: bytes, seconds: float = 0.5) -> bool:
    """Whether `expected` arrives on `sock` within `seconds` (other frames are skipped)."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        if select.select([sock], [], [], left)[0] and sock.recv(2048) == expected:
            return True
    return False


def oampdu_passes(src: tuple[str, str, str], dst: tuple[str, str]) -> bool:
    """Send an OAMPDU from (ns, ifname, mac) and look for it on (ns, ifname)."""
    sender = packet_socket(src[0], src[1], ETH_P_SLOW)
    receiver = packet_socket(dst[0], dst[1], ETH_P_SLOW)
    with sender, receiver:
        sender.send(oampdu(src[2]))
        return received(receiver, oampdu(src[2]))


def udp_passes(src_ns: str, dst_ns: str, dst_addr: str, seconds: float = 0.5) -> bool:
    """Whether one UDP datagram from `src_ns` reaches `dst_addr` in `dst_ns`."""

    def bound() -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind((dst_addr, UDP_PORT))
        return sock

    receiver = in_netns(dst_ns, bound)
    sender = in_netns(src_ns, lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
    with sender, receiver:
        try:
            sender.sendto(b"efmoam", (dst_addr, UDP_PORT))
        except OSError:  # a drop in the egress hook may be reported
            return False
        return bool(select.select([receiver], [], [], seconds)[0])


def link_flags(ifname: str, netns: str) -> list[str]:
    flags: list[str] = json.loads(ip("-j", "link", "show", "dev", ifname, netns=netns))[0]["flags"]
    return flags


def wait_for(condition: Callable[[], bool], seconds: float = 2.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def tables(netns: str) -> list[str]:
    answer = json.loads(netns_runner(netns)(["nft", "-j", "list", "tables"]).stdout)
    return [item["table"]["name"] for item in answer["nftables"] if "table" in item]


@pytest.fixture
def pair() -> Iterator[tuple[str, str]]:
    """veth0 (10.57.0.1) in A and veth1 (10.57.0.2) in B, with static neighbours."""
    with veth_pair(MAC_A, MAC_B) as (ns_a, ns_b):
        for ns, dev, addr, peer, peer_mac in (
            (ns_a, "veth0", ADDR_A, ADDR_B, MAC_B),
            (ns_b, "veth1", ADDR_B, ADDR_A, MAC_A),
        ):
            ip("addr", "add", f"{addr}/24", "dev", dev, netns=ns)
            ip("neigh", "replace", peer, "lladdr", peer_mac, "dev", dev, "nud", "permanent", netns=ns)
        yield ns_a, ns_b


# ---------------------------------------------------------------------------------------
# without the kernel


@pytest.mark.parametrize("ifname", ["eth0", "eth0.100", "v_1-x", "br@1", "wlö0", "a" * 15])
def test_table_names_are_nft_identifiers_and_reversible(ifname: str) -> None:
    encoded = _encode_ifname(ifname)
    assert encoded.replace("_", "").isalnum() and encoded.isascii()
    assert _decode_ifname(encoded) == ifname
    for name in (block_table_name(ifname), loopback_table_name(ifname)):
        assert len(name) < 256


def test_block_and_loopback_names_never_collide() -> None:
    # with one shared prefix, the loopback table of "2dx" would be the block table of "lb-x"
    assert block_table_name("lb-x") != loopback_table_name("2dx")
    assert not loopback_table_name("x").startswith(BLOCK_PREFIX)
    assert not block_table_name("x").startswith(LOOPBACK_PREFIX)
    assert _decode_ifname("ab_zz") is None and _decode_ifname("_c3") is None and _decode_ifname("") is None


def test_make_backend_kinds() -> None:
    assert make_backend("block").name == "block"
    assert make_backend("down").name == "down"
    assert make_backend("exec", command="true").name == "exec"
    log_only = make_backend("log-only")
    log_only.take_out_of_service("eth0", ("link-fault",))
    assert log_only.is_out_of_service("eth0") is False
    with pytest.raises(ValueError, match="unknown port action"):
        make_backend("shutdown")
    with pytest.raises(ValueError, match="command"):
        make_backend("exec")
    with pytest.raises(ValueError, match="command"):
        make_backend("block", command="true")
    with pytest.raises(ValueError, match="command"):
        make_backend("exec", command="  ")


def test_command_failures_become_action_errors() -> None:
    def failing(argv: Sequence[str], **_: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(list(argv), 1, "", "Error: Could not process rule\n")

    def missing(argv: Sequence[str], **_: object) -> subprocess.CompletedProcess[str]:
        raise FileNotFoundError(2, "No such file or directory", argv[0])

    with pytest.raises(ActionError, match="Could not process rule") as info:
        stale_block_tables(failing)
    assert info.value.command[:2] == ("nft", "list") and info.value.stderr == "Error: Could not process rule"
    with pytest.raises(ActionError, match="could not be run"):
        BlockBackend(missing).return_to_service("eth0")


@pytest.mark.parametrize("ifname", ["", "a" * 16, 'e"0', "e 0", "e/0", "e:0", "e\\0"])
def test_names_that_nft_or_the_kernel_refuse(ifname: str) -> None:
    with pytest.raises(ActionError, match="invalid interface name"):
        BlockBackend().take_out_of_service(ifname, ())
    with pytest.raises(ActionError, match="invalid interface name"):
        apply_loopback(ifname, ParserAction.DISCARD, MuxAction.FORWARD)


def test_undefined_loopback_action_values() -> None:
    with pytest.raises(ValueError):
        apply_loopback("eth0", 3, 0)
    with pytest.raises(ValueError):
        apply_loopback("eth0", 0, 2)


# ---------------------------------------------------------------------------------------
# exec (no namespace needed)


def env_script(tmp_path: Path, status: int = 0) -> tuple[str, Path]:
    script, out = tmp_path / "action script.sh", tmp_path / "env.txt"
    script.write_text(
        "#!/bin/sh\n"
        'printf "%s|%s|%s|%s|%s\\n" "$EFMOAM_PORT" "$EFMOAM_ACTION" "$EFMOAM_REASONS" "$EFMOAM_STATE" "$1"'
        f' >> "{out}"\n'
        f'[ {status} -eq 0 ] || echo "boom on $EFMOAM_PORT" >&2\n'
        f"exit {status}\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return f"'{script}' first-arg", out


def test_exec_passes_port_action_reasons_and_state(tmp_path: Path) -> None:
    command, out = env_script(tmp_path)
    backend = make_backend("exec", command=command)
    assert backend.is_out_of_service("eth1") is False
    backend.take_out_of_service("eth1", ("link-fault", "errored-frame"))
    assert backend.is_out_of_service("eth1") is True
    backend.return_to_service("eth1")
    assert backend.is_out_of_service("eth1") is False
    assert out.read_text().splitlines() == [
        "eth1|out-of-service|link-fault,errored-frame|unknown|first-arg",
        "eth1|in-service||out-of-service|first-arg",
    ]


def test_exec_failure_and_timeout_raise_with_stderr(tmp_path: Path) -> None:
    command, _ = env_script(tmp_path, status=1)
    backend = make_backend("exec", command=command)
    with pytest.raises(ActionError, match="exited with 1: boom on eth2") as info:
        backend.take_out_of_service("eth2", ("critical-event",))
    assert info.value.stderr == "boom on eth2"
    assert backend.is_out_of_service("eth2") is False  # only a successful call counts
    slow = ExecBackend("sleep 5", timeout=0.2)
    started = time.monotonic()
    with pytest.raises(ActionError, match="timed out"):
        slow.take_out_of_service("eth2", ())
    assert time.monotonic() - started < 3


# ---------------------------------------------------------------------------------------
# block


@needs_root
@needs_nft
def test_block_drops_data_both_ways_but_oampdus_pass(pair: tuple[str, str]) -> None:
    ns_a, ns_b = pair
    backend = make_backend("block", runner=netns_runner(ns_b))
    assert udp_passes(ns_a, ns_b, ADDR_B) and udp_passes(ns_b, ns_a, ADDR_A)
    assert backend.is_out_of_service("veth1") is False

    backend.take_out_of_service("veth1", ("link-fault", "critical-event"))
    assert backend.is_out_of_service("veth1") is True
    assert not udp_passes(ns_a, ns_b, ADDR_B, 0.3)  # veth1 ingress
    assert not udp_passes(ns_b, ns_a, ADDR_A, 0.3)  # veth1 egress
    assert oampdu_passes((ns_a, "veth0", MAC_A), (ns_b, "veth1"))
    assert oampdu_passes((ns_b, "veth1", MAC_B), (ns_a, "veth0"))
    assert {"UP", "LOWER_UP"} <= set(link_flags("veth0", ns_a))  # the link stays up

    backend.return_to_service("veth1")
    assert backend.is_out_of_service("veth1") is False
    assert udp_passes(ns_a, ns_b, ADDR_B) and udp_passes(ns_b, ns_a, ADDR_A)
    assert tables(ns_b) == []
    backend.return_to_service("veth1")  # already in service: no error


@needs_root
@needs_nft
def test_block_is_idempotent_and_verified_against_the_ruleset(pair: tuple[str, str]) -> None:
    _, ns_b = pair
    runner = netns_runner(ns_b)
    backend = make_backend("block", runner=runner)
    backend.take_out_of_service("veth1", ("link-fault",))
    backend.take_out_of_service("veth1", ("link-fault", "dying-gasp"))
    assert tables(ns_b) == ["efmoam_block_veth1"]
    listing = runner(["nft", "list", "table", "netdev", "efmoam_block_veth1"]).stdout
    assert "(link-fault,dying-gasp)" in listing and listing.count('device "veth1"') == 2

    runner(["nft", "delete", "rule", "netdev", "efmoam_block_veth1", "egress", "handle",
            rule_handle(runner, "efmoam_block_veth1", "egress")])  # fmt: skip
    assert backend.is_out_of_service("veth1") is False  # an incomplete table does not count
    subprocess.run(["ip", "netns", "exec", ns_b, "nft", "delete", "table", "netdev", "efmoam_block_veth1"], check=True)
    assert backend.is_out_of_service("veth1") is False
    backend.take_out_of_service("veth1", ())
    assert backend.is_out_of_service("veth1") is True


def rule_handle(runner: Runner, table: str, chain: str) -> str:
    listing = json.loads(runner(["nft", "-j", "list", "chain", "netdev", table, chain]).stdout)
    return str(next(item["rule"]["handle"] for item in listing["nftables"] if "rule" in item))


@needs_root
@needs_nft
def test_stale_block_tables_survive_a_restart_with_real_names(pair: tuple[str, str]) -> None:
    _, ns_b = pair
    runner = netns_runner(ns_b)
    odd = "v.10_a-b@x"
    ip("link", "add", odd, "type", "veth", "peer", "name", "vp0", netns=ns_b)
    make_backend("block", runner=runner).take_out_of_service("veth1", ("link-fault",))
    make_backend("block", runner=runner).take_out_of_service(odd, ("critical-event",))
    runner(["nft", "add", "table", "netdev", "efmoam_block_not_a_name"])  # not ours to report
    runner(["nft", "add", "table", "netdev", "filter"])

    restarted = make_backend("block", runner=runner)
    assert stale_block_tables(runner) == sorted(["veth1", odd])
    assert restarted.is_out_of_service("veth1") and restarted.is_out_of_service(odd)
    restarted.return_to_service(odd)
    assert stale_block_tables(runner) == ["veth1"]
    assert "filter" in tables(ns_b)


@needs_root
@needs_nft
def test_block_on_a_missing_device_fails(pair: tuple[str, str]) -> None:
    _, ns_b = pair
    backend = make_backend("block", runner=netns_runner(ns_b))
    with pytest.raises(ActionError, match="nosuch0"):
        backend.take_out_of_service("nosuch0", ("link-fault",))
    assert tables(ns_b) == []


# ---------------------------------------------------------------------------------------
# down


@needs_root
def test_down_drops_the_peer_carrier_and_restores_it(pair: tuple[str, str]) -> None:
    ns_a, ns_b = pair
    backend = make_backend("down", runner=netns_runner(ns_b))
    assert backend.is_out_of_service("veth1") is False
    backend.take_out_of_service("veth1", ("link-fault",))
    backend.take_out_of_service("veth1", ("link-fault",))  # twice: still remembered as "was up"
    assert backend.is_out_of_service("veth1") is True
    assert wait_for(lambda: "NO-CARRIER" in link_flags("veth0", ns_a))
    backend.return_to_service("veth1")
    assert backend.is_out_of_service("veth1") is False
    assert wait_for(lambda: "LOWER_UP" in link_flags("veth0", ns_a))


@needs_root
def test_down_never_brings_up_a_port_an_operator_set_down(pair: tuple[str, str]) -> None:
    _, ns_b = pair
    ip("link", "set", "veth1", "down", netns=ns_b)
    backend = make_backend("down", runner=netns_runner(ns_b))
    backend.take_out_of_service("veth1", ("link-fault",))
    assert backend.is_out_of_service("veth1") is True
    backend.return_to_service("veth1")
    assert "UP" not in link_flags("veth1", ns_b)
    restarted = make_backend("down", runner=netns_runner(ns_b))
    restarted.return_to_service("veth1")  # knows nothing: leaves the port alone
    assert "UP" not in link_flags("veth1", ns_b)
    with pytest.raises(ActionError, match="nosuch0"):
        backend.take_out_of_service("nosuch0", ())


# ---------------------------------------------------------------------------------------
# loopback


def loops_back(ns_a: str, data: bytes, ethertype: int) -> bool:
    """Send `data` from veth0 and see whether veth0 receives it back unchanged."""
    sock = packet_socket(ns_a, "veth0", ethertype)
    with sock:  # the socket never sees its own transmissions, only frames coming back
        sock.send(data)
        return received(sock, data, 0.3)


@needs_root
@needs_nft
def test_remote_loopback_returns_data_frames_and_not_oampdus(pair: tuple[str, str]) -> None:
    ns_a, ns_b = pair
    runner = netns_runner(ns_b)
    data = frame(MAC_B, MAC_A, ETH_P_TEST, b"efmoam loopback \x00\xff test")
    apply_loopback("veth1", ParserAction.LOOPBACK, MuxAction.DISCARD, runner)
    apply_loopback("veth1", ParserAction.LOOPBACK, MuxAction.DISCARD, runner)  # idempotent
    assert tables(ns_b) == ["efmoam_lb_veth1"]

    assert loops_back(ns_a, data, ETH_P_TEST)
    assert not loops_back(ns_a, oampdu(MAC_A), ETH_P_SLOW)
    assert oampdu_passes((ns_a, "veth0", MAC_A), (ns_b, "veth1"))
    assert oampdu_passes((ns_b, "veth1", MAC_B), (ns_a, "veth0"))
    assert not udp_passes(ns_b, ns_a, ADDR_A, 0.3)  # mux DISCARD: our own data stays in
    assert not udp_passes(ns_a, ns_b, ADDR_B, 0.3)  # looped, never delivered to B
    assert stale_loopback_tables(runner) == ["veth1"]

    apply_loopback("veth1", ParserAction.FORWARD, MuxAction.FORWARD, runner)
    assert tables(ns_b) == []
    assert not loops_back(ns_a, data, ETH_P_TEST)
    assert udp_passes(ns_a, ns_b, ADDR_B) and udp_passes(ns_b, ns_a, ADDR_A)
    apply_loopback("veth1", ParserAction.FORWARD, MuxAction.FORWARD, runner)  # nothing to remove


@needs_root
@needs_nft
@pytest.mark.parametrize(
    ("parser", "mux", "a_to_b", "b_to_a"),
    [
        (ParserAction.DISCARD, MuxAction.FORWARD, False, True),
        (ParserAction.FORWARD, MuxAction.DISCARD, True, False),
        (ParserAction.DISCARD, MuxAction.DISCARD, False, False),
    ],
)
def test_discard_actions(
    pair: tuple[str, str], parser: ParserAction, mux: MuxAction, a_to_b: bool, b_to_a: bool
) -> None:
    ns_a, ns_b = pair
    apply_loopback("veth1", parser, mux, netns_runner(ns_b))
    assert udp_passes(ns_a, ns_b, ADDR_B, 0.3) is a_to_b
    assert udp_passes(ns_b, ns_a, ADDR_A, 0.3) is b_to_a
    assert oampdu_passes((ns_a, "veth0", MAC_A), (ns_b, "veth1"))
    assert oampdu_passes((ns_b, "veth1", MAC_B), (ns_a, "veth0"))


@needs_root
@needs_nft
def test_loopback_composes_with_block(pair: tuple[str, str]) -> None:
    ns_a, ns_b = pair
    runner = netns_runner(ns_b)
    block = make_backend("block", runner=runner)
    data = frame(MAC_B, MAC_A, ETH_P_TEST, b"efmoam")
    apply_loopback("veth1", ParserAction.LOOPBACK, MuxAction.DISCARD, runner)
    block.take_out_of_service("veth1", ("link-fault",))
    assert sorted(tables(ns_b)) == ["efmoam_block_veth1", "efmoam_lb_veth1"]
    assert not loops_back(ns_a, data, ETH_P_TEST)  # a blocked port loops nothing
    assert oampdu_passes((ns_a, "veth0", MAC_A), (ns_b, "veth1"))
    block.return_to_service("veth1")
    assert loops_back(ns_a, data, ETH_P_TEST)
    apply_loopback("veth1", ParserAction.FORWARD, MuxAction.FORWARD, runner)
    assert block.is_out_of_service("veth1") is False and tables(ns_b) == []
