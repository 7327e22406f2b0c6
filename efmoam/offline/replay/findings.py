"""What replay reports about a speaker: findings (kinds, aggregation) and the limits it checks.

A finding is one kind of departure from IEEE 802.3 Clause 57 seen in a capture, with a
detail that says what exactly.  Occurrences with the same kind and detail are counted
in one `Finding` that keeps the frame numbers of its first occurrences, so a speaker
that repeats the same fault in every frame costs a counter, not a list that grows with
the capture.
"""

from __future__ import annotations

from typing import Any

import attrs

#: every finding kind, with what it means (the order of the reports)
KINDS: dict[str, str] = {
    "rate_exceeded": "more than 10 OAMPDUs in one second (57.3.2.2: pdu_cnt)",
    "keepalive_late": "no OAMPDU for longer than the keep-alive limit while others were recorded",
    "silence": "no OAMPDU for longer than the lost-link time while it should be sending and others were recorded",
    "capture_gap": (
        "silent for longer than the lost-link time across a capture gap"
        " (no frame at all for longer than the keep-alive limit: trimmed?)"
    ),
    "lost_link_ignored": "stayed in SEND_ANY after the silent peer's lost-link time ran out",
    "short_frame": "frame under the 60-octet Ethernet minimum (without FCS)",
    "missing_end_marker": "no End-of-TLV marker although the frame had room for it",
    "malformed": "OAMPDU the codec rejects (malformed TLV, truncated field, bad length)",
    "invalid_flags": "Local Evaluating and Local Stable both set, or a reserved flag bit set",
    "implausible_event": "link event values implausible for the TLV type",
    "link_fault_with_tlvs": "Information OAMPDU with the Link Fault flag that still carries Information TLVs",
    "missing_local_tlv": "Information OAMPDU without a Local Information TLV outside the Link Fault form",
    "tlv_not_allowed": "TLV not allowed in this OAMPDU or in the speaker's current state",
    "code_not_allowed": "OAMPDU code not allowed in the speaker's state or mode",
    "reserved_code": "OAMPDU with a reserved code",
    "duplicate_event_differs": "Event Notification repeating the previous sequence number with other content",
    "remote_mismatch": "Remote Information TLV not matching the peer's last Local Information TLV",
    "revision_not_increased": "Local Information TLV content changed without a higher revision",
}

#: frame numbers kept per finding (the first occurrences)
MAX_FRAMES = 10


@attrs.frozen
class Limits:
    """The timers replay holds a speaker to.

    The Transmit state machine (57.3.2.2) sends a keep-alive Information OAMPDU at the
    end of every ``pdu_timer`` period (1 s) in which nothing was sent, so two OAMPDUs
    of a speaker that must send are never more than two periods apart (one early in a
    period, the keep-alive at the end of the next).  Its peer restarts Discovery after
    ``local_lost_link_timer`` (5 s) without an OAMPDU.  The standard gives timers no
    tolerance; `tolerance` (a fraction) absorbs host scheduling jitter.
    """

    keepalive: float = 1.0  #: the pdu_timer period, seconds
    tolerance: float = 0.1  #: fraction of the keep-alive limit allowed on top of it
    lost_link: float = 5.0  #: seconds of silence after which the peer restarts Discovery
    rate: int = 10  #: OAMPDUs allowed in any one second
    rate_period: float = 1.0

    @property
    def keepalive_limit(self) -> float:
        """A gap longer than this is a late keep-alive: two periods, plus the tolerance."""
        return 2 * self.keepalive * (1.0 + self.tolerance)

    def to_dict(self) -> dict[str, Any]:
        return {
            "keepalive": self.keepalive,
            "keepalive_limit": round(self.keepalive_limit, 6),
            "lost_link": self.lost_link,
            "rate": self.rate,
        }


class Finding:
    """Every occurrence of one kind of finding with one detail, for one speaker."""

    __slots__ = ("count", "detail", "first_time", "frames", "kind", "last_frame", "last_time")

    def __init__(self, kind: str, detail: str) -> None:
        self.kind = kind
        self.detail = detail
        self.count = 0
        self.frames: list[int] = []
        self.first_time = self.last_time = float("-inf")
        self.last_frame = 0

    def add(self, frames: tuple[int, ...], time: float) -> bool:
        """Count one occurrence shown by `frames`; True for the first one."""
        self.count += 1
        self.last_frame = frames[-1]
        self.last_time = time
        if len(self.frames) < MAX_FRAMES:
            self.frames.extend(frames)
        if self.count == 1:
            self.first_time = time
            return True
        return False

    def repeat(self, frame: int, time: float) -> None:
        """`add` of one more occurrence shown by one frame, after the first (a steady frame
        repeating the findings of the frame it repeats: once per frame, kept lean)."""
        self.count += 1
        self.last_frame = frame
        self.last_time = time
        if len(self.frames) < MAX_FRAMES:
            self.frames.append(frame)

    def to_dict(self, start: float) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "detail": self.detail,
            "count": self.count,
            "frames": self.frames[:MAX_FRAMES],
            "last_frame": self.last_frame,
            "first_time": round(self.first_time - start, 6),
        }
