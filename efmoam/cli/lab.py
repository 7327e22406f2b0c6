"""`efmoam lab`: the embedded demonstration, on this machine, as root.

Two network namespaces joined by a veth pair, a daemon in each (counters from files the
lab writes, signal failure takes the port out of service), then: discovery, variable
retrieval, remote loopback started and stopped, a signal degrade and a signal failure
on one side (the port is blocked: a ping across the pair fails while OAM keeps
flowing; the metrics endpoint and the daemon's log say so), the peer logging the remote
event from the Event Notification, `clear`, recovery, and the peer's remote event still
active (Clause 57 has no "event ended" message).  Each step prints the command an
operator would type and its output.  Everything is torn down at the end, also on
Ctrl-C or failure.

Root is checked first (one line, exit 1); a command that fails (``ip``, ...) is shown
with its own error message, never just its exit status.
"""

from __future__ import annotations

import json
import os
import re
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
METRICS = "http://127.0.0.1:9717/metrics"  #: each daemon's endpoint, in its own namespace
#: why the peer's remote event outlives the local clear, as the lab says it
WHY_REMOTE_STAYS = (
    "Clause 57 has no message that ends an event: an Event Notification says a threshold was\n"
    "crossed, never that the errors stopped.  So side b keeps its remote erroredFrameEvent\n"
    "active until its own operator clears it (or the link goes down):"
)


_NOTICE = re.compile(r"(^|\s)(NOTICE|WARNING|ERROR)\s")  #: a log line of those levels (timestamped or not)


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
    loopback: process
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
        result = subprocess.run(command, check=False, capture_output=True, text=True)
        if result.returncode != 0:
            said = (result.stderr or result.stdout).strip() or f"exit status {result.returncode}"
            raise LabError(f"`{' '.join(command)}` failed: {said}")

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

    def typed(self, side: str, command: str) -> None:
        """The command an operator would type for what the lab does next."""
        self.out.write(f"$ efmoam {command}   # in namespace {side}\n")
        self.out.flush()

    def show(self, side: str, part: str = "port") -> None:
        view = self.view(side)
        text = {"port": render.render_port, "event-log": render.render_event_log}[part](view)
        self.typed(side, f"show port lab{side}{'' if part == 'port' else ' ' + part}")
        self.out.write(text)
        self.out.flush()

    def variables(self, *leaves: int) -> None:
        self.typed("a", f"variables laba {' '.join(map(str, leaves))}")
        sent = self.ask("a", "variables", port="laba", leaves=list(leaves))
        answers: list[dict[str, Any]] = []

        def answered() -> bool:
            answer = self.ask("a", "variable_answer", port="laba", request=sent["request"])
            answers.append(answer)
            return bool(answer["answered"])

        self.wait("the Variable Response", answered)
        self.out.write(render.render_variables("laba", answers[-1]["variables"]))

    def loopback(self, action: str, status: str) -> None:
        self.typed("a", f"loopback laba {action}")
        result = self.ask("a", "loopback", port="laba", enable=action == "start")
        self.out.write(f"laba: loopback {result['loopback']}\n")
        self.wait(f"loopback {status}", lambda: self.view("a")["loopback"]["status"] == status)
        self.out.write(f"loopback status now {status}\n")

    def metrics_line(self, side: str, family: str) -> None:
        """The line of `family` for the side's port, from its daemon's metrics endpoint."""
        fetch = f"import urllib.request; print(urllib.request.urlopen({METRICS!r}, timeout=3).read().decode())"
        command = ["ip", "netns", "exec", self.netns[side], sys.executable, "-c", fetch]
        result = subprocess.run(command, check=False, capture_output=True, text=True, timeout=10)
        if result.returncode != 0:
            raise LabError(f"the metrics endpoint did not answer: {result.stderr.strip().splitlines()[-1:]}")
        lines = [line for line in result.stdout.splitlines() if line.startswith(family + "{") and f"lab{side}" in line]
        self.out.write(f"$ curl -s {METRICS} | grep {family}   # in namespace {side}\n")
        self.out.write("\n".join(lines or [f"(no {family} line)"]) + "\n")

    def log_excerpt(self, side: str, lines: int = 6) -> None:
        """The daemon's last notices and warnings (its log is standard error, or the journal)."""
        text = (self.work / f"{side}.log").read_text(errors="replace")
        wanted = [line for line in text.splitlines() if _NOTICE.search(line)]
        self.out.write(f"the daemon's log (side {side}), last notices:\n")
        self.out.write("".join(f"  {line}\n" for line in wanted[-lines:]))

    def remote_active(self) -> list[dict[str, Any]]:
        return [e for e in self.view("b")["event_log"] if e["location"] == "remote" and e["active"]]

    def walk(self) -> None:
        self.say("1. Two namespaces joined by a veth pair, a daemon in each: discovery")
        self.wait("discovery", lambda: all(self.view(s)["oper_status"] == "operational" for s in SIDES))
        self.typed("a", "show port")
        self.out.write(render.render_summary(self.ask("a", "show_ports")["ports"]))
        self.show("a")
        self.out.write(f"ping across the pair: {'ok' if self.ping() else 'FAILED'}\n")

        self.say("2. Ask the peer for Clause 30 attributes (variable retrieval)")
        self.variables(251, 239)

        self.say("3. Remote loopback: side b loops side a's frames back, then stops")
        self.loopback("start", "remoteLoopback")
        self.loopback("stop", "noLoopback")

        self.say("4. Three errored frames in one second on side a: a signal degrade (logged, port stays in service)")
        self.errors["a"] += 3
        self.write_counters("a")
        self.wait("the degrade", lambda: any(e["severity"] == "sd" for e in self.view("a")["event_log"]))
        self.show("a", "event-log")

        self.say("5. Twenty errored frames: a signal failure; side a takes its port out of service")
        self.errors["a"] += 20
        self.write_counters("a")
        # decided, then carried out (off the daemon's loop): `action.pending` tells the two apart
        self.wait("the failure", lambda: self.view("a")["out_of_service"] and not self.view("a")["action"]["pending"])
        view = self.view("a")
        blocked = not self.ping()
        self.out.write(
            f"port out of service ({', '.join(view['out_of_service_reasons'])}); "
            f"ping across the pair now {'fails' if blocked else 'STILL WORKS'}; "
            f"OAM still {view['oper_status']}\n"
        )
        self.show("a")
        self.metrics_line("a", "efmoam_port_out_of_service")
        self.log_excerpt("a")

        self.say("6. Side b logged the remote event from the Event Notification")
        self.wait("the remote event", lambda: bool(self.remote_active()))
        self.show("b", "event-log")

        self.say("7. efmoam clear port laba events: back in service; side b's remote event stays")
        self.typed("a", "clear port laba events")
        self.ask("a", "clear_events", port="laba")
        self.out.write("laba: events cleared\n")
        self.wait("recovery", lambda: not self.view("a")["out_of_service"] and not self.view("a")["action"]["pending"])
        self.wait("traffic", self.ping, timeout=5.0)
        self.out.write("ping across the pair: ok\n")
        self.show("a", "event-log")
        still = self.remote_active()
        if not still:
            raise LabError("side b's remote event ended with side a's clear")
        self.out.write(f"{WHY_REMOTE_STAYS}\n")
        self.show("b", "event-log")
        self.typed("b", "clear port labb events remote")
        self.ask("b", "clear_events", port="labb", location="remote")
        self.out.write(f"labb: events cleared (remote); remote events still active: {len(self.remote_active())}\n")
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
    if os.geteuid() != 0:
        out.write("efmoam lab needs root: it creates network namespaces and runs two daemons (try: sudo efmoam lab)\n")
        return 1
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
