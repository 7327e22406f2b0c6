"""What the loop records for the metrics per frame and per counter read (issue 18: kept raw,
turned into what the metrics show when a scrape reads it)."""

from __future__ import annotations

from efmoam.core.linkmon import CounterSample
from efmoam.daemon.metrics import Telemetry
from efmoam.daemon.policing import RxPolicer

PEER, OTHER = "02:00:00:00:bb:01", "02:00:00:00:cc:01"


def frame_from(mac: str) -> bytes:
    return bytes.fromhex("0180c2000002" + mac.replace(":", "") + "88090300")


def test_the_time_of_the_last_frame_from_the_peer_follows_the_peer() -> None:
    """The policer notes it as it lets a frame of the bound peer through (no work per frame
    elsewhere); the frame that names a new peer counts too."""
    policer = RxPolicer(20, 5, 0.0)
    assert policer.refuse(frame_from(PEER), 1.0) is None
    assert policer.peer_heard_at is None  # no peer yet
    policer.bind(PEER, frame_from(PEER), 1.0)  # that frame named the peer
    assert policer.peer_heard_at == 1.0
    policer.refuse(frame_from(PEER), 2.0)
    policer.refuse(frame_from(OTHER), 3.0)  # not the peer's
    assert policer.peer_heard_at == 2.0
    policer.bind(OTHER)  # a new peer (by an output, no frame): its frames count, the old one's no longer
    assert policer.peer_heard_at == 2.0
    policer.refuse(frame_from(PEER), 4.0)
    assert policer.peer_heard_at == 2.0
    policer.refuse(frame_from(OTHER), 5.0)
    assert policer.peer_heard_at == 5.0
    policer.bind(OTHER, frame_from(PEER), 6.0)  # the same peer again: nothing new heard
    assert policer.peer_heard_at == 5.0
    for _ in range(33):  # frames over the peer's rate are not heard
        policer.refuse(frame_from(OTHER), 7.0)
    assert policer.peer_policed > 0 and policer.peer_heard_at == 7.0


def test_which_standard_counters_the_last_read_had_is_worked_out_when_read() -> None:
    telemetry = Telemetry()
    assert telemetry.counters_present.get("eth0") is None
    telemetry.last_samples["eth0"] = CounterSample(errored_frames=1, frames_received=10)
    assert telemetry.counters_present.get("eth0") == (True, True, False)
    telemetry.last_samples["eth0"] = CounterSample(symbol_errors=3)  # the last read counts
    assert telemetry.counters_present["eth0"] == (False, False, True)
    assert dict(telemetry.counters_present) == {"eth0": (False, False, True)}
    telemetry.forget("eth0")
    assert telemetry.counters_present.get("eth0") is None and len(telemetry.counters_present) == 0
