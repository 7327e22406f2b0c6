"""A peer shutting down on every port at once (root, nftables): 256 ports taken out of
service through the real block backend in a few nft transactions, while the control
socket keeps answering, and all back in service at once when the lost-link timers end
the peer's Dying Gasp events."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.lab import missing_requirements, wait_for
from tests.daemon.mass import MassLab, Poller

pytestmark = pytest.mark.root

PAIRS = 256


@pytest.fixture
def mass(tmp_path: Path) -> Iterator[MassLab]:
    reason = missing_requirements()
    if reason:
        pytest.skip(reason)
    built = MassLab(tmp_path, PAIRS)
    try:
        yield built
    finally:
        built.close()


def transactions(calls: list[str]) -> int:
    return sum(call == "-f -" for call in calls)


def listings(calls: list[str]) -> int:
    """Read-backs of many tables (one table is read back by its own listing)."""
    return sum(call == "list chains netdev" for call in calls)


def test_every_port_out_of_service_at_once_and_back(mass: MassLab) -> None:
    mass.start()
    before = len(mass.nft_calls())
    poller = Poller(mass.a, f"a{PAIRS - 1}")
    try:
        mass.shut_peer_down()  # a Dying Gasp on every port
        wait_for(lambda: mass.blocked() == PAIRS, 30, "every port blocked", interval=0.2, context=mass.logs)
        wait_for(lambda: not poller.answers[-1][2]["pending"], 10, "the last port's block verified")
    finally:
        poller.stop()
    assert not poller.errors, poller.errors[:3]
    seen = [action for _, _, action in poller.answers]
    # the loop answered while the block was on its way, and said so
    assert any(action["pending"] and not action["applied"] for action in seen), seen[:5]
    assert seen[-1] == {"backend": "block", "applied": True, "pending": False, "error": None, "reapplied": 0}
    assert all(action == seen[-1] for action in mass.actions())  # every port applied and verified
    calls = mass.nft_calls()[before:]
    # a few batches (the Dying Gasps arrive over some wake-ups), never one per port
    assert 1 <= transactions(calls) <= 8, calls
    # many tables are read back from the kernel over nfnetlink, never by nft's slow listing
    assert listings(calls) == 0, calls

    before = len(mass.nft_calls())  # the lost-link timers end the peer's flag events: all back at once
    wait_for(lambda: mass.blocked() == 0, mass.lost_link_time + 30, "every block removed", context=mass.logs)
    wait_for(lambda: not any(action["applied"] or action["pending"] for action in mass.actions()), 10, "all in service")
    calls = mass.nft_calls()[before:]
    assert 1 <= transactions(calls) <= 8, calls
    assert not mass.a.log_entries("port action failed")
