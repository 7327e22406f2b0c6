"""Fuzz the offline commands with mutated captures: no input file produces a traceback.

Every capture of pcaps/ (the shared interop captures are byte-for-byte copies of
pcaps/interop and pcaps/negative ones) is read into records, mutated (tests/replay/
mutations.py: timestamps backwards, equal, jumping by 28 hours or to 2106, records dropped
and duplicated, bit flips in Ethernet headers and OAMPDU bodies, frames cut at every
field and TLV, lying original lengths, link types, interfaces), written as pcap (either
byte order, micro- or nanoseconds) or pcapng (either byte order) with a snapshot length,
then damaged as bytes (the file cut at every record or block boundary, length fields
lying, bits flipped in file, block and record headers).  Each input goes through the
real command line in-process (`tests.cli_runner.CliRunner`): ``efmoam decode`` plain and
``-f json`` (from standard input), ``efmoam replay`` plain, ``-f json`` and
``--summary-only`` (from standard input), play mode ``--as MAC`` (a MAC of the capture)
plain and ``-f json``, ``--check`` against the original capture's expectations, and
transmit mode ``--to`` an interface that does not exist (the capture is read to its end
first; nothing is sent).  Expectations files edited by hand are fuzzed too.

Each run must end with its documented exit status (decode 0 or 2; replay 0, 1 or 2),
no traceback and no exception escaping the command, at most one ``error:`` line on
standard error (exactly one when the status is 2 and it is not observe mode's findings),
and JSON output that is strict JSON (no NaN or Infinity).  A run that takes more than
``RUN_TIMEOUT`` seconds fails as a hang.

Hypothesis runs derandomized (the same inputs every time) with `EXAMPLES` examples (about
40 s on one core).  For a longer hunt set ``EFMOAM_FUZZ_EXAMPLES`` (e.g. 20000) and, for new
inputs rather than the fixed ones, ``EFMOAM_FUZZ_SEED`` (any integer)::

    EFMOAM_FUZZ_EXAMPLES=20000 EFMOAM_FUZZ_SEED=7 .venv/bin/pytest tests/replay/test_fuzz_captures.py

`CORPUS` keeps, as fixed cases, the mutations that found bugs and one of each kind.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, seed, settings, strategies as st

from efmoam.cli.main import main
from efmoam.offline.replay import expect
from tests.cli_runner import CliRunner
from tests.pdu.test_robustness import deadline
from tests.replay.mutations import (
    FORMATS,
    JUMPS,
    LINKTYPES,
    Case,
    Clock,
    Cut,
    Drop,
    Duplicate,
    FlipBits,
    FlipHeader,
    Interface,
    LieLength,
    Linktype,
    Original,
    Retime,
    SetByte,
    ShiftRest,
    ShrinkBlock,
    Snaplen,
    Truncate,
    load,
    speakers,
    write,
)

REPO = Path(__file__).resolve().parents[2]
CAPTURES = sorted(str(p.relative_to(REPO)) for p in (REPO / "pcaps").rglob("*") if p.suffix in (".pcap", ".pcapng"))
EXAMPLES = int(os.environ.get("EFMOAM_FUZZ_EXAMPLES", "1000"))
SEED = os.environ.get("EFMOAM_FUZZ_SEED")
RUN_TIMEOUT = 30.0
NO_MAC = "02:00:00:00:00:99"
NO_IFACE = "efmoam-fz-none"

DECODE_STATUSES = {0, 2}
REPLAY_STATUSES = {0, 1, 2}


def _strict_json(text: str) -> object:
    def refuse(constant: str) -> object:
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def commands(path: str, mac: str) -> list[list[str]]:
    """The commands run on each input ("-": the input on standard input)."""
    return [
        ["decode", path],
        ["decode", "-f", "json", "-"],
        ["replay", path],
        ["replay", "-f", "json", path],
        ["replay", "--summary-only", "-"],
        ["replay", path, "--as", mac],
        ["replay", path, "--as", mac, "-f", "json"],
        ["replay", "--check", path],
        # transmit mode reads the whole capture before it opens the interface, which does
        # not exist: nothing is ever sent
        ["replay", path, "--to", NO_IFACE, "--from", mac],
    ]


#: Python's words for nothing and not-a-number, which operator output must never show
PYTHON_WORDS = re.compile(r"\b(None|nan|inf)\b")


def _python_words(text: str) -> list[str]:
    return [line for line in text.splitlines() if PYTHON_WORDS.search(line)]


def run_clean(args: list[str], data: bytes = b"") -> int:
    """Run one command; fail unless it ends as documented.  Returns its exit status."""
    with deadline(RUN_TIMEOUT):  # a hang fails the run instead of stopping the suite
        result = CliRunner().invoke(main, args, input=data if "-" in args else None)
    shown = f"efmoam {' '.join(args)}\n--- stdout\n{result.stdout[-3000:]}\n--- stderr\n{result.stderr[-3000:]}"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"{shown}\n--- raised {result.exception!r}") from result.exception
    assert "Traceback" not in result.stdout + result.stderr, shown
    allowed = DECODE_STATUSES if args[0] == "decode" else REPLAY_STATUSES
    assert result.exit_code in allowed, shown
    errors = [line for line in result.stderr.splitlines() if ": error: " in line]
    assert len(errors) <= 1, shown
    if result.exit_code == 2:
        assert len(errors) == 1, shown
    if "json" not in args:
        assert not _python_words(result.stdout + result.stderr), shown
    else:
        try:
            if args[0] == "decode":
                for line in result.stdout.splitlines():
                    _strict_json(line)
            elif result.stdout.strip():
                _strict_json(result.stdout)
        except ValueError as error:
            raise AssertionError(f"{shown}\n--- not JSON: {error}") from error
    return result.exit_code


def run_case(case: Case, mac_choice: int = 0) -> list[int]:
    """Every command on the input built by `case`; their exit statuses."""
    macs = speakers(load(REPO / case.capture)) or [NO_MAC]
    mac = macs[mac_choice % len(macs)]
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / ("fuzz.pcapng" if case.fmt.startswith("pcapng") else "fuzz.pcap")
        data = case.build(REPO)
        path.write_bytes(data)
        shutil.copyfile(expect.sidecar_path(REPO / case.capture), expect.sidecar_path(path))
        return [run_clean(args, data) for args in commands(str(path), mac)]


# -- hypothesis ------------------------------------------------------------------------------------

indices = st.integers(0, 10_000)
#: the file's first fields (file, section and interface headers) as often as all the others
early = st.integers(0, 8) | indices
masks = st.sampled_from([0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80]) | st.integers(1, 255)
mutations = st.one_of(
    st.builds(Retime, indices, st.sampled_from(["jump", "odd", "micros"]), st.sampled_from(JUMPS) | st.integers(-3, 3)),
    st.builds(ShiftRest, indices, st.sampled_from(JUMPS)),
    st.builds(Drop, indices, st.integers(1, 5)),
    st.builds(Duplicate, indices, st.integers(0, 5)),
    st.builds(FlipBits, indices, st.integers(0, 200), masks, st.booleans()),
    st.builds(SetByte, indices, st.integers(0, 120), st.sampled_from([0, 1, 2, 3, 4, 0x7F, 0x80, 0xFE, 0xFF])),
    st.builds(Truncate, indices, st.integers(0, 40), st.integers(-2, 2)),
    st.builds(Original, indices, st.sampled_from([0, 1, 14, 59, 60, 1518, 0xFFFF_FFFF])),
    st.builds(Linktype, st.integers(0, 3), st.integers(0, len(LINKTYPES) - 1)),
    st.builds(Interface, indices, st.integers(0, 3) | st.just(0xFFFF_FFFF), st.booleans()),
)
odd_lengths = st.sampled_from([0, 1, 4, 11, 12, 13, 28, 262144, 262145, 16 * 1024 * 1024 + 4, 0x7FFF_FFFF, 0xFFFF_FFFF])
byte_mutations = st.one_of(
    st.builds(Cut, early, st.integers(-5, 5)),
    st.builds(LieLength, early, odd_lengths | st.sampled_from([16, 20, 24, 32]), st.just(False)),
    st.builds(LieLength, early, st.sampled_from([-8, -4, -1, 1, 4, 8]), st.just(True)),
    st.builds(Snaplen, st.sampled_from([1, 13, 14, 17, 59, 60, 64, 65535, 262144, 262145, 0xFFFF_FFFF])),
    st.builds(FlipHeader, early, st.integers(0, 40), masks),
    st.builds(ShrinkBlock, st.integers(0, 3) | indices, st.integers(0, 8)),
)
cases = st.builds(
    Case,
    st.sampled_from(CAPTURES),
    st.lists(mutations, min_size=1, max_size=4).map(tuple),
    st.sampled_from(FORMATS),
    st.sampled_from([0, 0, 0, 65535, 1518]),
    st.lists(byte_mutations, max_size=2).map(tuple),
    st.just(Clock())
    | st.builds(
        Clock,
        st.none() | st.sampled_from([0, 3, 6, 9, 19, 0x7F, 0x80, 0x94, 0xBF, 0xFF]),
        st.sampled_from([0, 0, -1_700_000_000, 1 << 40, -(1 << 63), (1 << 63) - 1]),
        st.sampled_from([0, 0, 1, 0x8000_0000, 0xFFFF_FFFF]),
    ),
)

FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize=SEED is None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _seeded(test: Callable[..., None]) -> Callable[..., None]:
    return seed(int(SEED))(test) if SEED is not None else test


@_seeded
@FUZZ
@given(cases, st.integers(0, 7))
def test_mutated_captures_end_cleanly_in_every_command(case: Case, mac_choice: int) -> None:
    run_case(case, mac_choice)


# -- expectations files ---------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**20) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
EXPECT_KEYS = ["schema", "about", "exit", "gaps", "speakers"]
SPEAKER_KEYS = ["mode", "states", "revisions", "counts", "findings", "events"]


@FUZZ
@given(
    st.sampled_from(CAPTURES),
    st.lists(st.tuples(st.booleans(), st.integers(0, 10), json_values), min_size=1, max_size=3),
    st.booleans(),
)
def test_hand_edited_expectations_files_end_cleanly(
    capture: str, edits: list[tuple[bool, int, object]], json_output: bool
) -> None:
    """``replay --check`` against an expectations file with values of any JSON type at its
    keys (as a hand edit may leave it): a list of differences or one clean error."""
    document = json.loads(expect.sidecar_path(REPO / capture).read_text())
    for in_speaker, key, value in edits:
        speakers = document.get("speakers")
        if in_speaker and isinstance(speakers, dict) and speakers:
            speaker = speakers[sorted(speakers)[key % len(speakers)]]
            if isinstance(speaker, dict):
                speaker[SPEAKER_KEYS[key % len(SPEAKER_KEYS)]] = value
        else:
            document[EXPECT_KEYS[key % len(EXPECT_KEYS)]] = value
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / Path(capture).name
        shutil.copyfile(REPO / capture, path)
        expect.sidecar_path(path).write_text(json.dumps(document))
        run_clean(["replay", "--check", *(["-f", "json"] if json_output else []), str(path)])


# -- the deterministic corpus ---------------------------------------------------------------------

LAB = "pcaps/daemon/lab.pcapng"
EVENTS = "pcaps/interop/events.pcapng"
LOOPBACK = "pcaps/engine/loopback.pcap"
LOST_LINK = "pcaps/engine/lost-link.pcap"

#: one of each kind of mutation, on captures where it reaches deep (names are test ids)
CORPUS: dict[str, Case] = {
    "28-hour-gap": Case(LOOPBACK, (ShiftRest(20, 100_800),)),
    "century-gap-pcapng": Case(LAB, (ShiftRest(30, 3_155_760_000),), "pcapng-be"),
    "time-backwards": Case(EVENTS, (Retime(10, "jump", -86400),), "pcap-be-ns"),
    "equal-times": Case(LOOPBACK, (Retime(5, "jump", 0), Retime(6, "jump", 0))),
    "year-2106": Case(LAB, (Retime(3, "odd", 3),), "pcapng-le"),
    "fraction-over-a-second": Case(LOOPBACK, (Retime(4, "micros", 2),)),
    "duplicated-and-dropped": Case(LAB, (Duplicate(10, 0), Drop(20, 3), Duplicate(40, 5))),
    "flipped-flags": Case(EVENTS, (FlipBits(20, 1, 0x08, True),)),
    "zero-tlv-length": Case(LAB, (SetByte(5, 2, 0),), "pcapng-le"),
    "frame-cut-in-a-tlv": Case(LOOPBACK, (Truncate(7, 9, 1),)),
    "original-shorter": Case(EVENTS, (Original(3, 1),)),
    "raw-ip-link-type": Case(LAB, (Linktype(0, 2),), "pcapng-le"),
    "fcs-bits-in-pcap-link-type": Case(LOOPBACK, (Linktype(0, 4),)),
    "undeclared-interface": Case(LAB, (Interface(4, 7, declared=False),), "pcapng-be"),
    "cut-mid-record": Case(EVENTS, (), "pcap-le-us", 0, (Cut(10, 7),)),
    "captured-length-lies": Case(LOOPBACK, (), "pcap-be-ns", 0, (LieLength(6, 4, True),)),
    "block-length-lies": Case(LAB, (), "pcapng-le", 0, (LieLength(9, 0xFFFF_FFFF, False),)),
    "tiny-snaplen": Case(LOOPBACK, (), "pcapng-be", 0, (Snaplen(14),)),
    "flipped-file-header": Case(EVENTS, (), "pcapng-le", 0, (FlipHeader(0, 9, 0x01),)),
    "section-header-too-short": Case(LOOPBACK, (), "pcapng-be", 0, (ShrinkBlock(0, 2),)),
    "interface-block-too-short": Case(LOOPBACK, (), "pcapng-le", 0, (ShrinkBlock(1, 1),)),
    "enhanced-packet-block-too-short": Case(LOOPBACK, (), "pcapng-le", 0, (ShrinkBlock(3, 4),)),
    "packet-block-too-short": Case(LOOPBACK, (), "pcapng-le-pb", 0, (ShrinkBlock(3, 5),)),
    "simple-packet-block-too-short": Case(LOOPBACK, (), "pcapng-be-spb", 0, (ShrinkBlock(3, 0),)),
    "second-section-undeclared-interface": Case(LAB, (Interface(60, 9, declared=False),), "pcapng-le-2s"),
    "tsresol-2-to-the-127-far-offset": Case(LOOPBACK, (), "pcapng-le", clock=Clock(0xFF, -(1 << 63), 0xFFFF_FFFF)),
    "tsoffset-beyond-float-precision": Case(LAB, (), "pcapng-be", clock=Clock(None, (1 << 63) - 1)),
    "first-record-at-the-epoch": Case(LAB, (Retime(0, "jump", -(10**9)),)),
}


@pytest.mark.parametrize("case", CORPUS.values(), ids=CORPUS.keys())
def test_corpus_case_ends_cleanly(case: Case) -> None:
    run_case(case)


def test_play_never_prints_python_none_for_an_event_we_did_not_send() -> None:
    """Found by the fuzz test: 'sent at 0.000 s (theirs), None (ours)' and 'ours seq None x0'
    (fixed in play.py)."""
    case = Case(LAB, (), "pcapng-be-spb")  # Simple Packet Blocks: no timestamps, all at 0.0
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "lab.pcapng"
        path.write_bytes(case.build(REPO))
        result = CliRunner().invoke(main, ["replay", str(path), "--as", "02:00:00:00:aa:01"])
    assert result.exit_code == 1, result.output
    assert "Event Notification of frame 17" in result.stdout
    assert not PYTHON_WORDS.search(result.stdout), result.stdout


@pytest.mark.parametrize(("key", "value"), [("findings", [1]), ("events", 5), ("counts", "x")])
def test_an_expectations_file_of_the_wrong_shape_is_a_clean_error(tmp_path: Path, key: str, value: object) -> None:
    """Found by the fuzz test: ``"findings": [1]`` raised AttributeError, ``"events": 5``
    TypeError, in expect.compare."""
    document = json.loads(expect.sidecar_path(REPO / LOOPBACK).read_text())
    document["speakers"]["02:00:00:00:00:0a"][key] = value
    path = tmp_path / "loopback.pcap"
    shutil.copyfile(REPO / LOOPBACK, path)
    expect.sidecar_path(path).write_text(json.dumps(document))
    result = CliRunner().invoke(main, ["replay", "--check", str(path)])
    assert result.exit_code == 2, result.output
    assert f"speakers.02:00:00:00:00:0a.{key} must be" in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_differences_show_expected_values_as_json(tmp_path: Path) -> None:
    """Found by the fuzz test: ``"exit": null`` was shown as Python's ``None``."""
    document = json.loads(expect.sidecar_path(REPO / LOOPBACK).read_text())
    document.update(exit=None, gaps=[1])
    document["speakers"]["02:00:00:00:00:0a"]["findings"] = {"short_frame": None}
    path = tmp_path / "loopback.pcap"
    shutil.copyfile(REPO / LOOPBACK, path)
    expect.sidecar_path(path).write_text(json.dumps(document))
    result = CliRunner().invoke(main, ["replay", "--check", str(path)])
    assert result.exit_code == 1, result.output
    assert "exit status: expected null, found 0" in result.stdout
    assert "capture gaps: expected [1], found 0" in result.stdout
    assert "02:00:00:00:00:0a: findings: short_frame: expected null, found 0" in result.stdout


def test_transmit_mode_names_the_unreadable_capture(tmp_path: Path) -> None:
    """Found by the fuzz test: the reader's error came without the file's name."""
    path = tmp_path / "cut.pcap"
    path.write_bytes(Case(LOOPBACK, (), "pcap-le-us", 0, (Cut(10, 7),)).build(REPO))
    result = CliRunner().invoke(main, ["replay", str(path), "--to", NO_IFACE, "--from", "02:00:00:00:00:0a"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"efmoam replay: error: {path}: record 10 at offset "), result.stderr
    assert "truncated record header" in result.stderr


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_capture_cut_at_every_boundary_ends_cleanly(fmt: str) -> None:
    """The loopback capture (36 records) cut at every record or block boundary, and one
    byte either side of it."""
    _, layout = write(load(REPO / LOOPBACK), fmt)
    for boundary in range(len(layout.boundaries)):
        for delta in (-1, 0, 1):
            run_case(Case(LOOPBACK, (), fmt, 0, (Cut(boundary, delta),)))
