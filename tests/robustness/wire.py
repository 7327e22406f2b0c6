"""A hostile station on the lab's segment: frames sent from side B's namespace at a
paced rate, and a capture of what side A sends (kernel timestamps, via dumpcap)."""

from __future__ import annotations

import contextlib
import socket
import struct
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pdu import Flag, Information, InfoTlv, VariableDescriptor, VariableRequest, encode
from pdu.enums import InfoTlvType, OamConfig
from tests.daemon.lab import Lab
from tests.linux.netns import in_netns

STRANGER = "02:66:66:66:66:01"


def information(src: str, flags: Flag = Flag.LOCAL_STABLE | Flag.REMOTE_STABLE) -> bytes:
    local = InfoTlv(type=InfoTlvType.LOCAL, revision=1, oam_config=OamConfig.ACTIVE, max_pdu_size=1518)
    return encode(Information(src, flags, (local,)))


def variable_request(src: str, leaf: int) -> bytes:
    return encode(VariableRequest(src, Flag.LOCAL_STABLE | Flag.REMOTE_STABLE, (VariableDescriptor(7, leaf),)))


def send_paced(lab: Lab, frames: Callable[[int], bytes], rate: float, seconds: float) -> int:
    """Send frames(n) from B's namespace at `rate` frames/s for `seconds`; returns how many."""

    def send() -> int:
        sent = 0
        with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as raw:
            raw.bind((lab.b.ifname, 0))
            start = time.monotonic()
            while (elapsed := time.monotonic() - start) < seconds:
                due = int(elapsed * rate) + 1
                while sent < due:
                    with contextlib.suppress(OSError):  # ENOBUFS under a flood: lost, as on a wire
                        raw.send(frames(sent))
                    sent += 1
                time.sleep(0.001)
        return sent

    return int(in_netns(lab.ns_b, send))


class Capture:
    """dumpcap on side B's interface: what side A sends, with kernel timestamps."""

    def __init__(self, lab: Lab, path: Path, source_mac: str) -> None:
        self.path = path
        argv = ["ip", "netns", "exec", lab.ns_b, "dumpcap", "-q", "-i", lab.b.ifname, "-P",
                "-f", f"ether proto 0x8809 and ether src {source_mac}", "-w", str(path)]  # fmt: skip
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while not path.exists() or path.stat().st_size == 0:  # the file header: capturing
            assert self.proc.poll() is None, self.proc.stderr.read() if self.proc.stderr else ""
            assert time.monotonic() < deadline, "dumpcap did not start"
            time.sleep(0.05)

    def stop(self) -> list[float]:
        """Stop; the capture's frame times in seconds."""
        self.proc.terminate()
        self.proc.wait(10)
        return pcap_times(self.path.read_bytes())


def pcap_times(data: bytes) -> list[float]:
    """The record times of a classic pcap file (µs or ns resolution)."""
    magic = data[:4]
    order = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    scale = 1e-9 if magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d") else 1e-6
    times, at = [], 24
    while at + 16 <= len(data):
        seconds, fraction, captured, _ = struct.unpack_from(order + "IIII", data, at)
        times.append(seconds + fraction * scale)
        at += 16 + captured
    return times


def most_in_one_second(times: Sequence[float]) -> int:
    """The largest number of frames in any window of one second."""
    best, first = 0, 0
    for last, at in enumerate(times):
        while at - times[first] >= 1.0:
            first += 1
        best = max(best, last - first + 1)
    return best
