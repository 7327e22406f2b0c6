"""The active events are the truth: no number of later events can push an active one out
of the event log, and nothing derived from events (the Information flags, the service
state, a restart's restore) ever depends on the log.

Each scenario here broke before the event model was rebuilt: nine events from the peer
wrapped the ring over a still-active local failure, and a Dying Gasp of ours took the
slot of the peer's."""

from __future__ import annotations

import json

from efmoam.core import OamPort, PortServiceChanged
from efmoam.core.linkmon import Location, MonitorKind, MonitorState, Severity
from efmoam.core.linkmon.eventlog import EventLog, EventLogEntry
from efmoam.core.linkmon.kinds import FACTS
from efmoam.core.linkmon.settings import PortAction
from efmoam.core.settings import PortSettings
from pdu import EventLogType, Flag, LinkEventTlv
from tests.linkmon import (
    LocalSfAction,
    Pair,
    cleared,
    information_flags,
    link_monitoring,
    mark,
    monitor,
    notified_tlvs,
    port_settings,
    raised,
    service_changes,
    start,
)

#: the three frame monitors the peer reports in each round
PEER_KINDS = (MonitorKind.ERRORED_FRAME, MonitorKind.ERRORED_FRAME_PERIOD, MonitorKind.ERRORED_FRAME_SECONDS)
PEER_WINDOWS = {MonitorKind.ERRORED_FRAME: 10, MonitorKind.ERRORED_FRAME_PERIOD: 1_488_095}
PEER_WINDOWS[MonitorKind.ERRORED_FRAME_SECONDS] = 600


def peer_reports(pair: Pair, rounds: int = 3) -> None:
    """The peer ("b") raises `rounds` x 3 link events: one Event Notification per monitor."""
    for round_ in range(1, rounds + 1):
        for kind in PEER_KINDS:
            tlv = LinkEventTlv(
                type=FACTS[kind].wire_type, timestamp=round_, window=PEER_WINDOWS[kind], threshold=1, errors=2,
                error_running_total=2 * round_, event_running_total=round_,
            )  # fmt: skip
            assert pair.call("b", "notify_link_events", (tlv,)) is not None
            pair.run_for(0.2)


def assert_active_events_shown(port: OamPort) -> None:
    """Every active event is in the event log as it is (active), whatever came after it."""
    shown = {entry.index: entry for _, entry in port.event_log()}
    for entry in port.link_monitoring.active_events():
        assert shown.get(entry.index) == entry, f"active event {entry.index} is not in the log"


def critical(flags: Flag) -> Flag:
    return flags & (Flag.LINK_FAULT | Flag.DYING_GASP | Flag.CRITICAL_EVENT)


# -- the ring never drops an active event -----------------------------------------------


def test_nine_peer_events_leave_an_active_local_failure_in_the_log() -> None:
    lm = link_monitoring(errored_frame=monitor(sf_threshold=1))
    pair, feed = start(port_settings(lm))
    feed.sample(1)  # the local failure, in ring slot 4
    (failure,) = raised(pair)
    peer_reports(pair)
    assert len(raised(pair)) == 10  # the failure and nine remote events: more than the ring's nine slots
    assert_active_events_shown(pair.a)
    assert dict(pair.a.event_log())[4] == failure  # the oldest entry, kept because it is active
    assert len(pair.a.event_log()) == 9


def test_the_ring_drops_the_oldest_cleared_entry_first() -> None:
    log = EventLog()
    fields = {"location": Location.LOCAL, "severity": Severity.FAILURE, "time": 0.0}
    entries = [log.add(event_type=EventLogType.ERRORED_FRAME_EVENT, **fields)[1] for _ in range(9)]
    log.mark_cleared(entries[3])
    log.mark_cleared(entries[6])
    slot, newest = log.add(event_type=EventLogType.ERRORED_FRAME_EVENT, **fields)
    assert slot == 7  # the slot of entry 4, the oldest cleared one; entries 1-3 are active and stay
    assert [e.index for _, e in log.entries()] == [1, 2, 3, newest.index, 5, 6, 7, 8, 9]
    assert log.add(event_type=EventLogType.ERRORED_FRAME_EVENT, **fields)[0] == 10  # then entry 7's slot


# -- clear, recovery and restart after the ring wrapped ---------------------------------


def test_clearing_a_wrapped_local_failure_takes_its_flag_off_the_wire() -> None:
    """Log-only action with Critical Event: the clear changes no service state, yet the flag must go."""
    action = LocalSfAction(port_action=PortAction.LOG_ONLY, critical_event=True)
    pair, feed = start(port_settings(link_monitoring(errored_frame=monitor(sf_threshold=1), local_sf_action=action)))
    feed.sample(1)
    pair.run_for(0.5)
    assert pair.b.peer_flags & Flag.CRITICAL_EVENT
    peer_reports(pair)
    since = mark(pair)
    pair.call("a", "clear_events", Location.LOCAL)
    pair.run_for(2.5)
    sent = information_flags(pair, "a", after=since)
    assert sent and not any(flags & Flag.CRITICAL_EVENT for flags in sent), sent
    assert not pair.a.local_flags & Flag.CRITICAL_EVENT  # what show port says is what the wire carries
    assert not pair.b.peer_flags & Flag.CRITICAL_EVENT
    assert not [e for e in pair.b.link_monitoring.active_events() if e.event_type is EventLogType.CRITICAL_LINK_EVENT]
    assert [e.event_type for e in cleared(pair, since=pair.now - 2.5)] == [EventLogType.ERRORED_FRAME_EVENT]


def test_clearing_a_wrapped_failure_while_another_event_holds_the_port_drops_its_flag() -> None:
    """Out of service twice over (our failure, the peer's Critical Event): clearing local
    events changes no service state, and must still end our Critical Event flag."""
    action = LocalSfAction(critical_event=True)
    pair, feed = start(port_settings(link_monitoring(errored_frame=monitor(sf_threshold=1), local_sf_action=action)))
    feed.sample(1)
    pair.call("b", "set_local_flags", Flag.LINK_FAULT, True)  # a remote event that also holds "a"
    peer_reports(pair)
    since = mark(pair)
    pair.call("a", "clear_events", Location.LOCAL)
    pair.run_for(2.5)
    assert pair.a.out_of_service  # the peer's Link Fault still holds it
    assert not any(flags & Flag.CRITICAL_EVENT for flags in information_flags(pair, "a", after=since))


def test_a_wrapped_symbol_failure_recovers_by_itself_and_returns_the_port() -> None:
    lm = link_monitoring(errored_symbol_period=monitor(sd_threshold=2, sf_threshold=5))
    pair, feed = start(port_settings(lm))
    feed.sample(symbols=5)
    assert pair.a.out_of_service
    peer_reports(pair)
    since = pair.now
    feed.sample(symbols=1)  # a window below sd-threshold: the failure is over
    assert not pair.a.out_of_service
    assert pair.a.link_monitoring.holders() == ()
    assert [(c.out_of_service, c.reasons) for c in service_changes(pair, since=since)] == [(False, ())]
    (recovery,) = notified_tlvs(pair, since=since)
    assert recovery.errors == 1 < recovery.threshold == 5


def test_a_wrapped_failure_survives_a_restart() -> None:
    lm = link_monitoring(errored_frame=monitor(sd_threshold=1, sf_threshold=3))
    pair, feed = start(port_settings(lm))
    feed.sample(3)
    peer_reports(pair)
    saved = json.loads(json.dumps(pair.a.saved_state()))  # through JSON, as on disk

    restarted = OamPort(port_settings(lm), pair.a.mac, now=100.0)
    assert restarted.restore(saved, now=100.0) == []
    assert restarted.out_of_service
    assert restarted.link_monitoring.holders() == ("local errored_frame_event",)
    assert restarted.link_monitoring.monitors[MonitorKind.ERRORED_FRAME].state is MonitorState.FAILED
    assert [(c.out_of_service, c.reasons) for c in restarted.take_outputs() if isinstance(c, PortServiceChanged)] == [
        (True, ("local errored_frame_event",))
    ]
    assert_active_events_shown(restarted)
    assert restarted.event_log() == pair.a.event_log()


# -- the flag slots ----------------------------------------------------------------------


def test_our_dying_gasp_beside_the_peers_keeps_both_and_survives_a_restart() -> None:
    """The peer signals its failure with Dying Gasp (slot 1); ours at shutdown joins it there."""
    pair = Pair(PortSettings(), PortSettings())
    pair.run_until(1.0)
    pair.call("b", "set_local_flags", Flag.DYING_GASP, True)
    pair.run_for(0.5)
    assert pair.a.out_of_service  # the peer's Dying Gasp: out of service by default
    assert pair.call("a", "send_dying_gasp") is True
    pair.run_for(0.5)
    slot_one = [(e.location, e.active) for slot, e in pair.a.event_log() if slot == 1]
    assert slot_one == [(Location.REMOTE, True), (Location.LOCAL, True)]  # both active: both shown, remote first
    saved = json.loads(json.dumps(pair.a.saved_state()))

    restarted = OamPort(PortSettings(), pair.a.mac, now=100.0)
    assert restarted.restore(saved, now=100.0) == []
    assert restarted.out_of_service
    assert restarted.link_monitoring.holders() == ("remote dying_gasp_event",)
    assert not restarted.local_flags & Flag.DYING_GASP  # ours belonged to the process that stopped
    slot_one = [(e.location, e.active) for slot, e in restarted.event_log() if slot == 1]
    assert slot_one == [(Location.REMOTE, True)]  # our cleared one leaves the slot to the active one
    assert_active_events_shown(restarted)


def test_a_flag_slot_shows_the_latest_event_once_only_one_is_active() -> None:
    pair = Pair(PortSettings(), PortSettings())
    pair.run_until(1.0)
    pair.call("a", "set_local_flags", Flag.CRITICAL_EVENT, True)
    pair.call("b", "set_local_flags", Flag.CRITICAL_EVENT, True)
    pair.run_for(0.5)
    assert [e.location for slot, e in pair.a.event_log() if slot == 2] == [Location.REMOTE, Location.LOCAL]
    pair.call("a", "clear_events", Location.LOCAL)
    assert [(e.location, e.active) for slot, e in pair.a.event_log() if slot == 2] == [(Location.REMOTE, True)]
    pair.call("b", "set_local_flags", Flag.CRITICAL_EVENT, False)
    pair.run_for(1.5)
    assert [(e.location, e.active) for slot, e in pair.a.event_log() if slot == 2] == [(Location.REMOTE, False)]
    pair.call("a", "set_local_flags", Flag.CRITICAL_EVENT, True)  # a new event takes the slot alone
    assert [(e.location, e.active) for slot, e in pair.a.event_log() if slot == 2] == [(Location.LOCAL, True)]


def test_an_entry_view_reads_back_as_the_same_entry() -> None:
    entry = EventLogEntry(
        index=7, location=Location.REMOTE, event_type=EventLogType.DYING_GASP_EVENT, severity=Severity.FAILURE,
        time=12.5, wall_time=1_700_000_000.25, running_total=2, event_total=2, port_affecting=True,
    )  # fmt: skip
    view = entry.view(1)
    assert (view["window_on_wire"], view["threshold"], view["errors"], view["oui"]) == (None, None, None, "01:80:c2")
    assert (view["time"], view["monotonic"]) == (1_700_000_000.25, 12.5)
    assert EventLogEntry.from_view(json.loads(json.dumps(view))) == (1, entry)
    for key, bad in (("type_number", 99), ("location", "nowhere"), ("index", -1), ("monotonic", "soon"), ("oui", 5)):
        try:
            EventLogEntry.from_view(view | {key: bad})
        except ValueError as exc:
            assert key in str(exc) or "type" in str(exc) or "oui" in str(exc)
        else:
            raise AssertionError(f"{key}={bad!r} was accepted")


def test_critical_flags_on_the_wire_are_those_of_the_active_events() -> None:
    """A failure with info-notification flags sets them; its clear by the operator ends them."""
    action = LocalSfAction(dying_gasp=True, critical_event=True, port_action=PortAction.LOG_ONLY)
    pair, feed = start(port_settings(link_monitoring(errored_frame=monitor(sf_threshold=1), local_sf_action=action)))
    feed.sample(1)
    pair.run_for(1.5)
    assert (
        critical(pair.b.peer_flags) == Flag.DYING_GASP | Flag.CRITICAL_EVENT == pair.a.link_monitoring.active.info_flags
    )
    pair.call("a", "clear_events")
    pair.run_for(1.5)
    assert critical(pair.b.peer_flags) == Flag(0) == pair.a.link_monitoring.active.info_flags
