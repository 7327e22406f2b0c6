"""The CTC extended Information TLV in ``efmoam decode``: named fields where `pdu.oui` has
a public source, raw octets elsewhere, never a traceback.

The TLV is decoded only in an Information OAMPDU (the OAMPDU's code reaches the renderer:
`tlv_to_dict`'s ``pdu_code``); the same octets in an Event Notification stay raw.  tshark
does not decode the CTC TLV, so against it we check what it does show: the TLV's OUI and
its octets, which our fields must rebuild exactly.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from efmoam.cli import main
from efmoam.offline.decode import format_text, pdu_to_dict, pdu_to_json, tlv_to_dict
from pdu import Code, EventNotification, Flag, Information, InfoTlv, OrgSpecificTlv, decode, encode
from pdu.oui import CTC, decode_tlv
from tests.cli.conftest import run_decode
from tests.cli_runner import CliRunner
from tests.pdu.test_tshark_diff import write_pcap

SRC = "02:00:00:00:00:0b"
STABLE = Flag.LOCAL_STABLE | Flag.REMOTE_STABLE
#: Extended Support 1, Version 0x20, then CTC 0.1, CTC 2.0 and an OUI nobody names, version 0x30
CTC_VALUE = bytes.fromhex("01 20 111111 01 111111 20 001122 30")
LOCAL = InfoTlv(type=1, oam_version=1, revision=3, oam_config=0x01, max_pdu_size=1518, oui=0x111111, vendor_info=7)


def information(value: bytes) -> Information:
    return Information(SRC, STABLE, (LOCAL, OrgSpecificTlv(CTC, value)))


def decode_cli(capture: Path, *args: str) -> str:
    result = CliRunner().invoke(main, ["decode", *args, str(capture)])
    assert result.exit_code == 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result.stdout


def rebuilt(decoded: dict[str, Any]) -> bytes:
    """The TLV's value again from its decoded fields (what every decode must allow)."""
    head = bytes(field for field in (decoded["support"], decoded["version"]) if field is not None)
    versions = b"".join(bytes.fromhex(v["oui"].replace(":", "")) + bytes([v["version"]]) for v in decoded["versions"])
    return head + versions + bytes.fromhex(decoded["rest"])


def test_an_information_oampdu_with_the_ctc_tlv_decodes_to_named_fields(tmp_path: Path) -> None:
    capture = tmp_path / "ctc.pcap"
    write_pcap(capture, [encode(information(CTC_VALUE))])
    obj = json.loads(decode_cli(capture, "--json"))
    tlv = obj["tlvs"][1]
    assert (tlv["oui"], tlv["oui_name"], tlv["value"]) == ("11:11:11", "CTC", CTC_VALUE.hex())
    assert tlv["decoded"] == {
        "support": 1,
        "version": 0x20,
        "versions": [
            {"oui": "11:11:11", "oui_name": "CTC", "version": 0x01},
            {"oui": "11:11:11", "oui_name": "CTC", "version": 0x20},
            {"oui": "00:11:22", "oui_name": None, "version": 0x30},
        ],
        "rest": "",
        "truncated": False,
    }
    assert obj["tlvs"][0]["kind"] == "local" and "decoded" not in obj["tlvs"][0]
    text = decode_cli(capture)
    assert text.rstrip().endswith(
        "organization_specific(oui=11:11:11(CTC) support=0x01 version=0x20"
        " versions=11:11:11/0x01,11:11:11/0x20,00:11:22/0x30)"
    )


def test_the_same_tlv_in_an_event_notification_stays_raw(tmp_path: Path) -> None:
    capture = tmp_path / "event.pcap"
    write_pcap(capture, [encode(EventNotification(SRC, STABLE, 9, (OrgSpecificTlv(CTC, CTC_VALUE),)))])
    tlv = json.loads(decode_cli(capture, "--json"))["tlvs"][0]
    assert (tlv["oui_name"], tlv["value"], tlv["decoded"]) == ("CTC", CTC_VALUE.hex(), None)
    assert f"organization_specific(oui=11:11:11(CTC) value={CTC_VALUE.hex()})" in decode_cli(capture)


def test_the_context_is_one_parameter_of_tlv_to_dict() -> None:
    tlv = OrgSpecificTlv(CTC, CTC_VALUE)
    assert tlv_to_dict(tlv, Code.INFORMATION)["decoded"]["version"] == 0x20
    assert tlv_to_dict(tlv)["decoded"] is None  # the OAMPDU is not known: nothing is guessed
    assert tlv_to_dict(tlv, Code.EVENT_NOTIFICATION)["decoded"] is None
    assert tlv_to_dict(tlv, 0x77)["decoded"] is None  # a reserved code: as not known
    assert decode_tlv(0x001122, CTC_VALUE, Code.INFORMATION) is None


def test_every_cut_of_the_value_decodes_and_rebuilds_it() -> None:
    for end in range(len(CTC_VALUE) + 1):
        value = CTC_VALUE[:end]
        decoded = decode_tlv(CTC, value, Code.INFORMATION)
        assert decoded is not None
        assert rebuilt(decoded) == value
        assert decoded["truncated"] == (end < 2 or (end - 2) % 4 != 0), end
        assert len(decoded["versions"]) == max(end - 2, 0) // 4
        pdu = decode(encode(information(value)))
        obj = pdu_to_dict(pdu)
        assert pdu_to_json(pdu) == json.dumps(obj, separators=(",", ":"))
        line = format_text(obj)
        assert ("truncated" in line) == decoded["truncated"]
        assert (f"rest={value[2 + len(decoded['versions']) * 4 :].hex()}" in line) == bool(decoded["rest"])


@settings(max_examples=300, deadline=None)
@given(value=st.binary(max_size=120))
def test_any_value_renders_in_both_forms_and_rebuilds(value: bytes) -> None:
    pdu = decode(encode(information(value)))
    obj = pdu_to_dict(pdu)
    assert pdu_to_json(pdu) == json.dumps(obj, separators=(",", ":"))
    assert "organization_specific(oui=11:11:11(CTC) support=" in format_text(obj)
    assert rebuilt(obj["tlvs"][1]["decoded"]) == value


TSHARK = shutil.which("tshark")


@pytest.mark.tshark
@pytest.mark.skipif(TSHARK is None, reason="tshark (Wireshark) is not installed; it is the independent decoder")
def test_tshark_sees_the_octets_our_fields_are_made_of(tmp_path: Path) -> None:
    rng = random.Random(16)
    values = [CTC_VALUE, b"", b"\x01", CTC_VALUE[:9]]
    values += [rng.randbytes(2 + 4 * rng.randrange(6) + rng.randrange(4)) for _ in range(40)]
    capture = tmp_path / "ctc-batch.pcap"
    write_pcap(capture, [encode(information(value)) for value in values])
    assert TSHARK is not None
    done = subprocess.run(
        [TSHARK, "-n", "-r", str(capture), "-T", "fields", "-e", "oampdu.info.oui", "-e", "oampdu.info.vendor"],
        capture_output=True,
        text=True,
        check=True,
    )
    lines = done.stdout.splitlines()
    assert len(lines) == len(values)
    objects = [json.loads(line) for line in decode_cli(capture, "--json").splitlines()]
    for line, obj, value in zip(lines, objects, values, strict=True):
        # one occurrence per TLV, the Local TLV's first; tshark shows an empty value as <MISSING>
        oui, vendor = ([*field.split(","), ""][1] for field in [*line.split("\t"), ""][:2])
        octets = bytes.fromhex(vendor.replace(":", "").replace("<MISSING>", ""))
        tlv = obj["tlvs"][1]
        assert int(oui) == CTC
        assert octets.hex() == tlv["value"] == value.hex()
        assert rebuilt(tlv["decoded"]) == octets


def test_a_capture_of_every_cut_decodes_in_both_forms_through_the_real_command(tmp_path: Path) -> None:
    """Every cut of the value, and a TLV whose length runs past the frame (malformed)."""
    frames = [encode(information(CTC_VALUE[:end])) for end in range(len(CTC_VALUE) + 1)]
    whole = encode(information(CTC_VALUE))
    at = whole.index(bytes.fromhex("fe") + bytes([5 + len(CTC_VALUE)]) + bytes.fromhex("111111"))
    frames.append(whole[: at + 1] + b"\xff" + whole[at + 2 :])  # the TLV's length: 255
    capture = tmp_path / "cuts.pcap"
    write_pcap(capture, frames)
    for form in ("plain", "json"):
        done = run_decode(capture, form)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        lines = done.stdout.splitlines()
        assert len(lines) == len(frames)
        assert f"{len(frames) - 1} OAMPDUs decoded (information {len(frames) - 1}), 1 malformed" in done.stderr
        if form == "json":
            decoded = [json.loads(line)["tlvs"][1]["decoded"] for line in lines[:-1]]
            assert [rebuilt(d) for d in decoded] == [CTC_VALUE[:end] for end in range(len(CTC_VALUE) + 1)]
            assert "error" in json.loads(lines[-1])
        else:
            assert lines[0].endswith(
                "organization_specific(oui=11:11:11(CTC) support=- version=- versions=- truncated)"
            )
            assert "MALFORMED" in lines[-1]
