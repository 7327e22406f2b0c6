"""efmoam_build_info and the process_* metrics: against what /proc and the kernel say, and
against prometheus_client's own ProcessCollector; a /proc that lies or is missing."""

from __future__ import annotations

import os
import platform
import resource
import time
from pathlib import Path

import pytest
from prometheus_client.process_collector import ProcessCollector

from efmoam.daemon.metrics.process import (
    BUILD_INFO,
    CPU,
    MAX_FDS,
    OPEN_FDS,
    RESIDENT,
    START_TIME,
    VIRTUAL,
    boot_time,
    max_fds,
    process_samples,
    stat_samples,
)


def ours(proc: str = "/proc") -> dict[str, float]:
    return {family.name: value for family, labels, value in process_samples(proc) if family is not BUILD_INFO}


def theirs() -> dict[str, float]:
    return {
        sample.name: sample.value for family in ProcessCollector(registry=None).collect() for sample in family.samples
    }


def status_kib(field: str) -> int:
    """A ``VmRSS:``-like line of /proc/self/status, in bytes (another file than ours read)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(field)


def test_the_process_metrics_agree_with_the_kernel_and_prometheus_client() -> None:
    sum(range(3_000_000))  # some CPU time to measure
    before_cpu = sum(os.times()[:2])
    mine, client = ours(), theirs()
    after_cpu = sum(os.times()[:2])
    assert set(mine) == {f.name for f in (START_TIME, CPU, RESIDENT, VIRTUAL, OPEN_FDS, MAX_FDS)} == set(client)
    assert mine["process_start_time_seconds"] == client["process_start_time_seconds"]
    assert time.time() - 3600 < mine["process_start_time_seconds"] <= time.time()
    assert before_cpu - 0.02 <= mine["process_cpu_seconds_total"] <= after_cpu + 0.02
    assert mine["process_cpu_seconds_total"] > 0
    assert mine["process_max_fds"] == resource.getrlimit(resource.RLIMIT_NOFILE)[0] == client["process_max_fds"]
    assert abs(mine["process_open_fds"] - len(os.listdir("/proc/self/fd"))) <= 1
    assert abs(mine["process_resident_memory_bytes"] - status_kib("VmRSS")) < 8 << 20
    assert abs(mine["process_virtual_memory_bytes"] - status_kib("VmSize")) < 8 << 20
    assert abs(mine["process_virtual_memory_bytes"] - client["process_virtual_memory_bytes"]) < 8 << 20


def test_open_fds_follow_the_files_opened() -> None:
    before = ours()["process_open_fds"]
    files = [open(os.devnull, "rb") for _ in range(5)]  # noqa: SIM115 - closed below
    try:
        assert ours()["process_open_fds"] == before + 5
    finally:
        for stream in files:
            stream.close()


def test_build_info() -> None:
    [(labels, value)] = [(labels, value) for family, labels, value in process_samples() if family is BUILD_INFO]
    version, python = labels
    assert value == 1
    assert python == platform.python_version()
    assert version and version != "unknown"


# -- a /proc that cannot be trusted ------------------------------------------------------

STAT = b"4242 (ef) m (x)) S 1 2 3 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 9000 123456789 321 18446744073709551615"


def test_a_command_name_with_spaces_and_parentheses() -> None:
    found = {family: value for family, _labels, value in stat_samples(STAT, 1_000.0)}
    ticks = os.sysconf("SC_CLK_TCK")
    assert found == {
        START_TIME: 1_000.0 + 9000 / ticks,
        CPU: 300 / ticks,
        RESIDENT: 321 * os.sysconf("SC_PAGESIZE"),
        VIRTUAL: 123456789,
    }


@pytest.mark.parametrize(
    "stat",
    [b"", b"4242 (ef", b"4242 (ef) S 1 2", STAT.replace(b" 250 ", b" x "), STAT.replace(b"321", b"-"), b"\xff" * 300],
)
def test_a_broken_stat_gives_nothing(stat: bytes) -> None:
    assert list(stat_samples(stat, 1_000.0)) == []


def test_without_a_boot_time_no_start_time() -> None:
    assert START_TIME not in {family for family, _labels, _value in stat_samples(STAT, None)}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (b"cpu 1 2 3\nbtime 1700000000\nprocesses 5\n", 1700000000.0),
        (b"btime\n", None),
        (b"btime soon\n", None),
        (b"", None),
        (b"\x00" * 100, None),
    ],
)
def test_boot_time(text: bytes, expected: float | None) -> None:
    assert boot_time(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            b"Limit                     Soft Limit  Hard Limit  Units\nMax open files            1024  4096  files\n",
            1024,
        ),
        (b"Max open files            unlimited            unlimited            files\n", None),
        (b"Max open files\n", None),
        (b"Max processes 5 5 processes\n", None),
        (b"", None),
    ],
)
def test_max_fds(text: bytes, expected: int | None) -> None:
    assert max_fds(text) == expected


def test_a_proc_of_garbage_or_none_leaves_only_the_build_info(tmp_path: Path) -> None:
    assert ours(str(tmp_path / "absent")) == {}
    own = tmp_path / "self"
    own.mkdir()
    (tmp_path / "stat").write_bytes(b"btime \xff\xfe\n")
    (own / "stat").write_bytes(os.urandom(512).replace(b")", b""))
    (own / "limits").write_bytes(b"Max open files  lots  lots  files\n")
    (own / "fd").write_bytes(b"not a directory")
    assert ours(str(tmp_path)) == {}
    assert [family for family, _labels, _value in process_samples(str(tmp_path))] == [BUILD_INFO]
