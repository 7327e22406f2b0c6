"""A stand-in daemon for the collector: real `OamPort` engines, no sockets; reading scrapes."""

from __future__ import annotations

import threading
from typing import Any

import attrs

from efmoam.config.model import PortProfile
from efmoam.core import OamPort
from efmoam.core.linkmon import CounterSample, LinkMonitoringSettings, MonitorSettings, PortAction
from efmoam.core.linkmon.settings import LocalSfAction
from efmoam.core.settings import PortSettings
from efmoam.daemon.metrics import Telemetry

WALL = 1_700_000_000.0


@attrs.define
class FakeRuntime:
    name: str
    port: OamPort
    profile: PortProfile = PortProfile()
    rx_rate_limited: int = 0
    action_error: str | None = None
    actions_reapplied: int = 0
    internal_errors: int = 0
    peer_heard_at: float | None = None

    @property
    def receive_drops(self) -> tuple[tuple[str, int], ...]:
        return (("rate_limit", self.rx_rate_limited),)


class FakeDaemon:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.telemetry = Telemetry()
        self.wall_clock_offset = WALL
        self.ports: dict[str, FakeRuntime] = {}
        self.errors: dict[str, int] = {}

    def health(self) -> dict[str, Any]:
        state = {"saves": 3, "save_failures": 1, "error": None, "set_aside": None}
        return {"errors": dict(self.errors), "state": state, "control": {"accepted": 2}}

    def add(self, name: str, index: int = 0) -> FakeRuntime:
        settings = PortSettings(
            link_monitoring=LinkMonitoringSettings(
                enabled=True,
                errored_frame=MonitorSettings(enabled=True, window=1.0, sf_threshold=5, sd_threshold=2),
                local_sf_action=LocalSfAction(port_action=PortAction.OUT_OF_SERVICE),
            )
        )
        mac = f"02:00:00:{index >> 16 & 0xFF:02x}:{index >> 8 & 0xFF:02x}:{index & 0xFF:02x}"
        runtime = FakeRuntime(name, OamPort(settings, mac, now=0.0, wall_clock_offset=WALL))
        self.ports[name] = runtime
        return runtime


def raise_sf(runtime: FakeRuntime, telemetry: Telemetry) -> None:
    """20 errored frames in one 1 s window (SF threshold 5)."""
    port = runtime.port
    for now, errors in ((0.0, 0), (0.5, 0), (1.1, 20), (2.2, 20)):
        sample = CounterSample(errored_frames=errors, frames_received=1000 + int(now * 1000))
        telemetry.last_samples[runtime.name] = sample
        port.on_counters(sample, now=now)
    port.take_outputs()


def discover(daemon: FakeDaemon, a: FakeRuntime, b: FakeRuntime, seconds: int = 4) -> None:
    """Wire two ports' engines back to back until they have discovered each other."""
    for now in map(float, range(seconds)):
        for src, dst in ((a, b), (b, a)):
            src.port.handle_timer(now=now)
            for output in src.port.take_outputs():
                frame = getattr(output, "frame", None)
                if frame is not None:
                    dst.port.receive(frame, now=now)
                    if dst.port.peer_mac is not None:  # the policer's note (`RxPolicer.peer_heard_at`)
                        dst.peer_heard_at = now
            dst.port.take_outputs()


def steady(body: bytes) -> bytes:
    """A scrape without the process's samples (CPU, memory, descriptors: they move between reads)."""
    return b"".join(line for line in body.splitlines(keepends=True) if not line.startswith(b"process_"))
