"""`pdu.oui`: the known OUIs and the public Organization Specific payloads.

DPoE layouts are those of Wireshark's dissector (cross-checked against tshark itself in
test_org_specific_tshark.py); hostile payloads (cut short, empty, the largest an
OAMPDU holds, any octets at all) decode to a clear result and never raise.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from pdu import OrgSpecificPdu, decode, encode
from pdu.oui import CISCO, CTC, DPOE, MIN_WIRE_VALUE, NOKIA, decode_pdu, name

SRC = "02:00:00:00:00:0b"


def decoded_of(oui: int, value: bytes, zeros: int = 0) -> dict[str, Any]:
    decoded = decode_pdu(oui, value, zeros)
    assert decoded is not None
    return decoded


def dpoe(hex_value: str) -> dict[str, Any]:
    return decoded_of(DPOE, bytes.fromhex(hex_value))


def roundtrip(value: bytes) -> OrgSpecificPdu:
    """A DPoE OAMPDU of *value* through the codec (which drops trailing zeros)."""
    pdu = decode(encode(OrgSpecificPdu(SRC, 0x50, DPOE, value)))
    assert isinstance(pdu, OrgSpecificPdu)
    return pdu


def variables(decoded: dict[str, Any]) -> list[tuple[int, int, str | None, int | None]]:
    return [(v["branch"], v["leaf"], v["value"], v["code"]) for v in decoded["variables"]]


def test_the_known_ouis_have_names_and_others_none() -> None:
    assert name(CISCO) == "Cisco"
    assert name(DPOE) == "CableLabs DPoE"
    assert name(CTC) == "CTC"
    assert name(NOKIA) == "Nokia"
    assert name(0x001122) is None and name(0) is None and name(0xFFFFFF) is None


def test_payloads_without_a_public_format_are_not_decoded() -> None:
    assert decode_pdu(CISCO, b"\x00\x01") is None
    assert decode_pdu(NOKIA, b"\x01") is None
    assert decode_pdu(0x001122, b"\x01\x02") is None


def test_dpoe_get_request_context_then_descriptors() -> None:
    decoded = dpoe("01 d60000 01 05 d70002 d70007 00")
    assert (decoded["opcode"], decoded["opcode_name"]) == (1, "get_request")
    assert variables(decoded) == [(0xD6, 0, "05", None), (0xD7, 2, None, None), (0xD7, 7, None, None)]
    assert [v["name"] for v in decoded["variables"]] == ["DPoE ONU Object", "DPoE ONU ID", "Max Logical Links"]
    assert not decoded["truncated"] and decoded["rest"] == ""


def test_dpoe_get_request_context_only_leads() -> None:
    """An object context later in the list is a plain descriptor (as Wireshark reads it)."""
    decoded = dpoe("01 d70002 d60000 01 05 00")
    assert variables(decoded)[:2] == [(0xD7, 2, None, None), (0xD6, 0, None, None)]


def test_dpoe_get_response_values_codes_and_the_128_octet_width() -> None:
    value_128 = bytes(range(128)).hex()
    decoded = dpoe(f"02 d70002 06 02000000000b d7000d a1 d70005 00 {value_128} 00")
    assert decoded["opcode_name"] == "get_response"
    assert variables(decoded) == [(0xD7, 2, "02000000000b", None), (0xD7, 0x0D, None, 0xA1), (0xD7, 5, value_128, None)]
    assert decoded["variables"][1]["code_name"] == "Unsupported"
    assert not decoded["truncated"]


def test_dpoe_set_request_and_response() -> None:
    assert variables(dpoe("03 d70402 01 01 00")) == [(0xD7, 0x0402, "01", None)]
    response = dpoe("04 d70402 80 00")
    assert variables(response) == [(0xD7, 0x0402, None, 0x80)]
    assert response["variables"][0]["code_name"] == "No Error"


def test_unnamed_descriptors_and_codes_keep_their_numbers() -> None:
    decoded = dpoe("04 c70001 8f 00")
    (var,) = decoded["variables"]
    assert (var["name"], var["code"], var["code_name"]) == (None, 0x8F, "unknown")


def test_other_dpoe_opcodes_keep_their_octets() -> None:
    decoded = dpoe("09 0102030405")
    assert (decoded["opcode_name"], decoded["variables"], decoded["rest"]) == ("file_transfer", None, "0102030405")
    assert dpoe("42 ff")["opcode_name"] == "unknown"


def test_ctc_extended_opcode() -> None:
    decoded = decode_pdu(CTC, bytes.fromhex("05 0100"))
    assert decoded is not None
    assert (decoded["opcode"], decoded["opcode_name"], decoded["rest"]) == (5, "onu_authentication", "01")
    assert decoded_of(CTC, b"\xff")["opcode_name"] == "event"


def test_trailing_zeros_the_codec_drops_read_as_the_zeros_they_were() -> None:
    """A last value ending in zeros loses them to the codec (they look like padding)."""
    value = bytes.fromhex("02 d70007 04 00010000 00")
    pdu = roundtrip(value)
    assert pdu.value == bytes.fromhex("02 d70007 04 0001")
    decoded = decoded_of(DPOE, pdu.value)
    assert decoded == decode_pdu(DPOE, value)
    assert variables(decoded) == [(0xD7, 7, "00010000", None)]
    assert not decoded["truncated"]


def test_zeros_dropped_from_a_long_frame_are_put_back() -> None:
    value = b"\x02" + bytes.fromhex("d70002 06 02000000000b") * 4 + bytes.fromhex("d70007 04 00010000 00")
    pdu = roundtrip(value)
    assert len(pdu.value) > MIN_WIRE_VALUE and pdu.zeros == 3
    decoded = decode_pdu(DPOE, pdu.value, pdu.zeros)
    assert decoded is not None and not decoded["truncated"]
    assert decoded["variables"][-1]["value"] == "00010000"
    assert decoded_of(DPOE, pdu.value)["truncated"]


def test_a_variable_past_the_frame_is_truncated_and_kept_raw() -> None:
    # width 0x7f: 127 octets announced, 40 there; beyond the 39 octets a 60-octet frame holds
    value = "02 d70002 06 02000000000b d70006 7f " + "ab" * 40
    decoded = dpoe(value)
    assert decoded["truncated"]
    assert variables(decoded) == [(0xD7, 2, "02000000000b", None)]
    assert decoded["rest"] == "d700067f" + "ab" * 40


def test_a_descriptor_cut_in_its_leaf_is_truncated() -> None:
    value = bytes.fromhex("01") + bytes.fromhex("d70002") * 12 + bytes.fromhex("d7ff")  # 39 octets, no end
    assert len(value) == MIN_WIRE_VALUE
    decoded = decode_pdu(DPOE, value)
    assert decoded is not None and decoded["truncated"]
    assert len(decoded["variables"]) == 12 and decoded["rest"] == "d7ff"


def test_an_empty_payload_is_what_the_padded_frame_says() -> None:
    decoded = dpoe("")
    assert (decoded["opcode"], decoded["opcode_name"], decoded["variables"], decoded["truncated"]) == (
        0,
        "reserved",
        None,
        False,
    )
    assert decoded_of(CTC, b"")["opcode_name"] == "reserved"


#: the value of the largest Organization Specific OAMPDU: a 1518-octet frame with FCS,
#: less 18 octets of header (Ethernet, subtype, flags, code), 3 of OUI and 4 of FCS
MAX_VALUE = 1518 - 18 - 3 - 4


def test_the_largest_payload_decodes() -> None:
    body = (bytes.fromhex("d70006 00") + bytes(range(128))) * 11  # containers of 128 octets
    value = b"\x02" + body + b"\xd7\x00\x02\x06" + b"\x01" * 6
    value += bytes.fromhex("c70001 01 ff") * 5
    value += bytes.fromhex("d70002 7f ab")  # 127 octets announced, one left in the frame
    assert len(value) == MAX_VALUE
    pdu = roundtrip(value)
    decoded = decode_pdu(DPOE, pdu.value)
    assert decoded is not None and decoded["variables"][11]["value"] == "01" * 6
    assert len(decoded["variables"]) == 12 + 5 and decoded["variables"][-1]["value"] == "ff"
    assert decoded["truncated"] and decoded["rest"] == "d700027fab"


def test_a_long_list_ends_with_the_value() -> None:
    """Past 39 octets the End marker the codec dropped is not there: the list still ends."""
    value = b"\x02" + bytes.fromhex("d70002 06 02000000000b") * 5 + b"\0"
    pdu = roundtrip(value)
    assert len(pdu.value) == len(value) - 1 > MIN_WIRE_VALUE
    decoded = decode_pdu(DPOE, pdu.value)
    assert decoded is not None and len(decoded["variables"]) == 5 and not decoded["truncated"]


def test_an_absurd_zero_count_is_bounded() -> None:
    decoded = decoded_of(DPOE, bytes.fromhex("02 d70002 00"), zeros=10**12)
    assert (decoded["variables"][0]["value"], decoded["truncated"]) == ("00" * 128, False)


@settings(max_examples=400, deadline=None)
@given(
    oui=st.sampled_from([DPOE, CTC, CISCO, 0x001122]),
    value=st.binary(max_size=MAX_VALUE),
    zeros=st.integers(-1, MAX_VALUE),
)
def test_any_payload_decodes_without_raising_to_json(oui: int, value: bytes, zeros: int) -> None:
    decoded = decode_pdu(oui, value, zeros)
    if decoded is None:
        return
    json.dumps(decoded)
    assert set(decoded) == {"opcode", "opcode_name", "variables", "rest", "truncated"}
    for var in decoded["variables"] or ():
        assert set(var) == {"branch", "leaf", "name", "value", "code", "code_name"}
        assert (var["value"] is None) or (var["code"] is None)


@pytest.mark.parametrize("opcode", [0x01, 0x02, 0x03, 0x04])
@given(body=st.binary(max_size=200))
@settings(max_examples=100, deadline=None)
def test_dpoe_variable_lists_never_raise(opcode: int, body: bytes) -> None:
    decoded = decode_pdu(DPOE, bytes([opcode]) + body)
    assert decoded is not None and isinstance(decoded["variables"], list)
