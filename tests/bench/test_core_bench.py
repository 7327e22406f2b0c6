"""Steady-state cost of the engine: ports exchanging Information OAMPDUs as bytes.

Pairs of `OamPort` cores are brought to SEND_ANY, then driven the way the daemon
drives them: at each tick every port's timer runs, its frames are drained and handed
to its peer's `receive`.  The figure to read is microseconds per port-second
(``stats["mean"] / ports / seconds``), printed in ``extra_info``.

Run with ``pytest tests/bench --benchmark-enable``.
"""

from __future__ import annotations

from typing import Any

import pytest

from efmoam.core import DiscoveryState, OamPort, PortSettings, Transmit


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


@pytest.mark.parametrize(
    ("ports", "rate"),
    [(4096, 1), (512, 10)],
    ids=["4096-ports-1pps", "512-ports-10pps"],
)
def test_steady_state_cost(benchmark: Any, ports: int, rate: int) -> None:
    interval = 1.0 / rate
    pairs = make_pairs(ports // 2, PortSettings(transmit_interval=interval))
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
