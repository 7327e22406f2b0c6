"""The operator's action policy: which events act, how, and how ports recover.

The events beyond link monitoring's own (`EVENTS`, one row each), the actions an event
may take (`Action`), and what one port rule configures (`PolicySettings`).  Defaults: every
event only logs, except a loop, which error-disables the port (a forwarding loop melts a
network; the vendors err-disable on it too).  Vendor terms are in the table so that the
README, ``show`` and the config loader all read them from here.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

import attrs


class Action(enum.Enum):
    """What an event does while it lasts (or, latched, until it is cleared or recovers)."""

    LOG = "log"  #: log, stream and count it; nothing else (every event is logged anyway)
    BLOCK = "block"  #: out of service with the port's action backend while the event lasts
    ERROR_DISABLE = "error-disable"  #: out of service with the backend, latched
    DOWN = "down"  #: administratively down, latched
    EXEC = "exec"  #: run the port's action_command when the event starts and ends
    NOTIFY_PEER = "notify-peer"  #: set Critical Event in our Information OAMPDUs while it lasts


#: actions that keep the port out of service after their event ended
LATCHING = frozenset({Action.ERROR_DISABLE, Action.DOWN})
#: actions that take the port out of service
HOLDING = frozenset({Action.BLOCK, Action.ERROR_DISABLE, Action.DOWN})


class EventName(enum.Enum):
    """The session events the policy detects (link monitoring's events are its own)."""

    SESSION_DOWN = "session_down"
    SESSION_UP = "session_up"
    CAPABILITIES_CONFLICT = "capabilities_conflict"
    UNIDIRECTIONAL = "unidirectional"
    LOOP = "loop"
    WIRING_CONFLICT = "wiring_conflict"
    REMOTE_LOOPBACK = "remote_loopback"


@attrs.frozen
class EventFacts:
    """What is known of one kind of event, for every part that names or describes it."""

    name: EventName
    moment: bool  #: an instant (session_up), not a condition that lasts: it can only log or exec
    default: frozenset[Action]
    summary: str  #: one line for the README and ``show``
    vendor_terms: str  #: what Cisco, Juniper, Huawei and others call it


_LOG = frozenset({Action.LOG})
EVENTS: tuple[EventFacts, ...] = (
    EventFacts(
        EventName.SESSION_DOWN,
        False,
        _LOG,
        "the OAM session ended (lost peer, link down, the peer's change) or discovery did not "
        "complete within discovery_timeout; lasts until discovery completes",
        "IOS XR session-down, discovery-timeout; Junos link-adjacency-loss, protocol-down; Comware connection-expired",
    ),
    EventFacts(
        EventName.SESSION_UP,
        True,
        _LOG,
        "discovery completed (SEND_ANY)",
        "IOS XR session-up",
    ),
    EventFacts(
        EventName.CAPABILITIES_CONFLICT,
        False,
        _LOG,
        "the peer does not meet peer_policy (functions, mode or version): discovery cannot complete",
        "IOS XR capabilities-conflict",
    ),
    EventFacts(
        EventName.UNIDIRECTIONAL,
        False,
        _LOG,
        "we hear the peer but it does not hear us: no Remote Information TLV for unidirectional_time",
        "IOS XR uni-directional link-fault; Alaxala/Extreme unidirectional link detection; "
        "DISA STIG unidirectional link shutdown",
    ),
    EventFacts(
        EventName.LOOP,
        False,
        frozenset({Action.ERROR_DISABLE}),
        "our own OAMPDUs come back (a loop); lasts until none came for the lost-link time",
        "Nokia loop-detected; err-disable on loop (Cisco, Huawei)",
    ),
    EventFacts(
        EventName.WIRING_CONFLICT,
        False,
        _LOG,
        "the peer's Remote Information TLV describes a configuration that is not ours, for longer "
        "than a transmit interval",
        "IOS XR wiring-conflict",
    ),
    EventFacts(
        EventName.REMOTE_LOOPBACK,
        False,
        _LOG,
        "the peer put this port into remote loopback: data frames are looped, not forwarded",
        "IOS XR remote-loopback",
    ),
)
FACTS: dict[EventName, EventFacts] = {facts.name: facts for facts in EVENTS}
assert list(FACTS) == list(EventName), "one row per event, in order"


def _check_actions(_inst: Any, attribute: Any, value: frozenset[Action]) -> None:
    facts = FACTS[EventName(attribute.name)]
    if not value:
        raise ValueError(f"{attribute.name} needs at least one action (log)")
    if facts.moment and value - {Action.LOG, Action.EXEC}:
        raise ValueError(f"{attribute.name} is a moment, not a lasting condition: its actions are log and exec")


def _actions(name: EventName) -> Any:
    return attrs.field(default=FACTS[name].default, validator=_check_actions)


@attrs.frozen
class EventActions:
    """The actions of each event (``event_actions``)."""

    session_down: frozenset[Action] = _actions(EventName.SESSION_DOWN)
    session_up: frozenset[Action] = _actions(EventName.SESSION_UP)
    capabilities_conflict: frozenset[Action] = _actions(EventName.CAPABILITIES_CONFLICT)
    unidirectional: frozenset[Action] = _actions(EventName.UNIDIRECTIONAL)
    loop: frozenset[Action] = _actions(EventName.LOOP)
    wiring_conflict: frozenset[Action] = _actions(EventName.WIRING_CONFLICT)
    remote_loopback: frozenset[Action] = _actions(EventName.REMOTE_LOOPBACK)

    def of(self, name: EventName) -> frozenset[Action]:
        value: frozenset[Action] = getattr(self, name.value)
        return value


assert [a.name for a in attrs.fields(EventActions)] == [e.value for e in EventName]


def _optional_between(low: float, high: float) -> Callable[[Any, Any, float | None], None]:
    def check(_inst: Any, attribute: Any, value: float | None) -> None:
        if value is not None and not low <= value <= high:
            raise ValueError(f"{attribute.name} must be between {low:g} and {high:g} seconds, not {value:g}")

    return check


@attrs.frozen
class Recovery:
    """Automatic recovery of latched ports (``recovery``), with flap damping."""

    #: seconds after which a latched port returns to service by itself; None: by hand only
    auto_after: float | None = attrs.field(default=None, validator=_optional_between(30.0, 86400.0))
    #: a port that latches again within this many seconds of an automatic recovery stays
    #: out of service until it is cleared by hand
    hold_down: float = attrs.field(default=300.0, validator=_optional_between(0.0, 86400.0))


class TrackKind(enum.Enum):
    INTERFACE = "interface"  #: true while the interface is not up (or does not exist)
    UNIT = "unit"  #: true while the systemd unit is not active
    COMMAND = "command"  #: true while the command's last run failed (exit status not 0)


@attrs.frozen
class Track:
    """A condition that, while true, sends Critical Event to the peer and logs a local critical
    link event (``track``).  Its `name` keys it (``interface:eth1`` unless given)."""

    kind: TrackKind
    target: str | tuple[str, ...]  #: an interface or unit name, or a command's argument list
    interval: float = attrs.field(default=5.0, validator=_optional_between(0.5, 3600.0))
    name: str = ""

    def __attrs_post_init__(self) -> None:
        if not self.name:
            shown = " ".join(self.target) if isinstance(self.target, tuple) else self.target
            object.__setattr__(self, "name", f"{self.kind.value}:{shown}")


def _unique_tracks(_inst: Any, _attribute: Any, value: tuple[Track, ...]) -> None:
    names = [track.name for track in value]
    for name in names:
        if names.count(name) > 1:
            raise ValueError(f"two tracked conditions are named {name!r}: give one a name")


@attrs.frozen
class PolicySettings:
    """The action policy of one port."""

    event_actions: EventActions = EventActions()
    #: seconds after the link came up within which discovery must complete (None: never a timeout)
    discovery_timeout: float | None = attrs.field(default=None, validator=_optional_between(1.0, 86400.0))
    #: seconds the peer may fail to echo us before the link is unidirectional (None: 5 x transmit_interval)
    unidirectional_time: float | None = attrs.field(default=None, validator=_optional_between(0.1, 3600.0))
    recovery: Recovery = Recovery()
    track: tuple[Track, ...] = attrs.field(default=(), validator=_unique_tracks)
