"""The control server's watchers (``efmoam watch`` on the daemon's side), without a daemon:
real sockets, a real selector loop on a thread, records published from the loop as the
daemon publishes them.  A watcher gets every record it accepts, in order, after its
reply; one that never reads is ended at its bound, its last line whole, while the others
and plain requests are served on; a quiet watcher is never idle-closed."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from efmoam.daemon.control import ControlError, Peer, Subscription, Watch
from tests.robustness.test_control_server import Client, ServerLoop


def handler(op: str, args: dict[str, Any], _peer: Peer | None) -> Any:
    if op == "watch":
        port = args.get("port")
        return Subscription(lambda record: port is None or record.get("port") == port, {"watching": port})
    if op == "echo":
        return args
    raise ControlError("bad_request", f"unknown op {op!r}")


class WatchLoop(ServerLoop):
    """The robustness tests' server loop serving `handler`, started at once; `dropped`
    lists the watches the server ended (peer, bytes pending)."""

    def __init__(self, path: str, **limits: Any) -> None:
        self.dropped: list[tuple[Peer | None, int]] = []
        super().__init__(path, serve=handler, on_watch_drop=lambda peer, n: self.dropped.append((peer, n)), **limits)
        self._thread.start()

    def close(self) -> None:
        self.__exit__(None, None, None)


@pytest.fixture
def path(tmp_path: Path) -> str:
    return str(tmp_path / "efmoam.sock")


@pytest.fixture
def loop(path: str) -> Iterator[WatchLoop]:
    running = WatchLoop(path, idle_timeout=0.3, max_watch_output=16 << 10)
    try:
        yield running
    finally:
        running.close()


def record(n: int, port: str = "eth0", size: int = 0) -> dict[str, Any]:
    return {"schema": 3, "kind": "operator", "port": port, "n": n, "pad": "x" * size}


def lines(client: Client, count: int) -> list[Any]:
    return [client.reply() for _ in range(count)]


def test_a_watcher_gets_the_records_it_accepts_in_order_after_its_reply(loop: WatchLoop, path: str) -> None:
    with Client(path) as every, Client(path) as eth1:
        assert every.ask("watch") == {"id": 1, "ok": True, "result": {"watching": None}}
        assert eth1.ask("watch", {"port": "eth1"}) == {"id": 1, "ok": True, "result": {"watching": "eth1"}}
        assert loop.server.watching
        loop.publish(record(1), record(2, "eth1"), record(3), record(4, "eth1"))
        assert lines(every, 4) == [record(1), record(2, "eth1"), record(3), record(4, "eth1")]
        assert lines(eth1, 2) == [record(2, "eth1"), record(4, "eth1")]


def test_a_quiet_watcher_is_not_idle_but_a_plain_client_is(loop: WatchLoop, path: str) -> None:
    with Client(path) as watcher, Client(path) as plain:
        watcher.ask("watch")
        plain.ask("echo")
        time.sleep(0.8)  # over twice the idle timeout
        assert plain.rest() == b""  # closed as idle
        loop.publish(record(1))
        assert watcher.reply() == record(1)
        assert loop.server.stats["idle_closed"] == 1


def test_what_a_watcher_sends_is_ignored_and_its_hangup_ends_it(loop: WatchLoop, path: str) -> None:
    with Client(path) as watcher:
        watcher.ask("watch")
        watcher.send(b'{"op": "echo", "args": {"a": 1}}')
        watcher.send(b"\xff\xfe garbage \x00")
        watcher.sock.sendall(b"x" * 200_000)  # far past a request line's cap: still just ignored
        time.sleep(0.3)  # the loop has read it all
        loop.publish(record(1))
        assert watcher.reply() == record(1)  # no reply to what it sent, no bad_request
    deadline = time.monotonic() + 3
    while loop.server.clients:
        assert time.monotonic() < deadline, "a watcher that hung up is kept"
        time.sleep(0.01)
    assert not loop.server.watching
    loop.publish(record(2))  # to nobody
    loop.settled()


def test_a_watcher_that_never_reads_is_ended_and_nothing_else_waits(loop: WatchLoop, path: str) -> None:
    stalled = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.settimeout(5)
    stalled.connect(path)
    with stalled, Client(path) as reader:
        stalled.sendall(b'{"id": 1, "op": "watch"}\n')
        reader.ask("watch")
        records = [record(n, size=900) for n in range(2000)]  # ~2 MB, past the kernel's buffers and the bound
        for chunk in range(0, len(records), 100):
            loop.publish(*records[chunk : chunk + 100])
            assert lines(reader, 100) == records[chunk : chunk + 100]  # the reading watcher misses nothing
        with Client(path) as plain:
            assert plain.ask("echo", {"still": 1})["result"] == {"still": 1}
        assert loop.server.stats["watch_overflow"] == 1
        assert len(loop.dropped) == 1 and loop.dropped[0][1] > 0
        assert loop.longest < 0.5
        data = b""
        while chunk_ := stalled.recv(65536):
            data += chunk_
    *got, last = data.split(b"\n")[:-1]
    assert data.endswith(b"\n")  # nothing half sent: the line in flight went out whole
    assert json.loads(got[0]) == {"id": 1, "ok": True, "result": {"watching": None}}
    assert [json.loads(line) for line in got[1:]] == records[: len(got) - 1]  # a prefix, in order, whole
    assert json.loads(last)["error"]["code"] == "watch_overflow"


def test_the_line_in_flight_goes_out_whole_before_the_overflow_error(path: str) -> None:
    """A record larger than the socket's buffer is half sent when the next one overflows
    the queue: the rest of the first still goes out, then the error; the second is dropped."""
    running = WatchLoop(path, max_watch_output=1 << 20)
    try:
        stalled = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stalled.settimeout(5)
        stalled.connect(path)
        with stalled:
            stalled.sendall(b'{"id": 1, "op": "watch"}\n')
            time.sleep(0.2)
            big, bigger = record(1, size=600_000), record(2, size=700_000)
            running.publish(big)
            running.settled()  # the socket took the first part of it
            running.publish(bigger)
            running.settled()
            data = b""
            while chunk := stalled.recv(65536):
                data += chunk
        reply, first, error, end = data.split(b"\n")
        assert (json.loads(first), json.loads(error)["error"]["code"], end) == (big, "watch_overflow", b"")
        assert json.loads(reply)["ok"] is True
    finally:
        running.close()


def test_watchers_count_against_the_client_limit(path: str) -> None:
    running = WatchLoop(path, max_clients=3)
    try:
        clients = [Client(path) for _ in range(3)]
        for client in clients:
            client.ask("watch")
        with Client(path) as surplus:
            assert json.loads(surplus.rest())["error"]["code"] == "busy"
        for client in clients:
            client.sock.close()
    finally:
        running.close()


def test_the_client_yields_the_records_its_watch_accepts(loop: WatchLoop, path: str) -> None:
    with Watch(path, {"port": "eth0"}) as feed:
        assert feed.result == {"watching": "eth0"}
        records = feed.records()
        loop.publish(record(1), record(2, "eth9"), record(3))
        assert [next(records), next(records)] == [record(1), record(3)]


def test_the_client_says_when_the_daemon_stops(path: str) -> None:
    running = WatchLoop(path)
    with Watch(path) as feed:
        records = feed.records()
        running.publish(record(1))
        assert next(records) == record(1)
        running.close()
        with pytest.raises(ControlError) as ended:
            next(records)
        assert (ended.value.code, ended.value.message) == (
            "disconnected",
            "the daemon closed the connection (it stopped or restarts)",
        )


OVERFLOW = b'{"id": null, "ok": false, "error": {"code": "watch_overflow", "message": "fell behind"}}'
HOSTILE_LINES = {
    "the daemon's end of a watch": (OVERFLOW, "watch_overflow"),
    "not JSON": (b"{nope", "bad_reply"),
    "an array": (b"[1]", "bad_reply"),
    "a huge line": (b"x" * 70_000, "bad_reply"),
    "the error shape, not an error": (b'{"ok": false, "error": "not an object"}', "error"),
}


@pytest.mark.parametrize(("line", "code"), HOSTILE_LINES.values(), ids=HOSTILE_LINES.keys())
def test_the_client_raises_what_is_not_a_record(tmp_path: Path, line: bytes, code: str) -> None:
    """A fake daemon that answers the watch, then sends `line`: one ControlError, no crash."""
    path = str(tmp_path / "fake.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b'{"id": 1, "ok": true, "result": null}\n' + line + b"\n")
            time.sleep(0.5)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        with Watch(path) as feed, pytest.raises(ControlError) as refused:
            next(feed.records())
        assert refused.value.code == code
        assert "\n" not in refused.value.message
    finally:
        thread.join(5)
        listener.close()
