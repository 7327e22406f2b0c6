"""Why an operator's request to the peer is refused now, in the operator's words.

An operator asks a port for a remote loopback (57.2.11), a variable retrieval (57.6) or an
Organization Specific OAMPDU (57.4.3.6).  Each needs a peer that discovery accepted (the
port in SEND_ANY, 57.3.2.1); the first two are asked only by an Active port (57.2.9,
Table 57-1) of a peer that advertises the function in its OAM Configuration (57.5.2.1);
a loopback starts or stops only where the loopback status moves (`loopback.step`).

Pure: `RequestContext` is what the port is at the moment (OamPort makes it), and each function
returns the refusal, or None when the request would go ahead.  OamPort raises
LocalProtocolError with the text; the SNMP agent asks the same before a write.  The
words name no Clause 57 state: an operator reads "no peer discovered yet", not
ACTIVE_SEND_LOCAL.
"""

from __future__ import annotations

import attrs

from efmoam.core.loopback import Input, step
from efmoam.core.outputs import LoopbackStatus, OperStatus
from efmoam.core.settings import OamMode
from pdu.enums import OamConfig


@attrs.frozen
class RequestContext:
    """What a request to the peer depends on."""

    mode: OamMode
    discovered: bool  #: discovery accepted the peer (SEND_ANY)
    oper_status: OperStatus  #: RFC 4878 dot3OamOperStatus: the reason when not `discovered`
    peer_offers: OamConfig  #: the functions the peer advertises (none before it is known)
    loopback: LoopbackStatus


def _discovery_words(oper_status: OperStatus) -> str:
    """Why a port is not operational (or that it is), for an operator."""
    return _OPER_STATUS_IN_WORDS[oper_status]


def _active_discovered_refusal(context: RequestContext, what: str) -> str | None:
    """Why `what` cannot be asked of the peer now: it needs Active mode and discovery done."""
    if context.mode is not OamMode.ACTIVE:
        return f"{what} is asked by an Active port only, and this port is Passive"
    if not context.discovered:
        return _discovery_words(context.oper_status)
    return None


def variables_refusal(context: RequestContext) -> str | None:
    """Why a Variable Request would be refused now."""
    refusal = _active_discovered_refusal(context, "variable request")
    if refusal is None and not _offers(context, OamConfig.VARIABLE_RETRIEVAL):
        return "the peer does not offer variable retrieval (its OAM configuration leaves it out)"
    return refusal


def org_specific_refusal(context: RequestContext) -> str | None:
    """Why an Organization Specific OAMPDU would be refused now (either mode may send one)."""
    if not context.discovered:
        return f"organization specific OAMPDUs wait for discovery: {_discovery_words(context.oper_status)}"
    return None


def loopback_refusal(context: RequestContext, start: bool) -> str | None:
    """Why starting (`start`) or stopping our remote loopback would be refused now."""
    if not start:
        if step(context.loopback, Input.STOP) is None:
            return f"no loopback of ours to stop: {_LOOPBACK_IN_WORDS[context.loopback]}"
        return None
    refusal = _active_discovered_refusal(context, "remote loopback")
    if refusal is not None:
        return refusal
    if not _offers(context, OamConfig.REMOTE_LOOPBACK):
        return "the peer does not offer remote loopback (its OAM configuration leaves it out)"
    if step(context.loopback, Input.START) is None:
        return _LOOPBACK_IN_WORDS[context.loopback]
    return None


def _offers(context: RequestContext, function: OamConfig) -> bool:
    return bool(context.peer_offers & function)


#: why a request that needs a discovered peer waits, by the operational status
_OPER_STATUS_IN_WORDS = {
    OperStatus.DISABLED: "OAM is administratively disabled on this port",
    OperStatus.LINK_FAULT: "the link is down (or has a fault)",
    OperStatus.NON_OPER_HALF_DUPLEX: "the link is half duplex, and OAM runs on full-duplex links only",
    OperStatus.PASSIVE_WAIT: "no peer discovered yet (a Passive port waits for an Active peer)",
    OperStatus.ACTIVE_SEND_LOCAL: "no peer discovered yet",
    OperStatus.SEND_LOCAL_AND_REMOTE: "discovery is not complete: the peer's OAM configuration is being evaluated",
    OperStatus.SEND_LOCAL_AND_REMOTE_OK: "discovery is not complete: the peer has not accepted this port yet",
    OperStatus.OAM_PEERING_LOCALLY_REJECTED: "this port rejects the peer's OAM configuration (see show port)",
    OperStatus.OAM_PEERING_REMOTELY_REJECTED: "the peer rejects this port's OAM configuration (see show port)",
    OperStatus.OPERATIONAL: "discovery is complete",
}
#: why loopback cannot start (or stop) now, by the loopback status
_LOOPBACK_IN_WORDS = {
    LoopbackStatus.NO_LOOPBACK: "no loopback is running",
    LoopbackStatus.INITIATING_LOOPBACK: "a loopback request to the peer is already under way",
    LoopbackStatus.REMOTE_LOOPBACK: "the peer already loops this port's frames back",
    LoopbackStatus.TERMINATING_LOOPBACK: "the last loopback is still ending",
    LoopbackStatus.LOCAL_LOOPBACK: "this port loops the peer's frames back (the peer's loopback: the peer ends it)",
    LoopbackStatus.UNKNOWN: "the loopback status is unknown",
}
assert set(_OPER_STATUS_IN_WORDS) == set(OperStatus), "every operational status in words"
assert set(_LOOPBACK_IN_WORDS) == set(LoopbackStatus), "every loopback status in words"
