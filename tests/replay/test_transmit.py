"""Transmit mode: a recorded speaker sent with its original timing; live against our daemon (root)."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from efmoam.offline.replay.report import observe_file
from efmoam.offline.replay.transmit import run_transmit, speakers_in, transmit
from tests.cli.conftest import subprocess_env
from tests.linux.netns import capture_slow_protocols, needs_root, veth_pair
from tests.replay.frames import BASE_TIME, A, B, conversation, steady, write

REPO = Path(__file__).resolve().parents[2]
EVENTS = REPO / "pcaps" / "interop" / "events.pcapng"
EOAM = "02:00:00:00:0a:02"


class FakeSender:
    def __init__(self, clock: list[float], refuse: int = 0) -> None:
        self.clock = clock
        self.sent: list[tuple[float, bytes]] = []
        self.refuse = refuse
        self.closed = False

    def send(self, frame: bytes) -> bool:
        if self.refuse:
            self.refuse -= 1
            return False
        self.sent.append((self.clock[0], frame))
        return True

    def close(self) -> None:
        self.closed = True


def fake_clock() -> tuple[list[float], object, object]:
    now = [100.0]

    def clock() -> float:
        return now[0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    return now, clock, sleep


def test_frames_of_one_speaker_keep_their_spacing() -> None:
    now, clock, sleep = fake_clock()
    sender = FakeSender(now)
    sent, refused, late = transmit(EVENTS, EOAM, sender, clock=clock, sleep=sleep)  # type: ignore[arg-type]
    assert (sent, refused, late) == (21, 0, 0.0)
    assert {frame[6:12].hex(":") for _, frame in sender.sent} == {EOAM}
    assert len(sender.sent[0][1]) == 50  # sent as recorded: eoam's short frames stay short
    recorded = [r.time for r in _records(EVENTS) if r.data[6:12].hex(":") == EOAM]
    offsets = [t - sender.sent[0][0] for t, _ in sender.sent]
    assert offsets == pytest.approx([t - recorded[0] for t in recorded], abs=1e-6)


def _records(path: Path) -> list:  # type: ignore[type-arg]
    from efmoam.offline.capture import read_capture

    return [r for r in read_capture(path) if r.data[12:14] == b"\x88\x09"]


def test_speaker_must_be_named_among_several(tmp_path: Path) -> None:
    path = write(tmp_path, conversation(2))
    assert speakers_in(path) == {A: 2, B: 2}
    err = io.StringIO()
    assert run_transmit(str(path), "veth9", io.StringIO(), err, open_sender=lambda _: FakeSender([0.0])) == 2
    assert "say which speaker to send with --from" in err.getvalue()
    err = io.StringIO()
    assert run_transmit(str(path), "veth9", io.StringIO(), err, from_mac="02:00:00:00:00:99") == 2
    assert "sends no OAMPDU" in err.getvalue()


def test_a_single_speaker_needs_no_from_and_refusals_exit_one(tmp_path: Path) -> None:
    path = write(tmp_path, [(BASE_TIME + 0.01 * n, steady(A)) for n in range(3)])
    senders: list[FakeSender] = []

    def open_sender(name: str) -> FakeSender:
        assert name == "veth9"
        senders.append(FakeSender([0.0], refuse=1))
        return senders[-1]

    out = io.StringIO()
    assert run_transmit(str(path), "veth9", out, io.StringIO(), open_sender=open_sender) == 1
    assert "sent 2 frames" in out.getvalue() and "1 refused by the kernel" in out.getvalue()
    assert senders[0].closed


def test_interface_that_cannot_be_opened(tmp_path: Path) -> None:
    path = write(tmp_path, conversation(1, skip=(B,)))

    def open_sender(name: str) -> FakeSender:
        raise OSError(19, "No such device")

    err = io.StringIO()
    assert run_transmit(str(path), "nope0", io.StringIO(), err, open_sender=open_sender) == 2
    assert "nope0: No such device" in err.getvalue()


# -- live: eoam's recording against our daemon, in two network namespaces ------------------

DAEMON_CONFIG = """\
daemon:
  control_socket: {work}/b.sock
  state_dir: {work}/state
  dying_gasp_on_shutdown: false
ports:
  - match: veth1
    mode: active
    # what eoam's recorded peer advertised, so that eoam's Remote TLV matches ours
    oui: "00:11:22"
    vendor_info: 1
    max_pdu_size: 1500
    loopback: process
    variable_retrieval: false
    counter_source: file
    counter_file: {work}/counters.json
    action_backend: log-only
    link_monitoring:
      enabled: true
      peer_actions: {{link_fault: log-only, dying_gasp: log-only, critical_event: log-only,
                      event_notification: log-only}}
"""


def _show_port(socket_path: str) -> dict[str, object] | None:
    from efmoam.daemon.control import ControlError, request

    try:
        result = request(socket_path, "show_port", {"port": "veth1"})
    except (ControlError, OSError):
        return None
    return result if isinstance(result, dict) else None


@needs_root
@pytest.mark.root
@pytest.mark.skipif(shutil.which("tshark") is None, reason="needs tshark to capture the exchange")
def test_eoam_recording_against_our_daemon(tmp_path: Path) -> None:
    """eoam's frames replayed onto veth0; our daemon on veth1 discovers it and logs its six events.

    The exchange is captured with tshark on veth1 and observed: the daemon's own frames
    are clean, eoam's keep their quirks.
    """
    work = tmp_path
    (work / "counters.json").write_text(json.dumps({"veth1": {"errored_frames": 0, "frames_received": 0}}))
    (work / "b.yaml").write_text(DAEMON_CONFIG.format(work=work))
    env = subprocess_env()
    with veth_pair() as (ns_a, ns_b):
        log = (work / "daemon.log").open("wb")
        daemon = subprocess.Popen(
            ["ip", "netns", "exec", ns_b, sys.executable, "-m", "efmoam.cli", "daemon", "-c", str(work / "b.yaml")],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        capture = capture_slow_protocols(ns_b, "veth1", str(work / "live.pcapng"))
        try:
            deadline = time.monotonic() + 20
            while _show_port(str(work / "b.sock")) is None:
                assert daemon.poll() is None, (work / "daemon.log").read_text()
                assert time.monotonic() < deadline, "the daemon did not answer"
                time.sleep(0.1)
            time.sleep(2)  # tshark is listening
            replay = subprocess.run(
                [
                    "ip",
                    "netns",
                    "exec",
                    ns_a,
                    sys.executable,
                    "-m",
                    "efmoam.cli",
                    "replay",
                    str(EVENTS),
                    "--to",
                    "veth0",
                    "--from",
                    EOAM,
                ],
                capture_output=True,
                text=True,
                env=env,
                timeout=60,
                check=False,
            )
            assert replay.returncode == 0, replay.stderr
            assert "sent 21 frames" in replay.stdout
            port = _show_port(str(work / "b.sock"))
            time.sleep(1)
        finally:
            capture.terminate()
            capture.wait(timeout=10)
            daemon.terminate()
            daemon.wait(timeout=10)
            log.close()
    assert port is not None
    assert port["peer"]["mac_address"] == EOAM  # type: ignore[index]
    assert port["discovery_state"] == "SEND_ANY", (work / "daemon.log").read_text()
    remote = [e for e in port["event_log"] if e["location"] == "remote"]  # type: ignore[attr-defined]
    assert len(remote) >= 4, port["event_log"]
    observer, problem = observe_file(work / "live.pcapng")
    assert not problem
    summary = observer.summary()
    daemon_mac = [s for s in summary["speakers"] if s != EOAM]
    assert len(daemon_mac) == 1, summary["speakers"].keys()
    ours = summary["speakers"][daemon_mac[0]]
    assert ours["state"] == "SEND_ANY"
    assert ours["finding_counts"] == {}, ours["findings"]
    theirs = summary["speakers"][EOAM]
    assert theirs["counts"] == {"information": 15, "event_notification": 6}
    assert {"short_frame", "missing_end_marker", "implausible_event"} <= theirs["finding_counts"].keys()
