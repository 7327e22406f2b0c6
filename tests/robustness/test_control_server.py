"""The control server cannot be frozen or ended by its clients: bad lines, a failing
handler, a flood nobody reads, idle and surplus connections.  Real sockets, a real
selector loop on a thread (as the daemon runs it); every wait has a deadline."""

from __future__ import annotations

import collections
import contextlib
import json
import queue
import selectors
import socket
import sys
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from efmoam.daemon.control import MAX_LINE, ControlError, ControlServer


def handler(op: str, args: dict[str, Any], _peer: Any = None) -> Any:
    if op == "echo":
        return args
    if op == "big":
        return "x" * int(args["size"])
    if op == "boom":
        raise TypeError("a bug in the daemon")
    if op == "set":
        return {1, 2}  # not JSON-able
    raise ControlError("bad_request", f"unknown op {op!r}")


class ServerLoop:
    """A ControlServer in a selector loop on a thread, driven the way the daemon drives it
    (`publish` hands records to the loop, which publishes them to watchers)."""

    def __init__(self, path: str, on_error: Any = None, serve: Any = handler, **limits: Any) -> None:
        self.path = path
        self.records: queue.Queue[dict[str, Any]] = queue.Queue()
        self.calls: collections.Counter[str] = collections.Counter()
        self.errors: list[tuple[str, Exception]] = []
        self.selector = selectors.DefaultSelector()

        def counted(op: str, args: dict[str, Any], _peer: Any) -> Any:
            self.calls[op] += 1
            return serve(op, args, _peer)

        def noted(op: str, exc: Exception) -> None:
            self.errors.append((op, exc))
            if on_error is not None:
                on_error(op, exc)

        self.server = ControlServer(path, counted, self.selector, on_error=noted, **limits)
        self.longest = 0.0  #: seconds of the longest wake-up
        self.crash: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ServerLoop:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join(5.0)
        assert not self._thread.is_alive(), "the loop is stuck"
        self.server.close()
        self.selector.close()
        if self.crash is not None and exc is None:
            raise AssertionError("the control server raised out of the loop") from self.crash

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                deadline = self.server.next_deadline()
                timeout = 0.02 if deadline is None else min(0.02, max(0.0, deadline - time.monotonic()))
                ready = self.selector.select(timeout)
                start = time.monotonic()
                for key, _ in ready:
                    key.data(time.monotonic())
                while not self.records.empty():
                    self.server.publish(self.records.get_nowait())
                now = time.monotonic()
                deadline = self.server.next_deadline()
                if deadline is not None and deadline <= now:
                    self.server.service(now)
                self.longest = max(self.longest, time.monotonic() - start)
        except BaseException as exc:
            self.crash = exc

    def publish(self, *records: dict[str, Any]) -> None:
        for record in records:
            self.records.put(record)

    def settled(self) -> None:
        """Wait until the loop has published every record handed to it."""
        deadline = time.monotonic() + 5
        while not self.records.empty():
            assert time.monotonic() < deadline, "the loop does not publish"
            time.sleep(0.005)
        time.sleep(0.05)

    def stat(self, name: str) -> int:
        return self.server.stats[name]


class Client:
    """A blocking client with a timeout on every call."""

    def __init__(self, path: str, timeout: float = 3.0, sock: socket.socket | None = None) -> None:
        if sock is None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            sock.connect(path)
        self.sock = sock
        self.buffer = b""

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()

    def send(self, line: bytes) -> None:
        self.sock.sendall(line + b"\n")

    def reply(self) -> Any:
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            assert chunk, "the server closed the connection"
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line)

    def ask(self, op: str, args: dict[str, Any] | None = None, request_id: int = 1) -> Any:
        self.send(json.dumps({"id": request_id, "op": op, "args": args or {}}).encode())
        return self.reply()

    def rest(self) -> bytes:
        """Everything until the server closes the connection (fails on the timeout)."""
        data = self.buffer
        while True:
            try:
                chunk = self.sock.recv(65536)
            except ConnectionResetError:
                return data
            if not chunk:
                return data
            data += chunk


@pytest.fixture
def path(tmp_path: Path) -> str:
    return str(tmp_path / "efmoam.sock")


BAD_LINES = {
    "deep array": b"[" * 60_000,
    "deep object": b'{"a":' * 13_000,
    "huge number": b"9" * 60_000,
    "not UTF-8": b'{"op": "echo", "args": {"a": "\xff\xfe"}}',
    "UTF-16 garbage": b"\xff\xfe{\x00",
    "empty": b"",
    "array": b"[1, 2]",
    "string": b'"show_port"',
    "op not a string": b'{"op": 5}',
    "args not an object": b'{"op": "echo", "args": [1]}',
    "NUL bytes": b"\x00" * 100,
}


@pytest.mark.parametrize("line", BAD_LINES.values(), ids=BAD_LINES.keys())
def test_a_bad_line_gets_bad_request_and_the_connection_is_served_on(path: str, line: bytes) -> None:
    with ServerLoop(path) as loop, Client(path) as client:
        client.send(line)
        reply = client.reply()
        assert reply["ok"] is False
        assert reply["error"]["code"] == "bad_request"
        assert client.ask("echo", {"n": 2}, request_id=2) == {"id": 2, "ok": True, "result": {"n": 2}}
        assert loop.stat("bad_requests") == 1


def test_an_exception_in_the_handler_is_an_internal_reply(path: str) -> None:
    with ServerLoop(path) as loop, Client(path) as client:
        reply = client.ask("boom", request_id=7)
        assert reply["id"] == 7 and reply["ok"] is False
        assert reply["error"]["code"] == "internal"
        assert [(op, type(exc)) for op, exc in loop.errors] == [("boom", TypeError)]
        assert client.ask("set", request_id=8)["error"]["code"] == "internal"  # a result that is not JSON
        assert client.ask("nope", request_id=9)["error"] == {"code": "bad_request", "message": "unknown op 'nope'"}
        assert client.ask("echo", {"still": True})["result"] == {"still": True}
        assert loop.stat("internal_errors") == 2
        assert len(loop.errors) == 2  # a ControlError is an answer, not an error


def test_a_failing_on_error_callback_changes_nothing(path: str) -> None:
    def on_error(op: str, exc: Exception) -> None:
        raise RuntimeError("the log is gone")

    with ServerLoop(path, on_error=on_error), Client(path) as client:
        assert client.ask("boom")["error"]["code"] == "internal"
        assert client.ask("echo", {"a": 1})["result"] == {"a": 1}


def flood(path: str, count: int, size: int) -> tuple[socket.socket, threading.Thread]:
    """A client that sends `count` requests for `size`-byte answers and reads none."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(20.0)
    sock.connect(path)
    data = b"".join(b'{"id": %d, "op": "big", "args": {"size": %d}}\n' % (n, size) for n in range(count))

    def send() -> None:
        with contextlib.suppress(OSError):  # disconnected by the server
            sock.sendall(data)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return sock, thread


def assert_served_quickly(path: str, until: Any, timeout: float = 10.0) -> None:
    """Another client's request is answered within 0.5 s, again and again, until `until()`."""
    deadline = time.monotonic() + timeout
    with Client(path) as other:
        n = 0
        while not until() or n < 5:
            assert time.monotonic() < deadline, "timed out"
            start = time.monotonic()
            assert other.ask("echo", {"n": n}, request_id=n)["result"] == {"n": n}
            assert time.monotonic() - start < 0.5
            n += 1
            time.sleep(0.01)


def test_a_flooder_that_never_reads_is_disconnected_past_max_output(path: str) -> None:
    with ServerLoop(path, max_output=32 * 1024) as loop:
        flooder, sender = flood(path, 2000, 1000)
        assert_served_quickly(path, lambda: loop.stat("output_overflow") == 1)
        sender.join(5.0)
        assert not sender.is_alive()
        with Client(path, sock=flooder) as gone:
            leftover = gone.rest()
        assert leftover.count(b"\n") < 2000, "cut off before its last reply"
        assert loop.longest < 0.25, loop.longest
        assert loop.stat("output_overflow") == 1


def test_a_reply_is_never_cut_for_its_size_and_nothing_piles_up_behind_it(path: str) -> None:
    """`show_ports` of thousands of ports is over a megabyte: `max_output` bounds what a
    client leaves waiting behind the reply it is taking (the flooder above), never the
    reply itself; while a big reply waits, the client's next requests wait unanswered."""
    with ServerLoop(path, max_output=32 * 1024) as loop:
        with Client(path) as client:
            assert client.ask("big", {"size": 100_000}) == {"id": 1, "ok": True, "result": "x" * 100_000}
        with Client(path, timeout=10.0) as slow:
            slow.sock.sendall(b"".join(b'{"id": %d, "op": "big", "args": {"size": 3000000}}\n' % n for n in range(3)))
            assert_served_quickly(path, lambda: loop.calls["big"] >= 2)
            time.sleep(0.3)
            assert loop.calls["big"] == 2, "the next request waits while 3 MB are unread"
            for n in range(3):
                assert slow.reply() == {"id": n, "ok": True, "result": "x" * 3_000_000}
        assert loop.stat("output_overflow") == 0
        assert loop.longest < 0.25, loop.longest


def test_big_replies_asked_together_and_read_slowly_in_small_pieces_come_whole(path: str) -> None:
    """The next answer joins the outbox once the one being read has 64 KiB left: neither
    counts against `max_output` (found in review: this cut the first reply)."""
    with ServerLoop(path) as loop, Client(path, timeout=20.0) as client:
        client.sock.sendall(b"".join(b'{"id": %d, "op": "big", "args": {"size": 1500000}}\n' % n for n in range(3)))
        data = b""
        while data.count(b"\n") < 3:
            chunk = client.sock.recv(16 * 1024)
            assert chunk, f"cut after {len(data)} bytes"
            data += chunk
            time.sleep(0.001)
        replies = [json.loads(line) for line in data.splitlines()]
        assert replies == [{"id": n, "ok": True, "result": "x" * 1_500_000} for n in range(3)]
        assert loop.stat("output_overflow") == 0


def test_a_client_that_reads_late_is_paused_then_gets_every_reply(path: str) -> None:
    with ServerLoop(path) as loop:
        flooder, sender = flood(path, 2000, 1000)
        assert_served_quickly(path, lambda: loop.calls["big"] > 50)
        time.sleep(0.3)
        paused_at = loop.calls["big"]
        time.sleep(0.3)
        assert loop.calls["big"] == paused_at < 1000, "its requests wait while its replies are not read"
        pending = [len(client.reply_ends) for client in list(loop.server._clients.values())]
        assert max(pending) <= 64 * 1024 // 1000 + 2, "what it keeps of its replies is bounded too"
        with Client(path, sock=flooder) as late:
            for n in range(2000):
                assert late.reply() == {"id": n, "ok": True, "result": "x" * 1000}
        sender.join(5.0)
        assert loop.stat("output_overflow") == 0
        assert loop.longest < 0.25, loop.longest


def test_requests_beyond_the_bound_wait_for_service_without_new_input(path: str) -> None:
    """Stepped by hand: one wake-up reads 100 requests; each `service` answers 16 of them."""
    selector = selectors.DefaultSelector()
    server = ControlServer(path, handler, selector, requests_per_wake=16)
    try:
        with Client(path) as client:

            def wake() -> None:
                for key, _ in selector.select(0.5):
                    key.data(time.monotonic())

            wake()  # the accept
            client.sock.sendall(b"".join(b'{"id": %d, "op": "echo"}\n' % n for n in range(100)))
            wake()  # the read
            answered: list[int] = []
            while len(answered) < 7:
                deadline = server.next_deadline()
                assert deadline is not None and deadline <= time.monotonic(), "work waits: service is due now"
                answered.append(server.service(time.monotonic()))
            assert answered == [16] * 6 + [4]
            assert [client.reply()["id"] for _ in range(100)] == list(range(100))
            idle = server.next_deadline()
            assert idle is not None and idle > time.monotonic() + 10  # only the idle timeout is left
    finally:
        server.close()
        selector.close()


def test_an_idle_client_is_closed(path: str) -> None:
    with ServerLoop(path, idle_timeout=0.3) as loop, Client(path) as silent, Client(path) as slow:
        start = time.monotonic()
        with Client(path) as busy:
            for n in range(8):  # a request every 0.1 s keeps a client
                assert busy.ask("echo", {"n": n})["result"] == {"n": n}
                with contextlib.suppress(OSError):  # bytes that never make a request do not
                    slow.sock.sendall(b" ")
                time.sleep(0.1)
            assert silent.rest() == b""
            assert slow.rest() == b""
            assert time.monotonic() - start >= 0.29
            assert busy.ask("echo")["ok"] is True
        assert loop.stat("idle_closed") == 2


def test_connections_beyond_max_clients_are_refused_until_one_leaves(path: str) -> None:
    with ServerLoop(path, max_clients=3) as loop:
        clients = [Client(path) for _ in range(3)]
        for client in clients:
            assert client.ask("echo")["ok"] is True
        with Client(path) as extra:
            reply = json.loads(extra.rest())
            assert reply["error"]["code"] == "busy"
        assert loop.stat("refused") == 1
        clients.pop().sock.close()
        deadline = time.monotonic() + 3.0
        while True:
            with Client(path) as late:
                if late.ask("echo")["ok"]:
                    break
            assert time.monotonic() < deadline, "never served after a client left"
            time.sleep(0.05)
        for client in clients:
            client.sock.close()
        assert loop.stat("accepted") >= 4


def test_a_line_over_the_cap_is_answered_then_closed(path: str) -> None:
    with ServerLoop(path) as loop, Client(path) as client:
        client.sock.sendall(b"x" * (MAX_LINE + 10))
        reply = json.loads(client.rest())
        assert reply["error"]["code"] == "bad_request"
        assert loop.stat("line_too_long") == 1
        with Client(path) as other:
            assert other.ask("echo")["ok"] is True


def test_a_client_that_ends_its_input_still_gets_every_reply(path: str) -> None:
    with ServerLoop(path), Client(path) as client:
        client.sock.sendall(b"".join(b'{"id": %d, "op": "echo"}\n' % n for n in range(40)) + b'{"id": 40')
        client.sock.shutdown(socket.SHUT_WR)
        replies = [json.loads(line) for line in client.rest().splitlines()]
        assert [reply["id"] for reply in replies] == list(range(40))  # the unfinished line is dropped


# -- any line at all: one reply, the server carries on ---------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
ops = st.sampled_from(["echo", "boom", "set", "nope", ""])
requests = st.fixed_dictionaries({"op": ops}, optional={"id": json_values, "args": json_values})


def deep_id(depth: int) -> bytes:
    return b'{"op": "echo", "id": ' + b"[" * depth + b"]" * depth + b"}"


def nested(opener: bytes, closer: bytes) -> st.SearchStrategy[bytes]:
    return st.integers(1, MAX_LINE // len(opener) - 2).map(lambda n: opener * n + closer * (n if closer else 0))


lines = st.one_of(
    st.binary(max_size=300),
    requests.map(lambda r: json.dumps(r).encode()),
    json_values.map(lambda v: json.dumps(v).encode()),
    nested(b"[", b""),
    nested(b"[", b"]"),
    nested(b'{"a":', b""),
    st.integers(1, 2000).map(deep_id),
    st.integers(1, 5000).map(lambda n: b'{"op": "echo", "args": {"a": ' + b"[" * n + b"]" * n + b"}}"),
    st.integers(1, 60_000).map(lambda n: b"7" * n),
    st.integers(1, 60_000).map(lambda n: b'{"op": "echo", "id": 1e' + b"9" * n + b"}"),
    st.binary(min_size=1, max_size=50).map(lambda b: b'{"op": "echo", "args": {"a": "' + b + b'"}}'),
).map(lambda line: line.replace(b"\n", b" ")[: MAX_LINE - 1])


def parse_deep(raw: bytes) -> Any:
    """A reply echoes the request's id, which may nest as deep as the server's stack allowed:
    parse it with room to spare (the test's stack is deeper than the loop thread's)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(limit + 2000)
    try:
        return json.loads(raw)
    finally:
        sys.setrecursionlimit(limit)


def test_any_line_gets_exactly_one_reply(path: str) -> None:
    with ServerLoop(path, max_clients=4) as loop:

        @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(st.lists(lines, min_size=1, max_size=8))
        @example([deep_id(n) for n in range(900, 1100, 20)])  # around the decoder's depth limit
        @example([b"[" * 60_000, b"\xff" * 1000, b"9" * 60_000, b'{"op": "boom"}', b'{"op": "set"}'])
        def check(batch: list[bytes]) -> None:
            with Client(path, timeout=5.0) as client:
                client.sock.sendall(b"".join(line + b"\n" for line in batch))
                client.sock.shutdown(socket.SHUT_WR)
                replies = client.rest().splitlines()
            assert len(replies) == len(batch)
            for raw in replies:
                reply = parse_deep(raw)
                assert set(reply) in ({"id", "ok", "result"}, {"id", "ok", "error"})
                if not reply["ok"]:
                    assert isinstance(reply["error"]["code"], str)
                    assert isinstance(reply["error"]["message"], str)

        check()
        assert loop.crash is None
        with Client(path) as client:
            assert client.ask("echo", {"after": "fuzz"})["result"] == {"after": "fuzz"}
