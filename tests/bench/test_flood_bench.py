"""The daemon's CPU and memory under the floods of the robustness campaign (root).

They measure and never assert a time.  Run them with

    pytest tests/bench/test_flood_bench.py --benchmark-enable

and read the block each prints (also in ``extra_info`` with ``--benchmark-json``).
Without ``--benchmark-enable`` each flood lasts one second (a smoke test).  Each row is
one flood from side B's namespace at daemon A (a lab pair at the lab's 5 OAMPDUs/s):
A's utime + stime over the flood divided by its length (% of one core), its RSS before
and at the end, and whether the session held (no lost link).

* ``stranger``: Information OAMPDUs from one stranger MAC at 10,000/s;
* ``strangers``: from 1,000 MACs at 5,000/s;
* ``malformed``: truncated OAMPDUs at 1,000/s;
* ``variable-requests``: Variable Requests from the peer's MAC, every one asking for
  other leaves, at 1,000/s with the peer's rate limit raised so that all reach the
  engine (the memory case: the RSS must stay flat);
* ``flag-toggles``: the peer's Critical Event flag toggled 1,000 times/s, rate limit
  raised (the log and disk case).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pdu import Flag
from tests.daemon.lab import MAC_B, Lab, missing_requirements
from tests.robustness.wire import STRANGER, information, send_paced, variable_request

pytestmark = [pytest.mark.bench, pytest.mark.root]

_MACS = [f"02:77:00:00:{n >> 8:02x}:{n & 0xFF:02x}" for n in range(1000)]
_STABLE = Flag.LOCAL_STABLE | Flag.REMOTE_STABLE


def _cycle(frames: list[bytes]) -> Callable[[int], bytes]:
    return lambda n: frames[n % len(frames)]


def _floods() -> dict[str, tuple[float, Callable[[], Callable[[int], bytes]], bool]]:
    """name -> (rate, frames(n) factory, raise the peer's rate limit)."""
    toggles = [information(MAC_B, _STABLE), information(MAC_B, _STABLE | Flag.CRITICAL_EVENT)]
    return {
        "stranger": (10_000, lambda: _cycle([information(STRANGER)]), False),
        "strangers": (5_000, lambda: _cycle([information(mac) for mac in _MACS]), False),
        "malformed": (1_000, lambda: _cycle([information(STRANGER)[:30]]), False),
        "variable-requests": (1_000, lambda: lambda n: variable_request(MAC_B, n % 0xFFFF), True),
        "flag-toggles": (1_000, lambda: _cycle(toggles), True),
    }


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.parametrize("flood", list(_floods()))
def test_daemon_under_flood(flood: str, benchmark: Any, tmp_path: Path) -> None:
    reason = missing_requirements()
    if reason:
        pytest.skip(reason)
    seconds = 1.0 if benchmark.disabled else 20.0
    rate, factory, raise_limit = _floods()[flood]
    lab = Lab(tmp_path)
    try:
        if raise_limit:
            lab.a.overrides = {"daemon": {"rx_rate_limit": 5000}}
        lab.start()
        lost = len(lab.a.log_lines(r"cause=lost_link"))
        time.sleep(1.0)
        rss_before, cpu_before, started = rss_kib(lab.a.pid), lab.a.cpu_seconds(), time.monotonic()
        result: dict[str, Any] = {}

        def run() -> None:
            result["sent"] = send_paced(lab, factory(), rate, seconds)

        benchmark.pedantic(run, rounds=1, iterations=1)
        elapsed = time.monotonic() - started
        cpu = lab.a.cpu_seconds() - cpu_before
        rss_after = rss_kib(lab.a.pid)
        lab.a.check_alive()
        info = {
            "flood": flood,
            "offered_per_s": round(result["sent"] / seconds),
            "seconds": round(elapsed, 1),
            "cpu_percent_of_a_core": round(100 * cpu / elapsed, 1),
            "rss_before_mib": round(rss_before / 1024, 1),
            "rss_after_mib": round(rss_after / 1024, 1),
            "rss_growth_mib": round((rss_after - rss_before) / 1024, 1),
            "session_held": len(lab.a.log_lines(r"cause=lost_link")) == lost,
            "log_lines": len(lab.a.log().splitlines()),
        }
        benchmark.extra_info.update(info)
        print("\n" + " ".join(f"{key}={value}" for key, value in info.items()))
    finally:
        lab.close()
