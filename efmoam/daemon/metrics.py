"""Prometheus metrics, read from the ports' state at scrape time.

Nothing is updated per frame: a scrape walks the daemon's ports and reads what the
engines already keep (discovery, the peer, the RFC 4878 statistics, the monitors, the
active events, the drop counters).  The daemon adds only what the engines do not keep,
in a `Telemetry`: when the last OAMPDU from each port's peer arrived, and which error
counters the last counter read provided.

Two renderings of the same names and values:

* `render` (the daemon's endpoint, `MetricsServer`): the text exposition format
  written directly, in one pass over the ports.  prometheus_client builds one object
  per sample; at 4,096 ports (about 290,000 series) that takes seconds per scrape, so
  the endpoint does not use it and needs no third-party package.
* `PortCollector` (a prometheus_client custom collector, the ``metrics`` extra): for
  embedding the same metrics in another registry.  A test checks that both agree
  sample for sample.

Threads: the endpoint serves HTTP on its own thread while the daemon's loop mutates the
ports on the main thread.  The loop holds `Daemon.lock` while it processes one wake-up
(never while it sleeps in select); `render` holds it while it reads the ports (the
whole scrape minus the final join), `PortCollector` while it copies them into `PortRow`
tuples.  A scrape therefore always sees every port between two wake-ups, never half-way
through one, and the loop waits for at most one scrape's reading (see the benchmark in
tests/bench/test_metrics_bench.py).

Every series has the label ``device`` (the interface name, so that they join with
node_exporter's ``node_network_*``).  The README ("Running a fleet") lists them.
"""

from __future__ import annotations

import http.server
import operator
import socket
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, cast

import attrs

from efmoam.core import OamPort
from efmoam.core.linkmon import CounterSample, Location, Severity
from efmoam.core.linkmon.counters import COUNTERS
from efmoam.core.linkmon.monitors import MonitorState
from efmoam.core.outputs import EventLogged
from efmoam.core.stats import RFC4878_NAMES, OamStatistics
from efmoam.daemon.views import OPER_STATUS_NAMES
from pdu import DecodeReason, format_oui

if TYPE_CHECKING:  # prometheus_client is an optional extra (efmoam[metrics]): imported when used
    from prometheus_client.core import Metric
    from prometheus_client.registry import Collector, CollectorRegistry

#: the statistics' attribute names, in RFC 4878 order
STAT_FIELDS = tuple(attribute.name for attribute in attrs.fields(OamStatistics))
#: drop reasons of OAMPDUs that are broken (not merely frames of another protocol)
MALFORMED = frozenset(reason.value for reason in DecodeReason if not reason.not_oampdu)
#: drop reasons always exposed (0 until they happen), so that rate() sees the first one
ALWAYS_DROPPED = ("rate_limit", "loop", "second_peer")
RATE_LIMIT = "rate_limit"
MONITOR_STATES = tuple(state.value for state in MonitorState)
OPER_STATUSES = tuple(OPER_STATUS_NAMES.items())
EVENT_CLASSES = tuple((location, severity) for location in Location for severity in Severity)


_NO_EVENTS = (0,) * len(EVENT_CLASSES)


class Telemetry:
    """What the daemon records for metrics that the engines do not keep (loop thread only)."""

    def __init__(self) -> None:
        self.last_peer_frame: dict[str, float] = {}  #: port -> monotonic time of the last OAMPDU from its peer
        self.counters_present: dict[str, tuple[bool, ...]] = {}  #: port -> per `COUNTERS`: in the last read
        self.events_raised: dict[str, list[int]] = {}  #: port -> events raised per `EVENT_CLASSES`

    def received(self, name: str, port: OamPort, frame: bytes, now: float) -> None:
        """A frame `port` accepted: note the time when it came from the port's peer."""
        peer = port.peer_mac
        if peer is not None and frame[6:12].hex(":") == peer:
            self.last_peer_frame[name] = now

    def counters_read(self, name: str, sample: CounterSample) -> None:
        self.counters_present[name] = tuple(getattr(sample, counter) is not None for counter in COUNTERS)

    def event_logged(self, name: str, logged: EventLogged) -> None:
        """An event-log record: count it when it raises an event (not when it clears one)."""
        entry = logged.entry
        if entry.active:
            counts = self.events_raised.setdefault(name, [0] * len(EVENT_CLASSES))
            counts[EVENT_CLASSES.index((entry.location, entry.severity))] += 1

    def forget(self, name: str) -> None:
        self.last_peer_frame.pop(name, None)
        self.counters_present.pop(name, None)
        self.events_raised.pop(name, None)


class RuntimeLike(Protocol):
    """What the collector reads of a daemon's `PortRuntime`."""

    name: str
    port: OamPort
    rx_rate_limited: int
    action_error: str | None


class DaemonLike(Protocol):
    """What the collector reads of the daemon."""

    lock: threading.Lock
    telemetry: Telemetry
    wall_clock_offset: float

    @property
    def ports(self) -> Mapping[str, RuntimeLike]: ...


class PortRow(NamedTuple):
    """One port's values, copied under the lock."""

    device: str
    oper_status: object
    peer: tuple[str, str, str, str] | None  #: mac, oui, vendor info, mode
    stats: tuple[int, ...]
    monitors: tuple[tuple[str, str, int | None, int, int], ...]  #: key, state, last window, errors, events
    active: tuple[int, ...]  #: per `EVENT_CLASSES`
    raised: tuple[int, ...]  #: per `EVENT_CLASSES`, since the daemon started
    holders: tuple[str, ...]
    out_of_service: bool
    action_failed: bool
    counters: tuple[bool, ...] | None
    drops: tuple[tuple[str, int], ...]
    last_peer_frame: float | None


def read_port(runtime: RuntimeLike, telemetry: Telemetry, wall_clock_offset: float) -> PortRow:
    """Copy what the metrics show of one port (under the lock: no formatting here)."""
    port = runtime.port
    name = runtime.name
    peer = port.peer
    lm = port.link_monitoring
    monitors: tuple[tuple[str, str, int | None, int, int], ...] = ()
    if lm.settings.enabled:
        key = lm.settings.key
        monitors = tuple(
            (key(kind), m.state.value, m.last_errors, m.error_total, m.event_total)
            for kind, m in lm.monitors.items()
            if m.settings.enabled
        )
    active = [0] * len(EVENT_CLASSES)
    for event in lm.active.values():
        entry = event.entry
        active[EVENT_CLASSES.index((entry.location, entry.severity))] += 1
    drops = dict(port.drops)
    drops[RATE_LIMIT] = runtime.rx_rate_limited
    last = telemetry.last_peer_frame.get(name)
    stats = port.stats
    return PortRow(
        device=name,
        oper_status=port.oper_status,
        peer=None
        if peer is None
        else (peer.mac, format_oui(peer.oui), f"0x{peer.vendor_info:08x}", "active" if peer.mode_active else "passive"),
        stats=tuple(getattr(stats, field) for field in STAT_FIELDS),
        monitors=monitors,
        active=tuple(active),
        raised=tuple(telemetry.events_raised.get(name, _NO_EVENTS)),
        holders=lm.holders() if port.out_of_service else (),
        out_of_service=port.out_of_service,
        action_failed=runtime.action_error is not None,
        counters=telemetry.counters_present.get(name),
        drops=tuple(drops.items()),
        last_peer_frame=None if last is None else last + wall_clock_offset,
    )


def snapshot(daemon: DaemonLike) -> list[PortRow]:
    """Every port's row, copied while the loop is between two wake-ups."""
    with daemon.lock:
        telemetry, offset = daemon.telemetry, daemon.wall_clock_offset
        return [read_port(runtime, telemetry, offset) for runtime in daemon.ports.values()]


def families(rows: Iterable[PortRow]) -> list[Metric]:
    """The metric families of some ports."""
    from prometheus_client.core import (  # noqa: PLC0415 - optional dependency
        CounterMetricFamily,
        GaugeMetricFamily,
        InfoMetricFamily,
    )

    oper = GaugeMetricFamily(
        "efmoam_oper_status",
        "RFC 4878 dot3OamOperStatus of the port: 1 for the current status, 0 for the others",
        labels=["device", "status"],
    )
    peer_info = InfoMetricFamily(
        "efmoam_peer", "The OAM peer discovered on the port (RFC 4878 dot3OamPeerTable)", labels=["device"]
    )
    stats = [
        CounterMetricFamily(f"efmoam_{field}", f"RFC 4878 {RFC4878_NAMES[field]}", labels=["device"])
        for field in STAT_FIELDS
    ]
    window = GaugeMetricFamily(
        "efmoam_monitor_window_errors",
        "Errors in the monitor's last closed window (errored seconds for errored_frame_seconds)",
        labels=["device", "monitor"],
    )
    errors = CounterMetricFamily(
        "efmoam_monitor_errors", "Errors the monitor counted (its running total)", labels=["device", "monitor"]
    )
    events = CounterMetricFamily(
        "efmoam_monitor_events", "Events the monitor raised (its running total)", labels=["device", "monitor"]
    )
    state = GaugeMetricFamily(
        "efmoam_monitor_state",
        "State of the monitor: 1 for the current one of ok, degraded, failed, unavailable",
        labels=["device", "monitor", "state"],
    )
    active = GaugeMetricFamily(
        "efmoam_active_events",
        "Active events of the port by location (local, remote) and severity (sd: signal degrade, sf: failure)",
        labels=["device", "location", "severity"],
    )
    raised = CounterMetricFamily(
        "efmoam_events",
        "Events raised on the port since the daemon started, by location and severity",
        labels=["device", "location", "severity"],
    )
    out = GaugeMetricFamily(
        "efmoam_port_out_of_service",
        "1 per event holding the port out of service (reason label); 0 without reason while it is in service",
        labels=["device", "reason"],
    )
    action_failed = GaugeMetricFamily(
        "efmoam_port_action_failed", "1 while the port's last action failed (it is retried)", labels=["device"]
    )
    counters = GaugeMetricFamily(
        "efmoam_counter_available",
        "1 when the last counter read provided this error counter, 0 when the source lacks it",
        labels=["device", "counter"],
    )
    dropped = CounterMetricFamily(
        "efmoam_rx_dropped",
        "Received frames not acted on, by reason (malformed=true for broken OAMPDUs)",
        labels=["device", "reason", "malformed"],
    )
    last = GaugeMetricFamily(
        "efmoam_last_peer_oampdu_timestamp_seconds",
        "Wall-clock time of the last OAMPDU received from the port's peer",
        labels=["device"],
    )
    for row in rows:
        device = row.device
        for status, status_name in OPER_STATUSES:
            oper.add_metric([device, status_name], 1.0 if status is row.oper_status else 0.0)
        if row.peer is not None:
            mac, oui, vendor_info, mode = row.peer
            peer_info.add_metric([device], {"mac": mac, "oui": oui, "vendor_info": vendor_info, "mode": mode})
        for family, value in zip(stats, row.stats, strict=True):
            family.add_metric([device], value)
        for key, monitor_state, last_errors, error_total, event_total in row.monitors:
            labels = [device, key]
            if last_errors is not None:
                window.add_metric(labels, last_errors)
            errors.add_metric(labels, error_total)
            events.add_metric(labels, event_total)
            for name in MONITOR_STATES:
                state.add_metric([device, key, name], 1.0 if name == monitor_state else 0.0)
        for (location, severity), count, total in zip(EVENT_CLASSES, row.active, row.raised, strict=True):
            active.add_metric([device, location.value, severity.value], count)
            raised.add_metric([device, location.value, severity.value], total)
        if row.out_of_service:
            for reason in row.holders or ("unknown",):
                out.add_metric([device, reason], 1.0)
        else:
            out.add_metric([device, ""], 0.0)
        action_failed.add_metric([device], 1.0 if row.action_failed else 0.0)
        if row.counters is not None:
            for counter, present in zip(COUNTERS, row.counters, strict=True):
                counters.add_metric([device, counter], 1.0 if present else 0.0)
        seen = dict(row.drops)
        for reason in ALWAYS_DROPPED:
            seen.setdefault(reason, 0)
        for reason, count in sorted(seen.items()):
            dropped.add_metric([device, reason, "true" if reason in MALFORMED else "false"], count)
        if row.last_peer_frame is not None:
            last.add_metric([device], row.last_peer_frame)
    return [
        oper,
        peer_info,
        *stats,
        window,
        errors,
        events,
        state,
        active,
        raised,
        out,
        action_failed,
        counters,
        dropped,
        last,
    ]


class PortCollector:
    """The collector registered with prometheus_client: one snapshot per scrape."""

    def __init__(self, daemon: DaemonLike) -> None:
        self._daemon = daemon

    def collect(self) -> Iterator[Metric]:
        yield from families(snapshot(self._daemon))

    def describe(self) -> Iterator[Metric]:
        return iter(())  # do not collect at registration time


def registry_for(daemon: DaemonLike) -> CollectorRegistry:
    from prometheus_client.registry import CollectorRegistry  # noqa: PLC0415 - optional dependency

    registry = CollectorRegistry(auto_describe=False)
    registry.register(cast("Collector", PortCollector(daemon)))
    return registry


# -- the endpoint's renderer -------------------------------------------------------------
#
# prometheus_client builds one object per sample and formats each with its label dict: a
# scrape of 4,096 ports (about 290,000 series) takes seconds that way.  The endpoint
# therefore writes the text exposition format (0.0.4) itself, in one pass over the ports
# under the lock, from the same names and values as `families` (a test checks that the
# two agree sample for sample).  `PortCollector` stays for embedding in another registry.

_STATS = operator.attrgetter(*STAT_FIELDS)
_FALSE_TRUE = ("0", "1")

#: (name as exposed, type, help) in exposition order; the same as `families`
FAMILIES: tuple[tuple[str, str, str], ...] = (
    (
        "efmoam_oper_status",
        "gauge",
        "RFC 4878 dot3OamOperStatus of the port: 1 for the current status, 0 for the others",
    ),
    ("efmoam_peer_info", "gauge", "The OAM peer discovered on the port (RFC 4878 dot3OamPeerTable)"),
    *((f"efmoam_{field}_total", "counter", f"RFC 4878 {RFC4878_NAMES[field]}") for field in STAT_FIELDS),
    (
        "efmoam_monitor_window_errors",
        "gauge",
        "Errors in the monitor's last closed window (errored seconds for errored_frame_seconds)",
    ),
    ("efmoam_monitor_errors_total", "counter", "Errors the monitor counted (its running total)"),
    ("efmoam_monitor_events_total", "counter", "Events the monitor raised (its running total)"),
    (
        "efmoam_monitor_state",
        "gauge",
        "State of the monitor: 1 for the current one of ok, degraded, failed, unavailable",
    ),
    (
        "efmoam_active_events",
        "gauge",
        "Active events of the port by location (local, remote) and severity (sd: signal degrade, sf: failure)",
    ),
    ("efmoam_events_total", "counter", "Events raised on the port since the daemon started, by location and severity"),
    (
        "efmoam_port_out_of_service",
        "gauge",
        "1 per event holding the port out of service (reason label); 0 without reason while it is in service",
    ),
    ("efmoam_port_action_failed", "gauge", "1 while the port's last action failed (it is retried)"),
    (
        "efmoam_counter_available",
        "gauge",
        "1 when the last counter read provided this error counter, 0 when the source lacks it",
    ),
    (
        "efmoam_rx_dropped_total",
        "counter",
        "Received frames not acted on, by reason (malformed=true for broken OAMPDUs)",
    ),
    (
        "efmoam_last_peer_oampdu_timestamp_seconds",
        "gauge",
        "Wall-clock time of the last OAMPDU received from the port's peer",
    ),
)
_INDEX = {name: index for index, (name, _, _) in enumerate(FAMILIES)}
_FIRST_STAT = _INDEX[f"efmoam_{STAT_FIELDS[0]}_total"]
_EVENT_LABELS = tuple(
    f'location="{location.value}",severity="{severity.value}"' for location, severity in EVENT_CLASSES
)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


_N_STATS = len(STAT_FIELDS)
_INT_LINE = b"%d\n"
_OPER, _PEER = _INDEX["efmoam_oper_status"], _INDEX["efmoam_peer_info"]
_WINDOW, _ERRORS, _EVENTS, _STATE = (
    _INDEX[name]
    for name in (
        "efmoam_monitor_window_errors", "efmoam_monitor_errors_total", "efmoam_monitor_events_total",
        "efmoam_monitor_state",
    )
)  # fmt: skip
_ACTIVE, _RAISED, _OUT, _FAILED = (
    _INDEX[name]
    for name in (
        "efmoam_active_events",
        "efmoam_events_total",
        "efmoam_port_out_of_service",
        "efmoam_port_action_failed",
    )
)
_COUNTERS, _DROPPED, _LAST = (
    _INDEX[name]
    for name in ("efmoam_counter_available", "efmoam_rx_dropped_total", "efmoam_last_peer_oampdu_timestamp_seconds")
)
_HEADERS = tuple(f"# HELP {name} {text}\n# TYPE {name} {kind}\n".encode() for name, kind, text in FAMILIES)


class _PortText:
    """One port's rendered lines, kept between scrapes and redone only when a value changed.

    A block is the port's lines of one family (of some families, for the monitors);
    `keys` holds the values each block was made from.
    """

    def __init__(self, name: str) -> None:
        self.device = f'device="{_escape(name)}"'
        self.stat_prefixes = tuple(f"efmoam_{field}_total{{{self.device}}} ".encode() for field in STAT_FIELDS)
        self.stat_values: list[int] = [-1] * _N_STATS
        self.stat_lines: list[bytes] = [b""] * _N_STATS
        self.keys: dict[str, object] = {}
        self.blocks: dict[str, tuple[bytes, ...]] = {}

    def oper(self, status: object) -> bytes:
        if self.keys.get("oper", self) != status:
            device = self.device
            text = "".join(
                f'efmoam_oper_status{{{device},status="{name}"}} {_FALSE_TRUE[value is status]}\n'
                for value, name in OPER_STATUSES
            )
            self.keys["oper"], self.blocks["oper"] = status, (text.encode(),)
        return self.blocks["oper"][0]

    def peer(self, peer: Any) -> bytes:
        if self.keys.get("peer", self) != peer:
            text = ""
            if peer is not None:
                mode = "active" if peer.mode_active else "passive"
                text = (
                    f'efmoam_peer_info{{{self.device},mac="{peer.mac}",mode="{mode}",oui="{format_oui(peer.oui)}",'
                    f'vendor_info="0x{peer.vendor_info:08x}"}} 1\n'
                )
            self.keys["peer"], self.blocks["peer"] = peer, (text.encode(),)
        return self.blocks["peer"][0]

    def stats(self, values: tuple[int, ...]) -> list[bytes]:
        old, lines = self.stat_values, self.stat_lines
        for index, number in enumerate(values):
            if number != old[index]:
                old[index] = number
                lines[index] = self.stat_prefixes[index] + _INT_LINE % number
        return lines

    def monitors(
        self, key: tuple[tuple[Any, MonitorState, int | None, int, int], ...], name_of: Callable[[Any], str]
    ) -> tuple[bytes, ...]:
        if self.keys.get("monitors", self) != key:
            window: list[str] = []
            errors: list[str] = []
            events: list[str] = []
            state: list[str] = []
            for kind, monitor_state, last_errors, error_total, event_total in key:
                labels = f'{self.device},monitor="{name_of(kind)}"'
                current = monitor_state.value
                if last_errors is not None:
                    window.append(f"efmoam_monitor_window_errors{{{labels}}} {last_errors}\n")
                errors.append(f"efmoam_monitor_errors_total{{{labels}}} {error_total}\n")
                events.append(f"efmoam_monitor_events_total{{{labels}}} {event_total}\n")
                state.extend(
                    f'efmoam_monitor_state{{{labels},state="{s}"}} {_FALSE_TRUE[s == current]}\n'
                    for s in MONITOR_STATES
                )
            self.keys["monitors"] = key
            self.blocks["monitors"] = tuple("".join(part).encode() for part in (window, errors, events, state))
        return self.blocks["monitors"]

    def events(self, key: tuple[tuple[int, ...], tuple[int, ...]]) -> tuple[bytes, ...]:
        if self.keys.get("events", self) != key:
            counts, totals = key
            active = "".join(
                f"efmoam_active_events{{{self.device},{labels}}} {count}\n"
                for labels, count in zip(_EVENT_LABELS, counts, strict=True)
            )
            raised = "".join(
                f"efmoam_events_total{{{self.device},{labels}}} {total}\n"
                for labels, total in zip(_EVENT_LABELS, totals, strict=True)
            )
            self.keys["events"], self.blocks["events"] = key, (active.encode(), raised.encode())
        return self.blocks["events"]

    def service(self, key: tuple[tuple[str, ...] | None, bool]) -> tuple[bytes, ...]:
        if self.keys.get("service", self) != key:
            holders, failed = key
            if holders is None:
                out = f'efmoam_port_out_of_service{{{self.device},reason=""}} 0\n'
            else:
                out = "".join(
                    f'efmoam_port_out_of_service{{{self.device},reason="{_escape(reason)}"}} 1\n'
                    for reason in holders or ("unknown",)
                )
            action = f"efmoam_port_action_failed{{{self.device}}} {_FALSE_TRUE[failed]}\n"
            self.keys["service"], self.blocks["service"] = key, (out.encode(), action.encode())
        return self.blocks["service"]

    def counters(self, available: tuple[bool, ...] | None) -> bytes:
        if self.keys.get("counters", self) != available:
            text = ""
            if available is not None:
                text = "".join(
                    f'efmoam_counter_available{{{self.device},counter="{counter}"}} {_FALSE_TRUE[flag]}\n'
                    for counter, flag in zip(COUNTERS, available, strict=True)
                )
            self.keys["counters"], self.blocks["counters"] = available, (text.encode(),)
        return self.blocks["counters"][0]

    def drops(self, key: tuple[tuple[tuple[str, int], ...], int]) -> bytes:
        if self.keys.get("drops", self) != key:
            seen = dict.fromkeys(ALWAYS_DROPPED, 0)
            seen.update(key[0])
            seen[RATE_LIMIT] = key[1]
            text = "".join(
                f'efmoam_rx_dropped_total{{{self.device},malformed="{"true" if reason in MALFORMED else "false"}",'
                f'reason="{_escape(reason)}"}} {count}\n'
                for reason, count in sorted(seen.items())
            )
            self.keys["drops"], self.blocks["drops"] = key, (text.encode(),)
        return self.blocks["drops"][0]


class Renderer:
    """The text exposition of every port; keeps each port's lines for the next scrape."""

    def __init__(self) -> None:
        self._ports: dict[str, _PortText] = {}

    def render(self, daemon: DaemonLike) -> bytes:
        """Read the ports (the loop waits meanwhile) and return the exposition."""
        rows: list[tuple[bytes, ...]] = []  # one per port: its bytes of each family, in `FAMILIES` order
        no_time = b""
        with daemon.lock:
            telemetry, offset = daemon.telemetry, daemon.wall_clock_offset
            raised_counts, present, last_frames = (
                telemetry.events_raised,
                telemetry.counters_present,
                telemetry.last_peer_frame,
            )
            cache, self._ports = self._ports, {}
            for runtime in daemon.ports.values():
                port = runtime.port
                name = runtime.name
                text = cache.get(name) or _PortText(name)
                self._ports[name] = text
                lm = port.link_monitoring
                monitors: tuple[tuple[Any, MonitorState, int | None, int, int], ...] = ()
                if lm.settings.enabled:
                    monitors = tuple(
                        [
                            (kind, m.state, m.last_errors, m.error_total, m.event_total)
                            for kind, m in lm.monitors.items()
                            if m.settings.enabled
                        ]
                    )
                counts = _NO_EVENTS
                if lm.active:
                    counted = [0] * len(EVENT_CLASSES)
                    for event in lm.active.values():
                        counted[EVENT_CLASSES.index((event.entry.location, event.entry.severity))] += 1
                    counts = tuple(counted)
                when = last_frames.get(name)
                rows.append(
                    (
                        text.oper(port.oper_status),
                        text.peer(port.peer),
                        *text.stats(_STATS(port.stats)),
                        *text.monitors(monitors, lm.settings.key),
                        *text.events((counts, tuple(raised_counts.get(name, _NO_EVENTS)))),
                        *text.service(
                            (lm.holders() if port.out_of_service else None, runtime.action_error is not None)
                        ),
                        text.counters(present.get(name)),
                        text.drops((tuple(port.drops.items()), runtime.rx_rate_limited)),
                        no_time
                        if when is None
                        else f"efmoam_last_peer_oampdu_timestamp_seconds{{{text.device}}} {when + offset!r}\n".encode(),
                    )
                )
        parts: list[bytes] = []
        for header, column in zip(_HEADERS, zip(*rows, strict=True) if rows else ((),) * len(FAMILIES), strict=True):
            parts.append(header)
            parts.extend(column)
        return b"".join(parts)


def render(daemon: DaemonLike) -> bytes:
    """The text exposition of every port, from scratch (the endpoint keeps a `Renderer`)."""
    return Renderer().render(daemon)


CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class _Handler(http.server.BaseHTTPRequestHandler):
    daemon_ref: DaemonLike
    renderer: Renderer

    def do_GET(self) -> None:
        if self.path.split("?")[0] not in ("/metrics", "/"):
            self.send_error(404)
            return
        body = self.renderer.render(self.daemon_ref)
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # scrapes are not logged


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


class _Server6(_Server):
    address_family = socket.AF_INET6


class MetricsServer:
    """The HTTP endpoint: GET /metrics on its own thread, started and stopped by the daemon.

    Raises OSError when the address cannot be bound.
    """

    def __init__(self, daemon: DaemonLike, address: str, port: int) -> None:
        handler = type("Handler", (_Handler,), {"daemon_ref": daemon, "renderer": Renderer()})
        server_class = _Server6 if ":" in address else _Server
        self._server = server_class((address, port), handler)
        self.address = address
        self.port = int(self._server.server_address[1])  # the bound port (port 0: chosen by the kernel)
        self._thread = threading.Thread(target=self._server.serve_forever, name="efmoam-metrics", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5.0)
