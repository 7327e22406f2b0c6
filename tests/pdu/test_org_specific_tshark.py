"""DPoE Organization Specific OAMPDUs: `pdu.oui` against tshark, the independent decoder.

Wireshark's dissector is where `pdu.oui` took the DPoE layout from; here tshark reads the
corpus capture and a seeded batch of generated DPoE OAMPDUs (Get Request with and without
the ONU object context, Get Response / Set Request / Set Response with values, response
codes and 128-octet widths), and its opcode, variable descriptors and response codes
must be ours, frame by frame, in one tshark run each.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from efmoam.offline.capture import read_capture
from pdu import OrgSpecificPdu, decode, encode
from pdu.oui import DPOE, decode_pdu
from tests.pdu.test_tshark_diff import write_pcap

TSHARK = shutil.which("tshark")
pytestmark = [
    pytest.mark.tshark,
    pytest.mark.skipif(TSHARK is None, reason="tshark (Wireshark) is not installed; it is the independent decoder"),
]

REPO = Path(__file__).resolve().parents[2]
CAPTURE = REPO / "pcaps" / "org-specific" / "org-specific.pcap"
FIELDS = ("oampdu.vendor.specific.opcode", "oampdu.variable.descriptor", "oampdu.variable.response.code")
SRC = "02:00:00:00:00:0b"

Reading = tuple[int | None, list[int], list[int]]


def tshark_readings(path: Path) -> list[Reading]:
    """Per frame: DPoE opcode, variable descriptors, response codes (as tshark shows them)."""
    assert TSHARK is not None
    args = [TSHARK, "-n", "-r", str(path), "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,"]
    for field in FIELDS:
        args += ["-e", field]
    lines = subprocess.run(args, capture_output=True, text=True, check=True).stdout.splitlines()
    out = []
    for line in lines:
        opcode, descriptors, codes = [*line.split("\t"), "", "", ""][:3]
        out.append(
            (
                int(opcode, 16) if opcode else None,
                [int(d, 16) for d in descriptors.split(",") if d],
                [int(c, 16) for c in codes.split(",") if c],
            )
        )
    return out


def ours(frame: bytes) -> Reading:
    pdu = decode(frame)
    if not isinstance(pdu, OrgSpecificPdu) or pdu.oui != DPOE:
        return (None, [], [])
    decoded = decode_pdu(pdu.oui, pdu.value, pdu.zeros)
    assert decoded is not None
    variables = decoded["variables"] or []
    return (
        decoded["opcode"],
        [v["branch"] << 16 | v["leaf"] for v in variables],
        [v["code"] for v in variables if v["code"] is not None],
    )


def _descriptor(rng: random.Random) -> bytes:
    return bytes([rng.randrange(1, 256)]) + rng.randrange(0x10000).to_bytes(2, "big")


def _container(rng: random.Random) -> bytes:
    kind = rng.random()
    if kind < 0.3:
        return _descriptor(rng) + bytes([rng.choice([0x80, 0x81, 0x86, 0xA1, 0xA4, 0xFF])])
    if kind < 0.4:
        return _descriptor(rng) + b"\x00" + rng.randbytes(128)
    width = rng.randrange(1, 0x80)
    return _descriptor(rng) + bytes([width]) + rng.randbytes(width)


def generated(count: int = 300) -> list[bytes]:
    """Well-formed DPoE OAMPDUs (each ends its list with a branch of 0), seeded."""
    rng = random.Random(802_3)
    frames: list[bytes] = []
    while len(frames) < count:
        opcode = rng.choice([1, 2, 3, 4])
        if opcode == 1:
            body = b""
            if rng.random() < 0.5:  # the ONU object context, with its width and value
                width = rng.randrange(1, 8)
                body = bytes.fromhex("d60000") + bytes([width]) + rng.randbytes(width)
            body += b"".join(_descriptor(rng) for _ in range(rng.randrange(0, 30)))
        else:
            body = b"".join(_container(rng) for _ in range(rng.randrange(0, 8)))
        value = bytes([opcode]) + body + b"\x00"
        if len(value) <= 1493:
            frames.append(encode(OrgSpecificPdu(SRC, 0x50, DPOE, value)))
    return frames


def test_the_corpus_capture_reads_as_tshark_reads_it() -> None:
    frames = [record.data for record in read_capture(CAPTURE)]
    theirs = tshark_readings(CAPTURE)
    assert len(theirs) == len(frames)
    mine = [ours(frame) for frame in frames]
    assert mine == theirs
    assert sum(1 for opcode, _, _ in mine if opcode is not None) == 4  # the four DPoE frames


def test_generated_dpoe_oampdus_read_as_tshark_reads_them(tmp_path: Path) -> None:
    frames = generated()
    path = tmp_path / "dpoe.pcap"
    write_pcap(path, frames)
    theirs = tshark_readings(path)
    assert len(theirs) == len(frames)
    for number, (frame, reading) in enumerate(zip(frames, theirs, strict=True), 1):
        assert ours(frame) == reading, f"frame {number}: {frame[17:].hex()}"
