"""A two-namespace lab for end-to-end tests of the daemon (root, iproute2, nftables).

`Lab` builds two network namespaces joined by a veth pair ("veth0" in A, "veth1" in B,
fixed MACs, 10.99.0.1/24 and .2), writes one configuration per side and runs one
`efmoam daemon` per side as a subprocess under ``ip netns exec``.  Each `Daemon` keeps
its log (stderr and stdout, every start appended to one file) for failure messages.

Everything that waits polls: `wait_for` calls a predicate until it returns something
true or the timeout passes, and its failure message carries the daemons' logs.  The
CLI is run from the host (the control socket is a file, reachable from any network
namespace); `Daemon.query` asks the control socket in-process where a test needs a
finer time resolution than one CLI start (about 0.2 s).
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import yaml

from efmoam.daemon.control import ControlError, request
from tests.linux.netns import in_netns

T = TypeVar("T")

ROOT = Path(__file__).resolve().parent.parent.parent
PYTHON = sys.executable
MAC_A, MAC_B = "02:00:00:00:aa:01", "02:00:00:00:bb:01"
ADDR_A, ADDR_B = "10.99.0.1", "10.99.0.2"
UDP_PORT = 5799
TRANSMIT_INTERVAL = 0.2
MULTIPLIER = 5
COUNTER_INTERVAL = 0.2
#: how a log entry starts (a timestamp, a level, not the two spaces of a message's next line)
LEVEL = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z )?(ERROR|WARNING|NOTICE|INFO|DEBUG) (?! )|<\d>(?! )")
START_TIMEOUT = 20.0  #: seconds for a daemon to answer on its control socket


PACKAGES = {"ip": "iproute2", "nft": "nftables"}


def missing_requirements() -> str | None:
    """Why the lab cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, AF_PACKET sockets, nftables)"
    missing = [f"{tool} ({package})" for tool, package in PACKAGES.items() if shutil.which(tool) is None]
    if missing:
        return f"needs {' and '.join(missing)} on PATH"
    return None


class DaemonDied(AssertionError):
    """A daemon the test expects to be running has exited (its log is in the message)."""


class CliError(Exception):
    """An efmoam command exited with a non-zero status."""

    def __init__(self, result: subprocess.CompletedProcess[str]) -> None:
        super().__init__(f"`{' '.join(result.args)}` exited {result.returncode}: {result.stderr.strip()}")
        self.result = result


def run(argv: Sequence[str], *, check: bool = True, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"`{' '.join(argv)}` exited {result.returncode}: {result.stderr.strip()}")
    return result


def netns_run(netns: str, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run(["ip", "netns", "exec", netns, *argv], check=check)


def efmoam(*args: str, prefix: Sequence[str] = (), timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    """Run ``python -m efmoam.cli ARGS`` from the source tree (optionally under `prefix`)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("EFMOAM_SOCKET", None)
    return subprocess.run(
        [*prefix, PYTHON, "-m", "efmoam.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=env,
        check=False,
    )


def wait_for(
    predicate: Callable[[], T],
    timeout: float,
    what: str = "a condition",
    *,
    interval: float = 0.05,
    context: Callable[[], str] | None = None,
    retry_on: tuple[type[BaseException], ...] = (CliError, ControlError, OSError, KeyError, TypeError),
) -> T:
    """Call `predicate` until it returns something true; return that, or fail after `timeout`.

    Exceptions of the `retry_on` types count as "not yet" (the last one is reported).
    """
    deadline = time.monotonic() + timeout
    last: object = None
    error: BaseException | None = None
    while True:
        try:
            last = predicate()
            error = None
        except retry_on as exc:
            error = exc
        else:
            if last:
                return last
        if time.monotonic() >= deadline:
            break
        time.sleep(interval)
    message = f"timed out after {timeout:g} s waiting for {what}; last value: {last!r}"
    if error is not None:
        message += f"; last error: {error!r}"
    if context is not None:
        message += "\n" + context()
    raise AssertionError(message)


def deep_merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def write_atomically(path: Path, text: str) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


class Daemon:
    """One `efmoam daemon` in a network namespace, its files and its CLI."""

    def __init__(self, name: str, netns: str, ifname: str, workdir: Path, sockdir: Path) -> None:
        self.name = name
        self.netns = netns
        self.ifname = ifname
        self.config_path = workdir / f"{name}.yaml"
        self.socket = str(sockdir / f"{name}.sock")
        self.state_dir = workdir / f"state-{name}"
        self.counter_file = workdir / f"counters-{name}.json"
        self.log_path = workdir / f"{name}.log"
        self.overrides: dict[str, Any] = {}
        self.env: dict[str, str] = {}  #: added to the daemon's environment (PATH, for a wrapped command)
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.expected_running = False  #: started by the test and not stopped or killed since
        #: what runs ``-m efmoam.cli daemon`` (the least-privilege test puts setpriv in front)
        self.python: list[str] = [PYTHON]
        self._counters: dict[str, dict[str, int]] = {}

    # -- configuration -------------------------------------------------------------------

    def config(self) -> dict[str, Any]:
        """The configuration this side runs with: the lab's base plus `overrides`."""
        base: dict[str, Any] = {
            "daemon": {
                "control_socket": self.socket,
                "state_dir": str(self.state_dir),
                "counter_interval": COUNTER_INTERVAL,
                "dying_gasp_on_shutdown": True,
            },
            "defaults": {
                "mode": "active",
                "transmit_interval": TRANSMIT_INTERVAL,
                "multiplier": MULTIPLIER,
                "counter_source": "file",
                "counter_file": str(self.counter_file),
                "action_backend": "block",
                "link_monitoring": {
                    "enabled": True,
                    "errored_frame": {"enabled": True, "window": 1, "sf_threshold": 5, "sd_threshold": 2},
                    "local_sf_action": {"port_action": "out-of-service", "event_burst": 1},
                    "peer_actions": {
                        "link_fault": "log-only",
                        "dying_gasp": "log-only",
                        "critical_event": "log-only",
                        "event_notification": "log-only",
                    },
                },
            },
            "ports": [{"match": "veth*"}],
        }
        return deep_merge(base, self.overrides)

    def write_config(self, text: str | None = None) -> None:
        """Write `text`, or the YAML of `config()`, to the configuration file."""
        write_atomically(self.config_path, text if text is not None else yaml.safe_dump(self.config(), sort_keys=False))

    def set_counters(self, port: str | None = None, **counters: int) -> None:
        """Set cumulative counters of a port in the counter file (atomically)."""
        self._counters.setdefault(port or self.ifname, {}).update(counters)
        write_atomically(self.counter_file, json.dumps(self._counters))

    # -- process -------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, *, write_config: bool = True, timeout: float = START_TIMEOUT) -> None:
        """Start the daemon and wait until its control socket answers."""
        assert not self.running, f"daemon {self.name} is already running"
        if write_config:
            self.write_config()
        if not self.counter_file.exists():
            self.set_counters(errored_frames=0, frames_received=1000)
        self.starts += 1
        self.expected_running = True
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", **self.env}
        env.pop("JOURNAL_STREAM", None)
        with open(self.log_path, "ab") as log:
            log.write(f"--- start {self.starts} ---\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                # ip netns exec execs the command: the child's pid is the daemon's
                ["ip", "netns", "exec", self.netns, *self.python, "-m", "efmoam.cli", "daemon", "-c", self.config_path],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                cwd=ROOT,
                env=env,
            )
        wait_for(self._answers, timeout, f"daemon {self.name} to answer on {self.socket}", context=self.log)

    def _answers(self) -> bool:
        self.check_alive()
        self.query("hello")
        return True

    def check_alive(self) -> None:
        """Raise `DaemonDied` if the daemon should be running and is not."""
        if self.expected_running and not self.running:
            status = None if self.proc is None else self.proc.returncode
            raise DaemonDied(f"daemon {self.name} ({self.netns}) exited with status {status}:\n{self.log()}")

    def signal(self, signum: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(signum)

    def stop(self, timeout: float = 10.0) -> int:
        """SIGTERM and wait for the exit status (SIGKILL if it does not stop in time)."""
        assert self.proc is not None
        self.expected_running = False
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(f"daemon {self.name} ignored SIGTERM for {timeout:g} s:\n{self.log()}") from None
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL (no Dying Gasp, no cleanup) and reap."""
        self.expected_running = False
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def cpu_seconds(self) -> float:
        """utime + stime of the daemon process so far (from /proc/PID/stat)."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def log(self) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            text = "(no log)"
        return f"===== daemon {self.name} ({self.netns}) log =====\n{text}"

    def log_lines(self, pattern: str) -> list[str]:
        """Log lines of this daemon matching a regular expression."""
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return []
        return [line for line in text.splitlines() if re.search(pattern, line)]

    def log_entries(self, pattern: str) -> list[str]:
        """Log entries matching a regular expression; an entry is a line that starts with a
        level (INFO, ERROR ...) plus the lines after it that do not (a multi-line message)."""
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return []
        entries: list[str] = []
        for line in text.splitlines():
            if LEVEL.match(line) or line.startswith("--- start") or not entries:
                entries.append(line)
            else:
                entries[-1] += "\n" + line
        return [entry for entry in entries if re.search(pattern, entry)]

    # -- control -------------------------------------------------------------------------

    def cli(self, *args: str, prefix: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
        """``efmoam ARGS --socket SOCKET``; the completed process, whatever its status."""
        return efmoam(*args, "--socket", self.socket, prefix=prefix)

    def show(self, port: str | None = None, what: str | None = None) -> dict[str, Any]:
        """``efmoam show port [PORT] [WHAT] -f json``, parsed; `CliError` on failure."""
        args = ["show", "port", *([port] if port else []), *([what] if what else []), "-f", "json"]
        result = self.cli(*args)
        if result.returncode != 0:
            raise CliError(result)
        value = json.loads(result.stdout)
        assert isinstance(value, dict)
        return value

    def port(self, port: str | None = None) -> dict[str, Any]:
        """The full JSON view of this side's port (``show port PORT -f json``)."""
        return self.show(port or self.ifname)

    def query(self, op: str, **args: Any) -> Any:
        """One control request, in-process (fast; the same data as ``-f json``)."""
        return request(self.socket, op, args, timeout=5.0)

    def fast_port(self, port: str | None = None) -> dict[str, Any]:
        value = self.query("show_port", port=port or self.ifname)
        assert isinstance(value, dict)
        return value


class Lab:
    """Two namespaces, a veth pair between them, a daemon for each side."""

    def __init__(self, workdir: Path) -> None:
        tag = uuid.uuid4().hex[:8]
        self.workdir = workdir
        # sockets in a short, world-traversable directory (sun_path is 108 bytes, and the
        # permission test runs the CLI as nobody: only the socket's own mode may refuse it)
        self.sockdir = Path(tempfile.mkdtemp(prefix="efmoam-dt-", dir="/tmp"))
        self.sockdir.chmod(0o755)
        self.ns_a, self.ns_b = f"efmoam-dta-{tag}", f"efmoam-dtb-{tag}"
        self.namespaces = [self.ns_a, self.ns_b]
        self.a = Daemon("a", self.ns_a, "veth0", workdir, self.sockdir)
        self.b = Daemon("b", self.ns_b, "veth1", workdir, self.sockdir)
        self.daemons = [self.a, self.b]
        for ns in self.namespaces:
            run(["ip", "netns", "add", ns])
            run(["ip", "-n", ns, "link", "set", "lo", "up"])
        self.create_pair()

    # -- the link ------------------------------------------------------------------------

    def create_pair(self, mac_a: str = MAC_A, mac_b: str = MAC_B) -> None:
        """veth0 (A) <-> veth1 (B), up, addressed, with static neighbours."""
        run(["ip", "-n", self.ns_a, "link", "add", "veth0", "address", mac_a, "type", "veth",
             "peer", "name", "veth1", "netns", self.ns_b, "address", mac_b])  # fmt: skip
        for ns, dev, addr in ((self.ns_a, "veth0", ADDR_A), (self.ns_b, "veth1", ADDR_B)):
            run(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev])
            run(["ip", "-n", ns, "link", "set", dev, "up"])

    def set_link(self, side: Daemon, up: bool) -> None:
        run(["ip", "-n", side.netns, "link", "set", side.ifname, "up" if up else "down"])

    def link_info(self, side: Daemon) -> dict[str, Any]:
        info = json.loads(run(["ip", "-n", side.netns, "-j", "link", "show", "dev", side.ifname]).stdout)[0]
        assert isinstance(info, dict)
        return info

    def mac(self, side: Daemon) -> str:
        return str(self.link_info(side)["address"])

    # -- the data plane ------------------------------------------------------------------

    def nft_tables(self, side: Daemon) -> list[str]:
        """``nft list tables`` in the side's namespace, one "family name" per table."""
        text = netns_run(side.netns, "nft", "list", "tables").stdout
        return [line.removeprefix("table ").strip() for line in text.splitlines() if line.startswith("table ")]

    def block_table_present(self, side: Daemon) -> bool:
        return f"netdev efmoam_block_{side.ifname}" in self.nft_tables(side)

    def ping(self, source: Daemon, timeout: int = 1) -> bool:
        """One ICMP echo from `source` to the other side; True if answered."""
        target = ADDR_B if source is self.a else ADDR_A
        result = netns_run(source.netns, "ping", "-c", "1", "-W", str(timeout), "-n", "-q", target, check=False)
        return result.returncode == 0

    def udp_passes(self, source: Daemon, timeout: float = 0.5) -> bool:
        """One UDP datagram from `source` to the other side; True if it arrived."""
        target = self.b if source is self.a else self.a
        target_addr = ADDR_B if source is self.a else ADDR_A
        payload = uuid.uuid4().bytes

        def open_receiver() -> socket.socket:
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sock.bind((target_addr, UDP_PORT))
            return sock

        def send() -> None:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock, contextlib.suppress(OSError):
                sock.sendto(payload, (target_addr, UDP_PORT))  # ENOBUFS when egress drops it

        receiver = in_netns(target.netns, open_receiver)
        try:
            in_netns(source.netns, send)
            deadline = time.monotonic() + timeout
            while (left := deadline - time.monotonic()) > 0:
                if not select.select([receiver], [], [], left)[0]:
                    break
                if receiver.recv(2048) == payload:
                    return True
            return False
        finally:
            receiver.close()

    # -- daemons -------------------------------------------------------------------------

    def start(self, *daemons: Daemon, operational: bool = True) -> None:
        """Start the daemons (both by default); optionally wait until both are operational."""
        for daemon in daemons or self.daemons:
            daemon.start()
        if operational:
            self.wait_operational()

    def wait_operational(self, timeout: float = 15.0) -> None:
        for daemon in self.daemons:
            self.wait_for(partial(is_operational, daemon), timeout, f"{daemon.name}/{daemon.ifname} operational")

    def wait_view(
        self,
        side: Daemon,
        predicate: Callable[[dict[str, Any]], object],
        timeout: float,
        what: str,
        *,
        port: str | None = None,
    ) -> dict[str, Any]:
        """Poll ``show port PORT -f json`` of `side` (its own port by default) until `predicate`
        holds and no port action is on its way (actions are applied off the loop, in batches)."""

        def check() -> dict[str, Any] | None:
            view = side.port(port)
            return view if predicate(view) and not view["action"]["pending"] else None

        view = self.wait_for(check, timeout, what)
        assert view is not None
        return view

    def check_alive(self) -> None:
        """Raise `DaemonDied` if a daemon that should be running has exited."""
        for daemon in self.daemons:
            daemon.check_alive()

    def wait_for(self, predicate: Callable[[], T], timeout: float, what: str = "a condition", **kwargs: Any) -> T:
        """`wait_for` that fails at once with `DaemonDied` when a daemon exits meanwhile."""

        def checked() -> T:
            self.check_alive()
            return predicate()

        return wait_for(checked, timeout, what, context=self.logs, **kwargs)

    def logs(self) -> str:
        return "\n".join(daemon.log() for daemon in self.daemons)

    def close(self) -> None:
        """Kill every daemon, delete the namespaces and the socket directory (never raises)."""
        for daemon in self.daemons:
            with contextlib.suppress(Exception):
                daemon.kill()
        for ns in self.namespaces:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
        shutil.rmtree(self.sockdir, ignore_errors=True)


def is_operational(side: Daemon) -> bool:
    return bool(side.port()["oper_status"] == "operational")


def event_entries(view: dict[str, Any], **match: Any) -> list[dict[str, Any]]:
    """Event-log entries of a port view whose keys equal `match`."""
    return [entry for entry in view["event_log"] if all(entry.get(k) == v for k, v in match.items())]


def first(items: Iterable[T]) -> T | None:
    return next(iter(items), None)


def device_samples(lab: Lab, metrics_port: int, device: str = "veth0") -> dict[str, float]:
    """`device`'s samples in side A's metrics endpoint, by name with the labels after
    device joined in (``name{k=v,...}``)."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    def get() -> bytes:
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as response:
            return bytes(response.read())

    found = {}
    for family in text_string_to_metric_families(in_netns(lab.ns_a, get).decode()):
        for sample in family.samples:
            if sample.labels.get("device") == device:
                rest = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()) if k != "device")
                found[f"{sample.name}{{{rest}}}"] = sample.value
    return found
