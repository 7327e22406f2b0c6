"""Port actions: taking a port out of service and back, and the Clause 57 loopback data plane.

Theory of operation (linux.md section 4).  A backend turns a decision of the sans-IO core
("this port is out of service because of these reasons") into a change on the system:

* ``block`` - one nftables table per port in family ``netdev``, with an ingress and an
  egress chain on that device, each dropping every frame whose EtherType is not 0x8809.
  Slow Protocols frames still pass, so the link, its counters and the OAM session stay up:
  this is local_par_action = DISCARD plus local_mux_action = DISCARD with OAMPDUs flowing.
  The table is replaced atomically (``add table; delete table; table {...}`` in one
  ``nft -f -`` transaction), so applying twice leaves one table.  Stateless: what is out of
  service is read back from the ruleset, which also lets a restarted daemon find the
  tables it left behind (`stale_block_tables`).
* ``down`` - administrative down.  The backend remembers whether the port was up before it
  took it down and brings it up again only then: a port an operator set down stays down.
  That memory lives in the instance, so after a restart a port we took down stays down.
* ``exec`` - a user command (split with `shlex.split`, run without a shell, 10 s limit)
  with the port, the action and the reasons in its environment.  The command is the
  authority on the port, so `is_out_of_service` reports what the last successful call set.
* ``log-only`` - nothing; logging the decision is the daemon's job.

Every change is verified by reading the state back: a failed or unverified change raises
`ActionError`, whose message names the command and quotes its stderr.

Tables are changed in batches (`BlockBackend.carry_out`, `end_loopbacks`; one port is a
batch of one): one ``ip -j link show`` for the devices of the tables installed, one
``nft -f -`` transaction for every table, and one read-back, whatever the number of
ports.  One table is read back whole, rules included (``nft -j list table``, and its text
for the devices the hooks are bound to: nft's JSON does not always show them); more are
read back from one reading of the family's chains (table, hook, device, priority,
policy), their rules trusted to the transaction that committed them, because nft 1.0.6
lists the ruleset, or many tables, in a time quadratic in the number of tables (8.6 s at
1,024 tables).  The chains are read from the kernel over nfnetlink where nft runs in our
own namespace (`efmoam.linux.nfchains`, 20 ms at 1,024 tables), else from nft's text
(0.4 s).  A transaction nft refuses applies nothing, so it is split in halves and tried
again until each bad table stands alone: one port's error is its own, and costs about
2 log2(N) transactions.  The daemon runs its batches
off the loop (`efmoam.daemon.actuator`).

`LoopbackPlane` (its steps batched like blocks; `apply_loopback` for one port at once) is
the data plane of Clause 57 remote loopback, in a second table per port
(``efmoam_lb_<port>``) so that it composes with a block: parser LOOPBACK sends every
received non-OAM frame back out of the same port unchanged (``fwd`` in the ingress hook),
parser DISCARD drops them, mux DISCARD drops the non-OAM frames the port sends.  Frames
sent by ``fwd`` traverse the egress hook of the port, keeping the packet mark set on
ingress, so the egress chain accepts frames carrying `LOOPBACK_MARK` before it discards
the rest (checked on Linux 6.18).  The block table runs first (priority -500 against
-450) and its egress chain drops looped frames too: a blocked port loops nothing.

Commands run through a *runner*: a callable taking an argument list (plus optional stdin
text, environment and timeout) and returning a `subprocess.CompletedProcess` with text
output.  The default, `run_command`, is `subprocess.run` in the daemon's own network
namespace; the tests pass a runner that prefixes ``ip netns exec <ns>`` to act on a port
in a test namespace.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from efmoam.linux.nfchains import netdev_ruleset
from pdu.enums import SLOW_PROTOCOLS_ETHERTYPE, MuxAction, ParserAction

BACKEND_KINDS: Final = ("block", "down", "exec", "log-only")
BLOCK_PREFIX: Final = "efmoam_block_"  #: block table names: this prefix and the encoded port name
LOOPBACK_PREFIX: Final = "efmoam_lb_"  #: loopback table names
BLOCK_PRIORITY: Final = -500
LOOPBACK_PRIORITY: Final = -450  # after the block table: a blocked port loops nothing
LOOPBACK_MARK: Final = 0x88090057  #: packet mark on looped frames (EtherType 0x8809, clause 57)
COMMAND_TIMEOUT: Final = 10.0  #: seconds for nft, ip and exec commands
IFNAMSIZ: Final = 16  # including the terminating NUL
_NOT_IN_NAMES: Final = frozenset('"\\/:')  # the kernel refuses / and :; nft strings cannot hold " or \


class ActionError(Exception):
    """A port action failed or did not verify; the message names the command and its stderr."""

    def __init__(self, message: str, *, command: Sequence[str] = (), stderr: str = "") -> None:
        super().__init__(message)
        self.command = tuple(command)
        self.stderr = stderr


class Runner(Protocol):
    """Runs one command given as an argument list, never through a shell."""

    def __call__(
        self,
        argv: Sequence[str],
        *,
        stdin: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = COMMAND_TIMEOUT,
    ) -> subprocess.CompletedProcess[str]: ...


def run_command(
    argv: Sequence[str],
    *,
    stdin: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = COMMAND_TIMEOUT,
) -> subprocess.CompletedProcess[str]:
    """The default runner: `subprocess.run` in the current network namespace, output captured."""
    return subprocess.run(
        list(argv),
        input=stdin,
        env=None if env is None else dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


class PortActionBackend(Protocol):
    """Takes ports out of service and back; `is_out_of_service` reads the system."""

    name: str

    def take_out_of_service(self, ifname: str, reasons: tuple[str, ...]) -> None:
        """Take `ifname` out of service (idempotent); raise `ActionError` if it did not work."""

    def return_to_service(self, ifname: str) -> None:
        """Undo what `take_out_of_service` did (a port in service is left alone)."""

    def is_out_of_service(self, ifname: str) -> bool:
        """Whether the port is out of service now, as far as this backend can tell."""


# ---------------------------------------------------------------------------------------
# running commands


def _run(
    runner: Runner,
    argv: Sequence[str],
    *,
    stdin: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = COMMAND_TIMEOUT,
) -> str:
    """Run a command and return its stdout; any failure becomes an `ActionError`."""
    shown = shlex.join(argv)
    try:
        result = runner(argv, stdin=stdin, env=env, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise ActionError(f"`{shown}` timed out after {timeout:g} s", command=argv) from exc
    except OSError as exc:
        raise ActionError(f"`{shown}` could not be run: {exc}", command=argv) from exc
    if result.returncode != 0:
        stderr = (result.stderr or "").strip()
        raise ActionError(f"`{shown}` exited with {result.returncode}: {stderr}", command=argv, stderr=stderr)
    return result.stdout or ""


def _json(text: str, argv: Sequence[str]) -> Any:
    """Parse a command's JSON output."""
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ActionError(f"`{shlex.join(argv)}` printed no valid JSON: {exc}", command=argv) from exc


def _nft_items(runner: Runner, *args: str) -> list[dict[str, Any]]:
    """The items of an ``nft -j list ...`` answer (blank output means none)."""
    argv = ["nft", "-j", "list", *args]
    text = _run(runner, argv)
    items = _json(text, argv).get("nftables", []) if text.strip() else []
    return [item for item in items if isinstance(item, dict)]


def check_ifname(ifname: str) -> None:
    """Raise `ActionError` for a name the kernel or an nft script cannot take."""
    size = len(ifname.encode())
    bad = [c for c in ifname if c in _NOT_IN_NAMES or c.isspace() or not c.isprintable()]
    if not 0 < size < IFNAMSIZ or bad or ifname in (".", ".."):
        raise ActionError(f"invalid interface name {ifname!r}")


def _link(runner: Runner, ifname: str) -> dict[str, Any]:
    """`ip -j link show dev IFNAME` as a dict; `ActionError` when there is no such device."""
    argv = ["ip", "-j", "link", "show", "dev", ifname]
    links = _json(_run(runner, argv), argv)
    if not isinstance(links, list) or len(links) != 1 or not isinstance(links[0], dict):
        raise ActionError(f"`{shlex.join(argv)}` did not describe one link", command=argv)
    return links[0]


# ---------------------------------------------------------------------------------------
# nftables table names


def _encode_ifname(ifname: str) -> str:
    """ASCII letters and digits stay; every other byte becomes ``_xx`` (reversible)."""
    out: list[str] = []
    for char in ifname:
        if char.isascii() and char.isalnum():
            out.append(char)
        else:
            out.extend(f"_{byte:02x}" for byte in char.encode())
    return "".join(out)


def _decode_ifname(encoded: str) -> str | None:
    """The interface name behind `_encode_ifname`'s output, or None if it is not one."""
    data = bytearray()
    for plain, escaped in re.findall(r"([A-Za-z0-9])|_([0-9a-f]{2})", encoded):
        data += plain.encode() if plain else bytes.fromhex(escaped)
    try:
        name = data.decode()
    except UnicodeDecodeError:
        return None
    return name if name and _encode_ifname(name) == encoded else None


def block_table_name(ifname: str) -> str:
    """The block table of a port, e.g. ``efmoam_block_eth0_2e100`` for ``eth0.100``."""
    return BLOCK_PREFIX + _encode_ifname(ifname)


def loopback_table_name(ifname: str) -> str:
    """The loopback table of a port, e.g. ``efmoam_lb_eth0``."""
    return LOOPBACK_PREFIX + _encode_ifname(ifname)


def _tables_for(prefix: str, runner: Runner) -> list[str]:
    """Interfaces that have a netdev table named `prefix` + encoded name now (`_netdev_tables`)."""
    names = _netdev_tables(runner, None)
    found = (_decode_ifname(name[len(prefix) :]) for name in names if name.startswith(prefix))
    return sorted(name for name in found if name is not None)


def stale_block_tables(runner: Runner = run_command) -> list[str]:
    """Interfaces that have an efmoam block table now (reconciliation at start)."""
    return _tables_for(BLOCK_PREFIX, runner)


def stale_loopback_tables(runner: Runner = run_command) -> list[str]:
    """Interfaces that have an efmoam loopback table now (remove them at start)."""
    return _tables_for(LOOPBACK_PREFIX, runner)


# ---------------------------------------------------------------------------------------
# nftables tables: what we write, and how the JSON listing reads it back


@dataclass(frozen=True)
class _Rule:
    text: str  #: nft syntax
    summary: tuple[str, ...]  #: what `_summarize` makes of the rule's JSON listing


@dataclass(frozen=True)
class _Chain:
    hook: str  #: "ingress" or "egress"; also the chain's name
    rules: tuple[_Rule, ...]


@dataclass(frozen=True)
class _Table:
    name: str
    ifname: str
    comment: str
    priority: int
    chains: tuple[_Chain, ...]


_NOT_SLOW = f"ether.type!={SLOW_PROTOCOLS_ETHERTYPE}"


def _drop_non_slow() -> _Rule:
    return _Rule(f"ether type != {SLOW_PROTOCOLS_ETHERTYPE:#06x} counter drop", (_NOT_SLOW, "drop"))


def _loop_non_slow(ifname: str, mark: int) -> _Rule:
    text = f'ether type != {SLOW_PROTOCOLS_ETHERTYPE:#06x} counter meta mark set {mark:#x} fwd to "{ifname}"'
    return _Rule(text, (_NOT_SLOW, f"meta.mark={mark}", f"fwd:{ifname}"))


def _accept_looped(mark: int) -> _Rule:
    return _Rule(f"meta mark {mark:#x} counter accept", (f"meta.mark=={mark}", "accept"))


def _comment(*parts: str) -> str:
    """A table comment: printable ASCII without quotes or backslashes, at most 120 characters."""
    text = " ".join(parts)
    return "".join(c if c.isascii() and c.isprintable() and c not in '"\\' else "?" for c in text)[:120]


def _block_table(ifname: str, reasons: tuple[str, ...]) -> _Table:
    chains = (_Chain("ingress", (_drop_non_slow(),)), _Chain("egress", (_drop_non_slow(),)))
    comment = _comment("efmoam:", ifname, "out of service", f"({','.join(reasons) or 'no reason given'})")
    return _Table(block_table_name(ifname), ifname, comment, BLOCK_PRIORITY, chains)


def _loopback_table(ifname: str, parser: ParserAction, mux: MuxAction, mark: int) -> _Table:
    chains: list[_Chain] = []
    if parser is ParserAction.LOOPBACK:
        chains.append(_Chain("ingress", (_loop_non_slow(ifname, mark),)))
    elif parser is ParserAction.DISCARD:
        chains.append(_Chain("ingress", (_drop_non_slow(),)))
    if mux is MuxAction.DISCARD:
        looped = (_accept_looped(mark),) if parser is ParserAction.LOOPBACK else ()
        chains.append(_Chain("egress", (*looped, _drop_non_slow())))
    comment = _comment("efmoam:", ifname, f"parser {parser.name.lower()}, mux {mux.name.lower()}")
    return _Table(loopback_table_name(ifname), ifname, comment, LOOPBACK_PRIORITY, tuple(chains))


def _delete_script(name: str) -> str:
    """Delete a netdev table; no error when it does not exist."""
    return f"add table netdev {name}\ndelete table netdev {name}\n"


def _replace_script(table: _Table) -> str:
    """One transaction that replaces the table with `table`."""
    lines = [_delete_script(table.name), f"table netdev {table.name} {{", f'\tcomment "{table.comment}"']
    for chain in table.chains:
        lines.append(f"\tchain {chain.hook} {{")
        lines.append(
            f'\t\ttype filter hook {chain.hook} device "{table.ifname}" priority {table.priority}; policy accept;'
        )
        lines.extend(f"\t\t{rule.text}" for rule in chain.rules)
        lines.append("\t}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _nft_script(runner: Runner, script: str) -> None:
    _run(runner, ["nft", "-f", "-"], stdin=script)


def _operand(value: Any) -> str:
    """``ether.type``, ``meta.mark``: the left side of a match in nft's JSON."""
    if isinstance(value, dict) and "payload" in value:
        return f"{value['payload'].get('protocol')}.{value['payload'].get('field')}"
    if isinstance(value, dict) and "meta" in value:
        return f"meta.{value['meta'].get('key')}"
    return json.dumps(value, sort_keys=True)


def _summarize(expressions: list[dict[str, Any]]) -> tuple[str, ...]:
    """A rule's JSON expressions as short tokens, counters left out."""
    tokens: list[str] = []
    for key, body in (item for expression in expressions for item in expression.items()):
        if key == "counter":
            continue
        if key == "match":
            tokens.append(f"{_operand(body['left'])}{body.get('op', '==')}{body['right']}")
        elif key == "mangle":
            tokens.append(f"{_operand(body['key'])}={body['value']}")
        elif key == "fwd":
            tokens.append(f"fwd:{body.get('dev')}")
        else:
            tokens.append(key)
    return tuple(tokens)


#: chain name -> ((type, hook, priority, policy, device), rule summaries): a table as read back
_Chains = dict[str, tuple[tuple[Any, ...], list[tuple[str, ...]]]]
_TABLE_LINE = re.compile(r"table netdev (\S+) \{")
_CHAIN_LINE = re.compile(r"\s+chain (\S+) \{")
_FLAGS_LINE = re.compile(r"\s+flags (\S+)$")
_HOOK_LINE = re.compile(r'\btype (\S+) hook (\S+) device (?:"([^"]*)"|([^\s;]+)) priority (\S+); policy (\w+);')


def _read_back(runner: Runner, names: set[str]) -> tuple[dict[str, _Chains], bool]:
    """The tables among `names` that exist now, as read back, and whether their rules were
    read.  One table: its own listing, rules included (cheap).  More: the family's base
    chains, whatever their number, without rules (`_netdev_tables`; nft 1.0.6 lists the
    ruleset or many tables in a time quadratic in the tables: 8.6 s at 1,024)."""
    if len(names) != 1:
        return _netdev_tables(runner, names), False
    (name,) = names
    try:
        text = _run(runner, ["nft", "list", "table", "netdev", name])
        items = _nft_items(runner, "table", "netdev", name)
    except ActionError as exc:
        if "No such file or directory" in exc.stderr:
            return {}, True
        raise
    tables = _chains_listed(text, names)
    for item in items:
        rule = item.get("rule")
        if isinstance(rule, dict) and rule.get("chain") in tables.get(str(rule.get("table")), {}):
            tables[rule["table"]][rule["chain"]][1].append(_summarize(rule.get("expr", [])))
    return tables, True


def _netdev_tables(runner: Runner, names: set[str] | None) -> dict[str, _Chains]:
    """The netdev tables (those among `names`, if given) with their base chains, no rules;
    a dormant table with none (its hooks are not registered).

    Where nft runs in this process's namespace (`run_command`), from the kernel over
    nfnetlink (`efmoam.linux.nfchains`): 20 ms for 1,024 tables, against 0.4 s of nft
    printing them.  Through any other runner (another namespace, a test's), from nft's
    text listing, the only one of nft's that always shows a chain's device, but not
    whether a table is dormant (read back alone, a table's own listing says it)."""
    if runner is not run_command:
        return _chains_listed(_run(runner, ["nft", "list", "chains", "netdev"]), names)
    try:
        tables_now, chains = netdev_ruleset(COMMAND_TIMEOUT)
    except OSError as exc:  # the kernel's refusal (EPERM), or no socket to be had (EMFILE)
        raise ActionError(f"reading the netdev tables over nfnetlink failed: {exc}") from exc
    dormant = {table.name for table in tables_now if table.dormant}
    tables: dict[str, _Chains] = {table.name: {} for table in tables_now if names is None or table.name in names}
    for chain in chains:
        if names is None or chain.table in names:
            listed = tables.setdefault(chain.table, {})
            if chain.hook is not None and chain.table not in dormant:  # a base chain in force
                listed[chain.name] = ((chain.type, chain.hook, chain.priority, chain.policy, chain.device), [])
    return tables


def _chains_listed(text: str, names: set[str] | None) -> dict[str, _Chains]:
    """The tables (among `names`, if given) in an nft text listing, with their base chains
    (no rules); a table the listing shows dormant (a table's own does) with none."""
    tables: dict[str, _Chains] = {}
    dormant: set[str] = set()
    table: str | None = None
    chain: str | None = None
    for line in text.splitlines():
        if found := _TABLE_LINE.match(line):
            table, chain = found[1], None
            if names is None or table in names:
                tables.setdefault(table, {})
        elif found := _CHAIN_LINE.match(line):
            chain = found[1]
        elif table in tables and chain is None and (found := _FLAGS_LINE.match(line)):
            if "dormant" in found[1].split(","):
                dormant.add(table)
        elif table in tables and chain is not None and (found := _HOOK_LINE.search(line)):
            kind, hook, quoted, plain, priority, policy = found.groups()
            device = quoted if quoted is not None else plain
            number = int(priority) if re.fullmatch(r"-?\d+", priority) else priority
            tables[table][chain] = ((kind, hook, number, policy, device), [])
    return {name: {} if name in dormant else chains for name, chains in tables.items()}


def _expected(table: _Table) -> _Chains:
    """`table` as `_read_back` must find it."""
    return {
        chain.hook: (
            ("filter", chain.hook, table.priority, "accept", table.ifname),
            [rule.summary for rule in chain.rules],
        )
        for chain in table.chains
    }


def _holds(listed: _Chains | None, table: _Table | None, rules: bool) -> bool:
    """Whether a table as read back is `table` (None: no table); without `rules`, its chains."""
    if listed is None or table is None:
        return listed is None and table is None
    expected = _expected(table)
    if not rules:
        return {name: facts for name, (facts, _) in listed.items()} == {
            name: facts for name, (facts, _) in expected.items()
        }
    return listed == expected


@dataclass(frozen=True)
class _Want:
    """A port's table as it must be: `table` in place, or no table called `name` (`table` None).
    `write` False only reads back whether it is so."""

    ifname: str
    name: str
    table: _Table | None
    write: bool = True


def _missing_devices(runner: Runner, ifnames: Sequence[str]) -> dict[str, ActionError]:
    """The error of each port in `ifnames` that has no device (one ``ip`` call for them all);
    newer kernels accept hooks on devices that do not exist."""
    if len(ifnames) == 1:
        try:
            _link(runner, ifnames[0])
        except ActionError as exc:
            return {ifnames[0]: exc}
        return {}
    argv = ["ip", "-j", "link", "show"]
    try:
        links = _json(_run(runner, argv), argv)
    except ActionError as exc:
        return dict.fromkeys(ifnames, exc)
    present = {link.get("ifname") for link in links if isinstance(link, dict)} if isinstance(links, list) else set()
    return {
        ifname: ActionError(f"no device named {ifname!r} in `{shlex.join(argv)}`", command=argv)
        for ifname in ifnames
        if ifname not in present
    }


def _write(runner: Runner, scripts: Sequence[tuple[int, str]]) -> dict[int, ActionError]:
    """Run the scripts as one nft transaction; if it fails, split it in halves and try again,
    so each bad script is found and the others applied.  The errors by script index."""
    if not scripts:
        return {}
    try:
        _nft_script(runner, "".join(script for _, script in scripts))
    except ActionError as exc:
        if len(scripts) == 1:
            return {scripts[0][0]: exc}
        half = len(scripts) // 2
        return {**_write(runner, scripts[:half]), **_write(runner, scripts[half:])}
    return {}


def _carry_out(runner: Runner, wants: Sequence[_Want]) -> list[bool | ActionError]:
    """Make every table as wanted in one nft transaction and read them back at once.

    For each want, in order: whether the table is as wanted now (a write that did not
    verify is an `ActionError`), or the `ActionError` that stopped it.  One port's error
    never stops another's.
    """
    results: list[bool | ActionError | None] = [None] * len(wants)
    for index, want in enumerate(wants):
        try:
            check_ifname(want.ifname)
        except ActionError as exc:
            results[index] = exc
    installs = [i for i, want in enumerate(wants) if results[i] is None and want.write and want.table is not None]
    missing = _missing_devices(runner, [wants[i].ifname for i in installs]) if installs else {}
    for index in installs:
        results[index] = missing.get(wants[index].ifname)
    writes = [i for i, want in enumerate(wants) if results[i] is None and want.write]
    for index, error in _write(runner, [(i, _script(wants[i])) for i in writes]).items():
        results[index] = error
    reads = [i for i, result in enumerate(results) if result is None]
    listed: dict[str, _Chains] = {}
    rules = True
    if reads:
        try:
            listed, rules = _read_back(runner, {wants[i].name for i in reads})
        except ActionError as exc:
            results = [exc if result is None else result for result in results]
        except (KeyError, TypeError, AttributeError) as exc:  # JSON of another shape than nft's
            error = ActionError(f"nft printed a listing of an unknown shape: {exc!r}")
            results = [error if result is None else result for result in results]
    for index in reads:
        want = wants[index]
        if results[index] is None:
            holds = _holds(listed.get(want.name), want.table, rules)
            results[index] = holds if holds or not want.write else _unverified(want)
    return [False if result is None else result for result in results]


def _script(want: _Want) -> str:
    return _delete_script(want.name) if want.table is None else _replace_script(want.table)


def _unverified(want: _Want) -> ActionError:
    if want.table is None:
        return ActionError(f"nft table netdev {want.name} is still there after deleting it")
    return ActionError(f"nft table netdev {want.name} did not read back as written")


def _raised(result: bool | ActionError) -> bool:
    """A result of `_carry_out` or `carry_out`, its error raised."""
    if isinstance(result, ActionError):
        raise result
    return result


# ---------------------------------------------------------------------------------------
# backends


@dataclass(frozen=True)
class Step:
    """One thing to do to a port: take it out of service (`out` True), return it to service
    (False), or only read whether it is out of service (None)."""

    ifname: str
    out: bool | None
    reasons: tuple[str, ...] = ()


class BlockBackend:
    """Out of service = an nftables netdev table dropping everything but Slow Protocols."""

    name: str = "block"

    def __init__(self, runner: Runner = run_command) -> None:
        self.runner = runner  #: block backends with the same runner batch their steps together

    def carry_out(self, steps: Sequence[Step]) -> list[bool | ActionError]:
        """Every step in one nft transaction, read back at once: for each step,
        whether its port is out of service now, or its error."""
        results = _carry_out(self.runner, [_block_want(step) for step in steps])
        return [
            step.out if result is True and step.out is not None else result
            for step, result in zip(steps, results, strict=True)
        ]

    def take_out_of_service(self, ifname: str, reasons: tuple[str, ...]) -> None:
        """Install (or replace) the port's block table and verify it."""
        _raised(self.carry_out([Step(ifname, True, reasons)])[0])

    def return_to_service(self, ifname: str) -> None:
        """Delete the port's block table; an absent table means the port is in service."""
        _raised(self.carry_out([Step(ifname, False)])[0])

    def is_out_of_service(self, ifname: str) -> bool:
        """Whether the port's block table is present and complete."""
        return _raised(self.carry_out([Step(ifname, None)])[0])


def _block_want(step: Step) -> _Want:
    name = block_table_name(step.ifname)
    if step.out is None:
        return _Want(step.ifname, name, _block_table(step.ifname, ()), write=False)
    return _Want(step.ifname, name, _block_table(step.ifname, step.reasons) if step.out else None)


class DownBackend:
    """Out of service = administratively down; only ports we took down are brought up."""

    name: str = "down"

    def __init__(self, runner: Runner = run_command) -> None:
        self._runner = runner
        self._was_up: dict[str, bool] = {}  #: admin state before the first take, per port

    def _admin_up(self, ifname: str) -> bool:
        return "UP" in _link(self._runner, ifname).get("flags", [])

    def _set(self, ifname: str, state: str) -> None:
        _run(self._runner, ["ip", "link", "set", "dev", ifname, state])
        if self._admin_up(ifname) != (state == "up"):
            raise ActionError(f"{ifname} is not admin {state} after `ip link set dev {ifname} {state}`")

    def take_out_of_service(self, ifname: str, reasons: tuple[str, ...]) -> None:
        """Set the port down, remembering whether it was up."""
        check_ifname(ifname)
        up = self._admin_up(ifname)
        self._was_up.setdefault(ifname, up)
        if up:
            self._set(ifname, "down")

    def return_to_service(self, ifname: str) -> None:
        """Bring the port up if it was up before we took it down; otherwise leave it."""
        check_ifname(ifname)
        if self._was_up.get(ifname):
            self._set(ifname, "up")
        self._was_up.pop(ifname, None)

    def is_out_of_service(self, ifname: str) -> bool:
        """Whether the port is admin down now (whoever set it down)."""
        check_ifname(ifname)
        return not self._admin_up(ifname)


class ExecBackend:
    """Out of service = whatever the configured command does.

    The command gets ``EFMOAM_PORT``, ``EFMOAM_ACTION`` (``out-of-service`` or
    ``in-service``), ``EFMOAM_REASONS`` (comma-separated, empty when returning to service)
    and ``EFMOAM_STATE`` (the state the last successful call set: ``in-service``,
    ``out-of-service``, or ``unknown`` before the first) on top of the daemon's
    environment.  A non-zero exit or a timeout raises `ActionError` with its stderr.
    """

    name: str = "exec"

    def __init__(self, command: str, runner: Runner = run_command, timeout: float = COMMAND_TIMEOUT) -> None:
        self._argv = tuple(shlex.split(command))
        if not self._argv:
            raise ValueError("the exec port action needs a command")
        self._runner = runner
        self._timeout = timeout
        self._out: dict[str, bool] = {}  #: what the last successful call set, per port

    def _call(self, ifname: str, out: bool, reasons: tuple[str, ...]) -> None:
        state = {True: "out-of-service", False: "in-service", None: "unknown"}
        env = {
            **os.environ,
            "EFMOAM_PORT": ifname,
            "EFMOAM_ACTION": state[out],
            "EFMOAM_REASONS": ",".join(reasons),
            "EFMOAM_STATE": state[self._out.get(ifname)],
        }
        _run(self._runner, self._argv, env=env, timeout=self._timeout)
        self._out[ifname] = out

    def take_out_of_service(self, ifname: str, reasons: tuple[str, ...]) -> None:
        """Run the command with ``EFMOAM_ACTION=out-of-service``."""
        self._call(ifname, True, reasons)

    def return_to_service(self, ifname: str) -> None:
        """Run the command with ``EFMOAM_ACTION=in-service``."""
        self._call(ifname, False, ())

    def is_out_of_service(self, ifname: str) -> bool:
        """What the last successful call set (the command, not efmoam, owns the port)."""
        return self._out.get(ifname, False)


class LogOnlyBackend:
    """No action on the port; the daemon logs the decision."""

    name: str = "log-only"

    def take_out_of_service(self, ifname: str, reasons: tuple[str, ...]) -> None:
        """Do nothing."""

    def return_to_service(self, ifname: str) -> None:
        """Do nothing."""

    def is_out_of_service(self, ifname: str) -> bool:
        """Always False: nothing is ever done to the port."""
        return False


def carry_out(backend: PortActionBackend | LoopbackPlane, steps: Sequence[Any]) -> list[bool | ActionError]:
    """Steps with one backend: in one batch for ``block`` and the loopback plane, one after
    the other otherwise.  For each, whether its port is out of service now (the loopback
    plane: whether its table is as wanted), or its error."""
    if isinstance(backend, (BlockBackend, LoopbackPlane)):
        return backend.carry_out(steps)
    return [_one_step(backend, step) for step in steps]


def _one_step(backend: PortActionBackend, step: Step) -> bool | ActionError:
    try:
        if step.out is None:
            return backend.is_out_of_service(step.ifname)
        if step.out:
            backend.take_out_of_service(step.ifname, step.reasons)
        else:
            backend.return_to_service(step.ifname)
    except ActionError as exc:
        return exc
    return step.out


def make_backend(kind: str, *, command: str | None = None, runner: Runner = run_command) -> PortActionBackend:
    """The backend for a configured port action: ``block``, ``down``, ``exec`` or ``log-only``."""
    if kind not in BACKEND_KINDS:
        raise ValueError(f"unknown port action {kind!r}; expected one of {', '.join(BACKEND_KINDS)}")
    if (command is not None) != (kind == "exec"):
        raise ValueError("a command is needed by the exec port action, and only by it")
    if kind == "block":
        return BlockBackend(runner)
    if kind == "down":
        return DownBackend(runner)
    if kind == "log-only":
        return LogOnlyBackend()
    return ExecBackend(command or "", runner)


# ---------------------------------------------------------------------------------------
# loopback data plane


@dataclass(frozen=True)
class LoopbackStep:
    """A port's parser and multiplexer actions to set in the data plane (Clause 57.3.3)."""

    ifname: str
    parser: ParserAction
    mux: MuxAction


class LoopbackPlane:
    """The loopback data plane of many ports: their tables in one nft transaction, read back
    at once (the daemon hands its steps to the actuator, off the loop)."""

    name: str = "loopback"

    def __init__(self, runner: Runner = run_command, *, mark: int = LOOPBACK_MARK) -> None:
        self.runner = runner  #: planes with the same runner batch their steps together
        self.mark = mark

    def carry_out(self, steps: Sequence[LoopbackStep]) -> list[bool | ActionError]:
        """For each step, True when its port's table is as wanted now, or its error."""
        return _carry_out(self.runner, [self._want(step) for step in steps])

    def _want(self, step: LoopbackStep) -> _Want:
        forward = step.parser is ParserAction.FORWARD and step.mux is MuxAction.FORWARD
        table = None if forward else _loopback_table(step.ifname, step.parser, step.mux, self.mark)
        return _Want(step.ifname, loopback_table_name(step.ifname), table)


def apply_loopback(
    ifname: str, parser_action: int, mux_action: int, runner: Runner = run_command, *, mark: int = LOOPBACK_MARK
) -> None:
    """Set the port's parser and multiplexer actions (Clause 57.3.3) in the data plane, at once.

    Parser LOOPBACK returns every received non-OAM frame out of the port unchanged, parser
    DISCARD drops them, mux DISCARD drops non-OAM frames the port sends (looped frames
    excepted); both FORWARD removes the loopback table.  OAMPDUs always pass.  Raises
    `ValueError` for an undefined action value and `ActionError` when nft fails or the
    table does not read back as written.
    """
    step = LoopbackStep(ifname, ParserAction(parser_action), MuxAction(mux_action))
    check_ifname(ifname)
    _raised(LoopbackPlane(runner, mark=mark).carry_out([step])[0])


def end_loopbacks(ifnames: Sequence[str], runner: Runner = run_command) -> list[ActionError | None]:
    """Remove the loopback tables of many ports in one nft transaction; each one's error."""
    steps = [LoopbackStep(ifname, ParserAction.FORWARD, MuxAction.FORWARD) for ifname in ifnames]
    return [result if isinstance(result, ActionError) else None for result in LoopbackPlane(runner).carry_out(steps)]
