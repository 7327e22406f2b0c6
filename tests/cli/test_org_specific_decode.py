"""``efmoam decode`` on Organization Specific OAMPDUs and TLVs: names, public fields, raw rest.

The corpus capture ``pcaps/org-specific/org-specific.pcap`` as an operator reads it (text
and ``-f json``), and hostile payloads (an OUI cut short, nothing after the OUI, a cut
DPoE variable, the largest OAMPDU) each give a clear line in both formats, never a
traceback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from efmoam.cli import main
from efmoam.offline.decode import format_text, pdu_to_dict, pdu_to_json
from pdu import EventNotification, Flag, Information, OrgSpecificPdu, OrgSpecificTlv, decode, encode
from pdu.oui import CISCO, CTC, DPOE
from tests.cli.conftest import run_decode
from tests.cli_runner import CliRunner

REPO = Path(__file__).resolve().parents[2]
CAPTURE = REPO / "pcaps" / "org-specific" / "org-specific.pcap"
SRC = "02:00:00:00:00:0b"
STABLE = Flag.LOCAL_STABLE | Flag.REMOTE_STABLE


def run(*args: str | Path) -> tuple[str, str]:
    result = CliRunner().invoke(main, ["decode", *map(str, args)])
    assert result.exit_code == 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result.stdout, result.stderr


def org_lines(text: str) -> dict[int, str]:
    lines = (line.split("  ", 2) for line in text.splitlines())
    return {int(number): rest for number, _time, rest in lines if "organization_specific" in rest}


def test_text_names_the_organizations_and_shows_what_is_public() -> None:
    out, err = run(CAPTURE)
    lines = org_lines(out)
    assert lines[11].endswith(
        'organization_specific  oui=00:10:00(CableLabs DPoE)  opcode=get_request(0x01)  var(d6/0000 "DPoE ONU Object"'
        ' value=00)  var(d7/0002 "DPoE ONU ID")  var(d7/0007 "Max Logical Links")  var(d7/000d "OAM Frame Rate")'
    )
    assert lines[12].endswith(
        'opcode=get_response(0x02)  var(d6/0000 "DPoE ONU Object" value=00)  var(d7/0002 "DPoE ONU ID"'
        ' value=02000000000b)  var(d7/0007 "Max Logical Links" value=00010000)'
        '  var(d7/000d "OAM Frame Rate" code=0xa1 "Unsupported")'
    )
    assert lines[16].endswith('opcode=set_response(0x04)  var(d7/0402 "Encryption Mode" code=0x80 "No Error")')
    assert lines[19].endswith("organization_specific  oui=11:11:11(CTC)  opcode=variable_request(0x01)  rest=c70001")
    assert lines[20].endswith("organization_specific  oui=00:11:22 value=01020376656e646f72")  # unknown: as before
    cisco = "02:00:00:00:00:0b  dying_gasp,local_stable,remote_stable  organization_specific  oui=00:00:0c(Cisco)"
    assert lines[22] == cisco + " value=-"
    assert "organization_specific 7" in err


def test_json_keeps_the_raw_octets_and_adds_the_name_and_the_decoding() -> None:
    out, _ = run("-f", "json", CAPTURE)
    objects = {obj["frame"]: obj for obj in map(json.loads, out.splitlines()) if obj["code"] == 0xFE}
    response = objects[12]
    assert (response["oui"], response["oui_name"]) == ("00:10:00", "CableLabs DPoE")
    assert response["value"].startswith("02d6000001")
    decoded = response["decoded"]
    assert (decoded["opcode"], decoded["opcode_name"], decoded["truncated"], decoded["rest"]) == (
        2,
        "get_response",
        False,
        "",
    )
    assert decoded["variables"][1] == {
        "branch": 0xD7,
        "leaf": 2,
        "name": "DPoE ONU ID",
        "value": "02000000000b",
        "code": None,
        "code_name": None,
    }
    assert (objects[20]["oui_name"], objects[20]["decoded"], objects[20]["value"]) == (None, None, "01020376656e646f72")
    assert (objects[22]["oui_name"], objects[22]["decoded"], objects[22]["flag_names"][0]) == (
        "Cisco",
        None,
        "dying_gasp",
    )


def test_organization_specific_tlvs_are_named() -> None:
    info = Information(SRC, STABLE, (OrgSpecificTlv(CTC, b"\x01\x20"), OrgSpecificTlv(0x00A0C9, b"\x01")))
    obj = pdu_to_dict(decode(encode(info)))
    assert [(t["oui"], t["oui_name"]) for t in obj["tlvs"]] == [("11:11:11", "CTC"), ("00:a0:c9", None)]
    assert (
        "organization_specific(oui=11:11:11(CTC) support=0x01 version=0x20 versions=-)"
        "  organization_specific(oui=00:a0:c9 value=01)"
    ) in format_text(obj)
    event = EventNotification(SRC, STABLE, 3, (OrgSpecificTlv(CISCO, b"\x07"),))
    assert pdu_to_dict(decode(encode(event)))["tlvs"][0]["oui_name"] == "Cisco"


# -- hostile payloads, as frames in a capture -----------------------------------------------

HEADER = bytes.fromhex("0180c2000002 02000000000b 8809 03 0050 fe")


def frames_of_every_hostile_kind() -> list[bytes]:
    largest = b"\x02" + (bytes.fromhex("d70006 00") + bytes(128)) * 11
    largest += b"\x5a" * (1514 - len(HEADER) - 3 - len(largest))
    return [
        HEADER + b"\x00\x10",  # the OUI cut short: malformed
        HEADER,  # no OUI at all: malformed
        HEADER + bytes.fromhex("001000"),  # nothing after the OUI, unpadded
        HEADER + bytes.fromhex("001000") + bytes(39),  # padding only
        (HEADER + bytes.fromhex("001000 02 d70002 7f") + b"\xab" * 60),  # a variable longer than the frame
        HEADER + bytes.fromhex("001000 01") + bytes.fromhex("d70002") * 12 + bytes.fromhex("d7ff"),  # a cut leaf
        HEADER + bytes.fromhex("111111"),  # CTC, no opcode
        HEADER + bytes.fromhex("001000") + largest,  # the largest OAMPDU
    ]


@pytest.mark.parametrize("form", ["plain", "json"])
def test_hostile_payloads_decode_to_clear_lines(write_pcap: Any, form: str) -> None:
    capture = write_pcap("hostile.pcap", frames_of_every_hostile_kind())
    out, err = run("-f", form, capture)
    lines = out.splitlines()
    assert len(lines) == 8
    assert "6 OAMPDUs decoded (organization_specific 6), 2 malformed" in err
    if form == "json":
        objects = [json.loads(line) for line in lines]
        assert [o.get("error") for o in objects[:2]] == ["truncated", "truncated"]
        assert [o["decoded"]["truncated"] for o in objects[2:6]] == [False, False, True, True]
        assert objects[4]["decoded"]["rest"] == "d700027f" + "ab" * 60
        assert objects[6]["decoded"]["opcode_name"] == "reserved"
        assert len(objects[7]["decoded"]["variables"]) == 11 and objects[7]["decoded"]["truncated"]
    else:
        assert "MALFORMED truncated (octet 20: no OUI)" in lines[0]
        assert lines[2].endswith("oui=00:10:00(CableLabs DPoE)  opcode=reserved(0x00)")
        assert lines[4].endswith("opcode=get_response(0x02)  truncated  rest=d700027f" + "ab" * 60)
        assert lines[5].endswith('var(d7/0002 "DPoE ONU ID")  truncated  rest=d7ff')


def test_hostile_payloads_through_the_real_command(write_pcap: Any) -> None:
    capture = write_pcap("hostile.pcap", frames_of_every_hostile_kind())
    for form in ("plain", "json"):
        done = run_decode(capture, form)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        assert len(done.stdout.splitlines()) == 8


@settings(max_examples=300, deadline=None)
@given(oui=st.sampled_from([DPOE, CTC, CISCO, 0x001122]), value=st.binary(max_size=200))
def test_json_text_equals_the_dict_for_any_payload(oui: int, value: bytes) -> None:
    pdu = decode(encode(OrgSpecificPdu(SRC, STABLE, oui, value)))
    obj = pdu_to_dict(pdu)
    assert pdu_to_json(pdu) == json.dumps(obj, separators=(",", ":"))
    assert format_text(obj).startswith(f"{SRC}  local_stable,remote_stable  organization_specific  oui=")


def test_a_long_payload_ending_in_zeros_keeps_them(write_pcap: Any) -> None:
    """Zeros the codec drops from a value longer than a 60-octet frame's come back."""
    value = b"\x02" + bytes.fromhex("d70002 06 02000000000b") * 4 + bytes.fromhex("d70007 04 00010000 00")
    capture = write_pcap("zeros.pcap", [encode(OrgSpecificPdu(SRC, STABLE, DPOE, value))])
    out, _ = run("-f", "json", capture)
    decoded = json.loads(out)["decoded"]
    assert (decoded["variables"][-1]["value"], decoded["truncated"]) == ("00010000", False)
    text, _ = run(capture)
    assert text.rstrip().endswith('var(d7/0007 "Max Logical Links" value=00010000)')
