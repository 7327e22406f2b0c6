"""The NIC health counters' sources (issue 17): FEC_GET replies built as the kernel sends
them (fixtures/genetlink/*.hex), driver names, IFLA_CARRIER_DOWN_COUNT, InfiniBand sysfs
and the counter file; as root, the real requests on a veth pair (no FEC ops there)."""

from __future__ import annotations

import errno
import os
import random
import shutil
from pathlib import Path

import pytest

from efmoam.core.linkmon.counters import COUNTERS, HEALTH_COUNTERS, STANDARD_COUNTERS, CounterSample
from efmoam.linux.counters import (
    COUNTER_MAX,
    AutoSource,
    CounterError,
    DriverSource,
    EthtoolStatsSource,
    FileSource,
    InfinibandSource,
    SysfsSource,
    open_counter_source,
    read_counter_file,
)
from efmoam.linux.ethtool import EthtoolError, EthtoolNetlink, FecStat, parse_fec_reply
from efmoam.linux.netlink import (
    IFLA_CARRIER_DOWN_COUNT,
    IFLA_IFNAME,
    IFLA_STATS64,
    RTM_NEWLINK,
    Message,
    RtnlClient,
    iter_attrs,
    pack_attr,
    pack_string,
    pack_u32,
    parse_attrs,
    parse_messages,
)
from tests.linux.netns import in_netns, ip, needs_root, veth_pair
from tests.linux.test_counters import SYSFS, FakeEthtool, FakeIoctl, FakeSource, mounted_sysfs, write_json

GENETLINK = Path(__file__).parent / "fixtures" / "genetlink"
GENLMSGHDR = 4


def read_hex(name: str) -> bytes:
    """The bytes of an annotated hex fixture ('#' to the end of a line is a comment)."""
    lines = (GENETLINK / name).read_text().splitlines()
    return bytes.fromhex("".join(line.split("#", 1)[0] for line in lines))


def fec_reply(name: str) -> bytes:
    """The payload after the genlmsghdr of the one message a fixture holds."""
    (message,) = parse_messages(read_hex(name))
    return message.payload[GENLMSGHDR:]


# --------------------------------------------------------------------------- FEC_GET replies


def test_fec_reply_with_totals_only() -> None:
    assert parse_fec_reply(fec_reply("fec_total_only.hex")) == {
        "corrected": FecStat(1234),
        "uncorrectable": FecStat(5),
        "corrected_bits": FecStat(98765),
    }


def test_fec_reply_per_lane_with_pads_and_histogram() -> None:
    stats = parse_fec_reply(fec_reply("fec_per_lane.hex"))
    assert stats == {"corrected": FecStat(30, (10, 20)), "uncorrectable": FecStat(3, (1, 2))}  # bits: empty


def test_fec_reply_with_every_statistic_empty_provides_none() -> None:
    assert parse_fec_reply(fec_reply("fec_no_stats.hex")) == {}


def test_fec_reply_with_broken_statistics_keeps_only_the_whole_ones() -> None:
    assert parse_fec_reply(fec_reply("fec_garbage.hex")) == {"corrected_bits": FecStat(42)}


def test_fec_reply_without_statistics_nest() -> None:
    # what a request without ETHTOOL_FLAG_STATS gets: the same reply minus ETHTOOL_A_FEC_STATS
    payload = b"".join(
        pack_attr(kind, value) for kind, value in iter_attrs(fec_reply("fec_total_only.hex")) if kind != 5
    )
    assert len(payload) > 40
    assert parse_fec_reply(payload) == {}
    assert parse_fec_reply(b"") == {}


def test_fec_reply_fuzz_never_raises() -> None:
    rng = random.Random(17)
    for name in ("fec_total_only.hex", "fec_per_lane.hex", "fec_no_stats.hex", "fec_garbage.hex"):
        payload = fec_reply(name)
        for cut in range(len(payload) + 1):
            result = parse_fec_reply(payload[:cut])
            assert all(isinstance(stat.total, int) for stat in result.values())
        for _ in range(2000):
            mutated = bytearray(payload)
            for _ in range(rng.randint(1, 6)):
                mutated[rng.randrange(len(mutated))] = rng.randrange(256)
            parse_fec_reply(bytes(mutated))
    for _ in range(500):
        parse_fec_reply(rng.randbytes(rng.randint(0, 300)))


class RecordingSocket:
    """Stands in for the netlink socket: keeps the request, answers with a fixture's messages."""

    def __init__(self, reply: bytes) -> None:
        self.reply = reply
        self.sent: list[tuple[int, bytes, bool]] = []

    def request(self, msg_type: int, payload: bytes, *, dump: bool = False, ack: bool = True) -> list[Message]:
        self.sent.append((msg_type, payload, ack))
        return parse_messages(self.reply)


def test_fec_stats_asks_for_statistics_and_parses_the_reply() -> None:
    client = object.__new__(EthtoolNetlink)
    sock = RecordingSocket(read_hex("fec_per_lane.hex"))
    client._sock, client.family = sock, 0x1B  # type: ignore[assignment]
    assert client.fec_stats("eth0") == {"corrected": FecStat(30, (10, 20)), "uncorrectable": FecStat(3, (1, 2))}
    ((family, payload, ack),) = sock.sent
    assert (family, payload[0], ack) == (0x1B, 29, False)  # ETHTOOL_MSG_FEC_GET, one reply and no ACK
    header = parse_attrs(parse_attrs(payload, GENLMSGHDR)[1])  # ETHTOOL_A_FEC_HEADER
    assert header[2] == b"eth0\0"
    flags = int.from_bytes(header[3], "little")
    assert flags & (1 << 2) and flags & 1  # ETHTOOL_FLAG_STATS: no statistics without it; compact bitsets


# --------------------------------------------------------------------------- the ethtool source


def test_ethtool_source_adds_the_fec_totals_and_says_how_many_lanes() -> None:
    fec = parse_fec_reply(fec_reply("fec_per_lane.hex"))
    source = EthtoolStatsSource(FakeEthtool({"FramesReceivedOK": 10}, fec))  # type: ignore[arg-type]
    assert source.read("eth0") == CounterSample(frames_received=10, fec_corrected_blocks=30, fec_uncorrectable_blocks=3)
    assert source.provides("eth0") == {
        "frames_received": "ethtool eth-mac FramesReceivedOK",
        "fec_corrected_blocks": "ethtool FEC_GET corrected (2 lanes)",
        "fec_uncorrectable_blocks": "ethtool FEC_GET uncorrectable (2 lanes)",
    }
    totals = EthtoolStatsSource(FakeEthtool({}, parse_fec_reply(fec_reply("fec_total_only.hex"))))  # type: ignore[arg-type]
    assert totals.read("eth0") == CounterSample(
        fec_corrected_blocks=1234, fec_uncorrectable_blocks=5, fec_corrected_bits=98765
    )
    assert totals.provides("eth0")["fec_corrected_bits"] == "ethtool FEC_GET corrected_bits"


@pytest.mark.parametrize("code", [errno.EOPNOTSUPP, errno.EINVAL])
def test_a_driver_without_fec_keeps_its_standard_counters_and_is_not_asked_again(code: int) -> None:
    client = FakeEthtool({"FrameCheckSequenceErrors": 2}, EthtoolError(code, "no"))
    source = EthtoolStatsSource(client)  # type: ignore[arg-type]
    assert source.read("eth0") == source.read("eth0") == CounterSample(errored_frames=2)
    assert client.fec_requests == 1
    assert set(source.provides("eth0")) == {"errored_frames"}  # asks again (a probe)
    assert client.fec_requests == 2
    client.fec = {"uncorrectable": FecStat(4)}
    source.read("eth0")
    assert client.fec_requests == 2  # the probe found none: still not asked
    assert source.provides("eth0")["fec_uncorrectable_blocks"] == "ethtool FEC_GET uncorrectable"
    assert source.read("eth0").fec_uncorrectable_blocks == 4
    assert source.read("eth1").fec_uncorrectable_blocks == 4  # remembered per interface


def test_a_fec_request_that_fails_otherwise_is_a_counter_error() -> None:
    source = EthtoolStatsSource(FakeEthtool({}, EthtoolError(errno.ENODEV, "No such device")))  # type: ignore[arg-type]
    with pytest.raises(CounterError, match="FEC stats of eth0: No such device"):
        source.read("eth0")
    assert source.provides("eth0") == {}


# --------------------------------------------------------------------------- driver names


def test_mlx5_health_counters() -> None:
    statistics = {"tx_pause_storm_error_events": 2, "tx_pause_storm_warning_events": 50, "rx_pause_ctrl_phy": 100,
                  "rx_prio0_pause": 1, "rx_prio3_pause": 10, "tx_pause_ctrl_phy": 7, "tx_prio3_pause": 3,
                  "rx_prio3_pause_duration": 9999, "link_down_events_phy": 4, "rx_corrected_bits_phy": 123}  # fmt: skip
    source = DriverSource(FakeIoctl("mlx5_core", statistics))  # type: ignore[arg-type]
    assert source.read("eth0") == CounterSample(
        pause_storm_events=2, pause_frames_received=111, pause_frames_sent=10, carrier_down_count=4,
        fec_corrected_bits=123,
    )  # fmt: skip
    provides = source.provides("eth0")
    assert provides["pause_storm_events"] == "driver mlx5_core ethtool -S tx_pause_storm_error_events"
    assert provides["pause_frames_received"] == (
        "driver mlx5_core ethtool -S rx_pause_ctrl_phy + rx_prio0_pause + rx_prio3_pause"
    )


def test_bnxt_and_ice_health_counters() -> None:
    bnxt = {"rx_fec_corrected_blocks": 8, "rx_fec_uncorrectable_blocks": 1, "rx_corrected_bits": 80,
            "rx_pause_frames": 5, "rx_pfc_frames": 6, "tx_pause_frames": 1, "tx_pfc_frames": 2,
            "rx_pfc_ena_frames_pri3": 6, "link_down_events": 3}  # fmt: skip
    assert DriverSource(FakeIoctl("bnxt_en", bnxt)).read("eth0") == CounterSample(  # type: ignore[arg-type]
        fec_corrected_blocks=8, fec_uncorrectable_blocks=1, fec_corrected_bits=80,
        pause_frames_received=11, pause_frames_sent=3, carrier_down_count=3,
    )  # fmt: skip
    ice = {"link_xon_rx.nic": 1, "link_xoff_rx.nic": 2, "rx_priority_3_xoff.nic": 4, "rx_priority_3_xon.nic": 4,
           "tx_priority_7_xoff.nic": 9}  # fmt: skip
    assert DriverSource(FakeIoctl("ice", ice)).read("eth0") == CounterSample(  # type: ignore[arg-type]
        pause_frames_received=11, pause_frames_sent=9
    )


def test_a_driver_without_health_names_provides_none_of_them() -> None:
    source = DriverSource(FakeIoctl("igb", {"rx_crc_errors": 1, "link_down_events": 5}))  # type: ignore[arg-type]
    sample = source.read("eth0")
    assert sample.errored_frames == 1
    assert all(getattr(sample, name) is None for name in HEALTH_COUNTERS)


# --------------------------------------------------------------------------- IFLA_CARRIER_DOWN_COUNT


def newlink(*attributes: bytes) -> Message:
    """An RTM_NEWLINK message (ifinfomsg all zeros) holding `attributes`."""
    ifinfomsg = bytes(16)
    return Message(RTM_NEWLINK, 0, 1, 0, ifinfomsg + b"".join(attributes))


STATS64 = pack_attr(IFLA_STATS64, bytes(range(8)) * 24)


def test_carrier_down_count_is_added_on_request_only() -> None:
    message = newlink(pack_string(IFLA_IFNAME, "eth0"), pack_u32(IFLA_CARRIER_DOWN_COUNT, 6), STATS64)
    with_carrier = RtnlClient._stats_of_link(message, True)
    assert with_carrier is not None and with_carrier[1]["carrier_down_count"] == 6
    plain = RtnlClient._stats_of_link(message)
    assert plain is not None and "carrier_down_count" not in plain[1]  # link_stats64 stays IFLA_STATS64


@pytest.mark.parametrize(
    "carrier", [b"", pack_attr(IFLA_CARRIER_DOWN_COUNT, b"\x01\x02"), pack_attr(IFLA_CARRIER_DOWN_COUNT, bytes(8))]
)
def test_a_missing_or_malformed_carrier_down_count_is_left_out(carrier: bytes) -> None:
    entry = RtnlClient._stats_of_link(newlink(pack_string(IFLA_IFNAME, "eth0"), carrier, STATS64), True)
    assert entry is not None and "carrier_down_count" not in entry[1] and entry[1]["rx_packets"] > 0


def set_link(netns: str, dev: str, state: str) -> None:
    ip("link", "set", dev, state, netns=netns)


@needs_root
@pytest.mark.skipif(shutil.which("nsenter") is None, reason="needs nsenter (util-linux)")
def test_carrier_down_count_counts_two_peer_flaps_on_veth() -> None:
    with veth_pair() as (ns_a, ns_b), mounted_sysfs(ns_a) as sysfs_root:
        sysfs = SysfsSource(sysfs_root)
        with in_netns(ns_a, lambda: open_counter_source("rtnetlink")) as rtnl:
            before = rtnl.read("veth0").carrier_down_count
            assert before is not None and sysfs.read("veth0").carrier_down_count == before
            for _ in range(2):
                set_link(ns_b, "veth1", "down")  # veth0 loses its carrier
                set_link(ns_b, "veth1", "up")
            assert rtnl.read("veth0").carrier_down_count == before + 2
            assert sysfs.read("veth0").carrier_down_count == before + 2
            assert rtnl.provides("veth0")["carrier_down_count"] == "rtnetlink IFLA_CARRIER_DOWN_COUNT"


# --------------------------------------------------------------------------- real FEC requests on veth


@needs_root
def test_fec_on_veth_is_not_provided_and_the_other_counters_go_on() -> None:
    with veth_pair() as (ns_a, _):
        with in_netns(ns_a, EthtoolNetlink) as client:
            with pytest.raises(EthtoolError) as unsupported:
                client.fec_stats("veth0")
            assert unsupported.value.errno == errno.EOPNOTSUPP
            with pytest.raises(EthtoolError) as missing:
                client.fec_stats("nonexistent0")
            assert missing.value.errno == errno.ENODEV
        with in_netns(ns_a, lambda: open_counter_source("ethtool")) as ethtool:
            sample = ethtool.read("veth0")
            assert (sample.fec_corrected_blocks, sample.fec_uncorrectable_blocks, sample.fec_corrected_bits) == (
                None, None, None,
            )  # fmt: skip
            with pytest.raises(CounterError):
                ethtool.read("nonexistent0")
        with in_netns(ns_a, lambda: open_counter_source("auto")) as auto:
            sample = auto.read("veth0")
            assert sample.frames_received is not None and sample.carrier_down_count is not None
            assert sample.fec_corrected_blocks is None
            assert not any(name.startswith("fec_") for name in auto.provides("veth0"))


# --------------------------------------------------------------------------- InfiniBand


@pytest.mark.parametrize("garbage", ["-1\n", "0x10\n", "1_0\n", "\u0663\n", "", "9" * 70, "\x00\xff", "12 13\n"])
def test_garbage_in_an_infiniband_health_file_is_none(tmp_path: Path, garbage: str) -> None:
    root = tmp_path / "sys"
    shutil.copytree(SYSFS, root)
    (root / "class/infiniband/mlx5_0/ports/1/counters/link_downed").write_text(garbage)
    sample = InfinibandSource(root).read("ib0")
    assert sample.ib_link_downed is None
    assert sample.ib_local_link_integrity_errors == 1 and sample.symbol_errors == 12


def test_counter_files_that_are_not_files(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert read_counter_file(fifo) is None  # not waited on
    assert read_counter_file(tmp_path) is None
    (tmp_path / "ok").write_text(" 18446744073709551615\n")
    assert read_counter_file(tmp_path / "ok") == COUNTER_MAX


def test_infiniband_without_the_health_files() -> None:
    sample = InfinibandSource(SYSFS).read("dual1")  # mlx5_2 port 2 has only the three standard files
    assert sample.errored_frames == 20 and all(getattr(sample, name) is None for name in HEALTH_COUNTERS)


# --------------------------------------------------------------------------- counter file


def test_file_source_feeds_every_health_counter(tmp_path: Path) -> None:
    values = {name: index for index, name in enumerate(HEALTH_COUNTERS)}
    path = write_json(tmp_path / "c.json", {"eth0": {"pause_storm_events": 1}, "eth1": values})
    source = FileSource(path)
    assert source.read("eth0") == CounterSample(pause_storm_events=1)
    assert source.provides("eth0") == {"pause_storm_events": f"file {path} pause_storm_events"}
    assert source.read("eth1") == CounterSample(**values)
    yaml_path = tmp_path / "c.yaml"
    yaml_path.write_text("eth0:\n  pause_storm_events: 3\n  ib_link_downed: 18446744073709551615\n")
    assert FileSource(yaml_path).read("eth0") == CounterSample(pause_storm_events=3, ib_link_downed=COUNTER_MAX)


@pytest.mark.parametrize(
    ("counters", "message"),
    [
        ({"pause_storms": 1}, "unknown counters"),
        ({"fec_corrected": 1}, "unknown counters"),
        ({"carrier_down_count": "3"}, "non-negative integer"),
        ({"ib_link_downed": -1}, "non-negative integer"),
        ({"pause_frames_sent": 2.0}, "non-negative integer"),
        ({"fec_corrected_bits": 2**64}, "larger than a 64-bit counter"),
    ],
)
def test_file_source_refuses_bad_health_counters(tmp_path: Path, counters: dict[str, object], message: str) -> None:
    path = write_json(tmp_path / "c.json", {"eth0": counters})
    with pytest.raises(CounterError, match=message):
        FileSource(path).read("eth0")


# --------------------------------------------------------------------------- auto


class HealthFake(FakeSource):
    """A fake source that provides every counter its sample has, health counters included."""

    def provides(self, ifname: str) -> dict[str, str]:
        self.probes += 1
        assert isinstance(self.sample, CounterSample)
        return {name: f"{self.name} {name}" for name in COUNTERS if getattr(self.sample, name) is not None}


def test_auto_takes_each_health_counter_from_the_first_source_that_has_it() -> None:
    ethtool = HealthFake("ethtool", CounterSample(frames_received=5, fec_corrected_blocks=9))
    driver = HealthFake("driver", CounterSample(carrier_down_count=1, pause_storm_events=2, fec_corrected_blocks=99))
    rtnl = HealthFake("rtnetlink", CounterSample(errored_frames=0, frames_received=6, carrier_down_count=50))
    auto = AutoSource([ethtool, driver, rtnl])
    assert auto.read("eth0") == CounterSample(
        errored_frames=0, frames_received=5, fec_corrected_blocks=9, carrier_down_count=1, pause_storm_events=2
    )
    assert auto.provides("eth0")["carrier_down_count"] == "driver carrier_down_count"


def test_auto_limited_to_the_standard_counters_never_reads_a_health_only_source() -> None:
    rtnl = FakeSource("rtnetlink", CounterSample(errored_frames=0, frames_received=6))
    health = HealthFake("driver", CounterSample(pause_storm_events=2))
    auto = AutoSource([health, rtnl], counters=STANDARD_COUNTERS)
    assert auto.read("eth0") == CounterSample(errored_frames=0, frames_received=6)
    assert (health.reads, rtnl.reads) == (0, 1)
    with pytest.raises(ValueError, match="unknown counters"):
        AutoSource([rtnl], counters=("pause_storm",))


@needs_root
def test_open_counter_source_passes_the_counters_to_auto() -> None:
    only_carrier = ("carrier_down_count",)
    with veth_pair() as (ns_a, _), in_netns(ns_a, lambda: open_counter_source("auto", counters=only_carrier)) as auto:
        assert "carrier_down_count" in auto.provides("veth0")  # with everything else the port has
        sample = auto.read("veth0")
        assert sample.carrier_down_count is not None
        assert sample == CounterSample(carrier_down_count=sample.carrier_down_count)  # nothing else read


def test_ethtool_source_skips_fec_get_when_no_fec_counter_is_needed() -> None:
    fec = parse_fec_reply(fec_reply("fec_per_lane.hex"))
    client = FakeEthtool({"FramesReceivedOK": 10}, fec)
    source = EthtoolStatsSource(client)  # type: ignore[arg-type]
    assert source.read("eth0", STANDARD_COUNTERS) == CounterSample(frames_received=10)
    assert client.fec_requests == 0
    assert source.read("eth0", (*STANDARD_COUNTERS, "fec_uncorrectable_blocks")).fec_uncorrectable_blocks == 3
    assert client.fec_requests == 1
    # through auto: a plan without FEC counters never sends FEC_GET, yet lists them for show
    auto = AutoSource([source], STANDARD_COUNTERS)
    assert "fec_corrected_blocks" in auto.provides("eth0")
    requests = client.fec_requests
    assert auto.read("eth0") == CounterSample(frames_received=10)
    assert client.fec_requests == requests


def test_auto_looks_again_for_a_needed_counter_no_source_had(monkeypatch: pytest.MonkeyPatch) -> None:
    """mlx5 reports FEC only while FEC is active: a port planned with the link down finds it later."""
    rtnl = HealthFake("rtnetlink", CounterSample(errored_frames=0, frames_received=6, symbol_errors=0))
    nic = HealthFake("ethtool", CounterSample(frames_received=5))
    needed = (*STANDARD_COUNTERS, "fec_uncorrectable_blocks")
    auto = AutoSource([nic, rtnl], counters=needed)
    assert auto.read("eth0").fec_uncorrectable_blocks is None
    assert auto.generation("eth0") == 0
    nic.sample = CounterSample(frames_received=7, fec_uncorrectable_blocks=3)  # FEC came up
    auto.read("eth0")
    assert nic.probes == 1  # not looked for again before REPROBE_MISSING
    monkeypatch.setattr(AutoSource, "REPROBE_MISSING", 0.0)
    assert auto.read("eth0").fec_uncorrectable_blocks == 3
    assert auto.generation("eth0") == 1  # a counter read from a new source: the caller rebases
    probes = nic.probes
    auto.read("eth0")
    assert nic.probes == probes  # complete now: no more looking
    auto.reprobe("eth0")
    auto.read("eth0")
    assert auto.generation("eth0") == 1  # the same sources again: nothing to rebase
