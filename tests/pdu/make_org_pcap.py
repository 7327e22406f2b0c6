"""Write ``pcaps/org-specific/org-specific.pcap``: Organization Specific OAMPDUs on a live link.

Run from the repository root::

    python tests/pdu/make_org_pcap.py            # (re)write the capture
    python tests/pdu/make_org_pcap.py --check    # exit 1 if the committed capture differs

The link is our engine's ``pcaps/engine/discovery.pcap`` (two Active ports reaching
SEND_ANY, then keep-alives), cut with editcap to its first 7 s with port "b"
(02:00:00:00:00:0b) silent after 4.002 s.  Into it mergecap puts the Organization
Specific OAMPDUs both ports send once in SEND_ANY (flags Local + Remote Stable):
a DPoE Get Request and its Get Response, a DPoE Set Request and its Set Response, a CTC
extended Variable Request, one of an OUI nobody documents (00:11:22), and last port b's
Dying Gasp the Cisco way: an Organization Specific OAMPDU (OUI 00:00:0c, empty payload)
with the Dying Gasp flag, after which b falls silent.  The DPoE and CTC payloads follow
the layouts `pdu.oui` cites; their values are made up.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from pdu import Flag, OrgSpecificPdu, encode  # noqa: E402
from pdu.oui import CISCO, CTC, DPOE  # noqa: E402
from tests.replay.make_pcaps import A_MAC, B_MAC, pcap_bytes  # noqa: E402

SOURCE = REPO / "pcaps" / "engine" / "discovery.pcap"
TARGET = REPO / "pcaps" / "org-specific" / "org-specific.pcap"
STABLE = Flag.LOCAL_STABLE | Flag.REMOTE_STABLE
UNKNOWN_OUI = 0x001122

#: (seconds since the first frame, sender, flags, OUI, value)
ORG_FRAMES: list[tuple[float, str, int, int, bytes]] = [
    # Get Request: ONU object context (width 1, ONU 0), then DPoE ONU ID, Max Logical Links, OAM Frame Rate
    (2.5, A_MAC, STABLE, DPOE, bytes.fromhex("01 d60000 01 00 d70002 d70007 d7000d 00")),
    # Get Response: the context, the ONU ID (a MAC), 1 bidirectional + 0 downstream-only links, Unsupported
    (2.502, B_MAC, STABLE, DPOE, bytes.fromhex("02 d60000 0100 d70002 0602000000000b d70007 0400010000 d7000d a1 00")),
    # Set Request: Encryption Mode 1; Set Response: No Error
    (3.5, A_MAC, STABLE, DPOE, bytes.fromhex("03 d70402 01 01 00")),
    (3.502, B_MAC, STABLE, DPOE, bytes.fromhex("04 d70402 80 00")),
    # CTC extended Variable Request (opcode 0x01) for an extended attribute (branch 0xc7)
    (4.5, A_MAC, STABLE, CTC, bytes.fromhex("01 c70001")),
    (4.6, B_MAC, STABLE, UNKNOWN_OUI, b"\x01\x02\x03vendor"),
    (5.5, B_MAC, STABLE | Flag.DYING_GASP, CISCO, b""),
]

#: the discovery capture's frames kept: all up to 4.002 s, then port a's alone up to 7.002 s
KEPT_FRAMES = "1-14 15 17 19"


def build(target: Path) -> None:
    """Write the capture to *target* with editcap and mergecap."""
    with tempfile.TemporaryDirectory() as tmp:
        link, org = Path(tmp) / "link.pcap", Path(tmp) / "org.pcap"
        subprocess.run(["editcap", "-r", str(SOURCE), str(link), *KEPT_FRAMES.split()], check=True)
        frames = [(when, encode(OrgSpecificPdu(src, flags, oui, value))) for when, src, flags, oui, value in ORG_FRAMES]
        org.write_bytes(pcap_bytes(frames))
        target.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mergecap", "-F", "pcap", "-w", str(target), str(link), str(org)], check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed capture differs")
    args = parser.parse_args()
    if not args.check:
        build(TARGET)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / TARGET.name
        build(fresh)
        same = fresh.read_bytes() == TARGET.read_bytes()
    print(f"{TARGET.relative_to(REPO)}: {'unchanged' if same else 'DIFFERS'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
