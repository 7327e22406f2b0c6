"""Frames of another implementation (Ed-Yang/eoam): our decoder against Wireshark's reading.

pcaps/interop/*.pcapng are real captures (eoam talking to a minimal peer over a veth
pair); the ``.tshark.tsv`` beside each is Wireshark 4.0's reading of every OAMPDU in it.
eoam's quirks are part of the test: frames shorter than 60 octets, no End marker, and
event TLV types 0x02/0x03 swapped in meaning (decoded by the standard: a type 0x02 TLV is
an Errored Frame event, 26 octets, whatever eoam meant).
"""

from __future__ import annotations

import csv
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from efmoam.offline.capture import read_capture
from pdu import (
    DecodeError,
    EventNotification,
    EventTlvType,
    Flag,
    Information,
    InfoTlv,
    LinkEventTlv,
    Oampdu,
    decode,
    encode,
)
from pdu.reference import decode_with_scapy
from tests.pdu.strategies import LINK_EVENT_SIZES

INTEROP = Path(__file__).resolve().parents[2] / "pcaps" / "interop"
CAPTURES = ["events", "flags"]
EOAM = "02:00:00:00:0a:02"
PEER = "02:00:00:00:bb:02"


@attrs.frozen
class Frame:
    number: int
    data: bytes


def frames(name: str) -> list[Frame]:
    """Every packet record of the capture, numbered from 1 as Wireshark does."""
    return [Frame(record.number, record.data) for record in read_capture(INTEROP / f"{name}.pcapng")]


def tshark_rows(name: str) -> dict[int, dict[str, str]]:
    """Wireshark's reading, by frame number (only OAMPDUs have a row)."""
    with open(INTEROP / f"{name}.tshark.tsv", newline="") as tsv:
        return {int(row["frame.number"]): row for row in csv.DictReader(tsv, delimiter="\t")}


def decoded(name: str) -> Iterator[tuple[Frame, Oampdu]]:
    for frame in frames(name):
        try:
            yield frame, decode(frame.data)
        except DecodeError as error:
            assert error.reason.not_oampdu, f"frame {frame.number}: {error}"


def _split(cell: str) -> list[str]:
    return cell.split(",") if cell else []


def _info_columns(pdu: Oampdu) -> dict[str, list[str]]:
    """Our model rendered as Wireshark renders the ``oampdu.info.*`` columns."""
    tlvs = [tlv for tlv in pdu.tlvs if isinstance(tlv, InfoTlv)] if isinstance(pdu, Information) else []
    return {
        "oampdu.info.type": [f"0x{tlv.type:02x}" for tlv in tlvs],
        "oampdu.info.revision": [str(tlv.revision) for tlv in tlvs],
        "oampdu.info.state": [
            f"0x{tlv.state_reserved << 3 | tlv.mux_action << 2 | tlv.parser_action:02x}" for tlv in tlvs
        ],
        "oampdu.info.oamConfig": [f"0x{int(tlv.oam_config):02x}" for tlv in tlvs],
        "oampdu.info.oampduConfig": [str(tlv.oampdu_config_reserved << 11 | tlv.max_pdu_size) for tlv in tlvs],
        "oampdu.info.oui": [str(tlv.oui) for tlv in tlvs],
        "oampdu.info.vendor": [f"{tlv.vendor_info:08x}" for tlv in tlvs],
    }


def _event_columns(pdu: Oampdu) -> dict[str, list[str]]:
    """Our model rendered as Wireshark renders the ``oampdu.event.*`` columns."""
    events = pdu.link_events if isinstance(pdu, EventNotification) else ()
    return {
        "oampdu.event.sequence": [str(pdu.sequence)] if isinstance(pdu, EventNotification) else [],
        "oampdu.event.type": [f"0x{tlv.type:02x}" for tlv in events],
        "oampdu.event.length": [f"0x{LINK_EVENT_SIZES[tlv.type]:02x}" for tlv in events],
        "oampdu.event.timestamp": [str(tlv.timestamp) for tlv in events],
    }


@pytest.mark.parametrize("name", CAPTURES)
def test_every_oampdu_decodes_and_nothing_else_does(name: str) -> None:
    rows = tshark_rows(name)
    assert rows, "the .tshark.tsv file is empty"
    ours = {frame.number for frame, _ in decoded(name)}
    assert ours == set(rows), "frames we decode differ from the OAMPDUs Wireshark saw"


@pytest.mark.parametrize("name", CAPTURES)
def test_decoded_values_equal_wiresharks(name: str) -> None:
    rows = tshark_rows(name)
    checked = 0
    for frame, pdu in decoded(name):
        row = rows[frame.number]
        where = f"{name} frame {frame.number}"
        assert pdu.src == row["eth.src"], where
        assert len(frame.data) == int(row["frame.len"]), where
        assert f"0x{int(pdu.flags):04x}" == row["oampdu.flags"], where
        assert f"0x{pdu.code:02x}" == row["oampdu.code"], where
        for column, values in {**_info_columns(pdu), **_event_columns(pdu)}.items():
            assert values == _split(row[column]), f"{where}: {column}"
        checked += 1
    assert checked == len(rows)


@pytest.mark.parametrize("name", CAPTURES)
def test_scapy_reads_every_oampdu_as_the_fast_path(name: str) -> None:
    for frame, pdu in decoded(name):
        assert decode_with_scapy(frame.data) == pdu, f"{name} frame {frame.number}"


@pytest.mark.parametrize("name", CAPTURES)
def test_reencoding_gives_the_same_octets_padded(name: str) -> None:
    """eoam omits padding and the End marker; ours differs from its frames only in zeros."""
    for frame, pdu in decoded(name):
        ours = encode(pdu)
        assert len(ours) == max(60, len(frame.data)), f"{name} frame {frame.number}"
        assert ours == frame.data.ljust(60, b"\0"), f"{name} frame {frame.number}"


def test_eoam_quirks_are_in_the_capture() -> None:
    """The quirks this module claims to cover are really exercised."""
    eoam = [(frame, pdu) for frame, pdu in decoded("events") if pdu.src == EOAM]
    lengths = {len(frame.data) for frame, _ in eoam}
    assert min(lengths) < 60  # unpadded frames
    for frame, pdu in eoam:
        if isinstance(pdu, Information) and pdu.remote is not None:
            assert len(frame.data) == 18 + 16 + 16  # two TLVs, no End marker
    events = [pdu for _, pdu in eoam if isinstance(pdu, EventNotification)]
    assert [pdu.sequence for pdu in events] == [0, 1, 2, 3, 4, 5]


# what eoam meant (interop/README.md), decoded by the standard's TLV types
EXPECTED_EVENTS = [
    # seq, type on the wire, window, event running total
    (0, EventTlvType.ERRORED_SYMBOL_PERIOD, 1000, 1),
    (1, EventTlvType.ERRORED_FRAME, 1000, 1),  # eoam's frame *period* event, 1000 x 100 ms by the standard
    (2, EventTlvType.ERRORED_FRAME_PERIOD, 10, 1),  # eoam's errored *frame* event, 10 frames by the standard
    (3, EventTlvType.ERRORED_FRAME_SECONDS_SUMMARY, 100, 1),
    (4, EventTlvType.ERRORED_SYMBOL_PERIOD, 1000, 2),
    (5, EventTlvType.ERRORED_SYMBOL_PERIOD, 1000, 3),
]


def test_eoam_event_values_decoded_by_the_standard() -> None:
    events = [pdu for _, pdu in decoded("events") if isinstance(pdu, EventNotification)]
    assert len(events) == len(EXPECTED_EVENTS)
    for pdu, (sequence, tlv_type, window, event_total) in zip(events, EXPECTED_EVENTS, strict=True):
        assert pdu.src == EOAM
        assert pdu.flags == Flag.LOCAL_STABLE | Flag.REMOTE_STABLE
        assert pdu.sequence == sequence
        (tlv,) = pdu.tlvs
        assert isinstance(tlv, LinkEventTlv)
        assert (tlv.type, tlv.window, tlv.event_running_total) == (tlv_type, window, event_total)
        assert (tlv.threshold, tlv.errors, tlv.error_running_total) == (1, 200, 10200)


def test_eoam_information_values() -> None:
    """eoam's own Local TLV as interop/README.md describes it."""
    locals_ = [pdu.local for _, pdu in decoded("events") if isinstance(pdu, Information) and pdu.src == EOAM]
    assert locals_
    for local in locals_:
        assert local is not None
        assert (local.oui, local.vendor_info, local.max_pdu_size, int(local.oam_config)) == (
            0x111111,
            0x11223344,
            1500,
            0x0D,
        )
    peers = [pdu.local for _, pdu in decoded("events") if isinstance(pdu, Information) and pdu.src == PEER]
    assert peers
    assert all(
        local is not None and (local.oui, local.vendor_info, local.revision) == (0x001122, 1, 1) for local in peers
    )


def test_eoam_raises_and_clears_each_critical_flag() -> None:
    flags = [int(pdu.flags) for _, pdu in decoded("flags") if pdu.src == EOAM]
    for raised in (0x0054, 0x0052, 0x0051):
        assert raised in flags
        first = flags.index(raised)
        assert 0x0050 in flags[first:], f"{raised:#06x} never cleared"
    # with Link Fault set eoam still sends its TLVs (the standard says none); we decode them
    faults = [pdu for _, pdu in decoded("flags") if pdu.src == EOAM and Flag.LINK_FAULT in pdu.flags]
    assert faults
    assert all(isinstance(pdu, Information) and pdu.local is not None for pdu in faults)


@pytest.mark.tshark
@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark (Wireshark) is not installed")
@pytest.mark.parametrize("name", CAPTURES)
def test_stored_tshark_reading_is_what_tshark_says_today(name: str) -> None:
    """The .tshark.tsv files are not stale: the installed tshark writes them byte for byte."""
    stored = (INTEROP / f"{name}.tshark.tsv").read_text()
    columns = stored.splitlines()[0].split("\t")
    command = ["tshark", "-n", "-r", str(INTEROP / f"{name}.pcapng"), "-Y", "oampdu", "-T", "fields"]
    command += ["-E", "header=y", "-E", "separator=/t", "-E", "occurrence=a", "-E", "aggregator=,"]
    command += [arg for column in columns for arg in ("-e", column)]
    assert subprocess.run(command, capture_output=True, text=True, check=True).stdout == stored
