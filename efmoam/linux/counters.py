"""Counter sources: where the link monitor's cumulative counters come from (linux.md 0-2).

Every source answers the same two questions about one interface: `read` gives a
`CounterSample` of cumulative values (None for a counter this source cannot provide; a
value that went backwards is reported as read, the core treats it as a reset), and
`provides` says once, for the start-up log, which counters it has and where each comes
from.  `open_counter_source` builds one by name:

=============  ==========================================================================
kind           errored_frames / frames_received / symbol_errors
=============  ==========================================================================
ethtool        ethtool netlink standard stats: eth-mac FrameCheckSequenceErrors +
               AlignmentErrors + rmon etherStatsUndersizePkts + etherStatsFragments +
               etherStatsJabbers / eth-mac FramesReceivedOK / eth-phy SymbolErrorDuringCarrier
rtnetlink      IFLA_STATS64 rx_crc_errors + rx_frame_errors / rx_packets / None
sysfs          the same files under <sysfs_root>/class/net/<if>/statistics/
driver         ``ethtool -S`` names (SIOCETHTOOL) mapped per driver (`DRIVER_COUNTERS`)
infiniband     <sysfs_root>/class/infiniband/<dev>/ports/<n>/counters/: port_rcv_errors /
               port_rcv_packets / symbol_error
file           a JSON or YAML file of cumulative counters per port, read when it changed
auto           per counter, the first of ethtool, driver, infiniband, rtnetlink (sysfs when
               rtnetlink cannot be opened) that provides it
=============  ==========================================================================

The NIC health counters (`HEALTH_COUNTERS`, issue 17; facts in nic-health.md):

=============  ==========================================================================
kind           health counters
=============  ==========================================================================
ethtool        fec_*: ETHTOOL_MSG_FEC_GET statistics (totals; an empty array is None)
rtnetlink      carrier_down_count: IFLA_CARRIER_DOWN_COUNT
sysfs          carrier_down_count: class/net/<if>/carrier_down_count
driver         per driver (`DRIVER_COUNTERS`): mlx5 pause storm, pause / per-priority
               pause, link_down_events_phy, rx_corrected_bits_phy; bnxt FEC, pause + PFC,
               link_down_events; ice pause + per-priority XON/XOFF
infiniband     ib_*: link_downed, excessive_buffer_overrun_errors, link_error_recovery,
               local_link_integrity_errors
file           any of them, by name
=============  ==========================================================================

ETHTOOL_MSG_PAUSE_GET statistics are not used: they count link PAUSE frames only, and
the auto source would then prefer them to the driver's sum of PAUSE and per-priority PAUSE.

A sum counts only the parts that are present; a counter none of whose parts is present
is None.  Oversize frames (well-formed frames longer than the maximum) are never errors.

Sources that use sockets (ethtool, rtnetlink, driver, auto) open them in
`open_counter_source`, so they read the network namespace of the thread that opened them.
A failed read raises `CounterError`, which the daemon logs; it never hands back a guess.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import yaml

from efmoam.core.linkmon.counters import COUNTERS, CounterSample
from efmoam.linux.ethtool import FEC_STATS, STAT_GROUP, EthtoolError, EthtoolIoctl, EthtoolNetlink
from efmoam.linux.files import COUNTER_FILE_LIMIT, BoundedYamlLoader, YamlLimitError, read_untrusted
from efmoam.linux.netlink import (
    CARRIER_DOWN_COUNT,
    STATS64_FIELDS,
    LinkCounters,
    NetlinkError,
    Picked,
    RtnlClient,
    Stats64Picker,
)

#: counter -> the raw counters whose sum it is, in one source's naming
Recipe = Mapping[str, tuple[str, ...]]

KINDS = ("auto", "ethtool", "rtnetlink", "sysfs", "driver", "infiniband", "file")

ETHTOOL_RECIPE: Recipe = {
    "errored_frames": (
        "FrameCheckSequenceErrors",
        "AlignmentErrors",
        "etherStatsUndersizePkts",
        "etherStatsFragments",
        "etherStatsJabbers",
    ),
    "frames_received": ("FramesReceivedOK",),
    "symbol_errors": ("SymbolErrorDuringCarrier",),
    "fec_corrected_blocks": ("FEC_GET corrected",),
    "fec_uncorrectable_blocks": ("FEC_GET uncorrectable",),
    "fec_corrected_bits": ("FEC_GET corrected_bits",),
}
#: raw name of each FEC_GET statistic in `ETHTOOL_RECIPE`
FEC_RAW_NAMES = {name: f"FEC_GET {name}" for name in FEC_STATS.values()}
#: the counters FEC_GET feeds
_FEC_COUNTERS = frozenset(c for c, parts in ETHTOOL_RECIPE.items() if set(parts) & set(FEC_RAW_NAMES.values()))

NETDEV_RECIPE: Recipe = {
    "errored_frames": ("rx_crc_errors", "rx_frame_errors"),
    "frames_received": ("rx_packets",),
    "symbol_errors": (),
    "carrier_down_count": (CARRIER_DOWN_COUNT,),
}
#: raw names of `NETDEV_RECIPE` that are attributes of the netdev, not ``statistics/`` files
NETDEV_ATTRIBUTES = frozenset({CARRIER_DOWN_COUNT})

#: InfiniBand PortCounters files.  symbol_error and port_rcv_errors are 16-bit and
#: port_rcv_packets is 32-bit unless the HCA has PortCountersExtended (then 64-bit);
#: link_downed and link_error_recovery are 8-bit, excessive_buffer_overrun_errors and
#: local_link_integrity_errors 4-bit (nic-health.md 6).  IBA counters saturate at all-ones
#: instead of wrapping, so a counter stuck at 15 / 255 / 65535 / 4294967295 no longer
#: counts and its deltas are 0 from then on; it is reported as read, like any other.
INFINIBAND_RECIPE: Recipe = {
    "errored_frames": ("port_rcv_errors",),
    "frames_received": ("port_rcv_packets",),
    "symbol_errors": ("symbol_error",),
    "ib_link_downed": ("link_downed",),
    "ib_excessive_buffer_overrun_errors": ("excessive_buffer_overrun_errors",),
    "ib_link_error_recovery": ("link_error_recovery",),
    "ib_local_link_integrity_errors": ("local_link_integrity_errors",),
}

_NONE: Recipe = {"errored_frames": (), "frames_received": (), "symbol_errors": ()}


def _per_priority(template: str) -> tuple[str, ...]:
    """One driver counter name per 802.1Q priority 0..7 (``template`` has a ``{p}``)."""
    return tuple(template.format(p=p) for p in range(8))


#: legacy ``ethtool -S`` names per driver (ETHTOOL_GDRVINFO name), from linux.md table 1.5
#: and, for the health counters, nic-health.md 4-5 (mlx5) and the drivers' string tables
#: (bnxt_ethtool.c ``bnxt_port_stats_arr`` / ``bnxt_port_stats_ext_arr``, ice_ethtool.c
#: ``ice_gstrings_pf_stats`` and its per-priority XON/XOFF names); a driver listed with no
#: names has none of these counters, an unlisted one is unknown
DRIVER_COUNTERS: dict[str, Recipe] = {
    "mlx5_core": {
        "errored_frames": ("rx_crc_errors_phy", "rx_undersize_pkts_phy", "rx_fragments_phy", "rx_jabbers_phy"),
        "frames_received": ("rx_packets_phy",),
        "symbol_errors": ("rx_symbol_err_phy",),
        "fec_corrected_bits": ("rx_corrected_bits_phy",),
        "pause_storm_events": ("tx_pause_storm_error_events",),
        "pause_frames_received": ("rx_pause_ctrl_phy", *_per_priority("rx_prio{p}_pause")),
        "pause_frames_sent": ("tx_pause_ctrl_phy", *_per_priority("tx_prio{p}_pause")),
        "carrier_down_count": ("link_down_events_phy",),
    },
    "bnxt_en": {
        "errored_frames": (
            "rx_fcs_err_frames", "rx_align_err_frames", "rx_undrsz_frames", "rx_runt_frames", "rx_jbr_frames",
        ),
        "frames_received": ("rx_good_frames",),
        "symbol_errors": ("rx_pcs_symbol_err",),
        "fec_corrected_blocks": ("rx_fec_corrected_blocks",),
        "fec_uncorrectable_blocks": ("rx_fec_uncorrectable_blocks",),
        "fec_corrected_bits": ("rx_corrected_bits",),
        "pause_frames_received": ("rx_pause_frames", "rx_pfc_frames"),
        "pause_frames_sent": ("tx_pause_frames", "tx_pfc_frames"),
        "carrier_down_count": ("link_down_events",),
    },
    "ice": {
        "errored_frames": ("rx_crc_errors.nic", "rx_undersize.nic", "rx_fragments.nic", "rx_jabber.nic"),
        "frames_received": (),
        "symbol_errors": (),  # illegal_bytes.nic counts bytes, not symbol-error events
        "pause_frames_received": (
            "link_xon_rx.nic", "link_xoff_rx.nic",
            *_per_priority("rx_priority_{p}_xon.nic"), *_per_priority("rx_priority_{p}_xoff.nic"),
        ),
        "pause_frames_sent": (
            "link_xon_tx.nic", "link_xoff_tx.nic",
            *_per_priority("tx_priority_{p}_xon.nic"), *_per_priority("tx_priority_{p}_xoff.nic"),
        ),
    },
    "i40e": {
        "errored_frames": ("port.rx_crc_errors", "port.rx_undersize", "port.rx_fragments", "port.rx_jabber"),
        "frames_received": ("port.rx_unicast", "port.rx_multicast", "port.rx_broadcast"),
        "symbol_errors": (),
    },
    "ixgbe": {
        "errored_frames": ("rx_crc_errors", "rx_short_length_errors"),
        "frames_received": ("rx_pkts_nic",),
        "symbol_errors": (),
    },
    "igb": {
        "errored_frames": ("rx_crc_errors", "rx_align_errors", "rx_short_length_errors"),
        "frames_received": ("rx_packets",),
        "symbol_errors": (),
    },
    "e1000e": {
        "errored_frames": ("rx_crc_errors", "rx_align_errors", "rx_short_length_errors"),
        "frames_received": ("rx_packets",),
        "symbol_errors": (),
    },
    "virtio_net": _NONE,
    "veth": _NONE,
}  # fmt: skip


class CounterError(Exception):
    """A source could not read an interface's counters (the daemon logs it and goes on).

    `sample` holds the last values the source did read for that interface, when it has
    any (the file source keeps them while its file is broken).
    """

    def __init__(self, message: str, sample: CounterSample | None = None) -> None:
        super().__init__(message)
        self.sample = sample


class CounterSource(Protocol):
    """Where one port's cumulative counters come from."""

    name: str

    def read(self, ifname: str, counters: Collection[str] | None = None) -> CounterSample:
        """Cumulative values now; None where this source does not provide a counter.

        `counters`, when given, are the ones the caller needs: a source may leave the
        others None to save a request (the ethtool source skips FEC_GET).
        """
        ...

    def provides(self, ifname: str) -> dict[str, str]:
        """Counter -> where it comes from, for the counters this source has for `ifname`."""
        ...


def sum_present(raw: Mapping[str, int], names: tuple[str, ...]) -> int | None:
    """The sum of the named counters that are present; None when none is."""
    present = [raw[name] for name in names if name in raw]
    return sum(present) if present else None


def sample_from(raw: Mapping[str, int], recipe: Recipe) -> CounterSample:
    """A sample computed from raw counters with a recipe (counters it lacks are None)."""
    return CounterSample(**{counter: sum_present(raw, parts) for counter, parts in recipe.items()})


def describe(raw: Mapping[str, int], recipe: Recipe, prefix: str, label: Callable[[str], str] = str) -> dict[str, str]:
    """Counter -> "<prefix> <part> + <part>" for the counters whose parts are present."""
    described: dict[str, str] = {}
    for counter in COUNTERS:
        parts = [label(name) for name in recipe.get(counter, ()) if name in raw]
        if parts:
            described[counter] = f"{prefix} {' + '.join(parts)}"
    return described


#: more than a counter file can hold (a u64 has 20 digits): a file this long is not one
_COUNTER_FILE_BYTES = 64


def read_counter_file(path: Path) -> int | None:
    """A non-negative integer sysfs attribute; None when the file is missing, unreadable,
    too long, or holds anything but decimal digits (and white space around them)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        data = os.read(fd, _COUNTER_FILE_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    data = data.strip()
    if len(data) >= _COUNTER_FILE_BYTES or not data.isdigit():
        return None
    return int(data)


class BaseCounterSource:
    """What every source shares: a name, `close`, and use as a context manager."""

    name = "base"

    def read(self, ifname: str, counters: Collection[str] | None = None) -> CounterSample:  # pragma: no cover
        """Cumulative values now; None where this source does not provide a counter
        (`counters`: see `CounterSource.read`)."""
        raise NotImplementedError

    def provides(self, ifname: str) -> dict[str, str]:  # pragma: no cover - overridden
        """Counter -> where it comes from ({} when the interface cannot be read)."""
        raise NotImplementedError

    def generation(self, ifname: str) -> int:
        """Changes when the sources feeding `ifname`'s counters change (their totals are then
        not comparable with the last sample's: the caller takes the next one as a baseline)."""
        return 0

    def share_snapshots(self, max_age: float) -> None:
        """Let one snapshot of every interface's counters serve the poll's reads
        (`read_in_poll`) for `max_age` seconds: rtnetlink's dump (which also serves its
        `read` and `raw` by name), the file source's look; a source that reads one
        interface at a time has none to share."""

    def read_in_poll(self, ifname: str, ifindex: int, counters: Collection[str] | None, began: float) -> CounterSample:
        """`read` as the daemon's poll does it: `ifindex` is the port's and `began` the
        poll's start (monotonic), so that a shared snapshot serves the whole poll however
        long it takes (`share_snapshots`)."""
        return self.read(ifname, counters)

    def close(self) -> None:
        """Release sockets (nothing to do for file-based sources)."""

    def __enter__(self) -> BaseCounterSource:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


class RecipeSource(BaseCounterSource):
    """A source that reads raw named counters and sums them with a recipe."""

    def raw(self, ifname: str) -> dict[str, int]:  # pragma: no cover - overridden
        """The raw counters of `ifname` (CounterError when the interface cannot be read)."""
        raise NotImplementedError

    def recipe(self, ifname: str) -> Recipe:
        """The recipe for `ifname` (the same for every interface unless overridden)."""
        return _NONE

    def prefix(self, ifname: str) -> str:
        """How `provides` introduces this source."""
        return self.name

    def label(self, raw_name: str) -> str:
        """How `provides` names one raw counter."""
        return raw_name

    def read(self, ifname: str, counters: Collection[str] | None = None) -> CounterSample:
        """The recipe's sums of the raw counters read now."""
        raw = self.raw(ifname)
        return sample_from(raw, self.recipe(ifname))

    def provides(self, ifname: str) -> dict[str, str]:
        """Counter -> its parts, for the counters whose parts are present now."""
        try:
            raw = self.raw(ifname)
            return describe(raw, self.recipe(ifname), self.prefix(ifname), self.label)
        except CounterError:
            return {}


# --------------------------------------------------------------------------- netlink sources


class EthtoolStatsSource(RecipeSource):
    """IEEE 802.3 / RMON standard statistics (STATS_GET) and FEC statistics (FEC_GET)
    through ethtool netlink: two requests per read.

    The FEC counters are the port totals; how many lanes the driver splits them into is
    kept from the last read for `provides` ("FEC_GET corrected (4 lanes)").  A driver
    without FEC statistics (EOPNOTSUPP: veth, virtio_net; or every statistic empty)
    provides no FEC counter and keeps its standard ones; FEC_GET is not sent for it again
    until the next `provides` (FEC ops are the driver's, fixed for the life of a netdev),
    so its reads cost one request, as before.
    """

    name = "ethtool"

    def __init__(self, client: EthtoolNetlink) -> None:
        self._client = client
        self._lanes: dict[str, int] = {}  #: FEC raw name -> lanes, as last read
        self._without_fec: set[str] = set()  #: interfaces whose FEC_GET was unsupported

    def read(self, ifname: str, counters: Collection[str] | None = None) -> CounterSample:
        """The standard counters, and the FEC ones unless `counters` leaves them all out."""
        with_fec = counters is None or not _FEC_COUNTERS.isdisjoint(counters)
        return sample_from(self.raw(ifname, with_fec=with_fec), self.recipe(ifname))

    def raw(self, ifname: str, *, with_fec: bool = True) -> dict[str, int]:
        """The standard and (`with_fec`) FEC counters the driver provides ({} on a kernel without either)."""
        raw = self._ask(ifname, "stats", self._client.stats)
        if not with_fec or ifname in self._without_fec:
            return raw
        fec = self._ask(ifname, "FEC stats", self._client.fec_stats)
        if not fec:
            self._without_fec.add(ifname)
        self._lanes = {FEC_RAW_NAMES[name]: len(stat.lanes) for name, stat in fec.items()}
        raw.update((FEC_RAW_NAMES[name], stat.total) for name, stat in fec.items())
        return raw

    def provides(self, ifname: str) -> dict[str, str]:
        """Counter -> its parts; FEC_GET is asked again even if it was unsupported."""
        self._without_fec.discard(ifname)
        return super().provides(ifname)

    @staticmethod
    def _ask(ifname: str, what: str, request: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
        try:
            return request(ifname)
        except EthtoolError as exc:
            if exc.errno in (errno.EOPNOTSUPP, errno.EINVAL):
                return {}
            raise CounterError(f"ethtool netlink {what} of {ifname}: {exc.strerror}") from exc

    def recipe(self, ifname: str) -> Recipe:
        """`ETHTOOL_RECIPE` for every interface."""
        return ETHTOOL_RECIPE

    def label(self, raw_name: str) -> str:
        """Group and name, e.g. ``eth-mac FrameCheckSequenceErrors``, ``FEC_GET corrected (2 lanes)``."""
        lanes = self._lanes.get(raw_name)
        if lanes is not None:
            return f"{raw_name} ({lanes} lanes)" if lanes else raw_name
        return f"{STAT_GROUP.get(raw_name, '?')} {raw_name}"

    def close(self) -> None:
        """Release the netlink socket."""
        self._client.close()


#: the `rtnl_link_stats64` fields `NETDEV_RECIPE` sums, in the kernel's order
_NETDEV_FIELDS = tuple(
    sorted({p for parts in NETDEV_RECIPE.values() for p in parts} - NETDEV_ATTRIBUTES, key=STATS64_FIELDS.index)
)
#: (position in a sample, positions in `_NETDEV_FIELDS` of the fields it sums): the
#: statistics' counters of `NETDEV_RECIPE`
_NETDEV_SUMS = tuple(
    (COUNTERS.index(counter), tuple(_NETDEV_FIELDS.index(p) for p in parts))
    for counter, parts in NETDEV_RECIPE.items()
    if parts and not NETDEV_ATTRIBUTES.intersection(parts)
)
#: the same split into counters of one field and sums
_NETDEV_ONE = tuple((at, positions[0]) for at, positions in _NETDEV_SUMS if len(positions) == 1)
_NETDEV_MANY = tuple((at, positions) for at, positions in _NETDEV_SUMS if len(positions) > 1)
_NETDEV_PICKER = Stats64Picker(_NETDEV_FIELDS)
_CARRIER = "carrier_down_count"  #: the counter IFLA_CARRIER_DOWN_COUNT feeds (`NETDEV_RECIPE`)
_CARRIER_AT = COUNTERS.index(_CARRIER)
_ABSENT: list[int | None] = [None] * len(COUNTERS)


def _netdev_sample(values: Picked, carrier_down: int | None) -> CounterSample:
    """The sample `NETDEV_RECIPE` makes of picked statistics and the carrier-down count
    (once a second per port: the usual case, every field there, takes the short way;
    made by position, `CounterSample` being a named tuple)."""
    fields: list[int | None] = _ABSENT.copy()
    fields[_CARRIER_AT] = carrier_down
    if None in values:  # an older kernel's shorter struct
        for at, positions in _NETDEV_SUMS:
            fields[at] = sum_present_at(values, positions)
    else:
        for at, position in _NETDEV_ONE:
            fields[at] = values[position]
        for at, positions in _NETDEV_MANY:
            fields[at] = sum([values[p] for p in positions])  # type: ignore[misc]  # no None here
    return CounterSample._make(fields)


def sum_present_at(values: Picked, positions: tuple[int, ...]) -> int | None:
    """`sum_present` over positions of picked values (None: absent)."""
    total: int | None = None
    for at in positions:
        value = values[at]
        if value is not None:
            total = value if total is None else total + value
    return total


class RtnetlinkSource(RecipeSource):
    """`rtnl_link_stats64` and IFLA_CARRIER_DOWN_COUNT through rtnetlink.

    By name (`read`): one RTM_GETLINK request for that interface, or, with `max_age` > 0,
    served from one RTM_GETLINK dump of every interface taken at most `max_age` seconds
    earlier: cheaper when most interfaces of the namespace are polled in a burst, dearer
    when a few ports are monitored on a host with many interfaces.

    By ifindex (`read_index`, the daemon's poll: it knows each port's ifindex and drops
    the port when its link is renamed or removed): with `max_age`, from one dump per
    poll, RTM_GETSTATS unless the carrier-down count is wanted (only RTM_GETLINK carries
    it: a port running the link_flaps monitor), or when an RTM_GETLINK dump is fresh
    anyway.  Dumps parse only the fields `NETDEV_RECIPE` sums, straight into samples
    (netlink.py's `Stats64Picker`).
    """

    name = "rtnetlink"

    def __init__(self, client: RtnlClient, *, max_age: float = 0.0) -> None:
        self._client = client
        self.max_age = max_age
        self._links: dict[int, LinkCounters] = {}  #: the last RTM_GETLINK dump, by ifindex
        self._by_name: dict[str, LinkCounters] = {}  #: the same by name
        self._links_taken = -math.inf
        self._stats: dict[int, Picked] = {}  #: the last RTM_GETSTATS dump, by ifindex
        self._stats_taken = -math.inf

    def invalidate(self) -> None:
        """Forget the dumps (with `max_age`): the next read takes a new one."""
        self._links, self._by_name, self._links_taken = {}, {}, -math.inf
        self._stats, self._stats_taken = {}, -math.inf

    def read(self, ifname: str, counters: Collection[str] | None = None) -> CounterSample:
        """The interface's counters, by name; the carrier-down count only when `counters` has it."""
        with_carrier = counters is None or _CARRIER in counters
        if self.max_age > 0:
            self._fresh_links(time.monotonic(), ifname)
            link = self._by_name.get(ifname)
            if link is not None:
                return _netdev_sample(link[1], link[2] if with_carrier else None)
        sample = sample_from(self._request(ifname), NETDEV_RECIPE)
        return sample if with_carrier else sample._replace(carrier_down_count=None)

    def read_index(
        self, ifindex: int, ifname: str, counters: Collection[str] | None = None, now: float | None = None
    ) -> CounterSample:
        """The counters of interface `ifindex` (named `ifname`), as `read` gives them; an
        interface the dump lacks (added since) is asked for by name.  `now`: the monotonic
        time, when the caller has it (the poll of a thousand ports reads it once)."""
        if self.max_age <= 0:
            return self.read(ifname, counters)
        if now is None:
            now = time.monotonic()
        with_carrier = counters is None or _CARRIER in counters
        if with_carrier or now - self._links_taken <= self.max_age:
            self._fresh_links(now, ifname)
            link = self._links.get(ifindex)
            if link is None:
                return self.read(ifname, counters)
            return _netdev_sample(link[1], link[2] if with_carrier else None)
        if now - self._stats_taken > self.max_age:
            try:
                self._stats, self._stats_taken = self._client.dump_link_stats(_NETDEV_PICKER), now
            except NetlinkError as exc:
                raise CounterError(f"rtnetlink stats of {ifname}: {exc.strerror}") from exc
        values = self._stats.get(ifindex)
        if values is None:
            return self.read(ifname, counters)
        return _netdev_sample(values, None)

    def share_snapshots(self, max_age: float) -> None:
        self.max_age = max_age

    def read_in_poll(self, ifname: str, ifindex: int, counters: Collection[str] | None, began: float) -> CounterSample:
        return self.read_index(ifindex, ifname, counters, began)

    def _fresh_links(self, now: float, ifname: str) -> None:
        """Dump every interface with RTM_GETLINK again if the last dump is older than `max_age`."""
        if now - self._links_taken > self.max_age:
            try:
                self._links = self._client.dump_link_counters(_NETDEV_PICKER)
            except NetlinkError as exc:
                raise CounterError(f"rtnetlink stats of {ifname}: {exc.strerror}") from exc
            self._by_name = {link[0]: link for link in self._links.values()}
            self._links_taken = now

    def raw(self, ifname: str) -> dict[str, int]:
        """IFLA_STATS64's fields the recipe names and the carrier-down count (`provides`):
        from the last dump while it is fresh, else asked for this interface alone (what
        `show` reads of one port must not dump every interface: 17 ms at 1,024 links)."""
        if self.max_age > 0 and time.monotonic() - self._links_taken <= self.max_age:
            link = self._by_name.get(ifname)
            if link is not None:
                raw = {field: value for field, value in zip(_NETDEV_FIELDS, link[1], strict=True) if value is not None}
                if link[2] is not None:
                    raw[CARRIER_DOWN_COUNT] = link[2]
                return raw
        return self._request(ifname)

    def _request(self, ifname: str) -> dict[str, int]:
        try:
            return self._client.link_stats64(ifname, with_carrier=True)
        except NetlinkError as exc:
            raise CounterError(f"rtnetlink stats of {ifname}: {exc.strerror}") from exc

    def recipe(self, ifname: str) -> Recipe:
        """`NETDEV_RECIPE` for every interface."""
        return NETDEV_RECIPE

    def prefix(self, ifname: str) -> str:
        """``rtnetlink``."""
        return "rtnetlink"

    def label(self, raw_name: str) -> str:
        """``IFLA_STATS64 <field>``, or ``IFLA_CARRIER_DOWN_COUNT``."""
        return "IFLA_CARRIER_DOWN_COUNT" if raw_name == CARRIER_DOWN_COUNT else f"IFLA_STATS64 {raw_name}"

    def close(self) -> None:
        """Release the netlink socket."""
        self._client.close()


# --------------------------------------------------------------------------- sysfs sources


class SysfsSource(RecipeSource):
    """`rtnl_link_stats64` from ``<sysfs_root>/class/net/<if>/statistics/*``, and
    ``class/net/<if>/carrier_down_count``.

    Each statistics file read makes the kernel collect all the statistics of the device,
    so this costs three stats collections per read; rtnetlink needs one.  sysfs shows the
    network namespace of whoever mounted it, not the reader's.
    """

    name = "sysfs"

    def __init__(self, sysfs_root: Path = Path("/sys")) -> None:
        self.root = sysfs_root

    def raw(self, ifname: str) -> dict[str, int]:
        """The statistics files the recipe names that exist and hold a number."""
        directory = self.root / "class" / "net" / ifname
        raw: dict[str, int] = {}
        for names in NETDEV_RECIPE.values():
            for name in names:
                value = read_counter_file(directory / self.label(name))
                if value is not None:
                    raw[name] = value
        if not raw and not directory.is_dir():
            raise CounterError(f"sysfs: no interface {ifname} under {self.root}")
        return raw

    def recipe(self, ifname: str) -> Recipe:
        """`NETDEV_RECIPE` for every interface."""
        return NETDEV_RECIPE

    def label(self, raw_name: str) -> str:
        """The file under ``class/net/<if>/``: ``statistics/<name>`` or ``carrier_down_count``."""
        return raw_name if raw_name in NETDEV_ATTRIBUTES else f"statistics/{raw_name}"


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _ports(device: Path) -> list[str]:
    try:
        return sorted((p.name for p in (device / "ports").iterdir() if p.name.isdigit()), key=int)
    except OSError:
        return []


def find_infiniband_port(sysfs_root: Path, ifname: str) -> tuple[str, str] | None:
    """(RDMA device, port) behind a netdev, or None.

    First the netdev's own device (``class/net/<if>/device/infiniband/<dev>``), with
    ``dev_port`` + 1 choosing among several ports; then any port whose GID table names the
    netdev (``class/infiniband/*/ports/*/gid_attrs/ndevs/*``, RoCE).
    """
    try:
        devices = sorted(p.name for p in (sysfs_root / "class" / "net" / ifname / "device" / "infiniband").iterdir())
    except OSError:
        devices = []
    for device in devices:
        ports = _ports(sysfs_root / "class" / "infiniband" / device)
        dev_port = _read_text(sysfs_root / "class" / "net" / ifname / "dev_port")
        wanted = str(int(dev_port) + 1) if dev_port is not None and dev_port.isdigit() else None
        if wanted in ports:
            return device, str(wanted)
        if len(ports) == 1:
            return device, ports[0]
    return _find_by_gid_ndevs(sysfs_root, ifname)


def _find_by_gid_ndevs(sysfs_root: Path, ifname: str) -> tuple[str, str] | None:
    try:
        devices = sorted((sysfs_root / "class" / "infiniband").iterdir())
    except OSError:
        return None
    for device in devices:
        for port in _ports(device):
            try:
                entries = sorted((device / "ports" / port / "gid_attrs" / "ndevs").iterdir())
            except OSError:
                continue
            if any(_read_text(entry) == ifname for entry in entries):
                return device.name, port
    return None


class InfinibandSource(RecipeSource):
    """RDMA port counters of the device behind a netdev (`INFINIBAND_RECIPE`).

    On RoCE these count RDMA traffic only (TCP/IP traffic is in the netdev statistics),
    and they saturate (see `INFINIBAND_RECIPE`).  A netdev with no RDMA device provides
    nothing.
    """

    name = "infiniband"

    def __init__(self, sysfs_root: Path = Path("/sys")) -> None:
        self.root = sysfs_root
        self._ports: dict[str, tuple[str, str] | None] = {}

    def port_of(self, ifname: str) -> tuple[str, str] | None:
        """(device, port) of `ifname`, looked up once."""
        if ifname not in self._ports:
            self._ports[ifname] = find_infiniband_port(self.root, ifname)
        return self._ports[ifname]

    def raw(self, ifname: str) -> dict[str, int]:
        """The counter files that exist ({} for a netdev without RDMA device)."""
        port = self.port_of(ifname)
        if port is None:
            return {}
        directory = self.root / "class" / "infiniband" / port[0] / "ports" / port[1] / "counters"
        raw: dict[str, int] = {}
        for names in INFINIBAND_RECIPE.values():
            for name in names:
                value = read_counter_file(directory / name)
                if value is not None:
                    raw[name] = value
        if not raw:
            self._ports.pop(ifname, None)  # look again next time (device gone or renamed)
        return raw

    def recipe(self, ifname: str) -> Recipe:
        """`INFINIBAND_RECIPE` for every interface."""
        return INFINIBAND_RECIPE

    def prefix(self, ifname: str) -> str:
        """``infiniband <device> port <n>``."""
        port = self.port_of(ifname)
        return f"infiniband {port[0]} port {port[1]}" if port else "infiniband"


# --------------------------------------------------------------------------- driver names


class DriverSource(BaseCounterSource):
    """Driver-specific ``ethtool -S`` counters (SIOCETHTOOL) mapped by `DRIVER_COUNTERS`.

    Every read asks for the driver's name and then all of its counters (three ioctls
    more); names are not cached because a driver may add counters (queues) at any time.
    """

    name = "driver"

    def __init__(self, ioctl: EthtoolIoctl) -> None:
        self._ioctl = ioctl

    def driver(self, ifname: str) -> str | None:
        """The driver's name, None when the device has no driver information."""
        try:
            return self._ioctl.driver(ifname)
        except EthtoolError as exc:
            if exc.errno == errno.EOPNOTSUPP:
                return None
            raise CounterError(f"driver of {ifname}: {exc.strerror}") from exc

    def recipe(self, ifname: str) -> Recipe:
        """The driver's entry of `DRIVER_COUNTERS`, nothing for other drivers."""
        driver = self.driver(ifname)
        return DRIVER_COUNTERS.get(driver, _NONE) if driver else _NONE

    def read(self, ifname: str, counters: Collection[str] | None = None) -> CounterSample:
        """The mapped counters (the driver is asked once per read)."""
        recipe = self.recipe(ifname)
        if recipe is _NONE:
            return CounterSample()
        return sample_from(self._statistics(ifname), recipe)

    def provides(self, ifname: str) -> dict[str, str]:
        """Counter -> "driver <name> ethtool -S <names>"."""
        try:
            driver = self.driver(ifname)
            recipe = DRIVER_COUNTERS.get(driver, _NONE) if driver else _NONE
            if recipe is _NONE:
                return {}
            return describe(self._statistics(ifname), recipe, f"driver {driver} ethtool -S")
        except CounterError:
            return {}

    def _statistics(self, ifname: str) -> dict[str, int]:
        try:
            return self._ioctl.statistics(ifname)
        except EthtoolError as exc:
            if exc.errno == errno.EOPNOTSUPP:
                return {}
            raise CounterError(f"ethtool -S of {ifname}: {exc.strerror}") from exc

    def close(self) -> None:
        """Release the ioctl socket."""
        self._ioctl.close()


# --------------------------------------------------------------------------- file


def _read_document(path: Path) -> bytes:
    """The bytes of a counter file, read with `read_untrusted` (a regular file of at most
    `COUNTER_FILE_LIMIT` bytes; a FIFO or a device is refused, never waited on);
    CounterError when it cannot be read."""
    try:
        return read_untrusted(path, COUNTER_FILE_LIMIT, "a counter file")
    except OSError as exc:
        raise CounterError(f"counter file {path}: {exc.strerror or exc}") from exc


def _parse_document(data: bytes, path: Path) -> Any:
    """The parsed content of a counter file; CounterError for anything wrong with it.

    The text must be UTF-8, and YAML goes through `BoundedYamlLoader` (nesting and
    aliases bounded).  Whatever the bytes are, nothing but CounterError is raised.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CounterError(f"counter file {path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    is_json = path.suffix.lower() == ".json"
    try:
        return json.loads(text) if is_json else yaml.load(text, Loader=BoundedYamlLoader)
    except YamlLimitError as exc:
        raise CounterError(f"counter file {path}: {exc}") from exc
    except (ValueError, TypeError, OverflowError, yaml.YAMLError) as exc:
        what = "JSON" if is_json else "YAML"
        raise CounterError(f"counter file {path}: not valid {what}: {_one_line(str(exc))}") from exc
    except RecursionError:
        raise CounterError(f"counter file {path}: nested too deeply") from None
    except MemoryError:
        raise CounterError(f"counter file {path}: too large to parse (out of memory)") from None


def _one_line(message: str, limit: int = 300) -> str:
    """A parser's message on one line of at most `limit` characters (for the log)."""
    line = " ".join(message.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


#: the largest value a counter file may give (counters are u64 in every kernel interface)
COUNTER_MAX = 2**64 - 1


def validate_counters(document: Any, path: Path) -> dict[str, dict[str, int | None]]:
    """``{port: {counter: cumulative value or null}}``, counters named as in `COUNTERS`;
    CounterError for anything else."""
    if not isinstance(document, dict):
        raise CounterError(f"counter file {path}: expected a mapping of ports")
    ports: dict[str, dict[str, int | None]] = {}
    for port, entry in document.items():
        counters = {} if entry is None else entry
        if not isinstance(port, str) or not isinstance(counters, dict):
            raise CounterError(f"counter file {path}: port {_one_line(repr(port), 60)} must map to counters")
        unknown = sorted(str(name) for name in counters if name not in COUNTERS)
        if unknown:
            raise CounterError(f"counter file {path}: port {port}: unknown counters {unknown}")
        for name, value in counters.items():
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise CounterError(f"counter file {path}: {port}.{name} must be a non-negative integer")
            if value is not None and value > COUNTER_MAX:
                raise CounterError(f"counter file {path}: {port}.{name} is larger than a 64-bit counter")
        ports[port] = dict(counters)
    return ports


#: the clock the kernel stamps files with (linux/time.h; Python's time module lacks the name)
_CLOCK_REALTIME_COARSE = 5
_SECOND_NS = 1_000_000_000


def _file_version(status: os.stat_result) -> tuple[int, int, int, int, int]:
    """What changes whenever a file's content changes, but for `_may_change_unseen`."""
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)


def _stamp_step_ns(status: os.stat_result) -> int:
    """The step of a file system's time stamps as its stamps show it: the largest power of
    ten up to a second dividing both; whole seconds are taken for two (FAT)."""
    step = 1
    while step < _SECOND_NS and status.st_mtime_ns % (10 * step) == 0 and status.st_ctime_ns % (10 * step) == 0:
        step *= 10
    return 2 * _SECOND_NS if step == _SECOND_NS else step


def _may_change_unseen(status: os.stat_result, clock_ns: int) -> bool:
    """Whether a rewrite in place after `clock_ns` (`_CLOCK_REALTIME_COARSE`, read just
    before the stat) could keep the file's stamps: they are less than a stamp step before
    it (or after it).  Any later change is stamped at or after `clock_ns`, rounded down
    to the step."""
    return max(status.st_mtime_ns, status.st_ctime_ns) + _stamp_step_ns(status) > clock_ns


class FileSource(BaseCounterSource):
    """Cumulative counters per port from a JSON (``.json``) or YAML file, read when it changed.

    ``{"eth0": {"errored_frames": 12, "frames_received": 1000, "symbol_errors": 0}}``: a
    missing counter (or a port missing from the file) is None.  Any name of `COUNTERS`
    may be given: the standard three and the NIC health counters (fec_corrected_blocks,
    fec_uncorrectable_blocks, fec_corrected_bits, pause_storm_events,
    pause_frames_received, pause_frames_sent, carrier_down_count, ib_link_downed,
    ib_excessive_buffer_overrun_errors, ib_link_error_recovery,
    ib_local_link_integrity_errors); any other name, and a value that is not an integer
    from 0 to 2**64 - 1, make the whole file invalid.  When the file cannot be
    read or is invalid, `read` raises `CounterError` carrying the values last read
    (kept until the file is good again).  The file is not trusted (`_read_document`,
    `_parse_document`): a FIFO, a device, a file over `COUNTER_FILE_LIMIT`, text that is
    not UTF-8, a document nested too deeply or with aliases that stand for too much are
    all a `CounterError`.

    Every read (`read_at`: every poll, below) reflects the file as it is then, but one
    poll of N ports costs one load, not N: each look stats the file and reads it again
    only when its device, inode, size, mtime or ctime changed, or when the last read came
    less than a stamp step after the file's last change by the kernel's clock
    (`_may_change_unseen`: a rewrite in place within the same clock tick, 1 to 10 ms, or
    the same stamp step, 2 s on FAT, and of the same size changes none of them).  Then
    new bytes are parsed and validated; the same bytes keep the result they had (values
    or error).  A file replaced by rename (a new inode) is always seen.  Limits: a wall
    clock stepped back, or a network file system stamping with another clock, can hide a
    rewrite in place until the file changes again; one answering stat from its attribute
    cache (NFS) can hide any change, a rename too, for as long as it caches.

    The daemon's poll reads with `read_at` and the poll's start: with `max_age` > 0, one
    look at the file serves every read of a poll that began at most `max_age` seconds
    after it (as one dump serves an rtnetlink poll), so a thousand ports cost one stat.
    """

    name = "file"

    def __init__(self, path: Path, *, max_age: float = 0.0) -> None:
        self.path = path
        self.max_age = max_age  #: seconds a look at the file serves `read_at` (0: every read looks)
        self._looked_at = -math.inf  #: the `read_at` time of the last look
        self._unreadable: str | None = None  #: why the last look could not read the file
        self._ports: dict[str, dict[str, int | None]] | None = None  #: the last good values
        self._samples: dict[str, CounterSample] = {}  #: per port read, from `_ports`
        self._version: tuple[int, int, int, int, int] | None = None  #: of the bytes last read
        self._content: bytes | None = None  #: the bytes last read
        self._invalid: str | None = None  #: why the bytes last read are not a counter file
        self._recheck = True  #: read the bytes again even if the version is the same

    def _refresh(self, ifname: str, now: float | None = None) -> dict[str, dict[str, int | None]]:
        """The values as the file holds them now (or at the look that serves `now`, see
        `read_at`); CounterError with the last good ones."""
        if now is None or now - self._looked_at > self.max_age:
            try:
                self._follow_file()
                self._unreadable = None
            except CounterError as exc:
                self._unreadable = str(exc)
            if now is not None:
                self._looked_at = now
        problem = self._unreadable or self._invalid
        if problem is not None:
            raise CounterError(problem, self._sample(ifname) if self._ports is not None else None)
        return self._ports or {}  # set by the first good read, never unset

    def _follow_file(self) -> None:
        """Read and parse the file if it may have changed since the last read."""
        clock = time.clock_gettime_ns(_CLOCK_REALTIME_COARSE)
        try:
            status = os.stat(self.path)
        except OSError as exc:
            raise CounterError(f"counter file {self.path}: {exc.strerror or exc}") from exc
        version = _file_version(status)
        if version == self._version and not self._recheck:
            return
        content = _read_document(self.path)
        if content != self._content:
            self._content, self._invalid = content, None
            try:
                self._ports, self._samples = validate_counters(_parse_document(content, self.path), self.path), {}
            except CounterError as exc:
                self._invalid = str(exc)
        self._version, self._recheck = version, _may_change_unseen(status, clock)

    def _sample(self, ifname: str) -> CounterSample:
        sample = self._samples.get(ifname)
        if sample is None:
            counters = (self._ports or {}).get(ifname, {})
            sample = self._samples[ifname] = CounterSample(**{name: counters.get(name) for name in COUNTERS})
        return sample

    def read(self, ifname: str, counters: Collection[str] | None = None) -> CounterSample:
        """The port's counters as the file holds them now."""
        self._refresh(ifname)
        return self._sample(ifname)

    def read_at(self, ifname: str, counters: Collection[str] | None, now: float) -> CounterSample:
        """`read` for a poll that began at `now` (monotonic): from the last look at the file
        if it was taken at most `max_age` seconds before."""
        self._refresh(ifname, now)
        return self._sample(ifname)

    def share_snapshots(self, max_age: float) -> None:
        self.max_age = max_age

    def read_in_poll(self, ifname: str, ifindex: int, counters: Collection[str] | None, began: float) -> CounterSample:
        return self.read_at(ifname, counters, began)

    def provides(self, ifname: str) -> dict[str, str]:
        """Counter -> "file <path> <counter>" for the counters the file has for the port."""
        try:
            ports = self._refresh(ifname)
        except CounterError:
            if self._ports is None:
                return {}
            ports = self._ports
        counters = ports.get(ifname, {})
        return {name: f"file {self.path} {name}" for name in COUNTERS if counters.get(name) is not None}


# --------------------------------------------------------------------------- auto


class AutoSource(BaseCounterSource):
    """Per counter, the first source that provides it (decided once per interface).

    `reprobe` forgets the decision (call it after a link change or a driver rebind); a
    failed read forgets it too, and so does a plan that lacks a counter the port needs,
    every `REPROBE_MISSING` seconds (a NIC may report FEC only once FEC is active).  The
    plan covers every counter some source has (`provides` lists them all, so ``show
    port`` says what a port could give); `counters` limits what `read` reads: a source
    that feeds none of them is never read, and the others are told which are needed (by
    default every one of `COUNTERS`).  `generation` changes when a new plan reads a
    counter from another source.
    """

    name = "auto"
    REPROBE_MISSING = 60.0  #: seconds between looks for a needed counter no source had

    def __init__(self, sources: Sequence[BaseCounterSource], counters: Collection[str] = COUNTERS) -> None:
        unknown = sorted(set(counters) - set(COUNTERS))
        if unknown:
            raise ValueError(f"unknown counters {unknown}")
        self.sources = list(sources)
        self.counters = frozenset(counters)
        self._plans: dict[str, dict[str, tuple[BaseCounterSource, str]]] = {}
        self._reads: dict[str, list[tuple[str, BaseCounterSource]]] = {}
        self._incomplete: dict[str, float] = {}  #: interface -> when a needed counter was last looked for
        self._generations: dict[str, tuple[int, tuple[tuple[str, int], ...]]] = {}

    def plan(self, ifname: str) -> dict[str, tuple[BaseCounterSource, str]]:
        """Counter -> (source, description), probing the sources the first time."""
        if ifname in self._plans:
            return self._plans[ifname]
        plan: dict[str, tuple[BaseCounterSource, str]] = {}
        for source in self.sources:
            if len(plan) == len(COUNTERS):
                break
            for counter, description in source.provides(ifname).items():
                plan.setdefault(counter, (source, description))
        if plan:  # an interface nothing can read may appear later: probe again then
            self._plans[ifname] = plan
            reads = self._reads[ifname] = [(c, source) for c, (source, _) in plan.items() if c in self.counters]
            if self.counters - plan.keys():
                self._incomplete[ifname] = time.monotonic()
            else:
                self._incomplete.pop(ifname, None)
            feeds = tuple((counter, id(source)) for counter, source in reads)
            number, before = self._generations.get(ifname, (0, feeds))
            self._generations[ifname] = (number + (feeds != before), feeds)
        return plan

    def generation(self, ifname: str) -> int:
        return self._generations.get(ifname, (0, ()))[0]

    def reprobe(self, ifname: str | None = None) -> None:
        """Forget which source feeds `ifname` (every interface when None)."""
        if ifname is None:
            self._plans.clear()
            self._reads.clear()
        else:
            self._plans.pop(ifname, None)
            self._reads.pop(ifname, None)

    def read(self, ifname: str, counters: Collection[str] | None = None) -> CounterSample:
        """Each counter read (`self.counters`) from its source; every source involved is read once."""
        looked = self._incomplete.get(ifname)
        if looked is not None and time.monotonic() - looked >= self.REPROBE_MISSING:
            self.reprobe(ifname)
        if not self.plan(ifname):
            raise CounterError(f"no counter source can read {ifname}")
        values: dict[str, int | None] = {}
        samples: dict[int, CounterSample] = {}
        try:
            for counter, source in self._reads[ifname]:
                if id(source) not in samples:
                    samples[id(source)] = source.read(ifname, self.counters)
                values[counter] = getattr(samples[id(source)], counter)
        except CounterError:
            self.reprobe(ifname)
            raise
        return CounterSample(**values)

    def provides(self, ifname: str) -> dict[str, str]:
        """Counter -> description of the chosen source's counter."""
        return {counter: description for counter, (_source, description) in self.plan(ifname).items()}

    def share_snapshots(self, max_age: float) -> None:
        """Each source shares its own (they are read by name: the rtnetlink one from its dump)."""
        for source in self.sources:
            source.share_snapshots(max_age)

    def close(self) -> None:
        """Close every source."""
        for source in self.sources:
            source.close()


# --------------------------------------------------------------------------- factory


def _open_ethtool() -> EthtoolStatsSource:
    try:
        return EthtoolStatsSource(EthtoolNetlink())
    except (EthtoolError, NetlinkError) as exc:
        raise CounterError(f"ethtool netlink is not available: {exc}") from exc


def _open_auto(sysfs_root: Path, counters: Collection[str]) -> AutoSource:
    sources: list[BaseCounterSource] = []
    with contextlib.suppress(CounterError):  # a kernel without ethtool netlink: the others still work
        sources.append(_open_ethtool())
    sources += [DriverSource(EthtoolIoctl()), InfinibandSource(sysfs_root)]
    try:
        sources.append(RtnetlinkSource(RtnlClient()))
    except OSError:
        sources.append(SysfsSource(sysfs_root))
    return AutoSource(sources, counters)


def open_counter_source(
    kind: str,
    *,
    sysfs_root: Path = Path("/sys"),
    counter_file: Path | None = None,
    counters: Collection[str] = COUNTERS,
) -> BaseCounterSource:
    """The counter source called `kind` (one of `KINDS`), its sockets opened now.

    `counters` (auto only): the counters the plan is made for (see `AutoSource`).
    ValueError for an unknown kind or counter, or "file" without `counter_file`;
    CounterError when the kernel lacks what the source needs (ethtool netlink).
    """
    if kind == "file":
        if counter_file is None:
            raise ValueError('the "file" counter source needs a counter file')
        return FileSource(counter_file)
    openers: dict[str, Callable[[], BaseCounterSource]] = {
        "auto": lambda: _open_auto(sysfs_root, counters),
        "ethtool": _open_ethtool,
        "rtnetlink": lambda: RtnetlinkSource(RtnlClient()),
        "sysfs": lambda: SysfsSource(sysfs_root),
        "driver": lambda: DriverSource(EthtoolIoctl()),
        "infiniband": lambda: InfinibandSource(sysfs_root),
    }
    if kind not in openers:
        raise ValueError(f"unknown counter source {kind!r}; expected one of {', '.join(KINDS)}")
    return openers[kind]()
