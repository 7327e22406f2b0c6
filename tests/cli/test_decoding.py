"""efmoam.offline.decode apart from click: the model -> dict mapping, text rendering, the loop."""

from __future__ import annotations

import io
import json
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given, settings, strategies as st

from efmoam.offline.capture import CaptureError, CaptureRecord, read_capture
from efmoam.offline.decode import (
    EXIT_OK,
    EXIT_UNREADABLE,
    CaptureDecoder,
    NotEthernetError,
    _remembered,
    _write_chunked,
    format_text,
    frame_to_dict,
    pdu_text,
    pdu_to_dict,
    pdu_to_json,
    run_decode,
    tlv_to_dict,
)
from pdu import (
    DecodeError,
    EventNotification,
    EventTlvType,
    Flag,
    Information,
    InfoTlv,
    InfoTlvType,
    LinkEventTlv,
    LoopbackControl,
    OamConfig,
    OrgSpecificPdu,
    OrgSpecificTlv,
    UnknownTlv,
    UnsupportedPdu,
    VariableContainer,
    VariableDescriptor,
    VariableRequest,
    VariableResponse,
    decode,
    encode,
)
from pdu.oui import CTC

REPO = Path(__file__).resolve().parents[2]
INTEROP = REPO / "pcaps" / "interop"
SRC = "00:11:22:33:44:55"
STABLE = Flag.LOCAL_STABLE | Flag.REMOTE_STABLE


def record(number: int, data: bytes, time: float = 1_700_000_000.0, linktype: int = 1) -> CaptureRecord:
    return CaptureRecord(number, time, data, len(data), 0, linktype)


# -- the mapping ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "tlv",
    [
        InfoTlv(oam_config=OamConfig.ACTIVE, oui=0x001122),
        LinkEventTlv(EventTlvType.ERRORED_FRAME, 1, 10, 1, 2, 3, 4),
        OrgSpecificTlv(0x00A0C9, b"\x01\x02"),
        UnknownTlv(0x05, b"\xff"),
    ],
)
def test_tlv_objects_carry_every_model_field(tlv: Any) -> None:
    obj = tlv_to_dict(tlv)
    assert list(obj)[:2] == ["type", "kind"]
    assert {field.name for field in attrs.fields(type(tlv))} <= set(obj)
    assert json.loads(json.dumps(obj)) == obj


def test_org_specific_tlv_and_unknown_tlv() -> None:
    pdu = Information(SRC, 0, (OrgSpecificTlv(0x00A0C9, b"\x01\x02"), UnknownTlv(0x05, b"\xff")))
    obj = pdu_to_dict(decode(encode(pdu)))
    assert obj["tlvs"] == [
        {
            "type": 0xFE,
            "kind": "organization_specific",
            "oui": "00:a0:c9",
            "oui_name": None,
            "value": "0102",
            "decoded": None,
        },
        {"type": 5, "kind": "unknown", "value": "ff"},
    ]
    assert obj["flag_names"] == []
    assert format_text(obj) == (
        f"{SRC}  -  information  organization_specific(oui=00:a0:c9 value=0102)  unknown(type=0x05 value=ff)"
    )


def test_variable_request_and_response() -> None:
    request = pdu_to_dict(VariableRequest(SRC, STABLE, (VariableDescriptor(7, 2), VariableDescriptor(3, 1))))
    assert (request["code"], request["code_name"]) == (2, "variable_request")
    assert request["descriptors"] == [{"branch": 7, "leaf": 2}, {"branch": 3, "leaf": 1}]
    assert format_text(request).endswith("variable_request  descriptor(branch=7 leaf=2)  descriptor(branch=3 leaf=1)")
    containers = (VariableContainer(7, 2, (b"\x00\x2a",)), VariableContainer(7, 3, (), 0x21))
    response = pdu_to_dict(VariableResponse(SRC, STABLE, containers))
    assert response["containers"] == [
        {"branch": 7, "leaf": 2, "values": ["002a"], "indication": None},
        {"branch": 7, "leaf": 3, "values": [], "indication": 0x21},
    ]
    assert format_text(response).endswith(
        "container(branch=7 leaf=2 values=002a indication=-)  container(branch=7 leaf=3 values=- indication=0x21)"
    )


def test_loopback_org_specific_and_unsupported_pdus() -> None:
    loopback = pdu_to_dict(LoopbackControl(SRC, STABLE, 1))
    assert {k: loopback[k] for k in ("code", "code_name", "loopback_command", "loopback_command_name")} == {
        "code": 4,
        "code_name": "loopback_control",
        "loopback_command": 1,
        "loopback_command_name": "enable",
    }
    assert format_text(loopback).endswith("loopback_control  command=enable(1)")
    assert pdu_to_dict(LoopbackControl(SRC, 0, 9))["loopback_command_name"] == "unknown"
    org = pdu_to_dict(OrgSpecificPdu(SRC, 0, 0x001122, b"\xab"))
    assert (org["code"], org["code_name"], org["oui"], org["value"]) == (
        0xFE,
        "organization_specific",
        "00:11:22",
        "ab",
    )
    assert format_text(org) == f"{SRC}  -  organization_specific  oui=00:11:22 value=ab"
    unsupported = pdu_to_dict(UnsupportedPdu(SRC, 0, 0x05, b"\x01"))
    assert (unsupported["code"], unsupported["code_name"], unsupported["data"]) == (5, "unsupported", "01")
    assert format_text(unsupported) == f"{SRC}  -  unsupported  code=0x05 data=01"


def test_undefined_flag_and_config_bits_are_named_in_hex() -> None:
    obj = pdu_to_dict(Information(SRC, Flag.LINK_FAULT | 0x0180, (InfoTlv(oam_config=0x21, state_reserved=3),)))
    assert obj["flag_names"] == ["link_fault", "0x0080", "0x0100"]
    assert obj["tlvs"][0]["oam_config_names"] == ["active", "0x20"]
    assert "state_reserved=0x3)" in format_text(obj)


def test_information_tlv_text() -> None:
    tlv = InfoTlv(InfoTlvType.REMOTE, 1, 7, 0, 1, 2, OamConfig(0), 0, 1518, 0xABCDEF, 5)
    obj = pdu_to_dict(Information(SRC, 0, (tlv,)))
    assert (obj["tlvs"][0]["type"], obj["tlvs"][0]["kind"]) == (2, "remote")
    assert format_text(obj).endswith(
        "remote(ver=1 rev=7 parser=discard mux=discard config=- pdu=1518 oui=ab:cd:ef vendor=0x00000005)"
    )


# -- the loop -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["events.pcapng", "flags.pcapng"])
def test_json_lines_are_the_dumps_of_frame_to_dict(name: str) -> None:
    """The fast path (cached bodies, string concatenation) equals the one mapping."""
    decoder = CaptureDecoder(json_output=True)
    records = list(read_capture(INTEROP / name))
    lines = list(decoder.lines(records))
    expected = []
    for rec in records:
        try:
            expected.append(json.dumps(frame_to_dict(rec.number, rec.time, decode(rec.data)), separators=(",", ":")))
        except DecodeError:  # not an OAMPDU
            continue
    assert lines == expected


def test_repeated_frames_reuse_the_rendering() -> None:
    frame = encode(Information(SRC, STABLE, (InfoTlv(),)))
    other = encode(Information(SRC, STABLE, (InfoTlv(revision=1),)))
    decoder = CaptureDecoder()
    lines = list(decoder.lines(record(n, f, 1000.0 + n) for n, f in enumerate([frame, frame, other, frame], 1)))
    bodies = [line.split("  ", 2)[2] for line in lines]
    assert bodies[0] == bodies[1] == bodies[3] != bodies[2]
    assert [line.split("  ")[1] for line in lines] == ["0.000000", "1.000000", "2.000000", "3.000000"]
    assert decoder.stats.oampdus == 4


def test_first_record_must_be_ethernet() -> None:
    decoder = CaptureDecoder()
    with pytest.raises(NotEthernetError, match="link type 101 \\(raw IP\\)"):
        list(decoder.lines([record(1, b"\x45" + bytes(40), linktype=101)]))
    with pytest.raises(NotEthernetError, match=r"^link type 4242 is not Ethernet"):
        list(CaptureDecoder().lines([record(1, b"", linktype=4242)]))


def _records_then_error(frames: list[bytes]) -> Iterator[CaptureRecord]:
    for number, frame in enumerate(frames, 1):
        yield record(number, frame)
    raise CaptureError("record 99 at offset 1234: truncated packet data")


def test_run_decode_writes_pending_lines_before_the_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    frames = [encode(EventNotification(SRC, STABLE, n)) for n in range(3)]
    monkeypatch.setattr("efmoam.offline.decode.open_records", lambda source, stdin=None: _records_then_error(frames))
    out, err = io.StringIO(), io.StringIO()
    assert run_decode(tmp_path / "x.pcap", out, err) == EXIT_UNREADABLE
    assert [line.split("  ")[0] for line in out.getvalue().splitlines()] == ["1", "2", "3"]
    assert err.getvalue().splitlines()[-1] == (
        f"efmoam decode: error: {tmp_path / 'x.pcap'}: record 99 at offset 1234: truncated packet data"
    )


def test_remembered_renders_each_object_once_and_never_another_objects_text() -> None:
    calls: list[object] = []

    def render(obj: object) -> str:
        calls.append(obj)
        return f"text of {obj!r}"

    remembered = _remembered(render, size=2)
    a, b, c = InfoTlv(1, revision=1), InfoTlv(1, revision=2), InfoTlv(1, revision=3)
    assert [remembered(x) for x in (a, b, a, b)] == [f"text of {x!r}" for x in (a, b, a, b)]
    assert calls == [a, b]  # each rendered once
    remembered(c)  # a third object: the memo starts afresh (it holds at most two)
    assert remembered(a) == f"text of {a!r}"
    assert calls == [a, b, c, a]
    # an equal object that is not the same one is rendered on its own, and renders the same
    twin = InfoTlv(1, revision=1)
    assert remembered(twin) == remembered(a)


def test_remembered_holds_what_it_remembers_so_no_other_object_takes_its_address() -> None:
    """Keyed by id(): the memo keeps each object alive while it remembers it (an address
    is never reused under a stale text), and lets go when it starts afresh (bounded)."""
    remembered = _remembered(lambda obj: f"text of {obj!r}", size=2)
    first = InfoTlv(1, revision=1)
    gone = weakref.ref(first)
    remembered(first)
    del first
    assert gone() is not None  # held: no new object can be put at its address
    others = [InfoTlv(1, revision=revision) for revision in range(2, 5)]
    assert [remembered(other) for other in others] == [f"text of {other!r}" for other in others]
    assert gone() is None  # the memo started afresh and let it go


def test_information_tlvs_render_the_same_remembered_or_not() -> None:
    info = Information(SRC, STABLE, (InfoTlv(1, revision=7), InfoTlv(2, revision=9)))
    frame = encode(info)
    first, again = pdu_to_json(decode(frame)), pdu_to_json(decode(frame))
    assert first == again == json.dumps(pdu_to_dict(info), separators=(",", ":"))


def _lines_then_error(count: int) -> Iterator[str]:
    yield from (f"line {n}" for n in range(1, count + 1))
    raise CaptureError("cut")


@pytest.mark.parametrize("count", [0, 1, 2, 3, 4, 5])
def test_write_chunked_writes_every_line_once_before_an_error(count: int) -> None:
    out = io.StringIO()
    with pytest.raises(CaptureError):
        _write_chunked(_lines_then_error(count), out, 2)
    assert out.getvalue() == "".join(f"line {n}\n" for n in range(1, count + 1))


def test_write_chunked_writes_line_by_line_when_asked_for_no_chunk() -> None:
    out = io.StringIO()
    _write_chunked(iter(["a", "b"]), out, 0)
    assert out.getvalue() == "a\nb\n"


def test_write_chunked_writes_nothing_twice_when_the_output_fails() -> None:
    class FailsOnce(io.StringIO):
        failed = False

        def write(self, text: str) -> int:
            if not self.failed:
                self.failed = True
                raise BrokenPipeError(32, "Broken pipe")
            return super().write(text)

    out = FailsOnce()
    with pytest.raises(BrokenPipeError):
        _write_chunked(iter(["a", "b", "c"]), out, 2)
    assert out.getvalue() == ""  # the failed chunk is not written again on the way out
    _write_chunked(iter(["a", "b", "c"]), out, 2)
    assert out.getvalue() == "a\nb\nc\n"


def test_run_decode_lets_a_broken_pipe_through(tmp_path: Path) -> None:
    class BrokenOut(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    with pytest.raises(BrokenPipeError):
        run_decode(INTEROP / "events.pcapng", BrokenOut(), io.StringIO())


def test_run_decode_ok() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert run_decode(INTEROP / "flags.pcapng", out, err, json_output=True) == EXIT_OK
    assert len(out.getvalue().splitlines()) == 42


@settings(max_examples=300, deadline=None)
@given(body=st.binary(max_size=80), flags=st.integers(0, 0xFFFF), code=st.sampled_from([0, 1, 2, 3, 4, 0xFE, 7]))
def test_any_oampdu_body_gives_one_parseable_line(body: bytes, flags: int, code: int) -> None:
    frame = (
        bytes.fromhex("0180c2000002" + "001122334455" + "8809" + "03") + flags.to_bytes(2, "big") + bytes([code]) + body
    )
    for json_output in (True, False):
        decoder = CaptureDecoder(json_output)
        lines = list(decoder.lines([record(1, frame)]))
        assert len(lines) == 1
        assert decoder.stats.oampdus + decoder.stats.malformed == 1
        if json_output:
            obj = json.loads(lines[0])
            assert obj["frame"] == 1
            assert ("error" in obj) == bool(decoder.stats.malformed)


# -- the two renderings of the one mapping agree ------------------------------------------

_u = st.integers
_macs = st.binary(min_size=6, max_size=6).map(lambda b: b.hex(":"))
_info_tlvs = st.builds(
    InfoTlv,
    st.sampled_from([1, 2]),
    _u(0, 0xFF),
    _u(0, 0xFFFF),
    _u(0, 31),
    _u(0, 1),
    _u(0, 3),
    _u(0, 0xFF),
    _u(0, 31),
    _u(0, 2047),
    _u(0, 0xFFFFFF),
    _u(0, 0xFFFFFFFF),
)
_event_tlvs = st.builds(LinkEventTlv, _u(1, 4), *[_u(0, 2**64 - 1)] * 5, _u(0, 2**32 - 1))
# the CTC OUI often: its TLV reads differently in an Information OAMPDU (decoded) and elsewhere
_org_tlvs = st.builds(
    OrgSpecificTlv,
    st.sampled_from([CTC]) | _u(0, 0xFFFFFF),
    st.sampled_from([bytes.fromhex("01 20 111111 01 111111 20")]) | st.binary(max_size=8),
)
_unknown_tlvs = st.builds(UnknownTlv, _u(3, 0xFD), st.binary(max_size=8))
_flags = _u(0, 0xFFFF)
_containers = st.builds(
    VariableContainer,
    _u(0, 0xFF),
    _u(0, 0xFFFF),
    st.lists(st.binary(min_size=1, max_size=4), max_size=3).map(tuple),
    st.none() | _u(0, 0x7F),
)
_pdus = st.one_of(
    st.builds(Information, _macs, _flags, st.lists(_info_tlvs | _org_tlvs | _unknown_tlvs, max_size=3).map(tuple)),
    st.builds(
        EventNotification,
        _macs,
        _flags,
        _u(0, 0xFFFF),
        st.lists(_event_tlvs | _org_tlvs | _unknown_tlvs, max_size=3).map(tuple),
    ),
    st.builds(
        VariableRequest, _macs, _flags, st.lists(st.builds(VariableDescriptor, _u(0, 255), _u(0, 0xFFFF))).map(tuple)
    ),
    st.builds(VariableResponse, _macs, _flags, st.lists(_containers, max_size=3).map(tuple)),
    st.builds(LoopbackControl, _macs, _flags, _u(0, 0xFF)),
    st.builds(OrgSpecificPdu, _macs, _flags, _u(0, 0xFFFFFF), st.binary(max_size=8)),
    st.builds(UnsupportedPdu, _macs, _flags, _u(5, 0xFD), st.binary(max_size=8)),
)


@settings(max_examples=400, deadline=None)
@given(pdu=_pdus)
def test_json_text_is_the_dumps_of_the_dict(pdu: Any) -> None:
    obj = pdu_to_dict(pdu)
    assert pdu_to_json(pdu) == json.dumps(obj, separators=(",", ":"))
    assert json.loads(pdu_to_json(pdu)) == obj
    assert all(type(value) in (int, str, list, type(None)) for value in obj.values())
    assert format_text(obj).startswith(f"{pdu.src}  ")


@settings(max_examples=400, deadline=None)
@given(pdu=_pdus)
def test_the_text_of_an_object_is_the_text_of_its_dict(pdu: Any) -> None:
    expected = format_text(pdu_to_dict(pdu))
    assert pdu_text(pdu) == expected
    assert pdu_text(pdu) == expected  # a second time, its recurring TLVs' text remembered
    tlvs = getattr(pdu, "tlvs", None)
    anew = attrs.evolve(pdu) if tlvs is None else attrs.evolve(pdu, tlvs=tuple(attrs.evolve(t) for t in tlvs))
    assert pdu_text(anew) == expected  # an equal OAMPDU, its TLVs made anew too


def test_a_source_mac_from_elsewhere_is_quoted() -> None:
    pdu = LoopbackControl('a"b\\c\u00e9', 0, 1)
    assert pdu_to_json(pdu) == json.dumps(pdu_to_dict(pdu), separators=(",", ":"))
    assert json.loads(pdu_to_json(pdu))["src"] == 'a"b\\c\u00e9'


def test_text_of_tlvs_with_types_the_decoder_never_gives() -> None:
    odd = Information(SRC, 0, (InfoTlv(type=7),))
    assert "  unknown(ver=1 rev=0 parser=fwd mux=fwd" in format_text(pdu_to_dict(odd))
    event = EventNotification(SRC, 0, 1, (LinkEventTlv(9, 1, 2, 3, 4, 5, 6),))
    assert format_text(pdu_to_dict(event)).endswith(
        "seq=1  unknown(ts=1 window=2 threshold=3 errors=4 total=5 events=6)"
    )
