"""rtnetlink and ethtool clients: message parsing (any machine) and a real veth pair (root)."""

from __future__ import annotations

import errno
import re
import select
import shutil
import socket
import struct
import subprocess
import time
from collections.abc import Callable

import pytest
from hypothesis import given, settings, strategies as st

from efmoam.linux import netlink as nl
from efmoam.linux.ethtool import (
    ETHTOOL_A_STATS_GRP,
    ETHTOOL_A_STATS_GRP_HIST_RX,
    ETHTOOL_A_STATS_GRP_ID,
    ETHTOOL_A_STATS_GRP_SS_ID,
    ETHTOOL_A_STATS_GRP_STAT,
    EthtoolError,
    EthtoolIoctl,
    EthtoolNetlink,
    LinkMode,
    groups_bitset,
    parse_stats_reply,
    speed_or_none,
)
from tests.linux.netns import in_netns, ip, needs_root, veth_pair

needs_ethtool = pytest.mark.skipif(shutil.which("ethtool") is None, reason="needs the ethtool program")

# --------------------------------------------------------------------------- parsing


def u64(attr_type: int, value: int) -> bytes:
    return nl.pack_attr(attr_type, struct.pack("=Q", value))


def link_payload(index: int = 7, flags: int = nl.IFF_UP | nl.IFF_LOWER_UP, *attributes: bytes) -> bytes:
    return struct.pack("=BxHiII", 0, nl.ARPHRD_ETHER, index, flags, 0) + b"".join(attributes)


def test_attributes_round_trip_with_padding_and_flag_bits() -> None:
    data = nl.pack_string(3, "eth0") + nl.pack_nested(18, nl.pack_string(1, "veth")) + nl.pack_u32(4, 1500)
    parsed = list(nl.iter_attrs(data))
    assert [attr_type for attr_type, _ in parsed] == [3, 18, 4]  # NLA_F_NESTED masked off
    assert nl.attr_str(parsed[0][1]) == "eth0"
    assert nl.attr_uint(parsed[2][1], 4) == 1500
    assert nl.attr_uint(parsed[2][1], 8) is None  # wrong size: not a u64


def test_a_truncated_or_impossible_attribute_ends_the_list() -> None:
    good = nl.pack_u32(4, 1500)
    assert list(nl.iter_attrs(good + good[:6])) == [(4, good[4:8])]
    too_short = struct.pack("=HH", 2, 5)  # length below the header size
    assert list(nl.iter_attrs(good + too_short + good)) == [(4, good[4:8])]
    too_long = struct.pack("=HH", 200, 5) + bytes(8)
    assert list(nl.iter_attrs(too_long + good)) == []


def test_parse_link_reads_the_fields_and_skips_malformed_attributes() -> None:
    payload = link_payload(
        7,
        nl.IFF_UP | nl.IFF_LOWER_UP,
        nl.pack_string(nl.IFLA_IFNAME, "veth0"),
        nl.pack_attr(nl.IFLA_ADDRESS, bytes.fromhex("020000aa0001")),
        nl.pack_attr(nl.IFLA_MTU, b"\x05\xdc"),  # two octets: not a u32, skipped
        nl.pack_attr(nl.IFLA_OPERSTATE, b"\x06"),
        nl.pack_nested(nl.IFLA_LINKINFO, nl.pack_string(nl.IFLA_INFO_KIND, "veth")),
    )
    family, link = nl.parse_link(payload) or (None, None)
    assert family == 0
    assert link == nl.Link(7, "veth0", "02:00:00:aa:00:01", True, True, "up", 1, "veth", None, 0x10001)
    assert link.is_ethernet


@pytest.mark.parametrize(
    ("flags", "operstate", "admin_up", "carrier"),
    [(0, 2, False, False), (nl.IFF_UP, 2, True, False), (nl.IFF_UP, 6, True, True), (nl.IFF_LOWER_UP, 0, False, True)],
)
def test_carrier_is_lower_up_or_operstate_up(flags: int, operstate: int, admin_up: bool, carrier: bool) -> None:
    payload = link_payload(
        3, flags, nl.pack_string(nl.IFLA_IFNAME, "x"), nl.pack_attr(nl.IFLA_OPERSTATE, bytes([operstate]))
    )
    parsed = nl.parse_link(payload)
    assert parsed is not None
    assert (parsed[1].admin_up, parsed[1].carrier) == (admin_up, carrier)


def test_parse_link_refuses_what_it_cannot_name() -> None:
    assert nl.parse_link(b"\x00" * 10) is None  # shorter than ifinfomsg
    assert nl.parse_link(link_payload(7)) is None  # no IFLA_IFNAME
    assert nl.parse_link(link_payload(0, 0, nl.pack_string(nl.IFLA_IFNAME, "x"))) is None  # no ifindex
    weird = nl.parse_link(
        link_payload(7, 0, nl.pack_string(nl.IFLA_IFNAME, "x"), nl.pack_attr(nl.IFLA_OPERSTATE, b"\x63"))
    )
    assert weird is not None and weird[1].operstate == "unknown"


def test_stats64_by_kernel_names_for_older_and_newer_kernels() -> None:
    values = list(range(1, 26))
    assert nl.parse_stats64(struct.pack("=25Q", *values)) == dict(zip(nl.STATS64_FIELDS, values, strict=True))
    older = nl.parse_stats64(struct.pack("=23Q", *values[:23]))
    assert older is not None and "rx_nohandler" not in older and older["rx_crc_errors"] == 13
    newer = nl.parse_stats64(struct.pack("=27Q", *range(27)))
    assert newer is not None and len(newer) == len(nl.STATS64_FIELDS)
    assert nl.parse_stats64(b"\x00" * 12) is None
    assert nl.parse_stats64(None) is None


def test_messages_and_errors() -> None:
    ack = struct.pack("=i", 0) + struct.pack("=IHHII", 16, 18, 5, 1, 0)
    datagram = nl.pack_message(nl.NLMSG_ERROR, 0, 1, ack) + b"\x99\x00"  # trailing garbage ignored
    messages = nl.parse_messages(datagram)
    assert len(messages) == 1 and nl.error_of(messages[0]) is None
    extack = nl.pack_attr(nl.NLMSGERR_ATTR_MSG, b"no device matches name\0")
    failed = nl.Message(nl.NLMSG_ERROR, nl.NLM_F_ACK_TLVS, 1, 0, struct.pack("=i", -19) + bytes(16) + extack)
    error = nl.error_of(failed)
    assert error is not None and error.errno == errno.ENODEV and "no device matches name" in str(error)
    assert nl.parse_messages(struct.pack("=IHHII", 8, 1, 0, 0, 0) + bytes(8)) == []  # length below the header


def stats_group(group_id: int, *stats: tuple[int, int]) -> bytes:
    nested = [nl.pack_nested(ETHTOOL_A_STATS_GRP_STAT, u64(stat_id, value)) for stat_id, value in stats]
    return nl.pack_nested(
        ETHTOOL_A_STATS_GRP,
        nl.pack_u32(ETHTOOL_A_STATS_GRP_ID, group_id),
        nl.pack_u32(ETHTOOL_A_STATS_GRP_SS_ID, 17 + group_id),
        *nested,
    )


def test_stats_reply_names_present_counters_only() -> None:
    histogram = nl.pack_nested(ETHTOOL_A_STATS_GRP_HIST_RX, nl.pack_u32(7, 64), nl.pack_u32(8, 64), u64(9, 99))
    reply = (
        nl.pack_nested(2, nl.pack_u32(1, 3))  # the header
        + stats_group(0)  # eth-phy: the driver filled nothing
        + stats_group(1, (3, 1000), (4, 5), (30, 1))  # eth-mac, with an id this table does not know
        + stats_group(3, (3, 2))  # rmon
        + nl.pack_nested(ETHTOOL_A_STATS_GRP, nl.pack_u32(ETHTOOL_A_STATS_GRP_ID, 3), histogram)
        + nl.pack_nested(ETHTOOL_A_STATS_GRP, nl.pack_u32(ETHTOOL_A_STATS_GRP_SS_ID, 18), u64(4, 7))  # no group id
        + nl.pack_nested(
            ETHTOOL_A_STATS_GRP,
            nl.pack_u32(ETHTOOL_A_STATS_GRP_ID, 1),
            nl.pack_nested(ETHTOOL_A_STATS_GRP_STAT, nl.pack_u32(5, 9)),
        )  # a u32 stat: skipped
    )
    assert parse_stats_reply(reply) == {
        "FramesReceivedOK": 1000,
        "FrameCheckSequenceErrors": 5,
        "eth-mac-30": 1,
        "etherStatsJabbers": 2,
    }


def test_groups_bitset() -> None:
    attrs = dict(nl.iter_attrs(groups_bitset(("eth-phy", "eth-mac", "rmon"))[4:]))
    assert nl.attr_uint(attrs[4], 4) == 0b1011 and attrs[1] == b""
    with pytest.raises(ValueError, match="unknown"):
        groups_bitset(("phy-magic",))
    assert speed_or_none(0xFFFFFFFF) is None and speed_or_none(0) is None and speed_or_none(25000) == 25000


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_parsers_never_raise_on_garbage(data: bytes) -> None:
    nl.parse_messages(data)
    nl.parse_link(data)
    nl.parse_stats64(data)
    parse_stats_reply(data)
    whole = list(nl.iter_attrs(data))
    for _type, payload in whole:
        nl.attr_str(payload)
    wanted = frozenset(attr_type for attr_type, _ in whole[:2])
    first = {attr_type: payload for attr_type, payload in reversed(whole) if attr_type in wanted}
    assert nl.parse_attrs(data, 0, wanted) == first


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 0x3FFF), st.binary(max_size=40)), max_size=8), st.integers(0, 60))
def test_cut_attribute_lists_keep_the_whole_prefix(items: list[tuple[int, bytes]], cut: int) -> None:
    data = b"".join(nl.pack_attr(t, p) for t, p in items)
    whole = list(nl.iter_attrs(data))
    assert whole == items
    partial = list(nl.iter_attrs(data[: max(0, len(data) - cut)]))
    assert partial == whole[: len(partial)]


# --------------------------------------------------------------------------- a real veth pair

MAC_A, MAC_B = "02:00:00:00:aa:01", "02:00:00:00:bb:01"


def wait_events(
    monitor: nl.LinkMonitor, done: Callable[[list[nl.LinkEvent]], bool], seconds: float = 3.0
) -> list[nl.LinkEvent]:
    events: list[nl.LinkEvent] = []
    deadline = time.monotonic() + seconds
    while not done(events) and (left := deadline - time.monotonic()) > 0:
        if select.select([monitor], [], [], left)[0]:
            events += monitor.read_events()
    return events


def matches(event: nl.LinkEvent, kind: str, **fields: object) -> bool:
    """`event` is of `kind`, and has `fields` (name, ifindex: the event's; others: the link's)."""
    state = event.link or event.previous
    return event.kind == kind and all(
        (getattr(event, key) if key in ("name", "ifindex") else getattr(state, key, None)) == value
        for key, value in fields.items()
    )


def has(kind: str, **fields: object) -> Callable[[list[nl.LinkEvent]], bool]:
    return lambda events: any(matches(event, kind, **fields) for event in events)


@needs_root
def test_dump_links_in_a_namespace() -> None:
    with veth_pair(MAC_A, MAC_B) as (ns_a, _ns_b):
        links = {link.name: link for link in in_netns(ns_a, nl.dump_links)}
        assert set(links) == {"lo", "veth0"}
        veth = links["veth0"]
        assert (veth.mac, veth.admin_up, veth.arphrd) == (MAC_A, True, nl.ARPHRD_ETHER)
        assert (veth.kind, veth.mtu) == ("veth", 1500)
        assert veth.ifindex == int(ip("-o", "link", "show", "veth0", netns=ns_a).split(":")[0])
        assert not links["lo"].is_ethernet
        with in_netns(ns_a, nl.RtnlClient) as client:
            assert client.get_link("veth0").ifindex == veth.ifindex
            with pytest.raises(nl.NetlinkError) as missing:
                client.get_link("nonexistent0")
            assert missing.value.errno == errno.ENODEV


@needs_root
def test_link_monitor_reports_carrier_admin_rename_add_and_remove() -> None:
    with veth_pair(MAC_A, MAC_B) as (ns_a, ns_b), in_netns(ns_a, nl.LinkMonitor) as monitor:
        index = next(i for i, link in monitor.links.items() if link.name == "veth0")
        wait_events(monitor, lambda _: False, 0.3)  # let the bring-up notifications pass

        ip("link", "set", "veth1", "down", netns=ns_b)
        events = wait_events(monitor, has("changed", name="veth0", carrier=False))
        assert has("changed", name="veth0", carrier=False, admin_up=True)(events), events

        ip("link", "set", "veth1", "up", netns=ns_b)
        events = wait_events(monitor, has("changed", name="veth0", carrier=True))
        assert has("changed", name="veth0", carrier=True)(events), events

        ip("link", "set", "veth0", "down", netns=ns_a)
        events = wait_events(monitor, has("changed", name="veth0", admin_up=False))
        assert has("changed", name="veth0", admin_up=False, carrier=False)(events), events

        ip("link", "set", "veth0", "name", "oam0", netns=ns_a)
        events = wait_events(monitor, has("changed", name="oam0"))
        rename = next(e for e in events if e.kind == "changed" and e.name == "oam0")
        assert rename.ifindex == index and rename.previous is not None and rename.previous.name == "veth0"

        ip("link", "add", "extra0", "type", "veth", "peer", "name", "extra1", netns=ns_a)
        events = wait_events(monitor, lambda ev: has("added", name="extra0")(ev) and has("added", name="extra1")(ev))
        added = {e.name: e for e in events if e.kind == "added"}
        assert set(added) >= {"extra0", "extra1"}
        assert added["extra0"].link is not None and added["extra0"].link.kind == "veth"

        ip("link", "del", "extra0", netns=ns_a)
        events = wait_events(
            monitor, lambda ev: has("removed", name="extra0")(ev) and has("removed", name="extra1")(ev)
        )
        removed = {e.name: e for e in events if e.kind == "removed"}
        assert removed["extra0"].ifindex == added["extra0"].ifindex
        assert removed["extra0"].link is None
        assert {link.name for link in monitor.links.values()} == {"lo", "oam0"}


@needs_root
def test_link_monitor_resync_reports_what_it_missed() -> None:
    with veth_pair(MAC_A, MAC_B) as (ns_a, _), in_netns(ns_a, nl.LinkMonitor) as monitor:
        ip("link", "add", "extra0", "type", "veth", "peer", "name", "extra1", netns=ns_a)
        ip("link", "del", "veth0", netns=ns_a)
        events = monitor.resync()  # as after ENOBUFS: compare a fresh dump with the table
        assert {(e.kind, e.name) for e in events} >= {("added", "extra0"), ("added", "extra1"), ("removed", "veth0")}
        assert monitor.resync() == []
        assert [e for e in monitor.read_events() if e.kind == "added"] == []  # already known: no duplicates


@needs_root
def test_bridge_port_notifications_are_not_link_removals() -> None:
    with veth_pair(MAC_A, MAC_B) as (ns_a, _), in_netns(ns_a, nl.LinkMonitor) as monitor:
        ip("link", "add", "br0", "type", "bridge", netns=ns_a)
        ip("link", "set", "veth0", "master", "br0", netns=ns_a)
        ip("link", "set", "veth0", "nomaster", netns=ns_a)  # RTM_DELLINK of family AF_BRIDGE
        ip("link", "del", "br0", netns=ns_a)
        events = wait_events(monitor, has("removed", name="br0"))
        assert has("removed", name="br0")(events)
        assert not has("removed", name="veth0")(events), events
        assert "veth0" in {link.name for link in monitor.links.values()}


@needs_root
def test_link_monitor_survives_an_overrun() -> None:
    with veth_pair(MAC_A, MAC_B) as (ns_a, _), in_netns(ns_a, lambda: nl.LinkMonitor(rcvbuf=1)) as monitor:
        names = {f"many{i}" for i in range(40)} | {f"peer{i}" for i in range(40)}
        batch = "".join(f"link add many{i} type veth peer name peer{i}\n" for i in range(40))
        subprocess.run(["ip", "-n", ns_a, "-batch", "-"], input=batch, text=True, check=True, capture_output=True)
        events = wait_events(monitor, lambda ev: names <= {e.name for e in ev if e.kind == "added"})
        assert names <= {e.name for e in events if e.kind == "added"}
        assert monitor.resyncs >= 1  # the smallest receive buffer cannot hold 80 links' notifications
        assert {link.name for link in monitor.links.values()} == names | {"lo", "veth0"}


def sysfs_statistics(netns: str, ifname: str) -> dict[str, int]:
    """The statistics files as the namespace's own sysfs shows them (``ip netns exec`` remounts /sys)."""
    out = subprocess.run(
        ["ip", "netns", "exec", netns, "grep", "-r", ".", f"/sys/class/net/{ifname}/statistics"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    return {line.rsplit("/", 1)[1].split(":")[0]: int(line.rsplit(":", 1)[1]) for line in out.splitlines()}


def send_frames(count: int) -> Callable[[], None]:
    def send() -> None:
        with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as sock:
            sock.bind(("veth0", 0))
            frame = bytes.fromhex("020000bb0001020000aa000188b5") + bytes(46)
            for _ in range(count):
                sock.send(frame)

    return send


def stable_pair(
    read_sysfs: Callable[[], dict[str, int]], read_netlink: Callable[[], dict[str, int]]
) -> tuple[dict[str, int], dict[str, int]]:
    """sysfs and netlink values read while nothing changed (background IPv6 chatter retried)."""
    for _ in range(10):
        before = read_sysfs()
        value = read_netlink()
        if read_sysfs() == before:
            return before, value
        time.sleep(0.1)
    raise AssertionError("counters never settled")


@needs_root
def test_rtnetlink_stats_match_sysfs_after_traffic() -> None:
    with veth_pair(MAC_A, MAC_B) as (ns_a, ns_b):
        in_netns(ns_a, send_frames(25))
        client = in_netns(ns_b, nl.RtnlClient)
        try:
            sysfs, stats = stable_pair(lambda: sysfs_statistics(ns_b, "veth1"), lambda: client.link_stats64("veth1"))
            assert stats["rx_packets"] >= 25 and stats["rx_bytes"] >= 25 * 60
            assert set(sysfs) <= set(stats)  # every sysfs file has its netlink field
            assert {name: stats[name] for name in sysfs} == sysfs
            sysfs, dumped = stable_pair(lambda: sysfs_statistics(ns_b, "veth1"), client.dump_stats)
            assert {name: dumped["veth1"][name] for name in sysfs} == sysfs
            index = client.get_link("veth1").ifindex
            sysfs, by_index = stable_pair(lambda: sysfs_statistics(ns_b, "veth1"), client.dump_stats_by_index)
            assert {name: by_index[index][name] for name in sysfs} == sysfs
            with pytest.raises(nl.NetlinkError):
                client.link_stats64("nonexistent0")
        finally:
            client.close()


# --------------------------------------------------------------------------- ethtool on veth


def ethtool_text(netns: str, *args: str) -> str:
    return subprocess.run(
        ["ip", "netns", "exec", netns, "ethtool", *args], check=True, capture_output=True, text=True
    ).stdout


@needs_root
@needs_ethtool
def test_ioctl_statistics_equal_ethtool_dash_s() -> None:
    with veth_pair(MAC_A, MAC_B) as (ns_a, _):
        in_netns(ns_a, send_frames(3))
        with in_netns(ns_a, EthtoolIoctl) as ioctl:
            text = ethtool_text(ns_a, "-S", "veth0")
            expected = {m[1]: int(m[2]) for m in re.finditer(r"^\s+(\S+): (\d+)$", text, re.MULTILINE)}
            statistics = ioctl.statistics("veth0")
            assert statistics == expected
            assert "peer_ifindex" in statistics and "rx_queue_0_xdp_packets" in statistics
            shown = re.search(r"^driver: (\S+)", ethtool_text(ns_a, "-i", "veth0"), re.MULTILINE)
            assert shown is not None and ioctl.driver("veth0") == shown[1] == "veth"
            with pytest.raises(EthtoolError) as missing:
                ioctl.statistics("nonexistent0")
            assert missing.value.errno == errno.ENODEV


@needs_root
def test_standard_stats_of_veth_are_absent_not_zero() -> None:
    with veth_pair(MAC_A, MAC_B) as (ns_a, _), in_netns(ns_a, EthtoolNetlink) as ethtool:
        assert ethtool.stats("veth0") == {}
        assert ethtool.stats("veth0", ("eth-phy", "eth-mac", "eth-ctrl", "rmon")) == {}
        with pytest.raises(EthtoolError) as missing:
            ethtool.stats("nonexistent0")
        assert missing.value.errno == errno.ENODEV


@needs_root
@needs_ethtool
def test_half_duplex_is_read_from_both_interfaces() -> None:
    """A TAP device takes any link settings: 100 Mb/s half duplex, then full, as ethtool set them."""
    with veth_pair(MAC_A, MAC_B) as (ns_a, _):
        subprocess.run(["ip", "-n", ns_a, "tuntap", "add", "dev", "tap0", "mode", "tap"], check=True)
        for duplex, half in (("half", True), ("full", False)):
            ethtool_text(ns_a, "-s", "tap0", "speed", "100", "duplex", duplex, "autoneg", "off")
            assert f"Duplex: {duplex.capitalize()}" in ethtool_text(ns_a, "tap0")
            with in_netns(ns_a, EthtoolNetlink) as ethtool, in_netns(ns_a, EthtoolIoctl) as ioctl:
                assert ethtool.link_mode("tap0") == ioctl.link_mode("tap0") == LinkMode(100, half)


@needs_root
@needs_ethtool
def test_link_mode_of_veth_matches_ethtool() -> None:
    with veth_pair(MAC_A, MAC_B) as (ns_a, _):
        shown = re.search(r"Speed: (\d+)Mb/s", ethtool_text(ns_a, "veth0"))
        expected = int(shown[1]) if shown else None
        with in_netns(ns_a, EthtoolNetlink) as ethtool, in_netns(ns_a, EthtoolIoctl) as ioctl:
            assert ethtool.link_mode("veth0") == ioctl.link_mode("veth0") == LinkMode(expected, False)  # veth: full
            assert ethtool.link_mode("lo") == ioctl.link_mode("lo") == LinkMode()  # no link settings at all
