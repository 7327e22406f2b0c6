"""Network namespaces joined by veth pairs, for tests that need the real kernel (root).

`setns(2)` moves only the calling thread, and a socket keeps the namespace it was
created in, so `in_netns` runs a function in a short-lived thread inside the namespace
and hands back what it returns (sockets included).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import pytest

T = TypeVar("T")
CLONE_NEWNET = 0x40000000

needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None, reason="needs root and iproute2 (ip) for network namespaces"
)


def ip(*args: str, netns: str | None = None) -> str:
    command = ["ip", *(("-n", netns) if netns else ()), *args]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def capture_slow_protocols(netns: str, iface: str, path: str) -> subprocess.Popen[bytes]:
    """Start tshark writing the Slow Protocols frames of `iface` in `netns` to `path`."""
    command = ["ip", "netns", "exec", netns, "tshark", "-q", "-i", iface, "-f", "ether proto 0x8809", "-w", path]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def in_netns(netns: str, function: Callable[[], T]) -> T:
    """Run `function` in a thread that has entered `netns`; return its result."""
    result: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        with open(f"/run/netns/{netns}", "rb") as handle:
            if libc.setns(handle.fileno(), CLONE_NEWNET) != 0:
                errors.append(OSError(ctypes.get_errno(), "setns failed"))
                return
        try:
            result.append(function())
        except BaseException as exc:  # handed to the caller's thread
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return result[0]


@contextmanager
def veth_pair(mac_a: str = "02:00:00:00:aa:01", mac_b: str = "02:00:00:00:bb:01") -> Iterator[tuple[str, str]]:
    """Two namespaces, "veth0" in the first and "veth1" in the second, linked and up."""
    tag = uuid.uuid4().hex[:8]
    ns_a, ns_b = f"efmoam-a-{tag}", f"efmoam-b-{tag}"
    ip("netns", "add", ns_a)
    ip("netns", "add", ns_b)
    try:
        ip("link", "add", "veth0", "netns", ns_a, "address", mac_a, "type", "veth",
           "peer", "name", "veth1", "netns", ns_b, "address", mac_b)  # fmt: skip
        for ns, dev in ((ns_a, "veth0"), (ns_b, "veth1")):
            ip("link", "set", dev, "up", netns=ns)
            ip("link", "set", "lo", "up", netns=ns)
        yield ns_a, ns_b
    finally:
        for ns in (ns_a, ns_b):
            subprocess.run(["ip", "netns", "del", ns], check=False, capture_output=True)
