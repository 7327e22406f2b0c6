"""The real daemon at scale (issue 18): N ports per daemon, start-up, memory, cost per port-second.

`Topology` makes N veth pairs a<i> <-> b<i> with one ``ip -batch`` per namespace, a<i> in
namespace A and b<i> in B, and runs one ``efmoam daemon`` per namespace managing all N of
its ports (tests/daemon/lab.py's `Daemon`): active mode, an Information OAMPDU and a
counter read a second per port, link monitoring on with the three monitors veth can feed
(errored frame, period, seconds).  Counters come from ``rtnetlink``, or from a ``file``
holding every port, rewritten every second by the benchmark with growing counters as an
exporter would (the daemon parses each new version once).  The namespaces are deleted
afterwards, also on failure.

Measured, never asserted (the block each case prints, also ``extra_info``):

* start-up of daemon A, started while B runs: seconds from its start to its control
  socket answering, and until all of its ports are sending (every port of B has seen its
  peer: polled every 50 ms, so up to that much late); B's time to answer too;
* steady state, once every port of both daemons is operational and the discovery burst
  has passed: each daemon's utime + stime (/proc/PID/stat) over `SECONDS`, in us per
  port-second (the mean of A and B is the figure to read) and in % of one core;
* A's VmRSS and VmHWM in that state, and its loop's wake-ups per port-second;
* beside it, in this process and in the same run, the engine alone for the same N ports
  with the same settings (built from the daemon's configuration): one second of every
  port's timer, its Information OAMPDU handed to its peer and one counter sample
  (tests/bench/test_core_bench.py's exchange plus test_linkmon_bench.py's sample), in us
  per port-second: what the daemon adds is the difference.

What is checked (behaviour): every port of both daemons stays operational through the
measurement, and neither daemon logs a warning, an error or a traceback.

Run with ``pytest tests/bench/test_daemon_scale_bench.py --benchmark-enable -s`` (root).
With ``EFMOAM_BENCH_BASELINE=DIR`` (another tree) the cost is also measured for that tree's
daemons on a second topology in the same window (``baseline_us_per_port_second``).
Without ``--benchmark-enable`` only a smoke run of 8 ports per counter source runs (the
topology, both daemons and every figure, a 2 s window); the other sizes are skipped.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from efmoam.config import load_config_text
from efmoam.core import OamPort
from efmoam.core.linkmon import CounterSample
from tests.bench.test_core_bench import directions, exchange, settle
from tests.bench.test_daemon_bench import FileOpens, capture_notifications, tear_down
from tests.daemon.lab import PYTHON, Daemon, missing_requirements, run, wait_for

pytestmark = [pytest.mark.bench, pytest.mark.root]

SIZES = [64, 256, 1024]
SOURCES = ["rtnetlink", "file"]
SECONDS = 20.0  #: the measurement window
SMOKE_PORTS, SMOKE_SECONDS = 8, 2.0  #: without --benchmark-enable
FRAMES_PER_SECOND = 1_000  #: how much frames_received grows a second in the counter file


class Topology:
    """`ports` veth pairs a<i> (namespace A) <-> b<i> (namespace B), a daemon per namespace."""

    def __init__(self, workdir: Path, ports: int, source: str) -> None:
        self.ports = ports
        self.source = source
        self.sockdir = Path(tempfile.mkdtemp(prefix="efmoam-scale-", dir="/tmp"))
        tag = os.urandom(4).hex()
        self.namespaces: list[str] = []
        self.daemons: list[Daemon] = []
        self._stop = threading.Event()
        self._writer: threading.Thread | None = None
        ns_a, ns_b = f"efmoam-sa-{tag}", f"efmoam-sb-{tag}"
        for ns in (ns_a, ns_b):
            run(["ip", "netns", "add", ns])
            self.namespaces.append(ns)
        batch_a = [f"link add a{i} type veth peer name b{i} netns {ns_b}" for i in range(ports)]
        batch_a += [f"link set a{i} up" for i in range(ports)] + ["link set lo up"]
        batch_b = [f"link set b{i} up" for i in range(ports)] + ["link set lo up"]
        for ns, batch in ((ns_a, batch_a), (ns_b, batch_b)):
            subprocess.run(
                ["ip", "-n", ns, "-batch", "-"], input="\n".join(batch) + "\n", text=True, check=True, timeout=300
            )
        for name, ns in (("a", ns_a), ("b", ns_b)):
            daemon = Daemon(name, ns, f"{name}0", workdir, self.sockdir)
            daemon.overrides = {
                "daemon": {"counter_interval": 1.0},
                "defaults": {
                    "transmit_interval": 1.0,
                    "multiplier": 5,
                    "counter_source": source,
                    "counter_file": str(daemon.counter_file) if source == "file" else None,
                    "link_monitoring": {
                        "errored_frame": {"enabled": True, "window": 1, "sf_threshold": 5, "sd_threshold": 2},
                        "errored_frame_period": {"enabled": True, "window": 100000, "sf_threshold": 5},
                        "errored_frame_seconds": {"enabled": True, "window": 60, "sf_threshold": 5},
                    },
                },
                "ports": [{"match": f"{name}*"}],
            }
            self.daemons.append(daemon)
        self.a, self.b = self.daemons
        self.errored = {daemon.name: 0 for daemon in self.daemons}  #: errored_frames in each counter file
        self.second = 0
        if source == "file":
            self._write_counters(0)
            self._writer = threading.Thread(target=self._rewrite, daemon=True)
            self._writer.start()

    def _write_counters(self, second: int) -> None:
        for daemon in self.daemons:
            frames = 1_000 + second * FRAMES_PER_SECOND
            counters = {"errored_frames": self.errored[daemon.name], "frames_received": frames}
            document = {f"{daemon.name}{i}": counters for i in range(self.ports)}
            temporary = daemon.counter_file.with_name(daemon.counter_file.name + ".tmp")
            temporary.write_text(json.dumps(document))
            temporary.replace(daemon.counter_file)

    def _rewrite(self) -> None:
        while not self._stop.wait(1.0):
            self.second += 1
            self._write_counters(self.second)

    def fail_all(self, name: str, errors: int) -> None:
        """Every port of daemon `name` gains `errors` errored frames, in the file now."""
        self.errored[name] += errors
        self._write_counters(self.second)

    def settings_text(self) -> str:
        """The YAML daemon A runs with."""
        return yaml.safe_dump(self.a.config(), sort_keys=False)

    def start_steady(self) -> None:
        """Start B, then A, wait until every port of both is operational, and let the
        discovery burst pass: the steady state the scripts beside this bench measure."""
        timeout = 60.0 + self.ports * 0.1
        self.b.start(timeout=timeout)
        self.a.start(timeout=timeout)
        for daemon in self.daemons:
            wait_for(partial(self.all_operational, daemon), timeout, f"{daemon.name} operational", interval=0.25)
        time.sleep(3.0)

    def operational(self, daemon: Daemon) -> int:
        ports = daemon.query("show_ports")["ports"]
        return sum(port["oper_status"] == "operational" for port in ports)

    def all_operational(self, daemon: Daemon) -> bool:
        return self.operational(daemon) == self.ports

    def all_peers_seen(self, daemon: Daemon) -> bool:
        ports = daemon.query("show_ports")["ports"]
        return len(ports) == self.ports and all(port["peer_mac"] is not None for port in ports)

    def logs(self) -> str:
        return "\n".join(daemon.log()[-5000:] for daemon in self.daemons)

    def close(self) -> None:
        self._stop.set()
        if self._writer is not None:
            self._writer.join(5.0)
        tear_down(self.daemons, self.namespaces, self.sockdir)


@contextlib.contextmanager
def topology(workdir: Path, ports: int, source: str) -> Iterator[Topology]:
    """A `Topology`, closed (daemons killed, namespaces deleted) whatever happens."""
    built: list[Topology] = []
    try:
        built.append(Topology(workdir, ports, source))
        yield built[0]
    finally:
        if built:
            built[0].close()


def baseline_beside(
    stack: contextlib.ExitStack, workdir: Path, ports: int, source: str, timeout: float
) -> Topology | None:
    """With ``EFMOAM_BENCH_BASELINE=DIR`` (another tree, e.g. ``git archive REV | tar -x -C
    DIR``), the same topology run by that tree's daemons, operational, measured over the
    same window as this tree's: before and after side by side in one run (this machine's
    load moves single figures by 10 %)."""
    tree = os.environ.get("EFMOAM_BENCH_BASELINE")
    if not tree:
        return None
    (workdir / "baseline").mkdir()
    base = stack.enter_context(topology(workdir / "baseline", ports, source))
    for daemon in base.daemons:
        daemon.python = ["env", f"PYTHONPATH={Path(tree).resolve()}", PYTHON, "-P"]  # -P: not this tree first
        daemon.start(timeout=timeout)
    for daemon in base.daemons:
        wait_for(partial(base.all_operational, daemon), timeout, "the baseline operational", context=base.logs)
    return base


@contextlib.contextmanager
def alone_on_a_cpu(topo: Topology) -> Iterator[bool]:
    """Daemon A on CPU 0, daemon B and every thread of this process (the capture, the
    counter file's writer) on the others, when there are others (yields whether): A's
    peer would be another machine, and on two cores B's handling of a thousand Event
    Notifications, and the capture's, otherwise take turns with A.  Set before the
    daemons start; this process's threads are put back afterwards."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        yield False
        return
    first, others = cpus[0], ",".join(map(str, cpus[1:]))
    topo.a.python = ["taskset", "-c", str(first), *topo.a.python]
    topo.b.python = ["taskset", "-c", others, *topo.b.python]
    threads = [int(tid) for tid in os.listdir("/proc/self/task")]
    for tid in threads:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(tid, cpus[1:])
    try:
        yield True
    finally:
        for tid in [int(tid) for tid in os.listdir("/proc/self/task")]:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(tid, cpus)


def memory_kb(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of a process, in kB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return {key: int(fields[key].split()[0]) for key in ("VmRSS", "VmHWM")}


def engine_us_per_port_second(settings_text: str, ports: int, rounds: int = 5) -> float:
    """The engine alone: `ports` ports (in pairs) with daemon A's settings, one second of
    Information OAMPDUs both ways and one counter sample each; the best of `rounds`."""
    config = load_config_text(settings_text)
    profile = config.profile_for("a0", physical=False)
    assert profile is not None
    settings = profile.settings
    pairs = []
    for i in range(ports // 2):
        mac = f"02:00:{i >> 8 & 0xFF:02x}:{i & 0xFF:02x}:00"
        pairs.append((OamPort(settings, f"{mac}:0a", now=0.0), OamPort(settings, f"{mac}:0b", now=0.0)))
    for a, b in pairs:
        a.set_link(True, now=0.0, speed_mbps=10_000)
        b.set_link(True, now=0.0, speed_mbps=10_000)
    now = settle(pairs, settings.transmit_interval)
    links = directions(pairs)
    every = [port for pair in pairs for port in pair]
    best = float("inf")
    for second in range(rounds + 1):
        now += 1.0
        samples = [CounterSample(errored_frames=0, frames_received=1_000 * (second + 1))] * len(every)
        start = time.perf_counter()
        exchange(links, now)
        for port, sample in zip(every, samples, strict=True):
            port.on_counters(sample, now=now)
            port.take_outputs()
        elapsed = time.perf_counter() - start
        if second:  # the first is a warm-up
            best = min(best, elapsed)
    return best / len(every) * 1e6


def report(capsys: pytest.CaptureFixture[str], title: str, lines: dict[str, Any]) -> None:
    with capsys.disabled():
        print(f"\n--- {title}")
        for key, value in lines.items():
            print(f"    {key}: {value}")


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("size", SIZES, ids=[f"{n}-ports" for n in SIZES])
def test_daemon_cost_per_port_second(
    benchmark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], size: int, source: str
) -> None:
    reason = missing_requirements()
    if reason:
        pytest.skip(reason)
    if benchmark.disabled and size != SIZES[0]:
        pytest.skip("a benchmark: run with --benchmark-enable (the smallest size runs as a smoke test)")
    ports, seconds = (size, SECONDS) if not benchmark.disabled else (SMOKE_PORTS, SMOKE_SECONDS)
    start_timeout = 60.0 + ports * 0.1
    baseline: float | None = None
    with contextlib.ExitStack() as stack:
        topo = stack.enter_context(topology(tmp_path, ports, source))
        started_b = time.monotonic()
        topo.b.start(timeout=start_timeout)
        answer_b = time.monotonic() - started_b
        started = time.monotonic()
        topo.a.start(timeout=start_timeout)
        answer_a = time.monotonic() - started
        wait_for(
            partial(topo.all_peers_seen, topo.b), start_timeout, "every port of B to see its peer",
            interval=0.05, context=topo.logs,
        )  # fmt: skip
        sending_a = time.monotonic() - started
        for daemon in topo.daemons:
            wait_for(
                partial(topo.all_operational, daemon), start_timeout, f"all {ports} ports of {daemon.name} operational",
                interval=0.25, context=topo.logs,
            )  # fmt: skip
        base = baseline_beside(stack, tmp_path, ports, source, start_timeout)
        time.sleep(3.0)  # the discovery burst passes (and a counter file version or two)
        measured = [*topo.daemons, *(base.daemons if base is not None else [])]

        def measure() -> dict[int, float]:
            before = [daemon.cpu_seconds() for daemon in measured]
            start = time.monotonic()
            time.sleep(seconds)  # the measurement window itself
            elapsed = time.monotonic() - start
            after = [daemon.cpu_seconds() for daemon in measured]
            return {id(d): (a - b) / elapsed for d, a, b in zip(measured, after, before, strict=True)}

        loop_before = topo.a.query("show_ports")["daemon"]["loop"]
        shares = benchmark.pedantic(measure, rounds=1, iterations=1, warmup_rounds=0)
        loop_after = topo.a.query("show_ports")["daemon"]["loop"]
        long_wakeups = loop_after["long_wakeups"] - loop_before["long_wakeups"]
        wakeups = loop_after["wakeups"] - loop_before["wakeups"]
        share = {daemon.name: shares[id(daemon)] for daemon in topo.daemons}
        if base is not None:
            baseline = sum(shares[id(daemon)] for daemon in base.daemons) / 2 / ports * 1e6
        memory = memory_kb(topo.a.pid)
        for daemon in topo.daemons:
            assert topo.operational(daemon) == ports, f"{daemon.name} lost ports during the measurement"
            assert not daemon.log_lines(r"^(ERROR|WARNING)|Traceback"), topo.logs()
        per_port = {name: value / ports * 1e6 for name, value in share.items()}
        engine = engine_us_per_port_second(topo.settings_text(), ports)
    results = {
        "ports_per_daemon": ports,
        "counter_source": source,
        "seconds_measured": seconds,
        "daemon_us_per_port_second": round(sum(per_port.values()) / len(per_port), 1),
        "daemon_us_per_port_second_by_side": {name: round(value, 1) for name, value in per_port.items()},
        "engine_us_per_port_second": round(engine, 2),
        **({} if baseline is None else {"baseline_us_per_port_second": round(baseline, 1)}),
        "cpu_share_of_one_core": {name: f"{value * 100:.2f} %" for name, value in share.items()},
        "a_long_wakeups_in_window": long_wakeups,  # A's wake-ups over 50 ms in the steady state
        "a_wakeups_per_port_second": round(wakeups / seconds / ports, 2),  # (about, the window's ends are queries)
        "start_a_control_answers_s": round(answer_a, 2),
        "start_a_all_ports_sending_s": round(sending_a, 2),
        "start_b_control_answers_s": round(answer_b, 2),
        "rss_a_mb": round(memory["VmRSS"] / 1024, 1),
        "peak_rss_a_mb": round(memory["VmHWM"] / 1024, 1),
    }
    benchmark.extra_info.update(results)
    report(capsys, f"daemon at scale: {ports} ports per daemon, {source} counters", results)


@pytest.mark.parametrize("size", [256, 1024], ids=["256-ports", "1024-ports"])
def test_signal_failure_to_event_notification_at_scale(
    benchmark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], size: int
) -> None:
    """Every port of daemon A fails at once (its counter file: errored frames over the SF
    threshold on all of them): from A's read of the file (the poll's start; inotify, an
    upper bound: its thread competes with the capture's for the GIL, so the figures may
    read up to a few ms low, and the first can come out below zero) to the
    first, median and last of the N ports' first Event Notifications on B's side (kernel
    receive timestamps); A alone on a CPU (`alone_on_a_cpu`).  Target: the last under
    20 ms (issue 18).  Smoke run
    without ``--benchmark-enable``: 8 ports."""
    reason = missing_requirements()
    if reason:
        pytest.skip(reason)
    if benchmark.disabled and size != 256:
        pytest.skip("a benchmark: run with --benchmark-enable (the smallest size runs as a smoke test)")
    ports = size if not benchmark.disabled else SMOKE_PORTS
    timeout = 60.0 + ports * 0.1
    with topology(tmp_path, ports, "file") as topo, alone_on_a_cpu(topo) as a_alone:
        topo.b.start(timeout=timeout)
        topo.a.start(timeout=timeout)
        for daemon in topo.daemons:
            wait_for(
                partial(topo.all_operational, daemon), timeout, f"all {ports} ports of {daemon.name} operational",
                interval=0.25, context=topo.logs,
            )  # fmt: skip
        time.sleep(2.0)
        notifications, stop_capture = capture_notifications(topo.namespaces[1])
        opens = FileOpens(topo.a.counter_file)
        try:
            time.sleep(1.5)  # a poll or two with nothing to report
            before = len(opens.stamps.snapshot())
            long_before = topo.a.query("show_ports")["daemon"]["loop"]["long_wakeups"]

            def measure() -> dict[str, float]:
                topo.fail_all("a", 50)  # window 1 s, sf 5: every port fails at the poll that reads it
                wait_for(lambda: len(notifications.snapshot()) >= ports, 30, "every Event Notification",
                         context=topo.logs)  # fmt: skip
                time.sleep(0.5)
                first_by_port: dict[str, float] = {}
                for stamp, mac in notifications.snapshot():
                    first_by_port.setdefault(mac, stamp)
                first_en = min(first_by_port.values())
                read = opens.stamps.snapshot()[before][0]  # the poll after the write: the file's next open
                return {
                    "ports_notified": len(first_by_port),
                    "first_ms": (first_en - read) * 1e3,
                    "last_ms": (max(first_by_port.values()) - read) * 1e3,
                    "median_ms": statistics.median(first_by_port.values()) * 1e3 - read * 1e3,
                }

            figures = benchmark.pedantic(measure, rounds=1, iterations=1, warmup_rounds=0)
            time.sleep(1.5)  # what the failures caused carried out (events, actions)
            loop = topo.a.query("show_ports")["daemon"]["loop"]
            #: A's wake-ups over 50 ms while it handled the failures, and its longest of the
            #: last minute or two (start-up and discovery included)
            figures["a_long_wakeups"] = loop["long_wakeups"] - long_before
            figures["a_longest_wakeup_ms"] = loop["longest_wakeup_seconds"] * 1e3
        finally:
            opens.close()
            stop_capture()
        assert figures["ports_notified"] == ports
    results = {"ports": ports, "a_alone_on_a_cpu": a_alone, **{key: round(value, 1) for key, value in figures.items()}}
    benchmark.extra_info.update(results)
    report(capsys, f"signal failure to Event Notification, {ports} ports at once (file counters)", results)
