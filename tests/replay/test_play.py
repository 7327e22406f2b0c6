"""Play mode: our engine plays one speaker of a capture against the recorded other one."""

from __future__ import annotations

import io
import json
from pathlib import Path

import attrs
import pytest

from efmoam.core import OamMode
from efmoam.offline.replay.play import infer, play, run_play, settings_from
from tests.replay.frames import A_LOCAL, B_LOCAL, BASE_TIME, STABLE, A, B, info, remote, steady, write

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
    # eoam waits a second before it is satisfied; our engine is satisfied at once
    assert (
        "theirs: SEND_LOCAL_REMOTE at 2.756; ours: ACTIVE_SEND_LOCAL at 2.507, SEND_LOCAL_REMOTE_OK at 2.507" in details
    )
    # eoam's Event Notifications replace its keep-alives; ours keep their second
    assert "information OAMPDUs: theirs 15, ours 22" in details
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
