"""What the loop records for the metrics per frame and per counter read (issue 18: kept raw,
turned into what the metrics show when a scrape reads it)."""

from __future__ import annotations

from typing import cast

from efmoam.core import OamPort
from efmoam.core.linkmon import CounterSample
from efmoam.daemon.metrics import Telemetry

PEER, OTHER = "02:00:00:00:bb:01", "02:00:00:00:cc:01"


class Port:
    """What `Telemetry.received` reads of a port: its peer's MAC."""

    def __init__(self, peer_mac: str | None) -> None:
        self.peer_mac = peer_mac


def frame_from(mac: str) -> bytes:
    return bytes.fromhex("0180c2000002" + mac.replace(":", "") + "88090300")


def test_the_time_of_the_last_frame_from_the_peer_follows_the_peer() -> None:
    telemetry = Telemetry()
    port = Port(None)
    telemetry.received("eth0", cast(OamPort, port), frame_from(PEER), 1.0)
    assert "eth0" not in telemetry.last_peer_frame  # no peer yet
    port.peer_mac = PEER
    telemetry.received("eth0", cast(OamPort, port), frame_from(PEER), 2.0)
    telemetry.received("eth0", cast(OamPort, port), frame_from(OTHER), 3.0)  # not the peer's
    assert telemetry.last_peer_frame["eth0"] == 2.0
    port.peer_mac = OTHER  # a new peer: its frames count, the old one's no longer
    telemetry.received("eth0", cast(OamPort, port), frame_from(PEER), 4.0)
    assert telemetry.last_peer_frame["eth0"] == 2.0
    telemetry.received("eth0", cast(OamPort, port), frame_from(OTHER), 5.0)
    assert telemetry.last_peer_frame["eth0"] == 5.0
    telemetry.forget("eth0")
    assert "eth0" not in telemetry.last_peer_frame


def test_which_standard_counters_the_last_read_had_is_worked_out_when_read() -> None:
    telemetry = Telemetry()
    assert telemetry.counters_present.get("eth0") is None
    telemetry.counters_read("eth0", CounterSample(errored_frames=1, frames_received=10))
    assert telemetry.counters_present.get("eth0") == (True, True, False)
    telemetry.counters_read("eth0", CounterSample(symbol_errors=3))  # the last read counts
    assert telemetry.counters_present["eth0"] == (False, False, True)
    assert dict(telemetry.counters_present) == {"eth0": (False, False, True)}
    telemetry.forget("eth0")
    assert telemetry.counters_present.get("eth0") is None and len(telemetry.counters_present) == 0
