"""Record two of our daemons in network namespaces: ``pcaps/daemon/lab.pcapng`` (root).

Run from the repository root, as root, with tshark installed::

    python tests/replay/capture_daemons.py [--out pcaps/daemon/lab.pcapng]

Two namespaces joined by a veth pair (veth0 02:00:00:00:aa:01 in A, veth1
02:00:00:00:bb:01 in B), one ``efmoam daemon`` in each (1 s keep-alives, link
monitoring with counters from files, loopback processed, every action log-only), and
tshark on veth1.  The script walks through the scenarios of the daemon issue, in order:

1. B starts alone (Discovery from ACTIVE_SEND_LOCAL), A starts 3 s later: discovery;
2. errored frames on A: a signal failure, an Event Notification burst of two, Critical
   Event set while it lasts;
3. ``clear`` on A: Critical Event goes;
4. A puts B into remote loopback, then takes it out;
5. A asks B for three attributes (``efmoam variables``): a Variable Request and its
   Response, one attribute answered "not supported";
6. A stops (Dying Gasp); B hears nothing for longer than the lost-link time and goes
   back to ACTIVE_SEND_LOCAL.

A signal degrade sends nothing and a link fault on a veth pair stops every frame, so
those two scenarios are in ``pcaps/engine/`` only.  Unlike ``pcaps/engine`` the recording is not
deterministic (real timers); the committed capture is one run, and its expectations
file describes that run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from efmoam.daemon.control import ControlError, request  # noqa: E402
from tests.linux.netns import capture_slow_protocols, veth_pair  # noqa: E402

CONFIG = """\
daemon:
  control_socket: {work}/{side}.sock
  state_dir: {work}/state-{side}
  counter_interval: 0.2
  dying_gasp_on_shutdown: true
ports:
  - match: {port}
    transmit_interval: 1.0
    loopback: process
    counter_source: file
    counter_file: {work}/counters-{side}.json
    action_backend: log-only
    link_monitoring:
      enabled: true
      errored_frame: {{enabled: true, window: 1, sf_threshold: 5, sd_threshold: 2}}
      local_sf_action: {{port_action: out-of-service, event_burst: 2, critical_event: true}}
      peer_actions: {{link_fault: log-only, dying_gasp: log-only, critical_event: log-only,
                      event_notification: log-only}}
"""
PORTS = {"a": "veth0", "b": "veth1"}


def wait(what: str, condition: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except (ControlError, OSError):
            pass
        time.sleep(0.1)
    raise SystemExit(f"timed out waiting for {what}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=REPO / "pcaps" / "daemon" / "lab.pcapng")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root (network namespaces)")
    work = Path(tempfile.mkdtemp(prefix="efmoam-capture-"))
    env = dict(os.environ, PYTHONPATH=str(REPO))
    processes: list[subprocess.Popen[bytes]] = []

    def counters(side: str, errored: int) -> None:
        path = work / f"counters-{side}.json"
        values = {PORTS[side]: {"errored_frames": errored, "frames_received": 1000}}
        path.with_suffix(".tmp").write_text(json.dumps(values))
        path.with_suffix(".tmp").replace(path)

    def ask(side: str, op: str, **fields: object) -> object:
        return request(str(work / f"{side}.sock"), op, {"port": PORTS[side], **fields})

    def state(side: str) -> str:
        view = ask(side, "show_port")
        assert isinstance(view, dict)
        return str(view["discovery_state"])

    with veth_pair() as (ns_a, ns_b):
        namespaces = {"a": ns_a, "b": ns_b}
        daemons: dict[str, subprocess.Popen[bytes]] = {}
        for side in "ab":
            counters(side, 0)
            (work / f"{side}.yaml").write_text(CONFIG.format(work=work, side=side, port=PORTS[side]))
        capture = capture_slow_protocols(ns_b, "veth1", str(work / "lab.pcapng"))
        processes.append(capture)
        try:
            time.sleep(2)

            def start(side: str) -> None:
                log = (work / f"{side}.log").open("wb")
                command = [
                    "ip",
                    "netns",
                    "exec",
                    namespaces[side],
                    sys.executable,
                    "-m",
                    "efmoam.cli",
                    "daemon",
                    "-c",
                    str(work / f"{side}.yaml"),
                ]
                daemons[side] = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
                processes.append(daemons[side])

            start("b")
            time.sleep(3)
            start("a")
            wait("discovery", lambda: state("a") == state("b") == "SEND_ANY")
            time.sleep(3)
            counters("a", 10)  # a signal failure on A's next window
            time.sleep(4)
            ask("a", "clear_events", location=None)
            time.sleep(3)
            ask("a", "loopback", enable=True)
            time.sleep(3)
            ask("a", "loopback", enable=False)
            time.sleep(3)
            ask("a", "variables", leaves=[251, 239, 999])  # two answers, one "not supported"
            time.sleep(3)
            daemons["a"].terminate()  # Dying Gasp
            daemons["a"].wait(timeout=10)
            time.sleep(9)  # B's lost-link time passes
        finally:
            for process in reversed(processes):
                if process.poll() is None:
                    process.terminate()
                    process.wait(timeout=10)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes((work / "lab.pcapng").read_bytes())
    print(f"{args.out}: {args.out.stat().st_size} octets; daemon logs in {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
