"""Which counters a port reads through the auto source: the four monitors' always, a NIC
health monitor's only while it runs, so that a port without health monitors never asks
a source (``ethtool -S``, FEC statistics) that has nothing but health counters.

The daemon is real; its auto source is made of two counting sources standing for the
driver's ``ethtool -S`` names (health counters, and a carrier-down count that wins over
the kernel's) and rtnetlink (the standard counters and the kernel's carrier-down count)."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

import pytest
import yaml

from efmoam.config import PortProfile
from efmoam.config.loader import load_config_text
from efmoam.core.linkmon import CounterSample
from efmoam.daemon import main, polling
from efmoam.linux.counters import AutoSource, BaseCounterSource


class CountingSource(BaseCounterSource):
    """Fixed cumulative counters for any interface, and how often they were read."""

    def __init__(self, name: str, values: dict[str, int]) -> None:
        self.name = name
        self.values = values
        self.reads = 0
        self.closed = 0
        self.asked: list[frozenset[str]] = []  #: the counters each read was told are needed

    def read(self, ifname: str, counters: Collection[str] | None = None) -> CounterSample:
        self.reads += 1
        self.asked.append(frozenset(counters or ()))
        return CounterSample(**self.values)

    def provides(self, ifname: str) -> dict[str, str]:
        return {counter: f"{self.name} {counter}" for counter in self.values}

    def close(self) -> None:
        self.closed += 1


@pytest.fixture
def sources(monkeypatch: pytest.MonkeyPatch) -> tuple[CountingSource, CountingSource]:
    driver = CountingSource("driver", {"pause_storm_events": 4, "pause_frames_received": 9, "carrier_down_count": 2})
    netdev = CountingSource("rtnetlink", {"errored_frames": 1, "frames_received": 100, "carrier_down_count": 5})

    def open_counter_source(kind: str, **_: Any) -> BaseCounterSource:
        assert kind == "auto"
        return AutoSource([driver, netdev])

    monkeypatch.setattr(polling, "open_counter_source", open_counter_source)
    return driver, netdev


def daemon_and_profile(tmp_path: Path, link_monitoring: dict[str, Any]) -> tuple[main.Daemon, PortProfile]:
    config = load_config_text(
        yaml.safe_dump(
            {
                "daemon": {"state_dir": str(tmp_path)},
                "defaults": {"counter_source": "auto", "link_monitoring": link_monitoring},
                "ports": [{"match": "eth*"}],
            }
        )
    )
    profile = config.profile_for("eth0", physical=True)
    assert profile is not None
    return main.Daemon(config, None), profile


STANDARD = {"enabled": True, "errored_frame": {"enabled": True}, "errored_frame_period": {"enabled": True}}


def test_a_port_with_standard_monitors_only_never_reads_a_health_only_source(
    tmp_path: Path, sources: tuple[CountingSource, CountingSource]
) -> None:
    driver, netdev = sources
    daemon, profile = daemon_and_profile(tmp_path, STANDARD)
    source = daemon.poll.source_for(profile)
    for _ in range(3):
        sample = source.read("eth0")
    assert (driver.reads, netdev.reads) == (0, 3)
    assert (sample.errored_frames, sample.frames_received, sample.carrier_down_count) == (1, 100, None)
    # show lists what the port has, read or not: the health counters it could give
    assert source.provides("eth0") == {
        "pause_storm_events": "driver pause_storm_events",
        "pause_frames_received": "driver pause_frames_received",
        "carrier_down_count": "driver carrier_down_count",
        "errored_frames": "rtnetlink errored_frames",
        "frames_received": "rtnetlink frames_received",
    }


def test_a_port_with_pause_storm_reads_the_driver_too(
    tmp_path: Path, sources: tuple[CountingSource, CountingSource]
) -> None:
    driver, netdev = sources
    daemon, profile = daemon_and_profile(tmp_path, {**STANDARD, "pause_storm": {"enabled": True}})
    sample = daemon.poll.source_for(profile).read("eth0")
    assert (driver.reads, netdev.reads) == (1, 1)
    assert (sample.pause_storm_events, sample.pause_frames_received, sample.frames_received) == (4, 9, 100)
    assert sample.carrier_down_count is None  # link_flaps does not run
    assert set(daemon.poll.source_for(profile).provides("eth0")) == {
        "errored_frames", "frames_received", "pause_storm_events", "pause_frames_received", "carrier_down_count",
    }  # fmt: skip
    assert driver.asked[-1] >= {"pause_storm_events", "pause_frames_received", "pause_frames_sent"}
    assert "carrier_down_count" not in driver.asked[-1]  # told what is needed (the ethtool source skips FEC_GET)


def test_one_plan_per_counter_set_over_the_same_sources(
    tmp_path: Path, sources: tuple[CountingSource, CountingSource]
) -> None:
    driver, netdev = sources
    daemon, standard = daemon_and_profile(tmp_path, STANDARD)
    _, flaps = daemon_and_profile(tmp_path, {**STANDARD, "link_flaps": {"enabled": True, "window": 300}})
    _, flaps_again = daemon_and_profile(tmp_path, {"enabled": True, "link_flaps": {"enabled": True}})
    _, health_off = daemon_and_profile(tmp_path, {"enabled": False, "pause_storm": {"enabled": True}})
    plain, with_flaps = daemon.poll.source_for(standard), daemon.poll.source_for(flaps)
    assert with_flaps is not plain
    assert daemon.poll.source_for(flaps_again) is with_flaps  # the same counters: the same plan
    assert daemon.poll.source_for(health_off) is plain  # link monitoring off: no health monitor runs
    assert isinstance(plain, AutoSource) and isinstance(with_flaps, AutoSource)
    assert plain.sources == with_flaps.sources == [driver, netdev]
    assert with_flaps.read("eth0").carrier_down_count == 2  # the driver's count wins
    assert with_flaps.provides("eth0")["carrier_down_count"] == "driver carrier_down_count"
