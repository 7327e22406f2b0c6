"""The netdev family's tables and chains, read from the kernel over nfnetlink (nf_tables).

Why not ``nft list chains netdev``: nft 1.0.6 prints a listing one small write at a time
and allocates as it goes; with a thousand port tables it takes about 0.4 s of CPU, most
of a mass action's read-back (the kernel's own dump of the same chains takes a few
milliseconds).  This module asks the kernel directly: one ``NFT_MSG_GETTABLE`` and one
``NFT_MSG_GETCHAIN`` dump of the netdev family (``NFPROTO_NETDEV``), each reply reduced
to the facts the actions verify: which tables exist and whether they are dormant (a
dormant table's hooks are not registered: it filters nothing), and for each chain its
table, name, type, hook, priority, policy and device.

Only the namespace this process is in can be read this way; `efmoam.linux.actions`
uses it where nft runs in that same namespace, and reads nft's text anywhere else.
nf_tables encodes its integers big-endian (``NLA_U32`` in network order); the hook's
priority is a signed 32-bit value.  A chain bound to anything but one named device (several
devices, or a wildcard on newer kernels) has no `Chain.device`: no table of ours is one,
and no joined name can be mistaken for a device's.
"""

from __future__ import annotations

import struct

import attrs

from efmoam.linux.netlink import NetlinkSocket, attr_str, iter_attrs, parse_attrs

NETLINK_NETFILTER = 12
NFNL_SUBSYS_NFTABLES = 10
NFT_MSG_NEWTABLE = 0
NFT_MSG_GETTABLE = 1
NFT_MSG_NEWCHAIN = 3
NFT_MSG_GETCHAIN = 4
NFPROTO_NETDEV = 5

NFTA_TABLE_NAME = 1
NFTA_TABLE_FLAGS = 2
NFT_TABLE_F_DORMANT = 0x1

NFTA_CHAIN_TABLE = 1
NFTA_CHAIN_NAME = 3
NFTA_CHAIN_HOOK = 4
NFTA_CHAIN_POLICY = 5
NFTA_CHAIN_TYPE = 7
NFTA_HOOK_HOOKNUM = 1
NFTA_HOOK_PRIORITY = 2
NFTA_HOOK_DEV = 3
NFTA_HOOK_DEVS = 4
NFTA_DEVICE_NAME = 1

#: netdev hook numbers (``enum nf_dev_hooks``) and verdicts (``NF_DROP``, ``NF_ACCEPT``) as nft names them
NETDEV_HOOKS = {0: "ingress", 1: "egress"}
POLICIES = {0: "drop", 1: "accept"}

_NFGENMSG = struct.Struct("!BBH")  # family, version, resource id (network order)
_BE32 = struct.Struct("!I")
_BE32_SIGNED = struct.Struct("!i")
_CHAIN_ATTRS = frozenset({NFTA_CHAIN_TABLE, NFTA_CHAIN_NAME, NFTA_CHAIN_HOOK, NFTA_CHAIN_POLICY, NFTA_CHAIN_TYPE})
_TABLE_ATTRS = frozenset({NFTA_TABLE_NAME, NFTA_TABLE_FLAGS})


@attrs.frozen
class Table:
    """One table as the kernel holds it."""

    name: str
    dormant: bool


@attrs.frozen
class Chain:
    """One chain as the kernel holds it: a base chain has a hook; None where the kernel
    did not say."""

    table: str
    name: str
    type: str | None
    hook: str | None
    priority: int | None
    policy: str | None
    device: str | None


def _u32(payload: bytes | None, layout: struct.Struct = _BE32) -> int | None:
    if payload is None or len(payload) != layout.size:
        return None
    return int(layout.unpack(payload)[0])


def _one_device(payload: bytes) -> str | None:
    """The device of a hook's device list, if it names exactly one (and nothing else)."""
    entries = list(iter_attrs(payload))
    if len(entries) != 1 or entries[0][0] != NFTA_DEVICE_NAME:
        return None
    return attr_str(entries[0][1])


def parse_table(data: bytes | bytearray, start: int, end: int) -> Table | None:
    """A NEWTABLE message's payload (``data[start:end]``) as a `Table`; None without a name."""
    found = parse_attrs(bytes(data[start + _NFGENMSG.size : end]), wanted=_TABLE_ATTRS)
    name = attr_str(found.get(NFTA_TABLE_NAME))
    if name is None:
        return None
    return Table(name, bool((_u32(found.get(NFTA_TABLE_FLAGS)) or 0) & NFT_TABLE_F_DORMANT))


def parse_chain(data: bytes | bytearray, start: int, end: int) -> Chain | None:
    """A NEWCHAIN message's payload (``data[start:end]``) as a `Chain` (a regular chain:
    no hook facts); None without a table or name."""
    found = parse_attrs(bytes(data[start + _NFGENMSG.size : end]), wanted=_CHAIN_ATTRS)
    table, name = attr_str(found.get(NFTA_CHAIN_TABLE)), attr_str(found.get(NFTA_CHAIN_NAME))
    if table is None or name is None:
        return None
    hook = found.get(NFTA_CHAIN_HOOK)
    hook_attrs = parse_attrs(hook) if hook is not None else {}
    devices = hook_attrs.get(NFTA_HOOK_DEVS)
    device = _one_device(devices) if devices is not None else attr_str(hook_attrs.get(NFTA_HOOK_DEV))
    number = _u32(hook_attrs.get(NFTA_HOOK_HOOKNUM))
    policy = _u32(found.get(NFTA_CHAIN_POLICY))
    return Chain(
        table=table,
        name=name,
        type=attr_str(found.get(NFTA_CHAIN_TYPE)),
        hook=None if number is None else NETDEV_HOOKS.get(number, str(number)),
        priority=_u32(hook_attrs.get(NFTA_HOOK_PRIORITY), _BE32_SIGNED),
        policy=None if policy is None else POLICIES.get(policy, str(policy)),
        device=device,
    )


def netdev_ruleset(timeout: float = 5.0) -> tuple[list[Table], list[Chain]]:
    """Every table and every chain of the netdev family in this network namespace (one
    dump each; each retried while the ruleset changes under it).  Raises `OSError`
    (`efmoam.linux.netlink.NetlinkError` for what the kernel refuses: EPERM without
    CAP_NET_ADMIN)."""
    request = _NFGENMSG.pack(NFPROTO_NETDEV, 0, 0)
    subsystem = NFNL_SUBSYS_NFTABLES << 8
    with NetlinkSocket(NETLINK_NETFILTER, timeout=timeout) as sock:
        tables = sock.dump_parsed(subsystem | NFT_MSG_GETTABLE, request, subsystem | NFT_MSG_NEWTABLE, parse_table)
        chains = sock.dump_parsed(subsystem | NFT_MSG_GETCHAIN, request, subsystem | NFT_MSG_NEWCHAIN, parse_chain)
    return tables, chains
