"""Steady-state cost of the engine: ports exchanging Information OAMPDUs as bytes.

Pairs of `OamPort` cores are brought to SEND_ANY, then driven the way the daemon
drives them: at each tick every port's timer runs, its frames are drained and handed
to its peer's `receive`.  The figure to read is microseconds per port-second
(``stats["mean"] / ports / seconds``), printed in ``extra_info``.

Run with ``pytest tests/bench --benchmark-enable``.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from efmoam.core import DiscoveryState, OamPort, PortSettings, Transmit

try:  # the policy's settings (absent from trees before it, which this benchmark is compared with)
    from efmoam.core.policy.settings import Action, EventActions, PolicySettings, Recovery, Track, TrackKind

    BLOCK, LATCH = frozenset({Action.BLOCK}), frozenset({Action.ERROR_DISABLE, Action.EXEC})
    POLICY: object = PolicySettings(
        event_actions=EventActions(
            session_down=BLOCK, capabilities_conflict=LATCH, unidirectional=LATCH, wiring_conflict=BLOCK,
            remote_loopback=frozenset({Action.NOTIFY_PEER}),
        ),
        discovery_timeout=30.0, unidirectional_time=3.0, recovery=Recovery(auto_after=60.0),
        track=(Track(TrackKind.INTERFACE, "uplink0"), Track(TrackKind.UNIT, "frr.service")),
    )  # fmt: skip
except ImportError:
    POLICY = None


def make_pairs(count: int, settings: PortSettings) -> list[tuple[OamPort, OamPort]]:
    pairs = []
    for i in range(count):
        a = OamPort(settings, f"02:00:{i >> 8 & 0xFF:02x}:{i & 0xFF:02x}:00:0a", now=0.0)
        b = OamPort(settings, f"02:00:{i >> 8 & 0xFF:02x}:{i & 0xFF:02x}:00:0b", now=0.0)
        pairs.append((a, b))
    return pairs


def directions(pairs: list[tuple[OamPort, OamPort]]) -> list[tuple[OamPort, OamPort]]:
    """Every (sender, receiver) of the pairs: both ways."""
    return [d for a, b in pairs for d in ((a, b), (b, a))]


def exchange(links: list[tuple[OamPort, OamPort]], now: float) -> int:
    """One tick: timers, then every frame to the other side.  Returns frames moved."""
    moved = 0
    for sender, receiver in links:
        deadline = sender.next_deadline()
        # the daemon wakes at the deadline itself; ticks here may be an ulp early
        if deadline is not None and deadline <= now + 1e-9:
            sender.handle_timer(now=max(now, deadline))
        for output in sender.take_outputs():
            if type(output) is Transmit:
                receiver.receive(output.frame, now=now)
                moved += 1
    return moved


def settle(pairs: list[tuple[OamPort, OamPort]], interval: float) -> float:
    now = 0.0
    links = directions(pairs)
    for _ in range(20):
        now += interval
        exchange(links, now)
    assert all(a.state is DiscoveryState.SEND_ANY and b.state is DiscoveryState.SEND_ANY for a, b in pairs)
    return now


@pytest.mark.parametrize("policy", ["default", "policy-on"])
@pytest.mark.parametrize(
    ("ports", "rate"),
    [(4096, 1), (512, 10)],
    ids=["4096-ports-1pps", "512-ports-10pps"],
)
def test_steady_state_cost(benchmark: Any, ports: int, rate: int, policy: str) -> None:
    """`policy-on`: every session event acting, timeouts, recovery and two tracked conditions."""
    interval = 1.0 / rate
    settings = PortSettings(transmit_interval=interval)
    if policy == "policy-on":
        if POLICY is None:
            pytest.skip("this tree has no action policy")
        settings = attrs.evolve(settings, policy=POLICY)
    pairs = make_pairs(ports // 2, settings)
    clock = [settle(pairs, interval)]
    links = directions(pairs)
    seconds = 1.0

    def one_second() -> int:
        moved = 0
        for _ in range(rate):
            clock[0] += interval
            moved += exchange(links, clock[0])
        return moved

    moved = benchmark.pedantic(one_second, rounds=5, iterations=1, warmup_rounds=1)
    # every port sent (and received) `rate` Information OAMPDUs in that second
    assert moved == ports * rate
    assert all(a.state is DiscoveryState.SEND_ANY for a, _ in pairs)
    if benchmark.stats is not None:
        per_port_second = benchmark.stats.stats.mean / (ports * seconds) * 1e6
        benchmark.extra_info["us_per_port_second"] = round(per_port_second, 3)
        benchmark.extra_info["percent_of_one_core"] = round(per_port_second * ports / 1e6 * 100, 2)
