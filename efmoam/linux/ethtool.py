"""ethtool from Python without a dependency (linux.md 1.2, 1.5, 2 and 3).

Two ways in:

* `EthtoolNetlink` speaks the ethtool generic-netlink family: `stats()` sends
  ETHTOOL_MSG_STATS_GET for the IEEE 802.3 / RMON standard groups and returns the
  counters the driver filled in (the kernel omits a counter the driver did not set, so a
  missing name means "not provided", never zero); `fec_stats()` sends ETHTOOL_MSG_FEC_GET
  with ETHTOOL_FLAG_STATS for the FEC counters (total and per lane; an empty array
  means "not provided", nic-health.md 1); `link_mode()` (speed and duplex) uses
  ETHTOOL_MSG_LINKMODES_GET.
* `EthtoolIoctl` uses the legacy SIOCETHTOOL ioctl: the driver name (GDRVINFO), the
  driver-specific ``ethtool -S`` counters (GSSET_INFO + GSTRINGS + GSTATS) and the link
  speed and duplex (GLINKSETTINGS, then GSET).

Both act on the network namespace their socket was created in.  Failures are
`EthtoolError` (an OSError with the kernel's errno: ENODEV for a missing device,
EOPNOTSUPP when the driver or kernel lacks the request).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import socket
import struct
from typing import NamedTuple

from efmoam.linux.netlink import (
    NETLINK_GENERIC,
    Message,
    NetlinkError,
    NetlinkSocket,
    attr_uint,
    iter_attrs,
    pack_attr,
    pack_nested,
    pack_string,
    pack_u32,
    parse_attrs,
)

# generic netlink controller
GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_ID = 1
CTRL_ATTR_FAMILY_NAME = 2
ETHTOOL_GENL_NAME = "ethtool"
ETHTOOL_GENL_VERSION = 1
_GENLMSGHDR = struct.Struct("=BBH")  # cmd, version, reserved

# ethtool netlink (include/uapi/linux/ethtool_netlink.h)
ETHTOOL_MSG_LINKMODES_GET = 4
ETHTOOL_MSG_FEC_GET = 29
ETHTOOL_MSG_STATS_GET = 32
ETHTOOL_A_HEADER_DEV_NAME = 2
ETHTOOL_A_HEADER_FLAGS = 3
ETHTOOL_FLAG_COMPACT_BITSETS = 1 << 0
ETHTOOL_FLAG_STATS = 1 << 2
ETHTOOL_A_BITSET_NOMASK = 1
ETHTOOL_A_BITSET_SIZE = 2
ETHTOOL_A_BITSET_VALUE = 4
ETHTOOL_A_STATS_HEADER = 2
ETHTOOL_A_STATS_GROUPS = 3
ETHTOOL_A_STATS_GRP = 4
ETHTOOL_A_STATS_GRP_ID = 2
ETHTOOL_A_STATS_GRP_SS_ID = 3
ETHTOOL_A_STATS_GRP_STAT = 4
ETHTOOL_A_STATS_GRP_HIST_RX = 5
ETHTOOL_A_STATS_GRP_HIST_TX = 6
ETHTOOL_A_LINKMODES_HEADER = 1
ETHTOOL_A_LINKMODES_SPEED = 5
ETHTOOL_A_LINKMODES_DUPLEX = 6
ETHTOOL_A_FEC_HEADER = 1
ETHTOOL_A_FEC_STATS = 5
ETHTOOL_A_FEC_STAT_CORRECTED = 2
ETHTOOL_A_FEC_STAT_UNCORR = 3
ETHTOOL_A_FEC_STAT_CORR_BITS = 4
#: FEC statistics attribute -> name (PAD 1 and the histogram 5 are not counters)
FEC_STATS = {
    ETHTOOL_A_FEC_STAT_CORRECTED: "corrected",
    ETHTOOL_A_FEC_STAT_UNCORR: "uncorrectable",
    ETHTOOL_A_FEC_STAT_CORR_BITS: "corrected_bits",
}
SPEED_UNKNOWN = 0xFFFFFFFF
DUPLEX_HALF, DUPLEX_FULL = 0, 1  #: anything else: unknown (DUPLEX_UNKNOWN 0xff)

#: standard statistics groups: bit in ETHTOOL_A_STATS_GROUPS -> name (string set ETH_SS_STATS_STD)
STATS_GROUPS = {"eth-phy": 0, "eth-mac": 1, "eth-ctrl": 2, "rmon": 3}
#: the groups the link monitor needs
DEFAULT_GROUPS = ("eth-phy", "eth-mac", "rmon")

#: stat names by group, indexed by stat id (kernel net/ethtool/common.c, linux.md 1.2)
STAT_NAMES: dict[str, tuple[str, ...]] = {
    "eth-phy": ("SymbolErrorDuringCarrier",),
    "eth-mac": (
        "FramesTransmittedOK", "SingleCollisionFrames", "MultipleCollisionFrames",
        "FramesReceivedOK", "FrameCheckSequenceErrors", "AlignmentErrors",
        "OctetsTransmittedOK", "FramesWithDeferredXmissions", "LateCollisions",
        "FramesAbortedDueToXSColls", "FramesLostDueToIntMACXmitError", "CarrierSenseErrors",
        "OctetsReceivedOK", "FramesLostDueToIntMACRcvError", "MulticastFramesXmittedOK",
        "BroadcastFramesXmittedOK", "FramesWithExcessiveDeferral", "MulticastFramesReceivedOK",
        "BroadcastFramesReceivedOK", "InRangeLengthErrors", "OutOfRangeLengthField",
        "FrameTooLongErrors",
    ),
    "eth-ctrl": ("MACControlFramesTransmitted", "MACControlFramesReceived", "UnsupportedOpcodesReceived"),
    "rmon": ("etherStatsUndersizePkts", "etherStatsOversizePkts", "etherStatsFragments", "etherStatsJabbers"),
}  # fmt: skip
_GROUP_BY_ID = {bit: name for name, bit in STATS_GROUPS.items()}
#: counter name -> its group, for messages such as "ethtool eth-mac FrameCheckSequenceErrors"
STAT_GROUP = {stat: group for group, names in STAT_NAMES.items() for stat in names}

# legacy ioctl (include/uapi/linux/ethtool.h)
SIOCETHTOOL = 0x8946
ETHTOOL_GSET = 0x01
ETHTOOL_GDRVINFO = 0x03
ETHTOOL_GSTRINGS = 0x1B
ETHTOOL_GSTATS = 0x1D
ETHTOOL_GSSET_INFO = 0x37
ETHTOOL_GLINKSETTINGS = 0x4C
ETH_SS_STATS = 1
ETH_GSTRING_LEN = 32
_IFNAMSIZ = 16
_IFREQ_SIZE = 40
_DRVINFO_SIZE = 196
_DRVINFO_N_STATS = 180  # offset of n_stats in struct ethtool_drvinfo (n_priv_flags is at 176)
_LINK_SETTINGS_SIZE = 48
_LINK_MODE_WORDS_MAX = 127  # link_mode_masks_nwords is an s8
_ETHTOOL_CMD_SIZE = 44
_STATS_TRIES = 3


class EthtoolError(OSError):
    """An ethtool request failed; ``errno`` tells why (ENODEV, EOPNOTSUPP, ...)."""


def speed_or_none(speed: int) -> int | None:
    """Mb/s, or None for SPEED_UNKNOWN (-1 / 0xFFFFFFFF) and 0."""
    return None if speed in (0, SPEED_UNKNOWN, -1) else speed


class FecStat(NamedTuple):
    """One FEC counter: the port total and, when the driver splits it, the value per lane."""

    total: int
    lanes: tuple[int, ...] = ()


class LinkMode(NamedTuple):
    """What the driver says of the link: speed in Mb/s and duplex, each None when unknown."""

    speed_mbps: int | None = None
    half_duplex: bool | None = None

    @classmethod
    def of(cls, speed: int | None, duplex: int | None) -> LinkMode:
        """From the kernel's raw speed and duplex values."""
        known = duplex in (DUPLEX_HALF, DUPLEX_FULL)
        return cls(None if speed is None else speed_or_none(speed), duplex == DUPLEX_HALF if known else None)


# --------------------------------------------------------------------------- generic netlink


def genl_payload(cmd: int, *attributes: bytes, version: int = ETHTOOL_GENL_VERSION) -> bytes:
    """genlmsghdr followed by the attributes."""
    return _GENLMSGHDR.pack(cmd, version, 0) + b"".join(attributes)


def resolve_family(sock: NetlinkSocket, name: str) -> int:
    """The id of a generic-netlink family (EthtoolError ENOENT when the kernel lacks it)."""
    try:
        replies = sock.request(GENL_ID_CTRL, genl_payload(CTRL_CMD_GETFAMILY, pack_string(CTRL_ATTR_FAMILY_NAME, name)))
    except NetlinkError as exc:
        raise EthtoolError(exc.errno, f"generic netlink family {name!r}: {exc.strerror}") from exc
    for message in replies:
        family = attr_uint(parse_attrs(message.payload, _GENLMSGHDR.size).get(CTRL_ATTR_FAMILY_ID), 2)
        if family is not None:
            return family
    raise EthtoolError(errno.ENOENT, f"no id for generic netlink family {name!r}")


def groups_bitset(groups: tuple[str, ...]) -> bytes:
    """ETHTOOL_A_STATS_GROUPS as a compact bitset (NOMASK, SIZE, VALUE)."""
    unknown = [group for group in groups if group not in STATS_GROUPS]
    if unknown:
        raise ValueError(f"unknown ethtool statistics groups: {unknown}")
    value = 0
    for group in groups:
        value |= 1 << STATS_GROUPS[group]
    return pack_nested(
        ETHTOOL_A_STATS_GROUPS,
        pack_attr(ETHTOOL_A_BITSET_NOMASK, b""),
        pack_u32(ETHTOOL_A_BITSET_SIZE, len(STATS_GROUPS)),
        pack_u32(ETHTOOL_A_BITSET_VALUE, value),
    )


def parse_stats_reply(payload: bytes) -> dict[str, int]:
    """{counter name: value} of a STATS_GET reply (payload after the genlmsghdr).

    Histograms are skipped; a stat of an unknown group or id is named ``<group>-<id>``;
    malformed group or stat attributes are ignored.
    """
    counters: dict[str, int] = {}
    for attr_type, group in iter_attrs(payload):
        if attr_type == ETHTOOL_A_STATS_GRP:
            counters.update(_parse_group(group))
    return counters


def _parse_group(group: bytes) -> dict[str, int]:
    group_id = attr_uint(parse_attrs(group).get(ETHTOOL_A_STATS_GRP_ID), 4)
    if group_id is None:
        return {}
    group_name = _GROUP_BY_ID.get(group_id, f"group{group_id}")
    names = STAT_NAMES.get(group_name, ())
    counters: dict[str, int] = {}
    for attr_type, stat in iter_attrs(group):
        if attr_type != ETHTOOL_A_STATS_GRP_STAT:
            continue
        for stat_id, value in iter_attrs(stat):
            number = attr_uint(value, 8)
            if number is not None:
                counters[names[stat_id] if stat_id < len(names) else f"{group_name}-{stat_id}"] = number
    return counters


def parse_fec_reply(payload: bytes) -> dict[str, FecStat]:
    """{name in `FEC_STATS`: FecStat} of a FEC_GET reply (payload after the genlmsghdr).

    Each statistic is an array of u64: element 0 the total, then one per lane.  An empty
    array (the driver did not set the statistic) and an array that is not whole u64s
    (garbage) are left out: "not provided", never zero.
    """
    nest = parse_attrs(payload, wanted=frozenset({ETHTOOL_A_FEC_STATS})).get(ETHTOOL_A_FEC_STATS)
    stats: dict[str, FecStat] = {}
    for attr_type, value in iter_attrs(nest or b""):
        name = FEC_STATS.get(attr_type)
        if name is None or not value or len(value) % 8:
            continue
        values = struct.unpack(f"={len(value) // 8}Q", value)
        stats[name] = FecStat(values[0], values[1:])
    return stats


class EthtoolNetlink:
    """Requests to the ethtool generic-netlink family (kernel >= 5.6; STATS_GET >= 5.13)."""

    def __init__(self, *, timeout: float | None = 5.0) -> None:
        self._sock = NetlinkSocket(NETLINK_GENERIC, timeout=timeout)
        try:
            self.family = resolve_family(self._sock, ETHTOOL_GENL_NAME)
        except BaseException:
            self._sock.close()
            raise

    def close(self) -> None:
        """Release the socket."""
        self._sock.close()

    def __enter__(self) -> EthtoolNetlink:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def stats(self, ifname: str, groups: tuple[str, ...] = DEFAULT_GROUPS) -> dict[str, int]:
        """The standard counters `ifname`'s driver provides, by name; {} when it provides none."""
        request = genl_payload(
            ETHTOOL_MSG_STATS_GET,
            pack_nested(ETHTOOL_A_STATS_HEADER, pack_string(ETHTOOL_A_HEADER_DEV_NAME, ifname)),
            groups_bitset(groups),
        )
        counters: dict[str, int] = {}
        for message in self._request(request, ifname):
            counters.update(parse_stats_reply(message.payload[_GENLMSGHDR.size :]))
        return counters

    def fec_stats(self, ifname: str) -> dict[str, FecStat]:
        """The FEC counters `ifname`'s driver provides (FEC_GET with statistics), by name.

        EthtoolError EOPNOTSUPP for a driver without FEC (veth, virtio_net) or a kernel
        without FEC statistics.
        """
        header = pack_nested(
            ETHTOOL_A_FEC_HEADER,
            pack_string(ETHTOOL_A_HEADER_DEV_NAME, ifname),
            pack_u32(ETHTOOL_A_HEADER_FLAGS, ETHTOOL_FLAG_STATS | ETHTOOL_FLAG_COMPACT_BITSETS),
        )
        stats: dict[str, FecStat] = {}
        for message in self._request(genl_payload(ETHTOOL_MSG_FEC_GET, header), ifname, ack=False):
            stats.update(parse_fec_reply(message.payload[_GENLMSGHDR.size :]))
        return stats

    def link_mode(self, ifname: str) -> LinkMode:
        """Link speed and duplex (LINKMODES_GET); unknown to the driver: None."""
        try:
            return self._linkmodes(ifname)
        except EthtoolError as exc:
            if exc.errno != errno.EOPNOTSUPP:
                raise
            return LinkMode()  # a device without link settings (loopback, tunnels)

    def _linkmodes(self, ifname: str) -> LinkMode:
        header = pack_nested(
            ETHTOOL_A_LINKMODES_HEADER,
            pack_string(ETHTOOL_A_HEADER_DEV_NAME, ifname),
            pack_u32(ETHTOOL_A_HEADER_FLAGS, ETHTOOL_FLAG_COMPACT_BITSETS),
        )
        for message in self._request(genl_payload(ETHTOOL_MSG_LINKMODES_GET, header), ifname):
            attrs = parse_attrs(message.payload, _GENLMSGHDR.size)
            speed = attr_uint(attrs.get(ETHTOOL_A_LINKMODES_SPEED), 4)
            duplex = attr_uint(attrs.get(ETHTOOL_A_LINKMODES_DUPLEX), 1)
            if speed is not None or duplex is not None:
                return LinkMode.of(speed, duplex)
        return LinkMode()

    def _request(self, payload: bytes, ifname: str, *, ack: bool = True) -> list[Message]:
        try:
            return self._sock.request(self.family, payload, ack=ack)
        except NetlinkError as exc:
            raise EthtoolError(exc.errno, f"{ifname}: {exc.strerror}") from exc


# --------------------------------------------------------------------------- legacy ioctl


class EthtoolIoctl:
    """SIOCETHTOOL requests on an AF_INET datagram socket of the caller's namespace."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)

    def close(self) -> None:
        """Release the socket."""
        self._sock.close()

    def __enter__(self) -> EthtoolIoctl:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _ioctl(self, ifname: str, buffer: ctypes.Array[ctypes.c_char]) -> None:
        """One SIOCETHTOOL call: ifr_data points at `buffer`, which the kernel fills."""
        name = ifname.encode()
        if not name or len(name) >= _IFNAMSIZ:
            raise EthtoolError(errno.ENODEV, f"invalid interface name {ifname!r}")
        ifreq = struct.pack("16sP", name, ctypes.addressof(buffer)).ljust(_IFREQ_SIZE, b"\0")
        try:
            fcntl.ioctl(self._sock.fileno(), SIOCETHTOOL, ifreq)
        except OSError as exc:
            raise EthtoolError(exc.errno or errno.EIO, f"{ifname}: {exc.strerror}") from exc

    def _call(self, ifname: str, size: int, header: bytes) -> bytes:
        buffer = ctypes.create_string_buffer(header, max(size, len(header)))
        self._ioctl(ifname, buffer)
        return buffer.raw

    def driver(self, ifname: str) -> str:
        """The driver's name (``ethtool -i``), e.g. "mlx5_core", "ice", "veth"."""
        raw = self._call(ifname, _DRVINFO_SIZE, struct.pack("=I", ETHTOOL_GDRVINFO))
        return raw[4:36].split(b"\0", 1)[0].decode(errors="replace")

    def stats_count(self, ifname: str) -> int:
        """How many ``ethtool -S`` counters the driver has now."""
        header = struct.pack("=IIQ", ETHTOOL_GSSET_INFO, 0, 1 << ETH_SS_STATS)
        try:
            raw = self._call(ifname, len(header) + 4, header)
        except EthtoolError as exc:
            if exc.errno != errno.EOPNOTSUPP:
                raise
            raw = self._call(ifname, _DRVINFO_SIZE, struct.pack("=I", ETHTOOL_GDRVINFO))
            return int(struct.unpack_from("=I", raw, _DRVINFO_N_STATS)[0])
        (mask,) = struct.unpack_from("=Q", raw, 8)
        return int(struct.unpack_from("=I", raw, 16)[0]) if mask & (1 << ETH_SS_STATS) else 0

    def stat_names(self, ifname: str, count: int) -> list[str]:
        """The driver's counter names (ETHTOOL_GSTRINGS of ETH_SS_STATS), up to `count`."""
        slack = count * 2 + 64  # the kernel writes as many as it has now, whatever we ask
        raw = self._call(
            ifname, 12 + slack * ETH_GSTRING_LEN, struct.pack("=III", ETHTOOL_GSTRINGS, ETH_SS_STATS, count)
        )
        (returned,) = struct.unpack_from("=I", raw, 8)
        returned = min(returned, slack)
        return [
            raw[12 + i * ETH_GSTRING_LEN : 12 + (i + 1) * ETH_GSTRING_LEN].split(b"\0", 1)[0].decode(errors="replace")
            for i in range(returned)
        ]

    def stat_values(self, ifname: str, count: int) -> list[int]:
        """The driver's counter values (ETHTOOL_GSTATS), as many as it returned."""
        slack = count * 2 + 64
        raw = self._call(ifname, 8 + slack * 8, struct.pack("=II", ETHTOOL_GSTATS, count))
        (returned,) = struct.unpack_from("=I", raw, 4)
        returned = min(returned, slack)
        return list(struct.unpack_from(f"={returned}Q", raw, 8))

    def statistics(self, ifname: str) -> dict[str, int]:
        """``ethtool -S`` as {name: value}; {} when the driver has no statistics.

        The names are re-read when the count changes between the calls (a driver may
        add queues); after a few tries the names and values that line up are returned.
        """
        names: list[str] = []
        values: list[int] = []
        for _ in range(_STATS_TRIES):
            count = self.stats_count(ifname)
            if count == 0:
                return {}
            names = self.stat_names(ifname, count)
            values = self.stat_values(ifname, count)
            if len(names) == len(values) == count:
                break
        return dict(zip(names, values, strict=False))

    def link_mode(self, ifname: str) -> LinkMode:
        """Link speed and duplex (GLINKSETTINGS, else GSET); unknown: None."""
        try:
            return self._link_settings(ifname)
        except EthtoolError as exc:
            if exc.errno != errno.EOPNOTSUPP:
                raise
        try:
            raw = self._call(ifname, _ETHTOOL_CMD_SIZE, struct.pack("=I", ETHTOOL_GSET))
        except EthtoolError as exc:
            if exc.errno != errno.EOPNOTSUPP:
                raise
            return LinkMode()  # a device without link settings (loopback, tunnels)
        (low, duplex) = struct.unpack_from("=HB", raw, 12)  # ethtool_cmd: speed, duplex
        (high,) = struct.unpack_from("=H", raw, 28)
        return LinkMode.of(high << 16 | low, duplex)

    def _link_settings(self, ifname: str) -> LinkMode:
        # handshake: nwords = 0 makes the kernel answer with -(the number it wants)
        size = _LINK_SETTINGS_SIZE + 3 * 4 * _LINK_MODE_WORDS_MAX
        raw = self._call(ifname, size, struct.pack("=I", ETHTOOL_GLINKSETTINGS))
        (nwords,) = struct.unpack_from("=b", raw, 15)
        if nwords >= 0:
            raise EthtoolError(errno.EOPNOTSUPP, f"{ifname}: no link settings handshake")
        header = struct.pack("=I", ETHTOOL_GLINKSETTINGS).ljust(15, b"\0") + struct.pack("=b", -nwords)
        raw = self._call(ifname, size, header)
        (speed, duplex) = struct.unpack_from("=IB", raw, 4)  # ethtool_link_settings: speed, duplex
        return LinkMode.of(speed, duplex)
