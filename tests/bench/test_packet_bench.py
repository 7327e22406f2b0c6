"""Cost of opening the OAMPDU sockets of N ports, before and after issue 18 (root).

A namespace holds 512 veth pairs (1,024 interfaces, all up); N = 1 and 256 AF_PACKET
sockets are opened there and bound to one interface each.  Side by side in one run:

* ``protocol-at-creation``: the old way, reproduced here only:
  ``socket(AF_PACKET, SOCK_RAW, htons(0x8809))`` then ``bind((ifname, 0x8809))``: the
  kernel hooks the socket on every interface, then bind unhooks it (synchronize_net)
  and hooks it on the one interface,
* ``protocol-at-bind``: ``socket(AF_PACKET, SOCK_RAW, 0)`` then the same bind (what
  `OamSocket` does),
* ``oam-socket``: `OamSocket` whole (the bind, the BPF filter, the multicast membership).

The figures to read are ``ms_per_socket`` (opening) and ``close_ms_per_socket`` (closing
them, timed outside the benchmark: the kernel waits for a grace period at every close) in
``extra_info``.  Measures, never asserts a time; skipped unless ``--benchmark-enable``
(building the namespace is not a smoke test).  Run with
``pytest tests/bench/test_packet_bench.py --benchmark-enable``.
"""

from __future__ import annotations

import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from efmoam.linux.packet import ETH_P_SLOW, OamSocket
from tests.linux.netns import in_netns, needs_root

pytestmark = [needs_root, pytest.mark.bench]

PAIRS = 512
METHODS = ["protocol-at-creation", "protocol-at-bind", "oam-socket"]


@pytest.fixture(scope="module")
def namespace() -> Iterator[tuple[str, list[str]]]:
    """A namespace holding 512 veth pairs (all up) and its interface names."""
    ns = f"efmoam-bench-{uuid.uuid4().hex[:8]}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        names = [name for i in range(PAIRS) for name in (f"pk{i}a", f"pk{i}b")]
        batch = "".join(f"link add pk{i}a type veth peer name pk{i}b\n" for i in range(PAIRS))
        batch += "".join(f"link set {name} up\n" for name in names)
        subprocess.run(["ip", "-n", ns, "-batch", "-"], input=batch, text=True, check=True, capture_output=True)
        yield ns, names
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False, capture_output=True)


def bound(protocol_at_creation: int) -> Callable[[str], socket.socket]:
    def open_bound(ifname: str) -> socket.socket:
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, protocol_at_creation)
        sock.bind((ifname, ETH_P_SLOW))
        return sock

    return open_bound


OPENERS: dict[str, Callable[[str], Any]] = {
    "protocol-at-creation": bound(socket.htons(ETH_P_SLOW)),
    "protocol-at-bind": bound(0),
    "oam-socket": OamSocket,
}


@pytest.mark.parametrize("sockets", [1, 256])
@pytest.mark.parametrize("method", METHODS)
def test_open_n_port_sockets(benchmark: Any, request: pytest.FixtureRequest, method: str, sockets: int) -> None:
    if benchmark.disabled:
        pytest.skip("a benchmark: run with --benchmark-enable")
    ns, names = request.getfixturevalue("namespace")
    ports = names[:sockets]
    opener = OPENERS[method]
    opened: list[Any] = []
    close_seconds: list[float] = []

    def close_all() -> None:
        started = time.perf_counter()
        for sock in opened:
            sock.close()
        if opened:
            close_seconds.append((time.perf_counter() - started) / len(opened))
        opened.clear()

    def open_all() -> None:
        opened.extend(opener(name) for name in ports)

    rounds = 3 if sockets > 1 else 20
    in_netns(ns, lambda: benchmark.pedantic(open_all, setup=close_all, rounds=rounds, iterations=1))
    assert len(opened) == sockets
    assert {sock.getsockname()[:2] if isinstance(sock, socket.socket) else None for sock in opened} <= {
        None,
        *((name, ETH_P_SLOW) for name in ports),
    }
    in_netns(ns, close_all)
    if benchmark.stats is not None:
        benchmark.extra_info["interfaces"] = len(names)
        benchmark.extra_info["sockets"] = sockets
        benchmark.extra_info["ms_per_socket"] = round(benchmark.stats.stats.mean / sockets * 1e3, 3)
        benchmark.extra_info["close_ms_per_socket"] = round(sum(close_seconds) / len(close_seconds) * 1e3, 3)
