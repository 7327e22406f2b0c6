"""Transmit mode (``efmoam replay FILE --to IFACE [--from MAC]``): a recorded speaker, live.

Every Slow Protocols frame the speaker sent (its OAMPDUs, malformed ones included, as
they are in the capture: short frames stay short) goes out on IFACE through an
AF_PACKET socket (`efmoam.linux.packet.OamSocket`, root or CAP_NET_RAW) at its original
time relative to the speaker's first frame, so a live peer (our daemon or another
implementation) can be tested against the recording.  What the peer answers is not
read.  ``--from`` picks the speaker (``MAC``, or ``MAC@N`` for pcapng interface N); it
may be left out when the capture has one speaker.  FILE ``-`` is standard input, copied
to a temporary file first (`efmoam.offline.source.capture_path`).

Exit status 0 when every frame was sent, 1 when the kernel refused some, 2 when the
capture is unreadable, the speaker is not in it (or not named among several), or the
interface cannot be opened.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from typing import BinaryIO, Protocol, TextIO

from efmoam.offline.capture import CaptureError, CaptureRecord
from efmoam.offline.decode import ETHERNET, NotEthernetError, open_records
from efmoam.offline.replay.report import EXIT_FINDINGS, EXIT_OK, EXIT_UNREADABLE
from efmoam.offline.source import capture_path, source_name
from pdu.enums import SLOW_PROTOCOLS_ETHERTYPE

__all__ = ["TransmitError", "run_transmit", "speakers_in", "transmit"]

_ETHERTYPE = SLOW_PROTOCOLS_ETHERTYPE.to_bytes(2, "big")


class TransmitError(Exception):
    """The speaker cannot be sent from this capture."""


class Sender(Protocol):
    def send(self, frame: bytes) -> bool: ...

    def close(self) -> None: ...


def _slow_frames(source: str | os.PathLike[str]) -> Iterator[CaptureRecord]:
    for record in open_records(source):
        if record.linktype == ETHERNET and record.data.startswith(_ETHERTYPE, 12) and record.data[14:15] == b"\x03":
            yield record


def _speaker_id(record: CaptureRecord) -> str:
    mac = record.data[6:12].hex(":")
    return mac if record.interface == 0 else f"{mac}@{record.interface}"


def speakers_in(source: str | os.PathLike[str]) -> dict[str, int]:
    """The OAM speakers of a capture (by id, as observe mode names them) and their frames."""
    counts: dict[str, int] = {}
    for record in _slow_frames(source):
        speaker = _speaker_id(record)
        counts[speaker] = counts.get(speaker, 0) + 1
    return counts


def _pick(source: str | os.PathLike[str], wanted: str | None) -> str:
    speakers = speakers_in(source)
    if wanted is None:
        if len(speakers) != 1:
            names = ", ".join(speakers) or "none"
            raise TransmitError(f"say which speaker to send with --from (the capture has: {names})")
        return next(iter(speakers))
    wanted = wanted.lower()
    if wanted not in speakers:
        raise TransmitError(f"{wanted} sends no OAMPDU in the capture (speakers: {', '.join(speakers) or 'none'})")
    return wanted


def transmit(
    source: str | os.PathLike[str],
    speaker: str,
    sender: Sender,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[int, int, float]:
    """Send `speaker`'s frames with their original spacing; (sent, refused, latest lateness in s)."""
    sent = refused = 0
    late = 0.0
    origin: float | None = None
    start = 0.0
    for record in _slow_frames(source):
        if _speaker_id(record) != speaker:
            continue
        if origin is None:
            origin, start = record.time, clock()
        due = start + (record.time - origin)
        wait = due - clock()
        if wait > 0:
            sleep(wait)
        late = max(late, clock() - due)
        if sender.send(record.data):
            sent += 1
        else:
            refused += 1
    return sent, refused, late


def run_transmit(
    source: str,
    iface: str,
    out: TextIO,
    err: TextIO,
    *,
    from_mac: str | None = None,
    open_sender: Callable[[str], Sender] | None = None,
    stdin: BinaryIO | None = None,
) -> int:
    """``efmoam replay FILE --to IFACE [--from MAC]``; the exit status (`source` "-": `stdin`)."""
    name = source_name(source, stdin)
    try:
        with capture_path(source, stdin) as path:
            return _run_transmit(path, name, iface, out, err, from_mac, open_sender)
    except OSError as error:  # copying standard input
        err.write(f"efmoam replay: error: cannot read {name}: {error.strerror or error}\n")
        return EXIT_UNREADABLE


def _run_transmit(
    source: str,
    name: str,
    iface: str,
    out: TextIO,
    err: TextIO,
    from_mac: str | None,
    open_sender: Callable[[str], Sender] | None,
) -> int:
    """`run_transmit` on the file `source`, named `name` in messages."""
    try:
        first = next(open_records(source), None)
        if first is not None and first.linktype != ETHERNET:
            raise NotEthernetError(first.linktype)
        speaker = _pick(source, from_mac)
        if open_sender is None:
            from efmoam.linux.packet import OamSocket  # noqa: PLC0415 - Linux only

            open_sender = OamSocket
        sender = open_sender(iface)
    except (CaptureError, NotEthernetError) as error:
        err.write(f"efmoam replay: error: {name}: {error}\n")
        return EXIT_UNREADABLE
    except TransmitError as error:
        err.write(f"efmoam replay: error: {error}\n")
        return EXIT_UNREADABLE
    except OSError as error:
        where = name if error.filename == source else iface if error.filename is None else error.filename
        err.write(f"efmoam replay: error: {where}: {error.strerror or error}\n")
        return EXIT_UNREADABLE
    out.write(f"sending the frames of {speaker} on {iface} with their original timing\n")
    out.flush()
    started = time.monotonic()
    try:
        sent, refused, late = transmit(source, speaker, sender)
    except CaptureError as error:
        err.write(f"efmoam replay: error: {name}: {error}\n")
        return EXIT_UNREADABLE
    except OSError as error:
        err.write(f"efmoam replay: error: {error}\n")
        return EXIT_UNREADABLE
    finally:
        sender.close()
    out.write(
        f"sent {sent} frames in {time.monotonic() - started:.3f} s ({refused} refused by the kernel,"
        f" at most {late * 1000:.1f} ms late)\n"
    )
    return EXIT_FINDINGS if refused else EXIT_OK
