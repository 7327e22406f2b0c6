"""What runs and what it uses: ``efmoam_build_info`` and the usual ``process_*`` metrics.

The process families are named, typed and computed as prometheus_client's
``ProcessCollector`` does (``process_start_time_seconds``, ``process_cpu_seconds_total``,
``process_resident_memory_bytes``, ``process_virtual_memory_bytes``, ``process_open_fds``,
``process_max_fds``), so the dashboards written for any Python or Go exporter work as they
are; they are read from /proc/self at each scrape without the dependency (a few file reads
and one directory listing).  A /proc that cannot be read or parsed leaves the affected
families without a sample: never an error for the scrape.

`efmoam_build_info` is a gauge at 1 whose labels are the versions of efmoam and Python
(the daemon does not load scapy: its codec is generated from the layers ahead of time).
"""

from __future__ import annotations

import functools
import os
import platform
from collections.abc import Iterator, Mapping
from typing import Any

from efmoam.daemon.metrics.schema import DAEMON_FAMILIES, Family, Sample, daemon_samples

BUILD_INFO = Family(
    "efmoam_build_info", "gauge", "1, labelled with the versions of efmoam and Python",
    ("version", "python_version"),
)  # fmt: skip
START_TIME = Family("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.")
CPU = Family("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.")
RESIDENT = Family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.")
VIRTUAL = Family("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.")
OPEN_FDS = Family("process_open_fds", "gauge", "Number of open file descriptors.")
MAX_FDS = Family("process_max_fds", "gauge", "Maximum number of open file descriptors.")
PROCESS_FAMILIES = (BUILD_INFO, START_TIME, CPU, RESIDENT, VIRTUAL, OPEN_FDS, MAX_FDS)

PROC = "/proc"
_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGESIZE")


@functools.cache
def _efmoam_version() -> str:
    from efmoam.cli.main import _version  # noqa: PLC0415 - one home for the version (click is loaded anyway)

    return _version()


def boot_time(stat: bytes) -> float | None:
    """The ``btime`` line of /proc/stat (seconds since the epoch), or None."""
    for line in stat.splitlines():
        if line.startswith(b"btime "):
            try:
                return float(line.split()[1])
            except (IndexError, ValueError):
                return None
    return None


def stat_samples(stat: bytes, booted: float | None) -> Iterator[Sample]:
    """Start time, CPU and memory from /proc/<pid>/stat (proc(5)), as far as it parses.

    The fields are counted after the last ``)``: the command name in parentheses may
    hold spaces and parentheses.
    """
    fields = stat.rpartition(b")")[2].split()
    try:  # proc(5) numbers from 1 with the pid: field N is fields[N - 3] here
        utime, stime, started, vsize, rss = (int(fields[n - 3]) for n in (14, 15, 22, 23, 24))
    except (IndexError, ValueError):
        return
    if booted is not None:
        yield START_TIME, (), booted + started / _TICKS
    yield CPU, (), (utime + stime) / _TICKS
    yield RESIDENT, (), rss * _PAGE
    yield VIRTUAL, (), vsize


def max_fds(limits: bytes) -> int | None:
    """The soft ``Max open files`` of /proc/<pid>/limits (None: absent or unlimited)."""
    for line in limits.splitlines():
        if line.startswith(b"Max open files"):
            try:
                return int(line[len(b"Max open files") :].split()[0])
            except (IndexError, ValueError):
                return None
    return None


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as stream:
            return stream.read()
    except OSError:
        return None


@functools.cache
def _boot_time(proc: str) -> float | None:
    stat = _read(os.path.join(proc, "stat"))
    return None if stat is None else boot_time(stat)


def process_samples(proc: str = PROC) -> Iterator[Sample]:
    """The build info, and what /proc says of this process."""
    yield BUILD_INFO, (_efmoam_version(), platform.python_version()), 1
    own = os.path.join(proc, "self")
    stat = _read(os.path.join(own, "stat"))
    if stat is not None:
        yield from stat_samples(stat, _boot_time(proc))
    try:
        fds: int | None = len(os.listdir(os.path.join(own, "fd")))
    except OSError:
        fds = None
    if fds is not None:
        yield OPEN_FDS, (), fds
    limits = _read(os.path.join(own, "limits"))
    most = None if limits is None else max_fds(limits)
    if most is not None:
        yield MAX_FDS, (), most


#: the families without the ``device`` label: the daemon's health, the build, the process
OWN_FAMILIES = (*DAEMON_FAMILIES, *PROCESS_FAMILIES)


def own_samples(health: Mapping[str, Any], proc: str = PROC) -> Iterator[Sample]:
    """The samples of `OWN_FAMILIES`: `health` is `Daemon.health`."""
    yield from daemon_samples(health)
    yield from process_samples(proc)
