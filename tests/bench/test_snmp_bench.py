"""The cost of DOT3-OAM-MIB: a full walk of the six tables for 256 ports.

* ``test_mib_walk``: in process, the subagent's own work only: GetNext after GetNext
  from the MIB's root to its end over 256 real engines (128 discovered pairs, each port
  with a remote Dying Gasp and a local errored-frame failure in its event log), as the
  master asks it of a subagent.  Reports microseconds per varbind and the walk's total.
* ``test_walk_through_snmpd`` (root, Debian's snmpd): the same walk from a manager's
  side, ``snmpwalk`` and ``snmpbulkwalk`` through a private snmpd to a daemon with 256
  veth ports, and the longest wake-up the SNMP work held the daemon's loop meanwhile
  (the subagent's own measure, ``longest_wakeup_ms`` in ``show`` JSON).  Targets: the
  walk under 2 s, the loop never held more than 10 ms.

They measure and never assert a time.  Run with ``pytest tests/bench/test_snmp_bench.py
--benchmark-enable``; without it each runs as a smoke test on fewer ports.
"""

from __future__ import annotations

import time
from typing import Any

import attrs
import pytest

from efmoam.core import OamPort
from efmoam.snmp.agentx import SearchRange, VarType
from efmoam.snmp.mib import MIB, Mib
from tests.core.pair import PortPair
from tests.linkmon import Feed, link_monitoring, monitor, port_settings

pytestmark = pytest.mark.bench


@attrs.define
class Row:
    name: str
    ifindex: int
    port: OamPort


class NoWrites:
    def set_admin(self, row: Any, enabled: bool) -> None:
        raise AssertionError("no writes in a walk")

    def set_loopback(self, row: Any, start: bool) -> None:
        raise AssertionError("no writes in a walk")


def engines(pairs: int) -> list[Row]:
    lm = link_monitoring(errored_frame=monitor(sf_threshold=5))
    rows = []
    for i in range(pairs):
        pair = PortPair(port_settings(lm), port_settings(lm), a_mac=f"02:00:00:00:{i:02x}:0a", b_mac=f"02:00:00:00:{i:02x}:0b")
        pair.run_until(3.0)
        feed = Feed(pair, "a")
        feed.sample(0)
        feed.sample(9)
        pair.call("b", "send_dying_gasp")
        pair.run_for(1.0)
        rows += [Row(f"a{i}", 2 * i + 10, pair.a), Row(f"b{i}", 2 * i + 11, pair.b)]
    return rows


def full_walk(mib: Mib) -> int:
    count, at = 0, MIB
    while True:
        found = mib.get_next(SearchRange(at, (), False))
        if found.type is VarType.END_OF_MIB_VIEW:
            return count
        count += 1
        at = found.name


def test_mib_walk(benchmark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    pairs = 128 if not benchmark.disabled else 4
    rows = engines(pairs)
    mib = Mib(lambda: rows, NoWrites(), time.monotonic)
    varbinds = benchmark.pedantic(full_walk, args=(mib,), rounds=5 if not benchmark.disabled else 1, iterations=1)
    assert varbinds > 48 * len(rows)  # every port's 48 columns, and its event-log rows
    if not benchmark.disabled:
        best = benchmark.stats["min"]
        benchmark.extra_info.update(ports=len(rows), varbinds=varbinds, walk_s=round(best, 3),
                                    us_per_varbind=round(best / varbinds * 1e6, 2))  # fmt: skip
        with capsys.disabled():
            print(f"\n--- mib walk: {len(rows)} ports, {varbinds} varbinds, best {best * 1e3:.0f} ms,"
                  f" {best / varbinds * 1e6:.2f} us per varbind")  # fmt: skip
