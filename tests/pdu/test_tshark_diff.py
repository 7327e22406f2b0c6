"""Differential test against tshark: Wireshark's dissector is the independent decoder.

A few hundred valid OAMPDUs of every code and every TLV kind are generated with
Hypothesis (fixed seed, derandomized), encoded with `pdu.encode`, written into one pcap
and dissected by one ``tshark -T json`` run.  Every ``oampdu.*`` field tshark shows, in
the order it shows them, must equal the field list rendered from our model.

Wireshark 4.0's quirks (protocol.md 9.7, interop/README.md), rendered on purpose:

* the OAM Configuration bits reuse flag field names: after ``oampdu.info.oamConfig.mode``
  come ``oampdu.flags.dyingGasp`` (unidirectional), ``criticalEvent`` (loopback),
  ``localEvaluating`` (link events) and ``localStable`` (variable retrieval);
* the Frame Period and Frame Seconds Summary "errors" fields are named
  ``oampdu.event.efeErrors``; ``oampduConfig`` is the whole 16-bit field (reserved bits
  included); the vendor field of an Information TLV is raw octets;
* the Loopback command is a bitmask (``.enable`` = bit 0, ``.disable`` = bit 1);
* an Organization Specific OAMPDU shows only its OUI (DPoE, OUI 00-10-00, is decoded
  further and therefore not generated); an Organization Specific Event TLV only its length;
  a reserved code only the header;
* a reserved-type Information TLV shows only its type, and Wireshark then skips one octet
  too many (``offset += length`` after the type octet), so such a TLV is generated only
  as the last TLV; a reserved-type Event TLV is not skipped at all, so none is generated;
* a leaf is shown only for branches 3/4/6/7 (object/package/binding/attribute).
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from pdu import (
    Branch,
    EventNotification,
    Flag,
    Information,
    InfoTlv,
    LinkEventTlv,
    LoopbackControl,
    Oampdu,
    OrgSpecificPdu,
    OrgSpecificTlv,
    UnknownTlv,
    UnsupportedPdu,
    VariableContainer,
    VariableDescriptor,
    VariableRequest,
    VariableResponse,
    encode,
)
from tests.pdu import strategies as S
from tests.pdu.vectors import VECTORS

TSHARK = shutil.which("tshark")
pytestmark = [
    pytest.mark.tshark,
    pytest.mark.skipif(TSHARK is None, reason="tshark (Wireshark) is not installed; it is the independent decoder"),
]

EXAMPLES_PER_KIND = 50
Fields = list[tuple[str, str]]

# -- what is generated ----------------------------------------------------------------------


def _unknown_last(tlvs: tuple[Any, ...]) -> tuple[Any, ...]:
    """At most one reserved-type TLV, and only at the end (Wireshark's skip is off by one)."""
    known = tuple(tlv for tlv in tlvs if not isinstance(tlv, UnknownTlv))
    unknown = [tlv for tlv in tlvs if isinstance(tlv, UnknownTlv)]
    return known + tuple(unknown[:1])


information = S.information_pdus.map(lambda p: Information(p.src, p.flags, _unknown_last(p.tlvs)))
events = st.builds(
    EventNotification,
    src=S.macs,
    flags=S.flags,
    sequence=S.uint(16),
    tlvs=S.bounded_lists(st.one_of(S.link_event_tlvs(), S.org_tlvs), S.tlv_size, S.MAX_DATA - 2),
)
org_pdus = S.org_specific_pdus.filter(lambda p: p.oui != S.DPOE_OUI)

KINDS: dict[str, st.SearchStrategy[Oampdu]] = {
    "information": information,
    "event_notification": events,
    "variable_request": S.variable_requests,
    "variable_response": S.variable_responses,
    "loopback_control": S.loopback_controls,
    "organization_specific": org_pdus,
    "unsupported": S.unsupported_pdus,
}

SRC = "02:00:00:00:00:01"
#: hand-written PDUs so that every kind of field is certainly in the batch
FIXED: list[Oampdu] = [vector.model for vector in VECTORS] + [
    Information(
        SRC,
        0xFFFF,
        (
            InfoTlv(2, 0xFF, 0xFFFF, 0x1F, 1, 3, 0xFF, 0x1F, 0x7FF, 0xFFFFFF, 0xFFFFFFFF),
            OrgSpecificTlv(0xABCDEF, b""),
            OrgSpecificTlv(0x123456, bytes(range(250))),
            UnknownTlv(0x03, b"\x01\x02"),
        ),
    ),
    EventNotification(
        SRC,
        0,
        0xFFFF,
        (
            *(LinkEventTlv(t, *((1 << bits) - 1 for bits in S.LINK_EVENT_BITS[t])) for t in S.LINK_EVENT_BITS),
            OrgSpecificTlv(0x001122, b""),
        ),
    ),
    VariableResponse(
        SRC,
        0x50,
        (
            VariableContainer(Branch.OBJECT, 20, (b"\x01" * 128, b"\x02", b"\x03" * 127), 0x40),
            VariableContainer(Branch.PACKAGE, 1, (b"\x04",), 0x60),
            VariableContainer(Branch.NAME_BINDING, 26, (b"\x05" * 128,)),
            VariableContainer(0x09, 7, (b"\x06",)),
            VariableContainer(Branch.ATTRIBUTE, 340, (), 0x24),
        ),
    ),
    VariableRequest(SRC, 0x50, tuple(VariableDescriptor(b, 0xFFFF) for b in (3, 4, 6, 7, 1, 0xFF))),
    LoopbackControl(SRC, 0x50, 0x03),
    LoopbackControl(SRC, 0x50, 0xFF),
    UnsupportedPdu(SRC, 0x50, 0xFF, b"\x01"),
    UnsupportedPdu(SRC, 0x50, 0x05, b""),
    # 18 + 5 x 255 + 221 = 1514 octets: the largest frame, no room for an End marker
    Information(
        SRC, 0x50, (*(OrgSpecificTlv(n, bytes([n]) * 250) for n in range(1, 6)), OrgSpecificTlv(6, b"\x06" * 216))
    ),
]


def generate(strategy: st.SearchStrategy[Oampdu], count: int) -> list[Oampdu]:
    """`count` examples of `strategy`, the same ones on every run."""
    found: list[Oampdu] = []

    @settings(
        max_examples=count,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(pdu: Oampdu) -> None:
        found.append(pdu)

    collect()
    return found


# -- tshark ----------------------------------------------------------------------------------


def write_pcap(path: Path, frames: Iterable[bytes]) -> None:
    """A classic pcap (microseconds, little-endian, linktype 1 Ethernet)."""
    with open(path, "wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for number, frame in enumerate(frames):
            out.write(struct.pack("<IIII", number, 0, len(frame), len(frame)) + frame)


def _pairs(pairs: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    return pairs  # keeps repeated keys (one per TLV) and their order


def _flatten(node: list[tuple[str, Any]], out: Fields) -> Fields:
    for key, value in node:
        if isinstance(value, list):
            _flatten(value, out)
        else:
            out.append((key, value))
    return out


def run_tshark(path: Path) -> list[dict[str, Any]]:
    """Per packet: eth.src, frame.len and the ordered ``oampdu.*`` fields."""
    assert TSHARK is not None
    result = subprocess.run([TSHARK, "-n", "-r", str(path), "-T", "json"], capture_output=True, text=True, check=True)
    packets = []
    for packet in json.loads(result.stdout, object_pairs_hook=_pairs):
        layers = dict(dict(dict(packet)["_source"])["layers"])
        fields = _flatten(layers.get("oampdu", []), [])
        packets.append(
            {
                "src": dict(_flatten(layers["eth"], []))["eth.src"],
                "len": int(dict(_flatten(layers["frame"], []))["frame.len"]),
                "oampdu": [(key, value) for key, value in fields if key.startswith("oampdu.")],
            }
        )
    return packets


# -- our model as Wireshark shows it -------------------------------------------------------

FLAG_FIELDS = [
    "linkFault",
    "dyingGasp",
    "criticalEvent",
    "localEvaluating",
    "localStable",
    "remoteEvaluating",
    "remoteStable",
]
CONFIG_FIELDS = [
    "oampdu.info.oamConfig.mode",
    "oampdu.flags.dyingGasp",
    "oampdu.flags.criticalEvent",
    "oampdu.flags.localEvaluating",
    "oampdu.flags.localStable",
]
EVENT_PREFIX = {1: "espe", 2: "efe", 3: "efpe", 4: "efsse"}
LEAF_FIELD = {3: "object", 4: "package", 6: "binding", 7: "attribute"}


def _bit(value: int, bit: int) -> str:
    return str(value >> bit & 1)


def _octets(data: bytes) -> str:
    return data.hex(":")


def _info_tlv(tlv: Any) -> Fields:
    if isinstance(tlv, InfoTlv):
        state = tlv.state_reserved << 3 | tlv.mux_action << 2 | tlv.parser_action
        config = int(tlv.oam_config)
        return [
            ("oampdu.info.type", f"0x{tlv.type:02x}"),
            ("oampdu.info.length", "16"),
            ("oampdu.info.version", f"0x{tlv.oam_version:02x}"),
            ("oampdu.info.revision", str(tlv.revision)),
            ("oampdu.info.state", f"0x{state:02x}"),
            ("oampdu.info.state.parser", f"0x{tlv.parser_action:02x}"),
            ("oampdu.info.state.multiplexer", str(tlv.mux_action)),
            ("oampdu.info.oamConfig", f"0x{config:02x}"),
            *((name, _bit(config, bit)) for bit, name in enumerate(CONFIG_FIELDS)),
            ("oampdu.info.oampduConfig", str(tlv.oampdu_config_reserved << 11 | tlv.max_pdu_size)),
            ("oampdu.info.oui", str(tlv.oui)),
            ("oampdu.info.vendor", _octets(tlv.vendor_info.to_bytes(4, "big"))),
        ]
    if isinstance(tlv, OrgSpecificTlv):
        return [
            ("oampdu.info.type", "0xfe"),
            ("oampdu.info.length", str(5 + len(tlv.value))),
            ("oampdu.info.oui", str(tlv.oui)),
            ("oampdu.info.vendor", _octets(tlv.value)),
        ]
    return [("oampdu.info.type", f"0x{tlv.type:02x}")]


def _event_tlv(tlv: Any) -> Fields:
    if isinstance(tlv, OrgSpecificTlv):
        return [("oampdu.event.type", "0xfe"), ("oampdu.event.length", f"0x{5 + len(tlv.value):02x}")]
    prefix = EVENT_PREFIX[tlv.type]
    errors = "efe" if tlv.type in (3, 4) else prefix  # Wireshark's field name reuse
    return [
        ("oampdu.event.type", f"0x{tlv.type:02x}"),
        ("oampdu.event.length", f"0x{S.LINK_EVENT_SIZES[tlv.type]:02x}"),
        ("oampdu.event.timestamp", str(tlv.timestamp)),
        (f"oampdu.event.{prefix}Window", str(tlv.window)),
        (f"oampdu.event.{prefix}Threshold", str(tlv.threshold)),
        (f"oampdu.event.{errors}Errors", str(tlv.errors)),
        (f"oampdu.event.{prefix}TotalErrors", str(tlv.error_running_total)),
        (f"oampdu.event.{prefix}TotalEvents", str(tlv.event_running_total)),
    ]


def _descriptor(branch: int, leaf: int) -> Fields:
    fields = [("oampdu.variable.branch", f"0x{branch:02x}")]
    if branch in LEAF_FIELD:
        fields.append((f"oampdu.variable.{LEAF_FIELD[branch]}", f"0x{leaf:04x}"))
    return fields


def _container(container: VariableContainer) -> Fields:
    fields = _descriptor(container.branch, container.leaf)
    for value in container.values:
        fields += [("oampdu.variable.width", str(len(value))), ("oampdu.variable.value", _octets(value))]
    if container.indication is not None:
        fields.append(("oampdu.variable.indication", f"0x{container.indication:02x}"))
    return fields


def wireshark_fields(pdu: Oampdu) -> Fields:
    """The ``oampdu.*`` fields tshark must show for this PDU, in order."""
    flags = int(pdu.flags)
    fields: Fields = [("oampdu.flags", f"0x{flags:04x}")]
    fields += [(f"oampdu.flags.{name}", _bit(flags, bit)) for bit, name in enumerate(FLAG_FIELDS)]
    fields.append(("oampdu.code", f"0x{pdu.code:02x}"))
    if isinstance(pdu, Information):
        fields += [field for tlv in pdu.tlvs for field in _info_tlv(tlv)]
    elif isinstance(pdu, EventNotification):
        fields.append(("oampdu.event.sequence", str(pdu.sequence)))
        fields += [field for tlv in pdu.tlvs for field in _event_tlv(tlv)]
    elif isinstance(pdu, VariableRequest):
        fields += [field for d in pdu.descriptors for field in _descriptor(d.branch, d.leaf)]
    elif isinstance(pdu, VariableResponse):
        fields += [field for c in pdu.containers for field in _container(c)]
    elif isinstance(pdu, LoopbackControl):
        command = pdu.loopback_command
        fields += [
            ("oampdu.lpbk.commands", f"0x{command:02x}"),
            ("oampdu.lpbk.commands.enable", _bit(command, 0)),
            ("oampdu.lpbk.commands.disable", _bit(command, 1)),
        ]
    elif isinstance(pdu, OrgSpecificPdu):
        fields.append(("oampdu.info.oui", str(pdu.oui)))
    return fields


# -- the batch ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, Oampdu, bytes, dict[str, Any]]]:
    """(kind, pdu, frame, tshark's reading) for every PDU of the batch; one tshark run."""
    pdus = [("fixed", pdu) for pdu in FIXED]
    for kind, strategy in KINDS.items():
        pdus += [(kind, pdu) for pdu in generate(strategy, EXAMPLES_PER_KIND)]
    frames = [encode(pdu) for _, pdu in pdus]
    path = tmp_path_factory.mktemp("tshark") / "generated.pcap"
    write_pcap(path, frames)
    readings = run_tshark(path)
    assert len(readings) == len(frames), "tshark did not read every frame"
    return [(kind, pdu, frame, reading) for (kind, pdu), frame, reading in zip(pdus, frames, readings, strict=True)]


def test_batch_covers_every_code_and_tlv_kind(batch: list[tuple[str, Oampdu, bytes, dict[str, Any]]]) -> None:
    pdus = [pdu for _, pdu, _, _ in batch]
    info_tlvs = [tlv for p in pdus if isinstance(p, Information) for tlv in p.tlvs]
    event_tlvs = [tlv for p in pdus if isinstance(p, EventNotification) for tlv in p.tlvs]
    containers = [c for p in pdus if isinstance(p, VariableResponse) for c in p.containers]
    assert {type(p) for p in pdus} == {
        Information,
        EventNotification,
        VariableRequest,
        VariableResponse,
        LoopbackControl,
        OrgSpecificPdu,
        UnsupportedPdu,
    }
    assert {tlv.type for tlv in info_tlvs if isinstance(tlv, InfoTlv)} == {1, 2}
    assert any(isinstance(tlv, OrgSpecificTlv) for tlv in info_tlvs)
    assert any(isinstance(tlv, UnknownTlv) for tlv in info_tlvs)
    assert {tlv.type for tlv in event_tlvs if isinstance(tlv, LinkEventTlv)} == {1, 2, 3, 4}
    assert any(isinstance(tlv, OrgSpecificTlv) for tlv in event_tlvs)
    assert any(len(value) == 128 for c in containers for value in c.values)
    assert any(c.indication is not None and not c.values for c in containers)
    assert any(c.branch == Branch.OBJECT and len(c.values) >= 2 and c.indication == 0x40 for c in containers)
    assert {p.loopback_command for p in pdus if isinstance(p, LoopbackControl)} >= {1, 2}
    assert any(len(frame) > 60 for _, _, frame, _ in batch)
    assert any(len(frame) == 1514 for _, _, frame, _ in batch)
    assert any(Flag.LINK_FAULT in p.flags for p in pdus)
    generated = [kind for kind, *_ in batch if kind != "fixed"]
    assert len(generated) >= len(KINDS) * EXAMPLES_PER_KIND * 0.8


@pytest.mark.parametrize("kind", ["fixed", *KINDS])
def test_tshark_reads_what_we_encoded(kind: str, batch: list[tuple[str, Oampdu, bytes, dict[str, Any]]]) -> None:
    mismatches = []
    for index, (pdu_kind, pdu, frame, reading) in enumerate(batch):
        if pdu_kind != kind:
            continue
        expected = {"src": pdu.src, "len": len(frame), "oampdu": wireshark_fields(pdu)}
        if reading != expected:
            differences = [
                f"  {name}: ours {expected[name]!r}\n  {' ' * len(name)}  tshark {reading[name]!r}"
                for name in expected
                if expected[name] != reading[name]
            ]
            mismatches.append(f"frame {index + 1} {frame.hex()}\n" + "\n".join(differences))
    assert not mismatches, f"{len(mismatches)} frames differ:\n" + "\n".join(mismatches[:5])
