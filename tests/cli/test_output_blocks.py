"""``efmoam replay`` of a capture file writes its report in blocks, even under PYTHONUNBUFFERED.

Where stdout writes through (PYTHONUNBUFFERED, ``python -u``), each timeline line was a
system call; `block_buffered` gives a report of a capture file a buffered stream over the
same descriptor instead (a capture from standard input and a terminal keep lines going
out as they come).  The report is the same, a reader that goes away is still a quiet exit
141, and a write cut short by a signal loses nothing.
"""

from __future__ import annotations

import io
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from efmoam.cli import EXIT_BROKEN_PIPE
from efmoam.cli.main import block_buffered
from pdu import EventNotification, LinkEventTlv, encode
from tests.cli.conftest import subprocess_env

REPO = Path(__file__).resolve().parents[2]
EVENTS = REPO / "pcaps" / "interop" / "events.pcapng"


@pytest.fixture
def pipe() -> Iterator[tuple[int, io.TextIOWrapper]]:
    """(the read end, a text stream over the write end's raw file, writing through, as
    stdout is under -u)."""
    read_end, write_end = os.pipe()
    stream = io.TextIOWrapper(io.FileIO(write_end, "w"), write_through=True)
    try:
        yield read_end, stream
    finally:
        stream.close()
        os.close(read_end)


def test_a_capture_file_gets_a_buffered_stream_over_the_same_descriptor(pipe: tuple[int, io.TextIOWrapper]) -> None:
    read_end, stream = pipe
    out = block_buffered(stream, "capture.pcap")
    assert out is not stream and isinstance(out.buffer, io.BufferedWriter)  # (it rewrites what a short write left)
    out.write("one line\n")
    assert not select.select([read_end], [], [], 0)[0], "held in the buffer"
    out.flush()
    assert os.read(read_end, 100) == b"one line\n"
    out.close()  # leaves the descriptor open: stdout goes on
    stream.write("after\n")
    assert os.read(read_end, 100) == b"after\n"


def test_standard_input_a_terminal_and_a_buffered_stream_keep_their_stream(
    pipe: tuple[int, io.TextIOWrapper],
) -> None:
    _, stream = pipe
    assert block_buffered(stream, "-") is stream
    leader, follower = os.openpty()
    terminal = io.TextIOWrapper(io.FileIO(follower, "w"), write_through=True)
    try:
        assert block_buffered(terminal, "capture.pcap") is terminal
    finally:
        terminal.close()
        os.close(leader)
    buffered = io.StringIO()
    assert block_buffered(buffered, "capture.pcap") is buffered  # type: ignore[arg-type]


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


def event_capture(path: Path, count: int) -> Path:
    """A plain pcap of `count` Event Notifications of one speaker, a second apart (each news)."""
    tlv = LinkEventTlv(2, 0, 10, 1, 5, 5, 1)
    with path.open("wb") as out:
        out.write((0xA1B2C3D4).to_bytes(4, "little") + bytes.fromhex("02000400") + bytes(8))
        out.write((65535).to_bytes(4, "little") + (1).to_bytes(4, "little"))
        for n in range(count):
            frame = encode(EventNotification("02:00:00:00:00:0a", 0x50, n & 0xFFFF, (tlv,)))
            header = [1_700_000_000 + n, 0, len(frame), len(frame)]
            out.write(b"".join(value.to_bytes(4, "little") for value in header) + frame)
    return path


def test_a_reader_gone_is_a_quiet_exit_in_blocks_too(tmp_path: Path) -> None:
    capture = event_capture(tmp_path / "many.pcap", 3000)
    env = subprocess_env() | {"PYTHONUNBUFFERED": "1"}
    script = f'"{sys.executable}" -m efmoam.cli replay "{capture}" | head -n 2; echo "status ${{PIPESTATUS[0]}}"'
    done = subprocess.run(["bash", "-c", script], check=False, capture_output=True, text=True, env=env, timeout=120)
    lines = done.stdout.splitlines()
    assert lines[0].startswith("FRAME") and lines[1].startswith("1  ")
    assert lines[2] == f"status {EXIT_BROKEN_PIPE}"
    assert done.stderr == ""


def test_writes_cut_short_by_signals_lose_nothing(tmp_path: Path) -> None:
    """Stopped and continued while its pipe is full, a write of a block comes back short:
    the report still arrives whole (a text stream straight over the raw file dropped the
    rest of each such block)."""
    capture = event_capture(tmp_path / "many.pcap", 20_000)
    expected = replay(str(capture), unbuffered=False).stdout
    env = subprocess_env() | {"PYTHONUNBUFFERED": "1"}
    child = subprocess.Popen(
        [sys.executable, "-m", "efmoam.cli", "replay", str(capture)], stdout=subprocess.PIPE, env=env, cwd=REPO
    )
    assert child.stdout is not None
    received = bytearray()
    try:
        time.sleep(0.5)  # its pipe fills
        for _ in range(150):
            child.send_signal(signal.SIGSTOP)
            time.sleep(0.002)
            child.send_signal(signal.SIGCONT)
            received += os.read(child.stdout.fileno(), 12_288)  # a little at a time: it stays blocked mid-write
        received += child.stdout.read()
    finally:
        child.send_signal(signal.SIGCONT)  # (should the reading above have failed between the two)
        try:
            child.wait(60)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    assert len(expected) > 1_000_000
    assert received.decode() == expected
