"""The property of the event model: after any sequence of counter samples, peer frames,
clears, link flaps, reconfigurations and restarts,

1. the critical flags port "a" sends, and that its peer holds, are those its active
   events set;
2. "a" is out of service exactly while an active event affects it, and the last service
   state it reported says the same;
3. every active event is shown in the event log, as it is.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings, strategies as st

from efmoam.core import OamPort, PortServiceChanged, Transmit
from efmoam.core.discovery import LocalPdu
from efmoam.core.linkmon import Location, MonitorKind
from efmoam.core.linkmon.kinds import FACTS
from pdu import CRITICAL_FLAGS, Code, Flag, LinkEventTlv, decode
from tests.linkmon import SUPPORTIVE, Feed, Pair, port_settings
from tests.linkmon.test_properties import monitoring

FLAGS = [Flag.LINK_FAULT, Flag.DYING_GASP, Flag.CRITICAL_EVENT]
WIRE_WINDOWS = {
    MonitorKind.ERRORED_SYMBOL_PERIOD: 125_000_000,
    MonitorKind.ERRORED_FRAME: 10,
    MonitorKind.ERRORED_FRAME_PERIOD: 1_488_095,
    MonitorKind.ERRORED_FRAME_SECONDS: 600,
}

SAMPLE = st.tuples(st.just("sample"), st.integers(0, 9), st.integers(0, 9))
#: (errors, threshold): mostly a report that acts, sometimes one below or without a threshold
PEER_TLV = st.tuples(
    st.just("peer_tlv"), st.sampled_from(list(MonitorKind)), st.integers(0, 3), st.sampled_from([0, 1, 1, 1, 2])
)
PEER_FLAG = st.tuples(st.just("peer_flag"), st.sampled_from(FLAGS), st.booleans())
#: this many seconds of errors on every counter: the windows that close fail
STORM = st.tuples(st.just("storm"), st.integers(1, 12))
#: the peer reports this many events in a row, of rotating kinds (it wraps the ring)
PEER_BURST = st.tuples(st.just("peer_burst"), st.integers(3, 12))
#: steps that raise events come more often, so that sequences fill the event log
STEPS = st.one_of(
    STORM,
    SAMPLE,
    SAMPLE,
    SAMPLE,
    PEER_TLV,
    PEER_TLV,
    PEER_TLV,
    PEER_TLV,
    PEER_TLV,
    PEER_TLV,
    PEER_FLAG,
    PEER_FLAG,
    PEER_BURST,
    st.tuples(st.just("local_flag"), st.sampled_from(FLAGS), st.booleans()),
    st.tuples(st.just("clear"), st.sampled_from([None, Location.LOCAL, Location.REMOTE])),
    st.tuples(st.just("flap")),
    st.tuples(st.just("reconfigure"), monitoring()),
    st.tuples(st.just("restart")),
)


def apply(pair: Pair, feed: Feed, step: tuple[Any, ...]) -> None:
    kind = step[0]
    if kind == "sample":
        feed.sample(step[1], symbols=step[2])
    elif kind == "peer_tlv":
        facts = FACTS[step[1]]
        tlv = LinkEventTlv(
            type=facts.wire_type, timestamp=1, window=WIRE_WINDOWS[step[1]], threshold=step[3], errors=step[2],
            error_running_total=step[2], event_running_total=1,
        )  # fmt: skip
        pair.call("b", "notify_link_events", (tlv,))
    elif kind == "storm":
        for _ in range(step[1]):
            feed.sample(9, symbols=9)
    elif kind == "peer_burst":
        kinds = list(MonitorKind)
        for number in range(step[1]):
            apply(pair, feed, ("peer_tlv", kinds[number % len(kinds)], 2, 1))
    elif kind == "peer_flag":
        pair.call("b", "set_local_flags", step[1], step[2])
    elif kind == "local_flag":
        pair.call("a", "set_local_flags", step[1], step[2])
    elif kind == "clear":
        pair.call("a", "clear_events", step[1])
    elif kind == "flap":
        pair.call("a", "set_link", False)
        pair.run_for(0.5)
        pair.call("a", "set_link", True, speed_mbps=1000)
    elif kind == "reconfigure":
        pair.call("a", "reconfigure", port_settings(step[1]))
    else:  # restart: a new engine with the state the old one saved
        old = pair.a
        saved = old.saved_state()
        pair.ports["a"] = OamPort(old.settings, old.mac, now=pair.now)
        assert pair.a.restore(saved, now=pair.now) == []
        pair.call("a", "set_link", True, speed_mbps=1000)
    pair.run_for(1.05)  # a keep-alive at the least has gone out since the step


def violations(pair: Pair, since: int) -> list[str]:
    port = pair.a
    problems = []
    active = list(port.link_monitoring.active)
    implied = Flag(0)
    for event in active:
        implied |= event.flags
    if port.local_pdu is not LocalPdu.RX_INFO:
        last = [r.output for r in pair.records[since:] if r.port == "a" and isinstance(r.output, Transmit)]
        infos = [decode(o.frame).flags for o in last if o.code == Code.INFORMATION]
        if not infos:
            problems.append("no Information OAMPDU sent")
        elif infos[-1] & CRITICAL_FLAGS != implied:
            problems.append(f"sends {infos[-1] & CRITICAL_FLAGS!r}, the active events imply {implied!r}")
        if pair.b.peer_flags & CRITICAL_FLAGS != implied:
            problems.append(f"the peer holds {pair.b.peer_flags & CRITICAL_FLAGS!r}, not {implied!r}")
    # an event that latches (error-disable, down) holds the port after it ended, until released
    latched = bool(port.policy_view()["latches"])
    affecting = any(event.entry.port_affecting for event in active) or latched
    if port.out_of_service is not affecting:
        problems.append(f"out_of_service {port.out_of_service}, active events affecting or latched: {affecting}")
    reported = [r.output for r in pair.records if r.port == "a" and isinstance(r.output, PortServiceChanged)]
    if (reported[-1].out_of_service or reported[-1].down if reported else False) is not affecting:
        problems.append(f"last reported service state {reported[-1] if reported else None}, affecting {affecting}")
    shown = {entry.index: entry for _, entry in port.event_log()}
    problems += [f"active event {e.entry.index} not shown" for e in active if shown.get(e.entry.index) != e.entry]
    return problems


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(lm=monitoring(), steps=st.lists(STEPS, min_size=10, max_size=60))
def test_what_the_port_sends_and_does_is_what_its_active_events_imply(lm: Any, steps: list[tuple[Any, ...]]) -> None:
    pair = Pair(port_settings(lm), SUPPORTIVE)
    pair.run_until(0.5)
    pair.call("a", "set_link", True, speed_mbps=1000)
    feed = Feed(pair, "a", 1000)
    feed.sample(at=1.0, frames=0)
    for number, step in enumerate(steps):
        since = len(pair.records)
        apply(pair, feed, step)
        problems = violations(pair, since)
        assert not problems, f"after step {number} {step[0]}: {problems}"
