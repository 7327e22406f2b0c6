"""Properties over random per-second error counts on random monitors and thresholds, with
clears and the peer's flags and notifications mixed in:

1. a monitor raises at most one event per window, and only when a window ends;
2. at every point the port is out of service exactly while an active event affects it.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings, strategies as st

from efmoam.core.linkmon import (
    FACTS,
    LinkMonitoringSettings,
    Location,
    MonitorKind,
    MonitorSettings,
    PortAction,
)
from efmoam.core.outputs import Output, PortServiceChanged
from pdu import EventTlvType, Flag, LinkEventTlv
from tests.linkmon import (
    Feed,
    LocalSfAction,
    Pair,
    PeerActions,
    event_frame,
    link_monitoring,
    port_settings,
    raised,
)

#: windows the examples choose from: seconds, or frames for the period monitor
WINDOWS: dict[MonitorKind, list[float]] = {
    MonitorKind.ERRORED_SYMBOL_PERIOD: [1.0, 2.0, 3.0],
    MonitorKind.ERRORED_FRAME: [1.0, 2.0, 5.0],
    MonitorKind.ERRORED_FRAME_PERIOD: [800_000, 1_500_000, 3_000_000],
    MonitorKind.ERRORED_FRAME_SECONDS: [10.0, 12.0],
}
OPS = ["clear_local", "clear_remote", "clear_all", "peer_dg", "peer_ce", "peer_lf", "peer_tlv"]
ACTIONS = st.sampled_from(list(PortAction))
SETTINGS = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@st.composite
def monitoring(draw: st.DrawFn) -> LinkMonitoringSettings:
    kinds = draw(st.lists(st.sampled_from(list(MonitorKind)), min_size=1, max_size=4, unique=True))
    fields: dict[str, Any] = {}
    for kind in kinds:
        sf = draw(st.integers(1, 8))
        sd = draw(st.none() | st.integers(1, sf - 1)) if sf > 1 else None
        fields[FACTS[kind].key] = MonitorSettings(
            enabled=True,
            sf_threshold=sf,
            sd_threshold=sd,
            window=draw(st.sampled_from(WINDOWS[kind])),
            event_notification=draw(st.booleans()),
        )
    local = LocalSfAction(
        port_action=draw(ACTIONS), dying_gasp=draw(st.booleans()), event_burst=draw(st.integers(1, 5))
    )
    peer = PeerActions(
        link_fault=draw(ACTIONS),
        dying_gasp=draw(ACTIONS),
        critical_event=draw(ACTIONS),
        event_notification=draw(ACTIONS),
    )
    return link_monitoring(local_sf_action=local, peer_actions=peer, **fields)


errors = st.one_of(st.just(0), st.just(0), st.integers(0, 10))
step = st.tuples(
    errors,  # errored frames
    errors,  # symbol errors
    st.integers(200_000, 1_000_000),  # frames received
    st.one_of(st.none(), st.none(), st.none(), st.sampled_from(OPS)),
    st.integers(0, 12),  # errors of a peer TLV
    st.integers(0, 8),  # threshold of a peer TLV
)


def window_ends(kind: MonitorKind, window: float, frames: list[int]) -> set[int]:
    """The samples (1 = the first after the baseline) at which the monitor's windows end.

    Samples are one second apart from t=1.0; the baseline at t=1.0 opens the first window.
    """
    ends: set[int] = set()
    if kind is MonitorKind.ERRORED_FRAME_PERIOD:
        seen = 0
        for i, count in enumerate(frames, start=1):
            seen += count
            if seen >= window:  # checked once per second: at every sample here
                ends.add(i)
                seen = 0
        return ends
    return {i for i in range(1, len(frames) + 1) if i % int(window) == 0}


class Checker:
    """Checks property 2 at every output of port "a"."""

    def __init__(self, pair: Pair) -> None:
        self.pair = pair
        self.checks = 0
        pair.on_output = self.on_output

    def on_output(self, name: str, output: Output) -> None:
        if name == "a":
            self.check_state()

    def check_state(self) -> None:
        port = self.pair.a
        active = port.link_monitoring.active_events()
        latched = bool(port.policy_view()["latches"])  # error-disable and down outlive their event
        assert port.out_of_service == (any(e.port_affecting for e in active) or latched)
        # the log agrees: every entry it shows as active is an active event
        indexes = {e.index for e in active}
        assert {e.index for _, e in port.event_log() if e.active} <= indexes
        self.checks += 1

    def check(self) -> None:
        """Between inputs: the state, and the last `PortServiceChanged` reported agrees with it."""
        self.check_state()
        changes = [r.output for r in self.pair.outputs("a", PortServiceChanged)]
        last = changes[-1].out_of_service or changes[-1].down if changes else False
        assert last == self.pair.a.out_of_service


def run(lm: LinkMonitoringSettings, steps: list[tuple[int, int, int, str | None, int, int]]) -> tuple[Pair, Checker]:
    pair = Pair(port_settings(lm), port_settings(link_monitoring()))
    pair.run_until(0.5)
    checker = Checker(pair)
    feed = Feed(pair)
    feed.sample(at=1.0, frames=0)
    flags = Flag(0)
    sequence = 0
    for second, (frame_errors, symbol_errors, frames, op, tlv_errors, tlv_threshold) in enumerate(steps, start=2):
        feed.sample(frame_errors, symbols=symbol_errors, frames=frames, at=float(second))
        checker.check()
        if op is None:
            continue
        pair.run_for(0.25)  # between samples
        if op.startswith("clear"):
            where = {"clear_local": Location.LOCAL, "clear_remote": Location.REMOTE, "clear_all": None}[op]
            pair.call("a", "clear_events", where)
        elif op == "peer_tlv":
            sequence += 1
            kind = EventTlvType.ERRORED_SYMBOL_PERIOD if tlv_errors % 2 else EventTlvType.ERRORED_FRAME
            tlv = LinkEventTlv(kind, window=10, threshold=tlv_threshold, errors=tlv_errors)
            pair.inject("a", event_frame(sequence, tlv))
        else:
            flag = {"peer_dg": Flag.DYING_GASP, "peer_ce": Flag.CRITICAL_EVENT, "peer_lf": Flag.LINK_FAULT}[op]
            flags ^= flag
            pair.call("b", "set_local_flags", flag, bool(flags & flag))
        checker.check()
    pair.run_for(0.5)
    checker.check()
    return pair, checker


@SETTINGS
@given(lm=monitoring(), steps=st.lists(step, min_size=5, max_size=40))
def test_at_most_one_event_per_window(lm: LinkMonitoringSettings, steps: list[Any]) -> None:
    pair, _ = run(lm, steps)
    frames = [s[2] for s in steps]
    for kind, field in ((kind, facts.key) for kind, facts in FACTS.items()):
        settings_ = getattr(lm, field)
        if not settings_.enabled:
            continue
        log_type = {
            MonitorKind.ERRORED_SYMBOL_PERIOD: "ERRORED_SYMBOL_EVENT",
            MonitorKind.ERRORED_FRAME: "ERRORED_FRAME_EVENT",
            MonitorKind.ERRORED_FRAME_PERIOD: "ERRORED_FRAME_PERIOD_EVENT",
            MonitorKind.ERRORED_FRAME_SECONDS: "ERRORED_FRAME_SECONDS_EVENT",
        }[kind]
        times = [e.time for e in raised(pair) if e.location is Location.LOCAL and e.event_type.name == log_type]
        samples = [round(t - 1.0) for t in times]
        assert all(float(s) + 1.0 == t for s, t in zip(samples, times, strict=True)), times  # at a sample
        assert len(samples) == len(set(samples)), (kind, times)  # at most one per window
        assert set(samples) <= window_ends(kind, settings_.window, frames), (kind, times)


@SETTINGS
@given(lm=monitoring(), steps=st.lists(step, min_size=5, max_size=40))
def test_out_of_service_exactly_while_an_active_event_affects_the_port(
    lm: LinkMonitoringSettings, steps: list[Any]
) -> None:
    pair, checker = run(lm, steps)
    assert checker.checks >= len(steps)
    # and the holders named in the last change are the affecting active events
    active = [e for e in pair.a.link_monitoring.active_events() if e.port_affecting]
    assert len(pair.a.link_monitoring.holders()) == len(active)


def test_window_ends_model() -> None:
    assert window_ends(MonitorKind.ERRORED_FRAME, 2.0, [0] * 6) == {2, 4, 6}
    assert window_ends(MonitorKind.ERRORED_FRAME_PERIOD, 1_000, [600, 600, 300, 800, 100]) == {2, 4}
