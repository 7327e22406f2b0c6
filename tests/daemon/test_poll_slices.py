"""The counter poll in slices (issue 18, `efmoam.daemon.polling`): a wake-up reads ports for about `SLICE`, the
rest go on in the next one (which comes at once); every port's frames leave as soon as
its sample is read, and what else the samples caused is carried out once every port is
read, or earlier, before the port's own next input, so a port's outputs keep their order.

The daemon is real (not started: its loop's jobs are called as a wake-up calls them) and
runs on a clock these tests move; the ports are real engines in real `PortRuntime`s, whose
socket records what it is given."""

from __future__ import annotations

import io
import json
import math
import time
from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml

from efmoam.config.loader import load_config_text
from efmoam.config.model import CounterSource
from efmoam.core import OamPort, Transmit
from efmoam.core.linkmon import CounterSample
from efmoam.daemon import main, polling
from efmoam.daemon.journal import Journal
from efmoam.daemon.policing import RxPolicer
from efmoam.daemon.runtime import PortRuntime
from efmoam.linux.actions import make_backend
from efmoam.linux.counters import FileSource, RtnetlinkSource
from efmoam.linux.netlink import RtnlClient
from pdu import Code, Flag


class Clock:
    """Monotonic seconds that move only when told (`step` per reading, to cost time)."""

    def __init__(self) -> None:
        self.now = 100.0
        self.step = 0.0

    def __call__(self) -> float:
        self.now += self.step
        return self.now


class Wire:
    """The port's socket: what was sent, in order."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []
        self.send_errors = self.receive_errors = 0  # (what show reads of an `OamSocket`)

    def send(self, frame: bytes) -> bool:
        self.sent.append(frame)
        return True

    def read_kernel_drops(self) -> int:
        return 0

    def close(self) -> None:
        pass


SETTINGS = {
    "daemon": {"counter_interval": 1.0},
    "defaults": {
        "counter_source": "file",
        "link_monitoring": {
            "enabled": True,
            "errored_frame": {"enabled": True, "window": 1, "sf_threshold": 5},
            "errored_frame_period": {"enabled": False},
            "errored_frame_seconds": {"enabled": False},
        },
    },
    "ports": [{"match": "p*"}],
}


def daemon_with_ports(
    tmp_path: Path, count: int, defaults: dict[str, Any] | None = None, spread: float = 0.0
) -> tuple[main.Daemon, Clock, io.StringIO]:
    """`count` ports p0, p1, ... with their link up, port i made `spread` x i seconds
    after the first (its keep-alives' phase)."""
    clock, log = Clock(), io.StringIO()
    settings = {
        **SETTINGS, "daemon": {**SETTINGS["daemon"], "state_dir": str(tmp_path)},
        "defaults": {**SETTINGS["defaults"], "counter_file": str(tmp_path / "counters.json"), **(defaults or {})},
    }  # fmt: skip
    config = load_config_text(yaml.safe_dump(settings))
    daemon = main.Daemon(config, None, Journal(log, journald=False), clock=clock)
    source = FileSource(tmp_path / "counters.json")
    now = clock()
    for index in range(count):
        name = f"p{index}"
        profile = config.profile_for(name, physical=False)
        assert profile is not None
        made = now + index * spread
        port = OamPort(profile.settings, f"02:00:00:00:{index >> 8:02x}:{index & 0xFF:02x}", now=made)
        port.set_link(True, now=made, speed_mbps=10_000)
        port.take_outputs()
        daemon.ports[name] = PortRuntime(
            name=name, ifindex=index + 1, port=port, sock=Wire(), profile=profile, counters=source,  # type: ignore[arg-type]
            actions=make_backend("log-only"), policer=RxPolicer(100.0, 100.0, now), services=daemon.services,
        )  # fmt: skip
    return daemon, clock, log


def write_counters(tmp_path: Path, count: int, errored: int, frames: int) -> None:
    document = {f"p{i}": {"errored_frames": errored, "frames_received": frames} for i in range(count)}
    (tmp_path / "counters.json").write_text(json.dumps(document))


def sent_codes(daemon: main.Daemon) -> dict[str, list[int]]:
    return {name: [frame[17] for frame in runtime.sock.sent] for name, runtime in daemon.ports.items()}  # type: ignore[attr-defined]


def test_a_long_poll_is_read_in_slices_and_the_wakeup_after_one_comes_at_once(tmp_path: Path) -> None:
    daemon, clock, _ = daemon_with_ports(tmp_path, 40)
    write_counters(tmp_path, 40, 0, 1000)
    polled: list[str] = []
    real_read = daemon.poll.read

    def poll(runtime: PortRuntime, now: float) -> bool:
        polled.append(runtime.name)
        clock.now += 0.001  # each port's sample costs a millisecond
        return real_read(runtime, now)

    daemon.poll.read = poll  # type: ignore[method-assign]
    wakeups = 0
    while True:
        now = clock()
        daemon.poll.service(daemon.ports, now) if wakeups else daemon._due(now)
        wakeups += 1
        if not daemon.poll.pending and not daemon.poll.carrying:
            break
        assert daemon._wakeup(clock()) == clock.now, "a poll left over: the loop wakes at once"
        assert wakeups < 10
    per_slice = round(polling.SLICE / 0.001)
    assert wakeups == -(-40 // per_slice), "about SLICE of the poll per wake-up"
    assert polled == [f"p{i}" for i in range(40)], "each port once, in order"
    assert daemon._wakeup(clock()) > clock.now  # then nothing until the next poll or deadline
    assert not daemon.guard.errors


def operational_ports(
    tmp_path: Path, ports: int, defaults: dict[str, Any] | None = None
) -> tuple[main.Daemon, Clock, io.StringIO, dict[str, OamPort]]:
    """`ports` operational ports, each having exchanged Information OAMPDUs with a peer
    engine (returned by port name), the clock 4 s on."""
    daemon, clock, log = daemon_with_ports(tmp_path, ports, defaults)
    peers = {name: OamPort(runtime.port.settings, f"02:00:00:ff:{i >> 8:02x}:{i & 0xFF:02x}", now=clock.now)
             for i, (name, runtime) in enumerate(daemon.ports.items())}  # fmt: skip
    for name, peer in peers.items():
        port = daemon.ports[name].port
        peer.set_link(True, now=clock.now, speed_mbps=10_000)
        for step in range(4):  # the Information exchange: Discovery to SEND_ANY both ways
            now = clock.now + step
            for frame in [o.frame for o in port.take_outputs() if isinstance(o, Transmit)]:
                peer.receive(frame, now=now)
            for frame in [o.frame for o in peer.take_outputs() if isinstance(o, Transmit)]:
                port.receive(frame, now=now)
            port.handle_timer(now=now)
            peer.handle_timer(now=now)
        assert port.oper_status.name == "OPERATIONAL", port.oper_status
        port.take_outputs()
    clock.now += 4.0
    return daemon, clock, log, peers


def failing_ports(tmp_path: Path, ports: int) -> tuple[main.Daemon, Clock, io.StringIO]:
    """`ports` operational ports (`operational_ports`) with a baseline sample read, their
    counter file now saying every port is over its SF threshold, the clock at the next
    poll; what was sent and logged so far forgotten."""
    daemon, clock, log, _ = operational_ports(tmp_path, ports)
    write_counters(tmp_path, ports, 0, 1000)
    daemon._due(clock())  # the baseline sample
    while daemon.poll.pending or daemon.poll.carrying:
        daemon.poll.service(daemon.ports, clock())
    for runtime in daemon.ports.values():
        runtime.sock.sent.clear()  # type: ignore[attr-defined]
    log.seek(0)
    log.truncate(0)
    write_counters(tmp_path, ports, 50, 2000)  # every port over its SF threshold
    clock.now = daemon.poll.next_at
    return daemon, clock, log


class Order:
    """What happened to each port, in order: ``frames pN`` (`send_first`), ``rest pN``
    (its kept outputs and the rest of its sample's epilogue carried out)."""

    def __init__(self, patch: pytest.MonkeyPatch) -> None:
        self.seen: list[str] = []
        real_send_first, real_flush = PortRuntime.send_first, PortRuntime.flush

        def send_first(runtime: PortRuntime, now: float) -> None:
            real_send_first(runtime, now)
            self.seen.append(f"frames {runtime.name}")

        def flush(runtime: PortRuntime, now: float) -> None:
            if runtime.kept:
                self.seen.append(f"rest {runtime.name}")
            real_flush(runtime, now)

        patch.setattr(PortRuntime, "send_first", send_first)
        patch.setattr(PortRuntime, "flush", flush)


def raised_lines(log: io.StringIO) -> list[str]:
    return [line for line in log.getvalue().splitlines() if "link event" in line and "cause=raised" in line]


def test_every_port_s_event_notification_leaves_before_anything_is_logged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ports failing at once: each one's Event Notification is on its socket when its sample
    is read; the event lines come after the last port's frame, still in the same poll."""
    ports = 30
    daemon, clock, log = failing_ports(tmp_path, ports)
    order = Order(monkeypatch)
    daemon._due(clock())
    while daemon.poll.pending or daemon.poll.carrying:
        daemon.poll.service(daemon.ports, clock())
    assert not [r.counter_error for r in daemon.ports.values() if r.counter_error], "read"
    assert order.seen == [f"frames p{i}" for i in range(ports)] + [f"rest p{i}" for i in range(ports)]
    for name, codes in sent_codes(daemon).items():
        assert Code.EVENT_NOTIFICATION in codes, name
    assert len(raised_lines(log)) == ports, log.getvalue()
    assert all(not runtime.kept and not runtime.deferred for runtime in daemon.ports.values())
    assert not daemon.guard.errors


def test_at_shutdown_every_port_s_dying_gasp_leaves_before_anything_is_logged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A power loss leaves milliseconds: the Dying Gasp of every port is on its socket
    before the first port's event is logged or saved."""
    ports = 20
    daemon, clock, log, _ = operational_ports(tmp_path, ports)
    for runtime in daemon.ports.values():
        runtime.sock.sent.clear()  # type: ignore[attr-defined]
    order = Order(monkeypatch)
    clock.step = 0.01  # the shutdown waits 0.15 s for the budget's next slot
    monkeypatch.setattr(main, "close_all", lambda sockets: [sock.close() for sock in sockets])  # fake sockets
    daemon._shutdown()
    assert order.seen == [f"frames p{i}" for i in range(ports)] + [f"rest p{i}" for i in range(ports)]
    for name, runtime in daemon.ports.items():
        sent = runtime.sock.sent  # type: ignore[attr-defined]
        assert sent, name
        assert Flag.DYING_GASP in Flag(int.from_bytes(sent[0][15:17], "big")), name
    lines = [line for line in log.getvalue().splitlines() if "type=dyingGaspEvent" in line]
    assert len(lines) == ports
    assert f"dying gasp ports={ports}" in log.getvalue()


def test_the_frames_come_first_across_slices_and_the_next_poll_waits_for_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A poll over several wake-ups: every port's frames, then the rest, over several more;
    a poll due meanwhile begins only once the rest is carried out."""
    ports = 30
    daemon, clock, log = failing_ports(tmp_path, ports)
    order = Order(monkeypatch)
    reads: list[str] = []
    real_read = daemon.poll.read
    monkeypatch.setattr(daemon.poll, "read", lambda runtime, now: reads.append(runtime.name) or real_read(runtime, now))
    clock.step = 0.002  # each reading of the clock costs 2 ms: a slice is a few ports
    wakeups = 0
    daemon._due(clock())
    while daemon.poll.pending or daemon.poll.carrying:
        assert daemon.poll.next_deadline(clock.now, daemon.ports) == clock.now
        clock.now = max(clock.now, daemon.poll.next_at)  # the next poll is due: it must wait
        daemon.poll.service(daemon.ports, clock())
        wakeups += 1
    assert wakeups > 4
    assert reads == list(daemon.ports), "each port read once: no poll began before the rest was carried out"
    assert order.seen == [f"frames p{i}" for i in range(ports)] + [f"rest p{i}" for i in range(ports)]
    assert len(raised_lines(log)) == ports
    assert not daemon.guard.errors


def test_a_port_removed_before_its_turn_carries_out_what_its_sample_caused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    daemon, clock, log = failing_ports(tmp_path, 4)
    order = Order(monkeypatch)
    monkeypatch.setattr(polling, "SLICE", 0.0)  # a port a slice
    daemon._due(clock())
    while daemon.poll.pending:
        daemon.poll.service(daemon.ports, clock())
    assert len(daemon.poll.carrying) == 4
    order.seen.clear()
    order.seen.append("remove p2")
    daemon._remove_port("p2", "test")
    while daemon.poll.carrying:
        daemon.poll.service(daemon.ports, clock())
    assert order.seen == ["remove p2", "rest p2", "rest p0", "rest p1", "rest p3"]
    assert len(raised_lines(log)) == 4 and not daemon.guard.errors


def test_at_shutdown_the_poll_reads_no_more_and_carries_out_what_it_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    daemon, clock, _ = failing_ports(tmp_path, 6)
    order = Order(monkeypatch)
    clock.step = 0.004  # a slice: about 3 ports
    daemon._due(clock())
    assert daemon.poll.pending and daemon.poll.carrying
    read = [seen for seen in order.seen if seen.startswith("frames")]
    gone = daemon.ports.pop("p0")  # removed behind the poll's back: its outputs are not carried out here
    daemon.poll.finish(daemon.ports, clock())
    assert not daemon.poll.pending and not daemon.poll.carrying
    assert [seen for seen in order.seen if seen.startswith("rest")] == [
        seen.replace("frames", "rest") for seen in read if seen != "frames p0"
    ]
    assert gone.kept and gone.port.postponed
    daemon.poll.service(daemon.ports, clock.now + 5.0)  # no poll begins any more
    assert not daemon.poll.pending and daemon.poll.next_deadline(clock.now, daemon.ports) == math.inf
    assert not daemon.guard.errors


def test_a_reload_s_interval_applies_from_the_next_poll_and_rtnetlink_reads_share_the_poll_s_dump(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    daemon, clock, _ = daemon_with_ports(tmp_path, 3)
    source = RtnetlinkSource(RtnlClient(), max_age=0.0)
    monkeypatch.setattr(polling, "open_counter_source", lambda *_args, **_kw: source)
    profile = attrs.evolve(daemon.ports["p0"].profile, counter_source=CounterSource.RTNETLINK, counter_file=None)
    assert daemon.poll.source_for(profile) is source and source.max_age == 0.5  # half of counter_interval 1 s
    asked: list[float | None] = []
    monkeypatch.setattr(RtnetlinkSource, "read_index", lambda _self, *args: asked.append(args[-1]) or CounterSample())
    for runtime in daemon.ports.values():
        runtime.counters = source
    clock.step = 0.02  # a slice per port
    daemon._due(clock())
    while daemon.poll.pending or daemon.poll.carrying:
        daemon.poll.service(daemon.ports, clock())
    assert len(asked) == 3 and len(set(asked)) == 1, "the slices read at the poll's start: one dump"
    next_at = daemon.poll.next_at
    daemon.poll.set_interval(0.2, clock.now)
    assert source.max_age == 0.1 and daemon.poll.next_at == min(next_at, clock.now + 0.2)
    source.close()


def test_a_port_s_next_input_carries_out_what_the_poll_kept_first(tmp_path: Path) -> None:
    """The kept outputs of a sample go before those of the port's next input (here the
    clear command, which ends the event the sample raised): the log says raised, then
    cleared, as it happened."""
    daemon, clock, log = daemon_with_ports(tmp_path, 1)
    runtime = daemon.ports["p0"]
    now = clock()
    runtime.port.on_counters(CounterSample(errored_frames=0, frames_received=10), now=now)
    runtime.flush(now)
    runtime.port.on_counters(CounterSample(errored_frames=50, frames_received=20), now=now + 1)
    runtime.send_first(now + 1)
    kept: list[Any] = list(runtime.deferred)
    assert kept and not any(type(output).__name__ == "Transmit" for output in kept)
    log.truncate(0)
    runtime.port.clear_events(now=now + 2)
    runtime.flush(now + 2)
    assert not runtime.deferred
    lines = [line for line in log.getvalue().splitlines() if "link event" in line]
    assert [("cause=raised" in line, "cause=clear" in line or "cleared" in line) for line in lines][:1] == [
        (True, False)
    ], lines
    assert len(lines) >= 2 and "cause=raised" not in lines[-1], lines


def test_ports_coming_due_together_are_served_in_slices_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A thousand keep-alives due at once (ports started together): about `SLICE` of them
    a wake-up, the others still due, so the next wake-up comes at once."""
    daemon, clock, _ = daemon_with_ports(tmp_path, 40)
    daemon.poll.next_at = clock.now + 100.0  # no counter poll meanwhile
    served: list[str] = []
    for runtime in daemon.ports.values():
        daemon._deadlines.schedule(runtime)  # every port: a keep-alive due now (just made)

    def timer(runtime: PortRuntime, now: float) -> None:
        served.append(runtime.name)
        clock.now += 0.001  # each costs a millisecond

    monkeypatch.setattr(PortRuntime, "timer", timer)
    clock.now += 1.0
    per_slice = round(polling.SLICE / 0.001)
    daemon._due(clock())
    assert len(served) == per_slice
    assert daemon._wakeup(clock()) <= clock.now, "the others are still due"
    for _ in range(5):
        daemon._due(clock())
    assert sorted(served) == sorted(daemon.ports), "each port once"
    assert not daemon.guard.errors


def test_a_timer_or_frame_input_meanwhile_joins_what_the_poll_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the poll keeps a port's outputs, that port's frame and timer inputs send their
    frames at once and leave the rest after the kept outputs, for the poll to carry out:
    the poll's reads are not slowed by what earlier ports' inputs cause meanwhile."""
    daemon, clock, log = failing_ports(tmp_path, 3)
    monkeypatch.setattr(polling, "SLICE", 0.0)  # a port a slice
    daemon._due(clock())  # p0 read: its Event Notification out, the rest kept
    runtime = daemon.ports["p0"]
    kept = list(runtime.deferred)  # (none: the sample's records wait in the port, `OamPort.postponed`)
    assert runtime.kept and daemon.poll.pending
    sent = len(runtime.sock.sent)  # type: ignore[attr-defined]
    runtime.port.set_local_flags(Flag.LINK_FAULT, True, now=clock.now)  # a new Information, and an event
    runtime.flush_or_keep(clock.now)
    assert len(runtime.sock.sent) > sent, "its frames at once"  # type: ignore[attr-defined]
    assert runtime.deferred[: len(kept)] == kept and len(runtime.deferred) > len(kept), "the rest after the kept"
    assert "link event" not in log.getvalue()
    while daemon.poll.pending or daemon.poll.carrying:
        daemon.poll.service(daemon.ports, clock())
    p0 = [line for line in log.getvalue().splitlines() if "port=p0" in line and "event" in line]
    first_fault = next(i for i, line in enumerate(p0) if "link_fault" in line or "linkFault" in line)
    assert "type=erroredFrameEvent" in p0[0] and first_fault > 0, p0
    assert not runtime.kept and not runtime.deferred and not daemon.guard.errors


def test_the_state_write_waits_for_a_wakeup_with_time_left(tmp_path: Path) -> None:
    """Its fsync can take tens of ms under load: not in a wake-up that already used a slice."""
    daemon, clock, _ = failing_ports(tmp_path, 30)
    state = daemon.services.state
    saves = state.saves
    clock.step = 0.002  # a slice is a few ports
    daemon._due(clock())  # a poll slice: the wake-up's time is used
    assert daemon.poll.pending and state.saves == saves
    while daemon.poll.pending or daemon.poll.carrying:
        daemon._due(clock())
    assert state.dirty, "the failures changed the ports' saved state"
    clock.step = 0.0
    daemon._due(clock())  # a wake-up with time left: the write begins (on the state's worker thread)
    assert state.writing or state.saves == saves + 1
    deadline = time.monotonic() + 10
    while state.writing and time.monotonic() < deadline:
        time.sleep(0.005)
    assert state.saves == saves + 1 and not state.dirty
    assert not daemon.guard.errors
