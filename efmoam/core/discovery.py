"""The Discovery state machine of Clause 57.3.2.1 (Figure 57-5), as a table.

Theory of operation
-------------------
Discovery decides when two OAM entities may exchange every kind of OAMPDU.  Each side
advertises its configuration in the Local Information TLV; the peer echoes it back in a
Remote Information TLV and says with its Local Stable flag whether it is satisfied.

* ``local_pdu`` (57.3.1.3) follows from the state: in FAULT only Link Fault Information
  OAMPDUs (or nothing) go out; ACTIVE_SEND_LOCAL and the SEND_LOCAL_REMOTE states send
  Information OAMPDUs only; PASSIVE_WAIT sends nothing; SEND_ANY sends any OAMPDU.
  Receive filtering uses the same variable (57.3.2.2): outside SEND_ANY only Information
  OAMPDUs are accepted.
* ``remote_state_valid`` is set by the first Local Information TLV received from the
  peer; ``local_satisfied`` is the OAM client's verdict on that TLV (57.3.2.1.5);
  ``remote_stable`` says the peer is satisfied with our current information.
* The global conditions (BEGIN, link FAIL, lost-link timer done) force FAULT from any
  state; entering FAULT forgets everything learnt from the peer.

`step` applies the global condition and then the first matching row until nothing
changes (a fixed point), so one input can move the machine through several states, as
the standard's figure does between two events.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

import attrs


class DiscoveryState(enum.Enum):
    """The six states of Figure 57-5."""

    FAULT = "FAULT"
    ACTIVE_SEND_LOCAL = "ACTIVE_SEND_LOCAL"
    PASSIVE_WAIT = "PASSIVE_WAIT"
    SEND_LOCAL_REMOTE = "SEND_LOCAL_REMOTE"
    SEND_LOCAL_REMOTE_OK = "SEND_LOCAL_REMOTE_OK"
    SEND_ANY = "SEND_ANY"


class LocalPdu(enum.Enum):
    """``local_pdu``: which OAMPDUs may be sent and received (57.3.1.3)."""

    LF_INFO = "LF_INFO"  #: Information OAMPDUs with Link Fault set and no TLVs
    RX_INFO = "RX_INFO"  #: send nothing, receive Information OAMPDUs
    INFO = "INFO"  #: send and receive Information OAMPDUs only
    ANY = "ANY"  #: any OAMPDU


@attrs.frozen
class Conditions:
    """The variables the machine reads, sampled by the port before each step."""

    begin: bool = False  #: reset or OAM administratively disabled
    link_ok: bool = True  #: local_link_status = OK
    lost_link: bool = False  #: local_lost_link_timer_done
    active: bool = True  #: local_oam_mode = ACTIVE
    remote_state_valid: bool = False
    local_satisfied: bool = False
    remote_stable: bool = False


Guard = Callable[[Conditions], bool]


def link_ok_active(c: Conditions) -> bool:
    return c.link_ok and c.active


def link_ok_passive(c: Conditions) -> bool:
    return c.link_ok and not c.active


def remote_state_valid(c: Conditions) -> bool:
    return c.remote_state_valid


def local_satisfied(c: Conditions) -> bool:
    return c.local_satisfied


def local_unsatisfied(c: Conditions) -> bool:
    return not c.local_satisfied


def satisfied_and_remote_stable(c: Conditions) -> bool:
    return c.local_satisfied and c.remote_stable


def remote_unstable(c: Conditions) -> bool:
    return not c.remote_stable


def must_fault(c: Conditions) -> bool:
    """The global transition into FAULT, checked before every row."""
    return c.begin or c.lost_link or not c.link_ok


S = DiscoveryState

#: (from state, guard, to state); within a state the first matching row wins.
TRANSITIONS: tuple[tuple[DiscoveryState, Guard, DiscoveryState], ...] = (
    (S.FAULT, link_ok_active, S.ACTIVE_SEND_LOCAL),
    (S.FAULT, link_ok_passive, S.PASSIVE_WAIT),
    (S.ACTIVE_SEND_LOCAL, remote_state_valid, S.SEND_LOCAL_REMOTE),
    (S.PASSIVE_WAIT, remote_state_valid, S.SEND_LOCAL_REMOTE),
    (S.SEND_LOCAL_REMOTE, local_satisfied, S.SEND_LOCAL_REMOTE_OK),
    (S.SEND_LOCAL_REMOTE_OK, local_unsatisfied, S.SEND_LOCAL_REMOTE),
    (S.SEND_LOCAL_REMOTE_OK, satisfied_and_remote_stable, S.SEND_ANY),
    (S.SEND_ANY, local_unsatisfied, S.SEND_LOCAL_REMOTE),
    (S.SEND_ANY, remote_unstable, S.SEND_LOCAL_REMOTE_OK),
)

_ROWS: dict[DiscoveryState, list[tuple[Guard, DiscoveryState]]] = {state: [] for state in S}
for _source, _guard, _target in TRANSITIONS:
    _ROWS[_source].append((_guard, _target))


def step(state: DiscoveryState, c: Conditions) -> list[DiscoveryState]:
    """The states entered from `state` under `c`, in order (empty if none).

    The global condition is checked first: it enters FAULT (unless already there) and,
    with the link up, the machine carries on from FAULT with everything learnt from the
    peer forgotten, as FAULT's entry actions do.
    """
    entered: list[DiscoveryState] = []
    if must_fault(c):
        if state is not S.FAULT or c.lost_link:
            entered.append(S.FAULT)
        state = S.FAULT
        if c.begin or not c.link_ok:
            return entered
        c = attrs.evolve(c, lost_link=False, remote_state_valid=False, local_satisfied=False, remote_stable=False)
    for _ in range(len(S)):  # a fixed point is reached in fewer steps than there are states
        for guard, target in _ROWS[state]:
            if guard(c):
                state = target
                entered.append(state)
                break
        else:
            return entered
    raise AssertionError("discovery table does not reach a fixed point")


def local_pdu(state: DiscoveryState, link_ok: bool, unidirectional: bool) -> LocalPdu:
    """``local_pdu`` set on entry to `state` (57.3.2.1, Figure 57-5)."""
    if state is S.FAULT:
        return LocalPdu.LF_INFO if not link_ok and unidirectional else LocalPdu.RX_INFO
    if state is S.PASSIVE_WAIT:
        return LocalPdu.RX_INFO
    return LocalPdu.ANY if state is S.SEND_ANY else LocalPdu.INFO


def local_stable(state: DiscoveryState) -> bool:
    """``local_stable`` on entry to `state`: the Local Stable flag."""
    return state in (S.SEND_LOCAL_REMOTE_OK, S.SEND_ANY)
