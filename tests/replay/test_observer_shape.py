"""The observer's shape (issue 16): small modules, named rule-tracking functions that state
their clause and their caveats on trimmed captures, and details that the split must keep."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

import pytest

from efmoam.offline.capture import CaptureRecord
from efmoam.offline.replay import discovery, events, loopbacks, silences
from efmoam.offline.replay.observe import Observer
from efmoam.offline.replay.report import render_entry
from pdu import decode
from tests.replay.frames import A, B, conversation, info, local, remote

REPLAY = Path(__file__).resolve().parents[2] / "efmoam" / "offline" / "replay"
#: the observer's modules (play, transmit, expect and report are other commands' own)
OBSERVER_MODULES = (
    "observe",
    "speaker",
    "timeline",
    "lines",
    "discovery",
    "loopbacks",
    "silences",
    "events",
    "rules",
    "findings",
)
MAX_CLASS_LINES = 400
MAX_FUNCTION_LINES = 60
#: the per-frame loop stays inlined, in locals (benchmarked: tests/bench/test_replay_bench.py)
INLINED = {("observe", "run")}


def sizes(module: str) -> list[tuple[str, str, int]]:
    tree = ast.parse((REPLAY / f"{module}.py").read_text())
    return [
        (type(node).__name__, node.name, (node.end_lineno or node.lineno) - node.lineno + 1)
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef | ast.FunctionDef)
    ]


@pytest.mark.parametrize("module", OBSERVER_MODULES)
def test_no_class_or_function_is_a_second_engine(module: str) -> None:
    too_long = [
        (kind, name, lines)
        for kind, name, lines in sizes(module)
        if (kind == "ClassDef" and lines > MAX_CLASS_LINES)
        or (kind == "FunctionDef" and lines > MAX_FUNCTION_LINES and (module, name) not in INLINED)
    ]
    assert too_long == []


#: the functions that track a Clause 57 rule over a speaker's frames
TRACKERS = [
    discovery.follow_local,
    discovery.check_remote,
    discovery.set_state,
    loopbacks.command,
    loopbacks.state_change,
    silences.check_silence,
    silences.before_gap,
    silences.judge_at_end,
    events.flag_changes,
    events.event_notification,
    events.end_marker,
]


@pytest.mark.parametrize("function", TRACKERS, ids=lambda f: f"{f.__module__.rsplit('.', 1)[1]}.{f.__name__}")
def test_each_tracker_states_its_clause_and_its_caveat(function: Any) -> None:
    doc = inspect.getdoc(function) or ""
    assert "57." in doc  # the clause it follows
    assert "caveat" in doc.lower()  # what a trimmed capture can and cannot show of it


# -- details the split keeps, or fixes ------------------------------------------------------------


def test_entries_count_time_from_a_first_record_at_time_zero() -> None:
    """A capture starting at the epoch (as fuzzed or hand-made ones do): ``t`` is not always 0."""
    entries: list[dict[str, Any]] = []
    observer = Observer(on_entry=entries.append)
    frames = conversation(3, start=-conversation(1)[0][0])  # A's first frame at time 0.0
    observer.run(CaptureRecord(n, t, data, len(data), 0, 1) for n, (t, data) in enumerate(frames, 1))
    assert frames[0][0] == 0.0
    b_first = next(e for e in entries if e["speaker"] == B)
    assert b_first["t"] == pytest.approx(0.5)


def test_a_finding_line_shows_what_belongs_to_it_and_an_unknown_entry_shows_its_fields() -> None:
    common = {"frame": 7, "time": 1.5, "t": 1.5, "speaker": A}
    finding = {**common, "what": "finding", "kind": "remote_mismatch", "detail": "oui", "peer_frame": 3}
    assert render_entry(finding) == f"7  1.500000  {A}  FINDING remote_mismatch: oui (peer_frame=3)"
    other = {**common, "speaker": None, "what": "novel", "x": 1}
    assert render_entry(other) == "7  1.500000  -  novel (x=1)"


def test_information_tlvs_are_shared_between_frames_and_equal_to_what_they_say() -> None:
    """The codec builds a recurring Information TLV once (A's Local TLV is B's Remote TLV's content)."""
    first = decode(info(A, 0x50, local(), remote(local(oui=0x111111))))
    again = decode(info(B, 0x50, local(), remote(local(oui=0x111111))))
    assert first.tlvs[0] is again.tlvs[0]
    assert first.tlvs[0] == local()
    other = decode(info(A, 0x50, local(revision=2), remote(local(oui=0x111111))))
    assert other.tlvs[0] == local(revision=2)
    assert other.tlvs[1] is first.tlvs[1]


def test_the_decoders_fast_constructors_build_what_the_classes_build() -> None:
    """pdu.codec builds its hot objects without attrs' ``__init__``: equal, same hash, same converters."""
    from pdu import codec
    from pdu.model import EventNotification, Flag, InfoTlv, LinkEventTlv, OamConfig

    for build in (codec._new_info_tlv, codec._new_link_event, codec._new_information, codec._new_event_notification):
        assert build.__name__ == "build"  # the fast path is in use with this attrs
    tlv = codec._new_info_tlv(1, 1, 7, 0, 1, 2, 0x0D, 0, 1500, 0x111111, 9)
    assert tlv == InfoTlv(1, 1, 7, 0, 1, 2, 0x0D, 0, 1500, 0x111111, 9)
    assert type(tlv.oam_config) is OamConfig  # the converter ran
    events = (codec._new_link_event(2, 1, 2, 3, 4, 5, 6),)
    built = codec._new_event_notification(A, 0x52, 9, events)
    expected = EventNotification(A, 0x52, 9, (LinkEventTlv(2, 1, 2, 3, 4, 5, 6),))
    assert (built, hash(built), repr(built)) == (expected, hash(expected), repr(expected))
    assert type(built.flags) is Flag
    with pytest.raises(ValueError, match="16 bits"):
        codec._new_information(A, 0x10000, ())  # the converter's checks hold


def test_a_class_the_fast_constructor_cannot_build_gets_its_own_constructor() -> None:
    import attrs

    from pdu.codec import fast_constructor

    @attrs.frozen
    class Checked:
        value: int = attrs.field(validator=attrs.validators.gt(0))

    @attrs.frozen
    class Plain:
        value: int

    @attrs.frozen(init=False)
    class Doubled:
        value: int

        def __init__(self, value: int) -> None:
            object.__setattr__(self, "value", 2 * value)

    assert fast_constructor(Checked, (1,)) is Checked  # a validator: not bypassed
    assert fast_constructor(Doubled, (1,)) is Doubled  # builds another object than the class
    assert fast_constructor(Plain, (1,)) is not Plain
    assert fast_constructor(Plain, ("not", "one field")) is Plain  # a sample it cannot build
