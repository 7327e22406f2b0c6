"""The daemon's endpoint body: the text exposition format (version 0.0.4), kept between scrapes.

A scrape of 4,096 ports is about 280,000 series (19 MB).  Formatting them all on every
scrape, as prometheus_client does (one object and one label dict per sample), takes
seconds.  `Renderer` keeps the text of every family between scrapes and redoes only
what changed:

* the groups with one value per family and port (the RFC 4878 counters, the peer's
  last OAMPDU, ...) a family at a time: each port's value is compared with the previous
  scrape's as one column, and a family whose column changed is written again whole;
* the other groups a port at a time: when what a group reads of a port changed, that
  port's lines of the group's families are made again from its samples.

Between two scrapes a healthy port changes in three families only (both Information
OAMPDU counters and the time of the peer's last OAMPDU), so most of the body is reused.

Reading happens under the daemon's lock, `BATCH` ports per hold, so the loop waits for
one batch at most, never for a whole scrape.  Each port is read between two of the
loop's wake-ups.

Detail: a `Renderer` exports what its `schema.Selection` keeps (``daemon.metrics.detail``).
At basic detail the groups with no family kept are not read at all, and the families left
out have no lines, not even their HELP and TYPE.

The families without the ``device`` label (the fleet's histograms of the NIC health
monitors, `fleet`; the daemon's and the process's own) are a few lines, made anew at every
scrape.  Each port's health monitors are handed to the histograms in the same batch as the
rest of the port is read.

Compression: when the scraper accepts gzip (Prometheus does), the body is one gzip
member per family, concatenated (RFC 1952 allows several members, and Go's reader,
which Prometheus uses, reads them as one stream).  Unchanged families are therefore not
compressed again, and 19 MB become about 1 MB.
"""

from __future__ import annotations

import gzip
import threading
import time
from itertools import compress, count, repeat
from operator import ne

from efmoam.config.model import MetricsDetail
from efmoam.daemon.metrics.fleet import histogram_text
from efmoam.daemon.metrics.process import OWN_FAMILIES, own_samples
from efmoam.daemon.metrics.schema import FAMILIES, GROUPS, HEALTH_WINDOWS, SELECTIONS, Family, Group, Sample, Selection
from efmoam.daemon.metrics.telemetry import DaemonLike, RuntimeLike

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: ports read per hold of the daemon's lock: the loop waits for one batch at most
BATCH = 256

_UNSET = object()  #: not read yet: differs from every value
_HEADERS = tuple(
    f"# HELP {family.name} {family.help}\n# TYPE {family.name} {family.type}\n".encode() for family in FAMILIES
)
#: groups with one unlabelled value per family and port, handled a family (column) at a time
_COLUMN_GROUPS = tuple((group, FAMILIES.index(group.families[0])) for group in GROUPS if group.per_family)
_COLUMN_READERS = tuple(group.read for group, _ in _COLUMN_GROUPS)
#: the other groups, handled a port at a time
_BLOCK_GROUPS = tuple((group, FAMILIES.index(group.families[0])) for group in GROUPS if not group.per_family)
assert all(
    test is None or family not in group.families
    for group, _ in _COLUMN_GROUPS for family, test in SELECTIONS[MetricsDetail.BASIC].tests.items()
), "a column family is kept or left out whole"  # fmt: skip


def _escape(value: str) -> str:
    """A label value as the text format writes it."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _lines(device: str, group: Group, samples: list[Sample]) -> list[bytes]:
    """One port's lines of each of `group`'s families; `device` is the port's label, written."""
    texts: dict[Family, list[str]] = {family: [] for family in group.families}
    for family, labels, value in samples:
        written = "".join(f',{name}="{_escape(text)}"' for name, text in zip(family.labels, labels, strict=True))
        texts[family].append(f"{family.name}{{{device}{written}}} {value!r}\n")
    return ["".join(text).encode() for text in texts.values()]


class _PortLines:
    """One port's lines of the block groups' families."""

    __slots__ = ("chunks", "device")

    def __init__(self, name: str) -> None:
        self.device = f'device="{_escape(name)}"'
        self.chunks: list[bytes] = [b""] * len(FAMILIES)  #: the port's lines of each block family

    def update(self, group: Group, first: int, samples: list[Sample], dirty: set[int]) -> None:
        """`group` (its first family at `first`) now makes `samples`: redo its lines where they changed."""
        chunks = self.chunks
        for family, text in enumerate(_lines(self.device, group, samples), first):
            if chunks[family] != text:
                chunks[family] = text
                dirty.add(family)


class Renderer:
    """The exposition of every port at `detail`, redone where it changed since the previous scrape.

    Thread-safe: scrapes (the endpoint serves each on its own thread) take turns.
    """

    def __init__(self, detail: MetricsDetail = MetricsDetail.FULL) -> None:
        self.detail = detail
        selection: Selection = SELECTIONS[detail]
        self._keeps = selection.keeps
        self._families = selection.families
        #: the families exported, as indices into FAMILIES (exposition order)
        self._exported = [index for index, family in enumerate(FAMILIES) if family in selection.families]
        #: the block groups read: those with a family exported
        self._blocks = [
            (group, first) for group, first in _BLOCK_GROUPS if any(f in selection.families for f in group.families)
        ]
        self._lock = threading.Lock()
        self._names: tuple[str, ...] | None = None  #: None: nothing read yet
        self._ports: list[_PortLines] = []
        #: per column family: each port's line with the value left to fill in (``%r``)
        self._templates: dict[int, list[bytes]] = {}
        self._columns: dict[int, tuple[object, ...]] = {}  #: per column family: each port's value
        #: per block group read: what it read of each port last time
        self._last: list[list[object]] = [[] for _ in self._blocks]
        self._texts: list[bytes] = list(_HEADERS)  #: per family: header and every port's lines
        self._gzipped: list[bytes | None] = [None] * len(FAMILIES)  #: per family: `_texts` as a gzip member

    def render(self, daemon: DaemonLike, *, compressed: bool = False) -> list[bytes]:
        """The body, in parts to be sent one after the other (gzip members when `compressed`)."""
        with self._lock:
            dirty, rows = self._read(daemon)
            texts, gzipped = self._texts, self._gzipped
            for family in dirty:
                texts[family] = _HEADERS[family] + b"".join([port.chunks[family] for port in self._ports])
                gzipped[family] = None
            for (group, first), group_rows in zip(_COLUMN_GROUPS, rows, strict=True):
                columns = zip(*group_rows, strict=True) if group_rows else [()] * len(group.families)
                for family, column in enumerate(columns, first):
                    if group.families[family - first] in self._families and column != self._columns.get(family):
                        self._columns[family] = column
                        lines = zip(self._templates[family], column, strict=True)
                        texts[family] = _HEADERS[family] + b"".join([t % v for t, v in lines if v is not None])
                        gzipped[family] = None
            own = _own_text(daemon)
            if not compressed:
                return [*(texts[family] for family in self._exported), own]
            members = []
            for family in self._exported:
                member = gzipped[family]
                if member is None:
                    member = gzipped[family] = gzip.compress(texts[family], compresslevel=1, mtime=0)
                members.append(member)
            return [*members, gzip.compress(own, 1, mtime=0)]

    def _read(self, daemon: DaemonLike) -> tuple[set[int], list[list[tuple[object, ...]]]]:
        """Read every port, `BATCH` ports per hold of the daemon's lock.

        Returns the block families whose text changed, and per column group what it read
        of each port.
        """
        with daemon.lock:
            runtimes: list[RuntimeLike] = list(daemon.ports.values())
        dirty: set[int] = set()
        names = tuple(runtime.name for runtime in runtimes)
        if names != self._names:  # ports came, went or moved: every family is redone
            where = {name: at for at, name in enumerate(self._names or ())}
            kept = [where.get(name) for name in names]  # each port's place in the previous scrape
            self._ports = [
                _PortLines(name) if at is None else self._ports[at] for name, at in zip(names, kept, strict=True)
            ]
            self._last = [[_UNSET if at is None else last[at] for at in kept] for last in self._last]
            self._names = names
            self._columns.clear()
            for group, first in _COLUMN_GROUPS:
                for family, each in enumerate(group.families, first):
                    self._templates[family] = [
                        f"{each.name}{{{port.device}}} ".replace("%", "%%").encode() + b"%r\n" for port in self._ports
                    ]
            dirty.update(range(len(FAMILIES)))
        rows: list[list[tuple[object, ...]]] = [[] for _ in _COLUMN_GROUPS]
        ports, lasts, blocks, keeps = self._ports, self._last, self._blocks, self._keeps
        for start in range(0, len(runtimes), BATCH):
            batch = runtimes[start : start + BATCH]
            with daemon.lock:  # a port is never read half-way through one of the loop's wake-ups
                context = repeat(daemon.telemetry), repeat(daemon.wall_clock_offset)
                daemon.telemetry.health_windows.observe(
                    monitor for runtime in batch for monitor in runtime.port.link_monitoring.running_health
                )
                for group_rows, read in zip(rows, _COLUMN_READERS, strict=True):
                    group_rows.extend(map(read, batch, *context))  # type: ignore[arg-type]
                for (group, first), last in zip(blocks, lasts, strict=True):
                    now = list(map(group.read, batch, *context))
                    for at in compress(count(start), map(ne, now, last[start : start + BATCH])):
                        value = last[at] = now[at - start]
                        ports[at].update(group, first, [s for s in group.samples(value) if keeps(s)], dirty)
            time.sleep(0)  # let the loop, if it waits for the lock, take it now (a release alone does not)
        return dirty, rows


def _own_text(daemon: DaemonLike) -> bytes:
    """The families without the device label (a few lines: made anew at every scrape): the
    fleet's histograms (when a port runs a NIC health monitor), the daemon's own."""
    with daemon.lock:
        health = daemon.health()
        merged = daemon.telemetry.health_windows.merged()
    fleet = histogram_text(HEALTH_WINDOWS.name, HEALTH_WINDOWS.help, merged)
    lines: dict[Family, list[str]] = {family: [] for family in OWN_FAMILIES}
    for family, labels, value in own_samples(health):
        written = ",".join(f'{name}="{_escape(text)}"' for name, text in zip(family.labels, labels, strict=True))
        lines[family].append(f"{family.name}{{{written}}} {value!r}\n" if written else f"{family.name} {value!r}\n")
    return (
        fleet
        + "".join(
            f"# HELP {family.name} {family.help}\n# TYPE {family.name} {family.type}\n" + "".join(text)
            for family, text in lines.items()
        )
    ).encode()


def render(daemon: DaemonLike, detail: MetricsDetail = MetricsDetail.FULL) -> bytes:
    """The exposition of every port at `detail`, from scratch (the endpoint keeps a `Renderer`)."""
    return b"".join(Renderer(detail).render(daemon))
