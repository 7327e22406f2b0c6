"""Timing probes inside a running daemon, for `tests/bench/daemon_breakdown.py`.

Loaded by the ``sitecustomize`` that script puts on the daemon's PYTHONPATH (with
``EFMOAM_PROBE`` set to the output directory): it wraps the methods of `PROBES`, each
call adding its wall time (perf_counter: the daemon is on a CPU of its own and rarely
waits inside these) to a total per label and, while a counter poll is under way, per
poll.  On SIGUSR2 it writes what it has to ``DIR/probe-PID.json``.  A probe costs about
0.3 us a call, counted in the figures it surrounds; never loaded by the daemon otherwise.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import time
from collections.abc import Callable
from typing import Any

#: (module, class, method, label): the steady path of a port (its timer and send, the
#: frames it receives, its counter read) and the engine's share of each
PROBES = [
    ("efmoam.daemon.runtime", "PortRuntime", "timer", "timer"),
    ("efmoam.core.port", "OamPort", "handle_timer", "timer: engine"),
    ("efmoam.linux.packet", "OamSocket", "send", "send"),
    ("efmoam.daemon.runtime", "PortRuntime", "read_frames", "frames"),
    ("efmoam.linux.packet", "OamSocket", "receive", "frames: recv"),
    ("efmoam.core.port", "OamPort", "receive", "frames: engine"),
    ("efmoam.daemon.polling", "CounterPoll", "service", "counters: poll"),
    ("efmoam.daemon.polling", "CounterPoll", "read", "counters"),
    ("efmoam.core.port", "OamPort", "on_counters", "counters: engine"),
    ("efmoam.daemon.runtime", "PortRuntime", "send_first", "counters: frames first"),
    ("efmoam.daemon.polling", "CounterPoll", "_carry_out_next", "counters: carry out"),
]
SPAN = "span"  #: in a poll's table: [perf_counter of its first read, of its last frames-first send]

totals: dict[str, list[float]] = {}  #: label -> [seconds, calls]
#: the poll's start -> label -> [seconds, calls], of what ran inside the poll's own slices
polls: dict[str, dict[str, list[float]]] = {}
#: the table of the poll under way while its slice runs (its first read opens it), else None
current: list[dict[str, list[float]] | None] = [None]


def _wrap(label: str, method: Callable[..., Any]) -> Callable[..., Any]:
    clock = time.perf_counter

    def probed(*args: Any, **kwargs: Any) -> Any:
        start = clock()
        if label == "counters":
            poll = current[0] = polls.setdefault(repr(args[0].began), {})
            poll.setdefault(SPAN, [start, start])
        try:
            return method(*args, **kwargs)
        finally:
            end = clock()
            poll = current[0]
            for table in (totals, poll):
                if table is not None:
                    entry = table.setdefault(label, [0.0, 0])
                    entry[0] += end - start
                    entry[1] += 1
            if poll is not None and label == "counters: frames first":
                poll[SPAN][1] = end
            if label == "counters: poll":
                current[0] = None  # frames and timers between the poll's slices are not the poll's

    return probed


def _dump(directory: str) -> None:
    with open(os.path.join(directory, f"probe-{os.getpid()}.json"), "w") as out:
        json.dump({"totals": totals, "polls": polls}, out)


def install(directory: str) -> None:
    for module_name, class_name, method_name, label in PROBES:
        cls = getattr(importlib.import_module(module_name), class_name)
        setattr(cls, method_name, _wrap(label, getattr(cls, method_name)))
    signal.signal(signal.SIGUSR2, lambda _signum, _frame: _dump(directory))
