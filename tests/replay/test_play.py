"""Play mode: our engine plays one speaker of a capture against the recorded other one."""

from __future__ import annotations

import io
import json
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest

from efmoam.core import OamMode, PortSettings
from efmoam.offline.replay.findings import Limits
from efmoam.offline.replay.play import Player, infer, play, run_play, settings_from
from tests.cli.conftest import _ng_block, pcapng_bytes, subprocess_env
from tests.replay.frames import (
    A_LOCAL,
    B_LOCAL,
    BASE_TIME,
    STABLE,
    A,
    B,
    conversation,
    info,
    remote,
    steady,
    write,
)

REPO = Path(__file__).resolve().parents[2]
PCAPS = REPO / "pcaps"
ENGINE = PCAPS / "engine"
EOAM = "02:00:00:00:0a:02"
MINIMAL_PEER = "02:00:00:00:bb:02"
ENGINE_A, ENGINE_B = "02:00:00:00:00:0a", "02:00:00:00:00:0b"


def what(report: dict[str, object]) -> list[str]:
    return [d["what"] for d in report["divergences"]]  # type: ignore[attr-defined, index]


def test_engine_configured_from_what_the_capture_shows() -> None:
    recorded = infer(PCAPS / "interop" / "events.pcapng", EOAM)
    settings = settings_from(recorded)
    assert (recorded.interface, recorded.local.revision, recorded.peers, recorded.interval) == (
        0,
        0,
        [MINIMAL_PEER],
        1.0,
    )
    assert settings.mode is OamMode.ACTIVE
    assert (settings.oui, settings.vendor_info, settings.max_pdu_size) == (0x111111, 0x11223344, 1500)
    assert int(settings.oam_config) == 0x0D  # active, remote loopback, link events (as eoam advertises)
    assert settings.loopback_process and not settings.variable_retrieval


# a's frames are missing from lost-link.pcap by design (see the next test)
SELF_PLAYS = [
    (p.name, mac)
    for p in sorted(ENGINE.glob("*.pcap"))
    for mac in (ENGINE_A, ENGINE_B)
    if (p.name, mac) != ("lost-link.pcap", ENGINE_A)
]


@pytest.mark.parametrize(("capture", "mac"), SELF_PLAYS)
def test_our_engine_playing_itself_does_not_diverge(capture: str, mac: str) -> None:
    report = play(ENGINE / capture, mac)
    assert report["divergences"] == []
    theirs, ours = report["theirs"]["states"], report["ours"]["states"]
    assert [s["state"] for s in theirs] == [s["state"] for s in ours]
    assert all(abs(a["time"] - b["time"]) <= 0.002 for a, b in zip(theirs, ours, strict=True))  # one link delay


def test_frames_missing_from_the_capture_show_as_divergences() -> None:
    report = play(ENGINE / "lost-link.pcap", ENGINE_A)
    assert sorted(set(what(report))) == ["count", "finding", "state"]
    (state,) = [d for d in report["divergences"] if d["what"] == "state"]
    assert state["detail"].startswith("SEND_LOCAL_REMOTE_OK: theirs at 13.004 s, ours at 9.00")


def test_eoam_played_by_our_engine() -> None:
    report = play(PCAPS / "interop" / "events.pcapng", EOAM)
    # every Event Notification eoam sent, our engine sends with the same sequence number at the same time
    assert [(e["their_sequence"], e["our_sequence"], e["our_copies"]) for e in report["events"]] == [
        (n, n, 1) for n in range(6)
    ]
    assert all(abs(e["our_time"] - e["time"]) < 0.01 for e in report["events"])
    details = [d["detail"] for d in report["divergences"]]
    # our engine starts with eoam's first frame (which shows it had heard the peer: it hears the
    # peer's latest); eoam waits a second before it is satisfied, our engine is satisfied at once
    assert (
        "theirs: SEND_LOCAL_REMOTE at 2.756; ours: ACTIVE_SEND_LOCAL at 2.756, SEND_LOCAL_REMOTE_OK at 2.756" in details
    )
    # eoam's Event Notifications replace its keep-alives; ours keep their second
    assert "information OAMPDUs: theirs 15, ours 21" in details
    assert "short_frame: theirs 18, ours 0" in details


def test_minimal_peer_played_by_our_engine_reaches_send_any_in_time() -> None:
    report = play(PCAPS / "interop" / "flags.pcapng", MINIMAL_PEER)
    states = [(s["state"], s["time"]) for s in report["ours"]["states"]]
    assert [s for s, _ in states][-1] == "SEND_ANY"
    assert abs(states[-1][1] - report["theirs"]["states"][-1]["time"]) < 0.3
    assert what(report) == ["state"]  # ours shows SEND_LOCAL_REMOTE_OK, the minimal peer never does


def test_a_different_configuration_diverges_in_the_local_tlv(tmp_path: Path) -> None:
    config = tmp_path / "efmoam.yaml"
    config.write_text(
        'ports:\n  - match: "*"\n    oui: "00:11:22"\n    vendor_info: 1\n    variable_retrieval: true\n'
        "    max_pdu_size: 1518\n"
    )
    out, err = io.StringIO(), io.StringIO()
    status = run_play(str(ENGINE / "discovery.pcap"), ENGINE_A, out, err, json_output=True, config_path=str(config))
    report = json.loads(out.getvalue())
    assert status == 1, err.getvalue()
    (local,) = [d for d in report["divergences"] if d["what"] == "local"]
    assert "oui=00:11:22" in local["detail"] and "oui=00:00:00" in local["detail"]


def test_client_inputs_our_engine_refuses_are_divergences(tmp_path: Path) -> None:
    # A asks for loopback although B does not advertise it: our engine refuses the request
    b_local = attrs.evolve(B_LOCAL, oam_config=0x09)
    frames = [
        (BASE_TIME, steady(A)),
        (BASE_TIME + 0.1, info(B, STABLE, b_local, remote(A_LOCAL))),
        (BASE_TIME + 0.2, info(A, STABLE, A_LOCAL, remote(b_local))),
    ]
    from tests.replay.frames import loopback

    frames.append((BASE_TIME + 1.0, loopback(A, 1)))
    report = play(write(tmp_path, frames), A)
    (refused,) = [d for d in report["divergences"] if d["what"] == "refused"]
    reason = "the peer does not offer remote loopback (its OAM configuration leaves it out)"
    assert refused["detail"] == f"loopback_control: {reason}"


def test_unknown_mac_and_unreadable_capture_exit_two(tmp_path: Path) -> None:
    err = io.StringIO()
    assert run_play(str(ENGINE / "discovery.pcap"), "02:00:00:00:00:99", io.StringIO(), err) == 2
    assert "sends no Local Information TLV" in err.getvalue()
    assert run_play(str(tmp_path / "none.pcap"), A, io.StringIO(), io.StringIO()) == 2
    assert run_play(str(ENGINE / "discovery.pcap"), "nonsense", io.StringIO(), io.StringIO()) == 2


def test_text_report() -> None:
    out = io.StringIO()
    assert run_play(str(PCAPS / "interop" / "events.pcapng"), EOAM.upper(), out, io.StringIO()) == 1
    text = out.getvalue()
    assert text.startswith(f"our engine as {EOAM} (interface 0) against {MINIMAL_PEER}\n")
    assert "event notification (frame 23, 7.235 s): theirs seq 0 x1, ours seq 0 x1" in text
    assert "4 divergences:" in text


def test_play_from_the_command_line() -> None:
    from efmoam.cli import main
    from tests.cli_runner import CliRunner

    capture = str(PCAPS / "interop" / "flags.pcapng")
    result = CliRunner().invoke(main, ["replay", capture, "--as", MINIMAL_PEER, "--json", "--tolerance", "5"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert (report["mode"], report["mac"], report["peers"]) == ("play", MINIMAL_PEER, [EOAM])
    assert report["settings"]["transmit_interval"] == 1.1  # the minimal peer's keep-alives, measured
    assert [d["what"] for d in report["divergences"]] == ["state"]


# -- trimmed captures (defects 3 and 5 of issue 16) ------------------------------------------

TRIMMED = PCAPS / "trimmed"
LAB_A, LAB_B = "02:00:00:00:aa:01", "02:00:00:00:bb:01"
#: the trimmed copies of daemon/lab.pcapng, and the capture gaps in them (seconds, rounded)
LAB_GAPS = {"lab-two-gaps.pcapng": [21.0, 41.0], "lab-28h-gap.pcapng": [100801.0]}


@pytest.mark.parametrize("capture", sorted(LAB_GAPS))
def test_the_engine_is_paused_across_capture_gaps(capture: str) -> None:
    report = play(TRIMMED / capture, LAB_B)
    assert report["divergences"] == []
    assert [round(gap["seconds"]) for gap in report["paused"]] == LAB_GAPS[capture]
    # the engine never lost the link to the trimming, only once A really stopped (with a Dying Gasp)
    lost = [s["time"] for s in report["engine_states"] if s["cause"] == "lost_link"]
    (fault,) = [s["time"] for s in report["theirs"]["states"] if s["state"] == "FAULT"]
    assert lost and all(abs(t - fault) < 0.01 for t in lost)
    assert report["ours"]["finding_counts"]["capture_gap"] == len(LAB_GAPS[capture])


@pytest.mark.parametrize("capture", sorted(LAB_GAPS))
def test_trimming_adds_no_divergence(capture: str) -> None:
    # playing A diverges on lab.pcapng itself once A has stopped (a Dying Gasp, then nothing):
    # our engine goes on, and answers B's fall-back to ACTIVE_SEND_LOCAL
    untrimmed = play(PCAPS / "daemon" / "lab.pcapng", LAB_A)
    trimmed = play(TRIMMED / capture, LAB_A)
    assert what(trimmed) == what(untrimmed) == ["state", "count"]
    assert [e["our_time"] is not None for e in trimmed["events"]] == [True]


def test_a_gap_of_28_hours_plays_from_the_command_line() -> None:
    command = [sys.executable, "-m", "efmoam.cli", "replay", str(TRIMMED / "lab-28h-gap.pcapng"), "--as", LAB_B]
    result = subprocess.run(command, capture_output=True, text=True, env=subprocess_env(), check=False)
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    assert "paused across 1 capture gap(s) (nothing recorded): 100800.985 s from 12.034 s\n" in result.stdout
    assert result.stdout.endswith("\nno divergences\n")


def test_a_capture_gap_is_never_a_divergence() -> None:
    player = Player(infer(ENGINE / "discovery.pcap", ENGINE_A), PortSettings(), Limits(), 1.0)
    out: list[dict[str, object]] = []
    player._compare_findings({"finding_counts": {"capture_gap": 2}}, {"finding_counts": {}}, out)
    assert out == []
    player._compare_findings({"finding_counts": {"silence": 1}}, {"finding_counts": {}}, out)
    assert [d["detail"] for d in out] == ["silence: theirs 1, ours 0"]


def test_lost_link_and_interval_set_the_engine() -> None:
    # b hears nothing from a for 8 s: with a lost-link time of 10 s our engine keeps the link
    assert "FAULT" in [s["state"] for s in play(ENGINE / "lost-link.pcap", ENGINE_B)["engine_states"]]
    report = play(ENGINE / "lost-link.pcap", ENGINE_B, lost_link=10.0)
    assert report["settings"]["lost_link_time"] == 10.0
    assert "FAULT" not in [s["state"] for s in report["engine_states"]]
    # and the observers hold the speakers to the engine's lost-link time: a's 8 s are no silence
    assert "silence" in play(ENGINE / "lost-link.pcap", ENGINE_A)["theirs"]["finding_counts"]
    assert "silence" not in play(ENGINE / "lost-link.pcap", ENGINE_A, lost_link=10.0)["theirs"]["finding_counts"]
    # a whole multiple of the interval, as the daemon is configured
    settings = play(ENGINE / "discovery.pcap", ENGINE_A, interval=0.5, lost_link=3.3)["settings"]
    assert (settings["transmit_interval"], settings["lost_link_time"]) == (0.5, 3.5)


def test_keepalive_and_lost_link_options_reach_the_engine_only_when_given() -> None:
    from efmoam.cli import main
    from tests.cli_runner import CliRunner

    capture = str(PCAPS / "interop" / "flags.pcapng")
    result = CliRunner().invoke(main, ["replay", capture, "--as", MINIMAL_PEER, "--json"])
    settings = json.loads(result.stdout)["settings"]
    assert (settings["transmit_interval"], settings["lost_link_time"]) == (1.1, 5.5)  # measured, 5 intervals
    options = ["--keepalive", "0.5", "--lost-link", "4"]
    result = CliRunner().invoke(main, ["replay", capture, "--as", MINIMAL_PEER, "--json", *options])
    settings = json.loads(result.stdout)["settings"]
    assert (settings["transmit_interval"], settings["lost_link_time"]) == (0.5, 4.0)


# every frame of a two-minute conversation, at times a capture may really hold
def _backwards(i: int, t: float) -> float:
    return t - 1000.0 if i >= 40 else t  # the capturing host's clock stepped back


TIMESTAMPS = {
    "huge_jumps": lambda i, t: t + (i // 30) * 1e9,  # 31 years between every 30 frames
    "far_future": lambda i, t: t + 1.8e13 - BASE_TIME,  # year 572,000 (the pcapng timestamp's limit)
    "backwards": _backwards,
    "equal": lambda i, t: float(BASE_TIME),
}


def _play_conversation(tmp_path: Path, at: Callable[[int, float], float]) -> tuple[int, dict[str, Any], str]:
    frames = [(at(i, t), data) for i, (t, data) in enumerate(conversation(60))]
    capture = tmp_path / "capture.pcapng"
    capture.write_bytes(pcapng_bytes([(0, frame) for frame in frames], [1]))
    out, err = io.StringIO(), io.StringIO()
    status = run_play(str(capture), A, out, err, json_output=True)
    return status, json.loads(out.getvalue() or "null"), err.getvalue()


@pytest.mark.parametrize("kind", sorted(TIMESTAMPS))
def test_any_timestamps_play_without_a_traceback(kind: str, tmp_path: Path) -> None:
    _, plain, _ = _play_conversation(tmp_path, lambda i, t: t)
    # the conversation starts in SEND_ANY: our engine's own start is the one divergence
    assert [d["detail"] for d in plain["divergences"]] == ["theirs: nothing; ours: ACTIVE_SEND_LOCAL at 0.000"]
    status, report, err = _play_conversation(tmp_path, TIMESTAMPS[kind])
    assert (status, err) == (1, ""), err
    if kind != "equal":  # at one instant, our engine sends only its first frames
        assert report["divergences"] == plain["divergences"]
        assert len(report["paused"]) == (3 if kind == "huge_jumps" else 0)  # a clock stepping back is no gap


def test_the_text_report_names_the_gaps_it_paused_across(tmp_path: Path) -> None:
    frames = [(t + (i // 10) * 60.0, data) for i, (t, data) in enumerate(conversation(40))]  # 7 gaps
    out = io.StringIO()
    run_play(str(write(tmp_path, frames)), A, out, io.StringIO())
    (line,) = [line for line in out.getvalue().splitlines() if "paused" in line]
    assert line.startswith("  paused across 7 capture gap(s) (nothing recorded): 60.500 s from 4.500 s, ")
    assert line.endswith(" and 2 more")


def test_timestamps_beyond_float_precision_play(tmp_path: Path) -> None:
    # pcapng in tenths of a second (if_tsresol 1) near the 64-bit limit: 1.8e18 s, where
    # one float step is 256 s, so every frame falls on one instant of the capture's clock
    interface = struct.pack("<HHI", 1, 0, 0) + struct.pack("<HHB3x", 9, 1, 1) + bytes(4)
    blocks = [_ng_block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)), _ng_block(1, interface)]
    for t, data in conversation(20):
        ticks = 18_000_000_000_000_000_000 + round((t - BASE_TIME) * 10)
        head = struct.pack("<IIIII", 0, ticks >> 32, ticks & 0xFFFFFFFF, len(data), len(data))
        blocks.append(_ng_block(6, head + data))
    capture = tmp_path / "far.pcapng"
    capture.write_bytes(b"".join(blocks))
    out, err = io.StringIO(), io.StringIO()
    assert run_play(str(capture), A, out, err, json_output=True) == 1, err.getvalue()
    report = json.loads(out.getvalue())
    # our engine ran on its own clock (from 0, where it keeps its precision): it answered at once
    assert (report["theirs"]["counts"], report["ours"]["counts"]) == ({"information": 20}, {"information": 1})


def test_engine_timers_that_do_not_advance_are_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import efmoam.offline.replay.play as play_module

    monkeypatch.setattr(play_module, "_MAX_TIMERS", 0)  # as if a timer ran and stayed due
    err = io.StringIO()
    assert run_play(str(ENGINE / "discovery.pcap"), ENGINE_A, io.StringIO(), err) == 2
    assert err.getvalue() == (
        "efmoam replay: error: our engine's timers do not advance at 0.000000 s: this capture cannot be played\n"
    )
