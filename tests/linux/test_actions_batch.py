"""The block backend in batches, on real veths in a namespace (root, nftables): many ports
in one nft transaction, read back with one listing; one port's failure is its own.

Every command goes through a counting runner (``ip netns exec`` into the namespace), so
the tests see how many nft and ip processes a batch costs, whatever its size.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator, Mapping, Sequence

import pytest

from efmoam.linux.actions import (
    ActionError,
    BlockBackend,
    LoopbackPlane,
    LoopbackStep,
    Step,
    block_table_name,
    end_loopbacks,
    stale_block_tables,
    stale_loopback_tables,
)
from pdu import MuxAction, ParserAction
from tests.linux.netns import ip, needs_root
from tests.linux.test_actions import needs_nft, tables

PAIRS = 128  #: veth pairs in the namespace: 256 ports
LIST = ("nft", "list", "chains", "netdev")
WRITE = ("nft", "-f", "-")
LINKS = ("ip", "-j", "link", "show")


class Counting:
    """A runner into `netns` that records every command; `refuse`: a table name whose
    transactions nft is made to refuse (as a kernel without a hook on that device would)."""

    def __init__(self, netns: str, refuse: str | None = None) -> None:
        self.netns = netns
        self.refuse = refuse
        self.commands: list[tuple[str, ...]] = []

    def __call__(
        self,
        argv: Sequence[str],
        *,
        stdin: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 10.0,
    ) -> subprocess.CompletedProcess[str]:
        self.commands.append(tuple(argv))
        if self.refuse is not None and tuple(argv) == WRITE and f" {self.refuse} " in (stdin or ""):
            return subprocess.CompletedProcess(list(argv), 1, "", f"Error: Could not process rule: {self.refuse}\n")
        command = ["ip", "netns", "exec", self.netns, *argv]
        return subprocess.run(
            command, input=stdin, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )

    def taken(self) -> list[tuple[str, ...]]:
        commands, self.commands = self.commands, []
        return commands


P0_TEXT = """table netdev efmoam_block_p0 {
	chain ingress {
		type filter hook ingress device "p0" priority -500; policy accept;
		ether type != 0x8809 counter packets 0 bytes 0 drop
	}
}
"""


@pytest.mark.parametrize(
    "listing",
    [
        "not json",
        '{"nftables": [{"table": {"name": "efmoam_block_p0"}}, {"chain": {"table": "efmoam_block_p0", '
        '"name": "ingress"}}, {"rule": {"table": "efmoam_block_p0", "chain": "ingress", "expr": [{"match": {}}]}}]}',
        "[1, 2]",
    ],
)
def test_a_listing_of_another_shape_is_the_ports_error(listing: str) -> None:
    """One table is read back whole (rules from nft's JSON): JSON of another shape is an
    `ActionError` of that port, never a traceback."""

    def runner(argv: Sequence[str], **_: object) -> subprocess.CompletedProcess[str]:
        table = ("list", "table", "netdev", "efmoam_block_p0")
        answers = {(*LINKS, "dev", "p0"): '[{"ifname": "p0"}]', WRITE: "", ("nft", *table): P0_TEXT}
        answers[("nft", "-j", *table)] = listing
        return subprocess.CompletedProcess(list(argv), 0, answers[tuple(argv)], "")

    results = BlockBackend(runner).carry_out([Step("p0", True), Step("bad name", True)])
    assert all(isinstance(result, ActionError) for result in results), results
    assert "invalid interface name" in str(results[1])
    assert "listing" in str(results[0]) or "JSON" in str(results[0])


@pytest.fixture(scope="module")
def many() -> Iterator[tuple[str, list[str]]]:
    """A namespace with PAIRS veth pairs p<i> <-> q<i>, all up: 2 x PAIRS ports."""
    netns = f"efmoam-ab-{uuid.uuid4().hex[:8]}"
    ip("netns", "add", netns)
    try:
        batch = [f"link add p{i} type veth peer name q{i}" for i in range(PAIRS)]
        batch += [f"link set {end}{i} up" for i in range(PAIRS) for end in "pq"]
        subprocess.run(["ip", "-n", netns, "-batch", "-"], input="\n".join(batch) + "\n", text=True, check=True)
        yield netns, [f"{end}{i}" for i in range(PAIRS) for end in "pq"]
    finally:
        subprocess.run(["ip", "netns", "del", netns], check=False, capture_output=True)


@pytest.fixture
def ports(many: tuple[str, list[str]]) -> Iterator[tuple[str, list[str]]]:
    """`many`, with every nft table it has removed after the test."""
    yield many
    subprocess.run(["ip", "netns", "exec", many[0], "nft", "flush", "ruleset"], check=False)


@needs_root
@needs_nft
def test_all_ports_out_of_service_in_one_transaction_and_back(ports: tuple[str, list[str]]) -> None:
    netns, names = ports
    runner = Counting(netns)
    backend = BlockBackend(runner)
    assert backend.carry_out([Step(name, True, ("dying-gasp",)) for name in names]) == [True] * len(names)
    # one device listing, one transaction, one read-back of the chains for 256 ports
    assert runner.taken() == [LINKS, WRITE, LIST]
    assert stale_block_tables(runner) == sorted(names)
    runner.taken()

    assert backend.carry_out([Step(name, None) for name in names]) == [True] * len(names)  # verify: read only
    assert runner.taken() == [LIST]
    victim = block_table_name(names[7])
    subprocess.run(["ip", "netns", "exec", netns, "nft", "delete", "chain", "netdev", victim, "egress"], check=True)
    moved = block_table_name(names[9])  # its ingress chain bound to another port's device
    script = f"delete chain netdev {moved} ingress\nadd chain netdev {moved} ingress {{ type filter hook ingress "
    script += f'device "{names[10]}" priority -500; policy accept; }}\n'
    subprocess.run(["ip", "netns", "exec", netns, "nft", "-f", "-"], input=script, text=True, check=True)
    checked = backend.carry_out([Step(name, None) for name in names])
    assert checked == [name not in (names[7], names[9]) for name in names]  # an incomplete or moved table is no block
    runner.taken()

    assert backend.carry_out([Step(name, False) for name in names]) == [False] * len(names)
    assert runner.taken() == [WRITE, LIST]  # no device listing to delete
    assert tables(netns) == []


@needs_root
@needs_nft
def test_one_bad_port_does_not_stop_the_others(ports: tuple[str, list[str]]) -> None:
    netns, names = ports
    refused = names[100]
    runner = Counting(netns, refuse=block_table_name(refused))
    backend = BlockBackend(runner)
    steps = [Step(name, True, ("link-fault",)) for name in names]
    steps += [Step("bad name", True), Step("nosuch0", True)]
    results = dict(zip([step.ifname for step in steps], backend.carry_out(steps), strict=True))

    errors = {name: str(result) for name, result in results.items() if isinstance(result, ActionError)}
    assert set(errors) == {refused, "bad name", "nosuch0"}
    assert "invalid interface name 'bad name'" in errors["bad name"]
    assert "nosuch0" in errors["nosuch0"]
    assert f"Could not process rule: {block_table_name(refused)}" in errors[refused]
    assert all(results[name] is True for name in names if name != refused)
    assert stale_block_tables(runner) == sorted(name for name in names if name != refused)
    # the failed transaction is split in halves until the bad table stands alone
    writes = [command for command in runner.commands if command == WRITE]
    assert 2 <= len(writes) <= 2 * (len(names) - 1).bit_length() + 1, len(writes)


@needs_root
@needs_nft
def test_stale_loopback_tables_removed_in_one_transaction(ports: tuple[str, list[str]]) -> None:
    netns, names = ports
    hook = 'table netdev efmoam_lb_{0} {{\nchain ingress {{\ntype filter hook ingress device "{0}" priority -450;\n'
    hook += "}}\n}}\n"
    script = "".join(hook.format(name) for name in names[:50])
    subprocess.run(["ip", "netns", "exec", netns, "nft", "-f", "-"], input=script, text=True, check=True)
    runner = Counting(netns)
    assert stale_loopback_tables(runner) == sorted(names[:50])
    runner.taken()
    removed = end_loopbacks([*names[:50], "bad name"], runner)
    assert removed[:50] == [None] * 50 and "invalid interface name" in str(removed[50])
    assert runner.taken() == [WRITE, LIST]
    assert tables(netns) == []


@needs_root
@needs_nft
def test_loopback_changes_of_many_ports_in_one_transaction_composed_with_blocks(ports: tuple[str, list[str]]) -> None:
    """The actuator's loopback plane: every port's table in one nft transaction and one
    listing, whatever the mix of loop, discard and forward; a block of the same port stays."""
    netns, names = ports
    runner = Counting(netns)
    assert BlockBackend(runner).carry_out([Step(names[0], True, ("link-fault",))]) == [True]
    plane = LoopbackPlane(runner)
    steps = [LoopbackStep(name, ParserAction.LOOPBACK, MuxAction.DISCARD) for name in names[:100]]
    steps += [LoopbackStep(name, ParserAction.DISCARD, MuxAction.DISCARD) for name in names[100:150]]
    runner.taken()
    assert plane.carry_out(steps) == [True] * 150
    assert runner.taken() == [LINKS, WRITE, LIST]
    assert stale_loopback_tables(runner) == sorted(names[:150])
    forward = [LoopbackStep(name, ParserAction.FORWARD, MuxAction.FORWARD) for name in names[:150]]
    runner.taken()
    assert (
        plane.carry_out([*forward, LoopbackStep("bad name", ParserAction.FORWARD, MuxAction.FORWARD)])[:150]
        == [True] * 150
    )
    assert runner.taken() == [WRITE, LIST]
    assert stale_loopback_tables(runner) == [] and stale_block_tables(runner) == [names[0]]
