"""The receive policer and the wire guard (sans-IO): the peer keeps its share whatever
other sources send, a peer over twice its allowance is policed, and no 1 s window on
the wire ever holds more than 10 frames."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from efmoam.config.model import DaemonConfig
from efmoam.core.outputs import DropReason
from efmoam.daemon.policing import RxPolicer, WireGuard

PEER = "02:00:00:00:bb:01"
STRANGER = "02:66:66:66:66:66"


def frame(mac: str) -> bytes:
    return bytes(6) + bytes.fromhex(mac.replace(":", "")) + bytes(48)


def default_policer() -> RxPolicer:
    config = DaemonConfig()
    policer = RxPolicer(config.rx_rate_limit, config.rx_others_rate_limit, 0.0)
    policer.bind(PEER)
    return policer


def test_a_stranger_flood_never_takes_the_peers_share() -> None:
    policer = default_policer()
    admitted = 0
    for tick in range(100_000):  # 10 s of a 10,000 frames/s stranger flood, the peer at 10/s
        now = tick * 1e-4
        assert policer.refuse(frame(STRANGER), now) in (None, DropReason.RATE_LIMIT_OTHERS)
        if tick % 1000 == 0:
            admitted += policer.refuse(frame(PEER), now) is None
    assert admitted == 100  # every one of the peer's frames
    assert policer.peer_policed == 0
    assert 99_900 - 60 < policer.others_policed < 100_000  # the others' 5/s and burst passed


def test_a_thousand_strangers_share_one_small_budget() -> None:
    policer = default_policer()
    passed = 0
    for tick in range(10_000):  # 1 s, 1,000 source MACs
        mac = f"02:77:00:00:{tick % 1000 >> 8:02x}:{tick % 1000 & 0xFF:02x}"
        passed += policer.refuse(frame(mac), tick * 1e-4) is None
    assert passed <= 5 + 5 + 1  # the burst and 1 s at 5/s


def test_with_the_defaults_a_peer_sending_50_per_second_is_policed_and_counted() -> None:
    policer = default_policer()
    passed = sum(policer.refuse(frame(PEER), tick / 50) is None for tick in range(500))  # 10 s
    assert 200 <= passed <= 10 + 20 * 10
    assert policer.peer_policed == 500 - passed > 250
    assert policer.others_policed == 0


def test_a_peer_within_the_standard_is_never_policed() -> None:
    policer = default_policer()
    # 10/s with a burst of 10 at once every second (an Event Notification burst and keep-alives)
    for second in range(20):
        for k in range(10):
            assert policer.refuse(frame(PEER), second + k * 1e-3) is None
    assert policer.policed == 0


def test_before_a_peer_is_bound_everything_shares_the_others_budget() -> None:
    policer = RxPolicer(20, 5, 0.0)
    results = [policer.refuse(frame(PEER), 0.0) for _ in range(10)]
    assert results.count(None) == 5


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=0.0, max_value=0.2, allow_nan=False), min_size=1, max_size=300))
def test_the_wire_never_holds_more_than_10_frames_in_any_second(gaps: list[float]) -> None:
    guard = WireGuard()
    now, sent = 0.0, []
    for gap in gaps:
        now += gap
        for _ in guard.release(now):
            sent.append(now)
        if guard.offer(b"x", now) is not None:
            sent.append(now)
    while guard.release_at is not None:  # the rest goes out when the window allows
        now = max(now, guard.release_at)
        sent.extend(now for _ in guard.release(now))
    for i in range(len(sent) - 10):
        assert sent[i + 10] - sent[i] >= 1.0 - 1e-9
    assert len(sent) + guard.dropped == len(gaps)


def test_the_wire_guard_holds_a_bounded_number_of_frames() -> None:
    guard = WireGuard()
    out = [guard.offer(b"x", 0.0) for _ in range(100)]
    assert sum(frame is not None for frame in out) == 10
    assert guard.dropped == 100 - 10 - 32
    assert guard.release_at == 1.005
    assert len(guard.release(1.005)) == 10


def test_a_paused_wire_holds_every_frame_in_order_until_resumed() -> None:
    guard = WireGuard()
    assert guard.offer(b"before", 0.0) == b"before"
    guard.paused = True
    assert [guard.offer(bytes([n]), 0.1 * n) for n in range(3)] == [None, None, None]
    assert guard.release_at is None and guard.release(5.0) == []  # no deadline, nothing out, while paused
    assert list(guard.held) == [b"\x00", b"\x01", b"\x02"]
    guard.paused = False
    assert guard.release(5.0) == [b"\x00", b"\x01", b"\x02"]
    assert guard.offer(b"after", 5.0) == b"after"
    guard.paused = True
    for _ in range(100):  # bounded while paused too
        guard.offer(b"x", 6.0)
    assert len(guard.held) == 32 and guard.dropped == 68
