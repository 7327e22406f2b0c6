"""Helpers shared by the engine tests, and the tests of those helpers.

Only ``test_*.py`` files may be added to this folder, so the helpers live in a test
module; the few tests at the end check the helpers themselves (a wrong window count
would make every budget test meaningless).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any, TypeVar

import attrs

import pdu
from efmoam.core import DiscoveryState, FrameDropped, OamMode, OamPort, PortSettings, Transmit
from pdu import Code, EventTlvType, Flag, Information, InfoTlv, InfoTlvType, LinkEventTlv, Oampdu
from tests.core.pair import PortPair

S = DiscoveryState
T = TypeVar("T")

A_MAC = "02:00:00:00:00:0a"
B_MAC = "02:00:00:00:00:0b"
STRANGER_MAC = "02:00:00:00:00:0c"

#: slack for float sums of intervals on the fake clock
EPSILON = 1e-6
#: the standard's transmit budget: OAMPDUs per second
BUDGET = 10
STABLE = Flag.LOCAL_STABLE | Flag.REMOTE_STABLE


# -- building pairs --------------------------------------------------------------------


Pair = PortPair  # the shared harness (tests/core/pair.py)


def discovered(a: PortSettings | None = None, b: PortSettings | None = None, *, within: float = 0.5) -> Pair:
    """A pair that reached SEND_ANY on both ports by `within` (asserted), left at t=1.5 s."""
    pair = Pair(a, b)
    pair.run_until(within)
    assert pair.both_in(S.SEND_ANY), (pair.a.state, pair.b.state)
    pair.run_until(1.5)  # mid-interval: away from keep-alive instants
    return pair


def lone(a: PortSettings | None = None) -> Pair:
    """A pair whose link is cut both ways: port "a" hears only what a test injects."""
    pair = Pair(a, PortSettings())
    pair.link["a"].cut = pair.link["b"].cut = True
    pair._in_flight.clear()  # the frames both ports sent when they started
    pair.run_until(0.5)
    return pair


# -- operator requests -----------------------------------------------------------------

ERRORED_FRAME = LinkEventTlv(EventTlvType.ERRORED_FRAME, window=10, threshold=1, errors=5)


def notify(pair: PortPair, name: str, tlvs: tuple[Any, ...] = (ERRORED_FRAME,), burst: int = 1) -> int | None:
    """`notify_link_events` at the pair's current time: `burst` copies of one notification."""
    result: int | None = pair.call(name, "notify_link_events", tlvs, burst=burst)
    return result


# -- frames ---------------------------------------------------------------------------


def frame(p: Oampdu) -> bytes:
    return pdu.encode(p)


def information(src: str, flags: Flag, local: InfoTlv | None = None, remote: InfoTlv | None = None) -> bytes:
    """An Information OAMPDU frame with the given Local and Remote Information TLVs."""
    tlvs = tuple(tlv for tlv in (local, remote) if tlv is not None)
    return frame(Information(src, flags, tlvs))


def as_remote(tlv: InfoTlv) -> InfoTlv:
    return attrs.evolve(tlv, type=InfoTlvType.REMOTE)


def peer_tlv(settings: PortSettings | None = None, revision: int = 0) -> InfoTlv:
    """The Local Information TLV a port with `settings` advertises (not looping)."""
    s = settings or PortSettings()
    return InfoTlv(
        type=InfoTlvType.LOCAL,
        revision=revision,
        oam_config=s.oam_config,
        max_pdu_size=s.max_pdu_size,
        oui=s.oui,
        vendor_info=s.vendor_info,
    )


def steady_information(pair: PortPair, sender: str, flags: Flag = STABLE) -> bytes:
    """The Information OAMPDU `sender` sends in SEND_ANY, built from both ports' TLVs."""
    receiver = pair.ports[pair.peer_of(sender)]
    return information(pair.ports[sender].mac, flags, pair.ports[sender].local_tlv, as_remote(receiver.local_tlv))


# -- reading the record ---------------------------------------------------------------


def outputs(pair: PortPair, name: str, kind: type[T], since: float = 0.0) -> list[T]:
    """The outputs of one kind of port `name`, from time `since` on."""
    return [r.output for r in pair.outputs(name, kind) if r.time >= since]  # type: ignore[misc]


def sent(pair: PortPair, name: str, since: float = 0.0) -> list[tuple[float, Oampdu]]:
    """Every frame `name` sent from `since` on, decoded, with its time."""
    return [(r.time, pdu.decode(r.output.frame)) for r in pair.outputs(name, Transmit) if r.time >= since]


def sent_kind(pair: PortPair, name: str, kind: type[T], since: float = 0.0) -> list[tuple[float, T]]:
    return [(t, p) for t, p in sent(pair, name, since) if isinstance(p, kind)]  # type: ignore[misc]


def information_times(pair: PortPair, name: str, since: float = 0.0) -> list[float]:
    return [r.time for r in pair.outputs(name, Transmit) if r.output.code == Code.INFORMATION and r.time >= since]


def drops(pair: PortPair, name: str, since: float = 0.0) -> list[str]:
    return [d.reason for d in outputs(pair, name, FrameDropped, since)]


def last_sent_flags(pair: PortPair, name: str) -> Flag:
    return sent(pair, name)[-1][1].flags


# -- checks ---------------------------------------------------------------------------


def max_in_window(times: Iterable[float], window: float = 1.0) -> int:
    """The most times that fall in any half-open window ``[t, t + window)``."""
    ordered = sorted(times)
    best = start = 0
    for end, t in enumerate(ordered):
        while ordered[start] <= t - window + 1e-9:
            start += 1
        best = max(best, end - start + 1)
    return best


def max_gap(times: list[float], start: float | None = None, end: float | None = None) -> float:
    """The longest stretch without a time, including from `start` and up to `end`."""
    points = ([start] if start is not None else []) + sorted(times) + ([end] if end is not None else [])
    return max(gaps(points), default=0.0)


def gaps(times: Iterable[float]) -> list[float]:
    """The intervals between successive times."""
    return [b - a for a, b in itertools.pairwise(sorted(times))]


def assert_budget(pair: PortPair) -> None:
    """Neither port sent more than 10 OAMPDUs in any one-second window."""
    for name in pair.ports:
        assert max_in_window(pair.sent_times(name)) <= BUDGET, name


def snapshot(port: OamPort) -> dict[str, Any]:
    """What a frame that is not acted on must leave unchanged."""
    return {
        "state": port.state,
        "peer_mac": port.peer_mac,
        "peer": port.peer,
        "peer_flags": port.peer_flags,
        "stats": attrs.asdict(port.stats),
        "lost_link_at": port._peer.lost_link_at,
        "loopback": port.loopback,
        "local_tlv": port.local_tlv,
    }


# -- tests of the helpers -------------------------------------------------------------


def test_max_in_window_counts_half_open_windows() -> None:
    assert max_in_window([]) == 0
    assert max_in_window([0.0, 1.0, 2.0]) == 1  # exactly one second apart: separate windows
    assert max_in_window([0.0, 0.5, 0.999, 1.0]) == 3
    assert max_in_window([0.1 * i for i in range(11)]) == 10  # 0.0 .. 1.0 (float sums included)
    assert max_in_window([5.0] * 11) == 11


def test_max_gap_includes_the_edges() -> None:
    assert max_gap([1.0, 2.0, 2.5], start=0.0, end=4.0) == 1.5
    assert max_gap([]) == 0.0


def test_pair_returns_when_nothing_is_scheduled() -> None:
    pair = Pair(PortSettings(mode=OamMode.PASSIVE), PortSettings(mode=OamMode.PASSIVE))
    pair.run_until(30)
    assert pair.now == 30


def test_steady_information_is_what_the_peer_sends() -> None:
    pair = discovered()
    assert pdu.decode(steady_information(pair, "b")) == sent(pair, "b")[-1][1]
