"""The daemon's heap settling: long-lived objects frozen, a removed port's cycles freed."""

from __future__ import annotations

import gc
import weakref

from efmoam.daemon import heap


class Node:
    """Half of a reference cycle, as a port and its link monitoring are."""

    other: Node | None = None


def test_settling_freezes_what_lives_and_frees_what_a_removed_port_left() -> None:
    try:
        a, b = Node(), Node()
        a.other, b.other = b, a
        gone = weakref.ref(a)
        assert heap.settle() > 0
        assert gc.is_tracked(a) and gc.get_freeze_count() > 0
        del a, b  # the port is removed: only the cycle keeps it
        gc.collect()
        assert gone() is not None  # frozen: a plain collection does not see it
        heap.settle()  # what the daemon does after the ports changed
        assert gone() is None
    finally:
        heap.release()
    assert gc.get_freeze_count() == 0
