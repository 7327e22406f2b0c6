"""Observe mode's reading of what a speaker does beyond Discovery: flags, events, other codes.

Design: functions over a `Speaker` that the observer (`observe.Observer`) calls for a
frame that is news: the critical flags' changes (`flag_changes`), OAMPDUs other than
Information (`other`: Event Notifications, Loopback Control, variable retrieval,
Organization Specific), and the End-of-TLV marker of a TLV list (`end_marker`).  Each
records on the shared `Timeline`; the judgements are `rules`'.  Findings that every
repeat of the frame would show again go to the caller's `repeat` list.
"""

from __future__ import annotations

from efmoam.offline.capture import CaptureRecord
from efmoam.offline.decode import JsonObject, pdu_to_dict, tlv_to_dict
from efmoam.offline.replay import loopbacks, rules
from efmoam.offline.replay.findings import Finding
from efmoam.offline.replay.speaker import CODE_NAMES, Interface, Speaker
from efmoam.offline.replay.timeline import Timeline
from pdu import (
    CRITICAL_FLAGS,
    EventNotification,
    Flag,
    LinkEventTlv,
    LoopbackControl,
    Oampdu,
    OrgSpecificPdu,
    UnknownTlv,
    UnsupportedPdu,
    VariableRequest,
    VariableResponse,
    format_oui,
)
from pdu.enums import HEADER_LENGTH, MAX_OAMPDU_SIZE, MIN_FRAME_LENGTH

__all__ = ["end_marker", "flag_changes", "other"]

_CRITICAL = int(CRITICAL_FLAGS)
_CRITICAL_NAMES = (
    (int(Flag.LINK_FAULT), "link_fault"),
    (int(Flag.DYING_GASP), "dying_gasp"),
    (int(Flag.CRITICAL_EVENT), "critical_event"),
)
_EVENT_DATA_OFFSET = HEADER_LENGTH + 2  # after the sequence number
_MAX_FRAME = MAX_OAMPDU_SIZE - 4


def flag_changes(timeline: Timeline, speaker: Speaker, record: CaptureRecord, flags: int) -> None:
    """The critical flags (Link Fault, Dying Gasp, Critical Event) raised or cleared: events.

    57.4.2.1: the flags say what the speaker's local failures are, in every OAMPDU.
    Caveat on trimmed captures: a flag raised and cleared within a gap is not seen.
    """
    old = speaker.flags or 0
    if (old ^ flags) & _CRITICAL:
        for bit, name in _CRITICAL_NAMES:
            if (old ^ flags) & bit:
                timeline.event(
                    speaker, record, {"kind": "flag", "flag": name, "change": "raised" if flags & bit else "cleared"}
                )


def other(
    timeline: Timeline, iface: Interface, speaker: Speaker, record: CaptureRecord, pdu: Oampdu, repeat: list[Finding]
) -> None:
    """An OAMPDU other than Information: allowed here (`rules.code_problems`), then what it says."""
    name = CODE_NAMES.get(pdu.code)
    if isinstance(pdu, UnsupportedPdu) or name is None:
        timeline.find(speaker, record, "reserved_code", f"code {pdu.code:#04x}")
        return
    peer = iface.peer(speaker)
    peer_local = peer.advertised if peer is not None else None
    own = speaker.advertised
    for detail in rules.code_problems(
        name,
        speaker.state,
        speaker.mode == "passive",
        int(own.oam_config) if own is not None else None,
        int(peer_local.oam_config) if peer_local is not None else None,
    ):
        timeline.find(speaker, record, "code_not_allowed", detail)
    if isinstance(pdu, EventNotification):
        event_notification(timeline, speaker, record, pdu, repeat)
    elif isinstance(pdu, LoopbackControl):
        loopbacks.command(timeline, speaker, record, pdu)
    elif isinstance(pdu, VariableRequest):
        descriptors = pdu_to_dict(pdu)["descriptors"]
        timeline.event(speaker, record, {"kind": "variable_request", "descriptors": descriptors})
    elif isinstance(pdu, VariableResponse):
        containers = pdu_to_dict(pdu)["containers"]
        timeline.event(speaker, record, {"kind": "variable_response", "containers": containers})
    elif isinstance(pdu, OrgSpecificPdu):
        # counted and shown, never acted on: only its flags (the speaker's) are read
        speaker.org_specific[pdu.oui] = speaker.org_specific.get(pdu.oui, 0) + 1
        timeline.event(
            speaker, record, {"kind": "organization_specific", "oui": format_oui(pdu.oui), "value": pdu.value.hex()}
        )


def event_notification(
    timeline: Timeline, speaker: Speaker, record: CaptureRecord, pdu: EventNotification, repeat: list[Finding]
) -> None:
    """An Event Notification: an event (or a duplicate of the last), with its link events judged.

    57.4.3.2 and 57.5.3: no reserved TLV type; a duplicate repeats the last event exactly
    (`rules.duplicate_event`); each link event TLV plausible for its type
    (`rules.implausibilities`) and its running totals following the previous event of
    its type (`rules.running_totals`, not for a duplicate).  Caveat on trimmed captures:
    across a long silence or a capture gap the last event and the totals are forgotten
    (the peer may have restarted).
    """
    for tlv in pdu.tlvs:
        if type(tlv) is UnknownTlv:
            repeat.append(
                timeline.find(
                    speaker, record, "tlv_not_allowed", f"reserved TLV type {tlv.type:#04x} in an Event Notification"
                )
            )
    if pdu.tlvs:
        end_marker(timeline, speaker, record, _EVENT_DATA_OFFSET, repeat)
    duplicate = rules.duplicate_event(speaker.last_event, pdu)
    speaker.last_event = pdu
    if duplicate == "duplicate":
        if speaker.last_event_entry is not None:
            speaker.last_event_entry["duplicates"] += 1
        timeline.emit(speaker, record, "duplicate_event", {"sequence": pdu.sequence})
        return
    if duplicate == "differs":
        timeline.find(speaker, record, "duplicate_event_differs", f"sequence {pdu.sequence} repeated with other TLVs")
    entry: JsonObject = {
        "kind": "event_notification",
        "sequence": pdu.sequence,
        "tlvs": [tlv_to_dict(tlv) for tlv in pdu.tlvs],
        "duplicates": 0,
    }
    speaker.last_event_entry = entry
    timeline.event(speaker, record, entry)
    for tlv in pdu.tlvs:
        if type(tlv) is LinkEventTlv:
            previous = speaker.totals.get(tlv.type)
            speaker.totals[tlv.type] = (tlv.error_running_total, tlv.event_running_total)
            totals = rules.running_totals(previous, tlv) if duplicate is None else []
            for detail in rules.implausibilities(tlv) + totals:
                timeline.find(speaker, record, "implausible_event", detail, sequence=pdu.sequence)


def end_marker(timeline: Timeline, speaker: Speaker, record: CaptureRecord, offset: int, repeat: list[Finding]) -> None:
    """The TLV list from `offset` ends with an End marker where the frame has room for one.

    57.5.2 (`rules.tlvs_run_to_the_end`).  Caveat: a frame cut by the snapshot length,
    or with no room left (60 octets, or the speaker's largest OAMPDU), is not judged.
    """
    data = record.data
    length = len(data)
    if length < record.original_length or length == MIN_FRAME_LENGTH or length + 2 > _max_frame(speaker):
        return  # cut by the snapshot length, or no room for the marker
    if rules.tlvs_run_to_the_end(data, offset):
        code = CODE_NAMES[data[17]]
        repeat.append(
            timeline.find(
                speaker, record, "missing_end_marker", f"{code} OAMPDU of {length} octets ends with its last TLV"
            )
        )


def _max_frame(speaker: Speaker) -> int:
    if speaker.advertised is None:
        return _MAX_FRAME
    return min(_MAX_FRAME, speaker.advertised.max_pdu_size - 4)
