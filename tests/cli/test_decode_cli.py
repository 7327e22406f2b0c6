"""``efmoam decode``: the command as a user runs it (CliRunner and real subprocesses)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from efmoam.cli import EXIT_BROKEN_PIPE, main
from pdu import EventNotification, EventTlvType, Flag, Information, InfoTlv, LinkEventTlv, OamConfig, encode
from tests.cli_runner import CliRunner

REPO = Path(__file__).resolve().parents[2]
INTEROP = REPO / "pcaps" / "interop"
NEGATIVE = REPO / "pcaps" / "negative"

SRC_A = "02:00:00:00:00:0a"
SRC_B = "02:00:00:00:00:0b"


def decode(*args: str | Path, input: bytes | None = None) -> Result:
    """Run ``efmoam decode ARGS`` in-process."""
    return CliRunner().invoke(main, ["decode", *map(str, args)], input=input)


def json_lines(result: Result) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.stdout.splitlines()]


def tshark_rows(capture: Path) -> list[dict[str, str]]:
    """The rows of the Wireshark 4.0 reading stored beside *capture*."""
    tsv = capture.with_name(capture.name.replace(".pcapng", ".tshark.tsv"))
    with tsv.open(newline="") as stream:
        return list(csv.DictReader(stream, delimiter="\t"))


def info_frame(src: str = SRC_A, flags: int = Flag.LOCAL_STABLE | Flag.REMOTE_STABLE, revision: int = 1) -> bytes:
    local = InfoTlv(
        revision=revision, oam_config=OamConfig.ACTIVE | OamConfig.LINK_EVENTS, max_pdu_size=1500, oui=0x001122
    )
    return encode(Information(src, flags, (local,)))


def event_frame(src: str = SRC_A, sequence: int = 0) -> bytes:
    tlv = LinkEventTlv(EventTlvType.ERRORED_SYMBOL_PERIOD, 100, 125_000_000, 1, 3, 3, 1)
    return encode(EventNotification(src, Flag.LOCAL_STABLE | Flag.REMOTE_STABLE, sequence, (tlv,)))


# -- the interop captures against Wireshark's reading ---------------------------------------


@pytest.mark.parametrize("name", ["events.pcapng", "flags.pcapng"])
def test_interop_capture_matches_tshark_rows(name: str) -> None:
    capture = INTEROP / name
    result = decode("--json", capture)
    assert result.exit_code == 0, result.output
    objects = json_lines(result)
    rows = tshark_rows(capture)
    assert Counter(obj["code"] for obj in objects) == Counter(int(row["oampdu.code"], 16) for row in rows)
    assert [(o["frame"], o["src"], o["flags"]) for o in objects] == [
        (int(r["frame.number"]), r["eth.src"], int(r["oampdu.flags"], 16)) for r in rows
    ]
    for obj, row in zip(objects, rows, strict=True):
        tshark_types = row["oampdu.info.type"] or row["oampdu.event.type"]
        assert [tlv["type"] for tlv in obj["tlvs"]] == [int(t, 16) for t in tshark_types.split(",")]
        if obj["code_name"] == "event_notification":
            assert obj["sequence"] == int(row["oampdu.event.sequence"])
            assert obj["tlvs"][0]["timestamp"] == int(row["oampdu.event.timestamp"])
        else:
            assert [tlv["max_pdu_size"] for tlv in obj["tlvs"]] == list(
                map(int, row["oampdu.info.oampduConfig"].split(","))
            )
    assert "0 malformed" in result.stderr


def test_events_capture_sequence_numbers_and_summary() -> None:
    result = decode("--json", INTEROP / "events.pcapng")
    sequences = [obj["sequence"] for obj in json_lines(result) if obj["code_name"] == "event_notification"]
    assert sequences == [0, 1, 2, 3, 4, 5]
    assert result.stderr == (
        "efmoam decode: 39 OAMPDUs decoded (information 33, event_notification 6), "
        "0 malformed, 14 non-OAM frames skipped\n"
    )


def test_plain_text_lines_and_relative_time() -> None:
    capture = INTEROP / "events.pcapng"
    result = decode(capture)
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    rows = tshark_rows(capture)
    assert len(lines) == len(rows) == 39
    for line, row in zip(lines, rows, strict=True):
        number, time, src, *_ = line.split("  ")
        assert (number, src) == (row["frame.number"], row["eth.src"])
        assert float(time) == pytest.approx(float(row["frame.time_relative"]), abs=1e-6)
    by_frame = {line.split("  ")[0]: line for line in lines}
    assert by_frame["11"] == (
        "11  2.507198  02:00:00:00:bb:02  local_evaluating  information  local(ver=1 rev=1 parser=fwd mux=fwd"
        " config=active,remote_loopback,link_events pdu=1500 oui=00:11:22 vendor=0x00000001)"
    )
    assert by_frame["23"] == (
        "23  7.234850  02:00:00:00:0a:02  local_stable,remote_stable  event_notification  seq=0"
        "  errored_symbol_period(ts=26640 window=1000 threshold=1 errors=200 total=10200 events=1)"
    )


def test_json_golden_objects() -> None:
    """The field names and values of --json are an interface: keep them stable."""
    by_frame = {obj["frame"]: obj for obj in json_lines(decode("--json", INTEROP / "events.pcapng"))}
    info_tlv_local = {
        "type": 1,
        "kind": "local",
        "oam_version": 1,
        "revision": 0,
        "state_reserved": 0,
        "mux_action": 0,
        "parser_action": 0,
        "oam_config": 13,
        "oam_config_names": ["active", "remote_loopback", "link_events"],
        "oampdu_config_reserved": 0,
        "max_pdu_size": 1500,
        "oui": "11:11:11",
        "vendor_info": 0x11223344,
    }
    info_tlv_remote = {
        **info_tlv_local,
        "type": 2,
        "kind": "remote",
        "revision": 1,
        "oui": "00:11:22",
        "vendor_info": 1,
    }
    frame_12 = by_frame[12]
    assert list(frame_12) == ["frame", "time", "src", "flags", "flag_names", "code", "code_name", "tlvs"]
    assert frame_12 == {
        "frame": 12,
        "time": pytest.approx(1795332571.886483, abs=1e-6),
        "src": "02:00:00:00:0a:02",
        "flags": 0x28,
        "flag_names": ["local_evaluating", "remote_evaluating"],
        "code": 0,
        "code_name": "information",
        "tlvs": [info_tlv_local, info_tlv_remote],
    }
    assert by_frame[25] == {
        "frame": 25,
        "time": pytest.approx(1795332577.372867, abs=1e-6),
        "src": "02:00:00:00:0a:02",
        "flags": 0x50,
        "flag_names": ["local_stable", "remote_stable"],
        "code": 1,
        "code_name": "event_notification",
        "sequence": 1,
        "tlvs": [
            {
                "type": 2,
                "kind": "errored_frame",
                "timestamp": 26650,
                "window": 1000,
                "threshold": 1,
                "errors": 200,
                "error_running_total": 10200,
                "event_running_total": 1,
            }
        ],
    }
    assert list(by_frame[25]) == [
        "frame",
        "time",
        "src",
        "flags",
        "flag_names",
        "code",
        "code_name",
        "sequence",
        "tlvs",
    ]


# -- captures without OAMPDUs, malformed OAMPDUs -------------------------------------------


@pytest.mark.parametrize(("name", "frames"), [("lacp.pcap", 20), ("slow-ossp.pcap", 1)])
def test_negative_captures_have_no_oampdus(name: str, frames: int) -> None:
    for args in (["--json"], []):
        result = decode(*args, NEGATIVE / name)
        assert result.exit_code == 0
        assert result.stdout == ""
        assert result.stderr == f"efmoam decode: 0 OAMPDUs decoded, 0 malformed, {frames} non-OAM frames skipped\n"


def malformed_capture_frames() -> list[tuple[float, bytes]]:
    """Good frames around a TLV of length 0, a VLAN-tagged OAMPDU and a cut event TLV."""
    good = info_frame()
    tlv_length_0 = good[:18] + b"\x01\x00" + bytes(40)
    tagged = good[:12] + b"\x81\x00\x00\x05" + good[12:]
    event = event_frame(SRC_B, sequence=7)
    event_cut = event[:40]  # the 40-octet Errored Symbol Period TLV overruns the frame
    frames = [good, tlv_length_0, tagged, event, event_cut, info_frame(revision=2)]
    return [(1_700_000_000 + i * 0.5, frame) for i, frame in enumerate(frames)]


def test_malformed_oampdus_are_reported_and_decoding_goes_on(write_pcap: Any) -> None:
    capture = write_pcap("malformed.pcap", malformed_capture_frames())
    result = decode(capture)
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert [line.split("  ")[0] for line in lines] == ["1", "2", "4", "5", "6"]
    assert lines[1] == f"2  0.500000  {SRC_A}  MALFORMED tlv_too_short (octet 18: type 0x01 length 0)"
    assert lines[3] == f"5  2.000000  {SRC_B}  MALFORMED tlv_overrun (octet 20: type 0x01 length 40)"
    assert "  event_notification  seq=7  errored_symbol_period(ts=100 window=125000000" in lines[2]
    assert " rev=2 " in lines[4]
    assert result.stderr == (
        "efmoam decode: 3 OAMPDUs decoded (information 2, event_notification 1), "
        "2 malformed, 1 non-OAM frames skipped\n"
    )


def test_malformed_oampdu_json(write_pcap: Any) -> None:
    capture = write_pcap("malformed.pcap", malformed_capture_frames())
    objects = json_lines(decode("--json", capture))
    assert [obj["frame"] for obj in objects] == [1, 2, 4, 5, 6]
    assert objects[1] == {
        "frame": 2,
        "time": 1_700_000_000.5,
        "src": SRC_A,
        "error": "tlv_too_short",
        "offset": 18,
        "detail": "type 0x01 length 0",
    }
    assert objects[3]["error"] == "tlv_overrun"


def test_runt_frame_has_no_src(write_pcap: Any) -> None:
    capture = write_pcap("runt.pcap", [b"\x01\x80\xc2\x00\x00\x02\x02\x00"])
    (obj,) = json_lines(decode("--json", capture))
    assert "src" not in obj
    assert obj["error"] == "shorter_than_header"
    assert decode(capture).stdout == "1  0.000000  -  MALFORMED shorter_than_header (octet 8: 8 octets)\n"


# -- unreadable input ---------------------------------------------------------------------


def test_linux_cooked_capture_is_refused(write_pcap: Any) -> None:
    sll_header = struct_sll(info_frame())
    capture = write_pcap("sll.pcap", [sll_header], linktype=113)
    result = decode(capture)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        f"efmoam decode: error: {capture}: link type 113 (Linux cooked capture (SLL)) is not Ethernet "
        "(link type 1); only Ethernet captures can be decoded\n"
    )


def struct_sll(frame: bytes) -> bytes:
    """*frame* re-framed with a Linux cooked (SLL) header."""
    return b"\x00\x00\x00\x01\x00\x06" + frame[6:12] + b"\x00\x00" + frame[12:]


def test_other_interfaces_of_other_link_types_are_skipped(write_pcapng: Any) -> None:
    frame = info_frame()
    packets = [(0, frame), (1, struct_sll(frame)), (0, event_frame())]
    result = decode(write_pcapng("two.pcapng", packets, linktypes=[1, 113]))
    assert result.exit_code == 0
    assert [line.split("  ")[0] for line in result.stdout.splitlines()] == ["1", "3"]
    assert result.stderr.endswith("0 malformed, 0 non-OAM frames skipped, 1 non-Ethernet records skipped\n")


def test_truncated_capture_prints_the_records_before_the_cut(tmp_path: Path) -> None:
    data = (INTEROP / "events.pcapng").read_bytes()
    capture = tmp_path / "cut.pcapng"
    capture.write_bytes(data[:3000])  # inside the block of record 28
    for args in (["--json"], []):
        result = decode(*args, capture)
        assert result.exit_code == 2
        lines = result.stdout.splitlines()
        numbers = [json.loads(line)["frame"] if args else int(line.split("  ")[0]) for line in lines]
        expected = [int(row["frame.number"]) for row in tshark_rows(INTEROP / "events.pcapng")]
        assert numbers == [number for number in expected if number < 28]
        assert result.stderr.splitlines() == [
            "efmoam decode: 15 OAMPDUs decoded (information 12, event_notification 3), 0 malformed, "
            "12 non-OAM frames skipped",
            f"efmoam decode: error: {capture}: record 28 at offset 2948: truncated block (44 of 84 bytes)",
        ]


def test_not_a_capture_file(tmp_path: Path) -> None:
    capture = tmp_path / "notes.txt"
    capture.write_text("hello\n")
    result = decode(capture)
    assert result.exit_code == 2
    assert result.stderr == f"efmoam decode: error: {capture}: not a pcap or pcapng file (unknown magic 68656c6c)\n"


def test_missing_file(tmp_path: Path) -> None:
    result = decode(tmp_path / "missing.pcap")
    assert result.exit_code == 2
    assert (
        result.stderr == f"efmoam decode: error: cannot read {tmp_path / 'missing.pcap'}: No such file or directory\n"
    )


def test_empty_capture(write_pcap: Any) -> None:
    result = decode(write_pcap("empty.pcap", []))
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == "efmoam decode: 0 OAMPDUs decoded, 0 malformed, 0 non-OAM frames skipped\n"


def test_standard_input() -> None:
    capture = INTEROP / "flags.pcapng"
    from_stdin = decode("--json", "-", input=capture.read_bytes())
    assert from_stdin.exit_code == 0
    assert from_stdin.stdout == decode("--json", capture).stdout
    assert len(from_stdin.stdout.splitlines()) == 42


def test_version_and_help() -> None:
    runner = CliRunner()
    version = runner.invoke(main, ["--version"])
    assert version.exit_code == 0
    assert version.stdout.startswith("efmoam ")
    help_ = runner.invoke(main, ["--help"])
    assert help_.exit_code == 0
    assert "decode" in help_.stdout


# -- real processes -----------------------------------------------------------------------


def test_subprocess_decode_matches_in_process_run(run_efmoam: Any) -> None:
    capture = INTEROP / "events.pcapng"
    completed = run_efmoam("decode", "--json", str(capture))
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == decode("--json", capture).stdout
    assert len(completed.stdout.splitlines()) == 39
    assert completed.stderr.startswith("efmoam decode: 39 OAMPDUs decoded")


def test_subprocess_unreadable_input_exits_2(run_efmoam: Any, write_pcap: Any) -> None:
    completed = run_efmoam("decode", str(write_pcap("sll.pcap", [struct_sll(info_frame())], linktype=113)))
    assert completed.returncode == 2
    assert "is not Ethernet" in completed.stderr
    assert "Traceback" not in completed.stderr


def test_importing_the_cli_does_not_import_scapy(efmoam_env: dict[str, str]) -> None:
    code = (
        "import sys, efmoam.cli\n"
        "assert 'scapy' not in sys.modules and 'pdu' not in sys.modules, sorted(sys.modules)\n"
        "try:\n"
        "    efmoam.cli.main(['--help'])\n"
        "except SystemExit as exit:\n"
        "    assert exit.code == 0\n"
        "assert 'scapy' not in sys.modules, 'efmoam --help imported scapy'\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=60, env=efmoam_env, cwd=REPO
    )
    assert completed.returncode == 0, completed.stderr


def test_broken_pipe_exits_quietly(efmoam_env: dict[str, str]) -> None:
    """The reader of stdout is gone before the first line: no traceback, status 141."""
    process = subprocess.Popen(
        [sys.executable, "-m", "efmoam.cli", "decode", str(INTEROP / "events.pcapng")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=efmoam_env,
        cwd=REPO,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=60) == EXIT_BROKEN_PIPE
    assert stderr == ""


def test_broken_pipe_from_head(write_pcap: Any, efmoam_env: dict[str, str]) -> None:
    frames = [(1_700_000_000 + i, event_frame(sequence=i % 65536)) for i in range(5000)]
    capture = write_pcap("many.pcap", frames)
    script = f'"{sys.executable}" -m efmoam.cli decode --json "{capture}" | head -n 2; echo "status ${{PIPESTATUS[0]}}"'
    completed = subprocess.run(
        ["bash", "-c", script], check=False, capture_output=True, text=True, env=efmoam_env, timeout=120
    )
    lines = completed.stdout.splitlines()
    assert [json.loads(line)["sequence"] for line in lines[:2]] == [0, 1]
    assert lines[2] == f"status {EXIT_BROKEN_PIPE}"
    assert completed.stderr == ""
