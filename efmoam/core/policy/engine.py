"""The action policy of one port: session events, what they do, latches and recovery.

Theory of operation.  The port hands the policy what it knows after every input that
changed something (`Facts`); the policy decides which session events hold, and the port
carries out what the policy derives.  Nothing here reads a clock or calls back.

* **Events** are conditions over the facts, one row per way an event can hold
  (`ROWS`: the event, a named guard, how long the guard must hold first).  An event is
  active while any of its rows has held for its delay, and ends (cause ``condition``)
  when none holds.  ``session_up`` is a moment (`moment_rows`).  A tracked condition
  (``track``) is an event named ``track:<name>`` that always notifies the peer.
* **Actions** (`Action`) of an active event: ``block`` holds the port out of service while
  it lasts; ``error-disable`` and ``down`` *latch*: the hold outlives the event until the
  clear command or automatic recovery; ``notify-peer`` sets Critical Event while it
  lasts; ``exec`` is the daemon's (it runs the hook on the event's records); ``log`` is
  what every event does anyway.
* **Link monitoring's events** (local signal failures, the peer's flags and reports) hold
  the port as their configured action says (`configured_action`); one that latches leaves
  a latch when it ends, exactly like a session event.
* **Recovery** (Huawei's error-down auto recovery): a latch ends by itself
  ``recovery.auto_after`` seconds after it was set, ending its event (cause
  ``recovery``); a condition that still holds comes back at once.  A latch set again
  within ``recovery.hold_down`` seconds of an automatic recovery does not recover by
  itself (flap damping): only the clear command ends it.
* **The service state** is derived in one place (`service`): out of service with the port's
  backend, administratively down, and the names of what holds it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import attrs

from efmoam.core.discovery import DiscoveryState
from efmoam.core.linkmon.eventlog import Location
from efmoam.core.linkmon.events import ActiveEvents, EventKey, configured_action, holder_name
from efmoam.core.linkmon.settings import LinkMonitoringSettings, PortAction
from efmoam.core.outputs import LoopbackStatus, PolicyEvent
from efmoam.core.policy.settings import HOLDING, LATCHING, Action, EventName, PolicySettings
from pdu.model import InfoTlv

TRACK_PREFIX = "track:"
_NOTIFY = frozenset({Action.NOTIFY_PEER})
_BY_PORT_ACTION = {
    PortAction.OUT_OF_SERVICE: Action.BLOCK,
    PortAction.ERROR_DISABLE: Action.ERROR_DISABLE,
    PortAction.DOWN: Action.DOWN,
}


@attrs.frozen
class Facts:
    """What the policy reads of the port, sampled at the end of an input."""

    enabled: bool  #: OAM administratively enabled (and the link full duplex)
    link_ok: bool
    state: DiscoveryState
    transmitting: bool  #: we send Information OAMPDUs with our Local Information TLV
    peer_tlv: InfoTlv | None  #: the peer's Local Information TLV, once heard
    verdict: bool | None  #: peer_policy's verdict on it
    echo: InfoTlv | None  #: the peer's Remote Information TLV (its echo of ours)
    local_tlv: InfoTlv  #: ours, as now
    loopback: LoopbackStatus
    looped_until: float | None  #: our own OAMPDUs came back; the loop lasts until then
    session_end_cause: str  #: why Discovery last left SEND_ANY
    tracked: frozenset[str]  #: the tracked conditions that hold


@attrs.frozen
class Timing:
    """The port's times that the rows' delays are made of."""

    interval: float  #: the transmit interval
    settings: PolicySettings

    def no_delay(self) -> float:
        return 0.0

    def discovery_timeout(self) -> float | None:
        return self.settings.discovery_timeout

    def unidirectional_time(self) -> float:
        return self.settings.unidirectional_time or 5 * self.interval

    def transmit_interval(self) -> float:
        return self.interval


# -- the guards: does the condition hold now? -------------------------------------------


def session_lost(f: Facts, had_session: bool) -> bool:
    """We had a session (SEND_ANY) and it is over."""
    return had_session and f.state is not DiscoveryState.SEND_ANY


def discovery_incomplete(f: Facts, _had: bool) -> bool:
    """The link is up and discovery has not completed (judged after discovery_timeout)."""
    return f.link_ok and f.state is not DiscoveryState.SEND_ANY


def peer_refused(f: Facts, _had: bool) -> bool:
    """peer_policy refuses the peer's Local Information TLV."""
    return f.peer_tlv is not None and f.verdict is False


def peer_deaf(f: Facts, _had: bool) -> bool:
    """We hear the peer and send to it, and it sends no echo of our TLV."""
    return f.link_ok and f.transmitting and f.peer_tlv is not None and f.echo is None


def echo_foreign(f: Facts, _had: bool) -> bool:
    """The peer echoes a configuration that is not ours."""
    return f.echo is not None and not f.echo.same_configuration(f.local_tlv)


def own_frames_back(f: Facts, _had: bool) -> bool:
    """Our own OAMPDUs came back within the lost-link time (judged against the deadline)."""
    return f.looped_until is not None


def looping_for_peer(f: Facts, _had: bool) -> bool:
    """The peer put us in loopback: we loop its frames."""
    return f.loopback is LoopbackStatus.LOCAL_LOOPBACK


@attrs.frozen
class Row:
    """An event holds once `guard` has held for `delay` seconds (None: this row never does)."""

    event: EventName
    guard: Callable[[Facts, bool], bool]
    delay: Callable[[Timing], float | None]
    cause: str  #: why the event started, when this row made it


ROWS: tuple[Row, ...] = (
    Row(EventName.SESSION_DOWN, session_lost, Timing.no_delay, "session_lost"),
    Row(EventName.SESSION_DOWN, discovery_incomplete, Timing.discovery_timeout, "discovery_timeout"),
    Row(EventName.CAPABILITIES_CONFLICT, peer_refused, Timing.no_delay, "peer_policy"),
    Row(EventName.UNIDIRECTIONAL, peer_deaf, Timing.unidirectional_time, "no_echo"),
    Row(EventName.LOOP, own_frames_back, Timing.no_delay, "own_oampdus"),
    Row(EventName.WIRING_CONFLICT, echo_foreign, Timing.transmit_interval, "foreign_echo"),
    Row(EventName.REMOTE_LOOPBACK, looping_for_peer, Timing.no_delay, "peer_command"),
)


@attrs.define
class Active:
    """An active session event."""

    name: str
    actions: frozenset[Action]
    since: float
    cause: str
    detail: str = ""


@attrs.define
class Latch:
    """A hold that outlives its event: until the clear command, or `recovers_at`."""

    name: str  #: the event's name (``loop``, ``local errored_frame_event``)
    action: Action  #: ERROR_DISABLE or DOWN
    location: Location
    since: float
    recovers_at: float | None
    held_down: bool  #: set again within hold_down of an automatic recovery: by hand only
    key: EventKey | None = None  #: link monitoring's event, when it is one of those


@attrs.frozen
class Service:
    """The service state the policy derives: what the daemon applies."""

    out_of_service: bool  #: with the port's action backend
    down: bool  #: administratively down
    reasons: tuple[str, ...]


IN_SERVICE = Service(False, False, ())


class Policy:
    """The action policy of one port.  Inputs: `evaluate`, `clear`, `reconfigure`; outputs:
    `outputs` (PolicyEvent records), `recovered` (link monitoring's events to end), the
    derived `flags_wanted`, `service` and `next_deadline`."""

    def __init__(self, settings: PolicySettings, transmit_interval: float) -> None:
        self.settings = settings
        self.timing = Timing(transmit_interval, settings)
        self.active: dict[str, Active] = {}
        self.latches: dict[str, Latch] = {}
        self.outputs: list[PolicyEvent] = []
        #: link monitoring's events whose latch recovered: the port ends them
        self.recovered: list[EventKey] = []
        self.notify_peer = False  #: an active event asks for Critical Event
        self.version = 0  #: grows with every change of the active events or latches
        self._pending: dict[int, float] = {}  # row index -> since when its guard holds
        self._had_session = False
        self._in_send_any = False
        self._last_tlv: InfoTlv | None = None
        self._auto_recovered: dict[str, float] = {}  # name -> time of its last automatic recovery
        self._linkmon_seen = -1  # the version of link monitoring's active set last read
        self._deadline: float | None = None

    # -- inputs ------------------------------------------------------------------------

    def evaluate(self, f: Facts, linkmon: ActiveEvents, settings: LinkMonitoringSettings, now: float) -> None:
        """Bring the events, latches and deadlines up to date with `f` at `now`."""
        if f.local_tlv is not self._last_tlv:  # our configuration changed: the peer echoes it late
            self._last_tlv = f.local_tlv
            self._pending.pop(_WIRING_ROW, None)
        self._recover_due(now)
        self._moments(f, now)
        holding: dict[EventName, tuple[str, float]] = {}
        deadline = None
        timing = self.timing
        for index, row in enumerate(ROWS):
            if not (f.enabled and row.guard(f, self._had_session)):
                self._pending.pop(index, None)
                continue
            delay = row.delay(timing)
            if delay is None:
                continue
            since = self._pending.setdefault(index, now)
            if now >= since + delay:
                holding.setdefault(row.event, (row.cause, since))
            elif deadline is None or since + delay < deadline:
                deadline = since + delay
        self._settle_session_events(f, holding, now)
        self._settle_tracks(f.tracked if f.enabled else frozenset(), now)
        if linkmon.version != self._linkmon_seen:
            self._linkmon_seen = linkmon.version
            self._latch_linkmon(linkmon, settings, now)
        for candidate in (f.looped_until, *(latch.recovers_at for latch in self.latches.values())):
            if candidate is not None and (deadline is None or candidate < deadline):
                deadline = candidate
        self._deadline = deadline
        self.notify_peer = any(Action.NOTIFY_PEER in event.actions for event in self.active.values())

    def clear(self, location: Location | None, now: float) -> None:
        """The clear command: end the latches of `location` (None: all) and, for local, the
        session events (a condition that still holds comes back at the next evaluation;
        a lost session counts as acknowledged)."""
        for name, latch in list(self.latches.items()):
            if location is None or latch.location is location:
                self._release(name, "operator", now)
                self._auto_recovered.pop(name, None)
        if location is Location.REMOTE:
            return
        self._had_session = False
        for name in list(self.active):
            self._end(name, "operator", now)
        self._pending.clear()

    def reconfigure(self, settings: PolicySettings, transmit_interval: float, now: float) -> None:
        """New settings: an event whose actions changed ends and starts again under them."""
        self.settings = settings
        self.timing = Timing(transmit_interval, settings)
        for name, event in list(self.active.items()):
            if self._actions_of(name) != event.actions:
                self._end(name, "reload", now)
        self._linkmon_seen = -1

    # -- derived -----------------------------------------------------------------------

    def next_deadline(self) -> float | None:
        return self._deadline

    def service(self, linkmon: ActiveEvents, settings: LinkMonitoringSettings) -> Service:
        """What holds the port out of service or down, now."""
        out: list[str] = []
        down: list[str] = []
        for event in linkmon:
            if event.entry.port_affecting:
                name = holder_name(event.entry)
                action = _BY_PORT_ACTION.get(configured_action(settings, event.key), Action.BLOCK)
                (down if action is Action.DOWN else out).append(name)
        for active in self.active.values():
            if Action.DOWN in active.actions:
                down.append(active.name)
            elif active.actions & HOLDING:
                out.append(active.name)
        for latch in self.latches.values():
            held = down if latch.action is Action.DOWN else out
            if latch.name not in held:
                held.append(f"{latch.name} (latched)")
        if not out and not down:
            return IN_SERVICE
        return Service(bool(out), bool(down), tuple(out + down))

    def view(self, wall_clock_offset: float | None = None) -> dict[str, Any]:
        """The active session events and the latches, as plain data for ``show``: ``since``
        and ``recovers_at`` in seconds since the epoch (null without `wall_clock_offset`),
        ``*_monotonic`` the same in the engine's clock."""

        def wall(t: float | None) -> float | None:
            return None if t is None or wall_clock_offset is None else t + wall_clock_offset

        return {
            "events": [
                {
                    "name": e.name,
                    "actions": sorted(a.value for a in e.actions),
                    "since": wall(e.since),
                    "since_monotonic": e.since,
                    "cause": e.cause,
                    "detail": e.detail,
                    "latched": e.name in self.latches,
                }
                for e in self.active.values()
            ],
            "latches": [
                {
                    "name": latch.name,
                    "action": latch.action.value,
                    "location": latch.location.value,
                    "since": wall(latch.since),
                    "since_monotonic": latch.since,
                    "recovers_at": wall(latch.recovers_at),
                    "recovers_at_monotonic": latch.recovers_at,
                    "held_down": latch.held_down,
                    "active": latch.name in self.active or latch.key is not None,
                }
                for latch in self.latches.values()
            ],
        }

    # -- persistence ------------------------------------------------------------------

    def saved(self) -> list[dict[str, object]]:
        """The latches as JSON-ready data: a restarted daemon keeps an error-disabled port out."""
        return [
            {
                "name": latch.name,
                "action": latch.action.value,
                "location": latch.location.value,
                "key": None if latch.key is None else latch.key.view(),
                "held_down": latch.held_down,
            }
            for latch in self.latches.values()
        ]

    def restore(self, items: object, now: float) -> None:
        """Put saved latches back (their recovery timer starts again at `now`).  Raises
        ValueError, with nothing changed, on data it cannot use."""
        if not isinstance(items, list) or len(items) > 64:
            raise ValueError("saved latches are a list of at most 64 objects")
        latches = []
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("name"), str) or len(item["name"]) > 200:
                raise ValueError(f"a saved latch {str(item)[:80]!r} is not a named object")
            try:
                action, location = Action(item.get("action")), Location(item.get("location"))
            except ValueError:
                raise ValueError(f"saved latch {item['name']!r} has no known action and location") from None
            if action not in LATCHING or not isinstance(item.get("held_down"), bool):
                raise ValueError(f"saved latch {item['name']!r} is not a latching action")
            key = None if item.get("key") is None else EventKey.from_view(item.get("key"))
            latches.append((item["name"], action, location, key, item["held_down"]))
        auto_after = self.settings.recovery.auto_after
        for name, action, location, key, held_down in latches:
            recovers_at = None if held_down or auto_after is None else now + auto_after
            self.latches[name] = Latch(name, action, location, now, recovers_at, held_down, key)
        self.version += 1
        self._linkmon_seen = -1

    # -- the work ----------------------------------------------------------------------

    def _actions_of(self, name: str) -> frozenset[Action]:
        if name.startswith(TRACK_PREFIX):
            return _NOTIFY
        return self.settings.event_actions.of(EventName(name))

    def _moments(self, f: Facts, now: float) -> None:
        in_send_any = f.enabled and f.state is DiscoveryState.SEND_ANY
        if in_send_any and not self._in_send_any:
            self._had_session = True
            actions = self._actions_of(EventName.SESSION_UP.value)
            self._emit(EventName.SESSION_UP.value, True, actions, "discovery_complete", moment=True)
        elif not f.enabled:
            self._had_session = False
        self._in_send_any = in_send_any

    def _settle_session_events(self, f: Facts, holding: dict[EventName, tuple[str, float]], now: float) -> None:
        for name in list(self.active):
            if not name.startswith(TRACK_PREFIX) and EventName(name) not in holding:
                self._end(name, "condition", now)
        for event, (cause, since) in holding.items():
            if event.value not in self.active:
                detail = f.session_end_cause if cause == "session_lost" else _detail(event, f, now - since)
                self._start(event.value, cause, detail, now)

    def _settle_tracks(self, tracked: frozenset[str], now: float) -> None:
        configured = {track.name for track in self.settings.track}
        wanted = {TRACK_PREFIX + name for name in tracked if name in configured}
        for name in [n for n in self.active if n.startswith(TRACK_PREFIX) and n not in wanted]:
            self._end(name, "condition", now)
        for name in sorted(wanted - set(self.active)):
            self._start(name, "tracked", "the tracked condition holds", now)

    def _start(self, name: str, cause: str, detail: str, now: float) -> None:
        actions = self._actions_of(name)
        self.active[name] = Active(name, actions, now, cause, detail)
        self.version += 1
        latching = actions & LATCHING
        latch = None
        if latching:
            action = Action.DOWN if Action.DOWN in latching else Action.ERROR_DISABLE
            latch = self._latch(name, action, Location.LOCAL, now, None)
        self._emit(
            name, True, actions, cause, detail, latched=latch is not None,
            recovers_at=None if latch is None else latch.recovers_at,
        )  # fmt: skip

    def _end(self, name: str, cause: str, now: float) -> None:
        event = self.active.pop(name, None)
        if event is None:
            return
        self.version += 1
        latch = self.latches.get(name)
        self._emit(
            name, False, event.actions, cause, latched=latch is not None,
            recovers_at=None if latch is None else latch.recovers_at,
        )  # fmt: skip

    def _latch(self, name: str, action: Action, location: Location, now: float, key: EventKey | None) -> Latch:
        existing = self.latches.get(name)
        if existing is not None:
            return existing
        recovery = self.settings.recovery
        last = self._auto_recovered.get(name)
        held_down = last is not None and now - last < recovery.hold_down
        recovers_at = None if held_down or recovery.auto_after is None else now + recovery.auto_after
        latch = self.latches[name] = Latch(name, action, location, now, recovers_at, held_down, key)
        self.version += 1
        return latch

    def _latch_linkmon(self, linkmon: ActiveEvents, settings: LinkMonitoringSettings, now: float) -> None:
        """Link monitoring's active events whose action latches leave a latch; a latch of an
        event that is no longer active stays until it is released."""
        for event in linkmon:
            if not event.entry.port_affecting:
                continue
            action = _BY_PORT_ACTION.get(configured_action(settings, event.key))
            if action in LATCHING:
                assert action is not None
                name = holder_name(event.entry)
                if name not in self.latches:
                    latch = self._latch(name, action, event.key.location, now, event.key)
                    actions = frozenset({action})
                    self._emit(name, True, actions, "latched", latched=True, recovers_at=latch.recovers_at)
        for latch in self.latches.values():
            if latch.key is not None and latch.key not in linkmon:
                latch.key = None  # its event ended: the latch holds on its own

    def _release(self, name: str, cause: str, now: float) -> None:
        latch = self.latches.pop(name)
        self.version += 1
        if latch.key is not None:
            self.recovered.append(latch.key)
        self._emit(name, False, frozenset({latch.action}), cause, "latch released", released=True)

    def _recover_due(self, now: float) -> None:
        for name, latch in list(self.latches.items()):
            if latch.recovers_at is not None and now >= latch.recovers_at:
                self._auto_recovered[name] = now
                self._end(name, "recovery", now)
                self._release(name, "recovery", now)
                # a condition that still holds starts again now (and latches held down)
                for index, row in enumerate(ROWS):
                    if row.event.value == name:
                        self._pending.pop(index, None)

    def _emit(
        self, name: str, active: bool, actions: Iterable[Action], cause: str, detail: str = "", *,
        latched: bool = False, recovers_at: float | None = None, moment: bool = False, released: bool = False,
    ) -> None:  # fmt: skip
        self.outputs.append(
            PolicyEvent(
                name,
                active,
                tuple(sorted(a.value for a in actions)),
                cause,
                detail,
                latched,
                recovers_at,
                moment,
                released,
            )
        )


_WIRING_ROW = next(i for i, row in enumerate(ROWS) if row.event is EventName.WIRING_CONFLICT)


def _detail(event: EventName, f: Facts, held: float) -> str:
    if event is EventName.UNIDIRECTIONAL:
        return f"no Remote Information TLV from the peer for {held:.1f} s while we transmit"
    if event is EventName.CAPABILITIES_CONFLICT and f.peer_tlv is not None:
        return f"peer advertises functions {int(f.peer_tlv.oam_config):#04x}, version {f.peer_tlv.oam_version}"
    if event is EventName.SESSION_DOWN:
        return f"discovery incomplete after {held:.1f} s"
    return ""
