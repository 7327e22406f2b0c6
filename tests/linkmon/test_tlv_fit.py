"""A monitor's link event TLV is made to fit its fields (`MonitorFacts.link_event_tlv`):
window, threshold and errors saturate at all-ones, the running totals wrap as the
counters they are; what it makes encodes, and decodes back the same."""

from __future__ import annotations

from hypothesis import given, strategies as st

from efmoam.core.linkmon.kinds import MONITORS, MonitorFacts
from pdu import EventNotification, LinkEventTlv, decode, encode
from pdu.codec import EVENT_TLV_FIELD_BITS

#: any non-negative value, most often near or past a field's width (16, 32 or 64 bits)
VALUES = st.one_of(
    st.integers(0, 2**70),
    st.sampled_from([2**bits + delta for bits in (16, 32, 64) for delta in (-1, 0, 1)]),
)


@given(
    st.sampled_from(MONITORS), st.integers(0, 0xFFFF), VALUES, VALUES, VALUES, VALUES, VALUES,
)  # fmt: skip
def test_each_field_saturates_or_wraps_at_its_width(
    facts: MonitorFacts, timestamp: int, window: int, threshold: int, errors: int, error_total: int, event_total: int
) -> None:
    tlv = facts.link_event_tlv(timestamp, window, threshold, errors, error_total, event_total)
    bits = EVENT_TLV_FIELD_BITS[facts.wire_type]
    top = {name: 1 << width for name, width in bits.items()}
    assert tlv == LinkEventTlv(
        type=facts.wire_type,
        timestamp=timestamp,
        window=min(window, top["window"] - 1),
        threshold=min(threshold, top["threshold"] - 1),
        errors=min(errors, top["errors"] - 1),
        error_running_total=error_total % top["error_running_total"],
        event_running_total=event_total % top["event_running_total"],
    )
    frame = encode(EventNotification("02:00:00:00:00:01", 0, 7, (tlv,)))
    assert decode(frame).tlvs == (tlv,)


def test_values_that_fit_are_kept_as_they_are() -> None:
    for facts in MONITORS:
        assert facts.link_event_tlv(5, 10, 1, 2, 3, 4) == LinkEventTlv(facts.wire_type, 5, 10, 1, 2, 3, 4)
