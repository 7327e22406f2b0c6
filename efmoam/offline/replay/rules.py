"""The Clause 57 rules observe mode holds a speaker to, as functions of what a capture shows.

Design: each rule is a pure function of decoded values (no capture, no speaker, no
timeline) that returns what is wrong in words (the finding's detail), or a verdict the
observer acts on.  The observer (`observe.Observer`) decides when a rule runs and counts
its findings; every rule states the clause it checks and what a trimmed capture (frames
missing, long stretches with nothing recorded) can and cannot show of it.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from efmoam.core.linkmon.kinds import BY_WIRE_TYPE, FACTS, MonitorKind
from efmoam.offline.replay.findings import Limits
from pdu import EventNotification, EventTlvType, Flag, InfoTlv, InfoTlvType, LinkEventTlv, OamConfig, UnknownTlv
from pdu.model import INFORMATION_FIELDS, information

__all__ = [
    "changed_fields",
    "code_problems",
    "duplicate_event",
    "FLAGS_CHECKED",
    "flag_problems",
    "ignored_lost_link",
    "must_send",
    "implausibilities",
    "information_tlvs",
    "information",
    "remote_differences",
    "revision_increased",
    "running_totals",
    "silence",
    "tlvs_run_to_the_end",
]

_EVENT_NAMES = {int(t): t.name.lower() for t in EventTlvType}
# plain ints: an IntFlag operand makes every & an enum operation
EVALUATING_AND_STABLE = int(Flag.LOCAL_EVALUATING | Flag.LOCAL_STABLE)
_RESERVED_FLAGS = 0xFF80
_LINK_FAULT, _DYING_GASP = int(Flag.LINK_FAULT), int(Flag.DYING_GASP)
_LINK_EVENTS, _REMOTE_LOOPBACK = int(OamConfig.LINK_EVENTS), int(OamConfig.REMOTE_LOOPBACK)
_VARIABLE_RETRIEVAL = int(OamConfig.VARIABLE_RETRIEVAL)

#: an Information TLV's content: what it says (`information`) but the revision
_TLV_FIELDS = tuple(name for name in INFORMATION_FIELDS if name != "revision")
_content = operator.attrgetter(*_TLV_FIELDS)

# Plausibility bounds of link event windows: the monitor table's (57.5.3; protocol.md section 6)
_SYMBOL, _FRAME, _PERIOD, _SECONDS = (FACTS[kind] for kind in MonitorKind)


def event_kind(tlv_type: int) -> str:
    """A link event TLV's name, as ``efmoam decode`` names it."""
    return _EVENT_NAMES.get(tlv_type, f"type {tlv_type:#04x}")


def implausibilities(tlv: LinkEventTlv) -> list[str]:
    """Why the values of a link event TLV cannot be what its IEEE type says (empty: plausible).

    57.5.3.1-4: each link event TLV's window is in its type's unit (symbols, 100 ms,
    frames), within the bounds of the monitor table (protocol.md section 6); errors
    cannot outnumber the window; running totals include the window's errors; an event
    counts itself.  Caveat: nothing, a single TLV shows all it is checked on.
    """
    kind = _EVENT_NAMES.get(tlv.type) or event_kind(tlv.type)  # no call for the known types
    window, errors = tlv.window, tlv.errors
    facts = BY_WIRE_TYPE.get(tlv.type)
    low, high = facts.plausible_wire_window if facts is not None else (0, None)
    out: list[str] = []
    if facts is _SYMBOL:
        if window < low:
            out.append(f"{kind}: window of {window} symbols is far less than the one second a window must cover")
        if errors > window:
            out.append(f"{kind}: {errors} errored symbols in a window of {window} symbols")
    elif facts is _FRAME:
        if high is not None and window > high:
            out.append(
                f"{kind}: window of {window} x 100 ms ({window / 10:g} s) is longer than {high / 10:g} s:"
                " looks like a frame count (an Errored Frame Period window)"
            )
        elif window < low:
            out.append(f"{kind}: window of {window} x 100 ms")
    elif facts is _PERIOD:
        if window < low:
            looks = " looks like a duration in 100 ms units (an Errored Frame window)" if window else ""
            out.append(f"{kind}: window of {window} frames is under 100 ms of minimum-size frames at any rate:{looks}")
        if errors > window:
            out.append(f"{kind}: {errors} errored frames in a window of {window} frames")
    elif facts is _SECONDS:
        if not low <= window <= (high or window):
            out.append(f"{kind}: window of {window} x 100 ms is outside {low / 10:g} s .. {(high or 0) / 10:g} s")
        if errors * 10 > window:
            out.append(f"{kind}: {errors} errored seconds in a window of {window / 10:g} s")
    if tlv.error_running_total < errors:
        out.append(f"{kind}: error running total {tlv.error_running_total} below the {errors} errors of the window")
    if tlv.event_running_total == 0:
        out.append(f"{kind}: event running total 0 in an event")
    return out


def running_totals(previous: tuple[int, int] | None, tlv: LinkEventTlv) -> list[str]:
    """Why a link event's running totals cannot follow the previous event of its type's.

    57.5.3: the error running total and the event running total count since the last
    reset, so from one event of a type to the next the error total grows by at least the
    window's errors (not for Errored Frame Seconds Summary, whose errors are seconds) and
    the event total grows.  `previous` is (error total, event total) of the last event of
    the type.  Caveat: the observer forgets `previous` across a long silence or a capture
    gap, where the peer may have restarted and reset its totals.
    """
    if previous is None:
        return []
    kind = _EVENT_NAMES.get(tlv.type) or event_kind(tlv.type)  # no call for the known types
    errors, events = previous
    out = []
    grown = tlv.error_running_total - errors
    if grown < 0:
        out.append(f"{kind}: error running total went down ({errors} -> {tlv.error_running_total})")
    elif tlv.type != EventTlvType.ERRORED_FRAME_SECONDS_SUMMARY and grown < tlv.errors:
        out.append(f"{kind}: error running total grew by {grown}, less than the {tlv.errors} errors of the window")
    if tlv.event_running_total <= events:
        out.append(f"{kind}: event running total did not grow ({events} -> {tlv.event_running_total})")
    return out


def duplicate_event(last: EventNotification | None, pdu: EventNotification) -> str | None:
    """What an Event Notification is next to the speaker's last one: "duplicate", "differs" or None (new).

    57.4.3.2: a DTE may send an Event Notification more than once, with the same
    sequence number, for reliability; a duplicate repeats the event exactly.  The same
    sequence number with other TLVs ("differs") is a peer reusing sequence numbers: the
    receiver takes it for a duplicate and drops a new event.  Caveat: only the last
    notification is compared; across a capture gap the observer forgets it.
    """
    if last is None or last.sequence != pdu.sequence:
        return None
    return "duplicate" if last.tlvs == pdu.tlvs else "differs"


def tlvs_run_to_the_end(data: bytes, offset: int) -> bool:
    """True when the TLV list starting at `offset` ends with the frame, not with an End marker.

    57.5.2: a TLV list ends with an End of TLV marker (type 0) when the frame has room
    for it.  The caller excludes frames cut by the snapshot length and frames with no
    room left.
    """
    end = len(data)
    while offset < end:
        if not data[offset]:
            return False
        offset += data[offset + 1]  # checked by the codec: >= 2 and within the frame
    return True


#: the bits `flag_problems` looks at: a Flags field without any of them is fine
FLAGS_CHECKED = _RESERVED_FLAGS | int(Flag.LOCAL_EVALUATING)


def flag_problems(flags: int) -> list[str]:
    """What is wrong with an OAMPDU's Flags field (57.4.2.1).

    Local Evaluating and Local Stable are never set together (one of 0-0, 1-0, 0-1, the
    1-1 combination is reserved), and bits 7-15 are reserved, sent as zero.
    """
    out = []
    if flags & EVALUATING_AND_STABLE == EVALUATING_AND_STABLE:
        out.append("Local Evaluating and Local Stable both set")
    if flags & _RESERVED_FLAGS:
        out.append(f"reserved flag bits {flags & _RESERVED_FLAGS:#06x}")
    return out


def code_problems(
    name: str, state: str | None, passive: bool, own_config: int | None, peer_config: int | None
) -> list[str]:
    """Why an OAMPDU other than Information is not allowed from this speaker (code_not_allowed).

    57.3.2 and Table 57-7: only Information OAMPDUs are sent before SEND_ANY; a Passive
    DTE does not send Loopback Control or Variable Request OAMPDUs; Event Notifications
    go only to a peer that advertises Link Events, Loopback Control to one that
    advertises remote loopback, Variable Requests to one that advertises variable
    retrieval, and a DTE answers with Variable Responses only if it advertises it.
    `name` is the code's name (``CODE_NAMES``); `state` the speaker's inferred state;
    the configs are the OAM Configuration fields last advertised (None: not seen).
    Caveat: on a trimmed capture the state and the advertisements are the last seen,
    which the speaker may have changed in a gap.
    """
    out = []
    if state is not None and state != "SEND_ANY":
        out.append(f"{name} OAMPDU in {state}")
    if name == "event_notification":
        if peer_config is not None and not peer_config & _LINK_EVENTS:
            out.append("Event Notification to a peer that does not advertise Link Events")
    elif name == "loopback_control":
        if passive:
            out.append("Loopback Control from a Passive DTE")
        if peer_config is not None and not peer_config & _REMOTE_LOOPBACK:
            out.append("Loopback Control to a peer that does not advertise remote loopback")
    elif name == "variable_request":
        if passive:
            out.append("Variable Request from a Passive DTE")
        if peer_config is not None and not peer_config & _VARIABLE_RETRIEVAL:
            out.append("Variable Request to a peer that does not advertise variable retrieval")
    elif name == "variable_response" and own_config is not None and not own_config & _VARIABLE_RETRIEVAL:
        out.append("Variable Response from a DTE that does not advertise variable retrieval")
    return out


def revision_increased(old: InfoTlv, new: InfoTlv) -> bool:
    """57.5.2.1: the Revision field grows (modulo 2**16) whenever the Local TLV's content changes.

    The caller asks only when the content changed.  Caveat: across a capture gap the
    device may have restarted from revision 0, so the observer does not ask then.
    """
    return 0 < (new.revision - old.revision) & 0xFFFF < 0x8000


def must_send(passive: bool, flags: int | None, peer_talked: bool) -> bool:
    """Whether a speaker had to send during a silence (what `silence` holds it to).

    57.3.2.2: an Active DTE sends at least a keep-alive every pdu_timer period; a Passive
    DTE waits for its peer (PASSIVE_WAIT) and answers only a peer that talks:
    `peer_talked` says the peer was heard for longer than the lost-link time into the
    silence.  A DTE that set Dying Gasp said it was going away (57.4.2.1).  Caveat: the
    mode and flags are the last seen, perhaps before a capture gap.
    """
    if flags is not None and flags & _DYING_GASP:
        return False
    return not passive or peer_talked


def silence(heard: float, limits: Limits) -> tuple[str, str] | None:
    """The finding (kind, detail) for a recorded stretch of `heard` seconds without a speaker's frame.

    57.3.2.2: a DTE that must send sends an OAMPDU at least every pdu_timer period, so
    two of its frames are never more than `Limits.keepalive_limit` apart
    (``keepalive_late``); after the lost-link time without one its peer restarts
    Discovery (``silence``).  `heard` counts only what the capture recorded: a stretch
    ends at a capture gap (no frame of anybody for longer than the keep-alive limit),
    so a late keep-alive is a finding only when something else was heard meanwhile.
    Caveats: two speakers that stop at once look like a capture gap; whether the
    speaker had to send (Active, or Passive with a talking peer; not after a Dying
    Gasp) is the caller's to say for ``silence``.
    """
    if heard <= limits.keepalive_limit:
        return None
    if heard <= limits.lost_link:
        return "keepalive_late", f"no OAMPDU for more than {limits.keepalive_limit:g} s"
    return "silence", f"no OAMPDU for more than the lost-link time ({limits.lost_link:g} s)"


def ignored_lost_link(state: str | None, send_any_since: float | None, last_time: float, expired: float) -> bool:
    """57.3.2.1: a DTE whose peer is silent leaves SEND_ANY when its local_lost_link_timer runs out.

    `expired` is when the timer ran out (the peer's last frame, or the end of the latest
    capture gap, plus the lost-link time); the DTE ignored it when it was in SEND_ANY
    (Local and Remote Stable) before then and still is in a frame after then.  Checked
    while the silence lasts, as soon as the DTE is heard after `expired`.  Caveat: a DTE
    that went through Discovery again unseen, within a capture gap, is not flagged.
    """
    return state == "SEND_ANY" and send_any_since is not None and send_any_since <= expired and last_time > expired


def information_tlvs(flags: int, tlvs: Sequence[Any]) -> tuple[InfoTlv | None, InfoTlv | None, list[tuple[str, str]]]:
    """An Information OAMPDU's Local and Remote TLVs (the first of each), and what is wrong with its TLVs.

    57.4.3.1 and 57.3.2.1: an Information OAMPDU carries at most one Local and one
    Remote Information TLV, no reserved TLV type, and a Local TLV unless it is the Link
    Fault form (Link Fault flag, no TLVs: ``local_pdu = LF_INFO``), which carries none.
    Problems are (finding kind, detail).  Caveat: none, a frame shows it all.
    """
    local: InfoTlv | None = None
    remote: InfoTlv | None = None
    locals_ = remotes = 0
    problems: list[tuple[str, str]] = []
    for tlv in tlvs:
        if type(tlv) is InfoTlv:
            if tlv.type == InfoTlvType.LOCAL:
                locals_ += 1
                local = local or tlv
            else:
                remotes += 1
                remote = remote or tlv
        elif type(tlv) is UnknownTlv:
            problems.append(("tlv_not_allowed", f"reserved TLV type {tlv.type:#04x} in an Information OAMPDU"))
    if flags & _LINK_FAULT and tlvs:
        what = "+".join(k for k, n in (("Local", locals_), ("Remote", remotes)) if n) or "other"
        problems.append(("link_fault_with_tlvs", f"Link Fault flag with {what} TLVs"))
    if local is None and not (flags & _LINK_FAULT and not tlvs):
        detail = "Remote Information TLV without a Local one" if remote else "no Local Information TLV"
        problems.append(("missing_local_tlv", detail))
    if locals_ > 1 or remotes > 1:
        problems.append(("tlv_not_allowed", "more than one Local or Remote Information TLV"))
    return local, remote, problems


def remote_differences(said: tuple[Any, ...], expected: tuple[Any, ...]) -> str:
    """How a Remote Information TLV differs from the peer's Local one ("": it does not), from
    what each says (`information`).

    57.4.3.1: the Remote TLV repeats the last Local TLV received from the peer, field for
    field.  Caveat: the peer's Local TLV may have changed a moment ago (the observer looks
    again at the next frame), or unseen within a capture gap (it waits for the peer's
    next frame).
    """
    fields = zip(INFORMATION_FIELDS, said, expected, strict=True)
    return ", ".join([f"{name} {a} != {b}" for name, a, b in fields if a != b])  # a list: joined faster


def changed_fields(old: InfoTlv, new: InfoTlv) -> list[str]:
    """The content fields of a Local Information TLV that differ (all but the revision)."""
    before, after = _content(old), _content(new)
    if before == after:  # the usual case (a new revision alone, or a TLV seen again), in C
        return []
    return [name for name, a, b in zip(_TLV_FIELDS, before, after, strict=True) if a != b]
