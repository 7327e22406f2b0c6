"""Observe mode's tracking of Discovery: a speaker's inferred state, its Local TLV and the Remote TLV it echoes.

Design: functions over a `Speaker` (and its `Interface`, for the peer) that update what
is known of it and record what they find on the shared `Timeline`; the observer
(`observe.Observer`) calls them for every Information OAMPDU that is news (a repeat of
the speaker's last frame is not looked at again).  The judgements are `rules`'.
"""

from __future__ import annotations

from efmoam.offline.capture import CaptureRecord
from efmoam.offline.decode import JsonObject
from efmoam.offline.replay import loopbacks, rules
from efmoam.offline.replay.findings import Finding, Limits
from efmoam.offline.replay.speaker import (
    ACTIVE_SEND_LOCAL,
    AFTER_DISCOVERY,
    FAULT,
    SEND_ANY,
    Interface,
    Speaker,
    capabilities,
    loopback_state,
)
from efmoam.offline.replay.timeline import Timeline
from pdu import InfoTlv

__all__ = ["MAX_REVISIONS", "MAX_STATES", "check_remote", "follow_local", "set_state"]

#: per-speaker caps on what the summary keeps (the timeline has everything)
MAX_STATES = 1000
MAX_REVISIONS = 1000


def follow_local(timeline: Timeline, iface: Interface, speaker: Speaker, record: CaptureRecord, local: InfoTlv) -> None:
    """Follow the speaker's Local Information TLV: revisions, capabilities, loopback.

    57.5.2.1: the Revision field grows whenever the TLV's content changes
    (`rules.revision_increased`, ``revision_not_increased``).  Caveat on trimmed
    captures: after a long silence or a capture gap the speaker is forgotten
    (`Speaker.local` None) and may have restarted from revision 0, so its next Local TLV
    is a new revision, never a finding.
    """
    old = speaker.local
    if old == local:
        return
    advertised = speaker.advertised
    if old is None:
        changed = [] if advertised is None else rules.changed_fields(advertised, local)
        if advertised is None or changed or local.revision != advertised.revision:
            _revision(timeline, speaker, record, local, changed)
    else:
        changed = rules.changed_fields(old, local)
        if changed and not rules.revision_increased(old, local):
            timeline.find(
                speaker,
                record,
                "revision_not_increased",
                f"{', '.join(changed)} changed; revision {old.revision} -> {local.revision}",
            )
        _revision(timeline, speaker, record, local, changed)
    if advertised is not None:  # a new Local TLV (or the first after a gap)
        for other in iface.speakers.values():
            if other is not speaker:
                other.steady = None  # its Remote TLV must be checked against the new one
    if advertised is None or loopback_state(advertised) != loopback_state(local):
        loopbacks.state_change(timeline, iface, speaker, record, local, first=advertised is None)
    speaker.prev_local = old
    speaker.local = speaker.advertised = local
    speaker.local_since = record.time
    speaker.local_frame = record.number


def _revision(timeline: Timeline, speaker: Speaker, record: CaptureRecord, local: InfoTlv, changed: list[str]) -> None:
    """A new revision of the speaker's Local TLV (its capabilities with the first one)."""
    shown: JsonObject = {"revision": local.revision}  # the timeline has the frame and the time
    if changed:
        shown["changed"] = changed
    if not speaker.revisions:
        shown.update(capabilities(local))
    if len(speaker.revisions) < MAX_REVISIONS:
        entry: JsonObject = {"revision": local.revision, "frame": record.number, "time": record.time}
        entry.update(shown)
        speaker.revisions.append(entry)
    timeline.emit(speaker, record, "revision" if speaker.advertised else "capabilities", shown)


def check_remote(
    timeline: Timeline,
    limits: Limits,
    iface: Interface,
    speaker: Speaker,
    record: CaptureRecord,
    remote: InfoTlv,
    repeat: list[Finding],
) -> bool:
    """Check a Remote Information TLV against the peer's Local TLV; False: look again at the next frame.

    57.4.3.1: the Remote TLV repeats the last Local TLV received from the peer
    (`rules.information`, ``remote_mismatch``), and is sent only once one was
    received (``tlv_not_allowed``).  Caveats on trimmed captures: a peer's Local TLV from
    before a capture gap may have changed unseen, so the check waits for the peer's next
    frame; a peer's change seen a moment ago may still be on its way (within a
    keep-alive), so a Remote TLV repeating the previous one is looked at again.
    Findings that every repeat of the frame shows again go to `repeat`.
    """
    peer = iface.peer(speaker)
    if peer is None:
        return True  # the peer is not in the capture
    if peer.last_time < iface.gap_end:
        return False  # the peer's Local TLV is from before a capture gap: wait for its next one
    if peer.advertised is None:
        repeat.append(
            timeline.find(speaker, record, "tlv_not_allowed", "Remote Information TLV before the peer sent a Local one")
        )
        return False
    if peer.local is None:
        return True
    said, expected = rules.information(remote), rules.information(peer.local)
    if said == expected:
        return True
    previous = peer.prev_local
    recent = record.time - peer.local_since <= limits.keepalive_limit
    if recent and previous is not None and said == rules.information(previous):
        return False  # the change may still be on its way: look again
    differences = rules.remote_differences(said, expected)
    repeat.append(
        timeline.find(
            speaker,
            record,
            "remote_mismatch",
            f"Remote TLV differs from {peer.id}'s Local TLV: {differences}",
            peer_frame=peer.local_frame,
        )
    )
    return True


def set_state(timeline: Timeline, speaker: Speaker, record: CaptureRecord, state: str, inferred: bool = False) -> None:
    """The speaker's Discovery state is now `state` (as `speaker.infer_state` reads its frame).

    57.3.2.1 (Figure 57-5): the only way back to ACTIVE_SEND_LOCAL from a later state is
    through FAULT, recorded as an inferred FAULT.  The time to SEND_ANY is measured from
    the first state seen before SEND_ANY.  Caveat on trimmed captures: a Discovery that
    ran within a capture gap is not seen; the states are those the capture shows.
    """
    old = speaker.state
    if state == old:
        return
    if state == ACTIVE_SEND_LOCAL and old in AFTER_DISCOVERY:
        set_state(timeline, speaker, record, FAULT, inferred=True)  # the only way back is through FAULT
    t = record.time
    speaker.state = state
    entry: JsonObject = {"state": state, "frame": record.number, "time": t}
    shown: JsonObject = {"state": state}
    if inferred:
        entry["inferred"] = shown["inferred"] = True
    if state == SEND_ANY:
        speaker.send_any_since = t
        if speaker.send_any_time is None and speaker.discovery_start is not None:
            speaker.send_any_time = t
            entry["after"] = shown["after"] = round(t - speaker.discovery_start, 6)
    elif speaker.discovery_start is None and speaker.send_any_time is None:
        speaker.discovery_start = t
    if len(speaker.states) < MAX_STATES:
        speaker.states.append(entry)
    else:
        speaker.states_dropped += 1
    timeline.emit(speaker, record, "state", shown)
