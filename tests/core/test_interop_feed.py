"""Feed another implementation's frames (Ed-Yang/eoam, pcaps/interop) into an OamPort.

The port plays the capture's other speaker (the minimal peer at 02:00:00:00:bb:02): it
is configured as that speaker advertised itself, so eoam's Remote Information TLV
matches our Local TLV.  Capture timestamps are `now`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from efmoam.core import DiscoveryState, LinkEventsReceived, OamPort, PeerFlagsChanged, PortSettings
from efmoam.offline.capture import read_capture
from pdu import EventTlvType, Flag, LinkEventTlv

PCAPS = Path(__file__).resolve().parents[2] / "pcaps" / "interop"
EOAM = "02:00:00:00:0a:02"
MINIMAL_PEER = "02:00:00:00:bb:02"
# how the minimal peer advertised itself: Active, loopback, link events; PDU 1500
AS_MINIMAL_PEER = PortSettings(
    oui=0x001122, vendor_info=1, max_pdu_size=1500, loopback_process=True, link_events=True, variable_retrieval=False
)


def feed(name: str) -> tuple[OamPort, list[object]]:
    """Every frame eoam sent in the capture, into a port that plays the minimal peer."""
    records = [r for r in read_capture(PCAPS / name) if r.data[6:12].hex(":") == EOAM]
    port = OamPort(AS_MINIMAL_PEER, MINIMAL_PEER, now=records[0].time, revision=1)
    outputs: list[object] = []
    for record in records:
        port.handle_timer(now=record.time)
        port.receive(record.data, now=record.time)
        outputs += port.take_outputs()
    return port, outputs


@pytest.mark.parametrize("name", ["events.pcapng", "flags.pcapng"])
def test_reaches_send_any_with_eoam(name: str) -> None:
    port, _ = feed(name)
    assert port.state is DiscoveryState.SEND_ANY
    assert port.peer is not None
    assert (port.peer.mac, port.peer.oui, port.peer.vendor_info, port.peer.max_pdu_size) == (
        EOAM,
        0x111111,
        0x11223344,
        1500,
    )
    assert not port.drops


def test_every_event_notification_is_accounted() -> None:
    port, outputs = feed("events.pcapng")
    received = [o for o in outputs if isinstance(o, LinkEventsReceived)]
    assert [r.sequence for r in received] == [0, 1, 2, 3, 4, 5]
    assert port.stats.unique_event_notification_rx == 6
    assert port.stats.duplicate_event_notification_rx == 0
    # decoded by the standard's numbering: eoam's type 0x02 TLV is an Errored Frame event
    kinds = [tlv.type for r in received for tlv in r.tlvs if isinstance(tlv, LinkEventTlv)]
    assert kinds == [1, 2, 3, 4, 1, 1]
    first = received[0].tlvs[0]
    assert isinstance(first, LinkEventTlv)
    assert first.type == EventTlvType.ERRORED_SYMBOL_PERIOD
    assert (first.window, first.threshold, first.errors, first.error_running_total) == (1000, 1, 200, 10200)


def test_flag_events_raise_and_clear() -> None:
    _, outputs = feed("flags.pcapng")
    raised = [o.raised for o in outputs if isinstance(o, PeerFlagsChanged) and o.raised]
    cleared = [o.cleared for o in outputs if isinstance(o, PeerFlagsChanged) and o.cleared]
    assert raised == [Flag.CRITICAL_EVENT, Flag.DYING_GASP, Flag.LINK_FAULT]
    assert cleared == [Flag.CRITICAL_EVENT, Flag.DYING_GASP, Flag.LINK_FAULT]
