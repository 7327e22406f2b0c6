"""``efmoam replay -``: standard input in every mode (observe, play, check, write-expect, transmit).

Play and transmit read their capture more than once: standard input is copied to a
temporary file first, which must be gone afterwards (also on an error and on Ctrl-C).
Check and write-expect read it once, and need ``--expect FILE`` (no sidecar beside it).
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from efmoam.cli import main
from efmoam.linux.packet import OamSocket
from efmoam.offline.source import capture_path
from tests.cli.conftest import subprocess_env
from tests.cli_runner import CliRunner
from tests.linux.netns import in_netns, needs_root, veth_pair
from tests.replay.frames import A, conversation, write

REPO = Path(__file__).resolve().parents[2]
DISCOVERY = REPO / "pcaps" / "engine" / "discovery.pcap"
EXPECT = REPO / "pcaps" / "engine" / "discovery.expect.json"
ENGINE_B = "02:00:00:00:00:0b"

#: the modes that read a capture file, as command-line arguments after CAPTURE
MODES = {
    "observe": [],
    "observe-json": ["--json"],
    "play": ["--as", ENGINE_B],
    "play-json": ["--as", ENGINE_B, "--json"],
    "check": ["--check", "--expect", str(EXPECT)],
    "check-json": ["--check", "--expect", str(EXPECT), "--json"],
}


@pytest.fixture
def spool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The directory where standard input is copied; it must be empty after each command."""
    directory = tmp_path / "spool"
    directory.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(directory))
    yield directory
    assert list(directory.iterdir()) == [], "a copy of standard input was left behind"


def replay(*args: str, input: bytes | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["replay", *args], input=input)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("mode", sorted(MODES))
def test_every_mode_reads_standard_input_as_it_reads_the_file(mode: str, spool: Path) -> None:
    from_file = replay(str(DISCOVERY), *MODES[mode])
    from_stdin = replay("-", *MODES[mode], input=DISCOVERY.read_bytes())
    assert from_file[0] in (0, 1) and from_file[2] == ""
    expected = from_file[1].replace(str(DISCOVERY), "<stdin>")
    assert from_stdin == (from_file[0], expected, "")


def test_write_expect_from_standard_input_writes_what_the_file_gives(tmp_path: Path, spool: Path) -> None:
    written = {}
    for name, source, data in (("file", str(DISCOVERY), None), ("stdin", "-", DISCOVERY.read_bytes())):
        path = tmp_path / f"{name}.expect.json"
        assert replay(source, "--write-expect", "--expect", str(path), input=data) == (0, f"{path}: written\n", "")
        written[name] = json.loads(path.read_text())
    assert written["stdin"] == written["file"]
    assert written["stdin"]["speakers"][ENGINE_B]["counts"] == {"information": 12}


@pytest.mark.parametrize("option", ["--check", "--write-expect"])
def test_check_and_write_expect_from_standard_input_need_an_expectations_file(option: str, spool: Path) -> None:
    status, out, err = replay("-", option, input=DISCOVERY.read_bytes())
    assert (status, out) == (2, "")
    assert "Error: standard input has no NAME.expect.json beside it: give --expect FILE" in err
    assert not Path("-.expect.json").exists()


def test_check_reports_differences_under_the_name_stdin(tmp_path: Path, spool: Path) -> None:
    wanted = json.loads(EXPECT.read_text())
    wanted["speakers"][ENGINE_B]["counts"] = {"information": 11}
    (tmp_path / "wrong.expect.json").write_text(json.dumps(wanted))
    status, out, _ = replay("-", "--expect", str(tmp_path / "wrong.expect.json"), input=DISCOVERY.read_bytes())
    assert status == 1
    assert out.startswith(f"<stdin>: 1 differences from {tmp_path / 'wrong.expect.json'}:\n")


BAD_INPUT = {"empty": b"", "garbage": b"\x00\x01 not a capture at all " * 40}
ALL_MODES = {
    **MODES,
    "write-expect": ["--write-expect", "--expect", "EXPECT"],
    "transmit": ["--to", "veth9"],
}


@pytest.mark.parametrize("mode", sorted(ALL_MODES))
@pytest.mark.parametrize("kind", sorted(BAD_INPUT))
def test_empty_or_garbage_standard_input_is_a_one_line_error(kind: str, mode: str, tmp_path: Path, spool: Path) -> None:
    args = [str(tmp_path / "x.expect.json") if a == "EXPECT" else a for a in ALL_MODES[mode]]
    status, _, err = replay("-", *args, input=BAD_INPUT[kind])
    magic = "empty" if kind == "empty" else BAD_INPUT[kind][:4].hex()
    assert (status, err) == (2, f"efmoam replay: error: <stdin>: not a pcap or pcapng file (unknown magic {magic})\n")
    assert not (tmp_path / "x.expect.json").exists()


def test_a_capture_damaged_half_way_names_stdin(spool: Path) -> None:
    data = DISCOVERY.read_bytes()[:-30]  # the last record cut short
    status, _, err = replay("-", "--as", ENGINE_B, input=data)
    assert (status, err) == (
        2,
        "efmoam replay: error: <stdin>: record 24 at offset 1772: truncated packet data (30 of 60 bytes)\n",
    )


def test_play_from_a_real_pipe(tmp_path: Path) -> None:
    env = {**subprocess_env(), "TMPDIR": str(tmp_path)}
    command = [sys.executable, "-m", "efmoam.cli", "replay", "-", "--as", ENGINE_B]
    with DISCOVERY.open("rb") as capture:
        piped = subprocess.Popen(["cat"], stdin=capture, stdout=subprocess.PIPE)
        assert piped.stdout is not None
        result = subprocess.run(command, stdin=piped.stdout, capture_output=True, env=env, check=False)
        piped.stdout.close()
        piped.wait()
    from_file = subprocess.run(
        [sys.executable, "-m", "efmoam.cli", "replay", str(DISCOVERY), "--as", ENGINE_B],
        capture_output=True,
        env=env,
        check=False,
    )
    assert (result.returncode, result.stderr) == (0, b"")
    assert result.stdout == from_file.stdout and result.stdout.endswith(b"\nno divergences\n")
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_while_reading_standard_input_leaves_no_copy(tmp_path: Path) -> None:
    env = {**subprocess_env(), "TMPDIR": str(tmp_path)}
    command = [sys.executable, "-m", "efmoam.cli", "replay", "-", "--as", ENGINE_B]
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert process.stdin is not None
    process.stdin.write(DISCOVERY.read_bytes()[:100])  # and the pipe stays open: still copying
    process.stdin.flush()
    deadline = time.monotonic() + 30
    # tempfile.gettempdir() first writes and removes a probe file in TMPDIR: wait for the copy by name
    while not list(tmp_path.glob("efmoam-stdin-*")):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)
    (copy,) = tmp_path.iterdir()
    assert copy.name.startswith("efmoam-stdin-")
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode != 0
    assert b"Traceback" not in err, err.decode()
    assert list(tmp_path.iterdir()) == []


class _Reads(io.BytesIO):
    """A stream that remembers how much each read asked for."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.asked: list[int] = []

    def read(self, size: int | None = -1) -> bytes:
        self.asked.append(-1 if size is None else size)
        return super().read(size)


def test_standard_input_is_copied_in_bounded_chunks(spool: Path) -> None:
    data = os.urandom(3 * 1024 * 1024 + 5)
    stream = _Reads(data)
    with capture_path("-", stream) as path:
        assert Path(path).parent == spool
        assert Path(path).read_bytes() == data
    assert len(stream.asked) >= 4 and all(0 < size <= 1024 * 1024 for size in stream.asked)
    with capture_path(str(DISCOVERY), stream) as path:  # a file is read where it is
        assert path == str(DISCOVERY)


def test_the_copy_is_removed_when_the_command_fails(spool: Path) -> None:
    with pytest.raises(RuntimeError), capture_path("-", io.BytesIO(b"data")) as path:
        assert Path(path).exists()
        raise RuntimeError


# -- transmit: real frames on a real veth pair ---------------------------------------------


def _received(sock: OamSocket, count: int) -> list[bytes]:
    frames: list[bytes] = []
    deadline = time.monotonic() + 10
    while len(frames) < count and time.monotonic() < deadline:
        frames += sock.receive(64)
        time.sleep(0.02)
    return frames


@needs_root
@pytest.mark.root
def test_transmit_from_standard_input(tmp_path: Path, spool: Path) -> None:
    capture = write(tmp_path, conversation(2))  # A's two frames, a second apart
    data = capture.read_bytes()
    sent = [frame for _, frame in conversation(2) if frame[6:12].hex(":") == A]
    env = {**subprocess_env(), "TMPDIR": str(spool)}
    with veth_pair() as (ns_a, ns_b):
        sock = in_netns(ns_b, lambda: OamSocket("veth1"))
        try:
            # in-process (CliRunner), from a thread in the sending namespace
            status, out, err = in_netns(ns_a, lambda: replay("-", "--to", "veth0", "--from", A, input=data))
            assert (status, err) == (0, ""), err
            assert out.startswith(f"sending the frames of {A} on veth0 with their original timing\nsent 2 frames")
            assert _received(sock, 2) == sent
            # and a real process reading a pipe
            command = ["ip", "netns", "exec", ns_a, sys.executable, "-m", "efmoam.cli", "replay", "-", "--to", "veth0"]
            result = subprocess.run(
                [*command, "--from", A], input=data, capture_output=True, env=env, timeout=60, check=False
            )
            assert (result.returncode, result.stderr) == (0, b""), result.stderr
            assert _received(sock, 2) == sent
        finally:
            sock.close()
