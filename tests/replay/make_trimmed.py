"""Write ``pcaps/trimmed/``: the engine's captures of ``pcaps/engine/`` trimmed by hand, as people share them.

Run from the repository root (needs editcap and mergecap)::

    python tests/replay/make_trimmed.py            # (re)write the captures
    python tests/replay/make_trimmed.py --check    # exit 1 if a committed capture differs

Each capture reproduces one way replay once misread a trimmed capture; its expectations
file ``NAME.expect.json`` beside it says what replay must find instead:

* ``quiet-stretch.pcap``: discovery.pcap with 4 s of both speakers cut out (frames 11-16):
  a stretch in which nobody sent anything is a capture gap, not two late keep-alives.
* ``loopback-gap.pcap``: loopback.pcap cut after the loop began (frame 15), resumed
  10 s later from frame 29: the disable and the end are in the gap; the summary keeps
  the loopback and says what was not captured.
* ``silent-peer.pcap``: discovery.pcap without "a"'s frames from 3 s to 8 s, while "b"
  goes on claiming SEND_ANY; then a 16 s capture gap and frames 13-24 again, 20 s later.
  "b" ignored its lost-link timer during the silence, before the gap.
* ``event-reused-sequence.pcap``: sf-notification.pcap (frames 1-24) with the duplicate
  Event Notification (frame 19) carrying one errored frame more: the same sequence
  number with other TLVs.
* ``late-joiner.pcap``: discovery.pcap after 3 s in which "a" alone sent its
  ACTIVE_SEND_LOCAL keep-alive (frame 1, copied 3, 2 and 1 s earlier): "b"'s OAM starts
  3 s into the capture, while "a" was already sending; played as "b", our engine starts
  with "b"'s first frame, as "b" did.
"""

from __future__ import annotations

import argparse
import struct
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ENGINE = REPO / "pcaps" / "engine"
TRIMMED = REPO / "pcaps" / "trimmed"
A_MAC = bytes.fromhex("02000000000a")
_EVENT_ERRORS = 30  # offset of an Errored Frame TLV's errors field in a one-TLV Event Notification


def editcap(source: Path, target: Path, *frames: str, keep: bool = False, shift: str = "") -> None:
    """Remove `frames` ("11-16", "3"; with `keep`, keep only them), shifting times by `shift` seconds."""
    options = ["-F", "pcap", *(["-r"] if keep else []), *(["-t", shift] if shift else [])]
    subprocess.run(["editcap", *options, str(source), str(target), *frames], check=True, capture_output=True)


def mergecap(target: Path, *parts: Path) -> None:
    subprocess.run(["mergecap", "-F", "pcap", "-a", "-w", str(target), *map(str, parts)], check=True)


def records(data: bytes) -> list[tuple[int, int]]:
    """(offset, length) of each frame of a little-endian pcap."""
    out, offset = [], 24
    while offset < len(data):
        length = struct.unpack_from("<I", data, offset + 8)[0]
        out.append((offset + 16, length))
        offset += 16 + length
    return out


def quiet_stretch(tmp: Path, target: Path) -> None:
    editcap(ENGINE / "discovery.pcap", target, "11-16")


def loopback_gap(tmp: Path, target: Path) -> None:
    head, tail = tmp / "head.pcap", tmp / "tail.pcap"
    editcap(ENGINE / "loopback.pcap", head, "1-15", keep=True)
    editcap(ENGINE / "loopback.pcap", tail, "29-36", keep=True, shift="10")
    mergecap(target, head, tail)


def silent_peer(tmp: Path, target: Path) -> None:
    source = ENGINE / "discovery.pcap"
    data = source.read_bytes()
    own = [str(n) for n, (at, _) in enumerate(records(data), 1) if 11 <= n <= 22 and data[at + 6 : at + 12] == A_MAC]
    head, tail = tmp / "head.pcap", tmp / "tail.pcap"
    editcap(source, tmp / "cut.pcap", "1-22", keep=True)
    editcap(tmp / "cut.pcap", head, *own)
    editcap(source, tail, "13-24", keep=True, shift="20")
    mergecap(target, head, tail)


def event_reused_sequence(tmp: Path, target: Path) -> None:
    cut = tmp / "cut.pcap"
    editcap(ENGINE / "sf-notification.pcap", cut, "1-24", keep=True)
    data = bytearray(cut.read_bytes())
    offset, _ = records(bytes(data))[18]  # frame 19
    field = offset + _EVENT_ERRORS
    struct.pack_into(">I", data, field, struct.unpack_from(">I", data, field)[0] + 1)
    target.write_bytes(bytes(data))


def late_joiner(tmp: Path, target: Path) -> None:
    source = ENGINE / "discovery.pcap"
    early = [tmp / f"early-{seconds}.pcap" for seconds in (3, 2, 1)]
    for seconds, part in zip((3, 2, 1), early, strict=True):
        editcap(source, part, "1", keep=True, shift=f"-{seconds}")
    mergecap(target, *early, source)


CAPTURES: dict[str, Callable[[Path, Path], None]] = {
    "quiet-stretch": quiet_stretch,
    "loopback-gap": loopback_gap,
    "silent-peer": silent_peer,
    "event-reused-sequence": event_reused_sequence,
    "late-joiner": late_joiner,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 if a committed capture differs")
    options = parser.parse_args()
    TRIMMED.mkdir(exist_ok=True)
    status = 0
    for name, make in CAPTURES.items():
        path = TRIMMED / f"{name}.pcap"
        with tempfile.TemporaryDirectory() as tmp:
            made = Path(tmp) / "made.pcap"
            make(Path(tmp), made)
            data = made.read_bytes()
        if options.check:
            if not path.exists() or path.read_bytes() != data:
                print(f"{path}: differs from what {Path(__file__).name} writes")
                status = 1
        else:
            path.write_bytes(data)
            print(f"{path}: {len(records(data))} frames")
    return status


if __name__ == "__main__":
    sys.exit(main())
