"""The counter poll's dumps (issue 18): fields picked from `rtnl_link_stats64` in place,
one dump for every port, each datagram read once; against a scripted kernel (any
machine) and the real one on veth (root)."""

from __future__ import annotations

import errno
import os
import resource
import socket
import struct
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest
from hypothesis import given, settings, strategies as st

from efmoam.core.linkmon.counters import CounterSample
from efmoam.linux import netlink as nl
from efmoam.linux.counters import NETDEV_RECIPE, CounterError, RtnetlinkSource, sample_from
from tests.linux.netns import in_netns, ip, needs_root, veth_pair

T = TypeVar("T")
NETDEV_FIELDS = ("rx_packets", "rx_crc_errors", "rx_frame_errors")

# --------------------------------------------------------------------------- picking fields


def stats64(count: int = 25, first: int = 1) -> bytes:
    """`count` u64 statistics valued first, first + 1, ..."""
    return struct.pack(f"={count}Q", *range(first, first + count))


def test_the_picker_reads_the_fields_asked_in_the_order_asked() -> None:
    picker = nl.Stats64Picker(("rx_crc_errors", "rx_packets", "rx_frame_errors"))
    assert picker.pick(stats64(), 0, 200) == (13, 1, 14)
    assert picker.pick(b"xx" + stats64(), 2, 200) == (13, 1, 14)  # at an offset, in place
    older = nl.Stats64Picker(("rx_packets", "rx_nohandler"))
    assert older.pick(stats64(23), 0, 23 * 8) == (1, None)  # an older kernel's shorter struct
    assert picker.pick(stats64(2), 0, 16) == (None, 1, None)
    assert picker.pick(stats64(), 0, 12) is None  # not whole u64s
    assert picker.pick(b"", 0, 0) is None
    with pytest.raises(ValueError, match="rx_magic"):
        nl.Stats64Picker(("rx_packets", "rx_magic"))
    with pytest.raises(ValueError):
        nl.Stats64Picker(())


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 30).flatmap(lambda n: st.lists(st.integers(0, 2**64 - 1), min_size=n, max_size=n)),
    st.lists(st.sampled_from(nl.STATS64_FIELDS), min_size=1, max_size=6),
)
def test_picked_fields_are_those_parse_stats64_names(values: list[int], fields: list[str]) -> None:
    payload = struct.pack(f"={len(values)}Q", *values)
    named = nl.parse_stats64(payload)
    picked = nl.Stats64Picker(fields).pick(payload, 0, len(payload))
    assert picked == (None if named is None else tuple(named.get(field) for field in fields))


# --------------------------------------------------------------------------- messages


def ifstatsmsg(index: int) -> bytes:
    return struct.pack("=BBHII", 0, 0, 0, index, 1)


def newstats_payload(index: int, stats: bytes) -> bytes:
    return ifstatsmsg(index) + nl.pack_attr(nl.IFLA_STATS_LINK_64, stats)


def newlink_payload(index: int, *attributes: bytes) -> bytes:
    return struct.pack("=BxHiII", 0, nl.ARPHRD_ETHER, index, 0, 0) + b"".join(attributes)


PICKER = nl.Stats64Picker(NETDEV_FIELDS)


def pick(parse: Callable[..., object], payload: bytes) -> object:
    data = bytearray(b"\xee" * 7 + payload + b"\xee" * 5)  # in place, inside a larger datagram
    return parse(PICKER, data, 7, 7 + len(payload))


def test_a_stats_reply_gives_its_index_and_the_picked_fields() -> None:
    assert pick(nl.pick_link_stats, newstats_payload(7, stats64())) == (7, (1, 13, 14))
    other_first = ifstatsmsg(7) + nl.pack_attr(2, b"\0" * 8) + nl.pack_attr(nl.IFLA_STATS_LINK_64, stats64())
    assert pick(nl.pick_link_stats, other_first) == (7, (1, 13, 14))
    assert pick(nl.pick_link_stats, newstats_payload(0, stats64())) is None  # no index
    assert pick(nl.pick_link_stats, ifstatsmsg(7)) is None  # no statistics
    assert pick(nl.pick_link_stats, newstats_payload(7, stats64())[:40]) is None  # cut
    assert pick(nl.pick_link_stats, newstats_payload(7, b"\0" * 12)) is None  # not u64s
    assert pick(nl.pick_link_stats, b"\0" * 8) is None


def test_a_link_reply_gives_name_statistics_and_carrier_down_count() -> None:
    name = nl.pack_string(nl.IFLA_IFNAME, "eth0")
    carrier = nl.pack_u32(nl.IFLA_CARRIER_DOWN_COUNT, 6)
    statistics = nl.pack_attr(nl.IFLA_STATS64, stats64())
    af_spec = nl.pack_nested(26, nl.pack_attr(10, b"\1" * 1500))  # large, after the three
    full = newlink_payload(3, name, nl.pack_u32(nl.IFLA_MTU, 1500), carrier, statistics, af_spec)
    assert pick(nl.pick_link_counters, full) == (3, ("eth0", (1, 13, 14), 6))
    assert pick(nl.pick_link_counters, newlink_payload(3, statistics, name)) == (3, ("eth0", (1, 13, 14), None))
    bad_carrier = nl.pack_attr(nl.IFLA_CARRIER_DOWN_COUNT, b"\1\2")
    assert pick(nl.pick_link_counters, newlink_payload(3, name, bad_carrier, statistics)) == (
        3,
        ("eth0", (1, 13, 14), None),
    )
    assert pick(nl.pick_link_counters, newlink_payload(3, carrier, statistics)) is None  # no name
    assert pick(nl.pick_link_counters, newlink_payload(3, name, carrier)) is None  # no statistics
    assert pick(nl.pick_link_counters, newlink_payload(0, name, statistics)) is None  # no index
    broken = newlink_payload(3, name, struct.pack("=HH", 200, 1), statistics)  # a length past the end
    assert pick(nl.pick_link_counters, broken) is None


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_the_dump_parsers_never_raise_on_garbage(data: bytes) -> None:
    for parse in (nl.pick_link_stats, nl.pick_link_counters):
        pick(parse, data)
        pick(parse, newlink_payload(1) + data)


# --------------------------------------------------------------------------- dumps, scripted


class ScriptedKernel:
    """What a `NetlinkSocket` sends and reads: each request answered by `answer(seq, attempt)`,
    a list of datagrams; a read hands out one datagram, cut to the reader's buffer.  Its
    descriptor is readable while datagrams wait (one byte each on a socket pair); a request
    sent while some wait is refused (EBUSY: the kernel runs one dump at a time)."""

    def __init__(self, answer: Callable[[int, int], list[bytes]]) -> None:
        self.answer = answer
        self.requests = 0
        self.reads = 0
        self.queue: list[bytes] = []
        self._ready, self._signal = socket.socketpair()

    def fileno(self) -> int:
        return self._ready.fileno()

    def send(self, data: bytes) -> int:
        if self.queue:  # as the kernel: one dump at a time
            raise OSError(errno.EBUSY, "Device or resource busy")
        _length, _type, _flags, seq, _pid = struct.unpack_from("=IHHII", data)
        answer = self.answer(seq, self.requests)
        self.queue += answer
        self._signal.send(b"x" * len(answer))
        self.requests += 1
        return len(data)

    def recv_into(self, buffer: bytearray, nbytes: int, flags: int = 0) -> int:
        assert not flags & socket.MSG_PEEK, "a dump datagram is read once"
        self.reads += 1
        datagram = self.queue.pop(0)
        self._ready.recv(1)
        buffer[: min(nbytes, len(datagram))] = datagram[:nbytes]
        return len(datagram) if flags & socket.MSG_TRUNC else min(nbytes, len(datagram))

    def close(self) -> None:
        self._ready.close()
        self._signal.close()


Scripted = Callable[[Callable[[int, int], list[bytes]]], tuple[nl.RtnlClient, ScriptedKernel]]


@pytest.fixture
def scripted() -> Iterator[Scripted]:
    """Makes an `RtnlClient` talking to a `ScriptedKernel` (closed after the test)."""
    clients: list[nl.RtnlClient] = []

    def make(answer: Callable[[int, int], list[bytes]]) -> tuple[nl.RtnlClient, ScriptedKernel]:
        client = nl.RtnlClient()
        kernel = ScriptedKernel(answer)
        client._sock._sock.close()
        client._sock._sock = kernel  # type: ignore[assignment]
        clients.append(client)
        return client, kernel

    yield make
    for client in clients:
        client.close()


def stats_message(seq: int, index: int, first: int = 1, flags: int = nl.NLM_F_MULTI) -> bytes:
    return nl.pack_message(nl.RTM_NEWSTATS, flags, seq, newstats_payload(index, stats64(first=first)))


def done(seq: int) -> bytes:
    return nl.pack_message(nl.NLMSG_DONE, nl.NLM_F_MULTI, seq, struct.pack("=i", 0))


def test_a_dump_of_several_datagrams_is_read_once_each(scripted: Scripted) -> None:
    def answer(seq: int, _attempt: int) -> list[bytes]:
        stray = stats_message(seq + 100, 99)  # a late reply to an abandoned request: not ours
        return [
            stats_message(seq, 1) + stray + stats_message(seq, 2, first=100),
            stats_message(seq, 3, first=200) + nl.pack_message(nl.NLMSG_NOOP, 0, seq, b""),
            done(seq),
        ]

    client, kernel = scripted(answer)
    assert client.dump_link_stats(PICKER) == {1: (1, 13, 14), 2: (100, 112, 113), 3: (200, 212, 213)}
    assert (kernel.requests, kernel.reads) == (1, 3)


def test_an_interrupted_dump_is_asked_again_and_a_persistent_one_fails(scripted: Scripted) -> None:
    def answer(seq: int, attempt: int) -> list[bytes]:
        flags = nl.NLM_F_MULTI | (nl.NLM_F_DUMP_INTR if attempt == 0 else 0)
        return [stats_message(seq, 1, first=1 + attempt, flags=flags), done(seq)]

    client, kernel = scripted(answer)
    assert client.dump_link_stats(PICKER) == {1: (2, 14, 15)}  # the second dump's
    assert kernel.requests == 2
    always, _ = scripted(lambda seq, _attempt: [stats_message(seq, 1, flags=nl.NLM_F_DUMP_INTR), done(seq)])
    with pytest.raises(nl.DumpInterrupted):
        always.dump_link_stats(PICKER)


def test_a_cut_datagram_is_read_away_on_a_descriptor_over_1023(scripted: Scripted) -> None:
    """A daemon of a thousand ports holds more than 1,024 descriptors: reading away the
    rest of a cut dump must not use select(), which refuses descriptors from 1,024 on."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2048:
        pytest.skip("the hard limit on descriptors is under 2,048")
    resource.setrlimit(resource.RLIMIT_NOFILE, (2048, hard))
    high: socket.socket | None = None
    try:

        def answer(seq: int, _attempt: int) -> list[bytes]:
            return [b"".join(stats_message(seq, index) for index in range(1, 21)), done(seq)]

        client, kernel = scripted(answer)
        high = socket.socket(fileno=os.dup2(kernel._ready.fileno(), 1500))
        kernel._ready.close()
        kernel._ready = high
        assert kernel.fileno() == 1500
        client._sock._buffer = bytearray(1024)
        assert sorted(client.dump_link_stats(PICKER)) == list(range(1, 21))
        assert kernel.requests == 2
    finally:
        if high is not None:
            high.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.parametrize("end", ["own-datagram", "in-the-cut-one"])
def test_a_datagram_larger_than_the_buffer_grows_it_and_the_dump_is_asked_again(end: str, scripted: Scripted) -> None:
    """The rest of the cut dump is read first (the kernel refuses a dump while one runs),
    and a dump whose end was in the cut datagram is not waited for."""

    def answer(seq: int, _attempt: int) -> list[bytes]:
        messages = b"".join(stats_message(seq, index) for index in range(1, 101))
        later = [stats_message(seq, 101), done(seq)]
        return [messages, *later] if end == "own-datagram" else [messages + b"".join(later)]

    client, kernel = scripted(answer)
    client._sock._buffer = bytearray(1024)  # a datagram of 100 messages does not fit
    dumped = client.dump_link_stats(PICKER)
    assert sorted(dumped) == list(range(1, 102)) and dumped[100] == (1, 13, 14)
    assert kernel.requests == 2 and len(client._sock._buffer) >= 100 * 228
    assert kernel.queue == []


def test_a_refused_dump_is_a_netlink_error(scripted: Scripted) -> None:
    def answer(seq: int, _attempt: int) -> list[bytes]:
        error = struct.pack("=i", -errno.EOPNOTSUPP) + struct.pack("=IHHII", 28, nl.RTM_GETSTATS, 0, seq, 0)
        return [nl.pack_message(nl.NLMSG_ERROR, 0, seq, error)]

    client, _ = scripted(answer)
    with pytest.raises(nl.NetlinkError) as refused:
        client.dump_link_stats(PICKER)
    assert refused.value.errno == errno.EOPNOTSUPP


# --------------------------------------------------------------------------- the source, scripted


class DumpingRtnl:
    """An `RtnlClient` stand-in serving dumps of fixed statistics payloads (the picker applied)."""

    def __init__(self, links: dict[int, tuple[str, bytes, int | None]]) -> None:
        self.links = links
        self.stats_dumps = 0
        self.link_dumps = 0
        self.requests: list[str] = []  #: interfaces asked for by name

    def dump_link_stats(self, picker: nl.Stats64Picker) -> dict[int, nl.Picked]:
        self.stats_dumps += 1
        picked = {index: picker.pick(stats, 0, len(stats)) for index, (_, stats, _) in self.links.items()}
        return {index: values for index, values in picked.items() if values is not None}

    def dump_link_counters(self, picker: nl.Stats64Picker) -> dict[int, nl.LinkCounters]:
        self.link_dumps += 1
        return {
            index: (name, values, carrier)
            for index, (name, stats, carrier) in self.links.items()
            if (values := picker.pick(stats, 0, len(stats))) is not None
        }

    def link_stats64(self, ifname: str, *, with_carrier: bool = False) -> dict[str, int]:
        self.requests.append(ifname)
        for name, stats, _carrier in self.links.values():
            named = nl.parse_stats64(stats)
            if name == ifname and named is not None:
                return named
            if name == ifname:  # as `RtnlClient.link_stats64` when the reply has no IFLA_STATS64
                raise nl.NetlinkError(errno.ENODATA, f"no IFLA_STATS64 for {ifname}")
        raise nl.NetlinkError(errno.ENODEV, "No such device")


STANDARD = frozenset({"errored_frames", "frames_received", "symbol_errors"})


def test_a_poll_of_many_ports_takes_one_stats_dump_and_no_link_dump() -> None:
    client = DumpingRtnl({index: (f"eth{index}", stats64(first=index), 4) for index in range(1, 257)})
    source = RtnetlinkSource(client, max_age=0.5)  # type: ignore[arg-type]
    samples = [source.read_index(index, f"eth{index}", STANDARD) for index in range(1, 257)]
    assert (client.stats_dumps, client.link_dumps) == (1, 0)
    assert samples[9] == CounterSample(errored_frames=(10 + 12) + (10 + 13), frames_received=10)
    source.invalidate()
    source.read_index(1, "eth1", STANDARD)
    assert client.stats_dumps == 2
    with pytest.raises(CounterError, match="eth999"):  # not in the dump: asked by name, and refused
        source.read_index(999, "eth999", STANDARD)
    client.links[300] = ("eth300", stats64(first=300), None)  # added since the dumps
    assert source.read_index(300, "eth300", STANDARD).frames_received == 300
    assert client.requests == ["eth999", "eth300"]
    assert (client.stats_dumps, client.link_dumps) == (2, 1)


def test_the_carrier_down_count_comes_from_a_link_dump_only_when_wanted() -> None:
    client = DumpingRtnl({1: ("eth1", stats64(), 4), 2: ("eth2", stats64(first=50), None)})
    source = RtnetlinkSource(client, max_age=0.5)  # type: ignore[arg-type]
    assert source.read_index(1, "eth1", STANDARD | {"carrier_down_count"}).carrier_down_count == 4
    assert source.read_index(2, "eth2", None).carrier_down_count is None  # the kernel sent none
    assert (client.stats_dumps, client.link_dumps) == (0, 1)
    # while the link dump is fresh, it serves the ports that do not want the count too (without it)
    assert source.read_index(1, "eth1", STANDARD) == CounterSample(errored_frames=27, frames_received=1)
    assert source.read(ifname="eth2", counters=STANDARD).frames_received == 50  # by name, from the same dump
    assert (client.stats_dumps, client.link_dumps) == (0, 1)


def test_what_show_reads_of_one_port_asks_for_that_port_alone_unless_a_dump_is_fresh() -> None:
    """`provides` (show port) must not dump every interface (17 ms at 1,024 links, every
    show of a port): it asks for the one, or reads a link dump taken within `max_age`."""
    client = DumpingRtnl({index: (f"eth{index}", stats64(first=index), 4) for index in range(1, 257)})
    source = RtnetlinkSource(client, max_age=0.5)  # type: ignore[arg-type]
    source.read_index(1, "eth1", STANDARD)  # the poll's stats dump does not name the interfaces
    provided = source.provides("eth7")
    assert set(provided) >= {"errored_frames", "frames_received"}
    assert client.requests == ["eth7"] and client.link_dumps == 0
    source.read_index(2, "eth2", STANDARD | {"carrier_down_count"})  # a link dump, fresh now
    assert client.link_dumps == 1
    assert set(source.provides("eth9")) >= {"errored_frames", "frames_received", "carrier_down_count"}  # that dump
    assert client.requests == ["eth7"] and client.link_dumps == 1


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 26).flatmap(lambda n: st.lists(st.integers(0, 2**63), min_size=n, max_size=n)),
    st.one_of(st.none(), st.integers(0, 2**32 - 1)),
)
def test_a_dumped_sample_is_what_the_recipe_makes_of_the_named_fields(values: list[int], carrier: int | None) -> None:
    stats = struct.pack(f"={len(values)}Q", *values)
    raw = nl.parse_stats64(stats)
    for counters in (STANDARD, None):
        client = DumpingRtnl({5: ("eth5", stats, carrier)})
        source = RtnetlinkSource(client, max_age=0.5)  # type: ignore[arg-type]
        if raw is None:  # no statistics: not in the dump, and asked by name in vain
            with pytest.raises(CounterError):
                source.read_index(5, "eth5", counters)
            continue
        named = dict(raw) if counters is not None or carrier is None else {**raw, "carrier_down_count": carrier}
        assert source.read_index(5, "eth5", counters) == sample_from(named, NETDEV_RECIPE)


# --------------------------------------------------------------------------- the real kernel


def quiet_reads(read: Callable[[], T], tries: int = 10) -> T:
    """A value `read` gives twice in a row (background IPv6 chatter retried)."""
    last = read()
    for _ in range(tries):
        time.sleep(0.05)
        value = read()
        if value == last:
            return value
        last = value
    raise AssertionError("the counters never settled")


@needs_root
def test_the_dumps_agree_with_the_named_statistics_on_veth() -> None:
    with veth_pair() as (ns_a, ns_b):
        ip("link", "set", "veth1", "down", netns=ns_b)  # quiet: no traffic, counters still
        client = in_netns(ns_a, nl.RtnlClient)
        try:
            index = client.get_link("veth0").ifindex

            def both() -> tuple[dict[str, int], dict[str, int], nl.Picked, nl.LinkCounters]:
                by_index = client.dump_stats_by_index()[index]
                named = client.dump_stats(with_carrier=True)["veth0"]
                return by_index, named, client.dump_link_stats(PICKER)[index], client.dump_link_counters(PICKER)[index]

            by_index, named, stats, link = quiet_reads(both)
            assert stats == tuple(by_index[field] for field in NETDEV_FIELDS)
            assert link == ("veth0", tuple(named[field] for field in NETDEV_FIELDS), named["carrier_down_count"])
            assert link[2] >= 1  # the peer went down once
            assert set(client.dump_link_stats(PICKER)) == set(client.dump_stats_by_index())
            client._sock._buffer = bytearray(64)  # smaller than any datagram: grown, asked again
            assert client.dump_link_stats(PICKER)[index] == stats
            assert len(client._sock._buffer) > 64
        finally:
            client.close()


@needs_root
def test_reads_by_index_and_by_name_agree_on_veth() -> None:
    with veth_pair() as (ns_a, ns_b):
        ip("link", "set", "veth1", "down", netns=ns_b)
        source = in_netns(ns_a, lambda: RtnetlinkSource(nl.RtnlClient(), max_age=0.5))
        plain = in_netns(ns_a, lambda: RtnetlinkSource(nl.RtnlClient()))
        try:
            client = in_netns(ns_a, nl.RtnlClient)
            ifindex = client.get_link("veth0").ifindex
            client.close()

            def reads() -> tuple[CounterSample, CounterSample, CounterSample, CounterSample]:
                source.invalidate()
                with_carrier = STANDARD | {"carrier_down_count"}
                return (
                    source.read_index(ifindex, "veth0", STANDARD),
                    source.read_index(ifindex, "veth0", with_carrier),
                    plain.read("veth0", with_carrier),
                    plain.read("veth0", STANDARD),
                )

            by_stats, by_link, named_carrier, named = quiet_reads(reads)
            assert by_stats == named and by_stats.carrier_down_count is None
            assert by_link == named_carrier and by_link.carrier_down_count is not None
            assert by_stats.frames_received is not None and by_stats.errored_frames == 0
        finally:
            source.close()
            plain.close()
