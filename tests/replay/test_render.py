"""Observe mode's output paths (issue 18, offline tools): the timeline written straight as text
(`lines.render_line`, no entry dict) says what the entry dicts say (`lines.render_entry`); the
decoder memo of news frames changes nothing, forgets, and keeps no malformed frame; the
compiled TLV dicts equal their fields' values."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from efmoam.offline import decode as offline_decode
from efmoam.offline.capture import CaptureRecord, read_capture
from efmoam.offline.replay import observe as observe_module
from efmoam.offline.replay.lines import (
    JsonLines,
    compact_encoder,
    entry_dict,
    json_format,
    render_entry,
    render_line,
)
from efmoam.offline.replay.observe import Observer
from pdu import (
    EventNotification,
    EventTlvType,
    InfoTlv,
    LinkEventTlv,
    OrgSpecificTlv,
    UnknownTlv,
    encode,
)
from tests.replay.frames import STABLE, A, B, conversation, event, frame_event, info, local, remote

REPO = Path(__file__).resolve().parents[2]
CAPTURES = sorted(p for p in (REPO / "pcaps").rglob("*") if p.suffix in (".pcap", ".pcapng"))


def records(frames: list[tuple[float, bytes]]) -> list[CaptureRecord]:
    return [CaptureRecord(n, t, data, len(data), 0, 1) for n, (t, data) in enumerate(frames, 1)]


def both_ways(capture: list[CaptureRecord]) -> tuple[list[str], list[str], list[str], list[str]]:
    """The timeline of `capture` as text lines and JSON lines (the reports' sinks), and as entry
    dicts, each rendered and dumped as it comes (an event's dict changes later: its duplicates
    are counted on it for the summary)."""
    text: list[str] = []
    json_lines: list[str] = []
    rendered: list[str] = []
    dumped: list[str] = []

    def render(entry: dict[str, Any]) -> None:
        rendered.append(render_entry(entry) + "\n")
        dumped.append(json.dumps(entry, separators=(",", ":")))

    for observer in (
        Observer(on_line=text.append),
        Observer(on_line=json_lines.append, line_format=json_format()),
        Observer(on_entry=render),
    ):
        observer.run(capture)
        observer.finish()
    return text, rendered, json_lines, dumped


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: str(p.relative_to(REPO / "pcaps")))
def test_lines_written_straight_say_what_the_entries_say(path: Path) -> None:
    """Every capture of pcaps/: the text and JSON sinks give the entry dicts' lines, in order."""
    capture = list(read_capture(path))
    if not capture or capture[0].linktype != 1:
        pytest.skip("not an Ethernet capture")
    text, rendered, json_lines, dumped = both_ways(capture)
    assert text == rendered
    assert json_lines == dumped
    assert all(line.endswith("\n") and line.count("\n") == 1 for line in text)


def test_every_kind_of_entry_and_the_odd_times_agree() -> None:
    """Findings with and without extra fields, events, states, revisions, a capture gap and a
    silence, at times that round up, down and to zero (the first record at the epoch)."""
    frames = conversation(3, start=-conversation(1)[0][0])  # A's first frame at time 0.0
    later = frames[-1][0]
    frames += [
        (later + 0.0000005, event(A, 1, frame_event())),  # rounds half to even at the microsecond
        (later + 0.0000015, event(A, 1, frame_event(errors=6))),  # a reused sequence number
        (later + 0.9999996, event(A, 2, LinkEventTlv(EventTlvType.ERRORED_SYMBOL_PERIOD, 1, 5, 1, 9, 1, 0))),
        (later + 1.1, info(A, STABLE | 0x0300, local(), remote(local(oui=0x111111)))),  # reserved flags
        (later + 9.0, info(B, STABLE, local(revision=8, oui=0x111111), remote(local()))),  # a capture gap
        (later + 20.0, info(A, STABLE, local(revision=2, oui=0x333333), remote(local(oui=0x111111)))),
    ]
    text, rendered, json_lines, dumped = both_ways(records(frames))
    kinds = {line.split("  ", 3)[3].split(" ", 1)[0] for line in text}
    assert {"FINDING", "event_notification", "state", "advertises", "CAPTURE", "revision"} <= kinds
    assert any("(" in line and "FINDING" in line for line in text)  # a finding's extra fields
    assert text == rendered
    assert json_lines == dumped


def test_a_json_line_whose_fields_repeat_a_common_key_keeps_it_where_the_dict_does() -> None:
    """Fields may repeat ``frame`` and ``time`` (with their values): one key each, in place."""
    json_line, json_finding_line = JsonLines().entry, JsonLines().finding
    fields = {"revision": 3, "frame": 7, "time": 1.5, "changed": ["oui"]}
    line = json_line(7, 1.5, 0.5, A, "revision", fields)
    assert line == json.dumps(entry_dict(7, 1.5, 0.5, A, "revision", fields), separators=(",", ":"))
    assert list(json.loads(line)) == ["frame", "time", "t", "speaker", "what", "revision", "changed"]
    finding = json_finding_line(7, 1.5, 0.5, A, "k", 'a "quoted" d\u00e9tail', {"frame": 9, "peer_frame": 2})
    extra = {"kind": "k", "detail": 'a "quoted" d\u00e9tail', "frame": 9, "peer_frame": 2}
    assert finding == json.dumps(entry_dict(7, 1.5, 0.5, A, "finding", extra), separators=(",", ":"))
    assert finding.count('"frame"') == 1
    quoted = json_finding_line(7, 1.5, 0.5, A, "k", 'a "quoted" d\u00e9tail\n', {"peer_frame": 2})
    assert quoted == json.dumps(
        entry_dict(7, 1.5, 0.5, A, "finding", {"kind": "k", "detail": 'a "quoted" d\u00e9tail\n', "peer_frame": 2}),
        separators=(",", ":"),
    )
    assert json_line(7, 1.5, 0.5, None, "capture_gap", {}) == (
        '{"frame":7,"time":1.5,"t":1.0,"speaker":null,"what":"capture_gap"}'
    )


@settings(max_examples=300, deadline=None)
@given(st.floats(-1e12, 1e12, allow_nan=False), st.integers(0, 2**32))
def test_time_shown_unrounded_is_the_rounded_times_digits(t: float, frame: int) -> None:
    """The text sink formats t to the microsecond; the entry holds round(t, 6): same digits."""
    assert render_line(frame, t, 0.0, A, "state", {"state": "FAULT"}) == render_line(
        frame, round(t, 6), 0.0, A, "state", {"state": "FAULT"}
    )
    time, start = t + 1.75e9, 1.75e9  # a capture's times, since the epoch
    assert render_line(frame, time, start, A, "novel", {}) == render_line(
        frame, round(time - start, 6), 0.0, A, "novel", {}
    )


def test_an_unknown_entry_shows_its_own_fields_never_the_common_ones() -> None:
    fields = {"frame": 9, "time": 2.0, "x": 1, "y": "z"}
    assert render_line(9, 2.5, 0.5, None, "novel", fields) == "9  2.000000  -  novel (x=1, y=z)\n"
    assert render_line(9, 2.0, 0.0, B, "novel", {}) == f"9  2.000000  {B}  novel\n"


# -- the decoder memo ------------------------------------------------------------------------------


def news(count: int) -> list[tuple[float, bytes]]:
    """`count` distinct Event Notifications of A, then the same again (news that recurs)."""
    frames = [event(A, n, frame_event(events=n + 1, total=5 * (n + 1))) for n in range(count)]
    return [(1_000.0 + 0.2 * i, data) for i, data in enumerate(frames + frames)]


def test_the_decoder_memo_forgets_and_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """More distinct news than the memo keeps, recurring: the same timeline and summary as an
    observer that decodes every frame, and the memo never holds more than its bound."""
    capture = records(news(observe_module._DECODED + 300))
    memo_lines: list[str] = []
    with_memo = Observer(on_line=memo_lines.append)
    with_memo.run(capture)
    assert 0 < len(with_memo._decoded) <= observe_module._DECODED
    monkeypatch.setattr(observe_module, "_DECODED", 0)  # every frame decoded afresh
    plain_lines: list[str] = []
    plain = Observer(on_line=plain_lines.append)
    plain.run(capture)
    assert len(plain._decoded) <= 1
    assert memo_lines == plain_lines
    assert json.dumps(with_memo.summary()) == json.dumps(plain.summary())
    assert with_memo.summary()["speakers"][A]["counts"]["event_notification"] == len(capture)


def test_a_malformed_frame_that_recurs_is_counted_every_time_and_never_kept() -> None:
    bad = encode(EventNotification(A, STABLE, 1, (frame_event(),)))[:24]  # the TLV cut short
    good = event(A, 2, frame_event())
    frames = [(1_000.0 + i, bad if i % 2 == 0 else good) for i in range(6)]
    observer = Observer()
    observer.run(records(frames))
    summary = observer.summary()
    assert summary["malformed"] == 3
    assert summary["speakers"][A]["finding_counts"]["malformed"] == 3
    assert bad not in observer._decoded and good in observer._decoded


# -- the compiled TLV dicts ------------------------------------------------------------------------

SAMPLES = [
    local(revision=3, oui=0x111111, vendor_info=0x11223344, state_reserved=0x20),
    remote(local(oui=0x00000C)),
    LinkEventTlv(EventTlvType.ERRORED_FRAME_PERIOD, 7, 1_000_000, 1, 9, 90, 3),
    OrgSpecificTlv(0x111111, b"\x01\x20\x11\x11\x11\x20"),
    OrgSpecificTlv(0x00000C, b""),
    UnknownTlv(0x33, b"\xff\x00"),
]


@pytest.mark.parametrize("pdu_code", [None, 0x00, 0x01])
@pytest.mark.parametrize("tlv", SAMPLES, ids=lambda tlv: type(tlv).__name__)
def test_a_tlvs_dict_is_its_fields_values_with_plain_ints(tlv: Any, pdu_code: int | None) -> None:
    schema = offline_decode._SCHEMAS_IN[pdu_code][type(tlv)]
    made = offline_decode.tlv_to_dict(tlv, pdu_code)
    assert made == {field.key: field.value(tlv) for field in schema.fields}
    assert list(made) == [field.key for field in schema.fields]  # the order JSON shows
    assert json.dumps(made, separators=(",", ":")) == schema.to_json(tlv)
    for field in schema.fields:
        if field.fmt == "%d":
            assert type(made[field.key]) is int, field.key  # never an IntFlag or IntEnum
    assert isinstance(tlv, InfoTlv | LinkEventTlv | OrgSpecificTlv | UnknownTlv)


def test_a_revision_is_kept_with_its_frame_and_time_and_shown_without_them() -> None:
    """The summary keeps each revision with where it was seen (the capabilities with the first,
    what changed with the others); the timeline shows the same, its frame and time its own."""
    frames = conversation(2)
    frames.append((frames[-1][0] + 0.5, info(A, STABLE, local(revision=2, oui=0x333333), remote(local(7, 0x111111)))))
    entries: list[dict[str, Any]] = []
    observer = Observer(on_entry=entries.append)
    observer.run(records(frames))
    kept = observer.summary()["speakers"][A]["revisions"]
    assert [list(r) for r in kept] == [
        ["revision", "frame", "time", "mode", "oam_config", "max_pdu_size", "oui", "vendor_info", "oam_version"],
        ["revision", "frame", "time", "changed"],
    ]
    assert (kept[1]["revision"], kept[1]["frame"], kept[1]["changed"]) == (2, len(frames), ["oui"])
    shown = [e for e in entries if e["what"] in ("capabilities", "revision") and e["speaker"] == A]
    assert [{k: v for k, v in e.items() if k not in ("t", "speaker", "what")} for e in shown] == [
        {**r, "time": r["time"] + frames[0][0]} for r in kept
    ]


def test_json_lines_of_equal_but_different_values_keep_their_own_text() -> None:
    """The JSON head is reused only for the very same values: 1 and 1.0, 0.0 and -0.0 differ."""
    json_line = JsonLines().entry
    texts = [json_line(1, time, 0, A, "state", {"state": "FAULT"}) for time in (1000, 1000.0, 0.0, -0.0, 0.0)]
    assert texts == [
        json.dumps(entry_dict(1, time, 0, A, "state", {"state": "FAULT"}), separators=(",", ":"))
        for time in (1000, 1000.0, 0.0, -0.0, 0.0)
    ]
    assert len(set(texts)) == 4


HOSTILE_VALUES = [
    {"detail": 'quote " backslash \\ newline \n tab \t nul \0 bell \x07', "n": -(2**70), "f": 1e-300},
    {"unicode": "d\u00e9tail \u2603 \U0001f600 \ud800", "nested": [{"a": [None, True, False]}, []], "e": {}},
    {"inf": float("inf"), "nan": float("nan"), "big": 1.7976931348623157e308, "neg": -0.0},
]


@pytest.mark.parametrize("c_encoder", [True, False], ids=["c", "python"])
@pytest.mark.parametrize("value", HOSTILE_VALUES, ids=["escapes", "unicode", "floats"])
def test_the_compact_encoder_writes_what_json_dumps_writes(
    monkeypatch: pytest.MonkeyPatch, value: dict[str, Any], c_encoder: bool
) -> None:
    if not c_encoder:
        monkeypatch.setattr(json.encoder, "c_make_encoder", None)  # as on a Python without it
    encode = compact_encoder()
    assert encode(value) == json.dumps(value, separators=(",", ":"))
    with pytest.raises(TypeError, match="not JSON serializable"):
        encode({"x": object()})
