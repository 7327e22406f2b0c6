"""Every capture in pcaps/ against its expectations file, and the corpus itself.

The expectations files were written by hand from what each capture shows (see their
``about``); the interop ones are also checked here against Wireshark's reading.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from efmoam.offline.replay import expect
from efmoam.offline.replay.report import EXIT_FINDINGS, EXIT_OK, observe_file, run_check
from tests.cli.conftest import subprocess_env

REPO = Path(__file__).resolve().parents[2]
PCAPS = REPO / "pcaps"
CAPTURES = sorted(p for p in PCAPS.rglob("*") if p.suffix in (".pcap", ".pcapng"))
EOAM = "02:00:00:00:0a:02"
MINIMAL_PEER = "02:00:00:00:bb:02"


def ids(path: Path) -> str:
    return str(path.relative_to(PCAPS))


def test_the_corpus_has_every_kind_of_capture() -> None:
    names = {ids(p) for p in CAPTURES}
    assert {
        "interop/events.pcapng",
        "interop/flags.pcapng",
        "negative/lacp.pcap",
        "negative/slow-ossp.pcap",
        "negative/vlan-tagged-slow.pcap",
        "negative/marker.pcap",
        "daemon/lab.pcapng",
    } <= names
    engine = {n.removeprefix("engine/").removesuffix(".pcap") for n in names if n.startswith("engine/")}
    assert {"discovery", "sf-notification", "flags", "link-fault", "lost-link", "loopback", "variables"} <= engine


@pytest.mark.parametrize("capture", CAPTURES, ids=ids)
def test_capture_has_an_expectations_file_with_words(capture: Path) -> None:
    data = expect.load(expect.sidecar_path(capture))
    assert len(data["about"]) > 40, "say in words what the capture shows"


@pytest.mark.parametrize("capture", CAPTURES, ids=ids)
def test_replay_finds_what_the_expectations_file_says(capture: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    status = run_check(capture, out, err)
    assert status == EXIT_OK, out.getvalue() + err.getvalue()


def test_check_from_the_command_line_reports_a_difference(tmp_path: Path) -> None:
    capture = tmp_path / "events.pcapng"
    capture.write_bytes((PCAPS / "interop" / "events.pcapng").read_bytes())
    wanted = json.loads((PCAPS / "interop" / "events.expect.json").read_text())
    wanted["speakers"][EOAM]["findings"]["short_frame"] = 17
    wanted["speakers"][EOAM]["states"] = ["SEND_ANY"]
    (tmp_path / "events.expect.json").write_text(json.dumps(wanted))
    command = [sys.executable, "-m", "efmoam.cli", "replay", "--check", str(capture)]
    result = subprocess.run(command, capture_output=True, text=True, env=subprocess_env(), check=False)
    assert result.returncode == EXIT_FINDINGS
    assert f"{EOAM}: findings: short_frame: expected 17, found 18" in result.stdout
    assert f'{EOAM}: states: expected ["SEND_ANY"], found ["SEND_LOCAL_REMOTE","SEND_ANY"]' in result.stdout
    (tmp_path / "events.expect.json").unlink()
    result = subprocess.run(command, capture_output=True, text=True, env=subprocess_env(), check=False)
    assert result.returncode == 2
    assert "no expectations file" in result.stderr


def test_write_expect_then_check(tmp_path: Path) -> None:
    capture = tmp_path / "lost.pcap"
    capture.write_bytes((PCAPS / "engine" / "lost-link.pcap").read_bytes())
    assert run_check(capture, io.StringIO(), io.StringIO(), write=True) == EXIT_OK
    written = json.loads((tmp_path / "lost.expect.json").read_text())
    assert written["exit"] == EXIT_FINDINGS
    assert written["speakers"]["02:00:00:00:00:0a"]["findings"] == {"silence": 1}
    assert run_check(capture, io.StringIO(), io.StringIO()) == EXIT_OK


def test_generated_captures_are_what_the_generator_writes() -> None:
    """pcaps/engine and the generated negatives are current (regenerate: tests/replay/make_pcaps.py)."""
    command = [sys.executable, str(REPO / "tests" / "replay" / "make_pcaps.py"), "--check"]
    result = subprocess.run(command, capture_output=True, text=True, env=subprocess_env(), check=False)
    assert result.returncode == 0, result.stdout + result.stderr


# -- the interop captures against Wireshark's reading (an independent decoder) --------------


def tshark_rows(name: str) -> list[dict[str, str]]:
    with (PCAPS / "interop" / f"{name}.tshark.tsv").open(newline="") as stream:
        return list(csv.DictReader(stream, delimiter="\t"))


@pytest.mark.parametrize("name", ["events", "flags"])
def test_interop_counts_and_short_frames_agree_with_wireshark(name: str) -> None:
    observer, problem = observe_file(PCAPS / "interop" / f"{name}.pcapng")
    assert not problem
    summary = observer.summary()
    rows = tshark_rows(name)
    codes = {"0x00": "information", "0x01": "event_notification"}
    for mac in (EOAM, MINIMAL_PEER):
        mine = [r for r in rows if r["eth.src"] == mac]
        speaker = summary["speakers"][mac]
        assert speaker["counts"] == dict(Counter(codes[r["oampdu.code"]] for r in mine))
        short = sum(1 for r in mine if int(r["frame.len"]) < 60)
        assert speaker["finding_counts"].get("short_frame", 0) == short
    assert summary["speakers"][MINIMAL_PEER]["finding_counts"] == {}


def test_eoam_swapped_event_types_are_findings_on_their_frames() -> None:
    observer, _ = observe_file(PCAPS / "interop" / "events.pcapng")
    eoam = observer.summary()["speakers"][EOAM]
    by_frame: dict[int, list[str]] = {}
    for finding in eoam["findings"]:
        if finding["kind"] == "implausible_event":
            for frame in finding["frames"]:
                by_frame.setdefault(frame, []).append(finding["detail"])
    sequence_of = {e["frame"]: e["sequence"] for e in eoam["events"]}
    assert sorted(sequence_of[f] for f in by_frame) == [0, 1, 2, 3, 4, 5]
    assert any("looks like a frame count" in d for d in by_frame[25])  # seq 1: 0x02 with eoam's frame-period window
    assert any("looks like a duration" in d for d in by_frame[27])  # seq 2: 0x03 with eoam's errored-frame window
