"""``show_ports`` in pages (issue 18: thousands of ports): no request holds the loop for
all of them, and ``efmoam show port`` asks page by page over one connection."""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from efmoam.cli.main import main as cli_main
from efmoam.daemon import control, operations
from efmoam.daemon.control import ControlError, Session, all_ports
from efmoam.daemon.main import Daemon
from tests.cli_runner import CliRunner
from tests.daemon.test_poll_slices import Clock, daemon_with_ports
from tests.robustness.test_control_server import ServerLoop

PORTS = 600


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> tuple[Daemon, Clock]:
    built, clock, _log = daemon_with_ports(tmp_path_factory.mktemp("pages"), PORTS)
    return built, clock


@pytest.fixture
def path() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="efmoam-pages-", dir="/tmp") as directory:
        yield os.path.join(directory, "control.sock")


def show_ports(daemon: Daemon, clock: Clock, **args: Any) -> dict[str, Any]:
    return operations.handle(daemon, "show_ports", args, None, clock.now)  # type: ignore[no-any-return]


def names(result: dict[str, Any]) -> list[str]:
    return [port["name"] for port in result["ports"]]


def test_pages_cover_every_port_once_in_name_order(daemon: tuple[Daemon, Clock]) -> None:
    built, clock = daemon
    every = sorted(built.ports)
    whole = show_ports(built, clock)
    assert names(whole) == every and whole["next"] is None, "without a limit: every port, no next page"
    seen: list[str] = []
    sizes = []
    args: dict[str, Any] = {"limit": 256}
    while True:
        page = show_ports(built, clock, **args)
        sizes.append(len(page["ports"]))
        seen += names(page)
        assert set(page) == {"schema", "ports", "next", "daemon"}
        if page["next"] is None:
            break
        assert page["next"] == seen[-1]
        args = {"limit": 256, "after": page["next"]}
    assert seen == every
    assert sizes == [256, 256, PORTS - 512]
    assert whole["ports"] == show_ports(built, clock, limit=PORTS)["ports"], "a page is the same view"
    # exactly at the end: the last page says so, and a page after the last port is empty
    assert show_ports(built, clock, limit=PORTS)["next"] is None
    assert show_ports(built, clock, after=every[-1], limit=5) == {**whole, "ports": [], "next": None}
    # `after` need not be a port: the page starts at the next name
    assert names(show_ports(built, clock, after="p10a", limit=2)) == [n for n in every if n > "p10a"][:2]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"limit": 0}, "limit is a number of ports, at least 1"),
        ({"limit": -3}, "limit is a number of ports, at least 1"),
        ({"limit": "10"}, "limit is a number of ports, at least 1"),
        ({"limit": True}, "limit is a number of ports, at least 1"),
        ({"limit": 1.5}, "limit is a number of ports, at least 1"),
        ({"after": 5}, "after is a port name"),
        ({"after": ["p1"], "limit": 3}, "after is a port name"),
    ],
)
def test_bad_page_arguments_are_refused(daemon: tuple[Daemon, Clock], args: dict[str, Any], message: str) -> None:
    built, clock = daemon
    with pytest.raises(ControlError) as refused:
        show_ports(built, clock, **args)
    assert (refused.value.code, refused.value.message) == ("bad_request", message)


def serve(daemon: Daemon, clock: Clock, before: Any = None) -> Any:
    def handle(op: str, args: dict[str, Any], peer: Any) -> Any:
        if before is not None:
            before(op, args)
        return operations.handle(daemon, op, args, peer, clock.now)

    return handle


def test_all_ports_asks_page_by_page_over_one_connection(daemon: tuple[Daemon, Clock], path: str) -> None:
    built, clock = daemon
    with ServerLoop(path, serve=serve(built, clock)) as loop:
        with Session(path) as session:
            result = all_ports(session, page=100)
        assert names(result) == sorted(built.ports)
        assert "next" not in result and set(result) == {"schema", "ports", "daemon"}
        assert loop.calls["show_ports"] == 6
        assert loop.stat("accepted") == 1, "one connection for every page"
        with Session(path) as session:
            assert names(all_ports(session)) == names(result), "pages of PORTS_PAGE ports"
        assert loop.calls["show_ports"] == 6 + -(-len(built.ports) // control.PORTS_PAGE)


def test_ports_that_come_and_go_between_pages_are_listed_at_most_once(tmp_path: Path, path: str) -> None:
    built, clock, _ = daemon_with_ports(tmp_path, 30)
    every = sorted(built.ports)
    pages = 0

    def meanwhile(op: str, args: dict[str, Any]) -> None:
        nonlocal pages
        if op != "show_ports":
            return
        pages += 1
        if pages == 2:  # after the first page: one port of the second page goes, one before it and one after come
            built.ports["p0a"] = built.ports["p0"]
            built.ports["p9a"] = built.ports["p9"]
            del built.ports[every[12]]

    with ServerLoop(path, serve=serve(built, clock, meanwhile)), Session(path) as session:
        listed = names(all_ports(session, page=10))
    assert listed == sorted(set(listed)), "in name order, each once"
    assert every[12] not in listed and "p9a" in listed, "what the later pages see"
    assert "p0a" not in listed, "a port added before the page under way is for the next listing"
    assert set(every) - {every[12]} <= set(listed)


def test_a_daemon_without_pages_and_one_whose_pages_do_not_advance(path: str) -> None:
    def old(op: str, args: dict[str, Any], _peer: Any) -> Any:
        return {"schema": 1, "ports": [{"name": "eth0"}], "daemon": {}}  # ignores limit and after

    with ServerLoop(path, serve=old) as loop, Session(path) as session:
        assert all_ports(session) == {"schema": 1, "ports": [{"name": "eth0"}], "daemon": {}}
        assert loop.calls["show_ports"] == 1

    def stuck(op: str, args: dict[str, Any], _peer: Any) -> Any:
        return {"schema": 1, "ports": [{"name": "eth0"}], "next": "eth0", "daemon": {}}

    with ServerLoop(path, serve=stuck) as loop, Session(path) as session:
        with pytest.raises(ControlError) as refused:
            all_ports(session)
        assert refused.value.code == "bad_reply"
        assert loop.calls["show_ports"] == 2


def test_show_port_lists_every_port_in_pages(
    daemon: tuple[Daemon, Clock], path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    built, clock = daemon
    monkeypatch.setattr(control, "PORTS_PAGE", 128)
    with ServerLoop(path, serve=serve(built, clock)) as loop:
        as_json = CliRunner().invoke(cli_main, ["show", "port", "-f", "json", "--socket", path])
        plain = CliRunner().invoke(cli_main, ["show", "port", "--socket", path])
        pages = loop.calls["show_ports"]
    assert as_json.exit_code == 0, as_json.output
    shown = json.loads(as_json.stdout)
    assert names(shown) == sorted(built.ports) and "next" not in shown
    assert plain.exit_code == 0, plain.output
    assert [line.split()[0] for line in plain.stdout.splitlines()[1:]] == sorted(built.ports)
    assert pages == 2 * -(-len(built.ports) // 128), "pages of 128 for each command"


def test_a_session_gives_up_after_a_transport_error_but_not_after_a_refusal(path: str) -> None:
    """A late reply must never be taken for the next request's: after a timeout the
    session refuses every request; a daemon's refusal leaves it usable."""

    def slow(op: str, args: dict[str, Any], _peer: Any) -> Any:
        if op == "slow":
            time.sleep(0.5)
            return "late"
        if op == "refused":
            raise ControlError("bad_request", "no")
        return op

    with ServerLoop(path, serve=slow) as loop, Session(path, timeout=0.2) as session:
        with pytest.raises(ControlError) as refused:
            session.request("refused")
        assert refused.value.code == "bad_request"
        assert session.request("fast") == "fast", "a refusal is an answer: the session goes on"
        with pytest.raises(ControlError) as timed_out:
            session.request("slow")
        assert timed_out.value.code == "timeout"
        time.sleep(0.6)  # the late reply has arrived by now
        with pytest.raises(ControlError) as given_up:
            session.request("fast")
        assert given_up.value.code == "timeout"
        assert loop.calls["fast"] == 1, "not asked again on a connection given up"


def test_yang_of_every_port_leaves_out_a_port_removed_after_the_list(tmp_path: Path, path: str) -> None:
    built, clock, _ = daemon_with_ports(tmp_path, 5)

    def meanwhile(op: str, args: dict[str, Any]) -> None:
        if op == "show_port" and args.get("port") == "p1":
            built.ports.pop("p3", None)  # a reload drops it while the CLI goes port by port

    with ServerLoop(path, serve=serve(built, clock, meanwhile)) as loop:
        shown = CliRunner().invoke(cli_main, ["show", "port", "-f", "yang", "--socket", path])
        assert loop.stat("accepted") == 1, "one connection for the list and every port"
    assert shown.exit_code == 0, shown.output
    interfaces = json.loads(shown.stdout)["ietf-interfaces:interfaces"]["interface"]
    assert [interface["name"] for interface in interfaces] == ["p0", "p1", "p2", "p4"]
