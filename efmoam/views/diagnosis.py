"""``efmoam diagnose PORT``: facts about one port turned into findings and advice.

Design choices.  The probe (efmoam/linux/diagnose.py) only gathers `Facts`; everything
that judges them is here, pure and standard library only, so each rule is unit-tested
without root.  A finding is a ``problem`` (exit status 1) or a ``note``; each problem
carries what to check next in plain words.  The daemon's view of the port (``show port``'s
JSON) is used as it is: its oper_status already says which side rejected the peering
(RFC 4878 oamPeeringLocally/RemotelyRejected), so discovery is judged from it and from
the Information OAMPDUs heard while listening.  Two listeners tell where OAMPDUs are
lost: a tap (ETH_P_ALL, before the ingress hooks) and an ordinary OAM socket (after
them); frames the tap saw and the socket did not were dropped at ingress.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

SCHEMA = 1
OAM_TRAP = "01:80:c2:00:00:02 / EtherType 0x8809"
#: discovery states in which a port is still looking for (or rejecting) its peer
_STUCK_STATES = ("FAULT", "ACTIVE_SEND_LOCAL", "PASSIVE_WAIT", "SEND_LOCAL_REMOTE", "SEND_LOCAL_REMOTE_OK")


@dataclass
class Speaker:
    """One source MAC heard while listening, and what its OAMPDUs said."""

    mac: str
    frames: int = 0
    codes: list[str] = field(default_factory=list)  #: code names, in the order first seen
    flags: list[str] = field(default_factory=list)  #: flag names of its last OAMPDU
    mode: str | None = None  #: "active"/"passive", from its Local Information TLV
    functions: list[str] = field(default_factory=list)  #: its Local TLV's OAM Configuration
    max_pdu_size: int | None = None
    echoes_us: bool = False  #: it sent a Remote Information TLV (it has heard a peer)
    informations: int = 0  #: Information OAMPDUs among `frames`


@dataclass
class Listening:
    """What the listeners heard in `seconds`."""

    seconds: float
    speakers: list[Speaker] = field(default_factory=list)  #: seen by the tap (before ingress)
    delivered: int | None = None  #: OAMPDUs the OAM socket got (after ingress); None: no socket
    daemon_rx: int | None = None  #: the daemon's Information OAMPDUs received meanwhile
    port_vanished: bool = False  #: the port went away while listening
    error: str | None = None  #: why we could not listen (not root, ...)


@dataclass
class Facts:
    """Everything the probe found out about one port."""

    port: str
    admin_up: bool
    carrier: bool
    operstate: str
    speed_mbps: int | None = None
    duplex: str | None = None  #: "full", "half" or None (unknown)
    link_error: str | None = None
    listening: Listening | None = None
    counters: dict[str, Any] | None = None  #: {"source", "provides", "error"}
    our_tables: list[str] = field(default_factory=list)  #: efmoam's nftables tables on the port
    ingress_drops: list[str] = field(default_factory=list)  #: "netdev TABLE CHAIN" chains dropping OAMPDUs
    nft_error: str | None = None
    daemon: dict[str, Any] | None = None  #: the daemon's show_port view
    daemon_error: str | None = None  #: why there is no view


@dataclass(frozen=True)
class Finding:
    severity: Literal["problem", "note"]
    code: str
    message: str
    advice: str | None = None


def analyse(facts: Facts) -> list[Finding]:
    """The findings about `facts`, problems first in the order to fix them."""
    findings = _link(facts) + _arrival(facts) + _discovery(facts) + _notes(facts)
    return sorted(findings, key=lambda finding: finding.severity != "problem")


def has_problem(findings: list[Finding]) -> bool:
    return any(finding.severity == "problem" for finding in findings)


def _link(facts: Facts) -> list[Finding]:
    port = facts.port
    if not facts.admin_up:
        return [
            Finding("problem", "admin_down", f"{port} is administratively down", f"bring it up: ip link set {port} up")
        ]
    if not facts.carrier:
        return [
            Finding(
                "problem",
                "no_carrier",
                f"{port} has no carrier (operstate {facts.operstate})",
                "check the cable or transceiver and that the port at the other end is up",
            )
        ]
    if facts.duplex == "half":
        return [
            Finding(
                "problem",
                "half_duplex",
                f"{port} runs half duplex: OAM works on full-duplex links only",
                "set full duplex on both ends (autonegotiation or ethtool -s PORT duplex full)",
            )
        ]
    return []


def _arrival(facts: Facts) -> list[Finding]:
    heard = facts.listening
    port, drops = facts.port, ", ".join(facts.ingress_drops)
    findings: list[Finding] = []
    if drops:
        findings.append(
            Finding(
                "problem",
                "ingress_drop",
                f"an nftables ingress rule on {port} drops OAMPDUs: {drops}",
                f"remove the rule or accept {OAM_TRAP} before it",
            )
        )
    if heard is not None and heard.port_vanished:
        return [
            *findings,
            Finding(
                "problem",
                "port_vanished",
                f"{port} went away while listening",
                "check whether the device was removed, renamed or moved to another namespace",
            ),
        ]
    if heard is None or (heard.error is not None and heard.daemon_rx is None):
        if heard is not None:
            findings.append(Finding("note", "not_listened", f"could not listen on {port}: {heard.error}"))
        return findings
    tapped = bool(heard.speakers)
    if tapped and heard.delivered == 0 and not drops:
        findings.append(
            Finding(
                "problem",
                "dropped_after_tap",
                f"OAMPDUs reached {port} but not the OAM socket in {heard.seconds:g} s",
                f"an ingress filter drops them: see tc filter show dev {port} ingress, and nft list ruleset",
            )
        )
    if not tapped and not heard.daemon_rx:
        findings.append(
            Finding(
                "problem",
                "no_oampdu",
                f"no OAMPDU arrived on {port} in {heard.seconds:g} s",
                f"check that OAM is enabled on the peer; on a switch ASIC (white box, DSA, switchdev), "
                f"add a trap rule for {OAM_TRAP} to the CPU, as for LACP",
            )
        )
    if len(heard.speakers) > 1:
        macs = ", ".join(speaker.mac for speaker in heard.speakers)
        findings.append(
            Finding(
                "problem",
                "several_speakers",
                f"more than one OAM speaker on {port}: {macs}",
                "OAM is point to point: a switch or hub in between forwards OAMPDUs it should stop",
            )
        )
    return findings


def _discovery(facts: Facts) -> list[Finding]:
    view, port = facts.daemon, facts.port
    heard = facts.listening.speakers if facts.listening is not None else []
    peer = (view or {}).get("peer") or {}
    peer_mode = peer.get("mode") or next((s.mode for s in heard if s.mode), None)
    our_mode = view.get("mode") if view else None
    silent = facts.listening is not None and not heard and not facts.listening.daemon_rx
    if our_mode == "passive" and (peer_mode == "passive" or (peer_mode is None and silent)):
        known = "" if peer_mode == "passive" else " (no OAMPDU arrived: unless they are lost on the way)"
        return [
            Finding(
                "problem",
                "both_passive",
                f"both sides are passive{known}: {port} and its peer wait for each other",
                "one side must be active (mode: active): a passive port never starts discovery",
            )
        ]
    if view is None:
        return []
    state, status = view.get("discovery_state"), view.get("oper_status")
    if status == "oamPeeringLocallyRejected":
        return [
            Finding(
                "problem",
                "rejected_here",
                f"{port} refuses its peer (our peer_policy){_lacks('the peer', peer, view)}",
                f"the peer advertises {_capabilities(peer)}; compare with peer_policy "
                "(required_functions, required_mode) in our configuration, or enable them on the peer",
            )
        ]
    if status == "oamPeeringRemotelyRejected":
        return [
            Finding(
                "problem",
                "rejected_by_peer",
                f"the peer of {port} refuses us{_lacks('we', view, peer)}",
                f"we advertise {_capabilities(view)}; check the peer's policy (required functions or mode) "
                "and enable on our side what it requires",
            )
        ]
    findings: list[Finding] = []
    if state in _STUCK_STATES and view.get("admin_state") == "enabled":
        where = (
            "waiting for the peer's first Information OAMPDU"
            if not peer
            else (
                "the peer has not confirmed our configuration yet"
                if state == "SEND_LOCAL_REMOTE_OK"
                else "we have not accepted the peer's configuration yet"
            )
        )
        findings.append(
            Finding(
                "problem",
                "discovery_stuck",
                f"discovery on {port} is in {state}: {where}",
                "see the other findings; run efmoam diagnose on the peer too",
            )
        )
    ours, theirs = view.get("max_pdu_size"), peer.get("max_pdu_size")
    if ours and theirs and ours != theirs:
        findings.append(
            Finding(
                "note",
                "max_pdu_size",
                f"max PDU size differs: ours {ours}, the peer's {theirs}; both send at most {min(ours, theirs)} octets",
            )
        )
    return findings


def _lacks(who: str, side: dict[str, Any], other: dict[str, Any]) -> str:
    """ ", which lacks F, G (the other side has them)": the likely cause of a refusal."""
    missing = [f for f in other.get("functions_supported") or [] if f not in (side.get("functions_supported") or [])]
    if not missing:
        return ""
    return f": {who} lack{'s' if who != 'we' else ''} {', '.join(missing)}, which the other side has"


def _capabilities(side: dict[str, Any]) -> str:
    functions = ", ".join(side.get("functions_supported") or []) or "no optional function"
    return f"mode {side.get('mode')}, {functions}, max PDU {side.get('max_pdu_size')}"


def _notes(facts: Facts) -> list[Finding]:
    notes: list[Finding] = []
    if facts.daemon_error:
        notes.append(Finding("note", "no_daemon_view", f"the daemon's view: {facts.daemon_error}"))
    counters = facts.counters or {}
    if counters.get("error"):
        notes.append(
            Finding(
                "problem",
                "counters",
                f"counter source {counters.get('source')}: {counters['error']}",
                "link monitoring needs its counters: see counter_source in the configuration",
            )
        )
    elif counters and not counters.get("provides"):
        notes.append(
            Finding(
                "note",
                "no_counters",
                f"counter source {counters.get('source')} provides no counter "
                f"for {facts.port}: link monitoring cannot count errors there",
            )
        )
    if facts.nft_error:
        notes.append(Finding("note", "nft", f"nftables not read: {facts.nft_error}"))
    return notes


# -- output ---------------------------------------------------------------------------


def as_json(facts: Facts, findings: list[Finding]) -> str:
    document = {
        "schema": SCHEMA,
        "port": facts.port,
        "ok": not has_problem(findings),
        "facts": {key: value for key, value in asdict(facts).items() if key != "daemon"},
        "daemon": _daemon_summary(facts.daemon),
        "findings": [asdict(finding) for finding in findings],
    }
    return json.dumps(document, indent=2)


def _daemon_summary(view: dict[str, Any] | None) -> dict[str, Any] | None:
    if view is None:
        return None
    keys = ("oper_status", "discovery_state", "mode", "max_pdu_size", "functions_supported", "local_flags", "peer")
    return {key: view.get(key) for key in keys}


def as_text(facts: Facts, findings: list[Finding]) -> str:
    lines = [f"{facts.port}: {'problems found' if has_problem(findings) else 'ok'}"]
    speed = f"{facts.speed_mbps} Mb/s" if facts.speed_mbps else "speed unknown"
    link = "up" if facts.admin_up else "down"
    lines.append(
        f"  link: {link}, carrier {'yes' if facts.carrier else 'no'}, {speed}, "
        f"{facts.duplex or 'duplex unknown'} duplex"
    )
    heard = facts.listening
    if heard is not None:
        lines.append(f"  listened {heard.seconds:g} s: " + _heard_text(heard))
        lines += [
            f"    {s.mac}: {s.frames} frame(s), {', '.join(s.codes)}; flags {','.join(s.flags) or '-'}"
            + (f"; {s.mode}" if s.mode else "")
            for s in heard.speakers
        ]
    counters = facts.counters
    if counters is not None:
        provided = ", ".join(sorted(counters.get("provides") or {})) or "none"
        lines.append(f"  counters: {counters.get('source')} ({provided})")
    lines.append(f"  nftables tables of ours: {', '.join(facts.our_tables) or 'none'}")
    view = facts.daemon
    if view is not None:
        peer = view.get("peer") or {}
        lines.append(
            f"  daemon: {view.get('oper_status')} ({view.get('discovery_state')}), mode {view.get('mode')}, "
            f"flags {','.join(view.get('local_flags') or []) or '-'}"
        )
        if peer:
            lines.append(
                f"  peer: {peer.get('mac_address')}, {_capabilities(peer)}, "
                f"flags {','.join(peer.get('flags') or []) or '-'}"
            )
    for finding in findings:
        lines.append(f"{finding.severity}: {finding.message}")
        if finding.advice:
            lines.append(f"  next: {finding.advice}")
    return "\n".join(lines)


def _heard_text(heard: Listening) -> str:
    parts = [f"{len(heard.speakers)} speaker(s) on the wire"]
    if heard.delivered is not None:
        parts.append(f"{heard.delivered} OAMPDU(s) past ingress")
    if heard.daemon_rx is not None:
        parts.append(f"the daemon received {heard.daemon_rx} Information OAMPDU(s)")
    if heard.error:
        parts.append(heard.error)
    return "; ".join(parts)
