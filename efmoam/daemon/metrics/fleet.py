"""The fleet view: per NIC health monitor, one histogram of its closed windows over every port.

Each `HealthMonitor` keeps a histogram of its own closed windows (the bounds of its row of
`kinds.HEALTH`, in the thresholds' unit: a count per window, or a rate per second).  The
daemon exports one Prometheus histogram per monitor, labelled ``monitor`` and without
``device`` (`schema.HEALTH_WINDOWS`): the distribution that tells a noisy fabric from one
bad port, a few series per monitor whatever the number of ports.

Monotonic, by one rule: the daemon's histogram only ever adds what a monitor gained since a
scrape last saw it.  `HealthHistograms` remembers, per monitor object (weakly: a monitor gone
with its port is forgotten), the counts it saw last, and every scrape adds each running
monitor's increase since then.  So:

* a monitor seen for the first time (a new port, a monitor enabled, a port made anew) adds
  everything it has; its ``monitor`` series appear then, at zero until a window closes;
* a port removed, or a monitor disabled, keeps what it added: nothing is ever taken back.
  The windows it closed after the last scrape that saw it are not counted (at most one
  scrape interval of that port);
* a monitor enabled again adds only what it gained since (the same object, remembered);
* a monitor whose counts fell (the core never resets them) counts as new.

``clear`` (statistics, events) leaves the monitors' histograms alone, and the daemon's
starts from zero only when the daemon starts, as every counter.  Whichever scrape reads the
ports (the endpoint's `Renderer`, the collector's `snapshot`) updates the one instance in
`Telemetry`, under the daemon's lock, so they take turns and agree.  Buckets are kept as
the monitors keep them (per bucket, the last +Inf) and made cumulative when rendered.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from operator import add, sub

from efmoam.core.linkmon.kinds import HEALTH
from efmoam.core.linkmon.monitors import HealthMonitor

#: one monitor's merged histogram: its key, (``le``, cumulative windows) per bucket ending
#: with +Inf, and the sum of the windows' values
Merged = tuple[str, tuple[tuple[str, int], ...], float]


def go_float(value: float) -> str:
    """A bucket bound as prometheus_client writes it (its floatToGoString, for bounds below
    1e10): ``1000.0``, ``1e+06``, ``+Inf``; the endpoint and the collector then agree."""
    if value == float("inf"):
        return "+Inf"
    text = repr(float(value))
    dot = text.find(".")
    if value > 0 and dot > 6:  # Go's shortest 'g' has an exponent from 1e6 on, Python's repr from 1e16
        mantissa = f"{text[0]}.{text[1:dot]}".rstrip("0.")
        return f"{mantissa}e+0{dot - 1}"
    return text


#: per health monitor key: its ``le`` labels, +Inf last
BOUNDS = {facts.key: (*map(go_float, facts.buckets), "+Inf") for facts in HEALTH}


class HealthHistograms:
    """The daemon's histogram per health monitor, fed by the ports' monitors at scrape time."""

    def __init__(self) -> None:
        #: per monitor: its histogram and sum when a scrape last saw it
        self._seen: weakref.WeakKeyDictionary[HealthMonitor, tuple[list[int], float]] = weakref.WeakKeyDictionary()
        self._counts: dict[str, list[int]] = {}  #: per key: windows per bucket (not cumulative), +Inf last
        self._sums: dict[str, float] = {}

    def observe(self, monitors: Iterable[HealthMonitor]) -> None:
        """Add what each of `monitors` gained since it was last seen (under the daemon's lock)."""
        seen = self._seen
        for monitor in monitors:
            now = monitor.histogram
            before = seen.get(monitor)
            total = monitor.histogram_sum
            if before is None:
                gained, more = now, total  # new to us: all it has
            elif before[0] == now:
                continue  # the common case: no window closed since the last scrape
            else:
                gained, more = list(map(sub, now, before[0])), total - before[1]
                if min(gained) < 0:
                    gained, more = now, total  # its counts fell: a new start
            key = monitor.key
            counts = self._counts.get(key)
            if counts is None:
                counts = self._counts[key] = [0] * len(now)
                self._sums[key] = 0.0
            counts[:] = map(add, counts, gained)
            self._sums[key] += max(more, 0.0)
            seen[monitor] = (now.copy(), total)

    def merged(self) -> list[Merged]:
        """Every monitor seen so far, in `kinds.HEALTH` order, its buckets cumulative."""
        rows = []
        for facts in HEALTH:
            counts = self._counts.get(facts.key)
            if counts is not None:
                running, buckets = 0, []
                for bound, windows in zip(BOUNDS[facts.key], counts, strict=True):
                    running += windows
                    buckets.append((bound, running))
                rows.append((facts.key, tuple(buckets), self._sums[facts.key]))
        return rows


def histogram_text(name: str, help_text: str, rows: list[Merged]) -> str:
    """Histogram `name` (label ``monitor``) of `rows` in the text exposition format; nothing
    without rows (no port has run a health monitor)."""
    if not rows:
        return ""
    lines = [f"# HELP {name} {help_text}\n# TYPE {name} histogram\n"]
    for key, buckets, total in rows:
        lines += [f'{name}_bucket{{monitor="{key}",le="{bound}"}} {windows}\n' for bound, windows in buckets]
        lines.append(f'{name}_sum{{monitor="{key}"}} {total!r}\n{name}_count{{monitor="{key}"}} {buckets[-1][1]}\n')
    return "".join(lines)
