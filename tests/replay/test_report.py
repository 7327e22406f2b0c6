"""``efmoam replay FILE``: the timeline, the summary, JSON, exit status, odd inputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from efmoam.cli import main
from tests.cli.conftest import pcapng_bytes, subprocess_env
from tests.cli_runner import CliRunner
from tests.replay.frames import BASE_TIME, A, B, conversation, event, frame_event, run_text, steady, write

REPO = Path(__file__).resolve().parents[2]
PCAPS = REPO / "pcaps"
EOAM = "02:00:00:00:0a:02"


def test_clean_capture_exits_zero_with_states_in_the_timeline() -> None:
    status, out, err = run_text(PCAPS / "engine" / "discovery.pcap")
    assert (status, err) == (0, "")
    assert out.splitlines()[0] == "FRAME  TIME  SPEAKER  WHAT"
    assert "5  0.002000  02:00:00:00:00:0a  state SEND_ANY (0.002 s after Discovery began)" in out
    assert "  states: ACTIVE_SEND_LOCAL at 0.000 (frame 1), SEND_LOCAL_REMOTE_OK at 0.001 (frame 4)," in out
    assert out.endswith("no findings\n")


def test_findings_exit_one_and_name_their_frames() -> None:
    status, out, _ = run_text(PCAPS / "interop" / "flags.pcapng")
    assert status == 1
    assert (
        "33  12.129766  02:00:00:00:0a:02  FINDING link_fault_with_tlvs: Link Fault flag with Local+Remote TLVs" in out
    )
    assert "    link_fault_with_tlvs x2: Link Fault flag with Local+Remote TLVs (frames 33, 36)" in out
    assert "    21  6.098  flag critical_event raised" in out
    assert out.endswith("46 findings\n")


def test_summary_only_has_no_timeline() -> None:
    _, out, _ = run_text(PCAPS / "interop" / "events.pcapng", timeline=False)
    assert "FRAME  TIME" not in out
    assert "02:00:00:00:0a:02: active, config=active,remote_loopback,link_events, pdu=1500, oui=11:11:11" in out


def test_json_is_one_document_with_timeline_and_summary() -> None:
    status, out, _ = run_text(PCAPS / "interop" / "events.pcapng", json_output=True)
    document = json.loads(out)
    assert (status, document["exit"], document["schema"], document["mode"]) == (1, 1, 1, "observe")
    events = [e["event"] for e in document["timeline"] if e["what"] == "event"]
    assert [e["sequence"] for e in events] == [0, 1, 2, 3, 4, 5]
    first = events[0]["tlvs"][0]  # rendered as efmoam decode --json renders it
    assert first == {
        "type": 1,
        "kind": "errored_symbol_period",
        "timestamp": 26640,
        "window": 1000,
        "threshold": 1,
        "errors": 200,
        "error_running_total": 10200,
        "event_running_total": 1,
    }
    entry = document["timeline"][0]
    assert {"frame", "time", "t", "speaker", "what"} <= entry.keys()
    speaker = document["summary"]["speakers"][EOAM]
    assert speaker["finding_counts"] == {"short_frame": 18, "missing_end_marker": 18, "implausible_event": 9}
    assert speaker["time_to_send_any"] == 1.0 or abs(speaker["time_to_send_any"] - 1.0) < 0.01


def test_no_speakers_in_a_negative_control() -> None:
    status, out, _ = run_text(PCAPS / "negative" / "vlan-tagged-slow.pcap")
    assert status == 0
    assert "48 records, 0 OAMPDUs, 0 malformed, 48 other frames; 0 speakers" in out


def test_truncated_capture_reports_what_came_before_and_exits_two(tmp_path: Path) -> None:
    path = write(tmp_path, conversation(4))
    path.write_bytes(path.read_bytes()[:-20])
    status, out, err = run_text(path)
    assert status == 2
    assert "truncated packet data" in err
    assert "02:00:00:00:00:0b: active" in out  # the summary of what was read


def test_not_a_capture_and_not_ethernet(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a capture")
    assert run_text(text)[0] == 2
    sll = tmp_path / "sll.pcap"
    from tests.cli.conftest import pcap_bytes

    sll.write_bytes(pcap_bytes([steady(A)], linktype=113))
    status, _, err = run_text(sll)
    assert status == 2 and "not Ethernet" in err
    assert run_text(tmp_path / "missing.pcap")[0] == 2


def test_pcapng_interfaces_make_separate_speakers(tmp_path: Path) -> None:
    packets = [(i, (BASE_TIME + s + 0.1 * i, steady(src))) for s in range(3) for i in (0, 1) for src in (A, B)]
    path = tmp_path / "two.pcapng"
    path.write_bytes(pcapng_bytes(packets, [1, 1]))
    status, out, _ = run_text(path, json_output=True)
    speakers = json.loads(out)["summary"]["speakers"]
    assert sorted(speakers) == sorted([A, B, f"{A}@1", f"{B}@1"])
    assert speakers[f"{A}@1"]["counts"] == {"information": 3}
    assert status == 0


def test_standard_input_and_the_command(tmp_path: Path) -> None:
    data = (PCAPS / "engine" / "loopback.pcap").read_bytes()
    result = CliRunner().invoke(main, ["replay", "-", "--summary-only"], input=data)
    assert result.exit_code == 0, result.output
    loopback = "loopback: enable at frame 12, peer looping at frame 14, disable at frame 26, ended at frame 28"
    assert loopback in result.stdout


def test_options_of_one_mode_are_refused_in_another() -> None:
    runner = CliRunner()
    capture = str(PCAPS / "engine" / "discovery.pcap")
    for args in (["--check", "--as", A], ["--as", A, "--to", "veth0"], ["--from", A], ["--config", "x.yaml"]):
        result = runner.invoke(main, ["replay", capture, *args])
        assert result.exit_code == 2, args
        assert "Usage" in result.stderr


def test_keepalive_and_lost_link_options(tmp_path: Path) -> None:
    frames = sorted(conversation(3) + conversation(3, start=4))  # a 1.5 s pause of both
    path = write(tmp_path, frames)
    assert run_text(path)[0] == 0
    result = CliRunner().invoke(main, ["replay", str(path), "--keepalive", "0.5", "--lost-link", "1.2", "--json"])
    document = json.loads(result.stdout)
    assert result.exit_code == 1
    assert len(document["summary"]["gaps"]) == 1
    assert document["limits"] == {"keepalive": 0.5, "keepalive_limit": 1.1, "lost_link": 1.2, "rate": 10}


def test_broken_pipe_exits_quietly(tmp_path: Path) -> None:
    notifications = [
        (BASE_TIME + 1 + n * 0.2, event(A, n, frame_event(total=5 * n + 5, events=n + 1))) for n in range(5000)
    ]
    path = write(tmp_path, sorted(conversation(1000) + notifications))
    command = f"{sys.executable} -m efmoam.cli replay --json {path} | head -c 100 > /dev/null; echo ${{PIPESTATUS[0]}}"
    result = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=subprocess_env(), check=False)
    assert "Traceback" not in result.stderr
    assert result.stdout.strip() == "141"
