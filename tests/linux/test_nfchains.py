"""The netdev chains read from the kernel over nfnetlink (root, nftables), against nft's own
text listing of the same ruleset: the two readers `efmoam.linux.actions` uses (nfnetlink in
the daemon's namespace, nft's text through any other runner) must give the same facts and
the same verdicts, whatever a table looks like (ours, tampered with, or someone else's).
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from efmoam.linux import actions
from efmoam.linux.actions import BlockBackend, Step, block_table_name, stale_block_tables
from efmoam.linux.netlink import pack_message
from efmoam.linux.nfchains import NFT_MSG_NEWCHAIN, Chain, Table, netdev_ruleset, parse_chain
from tests.linux.netns import in_netns, ip, needs_root
from tests.linux.test_actions import needs_nft
from tests.linux.test_actions_batch import Counting

ROOT = Path(__file__).resolve().parents[2]
NAMES = [f"p{i}" for i in range(12)] + ["v.100", "x-y_z"]  #: veth ends; names that need escaping too

FOREIGN = """table netdev foreign {
    chain both {
        type filter hook ingress devices = { p0, p1 } priority 10; policy drop;
    }
    chain late {
        type filter hook egress device "p2" priority 300; policy accept;
    }
    chain plain {
        counter
    }
}
table netdev chainless {
}
table inet efmoam_block_p3 {
    chain input {
        type filter hook input priority 0; policy drop;
    }
}
"""


@pytest.fixture
def netns() -> Iterator[str]:
    """A namespace with veth pairs named `NAMES`, all up."""
    name = f"efmoam-nc-{uuid.uuid4().hex[:8]}"
    ip("netns", "add", name)
    try:
        pairs = list(zip(NAMES[::2], NAMES[1::2], strict=True))
        batch = [f"link add {a} type veth peer name {b}" for a, b in pairs]
        batch += [f"link set {end} up" for end in NAMES]
        subprocess.run(["ip", "-n", name, "-batch", "-"], input="\n".join(batch) + "\n", text=True, check=True)
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False, capture_output=True)


def nft(netns: str, script: str) -> None:
    subprocess.run(["ip", "netns", "exec", netns, "nft", "-f", "-"], input=script, text=True, check=True)


def nft_text(netns: str) -> str:
    command = ["ip", "netns", "exec", netns, "nft", "list", "chains", "netdev"]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


@needs_root
@needs_nft
def test_the_kernels_chains_are_what_nft_lists(netns: str) -> None:
    assert BlockBackend(Counting(netns)).carry_out([Step(name, True, ("test",)) for name in NAMES]) == [True] * 14
    nft(netns, FOREIGN)
    tables, chains = in_netns(netns, netdev_ruleset)

    from_kernel = {
        (chain.table, chain.name): (chain.type, chain.hook, chain.priority, chain.policy, chain.device)
        for chain in chains
    }
    from_text = {
        (table, name): facts
        for table, listed in actions._chains_listed(nft_text(netns), None).items()
        for name, (facts, _) in listed.items()
    }
    # every single-device base chain nft prints, the kernel reports alike (ours: 2 x 14)
    assert from_text == {key: facts for key, facts in from_kernel.items() if key[0] != "foreign" or key[1] == "late"}
    assert from_text[(block_table_name("v.100"), "egress")] == ("filter", "egress", -500, "accept", "v.100")
    assert from_kernel[("foreign", "late")] == ("filter", "egress", 300, "accept", "p2")
    # a chain on two devices (no one device), and a regular chain (no hook), which nft's text parse leaves out
    assert from_kernel[("foreign", "both")] == ("filter", "ingress", 10, "drop", None)
    assert Chain("foreign", "plain", None, None, None, None, None) in chains
    assert len(chains) == 2 * 14 + 3  # the netdev family's only: not the inet table's chain
    assert sorted(table.name for table in tables) == sorted(
        [*(block_table_name(n) for n in NAMES), "foreign", "chainless"]
    )
    assert not any(table.dormant for table in tables)


@needs_root
@needs_nft
def test_the_daemons_read_back_gives_nfts_verdicts(netns: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through `run_command` (the daemon's runner) in the namespace, many ports are read back
    over nfnetlink, with the same verdicts as nft's text gives on the same tampered tables."""
    texts: list[object] = []
    real = actions._chains_listed
    monkeypatch.setattr(actions, "_chains_listed", lambda text, names: texts.append(names) or real(text, names))
    steps = [Step(name, True, ("test",)) for name in NAMES]
    assert in_netns(netns, lambda: BlockBackend().carry_out(steps)) == [True] * len(NAMES)
    assert texts == []  # written and read back without nft's listing

    nft(netns, f"delete chain netdev {block_table_name('p3')} egress\n")
    moved = block_table_name("p5")  # its ingress chain bound to another port's device
    nft(netns, f"delete chain netdev {moved} ingress\n")
    nft(netns, f'add chain netdev {moved} ingress {{ type filter hook ingress device "p6" priority -500; }}\n')
    nft(netns, f"delete chain netdev {block_table_name('p7')} ingress\n")
    drops = block_table_name("p7")  # same hook and device, but a drop policy
    hook = 'type filter hook ingress device "p7" priority -500; policy drop;'
    nft(netns, f"add chain netdev {drops} ingress {{ {hook} }}")
    nft(netns, f"delete table netdev {block_table_name('x-y_z')}\n")
    checks = [Step(name, None) for name in NAMES]
    kernel = in_netns(netns, lambda: BlockBackend().carry_out(checks))
    assert texts == []
    assert kernel == [name not in ("p3", "p5", "p7", "x-y_z") for name in NAMES]
    assert BlockBackend(Counting(netns)).carry_out(checks) == kernel
    assert texts == [{block_table_name(name) for name in NAMES}]


@needs_root
@needs_nft
def test_a_dormant_table_blocks_nothing_and_is_read_so(netns: str) -> None:
    """A dormant table's hooks are not registered: a block table made dormant behind the
    daemon's back does not verify, read back alone (nft's listing) or with others (the
    kernel's tables)."""
    ours = ["p0", "p1", "p2"]
    assert BlockBackend(Counting(netns)).carry_out([Step(name, True) for name in ours]) == [True] * 3
    nft(netns, f"add table netdev {block_table_name('p1')} {{ flags dormant; }}\n")
    tables, _ = in_netns(netns, netdev_ruleset)
    assert Table(block_table_name("p1"), dormant=True) in tables
    assert Table(block_table_name("p0"), dormant=False) in tables
    checks = [Step(name, None) for name in ours]
    assert in_netns(netns, lambda: BlockBackend().carry_out(checks)) == [True, False, True]
    assert BlockBackend(Counting(netns)).carry_out([Step("p1", None)]) == [False]  # its own listing
    assert BlockBackend(Counting(netns)).carry_out([Step("p0", None)]) == [True]
    # written again, it is in force again (the table is replaced whole)
    assert in_netns(netns, lambda: BlockBackend().carry_out([Step("p1", True), Step("p2", True)])) == [True, True]
    tables, _ = in_netns(netns, netdev_ruleset)
    assert Table(block_table_name("p1"), dormant=False) in tables


@needs_root
@needs_nft
def test_stale_tables_are_found_over_nfnetlink(netns: str) -> None:
    ours = [*NAMES[:3], "v.100"]
    assert BlockBackend(Counting(netns)).carry_out([Step(name, True) for name in ours]) == [True] * 4
    nft(netns, FOREIGN)
    nft(netns, f"delete chain netdev {block_table_name('p2')} ingress\n")
    nft(netns, f"delete chain netdev {block_table_name('p2')} egress\n")  # a table of ours without chains
    assert in_netns(netns, stale_block_tables) == ["p0", "p1", "p2", "v.100"]  # not the inet table of p3
    assert in_netns(netns, stale_block_tables) == stale_block_tables(Counting(netns))


FAILING = """
import resource, socket, sys
from efmoam.linux.actions import ActionError, BlockBackend, Step, stale_block_tables
if sys.argv[1] == "emfile":  # every descriptor in use
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    held = []
    while True:
        try:
            held.append(socket.socket())
        except OSError:
            break
for call in (stale_block_tables, lambda: BlockBackend().carry_out([Step("p0", None), Step("p1", None)])):
    try:
        print(repr(call()))
    except ActionError as exc:
        print("ActionError", exc)
"""


@needs_root
@needs_nft
@pytest.mark.parametrize(
    ("how", "error"),
    [("eperm", "Operation not permitted"), ("emfile", "Too many open files")],
)
def test_a_kernel_that_cannot_be_read_is_an_action_error(netns: str, how: str, error: str) -> None:
    """Without CAP_NET_ADMIN (the kernel refuses the dump), or without a descriptor left
    for the socket: the read is an `ActionError` (a port's error, a start-up warning),
    never an exception the daemon does not expect."""
    command = ["ip", "netns", "exec", netns]
    if how == "eperm":  # root still (it reads the tree under test wherever it is), without CAP_NET_ADMIN
        command += ["setpriv", "--inh-caps=-net_admin", "--bounding-set=-net_admin"]
    command += [sys.executable, "-c", FAILING, how]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 2, result.stdout
    assert lines[0].startswith("ActionError reading the netdev tables over nfnetlink failed") and error in lines[0]
    assert lines[1].startswith("[ActionError(") and error in lines[1], lines[1]


def test_a_broken_chain_message_is_left_out_or_read_as_far_as_it_goes() -> None:
    """Whatever the bytes, `parse_chain` returns a `Chain` or None and never raises."""
    import struct

    def attr(kind: int, payload: bytes) -> bytes:
        return struct.pack("=HH", 4 + len(payload), kind) + payload + bytes(-len(payload) % 4)

    hook = attr(1, struct.pack("!I", 0)) + attr(2, struct.pack("!i", -500)) + attr(3, b"eth0\0")
    body = struct.pack("!BBH", 5, 0, 0) + attr(1, b"t\0") + attr(3, b"ingress\0") + attr(0x8004, hook)
    body += attr(5, struct.pack("!I", 1)) + attr(7, b"filter\0")
    message = pack_message(10 << 8 | NFT_MSG_NEWCHAIN, 0, 1, body)
    assert parse_chain(message, 16, len(message)) == Chain("t", "ingress", "filter", "ingress", -500, "accept", "eth0")
    for cut in range(16, len(message)):
        parse_chain(message, 16, cut)  # a cut message: no exception
        flipped = bytearray(message)
        flipped[cut] ^= 0xFF
        parse_chain(flipped, 16, len(message))
    assert parse_chain(message, 16, 16 + 4 + 8) is None  # the table only: no chain name
