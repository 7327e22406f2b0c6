"""A port's OAMPDUs wait while its loopback change is on its way to the data plane
(`PortRuntime.set_loopback`), on the real daemon object with real engines (the peer an
engine in-process) and a clock the test moves.  The data plane itself, through the real
daemon and a slow nft, is tested in test_loopback_plane.py.

The actuator is never serviced here: the change stays on its way, as behind a batch of a
thousand ports' actions."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path

from efmoam.core import LoopbackChanged, OamPort, Transmit
from efmoam.daemon import main
from efmoam.daemon.runtime import PortRuntime, loopback_key
from pdu import Code
from tests.daemon.test_poll_slices import Clock, operational_ports

PROCESS = {"loopback": "process"}


def enabled_by_the_peer(tmp_path: Path) -> tuple[main.Daemon, Clock, io.StringIO, PortRuntime, OamPort]:
    """An operational port that has just received its peer's Loopback Control Enable (its
    outputs not taken yet), and the peer; nothing sent so far is kept."""
    daemon, clock, log, peers = operational_ports(tmp_path, 1, PROCESS)
    runtime, peer = daemon.ports["p0"], peers["p0"]
    runtime.sock.sent.clear()  # type: ignore[attr-defined]
    peer.start_loopback(now=clock.now)
    (enable,) = [
        o.frame for o in peer.take_outputs() if isinstance(o, Transmit) and o.frame[17] == Code.LOOPBACK_CONTROL
    ]
    runtime.port.receive(enable, now=clock.now)
    return daemon, clock, log, runtime, peer


def test_the_frames_after_a_loopback_change_wait_for_it_at_most_half_the_lost_link_time(tmp_path: Path) -> None:
    daemon, clock, log, runtime, peer = enabled_by_the_peer(tmp_path)
    sent = runtime.sock.sent  # type: ignore[attr-defined]
    runtime.flush(clock.now)
    assert runtime.wire.paused and daemon.actuator.pending(loopback_key("p0"))
    assert sent == [] and [frame[17] for frame in runtime.wire.held] == [Code.INFORMATION], "held, not sent"
    hold = runtime.port.settings.lost_link_time / 2
    assert runtime.wire_paused_until == clock.now + hold and runtime.next_deadline() <= clock.now + hold
    runtime.timer(clock.now + hold / 2)  # a keep-alive meanwhile waits too
    assert sent == [] and runtime.wire.paused
    runtime.timer(clock.now + hold)
    assert not runtime.wire.paused and [frame[17] for frame in sent][:1] == [Code.INFORMATION]
    assert "loopback data plane not ready; OAMPDUs sent meanwhile port=p0" in log.getvalue()
    peer.receive(sent[0], now=clock.now + hold)
    assert peer.loopback.name == "REMOTE_LOOPBACK"  # the held Information said the port loops back


def test_the_poll_keeps_the_frames_made_after_a_loopback_change(tmp_path: Path) -> None:
    """`send_first` sends frames at once, but not those after a loopback change: they are
    kept, in order, with it."""
    _, clock, _, runtime, _ = enabled_by_the_peer(tmp_path)
    sent = runtime.sock.sent  # type: ignore[attr-defined]
    runtime.send_first(clock.now)
    assert sent == []
    kinds = [type(output) for output in runtime.deferred]
    assert kinds[0] is LoopbackChanged and Transmit in kinds
    runtime.flush(clock.now)  # carried out in order: the change first, so its frames wait
    assert sent == [] and runtime.wire.paused and runtime.wire.held


def test_a_later_input_s_frames_wait_behind_a_kept_loopback_change(tmp_path: Path) -> None:
    """The poll kept a loopback change: a keep-alive due before it is carried out is kept
    behind it, not sent (it would tell the peer of a loopback not yet in place)."""
    _, clock, _, runtime, _ = enabled_by_the_peer(tmp_path)
    sent = runtime.sock.sent  # type: ignore[attr-defined]
    runtime.send_first(clock.now)
    kept = len(runtime.deferred)
    runtime.timer(clock.now + 1.5)  # its next keep-alive (a 1 s transmit interval)
    assert sent == [] and len(runtime.deferred) > kept and Transmit in map(type, runtime.deferred[kept:])


def test_the_change_done_sends_what_waited_and_reports_its_error(tmp_path: Path) -> None:
    """Through the daemon's real actuator and loop: nft refuses (the port is no device
    here), so the error is kept and logged, and the frames that waited go."""
    daemon, clock, log, runtime, _ = enabled_by_the_peer(tmp_path)
    sent = runtime.sock.sent  # type: ignore[attr-defined]
    runtime.flush(clock.now)
    assert runtime.wire.paused and sent == []
    give_up = time.monotonic() + 20
    daemon.loop.run(
        daemon.actuator.service,
        lambda now: now + 0.01,
        lambda: not daemon.actuator.pending(loopback_key("p0")) or time.monotonic() > give_up,
        threading.Lock(),
    )
    assert not daemon.actuator.pending(loopback_key("p0"))
    assert runtime.loopback_error is not None and "p0" in runtime.loopback_error
    assert "loopback action failed port=p0" in log.getvalue()
    assert not runtime.wire.paused and runtime.wire_paused_until is None
    assert [frame[17] for frame in sent][:1] == [Code.INFORMATION]
    assert "not ready" not in log.getvalue()
