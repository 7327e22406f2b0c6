"""Observe mode on captures trimmed by hand: capture gaps, silences, loopbacks across gaps,
reused event sequence numbers, Organization Specific OAMPDUs; and pcaps/trimmed/ as written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

from efmoam.offline.capture import CaptureRecord
from efmoam.offline.replay.observe import Observer
from pdu import Flag, LoopbackCommand, OrgSpecificPdu, encode
from tests.cli.conftest import BASE_TIME
from tests.replay.frames import (
    A_LOCAL,
    B_LOCAL,
    EVALUATING,
    STABLE,
    A,
    B,
    conversation,
    details,
    event,
    findings,
    frame_event,
    info,
    loopback,
    observe,
    remote,
    run_text,
    steady,
    write,
)

T0 = BASE_TIME
REPO = Path(__file__).resolve().parents[2]


def timeline(frames: list[tuple[float, bytes]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    observer = Observer(on_entry=entries.append)
    observer.run(CaptureRecord(n, t, data, len(data), 0, 1) for n, (t, data) in enumerate(frames, 1))
    return entries, observer.summary()


# -- defect 1: a stretch in which nobody sent anything is a capture gap -----------------------


@pytest.mark.parametrize("quiet", [2.5, 3.5, 4.4])  # A silent for quiet + 0.5 s: under the lost-link time
def test_a_stretch_with_no_frame_at_all_is_a_gap_not_late_keepalives(quiet: float) -> None:
    frames = conversation(3) + conversation(3, start=2.5 + quiet)  # B last at 2.5, A again at 2.5 + quiet
    summary = observe(frames)
    assert [g["seconds"] for g in summary["gaps"]] == [pytest.approx(quiet)]
    assert findings(summary, A) == {}
    assert findings(summary, B) == {}


def test_late_keepalive_after_a_gap_while_the_peer_is_heard() -> None:
    after = [(T0 + 10 + s, steady(B)) for s in range(4)] + [(T0 + 12.5, steady(A))]  # A 2.5 s after the gap
    summary = observe(conversation(3) + sorted(after))
    assert findings(summary, A) == {"keepalive_late": 1, "capture_gap": 1}
    (late,) = details(summary, A, "keepalive_late")
    assert late["frames"] == [5, 10]  # A's last frame before the gap, its next one


def test_silence_before_a_gap_is_judged_on_its_own() -> None:
    # A stops at 2 s, B goes on to 9.5 s (A silent for 7.5 s while B is heard), then a gap
    frames = conversation(3) + conversation(7, start=3, skip=(A,)) + conversation(2, start=60)
    summary = observe(frames)
    assert findings(summary, A) == {"silence": 1, "capture_gap": 1}
    assert findings(summary, B) == {"lost_link_ignored": 1, "capture_gap": 1}


# -- defect 4: the peer of a silent speaker, flagged while the silence lasts -------------------


def test_lost_link_ignored_is_found_during_the_silence() -> None:
    frames = conversation(3) + conversation(10, start=3, skip=(A,)) + conversation(3, start=13)
    entries, summary = timeline(frames)
    assert findings(summary, B) == {"lost_link_ignored": 1}  # once, not again when A speaks
    (ignored,) = [e for e in entries if e.get("kind") == "lost_link_ignored"]
    b_after_expiry = next(n for n, (t, data) in enumerate(frames, 1) if t > T0 + 2.0 + 5.0 and data == steady(B))
    assert ignored["frame"] == b_after_expiry  # A's last frame at 2 s: the timer ran out at 7 s
    a_back = next(i for i, e in enumerate(entries) if e.get("kind") == "silence")
    assert entries.index(ignored) < a_back


def test_peer_that_leaves_send_any_after_the_lost_link_time_is_not_flagged() -> None:
    fell_back = info(B, EVALUATING, B_LOCAL)
    frames = conversation(3) + [(T0 + 3.5 + s, steady(B)) for s in range(4)]  # SEND_ANY to 6.5 s
    frames += [(T0 + 7.5 + s, fell_back) for s in range(5)]  # ACTIVE_SEND_LOCAL once the timer ran out
    summary = observe(frames)
    assert "lost_link_ignored" not in findings(summary, B)
    assert findings(summary, A) == {"silence": 1}


def test_no_lost_link_ignored_across_a_whole_capture_gap() -> None:
    summary = observe(conversation(3) + conversation(3, start=30))
    assert "lost_link_ignored" not in findings(summary, A)
    assert "lost_link_ignored" not in findings(summary, B)


# -- defect 2: a loopback across a capture gap ---------------------------------------------------


def loopback_across_a_gap() -> list[tuple[float, bytes]]:
    looping = attrs.evolve(B_LOCAL, revision=8, parser_action=1, mux_action=1)
    back = attrs.evolve(B_LOCAL, revision=9)
    return [
        *conversation(1),
        (T0 + 1.0, loopback(A, LoopbackCommand.ENABLE)),  # frame 3
        (T0 + 1.1, info(B, STABLE, looping, remote(A_LOCAL))),  # frame 4
        (T0 + 1.5, steady(A)),
        # the capture stops; the disable and the end of looping are not in it
        (T0 + 100.0, steady(A)),  # frame 6
        (T0 + 100.5, info(B, STABLE, back, remote(A_LOCAL))),  # frame 7
    ]


def test_a_loopback_across_a_gap_keeps_what_was_seen() -> None:
    summary = observe(loopback_across_a_gap())
    assert summary["speakers"][A]["loopbacks"] == [
        {"enable_frame": 3, "time": 1.0, "looping_frame": 4, "disable_frame": None, "ended_frame": 7, "gaps": 1}
    ]


def test_the_summary_says_what_was_not_captured_never_none(tmp_path: Path) -> None:
    _, out, _ = run_text(write(tmp_path, loopback_across_a_gap()))
    assert "loopback: enable at frame 3, peer looping at frame 4, disable not captured, ended at frame 7" in out
    assert "(1 capture gap while it was open)" in out
    assert "None" not in out, out


# -- defect 7: a reused sequence number with other TLVs ---------------------------------------


def test_reused_sequence_with_other_tlvs_names_the_sequence_and_plain_duplicates_are_not_findings() -> None:
    frames = [
        *conversation(1),
        (T0 + 1.0, event(A, 7, frame_event(errors=5))),
        (T0 + 1.1, event(A, 7, frame_event(errors=5))),  # a plain duplicate
        (T0 + 1.2, event(A, 7, frame_event(errors=6, total=6))),  # reused with other TLVs
    ]
    entries, summary = timeline(frames)
    assert findings(summary, A) == {"duplicate_event_differs": 1}
    assert details(summary, A, "duplicate_event_differs")[0]["detail"] == "sequence 7 repeated with other TLVs"
    assert [e["frame"] for e in entries if e["what"] == "duplicate_event"] == [4]
    assert summary["speakers"][A]["events"][0]["duplicates"] == 1


# -- Organization Specific OAMPDUs -----------------------------------------------------------


def test_organization_specific_oampdus_are_counted_per_oui_and_not_acted_on(tmp_path: Path) -> None:
    cisco = encode(OrgSpecificPdu(A, STABLE, 0x00000C, b"\x01\x02"))
    other = encode(OrgSpecificPdu(A, STABLE | Flag.DYING_GASP, 0x0A0B0C, b"\x09"))
    frames = [*conversation(1), (T0 + 1.0, cisco), (T0 + 1.1, cisco), (T0 + 1.2, other), *conversation(2, start=1.5)]
    summary = observe(frames)
    speaker = summary["speakers"][A]
    assert speaker["organization_specific"] == [
        {"oui": "00:00:0c", "name": "Cisco", "count": 2},
        {"oui": "0a:0b:0c", "name": None, "count": 1},
    ]
    assert speaker["state"] == "SEND_ANY"
    assert findings(summary, A) == {}
    # its flags are the speaker's: the Dying Gasp it carries is a flag event
    flags = [e for e in speaker["events"] if e["kind"] == "flag"]
    assert [(e["flag"], e["change"]) for e in flags] == [("dying_gasp", "raised"), ("dying_gasp", "cleared")]
    _, out, _ = run_text(write(tmp_path, frames))
    assert "  organization specific: 00:00:0c Cisco x2, 0a:0b:0c x1" in out


# -- pcaps/trimmed -----------------------------------------------------------------------------


def test_the_trimmed_captures_are_what_make_trimmed_writes() -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "tests" / "replay" / "make_trimmed.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
