"""Every metric the daemon exposes, and how each port's samples are made: the one definition.

A `Family` is one metric name with its type, help and labels (every family also has the
label ``device``, the interface name, first).  A `Group` reads some values of a port
(cheap to read, cheap to compare) and makes that port's samples of its families from
them.  Both renderings use the groups: the endpoint's text exposition
(`efmoam.daemon.metrics.exposition`) redoes a port's lines only when what a group read
changed, and the prometheus_client collector (`efmoam.daemon.metrics.collector`) adds
every sample to its metric families.

Values are ints where the engine counts (so counters print as integers) and floats for
timestamps; 0/1 gauges are ints.  Names follow promtool's lint (``check metrics``):
counters end in ``_total``, units are base units, and no name says a metric type.

A `Selection` per ``daemon.metrics.detail`` says which samples are exported: full, all;
basic, those of `BASIC` (what the alert rules and a dashboard read).

The monitors' families carry the four standard monitors and the NIC health ones alike
(label ``monitor``, their keys).  Not per port: `HEALTH_WINDOWS`, the fleet's histogram per
health monitor (`efmoam.daemon.metrics.fleet`), and the daemon's own families; both are
exported at either detail.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple

import attrs

from efmoam.config.model import MetricsDetail
from efmoam.core.linkmon.counters import STANDARD_COUNTERS
from efmoam.core.linkmon.eventlog import EventLogEntry
from efmoam.core.linkmon.kinds import FACTS, HEALTH, HEALTH_FACTS, Counting, HealthKind, MonitorKind
from efmoam.core.linkmon.monitors import MonitorState
from efmoam.core.outputs import DropReason, PeerInfo, PeerQuirk
from efmoam.core.policy.settings import EventName
from efmoam.core.stats import OUI_SLOTS, RFC4878_NAMES, OamStatistics
from efmoam.daemon.metrics.telemetry import EVENT_CLASSES, NO_EVENTS, RuntimeLike, Telemetry
from efmoam.views.data import OPER_STATUS_NAMES
from pdu import DecodeReason, format_oui


class Family(NamedTuple):
    """One metric family as exposed (counters end in ``_total``, info metrics in ``_info``)."""

    name: str
    type: str  #: "gauge", "counter", or "histogram" (`HEALTH_WINDOWS`: not per port)
    help: str
    labels: tuple[str, ...] = ()  #: after ``device``


#: a port's sample: its family, the values of the family's labels after device, the value
Sample = tuple[Family, tuple[str, ...], float]
#: reads a group's values of one port (under the daemon's lock): runtime, telemetry, wall-clock offset
Reader = Callable[[RuntimeLike, Telemetry, float], Hashable]


@attrs.frozen
class Group:
    """Families made from the same few values of a port."""

    families: tuple[Family, ...]
    read: Reader
    samples: Callable[[Any], Iterable[Sample]]  #: from what `read` returned
    #: `read` returns one value per family (None: no sample), each family having one
    #: unlabelled sample per port: the exposition handles such a group a family at a time
    per_family: bool = False


# -- the values --------------------------------------------------------------------------

STAT_FIELDS = tuple(attribute.name for attribute in attrs.fields(OamStatistics))  #: in RFC 4878 order
#: drop reasons of OAMPDUs that are broken (not merely frames of another protocol)
MALFORMED = frozenset(reason.value for reason in DecodeReason if not reason.not_oampdu)
#: drop reasons always exposed (0 until they happen), so that increase() sees the first one
ALWAYS_DROPPED = (
    DropReason.RATE_LIMIT.value, DropReason.RATE_LIMIT_OTHERS.value, DropReason.SOCKET_QUEUE.value,
    DropReason.LOOP.value, DropReason.SECOND_PEER.value,
)  # fmt: skip
OPER_STATUSES = tuple(OPER_STATUS_NAMES.items())

# -- one unlabelled value per port --------------------------------------------------------

STATS = tuple(Family(f"efmoam_{field}_total", "counter", f"RFC 4878 {RFC4878_NAMES[field]}") for field in STAT_FIELDS)
ACTION_FAILED = Family("efmoam_port_action_failed", "gauge", "1 while the port's last action failed (it is retried)")
PEER_EXPECTED = Family(
    "efmoam_peer_expected", "gauge", "1 when the port is configured to have an OAM peer (expect_peer), else 0"
)
LAST_PEER_OAMPDU = Family(
    "efmoam_last_peer_oampdu_timestamp_seconds", "gauge", "Wall-clock time of the last OAMPDU received from the peer"
)
ACTIONS_REAPPLIED = Family(
    "efmoam_port_action_reapplied_total", "counter",
    "Times the port's applied action was found undone (a block table deleted, the port set up) and applied again",
)  # fmt: skip
INTERNAL_ERRORS = Family(
    "efmoam_port_internal_errors_total", "counter",
    "Frames and outputs of the port the daemon failed on (a bug; each is logged with its traceback)",
)  # fmt: skip
_read_stats = operator.attrgetter(*STAT_FIELDS)


def _read_port_values(runtime: RuntimeLike, telemetry: Telemetry, offset: float) -> tuple[float | None, ...]:
    last = runtime.peer_heard_at
    return (
        *_read_stats(runtime.port.stats),
        int(runtime.action_error is not None),
        runtime.actions_reapplied,
        runtime.internal_errors,
        int(runtime.profile.expect_peer),
        None if last is None else last + offset,
    )


#: as `_read_port_values` reads them
_PORT_VALUE_FAMILIES = (*STATS, ACTION_FAILED, ACTIONS_REAPPLIED, INTERNAL_ERRORS, PEER_EXPECTED, LAST_PEER_OAMPDU)


def _port_value_samples(values: tuple[float | None, ...]) -> Iterator[Sample]:
    for family, value in zip(_PORT_VALUE_FAMILIES, values, strict=True):
        if value is not None:
            yield family, (), value


PORT_VALUES = Group(_PORT_VALUE_FAMILIES, _read_port_values, _port_value_samples, per_family=True)

# -- discovery and the peer ---------------------------------------------------------------

OPER_STATUS = Family(
    "efmoam_oper_status",
    "gauge",
    "RFC 4878 dot3OamOperStatus of the port: 1 for the current status, 0 for the others",
    ("status",),
)
PEER_INFO = Family(
    "efmoam_peer_info",
    "gauge",
    "The OAM peer discovered on the port (RFC 4878 dot3OamPeerTable), as labels",
    ("mac", "oui", "vendor_info", "mode"),
)

DISCOVERY = Group(
    (OPER_STATUS,),
    lambda runtime, _telemetry, _offset: runtime.port.oper_status,
    lambda current: ((OPER_STATUS, (name,), int(status is current)) for status, name in OPER_STATUSES),
)


def _peer_samples(peer: PeerInfo | None) -> Iterator[Sample]:
    if peer is not None:
        mode = "active" if peer.mode_active else "passive"
        yield PEER_INFO, (peer.mac, format_oui(peer.oui), f"0x{peer.vendor_info:08x}", mode), 1


PEER = Group((PEER_INFO,), lambda runtime, _telemetry, _offset: runtime.port.peer, _peer_samples)

# -- link monitoring ----------------------------------------------------------------------

MONITOR_WINDOW_ERRORS = Family(
    "efmoam_monitor_window_errors",
    "gauge",
    "Errors in the monitor's last closed window (errored seconds for errored_frame_seconds; a NIC health"
    " monitor's measured counters' increase, also for a rate)",
    ("monitor",),
)
MONITOR_ERRORS = Family(
    "efmoam_monitor_errors_total", "counter", "Errors the monitor counted (its running total)", ("monitor",)
)
MONITOR_EVENTS = Family(
    "efmoam_monitor_events_total", "counter", "Events the monitor raised (its running total)", ("monitor",)
)
MONITOR_STATE = Family(
    "efmoam_monitor_state",
    "gauge",
    "State of the monitor: 1 for the current one of ok, degraded, failed, unavailable",
    ("monitor", "state"),
)

#: every monitor's label, the four's and the NIC health ones' (their keys)
MONITOR_KEYS: Mapping[MonitorKind | HealthKind, str] = {
    **{kind: facts.key for kind, facts in FACTS.items()},
    **{kind: facts.key for kind, facts in HEALTH_FACTS.items()},
}
# Two groups: a window closing changes the counts, seldom the state, and basic detail keeps
# the state only (it reads no counts at all).
#: per monitor in use (the four, then the NIC health ones): kind, errors in the last window
#: (None: none closed yet), totals
MonitorCounts = tuple[tuple[MonitorKind | HealthKind, int | None, int, int], ...]
#: per monitor in use, in the same order: kind, state
MonitorStates = tuple[tuple[MonitorKind | HealthKind, MonitorState], ...]
_read_counts = operator.attrgetter("kind", "last_errors", "error_total", "event_total")
_read_state = operator.attrgetter("kind", "state")


def _read_monitor_counts(runtime: RuntimeLike, _telemetry: Telemetry, _offset: float) -> MonitorCounts:
    monitoring = runtime.port.link_monitoring
    return (*map(_read_counts, monitoring.running), *map(_read_counts, monitoring.running_health))


def _read_monitor_states(runtime: RuntimeLike, _telemetry: Telemetry, _offset: float) -> MonitorStates:
    monitoring = runtime.port.link_monitoring
    return (*map(_read_state, monitoring.running), *map(_read_state, monitoring.running_health))


def _monitor_count_samples(monitors: MonitorCounts) -> Iterator[Sample]:
    for kind, last_errors, error_total, event_total in monitors:
        name = MONITOR_KEYS[kind]
        if last_errors is not None:
            yield MONITOR_WINDOW_ERRORS, (name,), last_errors
        yield MONITOR_ERRORS, (name,), error_total
        yield MONITOR_EVENTS, (name,), event_total


def _monitor_state_samples(monitors: MonitorStates) -> Iterator[Sample]:
    for kind, state in monitors:
        name = MONITOR_KEYS[kind]
        for each in MonitorState:
            yield MONITOR_STATE, (name, each.value), int(each is state)


MONITOR_COUNTS = Group(
    (MONITOR_WINDOW_ERRORS, MONITOR_ERRORS, MONITOR_EVENTS), _read_monitor_counts, _monitor_count_samples
)
MONITOR_STATES = Group((MONITOR_STATE,), _read_monitor_states, _monitor_state_samples)

# "ratio": IEEE 802.3's BER is the bit error ratio, and Prometheus names a ratio so
PRE_FEC_BER = Family(
    "efmoam_pre_fec_bit_error_ratio",
    "gauge",
    "Pre-FEC bit error ratio of fec_corrected's last closed window: corrected bits over the bits the link"
    " carried at its speed (absent when unknown: codewords counted only, no speed, or the monitor off)",
)
PRE_FEC = Group(
    (PRE_FEC_BER,),
    lambda runtime, _telemetry, _offset: (runtime.port.link_monitoring.ber_estimate,),
    lambda values: ((PRE_FEC_BER, (), value) for value in values if value is not None),
    per_family=True,
)

ACTIVE_EVENTS = Family(
    "efmoam_active_events",
    "gauge",
    "Active events of the port by location (local, remote) and severity (sd: signal degrade, sf: failure)",
    ("location", "severity"),
)
EVENTS_RAISED = Family(
    "efmoam_events_total",
    "counter",
    "Events raised on the port since the daemon started, by location and severity",
    ("location", "severity"),
)
OUT_OF_SERVICE = Family(
    "efmoam_port_out_of_service",
    "gauge",
    "1 per event holding the port out of service (reason label); 0 without reason while it is in service",
    ("reason",),
)
_EVENT_LABELS = tuple((location.value, severity.value) for location, severity in EVENT_CLASSES)
#: what holds the port out of service, its active events, the events it raised per `EVENT_CLASSES`
EventValues = tuple[tuple[str, ...], tuple[EventLogEntry, ...], tuple[int, ...]]


def _read_events(runtime: RuntimeLike, telemetry: Telemetry, _offset: float) -> EventValues:
    port = runtime.port
    active = port.link_monitoring.active
    entries = active.entries() if len(active) else ()
    return port.service.reasons, entries, telemetry.events_raised.get(runtime.name, NO_EVENTS)


def _event_samples(values: EventValues) -> Iterator[Sample]:
    reasons, entries, raised = values
    counts = [0] * len(EVENT_CLASSES)
    for entry in entries:
        counts[EVENT_CLASSES.index((entry.location, entry.severity))] += 1
    for labels, count in zip(_EVENT_LABELS, counts, strict=True):
        yield ACTIVE_EVENTS, labels, count
    for labels, total in zip(_EVENT_LABELS, raised, strict=True):
        yield EVENTS_RAISED, labels, total
    if not reasons:
        yield OUT_OF_SERVICE, ("",), 0
    else:
        for reason in reasons:
            yield OUT_OF_SERVICE, (reason,), 1


EVENTS = Group((ACTIVE_EVENTS, EVENTS_RAISED, OUT_OF_SERVICE), _read_events, _event_samples)

# -- the action policy ---------------------------------------------------------------------

POLICY_EVENT_ACTIVE = Family(
    "efmoam_session_event_active", "gauge",
    "1 while the session event is active (track: any tracked condition), else 0", ("event",),
)  # fmt: skip
POLICY_EVENTS_RAISED = Family(
    "efmoam_session_events_total", "counter",
    "Session events raised since the daemon started (session_up: discoveries completed)", ("event",),
)  # fmt: skip
PORT_LATCHED = Family(
    "efmoam_port_latched", "gauge",
    "Latches holding the port (error-disable, down) until cleared or recovered; held_down=true: by hand only",
    ("held_down",),
)  # fmt: skip
_POLICY_LABELS = (*(name.value for name in EventName), "track")
#: active session events (names), counts raised per `_POLICY_LABELS`, latches (all, held down)
PolicyValues = tuple[frozenset[str], tuple[int, ...], tuple[int, int]]


def _read_policy(runtime: RuntimeLike, telemetry: Telemetry, _offset: float) -> PolicyValues:
    view = runtime.port.policy_view()
    active = frozenset("track" if e["name"].startswith("track:") else e["name"] for e in view["events"])
    counts = telemetry.policy_events.get(runtime.name, {})
    latches: list[dict[str, Any]] = view["latches"]
    held = sum(1 for latch in latches if latch["held_down"])
    return active, tuple(counts.get(label, 0) for label in _POLICY_LABELS), (len(latches) - held, held)


def _policy_samples(values: PolicyValues) -> Iterator[Sample]:
    active, raised, (latched, held) = values
    for label in _POLICY_LABELS:
        if label != EventName.SESSION_UP.value:
            yield POLICY_EVENT_ACTIVE, (label,), int(label in active)
    for label, count in zip(_POLICY_LABELS, raised, strict=True):
        yield POLICY_EVENTS_RAISED, (label,), count
    yield PORT_LATCHED, ("false",), latched
    yield PORT_LATCHED, ("true",), held


POLICY = Group((POLICY_EVENT_ACTIVE, POLICY_EVENTS_RAISED, PORT_LATCHED), _read_policy, _policy_samples)

# -- the daemon's inputs ------------------------------------------------------------------

# (not "counter" in the name: a metric name must not name a metric type, promtool says)
LINK_STAT_AVAILABLE = Family(
    "efmoam_link_stat_available",
    "gauge",
    "1 when the last read of the interface's statistics provided this one, 0 when the source lacks it",
    ("stat",),
)
COUNTER_SOURCE = Group(
    (LINK_STAT_AVAILABLE,),
    lambda runtime, telemetry, _offset: telemetry.counters_present.get(runtime.name),
    lambda present: (
        ()
        if present is None
        else (
            (LINK_STAT_AVAILABLE, (counter,), int(flag))
            for counter, flag in zip(STANDARD_COUNTERS, present, strict=True)
        )
    ),
)

RX_DROPPED = Family(
    "efmoam_rx_dropped_total",
    "counter",
    "Received frames not acted on, by reason (malformed=true for broken OAMPDUs)",
    ("reason", "malformed"),
)


def _read_drops(runtime: RuntimeLike, _telemetry: Telemetry, _offset: float) -> tuple[tuple[str, int], ...]:
    return (*runtime.port.drops.items(), *runtime.receive_drops)


RX_MALFORMED = Family(
    "efmoam_rx_malformed_total",
    "counter",
    'Broken OAMPDUs received: efmoam_rx_dropped_total{malformed="true"} summed (one series, kept at basic detail)',
)


def _drop_samples(drops: tuple[tuple[str, int], ...]) -> Iterator[Sample]:
    counts = dict.fromkeys(ALWAYS_DROPPED, 0)
    counts.update(drops)
    for reason, count in sorted(counts.items()):
        yield RX_DROPPED, (reason, "true" if reason in MALFORMED else "false"), count
    yield RX_MALFORMED, (), sum(count for reason, count in counts.items() if reason in MALFORMED)


DROPS = Group((RX_DROPPED, RX_MALFORMED), _read_drops, _drop_samples)

PEER_QUIRKS = Family(
    "efmoam_peer_quirks_total",
    "counter",
    "Nonstandard habits of the peer that were worked around, by reason (sequence_reused: a new Event"
    " Notification with the previous sequence number)",
    ("reason",),
)
QUIRKS = Group(
    (PEER_QUIRKS,),
    lambda runtime, _telemetry, _offset: tuple(runtime.port.quirks.get(quirk.value, 0) for quirk in PeerQuirk),
    lambda counts: ((PEER_QUIRKS, (quirk.value,), count) for quirk, count in zip(PeerQuirk, counts, strict=True)),
)

ORG_SPECIFIC_RX_BY_OUI = Family(
    "efmoam_org_specific_rx_by_oui_total",
    "counter",
    f"Organization Specific OAMPDUs received, by OUI (the first {OUI_SLOTS} OUIs heard; the others summed under"
    ' oui="other"): together efmoam_org_specific_rx_total',
    ("oui",),
)
ORG_SPECIFIC = Group(
    (ORG_SPECIFIC_RX_BY_OUI,),
    lambda runtime, _telemetry, _offset: tuple(
        (oui, count) for oui, _name, count in runtime.port.org_specific_rx_by_oui.labelled()
    ),
    lambda counts: ((ORG_SPECIFIC_RX_BY_OUI, (oui,), count) for oui, count in counts),
)

#: every group, in the order their families are exposed
GROUPS = (
    DISCOVERY, PEER, PORT_VALUES, MONITOR_COUNTS, MONITOR_STATES, PRE_FEC, EVENTS, POLICY, COUNTER_SOURCE, DROPS,
    QUIRKS, ORG_SPECIFIC,
)  # fmt: skip
#: every family, in exposition order
FAMILIES = tuple(family for group in GROUPS for family in group.families)
assert len(set(FAMILIES)) == len(FAMILIES), "a family in two groups"

# -- detail: basic -------------------------------------------------------------------------


def _current(sample: Sample) -> bool:
    """Of a state set (one series per state, 1 for the current one): the current state only."""
    return sample[2] == 1


#: what ``daemon.metrics.detail: basic`` keeps of a port: what the alert rules
#: (config/prometheus/efmoam-rules.yaml) and a dashboard read.  Per family, None keeps every
#: sample, a test the samples it accepts; families not named are left out.  Every series
#: kept is exactly as at full detail, so a query written for basic works at full.
BASIC: Mapping[Family, Callable[[Sample], bool] | None] = {
    OPER_STATUS: _current,  # 1
    PEER_EXPECTED: None,  # 1
    OUT_OF_SERVICE: None,  # 1, and one more per further reason holding the port out
    ACTIVE_EVENTS: None,  # 4
    MONITOR_STATE: _current,  # 1 per monitor enabled: at most 4, and 5 NIC health ones
    PRE_FEC_BER: None,  # 1 while fec_corrected knows it
    EVENTS_RAISED: lambda sample: sample[1][1] == "sd",  # 2: EfmOamRepeatedDegrade
    STATS[STAT_FIELDS.index("information_tx")]: None,  # 1
    STATS[STAT_FIELDS.index("information_rx")]: None,  # 1
    STATS[STAT_FIELDS.index("unsupported_codes_rx")]: None,  # 1
    RX_MALFORMED: None,  # 1
    ACTION_FAILED: None,  # 1
}


@attrs.frozen
class Selection:
    """The series a detail level exports: which families, and of some which samples."""

    families: frozenset[Family]
    tests: Mapping[Family, Callable[[Sample], bool]]

    def keeps(self, sample: Sample) -> bool:
        family = sample[0]
        if family not in self.families:
            return False
        test = self.tests.get(family)
        return test is None or test(sample)


SELECTIONS = {
    MetricsDetail.FULL: Selection(frozenset(FAMILIES), {}),
    MetricsDetail.BASIC: Selection(
        frozenset(BASIC), {family: test for family, test in BASIC.items() if test is not None}
    ),
}


# -- the fleet: per NIC health monitor, merged over the ports (efmoam.daemon.metrics.fleet) --

_COUNTED = {counting: ", ".join(f.key for f in HEALTH if f.counting is counting) for counting in Counting}
HEALTH_WINDOWS = Family(
    "efmoam_health_window_errors", "histogram",
    "Closed windows of each NIC health monitor, merged over the ports, by errors in the thresholds' unit:"
    f" a count per window ({_COUNTED[Counting.COUNT]}), a rate per second ({_COUNTED[Counting.RATE]})",
    ("monitor",),
)  # fmt: skip


# -- the daemon itself: families without the device label --------------------------------

DAEMON_ERRORS = Family(
    "efmoam_daemon_errors_total", "counter",
    "Exceptions the daemon caught and carried on from, by where they happened (each is a bug, logged)", ("where",),
)  # fmt: skip
STATE_SAVES = Family("efmoam_state_saves_total", "counter", "Writes of the state file")
STATE_SAVE_FAILURES = Family(
    "efmoam_state_save_failures_total", "counter",
    "Writes of the state file that failed (a restart then restores the last state written)",
)  # fmt: skip
STATE_SAVED = Family(
    "efmoam_state_saved", "gauge", "1 when the state file holds the daemon's current state, 0 after a failed write"
)
STATE_SET_ASIDE = Family(
    "efmoam_state_set_aside", "gauge", "1 when a state file that could not be used was set aside (see the log)"
)
CONTROL_EVENTS = Family(
    "efmoam_control_events_total", "counter",
    "Control socket events: connections accepted and refused, clients closed (idle, output overflow), bad requests",
    ("event",),
)  # fmt: skip
LOOP_WAKEUPS = Family("efmoam_daemon_loop_wakeups_total", "counter", "Times the daemon's event loop woke up")
LOOP_LONG = Family(
    "efmoam_daemon_loop_long_wakeups_total", "counter", "Wake-ups of the event loop that took over 50 ms (stalls)"
)
LOOP_BUSY = Family(
    "efmoam_daemon_loop_busy_seconds_total", "counter", "Seconds the event loop spent working (all wake-ups together)"
)
LOOP_LONGEST = Family(
    "efmoam_daemon_loop_longest_wakeup_seconds", "gauge",
    "The longest wake-up of the event loop in the last one to two minutes (a stall: show, frames and signals wait)",
)  # fmt: skip
DAEMON_FAMILIES = (
    DAEMON_ERRORS, STATE_SAVES, STATE_SAVE_FAILURES, STATE_SAVED, STATE_SET_ASIDE, CONTROL_EVENTS,
    LOOP_WAKEUPS, LOOP_LONG, LOOP_BUSY, LOOP_LONGEST,
)  # fmt: skip


def daemon_samples(health: Mapping[str, Any]) -> Iterator[Sample]:
    """The daemon's own samples, from `Daemon.health` (labels after none: no device)."""
    for where, count in sorted(health["errors"].items()):
        yield DAEMON_ERRORS, (where,), count
    state = health["state"]
    yield STATE_SAVES, (), state["saves"]
    yield STATE_SAVE_FAILURES, (), state["save_failures"]
    yield STATE_SAVED, (), int(state["error"] is None)
    yield STATE_SET_ASIDE, (), int(state["set_aside"] is not None)
    for event, count in sorted(health["control"].items()):
        yield CONTROL_EVENTS, (event,), count
    loop = health.get("loop")
    if loop is not None:
        yield LOOP_WAKEUPS, (), loop["wakeups"]
        yield LOOP_LONG, (), loop["long_wakeups"]
        yield LOOP_BUSY, (), loop["busy_seconds"]
        yield LOOP_LONGEST, (), loop["longest_wakeup_seconds"]
