"""Counter sources: fixture sysfs trees, counter files, fakes for the netlink/ioctl clients,
and (as root) the real sources on a veth pair, which has none of the IEEE counters."""

from __future__ import annotations

import errno
import json
import shutil
import subprocess
import tempfile
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from efmoam.core.linkmon.counters import COUNTERS, STANDARD_COUNTERS, CounterDeltas, CounterSample
from efmoam.linux.counters import (
    DRIVER_COUNTERS,
    AutoSource,
    BaseCounterSource,
    CounterError,
    DriverSource,
    EthtoolStatsSource,
    FileSource,
    InfinibandSource,
    RtnetlinkSource,
    SysfsSource,
    find_infiniband_port,
    open_counter_source,
)
from efmoam.linux.ethtool import EthtoolError, FecStat
from efmoam.linux.netlink import LinkCounters, NetlinkError, RtnlClient, Stats64Picker
from tests.linux.netns import in_netns, needs_root, veth_pair

SYSFS = Path(__file__).parent / "fixtures" / "sysfs"


# --------------------------------------------------------------------------- sysfs fixtures


def test_sysfs_source_sums_crc_and_alignment_errors() -> None:
    source = open_counter_source("sysfs", sysfs_root=SYSFS)
    assert source.name == "sysfs"
    assert source.read("eth0") == CounterSample(
        errored_frames=5, frames_received=1000, symbol_errors=None, carrier_down_count=4
    )
    assert source.provides("eth0") == {
        "errored_frames": "sysfs statistics/rx_crc_errors + statistics/rx_frame_errors",
        "frames_received": "sysfs statistics/rx_packets",
        "carrier_down_count": "sysfs carrier_down_count",
    }


def test_sysfs_missing_files_are_none() -> None:
    source = SysfsSource(SYSFS)
    assert source.read("eth1") == CounterSample(errored_frames=1, frames_received=50)  # no rx_frame_errors
    assert source.provides("eth1")["errored_frames"] == "sysfs statistics/rx_crc_errors"
    assert source.read("eth2") == CounterSample(errored_frames=None, frames_received=10)
    assert source.read("eth3") == CounterSample()  # no statistics directory at all
    assert source.provides("eth3") == {}


def test_sysfs_missing_interface_is_an_error() -> None:
    source = SysfsSource(SYSFS)
    with pytest.raises(CounterError, match="no interface"):
        source.read("nonexistent0")
    assert source.provides("nonexistent0") == {}


def test_a_counter_going_backwards_is_reported_raw(tmp_path: Path) -> None:
    root = tmp_path / "sys"
    shutil.copytree(SYSFS, root)
    source = SysfsSource(root)
    deltas = CounterDeltas()
    deltas.update(source.read("eth0"))
    (root / "class/net/eth0/statistics/rx_crc_errors").write_text("1\n")  # driver reset
    (root / "class/net/eth0/statistics/rx_packets").write_text("1010\n")
    sample = source.read("eth0")
    assert sample == CounterSample(errored_frames=3, frames_received=1010, carrier_down_count=4)  # 1 + 2, as read
    result = deltas.update(sample)  # the core takes a decrease as a reset: the new value is the delta
    by_name = dict(zip(COUNTERS, result, strict=True))
    standard = {name: by_name[name] for name in STANDARD_COUNTERS}
    assert standard == {"errored_frames": 3, "frames_received": 10, "symbol_errors": None}


def test_garbage_in_a_counter_file_is_none(tmp_path: Path) -> None:
    root = tmp_path / "sys"
    shutil.copytree(SYSFS, root)
    (root / "class/net/eth0/statistics/rx_packets").write_text("not a number\n")
    assert SysfsSource(root).read("eth0") == CounterSample(errored_frames=5, frames_received=None, carrier_down_count=4)


# --------------------------------------------------------------------------- infiniband fixtures


def test_infiniband_port_lookup() -> None:
    assert find_infiniband_port(SYSFS, "ib0") == ("mlx5_0", "1")  # device/infiniband, one port
    assert find_infiniband_port(SYSFS, "dual1") == ("mlx5_2", "2")  # dev_port 1 -> port 2
    assert find_infiniband_port(SYSFS, "roce1") == ("mlx5_1", "1")  # GID table, an unreadable entry skipped
    assert find_infiniband_port(SYSFS, "eth0") is None
    assert find_infiniband_port(Path("/nonexistent"), "ib0") is None


def test_infiniband_counters() -> None:
    source = open_counter_source("infiniband", sysfs_root=SYSFS)
    # port_rcv_packets (32 bits), excessive_buffer_overrun_errors (4) and link_error_recovery (8)
    # are saturated at all-ones: reported as read
    assert source.read("ib0") == CounterSample(
        errored_frames=4,
        frames_received=4294967295,
        symbol_errors=12,
        ib_link_downed=3,
        ib_excessive_buffer_overrun_errors=15,
        ib_link_error_recovery=255,
        ib_local_link_integrity_errors=1,
    )
    assert source.provides("ib0") == {
        "errored_frames": "infiniband mlx5_0 port 1 port_rcv_errors",
        "frames_received": "infiniband mlx5_0 port 1 port_rcv_packets",
        "symbol_errors": "infiniband mlx5_0 port 1 symbol_error",
        "ib_link_downed": "infiniband mlx5_0 port 1 link_downed",
        "ib_excessive_buffer_overrun_errors": "infiniband mlx5_0 port 1 excessive_buffer_overrun_errors",
        "ib_link_error_recovery": "infiniband mlx5_0 port 1 link_error_recovery",
        "ib_local_link_integrity_errors": "infiniband mlx5_0 port 1 local_link_integrity_errors",
    }
    assert source.read("dual1") == CounterSample(errored_frames=20, frames_received=2000, symbol_errors=200)
    assert source.read("roce1") == CounterSample(errored_frames=1, frames_received=None, symbol_errors=0)
    assert "frames_received" not in source.provides("roce1")


def test_netdevs_without_rdma_device_have_no_infiniband_counters() -> None:
    source = InfinibandSource(SYSFS)
    assert source.read("eth0") == CounterSample()
    assert source.provides("eth0") == {}
    assert source.read("nonexistent0") == CounterSample()


def test_infiniband_counter_going_backwards_and_device_going_away(tmp_path: Path) -> None:
    root = tmp_path / "sys"
    shutil.copytree(SYSFS, root)
    source = InfinibandSource(root)
    assert source.read("ib0").symbol_errors == 12
    counters = root / "class/infiniband/mlx5_0/ports/1/counters"
    (counters / "symbol_error").write_text("0\n")  # counters cleared (perfquery -R)
    assert source.read("ib0").symbol_errors == 0
    shutil.rmtree(root / "class/infiniband/mlx5_0")
    assert source.read("ib0") == CounterSample()


# --------------------------------------------------------------------------- counter file


def write_json(path: Path, document: object) -> Path:
    path.write_text(json.dumps(document))
    return path


def test_file_source_json(tmp_path: Path) -> None:
    path = write_json(
        tmp_path / "counters.json", {"eth0": {"errored_frames": 12, "frames_received": 1000, "symbol_errors": 0}}
    )
    source = open_counter_source("file", counter_file=path)
    assert source.read("eth0") == CounterSample(12, 1000, 0)
    assert source.provides("eth0") == {
        name: f"file {path} {name}" for name in ("errored_frames", "frames_received", "symbol_errors")
    }
    assert source.read("eth9") == CounterSample()  # a port not in the file provides nothing
    assert source.provides("eth9") == {}


def test_file_source_yaml_missing_keys_and_nulls(tmp_path: Path) -> None:
    path = tmp_path / "counters.yaml"
    path.write_text("eth0:\n  errored_frames: 7\n  frames_received: null\neth1:\n")
    source = FileSource(path)
    assert source.read("eth0") == CounterSample(errored_frames=7)
    assert source.provides("eth0") == {"errored_frames": f"file {path} errored_frames"}
    assert source.read("eth1") == CounterSample()


def test_file_is_read_again_on_every_read(tmp_path: Path) -> None:
    path = write_json(tmp_path / "c.json", {"eth0": {"errored_frames": 1}})
    source = FileSource(path)
    assert source.read("eth0").errored_frames == 1
    write_json(path, {"eth0": {"errored_frames": 5, "symbol_errors": 2}})
    assert source.read("eth0") == CounterSample(errored_frames=5, symbol_errors=2)


@pytest.mark.parametrize(
    "bad",
    [
        "{not json",
        json.dumps(["eth0"]),
        json.dumps({"eth0": 12}),
        json.dumps({"eth0": {"errored_frames": -1}}),
        json.dumps({"eth0": {"errored_frames": "12"}}),
        json.dumps({"eth0": {"errored_frames": True}}),
        json.dumps({"eth0": {"errored_frames": 1.5}}),
        json.dumps({"eth0": {"erored_frames": 1}}),  # a typo must not silently disable a monitor
    ],
)
def test_an_invalid_file_keeps_the_last_values_and_raises(tmp_path: Path, bad: str) -> None:
    path = write_json(tmp_path / "c.json", {"eth0": {"errored_frames": 3, "frames_received": 30}})
    source = FileSource(path)
    assert source.read("eth0") == CounterSample(3, 30)
    path.write_text(bad)
    with pytest.raises(CounterError) as broken:
        source.read("eth0")
    assert broken.value.sample == CounterSample(3, 30)
    assert source.provides("eth0") == {
        "errored_frames": f"file {path} errored_frames",
        "frames_received": f"file {path} frames_received",
    }
    write_json(path, {"eth0": {"errored_frames": 4, "frames_received": 40}})
    assert source.read("eth0") == CounterSample(4, 40)


def test_an_unreadable_file_before_any_good_read(tmp_path: Path) -> None:
    source = FileSource(tmp_path / "missing.yaml")
    with pytest.raises(CounterError) as missing:
        source.read("eth0")
    assert missing.value.sample is None
    assert source.provides("eth0") == {}
    (tmp_path / "missing.yaml").write_text("eth0: {symbol_errors: 9}\n")
    assert source.read("eth0") == CounterSample(symbol_errors=9)
    (tmp_path / "missing.yaml").unlink()
    with pytest.raises(CounterError) as gone:
        source.read("eth0")
    assert gone.value.sample == CounterSample(symbol_errors=9)


def test_open_counter_source_refuses_unknown_kinds() -> None:
    with pytest.raises(ValueError, match="unknown counter source"):
        open_counter_source("snmp")
    with pytest.raises(ValueError, match="counter file"):
        open_counter_source("file")


# --------------------------------------------------------------------------- netlink/ioctl sources, faked


NO_FEC = EthtoolError(errno.EOPNOTSUPP, "no FEC")


class FakeEthtool:
    def __init__(self, stats: dict[str, int] | EthtoolError, fec: dict[str, FecStat] | EthtoolError = NO_FEC) -> None:
        self.result = stats
        self.fec = fec
        self.fec_requests = 0

    def stats(self, ifname: str) -> dict[str, int]:
        if isinstance(self.result, EthtoolError):
            raise self.result
        return dict(self.result)

    def fec_stats(self, ifname: str) -> dict[str, FecStat]:
        self.fec_requests += 1
        if isinstance(self.fec, EthtoolError):
            raise self.fec
        return dict(self.fec)

    def close(self) -> None:
        pass


def test_ethtool_source_sums_the_standard_counters_present() -> None:
    stats = {"FrameCheckSequenceErrors": 3, "AlignmentErrors": 1, "etherStatsFragments": 2, "etherStatsJabbers": 1,
             "etherStatsOversizePkts": 50, "FramesReceivedOK": 1000, "SymbolErrorDuringCarrier": 4}  # fmt: skip
    source = EthtoolStatsSource(FakeEthtool(stats))  # type: ignore[arg-type]
    assert source.read("eth0") == CounterSample(errored_frames=7, frames_received=1000, symbol_errors=4)  # not oversize
    assert source.provides("eth0") == {
        "errored_frames": "ethtool eth-mac FrameCheckSequenceErrors + eth-mac AlignmentErrors"
        " + rmon etherStatsFragments + rmon etherStatsJabbers",
        "frames_received": "ethtool eth-mac FramesReceivedOK",
        "symbol_errors": "ethtool eth-phy SymbolErrorDuringCarrier",
    }


def test_ethtool_source_absent_counters_are_none_not_zero() -> None:
    only_fcs = EthtoolStatsSource(FakeEthtool({"FrameCheckSequenceErrors": 0}))  # type: ignore[arg-type]
    assert only_fcs.read("eth0") == CounterSample(errored_frames=0)
    nothing = EthtoolStatsSource(FakeEthtool({"OctetsReceivedOK": 10}))  # type: ignore[arg-type]
    assert nothing.read("eth0") == CounterSample()
    assert nothing.provides("eth0") == {}
    old_kernel = EthtoolStatsSource(FakeEthtool(EthtoolError(errno.EOPNOTSUPP, "no STATS_GET")))  # type: ignore[arg-type]
    assert old_kernel.read("eth0") == CounterSample()
    gone = EthtoolStatsSource(FakeEthtool(EthtoolError(errno.ENODEV, "no device")))  # type: ignore[arg-type]
    with pytest.raises(CounterError):
        gone.read("eth0")
    assert gone.provides("eth0") == {}


class FakeRtnl:
    def __init__(self) -> None:
        self.stats = {"eth0": {"rx_packets": 10, "rx_crc_errors": 1, "rx_frame_errors": 0}}
        self.dumps = 0
        self.requests = 0

    def dump_link_counters(self, picker: Stats64Picker) -> dict[int, LinkCounters]:
        self.dumps += 1
        return {
            index: (name, tuple(values.get(field) for field in picker.fields), None)
            for index, (name, values) in enumerate(self.stats.items(), 1)
        }

    def link_stats64(self, ifname: str, *, with_carrier: bool = False) -> dict[str, int]:
        self.requests += 1
        if ifname not in self.stats:
            raise NetlinkError(errno.ENODEV, "No such device")
        return dict(self.stats[ifname])


def test_rtnetlink_source_per_request_and_from_a_recent_dump() -> None:
    client = FakeRtnl()
    per_request = RtnetlinkSource(client)  # type: ignore[arg-type]
    assert per_request.read("eth0") == CounterSample(errored_frames=1, frames_received=10)
    assert (client.requests, client.dumps) == (1, 0)
    cached = RtnetlinkSource(client, max_age=60.0)  # type: ignore[arg-type]
    cached.read("eth0")
    client.stats["eth0"]["rx_packets"] = 20
    assert cached.read("eth0").frames_received == 10  # from the dump
    assert client.dumps == 1
    cached.invalidate()
    assert cached.read("eth0").frames_received == 20
    with pytest.raises(CounterError, match="No such device"):
        cached.read("eth9")  # not in the dump: asked directly, and refused
    assert (client.dumps, client.requests) == (2, 2)


class FakeIoctl:
    def __init__(self, driver: str | EthtoolError, statistics: dict[str, int]) -> None:
        self._driver = driver
        self._statistics = statistics

    def driver(self, ifname: str) -> str:
        if isinstance(self._driver, EthtoolError):
            raise self._driver
        return self._driver

    def statistics(self, ifname: str) -> dict[str, int]:
        return dict(self._statistics)

    def close(self) -> None:
        pass


def test_driver_source_maps_mlx5_names() -> None:
    statistics = {"rx_crc_errors_phy": 2, "rx_fragments_phy": 1, "rx_jabbers_phy": 1, "rx_oversize_pkts_phy": 9,
                  "rx_packets_phy": 500, "rx_symbol_err_phy": 6, "rx_pcs_symbol_err_phy": 99}  # fmt: skip
    source = DriverSource(FakeIoctl("mlx5_core", statistics))  # type: ignore[arg-type]
    assert source.read("eth0") == CounterSample(errored_frames=4, frames_received=500, symbol_errors=6)
    assert source.provides("eth0")["symbol_errors"] == "driver mlx5_core ethtool -S rx_symbol_err_phy"


def test_driver_source_i40e_frames_and_missing_names() -> None:
    statistics = {"port.rx_crc_errors": 1, "port.rx_unicast": 10, "port.rx_multicast": 2, "port.rx_broadcast": 3}
    source = DriverSource(FakeIoctl("i40e", statistics))  # type: ignore[arg-type]
    assert source.read("eth0") == CounterSample(errored_frames=1, frames_received=15, symbol_errors=None)


@pytest.mark.parametrize("driver", ["veth", "virtio_net", "r8169", EthtoolError(errno.EOPNOTSUPP, "no drvinfo")])
def test_driver_source_knows_nothing_for_other_drivers(driver: str | EthtoolError) -> None:
    source = DriverSource(FakeIoctl(driver, {"rx_crc_errors": 1}))  # type: ignore[arg-type]
    assert source.read("eth0") == CounterSample()
    assert source.provides("eth0") == {}


def test_driver_map_covers_what_linux_md_lists() -> None:
    listed = {"mlx5_core", "bnxt_en", "ice", "i40e", "ixgbe", "igb", "e1000e", "virtio_net", "veth"}
    assert listed <= set(DRIVER_COUNTERS)
    with_symbols = {name for name, recipe in DRIVER_COUNTERS.items() if recipe["symbol_errors"]}
    assert with_symbols == {"mlx5_core", "bnxt_en"}


class FakeSource(BaseCounterSource):
    def __init__(self, name: str, sample: CounterSample) -> None:
        self.name = name
        self.sample: CounterSample | CounterError = sample
        self.reads = 0
        self.probes = 0

    def read(self, ifname: str, counters: Collection[str] | None = None) -> CounterSample:
        self.reads += 1
        if isinstance(self.sample, CounterError):
            raise self.sample
        return self.sample

    def provides(self, ifname: str) -> dict[str, str]:
        self.probes += 1
        if isinstance(self.sample, CounterError):
            return {}
        return {
            k: f"{self.name} {k}"
            for k in ("errored_frames", "frames_received", "symbol_errors")
            if getattr(self.sample, k) is not None
        }


def test_auto_takes_each_counter_from_the_first_source_that_has_it() -> None:
    ethtool = FakeSource("ethtool", CounterSample(errored_frames=None, frames_received=None, symbol_errors=None))
    driver = FakeSource("driver", CounterSample(symbol_errors=7))
    rtnl = FakeSource("rtnetlink", CounterSample(errored_frames=3, frames_received=100, symbol_errors=None))
    infiniband = FakeSource("infiniband", CounterSample(symbol_errors=99, errored_frames=99))
    auto = AutoSource([ethtool, driver, infiniband, rtnl])
    assert auto.read("eth0") == CounterSample(errored_frames=99, frames_received=100, symbol_errors=7)
    assert auto.provides("eth0") == {
        "symbol_errors": "driver symbol_errors",
        "errored_frames": "infiniband errored_frames",
        "frames_received": "rtnetlink frames_received",
    }
    auto.read("eth0")
    assert (ethtool.reads, ethtool.probes, driver.probes) == (0, 1, 1)  # the plan is made once
    assert (driver.reads, rtnl.reads) == (2, 2)


def test_a_poll_reads_every_source_alike_and_snapshots_are_shared_where_a_source_has_them(tmp_path: Path) -> None:
    """`share_snapshots` reaches an auto source's parts; `read_in_poll` reads a file
    source's look of the poll's start (a rewrite is seen by the next poll, not this one)
    and a source with no snapshot by name."""
    path = tmp_path / "counters.json"
    path.write_text(json.dumps({"eth0": {"errored_frames": 1}}))
    file_source = FileSource(path)
    with RtnetlinkSource(RtnlClient()) as rtnl:
        by_name = FakeSource("driver", CounterSample(symbol_errors=5))
        AutoSource([rtnl, by_name, file_source]).share_snapshots(0.5)
        assert rtnl.max_age == file_source.max_age == 0.5
    assert file_source.read_in_poll("eth0", 7, None, 10.0).errored_frames == 1
    path.write_text(json.dumps({"eth0": {"errored_frames": 22}}))
    assert file_source.read_in_poll("eth0", 7, None, 10.0).errored_frames == 1  # the same poll
    assert file_source.read_in_poll("eth0", 7, None, 11.0).errored_frames == 22  # the next one
    assert by_name.read_in_poll("eth0", 7, None, 10.0) == CounterSample(symbol_errors=5)
    assert by_name.reads == 1


def test_auto_probes_again_after_a_failed_read() -> None:
    first = FakeSource("ethtool", CounterSample(errored_frames=1))
    last = FakeSource("rtnetlink", CounterSample(errored_frames=2, frames_received=20))
    auto = AutoSource([first, last])
    assert auto.read("eth0") == CounterSample(errored_frames=1, frames_received=20)
    first.sample = CounterError("device reset")
    with pytest.raises(CounterError):
        auto.read("eth0")
    assert auto.read("eth0") == CounterSample(errored_frames=2, frames_received=20)
    auto.reprobe()
    assert first.probes == 2


def test_auto_with_no_source_for_an_interface_raises_and_probes_again() -> None:
    nothing = FakeSource("rtnetlink", CounterError("no such device"))  # type: ignore[arg-type]
    auto = AutoSource([nothing])
    with pytest.raises(CounterError, match="no counter source"):
        auto.read("eth7")
    assert auto.provides("eth7") == {}
    nothing.sample = CounterSample(frames_received=1)
    assert auto.read("eth7") == CounterSample(frames_received=1)


# --------------------------------------------------------------------------- real sources on veth


@contextmanager
def mounted_sysfs(netns: str) -> Iterator[Path]:
    """A sysfs instance of `netns`, mounted in a temporary directory (sysfs shows the mounter's namespace)."""
    root = Path(tempfile.mkdtemp(prefix="efmoam-sysfs-"))
    try:
        subprocess.run(["nsenter", f"--net=/run/netns/{netns}", "mount", "-t", "sysfs", "sysfs", str(root)],
                       check=True, capture_output=True)  # fmt: skip
        try:
            yield root
        finally:
            subprocess.run(["umount", "-l", str(root)], check=False, capture_output=True)
    finally:
        root.rmdir()


@needs_root
def test_auto_on_veth_uses_rtnetlink_and_has_no_symbol_errors() -> None:
    with veth_pair() as (ns_a, _), in_netns(ns_a, lambda: open_counter_source("auto")) as auto:
        provides = auto.provides("veth0")
        assert provides == {
            "errored_frames": "rtnetlink IFLA_STATS64 rx_crc_errors + IFLA_STATS64 rx_frame_errors",
            "frames_received": "rtnetlink IFLA_STATS64 rx_packets",
            "carrier_down_count": "rtnetlink IFLA_CARRIER_DOWN_COUNT",
        }
        sample = auto.read("veth0")
        with in_netns(ns_a, RtnlClient) as client:
            stats = client.link_stats64("veth0")
        assert sample.symbol_errors is None
        assert sample.errored_frames == stats["rx_crc_errors"] + stats["rx_frame_errors"] == 0
        assert sample.frames_received is not None and sample.frames_received <= stats["rx_packets"]
        with pytest.raises(CounterError):
            auto.read("nonexistent0")


@needs_root
def test_ethtool_and_driver_sources_on_veth_provide_nothing() -> None:
    with veth_pair() as (ns_a, _):
        for kind in ("ethtool", "driver"):
            with in_netns(ns_a, lambda kind=kind: open_counter_source(kind)) as source:  # type: ignore[misc]
                assert source.read("veth0") == CounterSample()
                assert source.provides("veth0") == {}
        with in_netns(ns_a, lambda: open_counter_source("ethtool")) as ethtool, pytest.raises(CounterError):
            ethtool.read("nonexistent0")


@needs_root
@pytest.mark.skipif(shutil.which("nsenter") is None, reason="needs nsenter (util-linux)")
def test_sysfs_and_rtnetlink_sources_agree_on_veth() -> None:
    with veth_pair() as (ns_a, _), mounted_sysfs(ns_a) as sysfs_root:
        sysfs = open_counter_source("sysfs", sysfs_root=sysfs_root)
        with in_netns(ns_a, lambda: open_counter_source("rtnetlink")) as rtnl:
            assert isinstance(rtnl, RtnetlinkSource)
            for _ in range(10):  # IPv6 chatter after bring-up may land between the reads
                before = sysfs.read("veth0")
                if rtnl.read("veth0") == before == sysfs.read("veth0"):
                    break
            else:
                pytest.fail("sysfs and rtnetlink never agreed")
            assert (
                sysfs.provides("veth0").keys()
                == rtnl.provides("veth0").keys()
                == {"errored_frames", "frames_received", "carrier_down_count"}
            )
