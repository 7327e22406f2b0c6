"""The ports' timer slack (issue 18, `efmoam.daemon.loop.timer_slack`): deadlines within
1 % of the shortest transmit interval of each other share a wake-up, none is served
later than that, and ports served together stay together.

The daemon is real and not started: its loop is played here as `Loop.run` plays it
(`_wakeup`, then `_due` at that time) on a clock the test moves."""

from __future__ import annotations

import itertools
import math
import types
from pathlib import Path

import pytest
import yaml

from efmoam.daemon.loop import TIMER_SLACK_MAX, timer_slack
from tests.daemon.test_poll_slices import daemon_with_ports

INFORMATION = 0x00


@pytest.mark.parametrize(
    ("intervals", "slack"), [([1.0], 0.01), ([1.0, 0.1], 0.001), ([10.0], TIMER_SLACK_MAX), ([], 0.0)]
)
def test_the_slack_is_a_hundredth_of_the_shortest_transmit_interval(intervals: list[float], slack: float) -> None:
    assert timer_slack(intervals) == pytest.approx(slack)


def keep_alive_times(sent: dict[str, list[float]]) -> dict[str, list[float]]:
    return {name: times for name, times in sent.items() if times}


@pytest.mark.parametrize(("transmit_interval", "wakeups_at_most"), [(1.0, 6), (0.1, 6)])
def test_spread_keep_alives_share_wakeups_and_none_is_late_by_more_than_the_slack(
    tmp_path: Path, transmit_interval: float, wakeups_at_most: int
) -> None:
    """50 ports whose keep-alives fall 0.1 % of the interval apart (5 % of it in all):
    about five wake-ups a transmit interval instead of fifty; every port still sends one
    keep-alive an interval, never more than the slack after it was due."""
    step = transmit_interval / 1000
    daemon, clock, _ = daemon_with_ports(tmp_path, 50, {"transmit_interval": transmit_interval}, spread=step)
    slack = transmit_interval / 100
    assert daemon._deadlines.slack == pytest.approx(slack)
    daemon.poll.next_at = math.inf  # the counter poll is not what this measures
    clock.now += 50 * step
    sent: dict[str, list[float]] = {name: [] for name in daemon.ports}
    for runtime in daemon.ports.values():
        runtime.flush(clock.now)  # scheduled: each port's next keep-alive
    due = {name: runtime.port.next_deadline() for name, runtime in daemon.ports.items()}
    wakeups = 0
    end = clock.now + 10 * transmit_interval
    while clock.now < end:
        wake = daemon._wakeup(clock.now)
        assert wake is not None
        clock.now = max(clock.now, wake)
        before = {name: len(runtime.sock.sent) for name, runtime in daemon.ports.items()}  # type: ignore[attr-defined]
        daemon._due(clock.now)
        wakeups += 1
        for name, runtime in daemon.ports.items():
            new = runtime.sock.sent[before[name] :]  # type: ignore[attr-defined]
            if new:
                assert [frame[17] for frame in new] == [INFORMATION]
                deadline = due[name]
                assert deadline is not None
                assert deadline <= clock.now <= deadline + slack + 1e-9, (name, clock.now - deadline)
                sent[name].append(clock.now)
            due[name] = runtime.port.next_deadline()
    times = keep_alive_times(sent)
    assert len(times) == 50
    for name, when in times.items():
        assert len(when) >= 9, (name, when)
        gaps = [b - a for a, b in itertools.pairwise(when)]
        assert max(gaps) <= transmit_interval + slack + 1e-9, (name, gaps)
    assert wakeups <= wakeups_at_most * 10, wakeups  # without the slack: fifty an interval


def test_a_reload_takes_the_new_shortest_interval(tmp_path: Path) -> None:
    daemon, _, _ = daemon_with_ports(tmp_path, 1)
    assert daemon._deadlines.slack == pytest.approx(0.01)
    config_file = tmp_path / "efmoam.yaml"
    rules = [{"match": "p*"}, {"match": "q*", "transmit_interval": 0.2}]
    settings = {"daemon": {"state_dir": str(tmp_path)}, "ports": rules}
    config_file.write_text(yaml.safe_dump(settings))
    daemon.config_path = str(config_file)
    daemon._links = types.SimpleNamespace(links={})  # type: ignore[assignment]  # (no link: the port goes)
    daemon.reload(daemon._clock())
    assert daemon._deadlines.slack == pytest.approx(0.002)  # a rule that fits no port counts too
    assert not daemon.ports


def test_a_deadline_already_come_wakes_the_loop_at_once(tmp_path: Path) -> None:
    """What a wake-up's slice left (or what came due while it worked) is not slacked twice."""
    daemon, clock, _ = daemon_with_ports(tmp_path, 1)
    [runtime] = daemon.ports.values()
    runtime.flush(clock.now)
    deadline = runtime.port.next_deadline()
    assert deadline is not None and deadline > clock.now
    daemon.poll.next_at = math.inf
    assert daemon._wakeup(clock.now) == pytest.approx(deadline + 0.01)
    assert daemon._wakeup(deadline + 0.004) == deadline
