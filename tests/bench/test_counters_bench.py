"""Cost of one full counter poll of 256 interfaces: rtnetlink versus sysfs (root).

128 veth pairs are made inside one network namespace; a poll reads errored frames and
frames received of all 256 of them the way each counter source does it:

* ``rtnl-getlink-dump``: one RTM_GETLINK dump with IFLA_STATS64 (`RtnlClient.dump_stats`),
* ``rtnl-getstats-dump``: one RTM_GETSTATS dump (IFLA_STATS_LINK_64, by ifindex, no names),
* ``rtnl-per-port``: `RtnetlinkSource.read` per interface (one RTM_GETLINK request each),
* ``rtnl-per-port-cached-dump``: the same with ``max_age=0.5``: the first read of a poll
  takes one RTM_GETLINK dump, the other 255 are served from it,
* ``sysfs-per-port``: `SysfsSource.read` per interface (three files each, on a sysfs
  mounted from inside the namespace),
* ``ethtool-per-port``: `EthtoolStatsSource.read` per interface (one STATS_GET each; veth
  answers with empty groups, so this is the kernel round trip alone).

The figure to read is ``ms_per_poll`` in ``extra_info``.  Measures, never asserts a time.
Run with ``pytest tests/bench/test_counters_bench.py --benchmark-enable``.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from efmoam.core.linkmon.counters import CounterSample
from efmoam.linux.counters import NETDEV_RECIPE, EthtoolStatsSource, RtnetlinkSource, SysfsSource, sample_from
from efmoam.linux.ethtool import EthtoolNetlink
from efmoam.linux.netlink import RtnlClient
from tests.linux.netns import in_netns, needs_root
from tests.linux.test_counters import mounted_sysfs

pytestmark = [needs_root, pytest.mark.bench]

PAIRS = 128


@pytest.fixture(scope="module")
def namespace() -> Iterator[tuple[str, list[str], Path]]:
    """A namespace holding 128 veth pairs (all up), its interface names and its sysfs."""
    ns = f"efmoam-bench-{uuid.uuid4().hex[:8]}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        names = [name for i in range(PAIRS) for name in (f"bench{i}a", f"bench{i}b")]
        batch = "".join(f"link add bench{i}a type veth peer name bench{i}b\n" for i in range(PAIRS))
        batch += "".join(f"link set {name} up\n" for name in names)
        subprocess.run(["ip", "-n", ns, "-batch", "-"], input=batch, text=True, check=True, capture_output=True)
        with mounted_sysfs(ns) as sysfs_root:
            yield ns, names, sysfs_root
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False, capture_output=True)


def poll_getlink_dump(client: RtnlClient, names: list[str]) -> Callable[[], list[CounterSample]]:
    def poll() -> list[CounterSample]:
        stats = client.dump_stats()
        return [sample_from(stats[name], NETDEV_RECIPE) for name in names]

    return poll


def poll_getstats_dump(client: RtnlClient, names: list[str]) -> Callable[[], list[CounterSample]]:
    def poll() -> list[CounterSample]:
        return [sample_from(stats, NETDEV_RECIPE) for stats in client.dump_stats_by_index().values()]

    return poll


def poll_each(read: Callable[[str], CounterSample], names: list[str]) -> Callable[[], list[CounterSample]]:
    def poll() -> list[CounterSample]:
        return [read(name) for name in names]

    return poll


def poll_cached(source: RtnetlinkSource, names: list[str]) -> Callable[[], list[CounterSample]]:
    def poll() -> list[CounterSample]:
        source.invalidate()  # every round is a new poll, as a second later
        return [source.read(name) for name in names]

    return poll


METHODS = [
    "rtnl-getlink-dump",
    "rtnl-getstats-dump",
    "rtnl-per-port",
    "rtnl-per-port-cached-dump",
    "sysfs-per-port",
    "ethtool-per-port",
]


@pytest.mark.parametrize("method", METHODS)
def test_full_poll_of_256_interfaces(benchmark: Any, namespace: tuple[str, list[str], Path], method: str) -> None:
    ns, names, sysfs_root = namespace
    client = in_netns(ns, RtnlClient)
    ethtool = in_netns(ns, EthtoolNetlink)
    try:
        polls: dict[str, Callable[[], list[CounterSample]]] = {
            "rtnl-getlink-dump": poll_getlink_dump(client, names),
            "rtnl-getstats-dump": poll_getstats_dump(client, names),
            "rtnl-per-port": poll_each(RtnetlinkSource(client).read, names),
            "rtnl-per-port-cached-dump": poll_cached(RtnetlinkSource(client, max_age=0.5), names),
            "sysfs-per-port": poll_each(SysfsSource(sysfs_root).read, names),
            "ethtool-per-port": poll_each(EthtoolStatsSource(ethtool).read, names),
        }
        samples = benchmark.pedantic(polls[method], rounds=20, iterations=1, warmup_rounds=2)
        assert len(samples) >= len(names)
        if method != "ethtool-per-port":
            assert all(s.frames_received is not None and s.errored_frames is not None for s in samples)
        if benchmark.stats is not None:
            benchmark.extra_info["interfaces"] = len(names)
            benchmark.extra_info["ms_per_poll"] = round(benchmark.stats.stats.mean * 1e3, 3)
            benchmark.extra_info["us_per_interface"] = round(benchmark.stats.stats.mean / len(names) * 1e6, 2)
    finally:
        client.close()
        ethtool.close()
