"""The transmit queue (57.3.2.2 in effect, `efmoam.core.transmit`): an OAMPDU other than
Information is encoded once, when queued, and leaves with the Flags field of the moment
it is sent; if the peer's size limit changed meanwhile it is encoded again, and dropped
(counted as lost) if it no longer fits."""

from __future__ import annotations

import attrs

from efmoam.core.discovery import LocalPdu
from efmoam.core.outputs import DropReason, FrameDropped, Transmit
from efmoam.core.stats import OamStatistics
from efmoam.core.transmit import InformationContent, Transmitter
from pdu import encode
from pdu.enums import EventTlvType, Flag
from pdu.model import EventNotification, InfoTlv, LinkEventTlv, OrgSpecificTlv

MAC = "02:00:00:00:00:01"
STABLE = Flag.LOCAL_STABLE | Flag.REMOTE_STABLE


def content(flags: Flag, limit: int = 1518) -> InformationContent:
    return InformationContent(
        flags=flags, link_fault_only=False, local=InfoTlv(), peer=InfoTlv(), org_specific=None, limit=limit
    )


def notification(extra: bytes = b"") -> EventNotification:
    tlvs: tuple[object, ...] = (LinkEventTlv(EventTlvType.ERRORED_FRAME, timestamp=7, window=10, errors=9),)
    if extra:
        tlvs += (OrgSpecificTlv(0x001122, extra),)
    return EventNotification(MAC, Flag(0), sequence=3, tlvs=tlvs)  # type: ignore[arg-type]


def sent_after(tx: Transmitter, now: float) -> list[Transmit | FrameDropped]:
    sent: list[Transmit | FrameDropped] = []
    tx.service(now, LocalPdu.ANY, sent)
    return [output for output in sent if not (isinstance(output, Transmit) and output.code == 0)]


def transmitter() -> Transmitter:
    tx = Transmitter(MAC, OamStatistics(), 1.0, now=0.0)
    tx.set_information(content(STABLE), 0.0)
    tx.service(0.0, LocalPdu.ANY, [])  # the Information goes first
    return tx


def test_a_queued_oampdu_leaves_with_the_flags_of_the_moment_it_is_sent() -> None:
    tx = transmitter()
    pdu = notification()
    assert tx.enqueue(pdu, 1518, 10)
    critical = STABLE | Flag.CRITICAL_EVENT
    tx.set_information(content(critical), 0.5)  # changed while it waited
    (frame,) = sent_after(tx, 0.5)
    assert isinstance(frame, Transmit)
    assert frame.frame == encode(attrs.evolve(pdu, flags=critical))
    assert int.from_bytes(frame.frame[15:17], "big") == critical


def test_a_queued_oampdu_is_encoded_again_when_the_peer_s_limit_changed() -> None:
    tx = transmitter()
    pdu = notification(bytes(200))
    assert tx.enqueue(pdu, 1518, 10)
    queued = encode(pdu, 1518)
    # the peer now takes 2 octets less than the frame with its End marker (+4: the FCS):
    # it still fits, without the marker (57.5.3: the marker is left out where it does not fit)
    limit = len(queued) - 2 + 4
    tx.set_information(content(STABLE, limit=limit), 0.5)
    (frame,) = sent_after(tx, 0.5)
    assert isinstance(frame, Transmit) and frame.frame == encode(attrs.evolve(pdu, flags=STABLE), limit)
    assert len(frame.frame) == len(queued) - 2


def test_a_queued_oampdu_that_no_longer_fits_is_dropped_and_counted_lost() -> None:
    tx = transmitter()
    assert tx.enqueue(notification(bytes(200)), 1518, 10)
    lost = tx.stats.frames_lost_due_to_oam
    tx.set_information(content(STABLE, limit=128), 0.5)  # the peer now takes 128 octets at most
    (dropped,) = sent_after(tx, 0.5)
    assert isinstance(dropped, FrameDropped) and dropped.reason is DropReason.TOO_LARGE_FOR_PEER
    assert tx.stats.frames_lost_due_to_oam == lost + 1
