"""``efmoam replay`` of a capture file writes its report in blocks, even under PYTHONUNBUFFERED.

Where stdout writes through (PYTHONUNBUFFERED, ``python -u``), each timeline line was a
system call; `write_in_blocks` turns that off for a report of a capture file only (a
capture from standard input and a terminal keep lines going out as they come).  The
report is the same, and a reader that goes away is still a quiet exit 141.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from efmoam.cli import EXIT_BROKEN_PIPE
from efmoam.cli.main import write_in_blocks
from pdu import EventNotification, LinkEventTlv, encode
from tests.cli.conftest import subprocess_env

REPO = Path(__file__).resolve().parents[2]
EVENTS = REPO / "pcaps" / "interop" / "events.pcapng"


@pytest.fixture
def pipe_writer() -> Iterator[io.TextIOWrapper]:
    """A text stream over a pipe's unbuffered end, writing through, as stdout is under -u."""
    read_end, write_end = os.pipe()
    stream = io.TextIOWrapper(io.FileIO(write_end, "w"), write_through=True)
    try:
        yield stream
    finally:
        stream.close()
        os.close(read_end)


def test_a_capture_file_is_written_in_blocks(pipe_writer: io.TextIOWrapper) -> None:
    assert write_in_blocks(pipe_writer, "capture.pcap")
    assert not pipe_writer.write_through


def test_standard_input_keeps_writing_through(pipe_writer: io.TextIOWrapper) -> None:
    assert not write_in_blocks(pipe_writer, "-")
    assert pipe_writer.write_through


def test_a_terminal_keeps_writing_through() -> None:
    leader, follower = os.openpty()
    stream = io.TextIOWrapper(io.FileIO(follower, "w"), write_through=True)
    try:
        assert not write_in_blocks(stream, "capture.pcap")
        assert stream.write_through
    finally:
        stream.close()
        os.close(leader)


def test_a_stream_that_buffers_already_is_left_alone() -> None:
    assert not write_in_blocks(io.StringIO(), "capture.pcap")


def replay(*args: str, unbuffered: bool) -> subprocess.CompletedProcess[str]:
    env = subprocess_env()
    env.pop("PYTHONUNBUFFERED", None)
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "efmoam.cli", "replay", *args],
        check=False, capture_output=True, text=True, env=env, timeout=120, cwd=REPO,
    )  # fmt: skip


@pytest.mark.parametrize("form", ["plain", "json"])
def test_the_report_is_the_same_written_in_blocks(form: str) -> None:
    buffered, through = (replay("-f", form, str(EVENTS), unbuffered=flag) for flag in (False, True))
    assert through.returncode == buffered.returncode == 1  # the capture has findings
    assert through.stdout == buffered.stdout
    assert "FINDING" in through.stdout or '"finding"' in through.stdout


def test_a_reader_gone_is_a_quiet_exit_in_blocks_too(tmp_path: Path) -> None:
    src = "02:00:00:00:00:0a"
    tlv = LinkEventTlv(2, 0, 10, 1, 5, 5, 1)
    frames = [encode(EventNotification(src, 0x50, n, (tlv,))) for n in range(3000)]
    capture = tmp_path / "many.pcap"
    with capture.open("wb") as out:  # a plain pcap: one record a frame, a second apart
        out.write((0xA1B2C3D4).to_bytes(4, "little") + bytes.fromhex("02000400") + bytes(8))
        out.write((65535).to_bytes(4, "little") + (1).to_bytes(4, "little"))
        for n, frame in enumerate(frames):
            header = [1_700_000_000 + n, 0, len(frame), len(frame)]
            out.write(b"".join(value.to_bytes(4, "little") for value in header) + frame)
    env = subprocess_env() | {"PYTHONUNBUFFERED": "1"}
    script = f'"{sys.executable}" -m efmoam.cli replay "{capture}" | head -n 2; echo "status ${{PIPESTATUS[0]}}"'
    done = subprocess.run(["bash", "-c", script], check=False, capture_output=True, text=True, env=env, timeout=120)
    lines = done.stdout.splitlines()
    assert lines[0].startswith("FRAME") and lines[1].startswith("1  ")
    assert lines[2] == f"status {EXIT_BROKEN_PIPE}"
    assert done.stderr == ""
