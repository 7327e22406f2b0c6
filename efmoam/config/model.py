"""What a configuration file says, as frozen attrs classes built from the core's settings.

A `Config` holds the daemon's own settings (`DaemonConfig`) and an ordered list of port
rules (`PortRule`): the first rule whose pattern fits an interface decides whether it is
managed and with which `PortProfile`.  A profile is the core's `PortSettings` plus what
the Linux side needs: where the error counters come from and how a port is taken out
of service.  Defaults live here and in the core's classes, never in the loader.
"""

from __future__ import annotations

import enum
import fnmatch
import ipaddress
import os
import re
import socket
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from efmoam.core.policy.settings import Action, EventName
from efmoam.core.settings import PortSettings

#: the implicit rule when a configuration has no ``ports`` section: every physical port
DEFAULT_MATCH = "*"
DEFAULT_PHYSICAL_ONLY = True


class CounterSource(enum.Enum):
    """Where a port's error counters are read (the Linux layer implements each)."""

    AUTO = "auto"  #: the best source the interface offers
    ETHTOOL = "ethtool"  #: ethtool netlink standard statistics (eth-phy, eth-mac)
    DRIVER = "driver"  #: the driver's own ethtool -S statistics, by name
    RTNETLINK = "rtnetlink"  #: rtnetlink interface statistics (IFLA_STATS64)
    SYSFS = "sysfs"  #: /sys/class/net/<if>/statistics
    INFINIBAND = "infiniband"  #: /sys/class/infiniband/<dev>/ports/<n>/counters
    FILE = "file"  #: a plain file (tests, simulation, integration)


class ActionBackend(enum.Enum):
    """How "out of service" is carried out on a port."""

    BLOCK = "block"  #: drop data frames, keep OAM (an nftables netdev table)
    DOWN = "down"  #: set the interface administratively down
    EXEC = "exec"  #: run `PortProfile.action_command`
    LOG_ONLY = "log-only"  #: only log what would be done (a dry run)


class SettingError(ValueError):
    """A setting that another one needs is absent, or one that nothing uses is present."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"{name} is {reason}")
        self.name = name
        self.reason = reason


def _between(low: float, high: float) -> Callable[[Any, Any, float], None]:
    def check(_inst: Any, attribute: Any, value: float) -> None:
        if not low <= value <= high:
            raise ValueError(f"{attribute.name} must be between {low:g} and {high:g}, not {value:g}")

    return check


def _absolute_path(_inst: Any, attribute: Any, value: str | None) -> None:
    if value is not None and not os.path.isabs(value):
        raise ValueError(f"{attribute.name} must be an absolute path, not {value!r}")


def _group_name(_inst: Any, attribute: Any, value: str | None) -> None:
    if value is not None and not _GROUP_NAME.fullmatch(value):
        raise ValueError(f"{attribute.name} must be a group name (letters, digits, _ . -), not {value!r}")


_GROUP_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,31}")


# -- fleet visibility (metrics and event stream) ------------------------------------------


def _port_number(_inst: Any, attribute: Any, value: int) -> None:
    if not 1 <= value <= 65535:
        raise ValueError(f"{attribute.name} must be between 1 and 65535, not {value}")


class MetricsDetail(enum.Enum):
    """How many series a port exports."""

    BASIC = "basic"  #: what alerting and dashboards need (at most 20 series per port)
    FULL = "full"  #: every counter and gauge the daemon has


@attrs.frozen
class MetricsConfig:
    """The Prometheus endpoint (``daemon.metrics``)."""

    #: serve metrics over HTTP
    enabled: bool = True
    #: the address the endpoint binds to (an IPv4 or IPv6 address)
    address: str = "127.0.0.1"
    #: the TCP port of the endpoint
    port: int = attrs.field(default=9717, validator=_port_number)
    #: basic or full series per port
    detail: MetricsDetail = MetricsDetail.FULL


class EventSink(enum.Enum):
    """Where the JSON event stream goes."""

    NONE = "none"  #: no event stream
    STDERR = "stderr"  #: one JSON object per line on stderr (the journal under systemd)
    FILE = "file"  #: appended to `EventStreamConfig.path`, reopened on SIGHUP


@attrs.frozen
class EventStreamConfig:
    """The JSON event stream (``daemon.event_stream``)."""

    sink: EventSink = EventSink.NONE
    #: the file, for `EventSink.FILE`
    path: str | None = attrs.field(default=None, validator=_absolute_path)

    def __attrs_post_init__(self) -> None:
        if self.sink is EventSink.FILE and not self.path:
            raise SettingError("path", "required when sink is file")
        if self.path is not None and self.sink is not EventSink.FILE:
            raise SettingError("path", "only used when sink is file: remove it, or set it to null")


def agentx_address(text: str) -> tuple[int, Any]:
    """An AgentX master address as net-snmp's agentXSocket writes it: ``/path`` or
    ``unix:/path`` (a Unix socket), ``tcp:HOST:PORT`` or ``tcp:HOST`` (port 705; HOST an IP
    address or localhost, an IPv6 one in brackets).  Returns (address family, address);
    ValueError when it is neither."""
    if text.startswith("unix:"):
        text = text[len("unix:") :]
    if text.startswith("/"):
        return socket.AF_UNIX, text
    if not text.startswith("tcp:"):
        raise ValueError(f"{text!r} is not an AgentX address (/path, unix:/path or tcp:HOST:PORT)")
    rest = text[len("tcp:") :]
    host, port_text = rest, "705"
    if rest.startswith("["):
        host, _, after = rest[1:].partition("]")
        port_text = after[1:] if after.startswith(":") else ("705" if not after else "")
    elif ":" in rest:
        host, _, port_text = rest.rpartition(":")
    if not host or not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise ValueError(f"{text!r} is not an AgentX address (tcp:HOST:PORT, a port from 1 to 65535)")
    try:  # an address, never a name: resolving one could block the daemon's loop
        ip = ipaddress.ip_address("127.0.0.1" if host == "localhost" else host)
    except ValueError:
        raise ValueError(f"{text!r}: HOST is an IP address or localhost, not a name to resolve") from None
    return (socket.AF_INET6 if ip.version == 6 else socket.AF_INET), (str(ip), int(port_text))


def _agentx_socket(_inst: Any, attribute: Any, value: str) -> None:
    agentx_address(value)


@attrs.frozen
class SnmpConfig:
    """The AgentX subagent serving DOT3-OAM-MIB under the host's snmpd (``daemon.snmp``)."""

    #: connect to the master and serve the MIB
    enabled: bool = False
    #: the master's AgentX socket (snmpd's agentXSocket)
    agentx_socket: str = attrs.field(default="/var/agentx/master", validator=_agentx_socket)
    #: allow SNMP sets of dot3OamAdminState and dot3OamLoopbackStatus
    writes: bool = False


# -- end of fleet visibility --------------------------------------------------------------


@attrs.frozen
class DaemonConfig:
    """The daemon's own settings (the ``daemon:`` section)."""

    #: the Unix socket the CLI talks to
    control_socket: str = attrs.field(default="/run/efmoam/efmoam.sock", validator=_absolute_path)
    #: the group whose members may use the control socket (None: root only)
    control_socket_group: str | None = attrs.field(default="efmoam", validator=_group_name)
    #: where state that outlives a restart is kept
    state_dir: str = attrs.field(default="/var/lib/efmoam", validator=_absolute_path)
    #: seconds between two reads of every port's error counters
    counter_interval: float = attrs.field(default=1.0, validator=_between(0.1, 60.0))
    #: send Information OAMPDUs with the Dying Gasp flag when the daemon stops
    dying_gasp_on_shutdown: bool = True
    #: OAMPDUs per second the bound peer of a port may send (Clause 57 allows it 10);
    #: more are dropped before decoding and counted
    rx_rate_limit: int = attrs.field(default=20, validator=_between(1, 10_000))
    #: seconds between checks that a port taken out of service still is (block, down)
    action_verify_interval: float = attrs.field(default=10.0, validator=_between(0.5, 3600.0))
    #: OAMPDUs per second all other sources on a port may send together
    rx_others_rate_limit: int = attrs.field(default=5, validator=_between(1, 10_000))
    #: the Prometheus endpoint
    metrics: MetricsConfig = MetricsConfig()
    #: the JSON event stream
    event_stream: EventStreamConfig = EventStreamConfig()
    #: the SNMP subagent
    snmp: SnmpConfig = SnmpConfig()


def _event_runs_exec(settings: PortSettings) -> bool:
    """Whether an event's actions include exec (which runs `PortProfile.action_command`)."""
    return any(Action.EXEC in settings.policy.event_actions.of(name) for name in EventName)


@attrs.frozen
class PortProfile:
    """Everything one managed port is configured with."""

    settings: PortSettings = PortSettings()
    counter_source: CounterSource = CounterSource.AUTO
    #: the counter file, for `CounterSource.FILE`
    counter_file: str | None = attrs.field(default=None, validator=_absolute_path)
    action_backend: ActionBackend = ActionBackend.BLOCK
    #: the command run by `ActionBackend.EXEC` and by the events whose actions include exec
    action_command: str | None = None
    #: the port should have an OAM peer: its absence is an alert (metric efmoam_peer_expected)
    expect_peer: bool = False

    def __attrs_post_init__(self) -> None:
        for name, value, used, condition in (
            ("counter_file", self.counter_file, self.counter_source is CounterSource.FILE, "counter_source is file"),
            (
                "action_command",
                self.action_command,
                self.action_backend is ActionBackend.EXEC or _event_runs_exec(self.settings),
                "action_backend is exec or an event action is exec",
            ),
        ):
            if used and not value:
                raise SettingError(name, f"required when {condition}")
            if value is not None and not used:
                raise SettingError(name, f"only used when {condition}: remove it, or set it to null")


@attrs.frozen
class PortRule:
    """Which interfaces a profile applies to."""

    #: an interface name or an fnmatch pattern (``eth*``, ``enp*s0f*``), case-sensitive
    match: str
    #: only interfaces backed by a device (the Linux layer decides what that means)
    physical_only: bool = False
    profile: PortProfile = PortProfile()

    def matches(self, ifname: str, physical: bool) -> bool:
        """Whether this rule applies to interface `ifname`."""
        return (physical or not self.physical_only) and fnmatch.fnmatchcase(ifname, self.match)


def _rules(rules: Iterable[PortRule]) -> tuple[PortRule, ...]:
    return tuple(rules)


@attrs.frozen
class Config:
    """A whole configuration: the daemon's settings and the port rules, in order."""

    daemon: DaemonConfig = DaemonConfig()
    rules: tuple[PortRule, ...] = attrs.field(default=(), converter=_rules)

    def profile_for(self, ifname: str, physical: bool) -> PortProfile | None:
        """The profile of the first rule that fits `ifname`, or None: the port is not managed."""
        for rule in self.rules:
            if rule.matches(ifname, physical):
                return rule.profile
        return None
