"""Memory stays bounded whatever the peer sends: a flood of Variable Requests, each
asking for other leaves, leaves the engine no bigger (the encode cache is small and a
full transmit queue refuses before encoding)."""

from __future__ import annotations

import gc
import tracemalloc

from efmoam.core import PortSettings
from pdu import Branch, VariableDescriptor, VariableRequest
from tests.core.test_support import A_MAC, STABLE, discovered, frame

REQUESTS = 10_000


def test_distinct_variable_requests_do_not_grow_the_engine() -> None:
    pair = discovered(PortSettings(), PortSettings())
    port = pair.b
    now = 2.0

    def flood(first: int, count: int) -> None:
        for n in range(first, first + count):
            leaves = tuple(VariableDescriptor(Branch.ATTRIBUTE, (n * 7 + k) & 0xFFFF) for k in range(40))
            port.receive(frame(VariableRequest(A_MAC, STABLE, leaves)), now=now + n * 1e-4)
            port.take_outputs()

    flood(0, 2_000)  # caches and queues at their steady size
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        flood(2_000, REQUESTS)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 1_000_000, f"{REQUESTS} distinct requests grew the engine by {grown} bytes"
    assert port.stats.frames_lost_due_to_oam > REQUESTS // 2  # the queue refused most of them
