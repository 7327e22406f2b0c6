"""OAM remote loopback (Clause 57.2.11), as a table.

Theory of operation
-------------------
The initiator (an Active port in SEND_ANY, towards a peer that advertises remote
loopback) sends a Loopback Control OAMPDU with the Enable command and discards what it
receives and what it would send from its client (INITIATING).  The peer obeys: its
parser loops every non-OAMPDU frame back and its multiplexer discards its client's
frames (LOCAL), and says so in the State field of its Local Information TLV.  Seeing
that, the initiator sends its client's frames again and counts what comes back
(REMOTE).  Disable reverses it (TERMINATING, then no loopback once the peer's State
field shows it forwards again).  57.2.11 leaves two things to the implementation, and
these are our choices:

* A command whose confirmation does not come within ``loopback_timeout`` is abandoned
  (INITIATING and TERMINATING expire to no loopback).
* Both sides asking at once: the port with the higher MAC address obeys, the other one
  ignores the peer's command (and is obeyed in turn).

Loopback lives in SEND_ANY only: leaving it ends loopback, whatever its state.  The
status is RFC 4878 dot3OamLoopbackStatus; `ACTIONS` gives the parser and multiplexer
actions of each status (57.3.1.3: ``local_par_action``, ``local_mux_action``).
"""

from __future__ import annotations

import enum
from collections.abc import Callable

import attrs

from efmoam.core.outputs import LoopbackChanged, LoopbackStatus
from pdu.enums import MuxAction, ParserAction


class Input(enum.Enum):
    """What can move loopback, with the cause reported for it."""

    START = "start"  #: our operator asked for loopback of the peer
    STOP = "stop"  #: our operator asked to end it
    PEER_ENABLE = "peer_enable"  #: Loopback Control OAMPDU, Enable
    PEER_DISABLE = "peer_disable"  #: Loopback Control OAMPDU, Disable
    PEER_LOOPING = "peer_looping"  #: the peer's State field: its parser loops back
    PEER_FORWARDING = "peer_forwarding"  #: the peer's State field: its parser does not loop back
    TIMEOUT = "timeout"  #: no confirmation within loopback_timeout
    LEFT_SEND_ANY = "discovery"  #: Discovery left SEND_ANY
    FAULT = "fault"  #: Discovery entered FAULT


#: the cause a `LoopbackChanged` reports for each input
CAUSE = {
    Input.START: "start",
    Input.STOP: "stop",
    Input.PEER_ENABLE: "peer",
    Input.PEER_DISABLE: "peer",
    Input.PEER_LOOPING: "peer",
    Input.PEER_FORWARDING: "peer",
    Input.TIMEOUT: "timeout",
    Input.LEFT_SEND_ANY: "discovery",
    Input.FAULT: "fault",
}


@attrs.frozen
class Conditions:
    """What the guards read."""

    peer_mac_higher: bool = False  #: the peer's MAC address is above ours


Guard = Callable[[Conditions], bool]


def always(_c: Conditions) -> bool:
    return True


def we_obey(c: Conditions) -> bool:
    """Both asked at once: the port with the higher MAC obeys."""
    return not c.peer_mac_higher


L = LoopbackStatus
_LOOPING = (L.INITIATING_LOOPBACK, L.REMOTE_LOOPBACK, L.TERMINATING_LOOPBACK, L.LOCAL_LOOPBACK)

#: (from status, input, guard, to status); the first matching row wins; an input no row
#: matches changes nothing
TRANSITIONS: tuple[tuple[LoopbackStatus, Input, Guard, LoopbackStatus], ...] = (
    (L.NO_LOOPBACK, Input.START, always, L.INITIATING_LOOPBACK),
    (L.INITIATING_LOOPBACK, Input.STOP, always, L.TERMINATING_LOOPBACK),
    (L.REMOTE_LOOPBACK, Input.STOP, always, L.TERMINATING_LOOPBACK),
    (L.INITIATING_LOOPBACK, Input.PEER_LOOPING, always, L.REMOTE_LOOPBACK),
    (L.REMOTE_LOOPBACK, Input.PEER_FORWARDING, always, L.NO_LOOPBACK),  # the peer stopped by itself
    (L.TERMINATING_LOOPBACK, Input.PEER_FORWARDING, always, L.NO_LOOPBACK),
    (L.INITIATING_LOOPBACK, Input.TIMEOUT, always, L.NO_LOOPBACK),
    (L.TERMINATING_LOOPBACK, Input.TIMEOUT, always, L.NO_LOOPBACK),
    (L.NO_LOOPBACK, Input.PEER_ENABLE, always, L.LOCAL_LOOPBACK),
    (L.INITIATING_LOOPBACK, Input.PEER_ENABLE, we_obey, L.LOCAL_LOOPBACK),
    (L.REMOTE_LOOPBACK, Input.PEER_ENABLE, always, L.LOCAL_LOOPBACK),
    (L.TERMINATING_LOOPBACK, Input.PEER_ENABLE, always, L.LOCAL_LOOPBACK),
    (L.LOCAL_LOOPBACK, Input.PEER_DISABLE, always, L.NO_LOOPBACK),
    *((status, Input.LEFT_SEND_ANY, always, L.NO_LOOPBACK) for status in _LOOPING),
    *((status, Input.FAULT, always, L.NO_LOOPBACK) for status in _LOOPING),
)
_ROWS: dict[tuple[LoopbackStatus, Input], list[tuple[Guard, LoopbackStatus]]] = {}
for _source, _input, _guard, _target in TRANSITIONS:
    _ROWS.setdefault((_source, _input), []).append((_guard, _target))

#: the parser and multiplexer actions of each status
ACTIONS: dict[LoopbackStatus, tuple[ParserAction, MuxAction]] = {
    L.NO_LOOPBACK: (ParserAction.FORWARD, MuxAction.FORWARD),
    L.INITIATING_LOOPBACK: (ParserAction.DISCARD, MuxAction.DISCARD),
    L.REMOTE_LOOPBACK: (ParserAction.DISCARD, MuxAction.FORWARD),
    L.TERMINATING_LOOPBACK: (ParserAction.DISCARD, MuxAction.DISCARD),
    L.LOCAL_LOOPBACK: (ParserAction.LOOPBACK, MuxAction.DISCARD),
}
#: the statuses that wait for the peer's confirmation, and so expire
WAITING = frozenset({L.INITIATING_LOOPBACK, L.TERMINATING_LOOPBACK})


NO_CONDITIONS = Conditions()


def step(status: LoopbackStatus, event: Input, conditions: Conditions = NO_CONDITIONS) -> LoopbackStatus | None:
    """The status `event` moves `status` to, or None when it changes nothing."""
    for guard, target in _ROWS.get((status, event), ()):
        if guard(conditions):
            return target
    return None


class Loopback:
    """The loopback status of a port and its confirmation deadline."""

    def __init__(self) -> None:
        self.status = L.NO_LOOPBACK
        self.deadline: float | None = None  #: when a waiting command expires

    @property
    def actions(self) -> tuple[ParserAction, MuxAction]:
        return ACTIONS[self.status]

    def handle(
        self, event: Input, *, now: float, timeout: float, conditions: Conditions = NO_CONDITIONS
    ) -> LoopbackChanged | None:
        """Apply `event`; returns the change to report and apply, if any."""
        target = step(self.status, event, conditions)
        if target is None:
            return None
        self.status = target
        self.deadline = now + timeout if target in WAITING else None
        parser, mux = ACTIONS[target]
        return LoopbackChanged(target, parser, mux, CAUSE[event])
