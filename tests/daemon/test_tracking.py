"""Tracked conditions (``track``).

Without a network namespace: `Tracking` with real child processes on the daemon's loop and
a stand-in for the port (what it tells the engine is recorded).  In the lab (root): a port
tracking a dummy interface and a file-existence command; the flag reaches the peer.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from efmoam.core.policy.settings import PolicySettings, Track, TrackKind
from efmoam.daemon.journal import Journal
from efmoam.daemon.tracking import Tracking
from efmoam.linux.netlink import Link
from tests.daemon.children import LoopHarness
from tests.daemon.lab import Lab, run

# -- without a namespace -----------------------------------------------------------------


class Engine:
    """Records what the port's engine is told."""

    def __init__(self) -> None:
        self.told: list[tuple[str, bool]] = []
        self.tracked: set[str] = set()

    def set_tracked(self, name: str, active: bool, *, now: float) -> None:
        self.told.append((name, active))
        if active:
            self.tracked.add(name)
        else:
            self.tracked.discard(name)


class Port:
    """What `Tracking` uses of a `PortRuntime`."""

    def __init__(self, name: str, *tracks: Track) -> None:
        self.name = name
        self.port = Engine()
        self.flushes = 0
        self.errors: list[BaseException] = []
        self.configure(*tracks)

    def configure(self, *tracks: Track) -> None:
        self.profile = SimpleNamespace(settings=SimpleNamespace(policy=PolicySettings(track=tracks)))

    def flush(self, _now: float) -> None:
        self.flushes += 1

    def internal_error(self, _now: float, _where: str, exc: BaseException, **_fields: Any) -> None:
        self.errors.append(exc)


def link(name: str, *, admin_up: bool = True, carrier: bool = True) -> Link:
    return Link(
        ifindex=hash(name) % 1000 + 1, name=name, mac="02:00:00:00:00:01", admin_up=admin_up, carrier=carrier,
        operstate="up" if carrier else "down", arphrd=1, kind="dummy", mtu=1500, flags=0,
    )  # fmt: skip


class Bench(LoopHarness):
    """`Tracking` on the daemon's loop with its `Commands`, driven the way the daemon drives them."""

    def __init__(self, limit: int = 32, systemctl: tuple[str, ...] | None = None) -> None:
        super().__init__(limit)
        extra = {} if systemctl is None else {"systemctl": systemctl}
        self.tracking = Tracking(self.commands, Journal(self.log), **extra)

    def due(self, now: float) -> None:
        super().due(now)
        self.tracking.service(now)

    def deadlines(self) -> list[float | None]:
        return [*super().deadlines(), self.tracking.next_deadline()]


@pytest.fixture
def bench() -> Iterator[Bench]:
    built = Bench()
    yield built
    built.close()


def test_an_interface_is_true_while_absent_down_or_without_carrier(bench: Bench) -> None:
    track = Track(TrackKind.INTERFACE, "uplink0")
    assert track.name == "interface:uplink0"
    port = Port("eth0", track)
    tracking = bench.tracking
    tracking.set_links([link("eth0")], bench.now())
    tracking.follow(port, bench.now())  # type: ignore[arg-type]
    assert port.port.told == [("interface:uplink0", True)]  # absent
    for links, told in (
        ([link("uplink0", admin_up=False, carrier=False)], []),  # still true: not told again
        ([link("uplink0", carrier=False)], []),
        ([link("uplink0")], [("interface:uplink0", False)]),
        ([link("uplink0"), link("eth0")], []),
        ([link("uplink0", carrier=False)], [("interface:uplink0", True)]),
        ([link("uplink0")], [("interface:uplink0", False)]),
        ([], [("interface:uplink0", True)]),
    ):
        port.port.told.clear()
        tracking.set_links(links, bench.now())
        assert port.port.told == told, links
    assert port.flushes == 5 and port.errors == []
    assert tracking.conditions("eth0") == {"interface:uplink0": True}
    assert len(bench.lines("tracked condition true")) == 3  # each change logged once
    assert len(bench.lines("tracked condition false")) == 2
    assert "detail=absent" in bench.lines("tracked condition true")[0]
    assert tracking.next_deadline() is None  # nothing polled


def test_the_first_value_is_told_even_when_false(bench: Bench) -> None:
    """The engine's value may have been restored from the saved state."""
    port = Port("eth0", Track(TrackKind.INTERFACE, "uplink0"))
    bench.tracking.set_links([link("uplink0")], bench.now())
    bench.tracking.follow(port, bench.now())  # type: ignore[arg-type]
    assert port.port.told == [("interface:uplink0", False)]
    assert bench.lines("tracked condition false")[0].split(" ")[1] == "INFO"  # not a change: info


def test_a_command_is_true_while_it_fails(bench: Bench, tmp_path: Path) -> None:
    flag = tmp_path / "fault"
    track = Track(TrackKind.COMMAND, ("test", "!", "-e", str(flag)), interval=0.5, name="no-fault-file")
    port = Port("eth0", track)
    bench.tracking.follow(port, bench.now())  # type: ignore[arg-type]
    assert port.port.told == []  # not known before its first run
    assert bench.tracking.next_deadline() is not None
    bench.run_until(lambda: port.port.told)
    assert port.port.told == [("no-fault-file", False)]
    flag.touch()
    bench.run_until(lambda: len(port.port.told) == 2)
    assert port.port.told[1] == ("no-fault-file", True)
    assert 'detail="exit status 1"' in bench.lines("tracked condition true")[0]
    bench.run_for(1.2)  # checks go on; nothing changed, nothing told
    assert len(port.port.told) == 2
    flag.unlink()
    bench.run_until(lambda: len(port.port.told) == 3)
    assert port.port.told[2] == ("no-fault-file", False)
    assert port.errors == []


def test_a_unit_is_checked_with_systemctl(tmp_path: Path) -> None:
    """systemctl stood in for by a shell that says whether its last argument is active."""
    active = tmp_path / "active"
    active.write_text("good.service\n")
    fake = ("/bin/sh", "-c", f'grep -qx -- "$1" {active}', "systemctl")  # $1: the unit
    bench = Bench(systemctl=fake)
    try:
        good, bad = Track(TrackKind.UNIT, "good.service", interval=0.5), Track(TrackKind.UNIT, "bad.service")
        port = Port("eth0", good, bad)
        bench.tracking.follow(port, bench.now())  # type: ignore[arg-type]
        bench.run_until(lambda: len(port.port.told) == 2)
        assert sorted(port.port.told) == [("unit:bad.service", True), ("unit:good.service", False)]
        active.write_text("")
        bench.run_until(lambda: len(port.port.told) == 3)
        assert port.port.told[2] == ("unit:good.service", True)
    finally:
        bench.close()


def test_the_real_systemctl_argv() -> None:
    from efmoam.daemon.tracking import SYSTEMCTL

    assert SYSTEMCTL == ("systemctl", "is-active", "--quiet", "--")


def test_a_check_that_times_out_is_true_and_logged_once(bench: Bench) -> None:
    track = Track(TrackKind.COMMAND, ("sleep", "5"), interval=0.5, name="slow")
    port = Port("eth0", track)
    bench.tracking.follow(port, bench.now())  # type: ignore[arg-type]
    bench.run_until(lambda: port.port.told)
    assert port.port.told == [("slow", True)]
    bench.run_for(1.3)  # two more timeouts
    assert bench.commands.timed_out >= 2
    assert len(bench.lines("tracked condition check failed")) == 1
    assert "timed out after 0.5 s" in bench.lines("tracked condition check failed")[0]
    assert port.port.told == [("slow", True)]


def test_a_check_that_cannot_start_is_true_and_logged_once(bench: Bench, tmp_path: Path) -> None:
    track = Track(TrackKind.COMMAND, (str(tmp_path / "missing"),), interval=0.5, name="missing")
    port = Port("eth0", track)
    bench.tracking.follow(port, bench.now())  # type: ignore[arg-type]
    bench.run_until(lambda: port.port.told)
    bench.run_for(1.2)
    assert port.port.told == [("missing", True)]
    [line] = bench.lines("tracked condition check failed")
    assert "No such file" in line


def test_one_run_per_condition_at_a_time(bench: Bench, tmp_path: Path) -> None:
    record = tmp_path / "runs"
    script = f"echo start >> {record}; sleep 0.4; echo end >> {record}"
    track = Track(TrackKind.COMMAND, ("/bin/sh", "-c", script), interval=0.5, name="slowish")
    port = Port("eth0", track)
    bench.tracking.follow(port, bench.now())  # type: ignore[arg-type]
    bench.run_for(2.0)
    lines = record.read_text().split()
    assert lines[: len(lines) // 2 * 2] == ["start", "end"] * (len(lines) // 2)
    assert 2 <= len(lines) // 2 <= 5


def test_busy_is_logged_and_the_check_retried() -> None:
    bench = Bench(limit=1)
    try:
        hog = Track(TrackKind.COMMAND, ("sleep", "0.6"), interval=1.0, name="hog")
        quick = Track(TrackKind.COMMAND, ("true",), interval=0.5, name="quick")
        port = Port("eth0", hog, quick)
        bench.tracking.follow(port, bench.now())  # type: ignore[arg-type]
        bench.run_until(lambda: ("quick", False) in port.port.told, timeout=4.0)  # not starved by hog
        assert len(bench.lines("busy, too many commands running port=eth0 track=quick")) == 1
    finally:
        bench.close()


def test_reprofile_keeps_drops_and_adds_conditions(bench: Bench) -> None:
    one, two = Track(TrackKind.INTERFACE, "one"), Track(TrackKind.INTERFACE, "two")
    port = Port("eth0", one, two)
    bench.tracking.set_links([link("one", carrier=False)], bench.now())
    bench.tracking.follow(port, bench.now())  # type: ignore[arg-type]
    assert port.port.tracked == {"interface:one", "interface:two"}
    port.port.told.clear()
    three = Track(TrackKind.INTERFACE, "three")
    port.configure(one, three)  # two dropped (it was true), three added
    bench.tracking.follow(port, bench.now())  # type: ignore[arg-type]
    assert port.port.told == [("interface:two", False), ("interface:one", True), ("interface:three", True)]
    assert port.port.tracked == {"interface:one", "interface:three"}
    assert bench.tracking.conditions("eth0") == {"interface:one": True, "interface:three": True}
    port.configure()
    bench.tracking.follow(port, bench.now())  # type: ignore[arg-type]
    assert port.port.tracked == set()
    assert bench.tracking.conditions("eth0") == {}


def test_a_forgotten_port_hears_nothing_more(bench: Bench) -> None:
    track = Track(TrackKind.COMMAND, ("sleep", "0.2"), interval=0.5, name="late")
    port = Port("eth0", track)
    bench.tracking.follow(port, bench.now())  # type: ignore[arg-type]
    bench.run_until(lambda: bench.commands.running == 1)
    bench.tracking.forget("eth0")
    bench.run_until(lambda: bench.commands.running == 0)
    bench.run_for(0.3)
    assert port.port.told == [] and bench.tracking.next_deadline() is None


def test_an_engine_error_is_the_ports(bench: Bench) -> None:
    port = Port("eth0", Track(TrackKind.INTERFACE, "x"))

    def broken(_name: str, _active: bool, *, now: float) -> None:
        raise RuntimeError("engine bug")

    port.port.set_tracked = broken  # type: ignore[method-assign]
    bench.tracking.follow(port, bench.now())  # type: ignore[arg-type]
    assert [str(exc) for exc in port.errors] == ["engine bug"]


# -- in the lab --------------------------------------------------------------------------


def critical(view: dict[str, Any]) -> bool:
    return "critical_event" in view["local_flags"]


def peer_critical(view: dict[str, Any]) -> bool:
    return view["peer"] is not None and "critical_event" in view["peer"]["flags"]


def add_tracked_interface(lab: Lab) -> None:
    """trk0 in A's namespace, down: a dummy interface, or (a kernel without the dummy
    driver) one end of a veth pair whose other end is up, so that trk0 up has carrier."""
    dummy = run(["ip", "-n", lab.ns_a, "link", "add", "trk0", "type", "dummy"], check=False)
    if dummy.returncode != 0:
        run(["ip", "-n", lab.ns_a, "link", "add", "trk0", "type", "veth", "peer", "name", "trk1"])
        run(["ip", "-n", lab.ns_a, "link", "set", "trk1", "up"])


@pytest.mark.root
def test_a_tracked_interface_sends_critical_event(lab: Lab) -> None:
    add_tracked_interface(lab)
    lab.a.overrides = {"defaults": {"track": [{"interface": "trk0"}]}}
    lab.start()
    lab.wait_view(lab.a, critical, 10.0, "A's local critical event while trk0 is down")
    lab.wait_view(lab.b, peer_critical, 10.0, "B to see A's Critical Event flag")
    assert lab.a.log_lines("tracked condition true.*track=interface:trk0")
    run(["ip", "-n", lab.ns_a, "link", "set", "trk0", "up"])
    lab.wait_view(lab.a, lambda view: not critical(view), 10.0, "A's critical event cleared with trk0 up")
    lab.wait_view(lab.b, lambda view: not peer_critical(view), 10.0, "B to see the flag cleared")
    assert len(lab.a.log_lines("tracked condition false.*track=interface:trk0")) == 1
    run(["ip", "-n", lab.ns_a, "link", "del", "trk0"])  # gone: true again
    lab.wait_view(lab.a, critical, 10.0, "A's critical event again with trk0 deleted")


@pytest.mark.root
def test_a_tracked_command_sends_critical_event(lab: Lab, tmp_path: Path) -> None:
    flag = Path("/tmp") / f"efmoam-track-{lab.ns_a}"
    try:
        command = {"command": ["test", "!", "-e", str(flag)], "interval": 0.5, "name": "fault-file"}
        lab.a.overrides = {"defaults": {"track": [command]}}
        lab.start()
        flag.touch()
        lab.wait_view(lab.a, critical, 10.0, "A's local critical event while the file exists")
        lab.wait_view(lab.b, peer_critical, 10.0, "B to see A's Critical Event flag")
        assert lab.a.log_lines("tracked condition true.*track=fault-file")
        flag.unlink()
        lab.wait_view(lab.a, lambda view: not critical(view), 10.0, "A's critical event cleared")
        lab.wait_view(lab.b, lambda view: not peer_critical(view), 10.0, "B to see the flag cleared")
    finally:
        flag.unlink(missing_ok=True)
