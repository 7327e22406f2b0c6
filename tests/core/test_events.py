"""Event Notification (57.4.3.2, RFC 4878 counters): sequence numbers, bursts, duplicates."""

from __future__ import annotations

import pytest

from efmoam.core import LinkEventsReceived, PortSettings
from pdu import EventNotification, EventTlvType, LinkEventTlv, OrgSpecificTlv
from tests.core.test_support import (
    A_MAC,
    ERRORED_FRAME,
    STABLE,
    S,
    discovered,
    drops,
    frame,
    lone,
    notify,
    outputs,
    sent_kind,
)

EVENTS = PortSettings(link_events=True)
SYMBOL_PERIOD = LinkEventTlv(EventTlvType.ERRORED_SYMBOL_PERIOD, timestamp=3, window=125_000_000, errors=7)


def event_frame(sequence: int, src: str = A_MAC, tlvs: tuple[object, ...] = (ERRORED_FRAME,)) -> bytes:
    return frame(EventNotification(src, STABLE, sequence, tlvs))  # type: ignore[arg-type]


def received_sequences(pair, name: str) -> list[int]:  # type: ignore[no-untyped-def]
    return [e.sequence for e in outputs(pair, name, LinkEventsReceived)]


# -- sequence numbers -----------------------------------------------------------------


def test_sequence_numbers_increment_per_notification() -> None:
    pair = discovered(EVENTS, EVENTS)
    assert [notify(pair, "a") for _ in range(4)] == [0, 1, 2, 3]
    pair.run_for(1)
    assert [p.sequence for _, p in sent_kind(pair, "a", EventNotification)] == [0, 1, 2, 3]
    assert received_sequences(pair, "b") == [0, 1, 2, 3]
    assert pair.a.stats.unique_event_notification_tx == pair.b.stats.unique_event_notification_rx == 4


def test_sequence_numbers_wrap_from_ffff_to_zero() -> None:
    pair = discovered(EVENTS, EVENTS)
    pair.a._tx_sequence = 0xFFFE  # as after 65534 notifications
    assert [notify(pair, "a") for _ in range(3)] == [0xFFFE, 0xFFFF, 0]
    pair.run_for(1)
    assert [p.sequence for _, p in sent_kind(pair, "a", EventNotification)] == [0xFFFE, 0xFFFF, 0]
    assert received_sequences(pair, "b") == [0xFFFE, 0xFFFF, 0]
    assert pair.b.stats.duplicate_event_notification_rx == 0


def test_notification_carries_the_tlvs_as_given() -> None:
    pair = discovered(EVENTS, EVENTS)
    tlvs = (SYMBOL_PERIOD, ERRORED_FRAME, OrgSpecificTlv(0x001122, b"\x01\x02"))
    notify(pair, "a", tlvs)
    pair.run_for(1)
    (received,) = outputs(pair, "b", LinkEventsReceived)
    assert received.tlvs == tlvs


# -- bursts and duplicates --------------------------------------------------------------


@pytest.mark.parametrize("burst", [1, 2, 5])
def test_burst_counts_one_unique_and_the_rest_duplicates_on_both_sides(burst: int) -> None:
    pair = discovered(EVENTS, EVENTS)
    sequence = notify(pair, "a", burst=burst)
    pair.run_for(2)
    copies = [p for _, p in sent_kind(pair, "a", EventNotification)]
    assert len(copies) == burst
    assert {p.sequence for p in copies} == {sequence}
    assert len(set(copies)) == 1  # identical copies
    assert pair.a.stats.unique_event_notification_tx == 1
    assert pair.a.stats.duplicate_event_notification_tx == burst - 1
    assert pair.b.stats.unique_event_notification_rx == 1
    assert pair.b.stats.duplicate_event_notification_rx == burst - 1
    assert received_sequences(pair, "b") == [sequence]  # handed on once


def test_duplicates_from_the_link_are_not_handed_on_twice() -> None:
    pair = discovered(EVENTS, EVENTS)
    pair.link["a"].duplicate = 1.0  # every frame arrives twice
    for _ in range(3):
        notify(pair, "a")
    pair.run_for(1)
    assert received_sequences(pair, "b") == [0, 1, 2]
    assert pair.b.stats.unique_event_notification_rx == 3
    assert pair.b.stats.duplicate_event_notification_rx == 3


def test_a_new_notification_drops_the_pending_copies_of_the_previous_one() -> None:
    """A duplicate must never follow a newer notification (it would look unique)."""
    pair = discovered(EVENTS, EVENTS)
    for _ in range(12):  # more than the budget: copies are still queued when the next comes
        notify(pair, "a", burst=5)
    pair.run_for(10)
    sequences = [p.sequence for _, p in sent_kind(pair, "a", EventNotification)]
    assert sequences == sorted(sequences)
    assert received_sequences(pair, "b") == sorted(set(sequences))


# -- when notifications are sent ----------------------------------------------------------


def test_no_notification_before_send_any() -> None:
    pair = lone(EVENTS)
    assert notify(pair, "a") is None
    pair.run_for(2)
    assert sent_kind(pair, "a", EventNotification) == []
    assert pair.a.stats.unique_event_notification_tx == 0


def test_no_notification_to_a_peer_without_link_events() -> None:
    pair = discovered(EVENTS, PortSettings(link_events=False))
    assert notify(pair, "a") is None
    pair.run_for(2)
    assert sent_kind(pair, "a", EventNotification) == []


def test_notification_from_a_peer_that_did_not_advertise_link_events_is_dropped() -> None:
    pair = discovered(PortSettings(link_events=False), EVENTS)
    pair.inject("b", event_frame(7))
    pair.run_for(0.1)
    assert drops(pair, "b") == ["events_not_advertised"]
    assert outputs(pair, "b", LinkEventsReceived) == []
    assert pair.b.state is S.SEND_ANY


def test_notification_before_send_any_is_dropped() -> None:
    pair = lone(EVENTS)
    pair.inject("a", event_frame(1, src="02:00:00:00:00:0b"))
    pair.run_for(0.1)
    assert drops(pair, "a") == ["not_in_send_any"]
    assert pair.a.stats.unique_event_notification_rx == 0


# -- bookkeeping across FAULT -----------------------------------------------------------


def _lose_and_find_again(pair) -> None:  # type: ignore[no-untyped-def]
    """Cut a->b long enough for b's lost-link timer, then repair and rediscover."""
    pair.link["a"].cut = True
    pair.run_for(6)
    assert pair.first_time_in("b", S.FAULT) is not None
    pair.link["a"].cut = False
    pair.run_for(1.5)
    assert pair.both_in(S.SEND_ANY)


def test_receive_sequence_bookkeeping_resets_on_fault() -> None:
    pair = discovered(EVENTS, EVENTS)
    last = notify(pair, "a")
    pair.run_for(0.5)
    _lose_and_find_again(pair)
    pair.inject("b", event_frame(last))  # the same number as the last one before the fault
    pair.run_for(0.1)
    assert pair.b.stats.unique_event_notification_rx == 2
    assert pair.b.stats.duplicate_event_notification_rx == 0
    assert received_sequences(pair, "b") == [last, last]


def test_same_sequence_without_a_fault_is_a_duplicate() -> None:
    """The control for the test above: without FAULT the same number is a duplicate."""
    pair = discovered(EVENTS, EVENTS)
    last = notify(pair, "a")
    pair.run_for(7.5)
    pair.inject("b", event_frame(last))
    pair.run_for(0.1)
    assert pair.b.stats.unique_event_notification_rx == 1
    assert pair.b.stats.duplicate_event_notification_rx == 1
