"""The probing half of ``efmoam diagnose PORT``: gathers `Facts` about one port.

Design choices.  Only IO here; efmoam/views/diagnosis.py judges.  Every source is
optional: a failing one leaves its fact empty with the reason, so a half-broken box still
gets a report.  Only a port that does not exist or is not Ethernet stops the probe
(`DiagnoseError`: a usage error).  Listening uses two AF_PACKET sockets carrying the OAM
socket's own BPF filter: a tap bound to ETH_P_ALL, which the kernel serves before the
ingress hooks (tc, nftables netdev), and the daemon's kind of socket (`OamSocket`), served
after them.  It ends early once one speaker's second Information OAMPDU came (every
speaker has had a transmit interval) and the OAM socket got one, else after `listen`
seconds.  Without root it listens through the daemon instead (its Information OAMPDUs
received, before and after).
"""

from __future__ import annotations

import errno
import json
import re
import select
import socket
import subprocess
import time
from collections.abc import Callable
from typing import Any

from efmoam.daemon.control import ControlError, request
from efmoam.linux.actions import (
    ActionError,
    Runner,
    block_table_name,
    check_ifname,
    loopback_table_name,
    run_command,
)
from efmoam.linux.counters import CounterError, open_counter_source
from efmoam.linux.ethtool import EthtoolNetlink
from efmoam.linux.netlink import RtnlClient
from efmoam.linux.packet import (
    MAX_FRAME,
    PACKET_IGNORE_OUTGOING,
    SOL_PACKET,
    OamSocket,
    attach_oam_filter,
)
from efmoam.views.data import flag_names, function_names
from efmoam.views.diagnosis import Facts, Listening, Speaker
from pdu.enums import OamConfig

ETH_P_ALL = 0x0003
DAEMON_RX = "dot3OamInformationRx"
_GONE = frozenset({errno.ENETDOWN, errno.ENXIO, errno.ENODEV})


class DiagnoseError(Exception):
    """The port cannot be diagnosed at all (no such port, not Ethernet)."""


def probe(ifname: str, *, socket_path: str, listen: float | None = None, runner: Runner = run_command) -> Facts:
    """Gather the facts about `ifname` in this network namespace."""
    try:
        check_ifname(ifname)
    except ActionError as exc:
        raise DiagnoseError(str(exc)) from exc
    facts = _link_facts(ifname)
    facts.daemon, facts.daemon_error = _daemon_view(socket_path, ifname)
    interval = (facts.daemon or {}).get("transmit_interval")
    seconds = listen if listen is not None else 2 * interval if isinstance(interval, int | float) else 2.0
    facts.listening = _listen(ifname, seconds, socket_path if facts.daemon else None)
    facts.counters = (facts.daemon or {}).get("counters") or _counters(ifname)
    _nft_facts(facts, runner)
    return facts


def _link_facts(ifname: str) -> Facts:
    try:
        with RtnlClient() as rtnl:
            link = rtnl.get_link(ifname)
    except OSError as exc:  # NetlinkError, or no netlink socket at all
        if exc.errno == errno.ENODEV:
            raise DiagnoseError(f"no port named {ifname} in this network namespace") from exc
        raise DiagnoseError(f"cannot read {ifname}: {exc.strerror}") from exc
    if not link.is_ethernet:
        raise DiagnoseError(f"{ifname} is not an Ethernet port (device type {link.arphrd}): OAM runs on Ethernet only")
    facts = Facts(port=ifname, admin_up=link.admin_up, carrier=link.carrier, operstate=link.operstate)
    try:
        with EthtoolNetlink() as ethtool:
            mode = ethtool.link_mode(ifname)
    except OSError as exc:  # EthtoolError, NetlinkError: no ethtool family, no driver support
        facts.link_error = f"ethtool: {exc.strerror or exc}"
    else:
        facts.speed_mbps = mode.speed_mbps
        facts.duplex = None if mode.half_duplex is None else "half" if mode.half_duplex else "full"
    return facts


def _daemon_view(socket_path: str, ifname: str) -> tuple[dict[str, Any] | None, str | None]:
    try:
        view = request(socket_path, "show_port", {"port": ifname})
    except ControlError as exc:
        return None, exc.message
    return (view, None) if isinstance(view, dict) else (None, "the daemon's answer is not a port view")


def _daemon_rx(socket_path: str | None, ifname: str) -> int | None:
    if socket_path is None:
        return None
    view, _error = _daemon_view(socket_path, ifname)
    value = ((view or {}).get("statistics") or {}).get(DAEMON_RX)
    return value if isinstance(value, int) else None


def _counters(ifname: str) -> dict[str, Any]:
    try:
        with open_counter_source("auto") as source:
            return {"source": "auto", "provides": source.provides(ifname), "error": None}
    except (CounterError, OSError) as exc:
        return {"source": "auto", "provides": {}, "error": str(exc)}


# -- listening --------------------------------------------------------------------------


def _tap(ifname: str) -> socket.socket:
    """ETH_P_ALL with the OAM filter: OAMPDUs as they arrive, before any ingress hook."""
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)  # receives nothing until bound (packet.py)
    try:
        attach_oam_filter(sock)
        sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
        sock.bind((ifname, ETH_P_ALL))
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def _listen(
    ifname: str, seconds: float, socket_path: str | None, clock: Callable[[], float] = time.monotonic
) -> Listening:
    heard = Listening(seconds=seconds)
    before = _daemon_rx(socket_path, ifname)
    try:
        tap, oam = _tap(ifname), OamSocket(ifname)
    except PermissionError:
        heard.error = "listening needs root (CAP_NET_RAW)"
        if before is not None:
            _wait_while_present(ifname, clock() + seconds, clock)
    except OSError as exc:
        if exc.errno in _GONE:
            heard.port_vanished = True
            return heard
        heard.error = f"cannot listen: {exc.strerror}"
    else:
        try:
            _collect(heard, tap, oam, clock() + seconds, clock)
        finally:
            tap.close()
            oam.close()
    after = _daemon_rx(socket_path, ifname)
    if before is not None and after is not None:
        heard.daemon_rx = max(0, after - before)
    if not heard.port_vanished:
        heard.port_vanished = not _exists(ifname)
    return heard


def _collect(heard: Listening, tap: socket.socket, oam: OamSocket, deadline: float, clock: Callable[[], float]) -> None:
    from pdu import DecodeError, Information, decode  # noqa: PLC0415 - the codec, only to listen

    speakers: dict[str, Speaker] = {}
    heard.delivered = 0
    while (left := deadline - clock()) > 0:
        readable, _, _ = select.select([tap.fileno(), oam.fileno()], [], [], left)
        if oam.fileno() in readable:
            heard.delivered += len(oam.receive(64))
            if oam.receive_errors:
                heard.port_vanished = True
                return
        if tap.fileno() not in readable:
            continue
        try:
            frame = tap.recv(MAX_FRAME)
        except OSError as exc:
            if exc.errno in _GONE:
                heard.port_vanished = True
                return
            raise
        try:
            pdu = decode(frame)
        except DecodeError:
            continue
        speaker = speakers.setdefault(pdu.src, Speaker(pdu.src))
        heard.speakers = list(speakers.values())
        speaker.frames += 1
        speaker.flags = flag_names(pdu.flags)
        code = type(pdu).__name__
        if code not in speaker.codes:
            speaker.codes.append(code)
        if isinstance(pdu, Information):
            _learn(speaker, pdu)
            speaker.informations += 1
            if heard.delivered and speaker.informations > 1:  # a transmit interval has passed
                return


def _learn(speaker: Speaker, pdu: Any) -> None:
    local = pdu.local
    if local is not None:
        speaker.mode = "active" if local.oam_config & OamConfig.ACTIVE else "passive"
        speaker.functions = function_names(local.oam_config)
        speaker.max_pdu_size = local.max_pdu_size
    speaker.echoes_us = pdu.remote is not None


def _wait_while_present(ifname: str, deadline: float, clock: Callable[[], float]) -> None:
    """While the daemon listens: sleep until `deadline`, or until the port is gone."""
    while clock() < deadline and _exists(ifname):
        time.sleep(min(0.1, max(0.0, deadline - clock())))


def _exists(ifname: str) -> bool:
    try:
        socket.if_nametoindex(ifname)
    except OSError:
        return False
    return True


# -- nftables ---------------------------------------------------------------------------


def _nft_facts(facts: Facts, runner: Runner) -> None:
    """Our tables on the port and the netdev ingress chains on it that drop OAMPDUs."""
    try:
        items = _nft_json(runner, ["nft", "-j", "list", "ruleset", "netdev"])
        tables = {item["table"]["name"] for item in items if "table" in item}
        facts.our_tables = [
            f"netdev {name}"
            for name in (block_table_name(facts.port), loopback_table_name(facts.port))
            if name in tables
        ]
        for table, chain in _dropping_chains(items):
            if _on_device(runner, table, chain, facts.port):
                facts.ingress_drops.append(f"netdev {table} {chain}")
    except (ActionError, OSError, subprocess.TimeoutExpired, KeyError, TypeError, ValueError, AttributeError) as exc:
        facts.nft_error = str(exc)


def _nft_json(runner: Runner, argv: list[str]) -> list[dict[str, Any]]:
    result = runner(argv, stdin=None, env=None, timeout=10.0)
    if result.returncode != 0:
        raise ActionError(f"`{' '.join(argv)}` exited with {result.returncode}: {(result.stderr or '').strip()}")
    text = result.stdout or ""
    items = json.loads(text).get("nftables", []) if text.strip() else []
    return [item for item in items if isinstance(item, dict)]


def _dropping_chains(items: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(table, chain) of the ingress chains whose first verdict on an OAMPDU is drop."""
    chains = [item["chain"] for item in items if item.get("chain", {}).get("hook") == "ingress"]
    found: list[tuple[str, str]] = []
    for chain in chains:
        rules = [
            item["rule"]
            for item in items
            if item.get("rule", {}).get("table") == chain["table"] and item["rule"].get("chain") == chain["name"]
        ]
        verdict = next((v for v in map(_verdict_on_oampdu, rules) if v is not None), chain.get("policy"))
        if verdict == "drop":
            found.append((chain["table"], chain["name"]))
    return found


def _verdict_on_oampdu(rule: dict[str, Any]) -> str | None:
    """accept/drop when the rule surely matches an OAMPDU, None when it does not or may not."""
    verdict = None
    for expression in rule.get("expr", []):
        match = expression.get("match")
        if match is not None:
            left = match.get("left", {}).get("payload", {})
            if (left.get("protocol"), left.get("field")) != ("ether", "type"):
                return None  # a match we do not evaluate: it may not apply to OAMPDUs
            equal = match.get("right") == 0x8809
            if equal != (match.get("op", "==") == "=="):
                return None
        for name in ("accept", "drop"):
            if name in expression:
                verdict = name
    return verdict


def _on_device(runner: Runner, table: str, chain: str, ifname: str) -> bool:
    """nft's JSON leaves the device out: read it from the chain's text."""
    result = runner(["nft", "list", "chain", "netdev", table, chain], stdin=None, env=None, timeout=10.0)
    name = re.escape(ifname)
    return bool(re.search(rf'device "?{name}"?[\s;,]|devices = \{{[^}}]*\b"?{name}"?[\s,}}]', result.stdout or ""))
