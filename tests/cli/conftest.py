"""Fixtures for the ``efmoam`` command-line tests: capture writers and frame builders."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PCAPS = REPO / "pcaps"

#: (seconds since the epoch, frame) or just a frame (then 1 s apart from 1700000000)
Packet = tuple[float, bytes] | bytes
PcapWriter = Callable[..., Path]
PcapngWriter = Callable[..., Path]
RunEfmoam = Callable[..., subprocess.CompletedProcess[str]]

BASE_TIME = 1_700_000_000


def _timed(packets: Sequence[Packet]) -> list[tuple[float, bytes]]:
    return [p if isinstance(p, tuple) else (BASE_TIME + i, p) for i, p in enumerate(packets)]


def pcap_bytes(packets: Sequence[Packet], linktype: int = 1) -> bytes:
    """A little-endian microsecond pcap file holding *packets*."""
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, linktype)]
    for time, data in _timed(packets):
        seconds = int(time)
        micros = round((time - seconds) * 1_000_000)
        out.append(struct.pack("<IIII", seconds, micros, len(data), len(data)) + data)
    return b"".join(out)


def _ng_block(block_type: int, body: bytes) -> bytes:
    body += bytes(-len(body) % 4)
    length = struct.pack("<I", 12 + len(body))
    return struct.pack("<I", block_type) + length + body + length


def pcapng_bytes(packets: Sequence[tuple[int, Packet]], linktypes: Sequence[int]) -> bytes:
    """A pcapng file with one interface per link type; *packets* are (interface, packet)."""
    out = [_ng_block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))]
    out += [_ng_block(1, struct.pack("<HHI", linktype, 0, 0)) for linktype in linktypes]
    for interface, packet in packets:
        ((time, data),) = _timed([packet])
        ticks = round(time * 1_000_000)
        head = struct.pack("<IIIII", interface, ticks >> 32, ticks & 0xFFFFFFFF, len(data), len(data))
        out.append(_ng_block(6, head + data))
    return b"".join(out)


@pytest.fixture
def write_pcap(tmp_path: Path) -> PcapWriter:
    """``write_pcap(name, packets, linktype=1) -> Path`` in the test's tmp dir."""

    def write(name: str, packets: Sequence[Packet], linktype: int = 1) -> Path:
        path = tmp_path / name
        path.write_bytes(pcap_bytes(packets, linktype))
        return path

    return write


@pytest.fixture
def write_pcapng(tmp_path: Path) -> PcapngWriter:
    """``write_pcapng(name, [(interface, packet), ...], linktypes) -> Path``."""

    def write(name: str, packets: Sequence[tuple[int, Packet]], linktypes: Sequence[int]) -> Path:
        path = tmp_path / name
        path.write_bytes(pcapng_bytes(packets, linktypes))
        return path

    return write


def subprocess_env() -> dict[str, str]:
    """The environment for ``python -m efmoam.cli``: the repository on the path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def run_decode(capture: Path, form: str) -> subprocess.CompletedProcess[str]:
    """``efmoam -f FORM decode CAPTURE`` as a real command (exit status and streams kept)."""
    return subprocess.run(
        [sys.executable, "-m", "efmoam.cli", "-f", form, "decode", str(capture)],
        check=False,
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=60,
    )


@pytest.fixture
def efmoam_env() -> dict[str, str]:
    """The environment for a ``python -m efmoam.cli`` subprocess."""
    return subprocess_env()


@pytest.fixture
def run_efmoam() -> RunEfmoam:
    """``run_efmoam(*args) -> CompletedProcess``: a real ``python -m efmoam.cli`` run."""

    def run(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "efmoam.cli", *args]
        return subprocess.run(  # type: ignore[call-overload, no-any-return]
            command, check=False, capture_output=True, text=True, env=subprocess_env(), timeout=120, cwd=REPO, **kwargs
        )

    return run
