"""Organization Specific OAMPDUs and TLVs: the one table of known OUIs, and what is public.

Clause 57 leaves the content after the OUI to the organization.  This module names the
OUIs met on EFM links and decodes only what a public source documents; everything else
stays raw octets.  Nothing here acts on a payload: the engine reads an Organization
Specific OAMPDU's flags like any OAMPDU's and hands its content on untouched.

Sources (no vendor format is guessed):

* Names: Cisco 00:00:0c, whose devices send their Dying Gasp as an Organization Specific
  OAMPDU (docs/anchors.md, "Dying Gasp"); CableLabs DPoE 00:10:00 (docs/protocol.md 4.4,
  Wireshark ``epan/dissectors/packet-oampdu.c``); CTC (China Telecom EPON) 11:11:11
  (docs/anchors.md, EPON ONU stacks; Realtek's EPON OAM stack ``ctc_oam.h``); Nokia
  (Alcatel-Lucent) 00:16:4d, its SR OS vendor OUI (docs/anchors.md, Nokia grace-tx).
* DPoE OAMPDU (Wireshark's dissector, the only one that decodes any): after the OUI one
  opcode octet (names below).  Get Request: an optional leading ONU object context
  (D6/0000, a width octet and its value), then 3-octet variable descriptors (branch,
  leaf) up to a branch of 0.  Get Response, Set Request, Set Response: variable
  containers (branch, leaf, width) up to a branch of 0, where a width of 0x80 or more is
  a response code with no value, 0 means 128 octets, anything else the value's length.
  Other opcodes are not decoded.  Descriptor names: Wireshark's table, in part.
* CTC OAMPDU: after the OUI one extended opcode octet (``ctc_oam.h``,
  ``CTC_EXTOAM_OPCODE_*``); the rest is raw.
* CTC extended Information TLV (an Organization Specific TLV in an Information OAMPDU
  only; ``ctc_oam.h``: ``CTC_INFO_OAM_MIN`` "Type(1) + Length(1) + OUI(3) +
  ExtSupport(1) + Version(1)", ``CTC_INFO_OAM_VERITEM_LEN`` "OUI(3) + Version(1)" and
  ``ctc_infoOam_t``): after the OUI the Extended Support octet, the Version octet, then
  the supported versions, 4 octets each (an OUI, a version).  The octets' values are not
  named (no public source does); a version is shown in hex, as Realtek's ``ctc_oam.c``
  lists them (``0x20``, "Ver 2.0").  An Organization Specific TLV in any other OAMPDU is not decoded: the
  OAMPDU's code is part of what `decode_tlv` is given.
* Cisco, Nokia: named only; their payloads are not documented.

Design choices: decoders return JSON-ready dicts (`decode_pdu`), every variable with the
same keys, so text and JSON render from one object.  The codec drops the trailing zero
octets of an OAMPDU's value (they cannot be told from padding) and counts them
(`OrgSpecificPdu.zeros`); they are put back here, and the value is read as at least
`MIN_WIRE_VALUE` octets, what a 60-octet frame holds (a capture of sent frames may show
them unpadded).  A structure that runs past that is cut there: ``truncated`` is true and
the octets left are kept in ``rest``.  A list also ends where the value ends (the codec
drops an End marker followed only by zeros).  No input raises.
"""

from __future__ import annotations

from typing import Any

from pdu.enums import Code
from pdu.model import format_oui

__all__ = ["CISCO", "CTC", "DPOE", "MIN_WIRE_VALUE", "NOKIA", "decode_pdu", "decode_tlv", "name"]

CISCO = 0x00000C
DPOE = 0x001000
CTC = 0x111111
NOKIA = 0x00164D

_NAMES: dict[int, str] = {
    CISCO: "Cisco",
    DPOE: "CableLabs DPoE",
    CTC: "CTC",
    NOKIA: "Nokia",
}

#: octets of value an Organization Specific OAMPDU has in a 60-octet frame:
#: 60 - 14 (Ethernet header) - 1 (subtype) - 2 (flags) - 1 (code) - 3 (OUI)
MIN_WIRE_VALUE = 39

_DPOE_OPCODES = {
    0x00: "reserved",
    0x01: "get_request",
    0x02: "get_response",
    0x03: "set_request",
    0x04: "set_response",
    0x05: "multicast_request",
    0x06: "multicast_register",
    0x07: "multicast_register_response",
    0x08: "key_exchange",
    0x09: "file_transfer",
}
_DPOE_GET_REQUEST = 0x01
_DPOE_CONTAINER_OPCODES = frozenset((0x02, 0x03, 0x04))
_DPOE_ONU_OBJECT = 0xD60000

#: (branch << 16 | leaf) -> name: part of Wireshark's dpoe_variable_descriptor_vals
_DPOE_VARIABLES = {
    0xD60000: "DPoE ONU Object",
    0xD60001: "Network Port Object",
    0xD60002: "Link Object",
    0xD60003: "User Port Object",
    0xD60004: "Queue Object",
    0xD70001: "Sequence Number",
    0xD70002: "DPoE ONU ID",
    0xD70003: "Firmware Info",
    0xD70004: "EPON Chip Info",
    0xD70005: "Date of Manufacture",
    0xD70006: "Manufacturer Info",
    0xD70007: "Max Logical Links",
    0xD70008: "Number of Network Ports",
    0xD70009: "Number of S1 interfaces",
    0xD7000A: "DPoE ONU Packet Buffer",
    0xD7000B: "Report Thresholds",
    0xD7000C: "LLID Forwarding State",
    0xD7000D: "OAM Frame Rate",
    0xD7000E: "ONU Manufacturer Organization Name",
    0xD7000F: "Firmware Mfg Time Varying Controls",
    0xD90001: "Reset DPoE ONU",
    0xD70105: "S1 Interface Port Auto-negotiation",
    0xD7010D: "Queue Configuration",
    0xD7021D: "Optical Mon Temperature",
    0xD7021E: "Optical Mon Vcc",
    0xD7021F: "Optical Mon Tx Bias Current",
    0xD70220: "Optical Mon Tx Power",
    0xD70221: "Optical Mon Rx Power",
    0xD70402: "Encryption Mode",
    0xD70501: "Port Ingress Rule",
    0xD90601: "Enable User Traffic",
    0xD90602: "Disable User Traffic",
    0xD90603: "Loopback Enable",
    0xD90604: "Loopback Disable",
    0xD90605: "Laser Tx Power Off",
    0x090005: "PHY Admin Control",
}

_DPOE_RESPONSE_CODES = {
    0x80: "No Error",
    0x81: "Too Long",
    0x86: "Bad Parameters",
    0x87: "No Resources",
    0x88: "System Busy",
    0xA0: "Undetermined Error",
    0xA1: "Unsupported",
    0xA2: "May Be Corrupted",
    0xA3: "Hardware Failure",
    0xA4: "Overflow",
}

_CTC_OPCODES = {
    0x00: "reserved",
    0x01: "variable_request",
    0x02: "variable_response",
    0x03: "set_request",
    0x04: "set_response",
    0x05: "onu_authentication",
    0x06: "software_download",
    0x09: "churning",
    0x0A: "dba",
    0xFF: "event",
}

JsonObject = dict[str, Any]


def name(oui: int) -> str | None:
    """The organization's name for a known 24-bit OUI, None for any other."""
    return _NAMES.get(oui)


def decode_pdu(oui: int, value: bytes, zeros: int = 0) -> JsonObject | None:
    """The public part of an Organization Specific OAMPDU's *value* (after the OUI).

    *zeros* is the number of zero octets that followed *value* in the frame.

    None when nothing of this OUI's payload is documented.  Otherwise a dict with
    ``opcode`` (int), ``opcode_name`` (str, "unknown" for an undocumented one),
    ``variables`` (list, DPoE only: {``branch``, ``leaf``, ``name``, ``value`` (hex),
    ``code``, ``code_name``}, absent parts null), ``rest`` (hex of the octets not
    decoded) and ``truncated`` (bool: a variable ran past the end).
    """
    if oui == DPOE:
        return _decode_dpoe(_Reader(value, zeros))
    if oui == CTC:
        return _decode_opcode_only(_Reader(value, zeros), _CTC_OPCODES)
    return None


def decode_tlv(oui: int, value: bytes, pdu_code: int | None) -> JsonObject | None:
    """The public part of an Organization Specific TLV's *value* (after the OUI).

    *pdu_code* is the code of the OAMPDU the TLV sits in (`pdu.enums.Code`; None when not
    known): the same OUI may mean another layout in another OAMPDU.

    None when nothing of this TLV is documented.  The CTC extended Information TLV gives
    ``support`` and ``version`` (ints, null when cut off), ``versions`` (list of {``oui``
    ("11:11:11"), ``oui_name``, ``version`` (int)}), ``rest`` (hex of the octets after the
    last whole version entry) and ``truncated`` (bool: the value ended inside a field).
    """
    if oui == CTC and pdu_code == Code.INFORMATION:
        return _decode_ctc_information(value)
    return None


def _decode_ctc_information(value: bytes) -> JsonObject:
    whole = max(len(value) - 2, 0) // 4 * 4  #: octets of whole version entries
    versions = [_ctc_version(value[at : at + 4]) for at in range(2, 2 + whole, 4)]
    rest = value[2 + whole :]
    return {
        "support": value[0] if len(value) > 0 else None,
        "version": value[1] if len(value) > 1 else None,
        "versions": versions,
        "rest": rest.hex(),
        "truncated": len(value) < 2 or bool(rest),
    }


def _ctc_version(entry: bytes) -> JsonObject:
    """One supported version of the CTC Information TLV: an OUI, a version octet."""
    oui = int.from_bytes(entry[:3], "big")
    return {"oui": format_oui(oui), "oui_name": _NAMES.get(oui), "version": entry[3]}


class _Reader:
    """Octets read in order; past `end` nothing is read (truncation)."""

    def __init__(self, data: bytes, zeros: int) -> None:
        # no frame holds 64 KiB of zeros: a caller's absurd count allocates nothing absurd
        self.end = max(len(data) + min(max(zeros, 0), 0xFFFF), MIN_WIRE_VALUE)
        self.data = data.ljust(self.end, b"\0")
        self.offset = 0

    def take(self, count: int) -> bytes | None:
        """The next *count* octets, or None (and nothing consumed) if they are not all there."""
        if self.offset + count > self.end:
            return None
        chunk = self.data[self.offset : self.offset + count]
        self.offset += count
        return chunk

    def rest(self, start: int) -> str:
        """Hex of the octets from *start*, without the zero fill."""
        return self.data[start : self.end].rstrip(b"\0").hex()


def _decoded(opcode: int, names: dict[int, str], variables: list[JsonObject] | None) -> JsonObject:
    return {
        "opcode": opcode,
        "opcode_name": names.get(opcode, "unknown"),
        "variables": variables,
        "rest": "",
        "truncated": False,
    }


def _decode_opcode_only(reader: _Reader, names: dict[int, str]) -> JsonObject:
    opcode = reader.data[0]
    out = _decoded(opcode, names, None)
    out["rest"] = reader.rest(1)
    return out


def _variable(key: int, value: bytes | None = None, code: int | None = None) -> JsonObject:
    return {
        "branch": key >> 16,
        "leaf": key & 0xFFFF,
        "name": _DPOE_VARIABLES.get(key),
        "value": None if value is None else value.hex(),
        "code": code,
        "code_name": None if code is None else _DPOE_RESPONSE_CODES.get(code, "unknown"),
    }


def _decode_dpoe(reader: _Reader) -> JsonObject:
    opcode = reader.data[0]
    reader.offset = 1
    if opcode == _DPOE_GET_REQUEST:
        variables, complete = _dpoe_descriptors(reader)
    elif opcode in _DPOE_CONTAINER_OPCODES:
        variables, complete = _dpoe_containers(reader)
    else:
        out = _decoded(opcode, _DPOE_OPCODES, None)
        out["rest"] = reader.rest(1)
        return out
    out = _decoded(opcode, _DPOE_OPCODES, variables)
    out["truncated"] = not complete
    out["rest"] = reader.rest(reader.offset)
    return out


def _descriptor(reader: _Reader) -> int | None:
    """The next branch+leaf as one int, 0 at the end, None when cut short.

    The end is a branch of 0, or the end of the value: the codec drops an End marker
    that is followed only by zeros.
    """
    start = reader.offset
    branch = reader.take(1)
    if branch is None or branch == b"\0":
        return 0
    leaf = reader.take(2)
    if leaf is None:
        reader.offset = start
        return None
    return branch[0] << 16 | int.from_bytes(leaf, "big")


def _dpoe_descriptors(reader: _Reader) -> tuple[list[JsonObject], bool]:
    variables: list[JsonObject] = []
    first = True
    while True:
        start = reader.offset
        key = _descriptor(reader)
        if not key:
            return variables, key == 0
        if first and key == _DPOE_ONU_OBJECT:  # the object context carries a width and a value
            body = _width_and_value(reader)
            if body is None:
                reader.offset = start
                return variables, False
            variables.append(_variable(key, *body))
        else:
            variables.append(_variable(key))
        first = False


def _dpoe_containers(reader: _Reader) -> tuple[list[JsonObject], bool]:
    variables: list[JsonObject] = []
    while True:
        start = reader.offset
        key = _descriptor(reader)
        if not key:
            return variables, key == 0
        body = _width_and_value(reader)
        if body is None:
            reader.offset = start
            return variables, False
        variables.append(_variable(key, *body))


def _width_and_value(reader: _Reader) -> tuple[bytes | None, int | None] | None:
    """(value, None) or (None, response code), or None when cut short."""
    width = reader.take(1)
    if width is None:
        return None
    if width[0] >= 0x80:
        return None, width[0]
    data = reader.take(width[0] or 128)
    return None if data is None else (data, None)
