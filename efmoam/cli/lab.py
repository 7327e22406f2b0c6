"""`efmoam lab`: the embedded demonstration, on this machine, as root.

Two network namespaces joined by a veth pair, a daemon in each (counters from files the
lab writes, signal failure takes the port out of service), then: discovery, a signal
degrade and a signal failure on one side (the port is blocked: a ping across the pair
fails while OAM keeps flowing), the peer logging the remote event from the Event
Notification, `clear`, recovery.  `show port` is printed at each step.  Everything is
torn down at the end, also on Ctrl-C or failure.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from efmoam.daemon.control import ControlError, request
from efmoam.views import text as render

SIDES = ("a", "b")
ADDRESSES = {"a": "192.0.2.1", "b": "192.0.2.2"}  # TEST-NET-1, inside the lab's namespaces only
MACS = {"a": "02:00:5e:00:0a:01", "b": "02:00:5e:00:0b:01"}


class LabError(Exception):
    """A step of the lab did not happen in time; the message says which."""


def _config(work: Path, side: str) -> str:
    return f"""\
daemon:
  control_socket: {work}/{side}.sock
  state_dir: {work}/state-{side}
  counter_interval: 0.2
ports:
  - match: lab{side}
    transmit_interval: 0.5
    counter_source: file
    counter_file: {work}/counters-{side}.json
    action_backend: block
    link_monitoring:
      enabled: true
      errored_frame: {{enabled: true, sf_threshold: 5, sd_threshold: 2}}
      local_sf_action: {{port_action: out-of-service, event_burst: 2}}
      peer_actions: {{event_notification: log-only}}
"""


class Lab:
    """The namespaces, the daemons and the steps."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        tag = uuid.uuid4().hex[:6]
        self.netns = {side: f"efmoam-lab-{side}-{tag}" for side in SIDES}
        self.work = Path(tempfile.mkdtemp(prefix="efmoam-lab-"))
        self.daemons: dict[str, subprocess.Popen[bytes]] = {}
        self.errors = {side: 0 for side in SIDES}

    # -- plumbing ----------------------------------------------------------------------

    def _ip(self, *args: str, side: str | None = None) -> None:
        command = ["ip", *(("-n", self.netns[side]) if side else ()), *args]
        subprocess.run(command, check=True, capture_output=True)

    def build(self) -> None:
        for side in SIDES:
            self._ip("netns", "add", self.netns[side])
        self._ip("link", "add", "laba", "netns", self.netns["a"], "address", MACS["a"], "type", "veth",
                 "peer", "name", "labb", "netns", self.netns["b"], "address", MACS["b"])  # fmt: skip
        for side in SIDES:
            self._ip("link", "set", "lo", "up", side=side)
            self._ip("link", "set", f"lab{side}", "up", side=side)
            self._ip("addr", "add", f"{ADDRESSES[side]}/24", "dev", f"lab{side}", side=side)
            self.write_counters(side)
            (self.work / f"{side}.yaml").write_text(_config(self.work, side))

    def start(self) -> None:
        for side in SIDES:
            log = open(self.work / f"{side}.log", "wb")  # noqa: SIM115 - lives as long as the daemon
            command = ["ip", "netns", "exec", self.netns[side], sys.executable, "-m", "efmoam.cli", "daemon",
                       "-c", str(self.work / f"{side}.yaml")]  # fmt: skip
            self.daemons[side] = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)

    def teardown(self) -> None:
        for process in self.daemons.values():
            if process.poll() is None:
                process.terminate()
        for process in self.daemons.values():
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
        for netns in self.netns.values():
            subprocess.run(["ip", "netns", "del", netns], check=False, capture_output=True)
        shutil.rmtree(self.work, ignore_errors=True)

    def write_counters(self, side: str) -> None:
        counters = {f"lab{side}": {"errored_frames": self.errors[side], "frames_received": 1000}}
        path = self.work / f"counters-{side}.json"
        path.with_suffix(".tmp").write_text(json.dumps(counters))
        path.with_suffix(".tmp").replace(path)

    def ask(self, side: str, op: str, **args: Any) -> Any:
        return request(str(self.work / f"{side}.sock"), op, args)

    def view(self, side: str) -> dict[str, Any]:
        result = self.ask(side, "show_port", port=f"lab{side}")
        assert isinstance(result, dict)
        return result

    def ping(self) -> bool:
        command = ["ip", "netns", "exec", self.netns["a"], "ping", "-c", "1", "-W", "1", ADDRESSES["b"]]
        return subprocess.run(command, check=False, capture_output=True).returncode == 0

    def wait(self, what: str, condition: Callable[[], bool], timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for side, process in self.daemons.items():
                if process.poll() is not None:
                    log = (self.work / f"{side}.log").read_text(errors="replace")
                    raise LabError(f"the daemon of side {side} stopped:\n{log}")
            try:
                if condition():
                    return
            except ControlError:
                pass  # the daemon is still starting
            time.sleep(0.1)
        raise LabError(f"timed out waiting for {what}")

    # -- the walk-through --------------------------------------------------------------

    def say(self, text: str) -> None:
        self.out.write(f"\n### {text}\n")
        self.out.flush()

    def show(self, side: str, part: str = "port") -> None:
        view = self.view(side)
        text = {"port": render.render_port, "event-log": render.render_event_log}[part](view)
        self.out.write(f"$ efmoam show port lab{side}{'' if part == 'port' else ' ' + part}   # in namespace {side}\n")
        self.out.write(text)
        self.out.flush()

    def walk(self) -> None:
        self.say("1. Two namespaces joined by a veth pair, a daemon in each: discovery")
        self.wait("discovery", lambda: all(self.view(s)["oper_status"] == "operational" for s in SIDES))
        self.out.write(render.render_summary(self.ask("a", "show_ports")["ports"]))
        self.show("a")
        self.out.write(f"ping across the pair: {'ok' if self.ping() else 'FAILED'}\n")

        self.say("2. Three errored frames in one second on side a: a signal degrade (logged, port stays in service)")
        self.errors["a"] += 3
        self.write_counters("a")
        self.wait("the degrade", lambda: any(e["severity"] == "sd" for e in self.view("a")["event_log"]))
        self.show("a", "event-log")

        self.say("3. Twenty errored frames: a signal failure; side a takes its port out of service")
        self.errors["a"] += 20
        self.write_counters("a")
        self.wait("the failure", lambda: self.view("a")["out_of_service"])
        view = self.view("a")
        blocked = not self.ping()
        self.out.write(
            f"port out of service ({', '.join(view['out_of_service_reasons'])}); "
            f"ping across the pair now {'fails' if blocked else 'STILL WORKS'}; "
            f"OAM still {view['oper_status']}\n"
        )
        self.show("a")

        self.say("4. Side b logged the remote event from the Event Notification")
        self.wait("the remote event", lambda: any(e["location"] == "remote" for e in self.view("b")["event_log"]))
        self.show("b", "event-log")

        self.say("5. efmoam clear port laba events: back in service")
        self.ask("a", "clear_events", port="laba")
        self.wait("recovery", lambda: not self.view("a")["out_of_service"])
        self.wait("traffic", self.ping, timeout=5.0)
        self.out.write("ping across the pair: ok\n")
        self.show("a", "event-log")
        if not blocked:
            raise LabError("the ping went through while the port was out of service")


@contextmanager
def _lab(out: TextIO) -> Iterator[Lab]:
    lab = Lab(out)
    try:
        lab.build()
        lab.start()
        yield lab
    finally:
        lab.teardown()


def run_lab(out: TextIO = sys.stdout) -> int:
    """Run the walk-through; 0 when every step happened, 1 otherwise."""
    missing = [tool for tool in ("ip", "nft", "ping") if shutil.which(tool) is None]
    if missing:
        out.write(f"efmoam lab needs {', '.join(missing)} (Debian: iproute2, nftables, iputils-ping)\n")
        return 1
    try:
        with _lab(out) as lab:
            lab.walk()
    except (LabError, subprocess.CalledProcessError, ControlError) as exc:
        out.write(f"\nlab failed: {exc}\n")
        return 1
    except KeyboardInterrupt:
        out.write("\ninterrupted; everything was torn down\n")
        return 130
    out.write("\nlab complete; namespaces and daemons removed\n")
    return 0
