"""Many ports between two daemons, for the mass-action test and benchmark (root, nftables).

`MassLab` builds `pairs` veth pairs a<i> (namespace A, daemon A) <-> b<i> (namespace B,
daemon B).  Daemon A takes a port out of service (``block``) when its peer signals a
Dying Gasp; daemon B sends one on every port when it stops (SIGTERM), and the ports come
back in service at once when A's lost-link timers expire (`MULTIPLIER` transmit intervals
later: the peer's flag events end with the session).  Every nft command
daemon A runs is counted: A runs with a directory first on its PATH whose ``nft`` logs
its arguments and then runs the real one.  `Poller` asks A's control socket for a port
in a loop and keeps what each answer said and how long it took.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from efmoam.linux.actions import stale_block_tables
from tests.daemon.lab import PYTHON, Daemon, run, wait_for
from tests.linux.test_actions import netns_runner

MULTIPLIER = 10  #: lost-link time in transmit intervals: how long the peer's Dying Gasp blocks the ports


class MassLab:
    """See the module's comment."""

    def __init__(self, workdir: Path, pairs: int, transmit_interval: float = 1.0) -> None:
        self.lost_link_time = transmit_interval * MULTIPLIER
        self.pairs = pairs
        self.sockdir = Path(tempfile.mkdtemp(prefix="efmoam-mass-", dir="/tmp"))
        tag = os.urandom(4).hex()
        self.ns_a, self.ns_b = f"efmoam-ma-{tag}", f"efmoam-mb-{tag}"
        for ns in (self.ns_a, self.ns_b):
            run(["ip", "netns", "add", ns])
        batch_a = [f"link add a{i} type veth peer name b{i} netns {self.ns_b}" for i in range(pairs)]
        batch_a += [f"link set a{i} up" for i in range(pairs)] + ["link set lo up"]
        batch_b = [f"link set b{i} up" for i in range(pairs)] + ["link set lo up"]
        for ns, batch in ((self.ns_a, batch_a), (self.ns_b, batch_b)):
            subprocess.run(["ip", "-n", ns, "-batch", "-"], input="\n".join(batch) + "\n", text=True, check=True)
        self.nft_log = workdir / "nft-a.log"
        self.nft_log.touch()
        wrapper_dir = workdir / "bin"
        wrapper_dir.mkdir()
        wrapper = wrapper_dir / "nft"
        real = shutil.which("nft") or "/usr/sbin/nft"
        wrapper.write_text(f'#!/bin/sh\necho "$*" >> "{self.nft_log}"\nexec "{real}" "$@"\n')
        wrapper.chmod(0o755)
        self.a = Daemon("a", self.ns_a, "a0", workdir, self.sockdir)
        self.b = Daemon("b", self.ns_b, "b0", workdir, self.sockdir)
        self.a.python = ["env", f"PATH={wrapper_dir}:{os.environ.get('PATH', '/usr/sbin:/usr/bin')}", PYTHON]
        for daemon, pattern in ((self.a, "a*"), (self.b, "b*")):
            daemon.overrides = {
                "daemon": {"counter_interval": 1.0},
                "defaults": {
                    "transmit_interval": transmit_interval,
                    "multiplier": MULTIPLIER,
                    "counter_source": "rtnetlink",
                    "counter_file": None,
                    "link_monitoring": {"peer_actions": {"dying_gasp": "out-of-service"}},
                },
                "ports": [{"match": pattern}],
            }

    def start(self, timeout: float = 120.0) -> None:
        """Both daemons, and every session up on A."""
        for daemon in (self.b, self.a):
            daemon.start(timeout=timeout)
        self.wait_operational(timeout)

    def shut_peer_down(self) -> None:
        """SIGTERM to daemon B (a Dying Gasp on every port), without waiting for it to exit:
        a daemon with a thousand ports takes seconds to save its state and close."""
        self.b.expected_running = False
        self.b.signal(signal.SIGTERM)

    def wait_operational(self, timeout: float) -> None:
        wait_for(lambda: self.operational() == self.pairs, timeout, "every session up", context=self.logs)

    def operational(self) -> int:
        ports = self.a.query("show_ports")["ports"]
        return sum(port["oper_status"] == "operational" for port in ports)

    def out_of_service(self) -> int:
        return sum(port["out_of_service"] for port in self.a.query("show_ports")["ports"])

    def blocked(self) -> int:
        """Ports with a block table in A's namespace now."""
        return len(stale_block_tables(netns_runner(self.ns_a)))

    def actions(self) -> list[dict[str, Any]]:
        """The ``action`` of every port of A, as `show port P -f json` reports it."""
        return [self.a.fast_port(f"a{i}")["action"] for i in range(self.pairs)]

    def nft_calls(self) -> list[str]:
        """The arguments of every nft command daemon A ran, one string each."""
        return self.nft_log.read_text().splitlines()

    def logs(self) -> str:
        return "\n".join(daemon.log()[-4000:] for daemon in (self.a, self.b))

    def close(self) -> None:
        for daemon in (self.a, self.b):
            with contextlib.suppress(Exception):
                daemon.kill()
        for ns in (self.ns_a, self.ns_b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
        shutil.rmtree(self.sockdir, ignore_errors=True)


class Poller:
    """Asks daemon A for one port's view every `interval` seconds on a thread of its own:
    (when, seconds the answer took, the port's action) for each answer, and the errors."""

    def __init__(self, daemon: Daemon, port: str, interval: float = 0.01) -> None:
        self.daemon, self.port, self.interval = daemon, port, interval
        self.answers: list[tuple[float, float, dict[str, Any]]] = []
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                action = self.daemon.fast_port(self.port)["action"]
            except Exception as exc:  # reported by the test
                self.errors.append(exc)
            else:
                self.answers.append((started, time.monotonic() - started, action))
            self._stop.wait(self.interval)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    @property
    def longest(self) -> float:
        return max((took for _, took, _ in self.answers), default=0.0)
