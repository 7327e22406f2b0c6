"""Write the generated captures of ``pcaps/``: our engine's scenarios and a negative control.

Run from the repository root::

    python tests/replay/make_pcaps.py            # (re)write the captures
    python tests/replay/make_pcaps.py --check    # exit 1 if a committed capture differs

``pcaps/engine/NAME.pcap``: two `OamPort` engines ("a" 02:00:00:00:00:0a and "b"
02:00:00:00:00:0b) joined by `tests.core.pair.PortPair` on its fake clock, one capture per
scenario of the daemon issue.  The capture is what a tap beside port "b" sees: every
frame both ports send, at the time they send it, except frames lost on a cut link.
Deterministic: the same code writes the same octets (pcap, microseconds, from
1 700 000 000 s).

``pcaps/negative/vlan-tagged-slow.pcap`` and ``marker.pcap``: Slow Protocols frames that
are not untagged OAMPDUs (802.1Q, priority-tagged and QinQ OAMPDUs, tagged LACP, Marker
PDUs), which replay must ignore.

Each capture has an expectations file ``NAME.expect.json`` beside it, written by hand
(``efmoam replay FILE --write-expect`` gives a draft to check against the scenario).
"""

from __future__ import annotations

import argparse
import struct
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from efmoam.core import OamMode, Output, PortSettings, Transmit  # noqa: E402
from efmoam.core.linkmon import CounterSample, LinkMonitoringSettings, LocalSfAction, MonitorSettings  # noqa: E402
from pdu import Flag, Information, InfoTlv, VariableDescriptor, encode  # noqa: E402
from tests.core.pair import PortPair  # noqa: E402

BASE_TIME = 1_700_000_000
A_MAC = "02:00:00:00:00:0a"
B_MAC = "02:00:00:00:00:0b"
ENGINE = REPO / "pcaps" / "engine"
NEGATIVE = REPO / "pcaps" / "negative"

Frames = list[tuple[float, bytes]]


def pcap_bytes(frames: Iterable[tuple[float, bytes]]) -> bytes:
    """A little-endian microsecond pcap (Ethernet) of (seconds since BASE_TIME, frame)."""
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    for when, frame in frames:
        micros = round(when * 1_000_000)
        seconds, micros = divmod(micros, 1_000_000)
        out.append(struct.pack("<IIII", BASE_TIME + seconds, micros, len(frame), len(frame)) + frame)
    return b"".join(out)


class Tap:
    """Records what a tap beside port "b" sees of a `PortPair`."""

    def __init__(self, pair: PortPair) -> None:
        self.pair = pair
        self.frames: Frames = []
        pair.on_output = self._output

    def _output(self, name: str, output: Output) -> None:
        if isinstance(output, Transmit) and not (name == "a" and self.pair.link["a"].cut):
            self.frames.append((self.pair.now, output.frame))


def start(a: PortSettings | None = None, b: PortSettings | None = None) -> tuple[PortPair, Tap]:
    pair = PortPair(a, b, a_mac=A_MAC, b_mac=B_MAC)
    tap = Tap(pair)
    # the frames both ports sent when they were created, before the tap was attached
    tap.frames += [(r.time, r.output.frame) for r in pair.records if isinstance(r.output, Transmit)]
    return pair, tap


# -- scenarios: each returns the frames of one capture ------------------------------------


def discovery() -> Frames:
    """Two Active ports with the default settings: Discovery, then keep-alives."""
    pair, tap = start()
    pair.run_until(10.0)
    return tap.frames


def discovery_passive() -> Frames:
    """ "a" Active, "b" Passive: "b" stays silent until it hears "a"."""
    pair, tap = start(PortSettings(), PortSettings(mode=OamMode.PASSIVE))
    pair.run_until(10.0)
    return tap.frames


SUPPORTIVE = PortSettings(link_monitoring=LinkMonitoringSettings(enabled=True))


def sf_notification() -> Frames:
    """Errored frames on "a": a signal failure sent as an Event Notification burst of two
    (one unique, one duplicate) with Critical Event set while it lasts; clear at 12 s."""
    monitoring = LinkMonitoringSettings(
        enabled=True,
        errored_frame=MonitorSettings(enabled=True, sf_threshold=5, sd_threshold=2),
        local_sf_action=LocalSfAction(event_burst=2, critical_event=True),
    )
    pair, tap = start(PortSettings(link_monitoring=monitoring), SUPPORTIVE)
    pair.run_until(1.0)
    pair.call("a", "set_link", True, speed_mbps=1000)
    errored = received = 0
    for second in range(1, 16):
        pair.run_until(float(second))
        received += 1000
        errored += {4: 3, 6: 7}.get(second, 0)  # a degrade at 4 s, a failure at 6 s
        pair.call("a", "on_counters", CounterSample(errored_frames=errored, frames_received=received))
        if second == 12:
            pair.call("a", "clear_events")  # the operator clears: Critical Event goes
    pair.run_until(16.0)
    return tap.frames


def flags() -> Frames:
    """ "a" raises and clears Critical Event, then Dying Gasp; "b" has no link monitoring,
    so it leaves SEND_ANY while the peer signals a failure."""
    pair, tap = start()
    for at, flag, on in (
        (3.0, Flag.CRITICAL_EVENT, True),
        (6.0, Flag.CRITICAL_EVENT, False),
        (8.0, Flag.DYING_GASP, True),
        (11.0, Flag.DYING_GASP, False),
    ):
        pair.run_until(at)
        pair.call("a", "set_local_flags", flag, on)
    pair.run_until(15.0)
    return tap.frames


def link_fault() -> Frames:
    """ "a" (unidirectional) loses its receive link at 5 s: Link Fault Information OAMPDUs
    without TLVs; the link returns at 10 s and Discovery runs again."""
    pair, tap = start(PortSettings(unidirectional=True))
    pair.run_until(5.0)
    pair.call("a", "set_link", False)
    pair.run_until(10.0)
    pair.call("a", "set_link", True)
    pair.run_until(16.0)
    return tap.frames


def lost_link() -> Frames:
    """The link from "a" to "b" is cut from 5 s to 13 s: "b" hears nothing for longer than
    the lost-link time (5 s), goes through FAULT and starts Discovery again."""
    pair, tap = start()
    pair.run_until(5.0)
    pair.link["a"].cut = True
    pair.run_until(13.0)
    pair.link["a"].cut = False
    pair.run_until(20.0)
    return tap.frames


def loopback() -> Frames:
    """ "a" puts "b" into remote loopback at 3 s and takes it out at 8 s."""
    settings = PortSettings(loopback_process=True)
    pair, tap = start(settings, settings)
    pair.run_until(3.0)
    pair.call("a", "start_loopback")
    pair.run_until(8.0)
    pair.call("a", "stop_loopback")
    pair.run_until(12.0)
    return tap.frames


def variables() -> Frames:
    """ "a" asks "b" for OAM attributes at 3 s (and one "b" does not have) and gets them."""
    pair, tap = start()
    pair.run_until(3.0)
    descriptors = tuple(VariableDescriptor(0x07, leaf) for leaf in (238, 251, 252, 236))
    pair.call("a", "request_variables", descriptors)
    pair.run_until(6.0)
    return tap.frames


SCENARIOS: dict[str, Callable[[], Frames]] = {
    "discovery": discovery,
    "discovery-passive": discovery_passive,
    "sf-notification": sf_notification,
    "flags": flags,
    "link-fault": link_fault,
    "lost-link": lost_link,
    "loopback": loopback,
    "variables": variables,
}


# -- negative controls ---------------------------------------------------------------------

SLOW_DST = bytes.fromhex("0180c2000002")
SLOW_TYPE = b"\x88\x09"


def _tagged(frame: bytes, *tags: bytes) -> bytes:
    """`frame` with VLAN tags (TPID + TCI each) inserted after the source MAC."""
    return frame[:12] + b"".join(tags) + frame[12:]


def _marker(src: bytes, request: bool = True) -> bytes:
    """A Marker PDU (Slow Protocols subtype 2, IEEE 802.1AX), padded to 60 octets."""
    body = bytes((2, 1, 1 if request else 2, 16)) + struct.pack(">H6sIH", 1, src, 7, 0) + bytes((0, 0))
    return (SLOW_DST + src + SLOW_TYPE + body).ljust(60, b"\0")


def _lacp(src: bytes) -> bytes:
    """A minimal LACPDU header (subtype 1), padded to the 124 octets of a LACPDU."""
    return (SLOW_DST + src + SLOW_TYPE + bytes((1, 1, 1, 20))).ljust(124, b"\0")


def vlan_tagged_slow() -> Frames:
    """OAMPDUs and other slow frames behind 802.1Q, priority and QinQ tags."""
    frames: Frames = []
    for n, mac in enumerate((A_MAC, B_MAC)):
        src = bytes.fromhex(mac.replace(":", ""))
        local = InfoTlv(revision=1, oam_config=0x0D, max_pdu_size=1500, oui=0x001122, vendor_info=n)
        oampdu = encode(Information(mac, Flag.LOCAL_EVALUATING, (local,)))
        for second in range(4):
            t = second + 0.1 * n
            frames += [
                (t, _tagged(oampdu, b"\x81\x00\x00\x64")),  # 802.1Q, VLAN 100
                (t + 0.01, _tagged(oampdu, b"\x81\x00\xa0\x00")),  # priority-tagged (VLAN 0, PCP 5)
                (t + 0.02, _tagged(oampdu, b"\x88\xa8\x00\x0a", b"\x81\x00\x00\x64")),  # QinQ
                (t + 0.03, _tagged(oampdu, b"\x91\x00\x00\x0a")),  # old QinQ TPID
                (t + 0.04, _tagged(_lacp(src), b"\x81\x00\x00\x64")),
                (t + 0.05, _tagged(_marker(src), b"\x81\x00\x00\x64")),
            ]
    return sorted(frames)


def marker() -> Frames:
    """Marker PDUs (request and response) between two ports, untagged."""
    a, b = (bytes.fromhex(m.replace(":", "")) for m in (A_MAC, B_MAC))
    return [(second + 0.0, _marker(a)) for second in range(3)] + [
        (second + 0.001, _marker(b, False)) for second in range(3)
    ]


NEGATIVES: dict[str, Callable[[], Frames]] = {"vlan-tagged-slow": vlan_tagged_slow, "marker": marker}


def captures() -> dict[Path, bytes]:
    """Every generated capture: path -> octets."""
    out = {ENGINE / f"{name}.pcap": pcap_bytes(make()) for name, make in SCENARIOS.items()}
    out.update({NEGATIVE / f"{name}.pcap": pcap_bytes(sorted(make())) for name, make in NEGATIVES.items()})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 if a committed capture differs")
    args = parser.parse_args()
    status = 0
    for path, data in captures().items():
        if args.check:
            if not path.exists() or path.read_bytes() != data:
                print(f"{path.relative_to(REPO)}: differs from what the generator writes")
                status = 1
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        print(f"{path.relative_to(REPO)}: {len(data)} octets")
    return status


if __name__ == "__main__":
    sys.exit(main())
