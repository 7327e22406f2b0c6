"""Play mode for a speaker that joins after its peer: our engine starts with its first frame.

pcaps/trimmed/late-joiner.pcap is discovery.pcap after 3 s of "a" alone in
ACTIVE_SEND_LOCAL (tests/replay/make_trimmed.py): "b" starts 3 s into the capture.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from efmoam.offline.replay.play import play
from tests.cli.conftest import subprocess_env
from tests.replay.frames import A, conversation, write

REPO = Path(__file__).resolve().parents[2]
LATE_JOINER = REPO / "pcaps" / "trimmed" / "late-joiner.pcap"
LAB = REPO / "pcaps" / "daemon" / "lab.pcapng"
ENGINE_A, ENGINE_B = "02:00:00:00:00:0a", "02:00:00:00:00:0b"
LAB_A = "02:00:00:00:aa:01"


def states(report: dict[str, object], side: str) -> list[tuple[str, float]]:
    return [(s["state"], s["time"]) for s in report[side]["states"]]  # type: ignore[index]


def test_a_speaker_that_joins_after_its_peer_plays_without_divergence() -> None:
    report = play(LATE_JOINER, ENGINE_B)
    assert report["divergences"] == []
    theirs, ours = states(report, "theirs"), states(report, "ours")
    assert theirs[0] == ("ACTIVE_SEND_LOCAL", 3.0)
    assert report["engine_states"][0]["time"] == 3.0  # our engine started with b, not with the capture
    # b heard a's keep-alive recorded at the instant b started: so did our engine
    assert [s for s, _ in ours] == [s for s, _ in theirs] == ["ACTIVE_SEND_LOCAL", "SEND_LOCAL_REMOTE_OK", "SEND_ANY"]
    assert all(abs(a - b) <= 0.002 for (_, a), (_, b) in zip(theirs, ours, strict=True))
    assert report["ours"]["counts"] == report["theirs"]["counts"] == {"information": 12}


def test_the_speaker_that_was_there_first_plays_as_before() -> None:
    report = play(LATE_JOINER, ENGINE_A)
    assert report["divergences"] == []
    assert states(report, "ours")[0] == ("ACTIVE_SEND_LOCAL", 0.0)


def test_a_daemon_that_started_after_its_peer_does_not_diverge_while_it_runs() -> None:
    # lab.pcapng: A's daemon starts 3 s after B's, its first frame says it had heard nothing
    report = play(LAB, LAB_A)
    assert states(report, "ours")[:2] == [("ACTIVE_SEND_LOCAL", 3.007318), ("SEND_ANY", 3.00821)]
    assert states(report, "theirs") == [("ACTIVE_SEND_LOCAL", 3.007318), ("SEND_ANY", 3.010930)]
    # what is left: A stopped (a Dying Gasp at 22.5 s, then nothing), our engine goes on
    assert [(d["what"], d.get("time")) for d in report["divergences"]] == [("state", 27.536846), ("count", None)]


def test_a_first_frame_that_shows_the_peer_heard_makes_the_engine_hear_the_peers_latest(tmp_path: Path) -> None:
    # a capture of a running link that begins with B's frame: A's first frame (0.5 s later) is in
    # SEND_ANY and echoes B's Local TLV, so our engine hears B's frame before it, and is in SEND_ANY at once
    report = play(write(tmp_path, conversation(10)[1:]), A)
    assert states(report, "theirs") == [("SEND_ANY", 0.5)]
    assert states(report, "ours") == [("ACTIVE_SEND_LOCAL", 0.5), ("SEND_ANY", 0.5)]
    # as when the capture begins with A's frame: our engine's own start is the one divergence
    assert [d["detail"] for d in report["divergences"]] == ["theirs: nothing; ours: ACTIVE_SEND_LOCAL at 0.500"]


@pytest.mark.skipif(not (shutil.which("editcap") and shutil.which("mergecap")), reason="needs editcap and mergecap")
def test_the_trimmed_captures_are_what_make_trimmed_writes() -> None:
    command = [sys.executable, str(REPO / "tests" / "replay" / "make_trimmed.py"), "--check"]
    result = subprocess.run(command, capture_output=True, text=True, env=subprocess_env(), check=False)
    assert result.returncode == 0, result.stdout + result.stderr
