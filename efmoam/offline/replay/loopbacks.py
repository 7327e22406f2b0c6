"""Observe mode's tracking of remote loopback: who asked, when the peer looped, when it ended.

Design: a loopback is one JSON-ready dict per Enable command (`Speaker.loopbacks`,
capped), open on its initiator (`Speaker.loop_open`) until the peer's State field shows
it ended; functions over the speakers that the observer calls for Loopback Control
OAMPDUs, for Local TLVs whose State field changed, and at capture gaps.  What was not seen
stays None (the report says "not captured").
"""

from __future__ import annotations

from efmoam.offline.capture import CaptureRecord
from efmoam.offline.decode import JsonObject
from efmoam.offline.replay.speaker import Interface, Speaker, loopback_state
from efmoam.offline.replay.timeline import MAX_EVENTS, Timeline
from pdu import InfoTlv, LoopbackCommand, LoopbackControl

__all__ = ["command", "gap", "state_change"]

_COMMAND_NAMES = {int(c): c.name.lower() for c in LoopbackCommand}
_PARSER_NAMES = ("fwd", "lb", "discard", "rsvd")
_MUX_NAMES = ("fwd", "discard")
_ENABLE, _DISABLE = int(LoopbackCommand.ENABLE), int(LoopbackCommand.DISABLE)


def command(timeline: Timeline, speaker: Speaker, record: CaptureRecord, pdu: LoopbackControl) -> None:
    """A Loopback Control OAMPDU: an Enable opens a loopback, a Disable marks the open one.

    57.2.11 and 57.4.3.5: the initiator sends Enable, the peer loops (its State field
    shows it) until a Disable.  A second Enable while one is open, or a Disable with none
    open, changes nothing (the peer ignores it too).  Caveat on trimmed captures: an
    Enable sent within a capture gap is not seen, so neither is its loopback.
    """
    code = pdu.loopback_command
    timeline.event(
        speaker, record, {"kind": "loopback_command", "command": _COMMAND_NAMES.get(code, f"unknown_{code}")}
    )
    sequence = speaker.loop_open
    if code == _ENABLE and sequence is None:
        sequence = {
            "enable_frame": record.number,
            "time": record.time,
            "looping_frame": None,
            "disable_frame": None,
            "ended_frame": None,
            "gaps": 0,  # capture gaps while it was open: what happened in them is unknown
        }
        speaker.loop_open = sequence
        if len(speaker.loopbacks) < MAX_EVENTS:
            speaker.loopbacks.append(sequence)
    elif code == _DISABLE and sequence is not None and sequence.get("disable_frame") is None:
        sequence["disable_frame"] = record.number


def state_change(
    timeline: Timeline, iface: Interface, speaker: Speaker, record: CaptureRecord, local: InfoTlv, first: bool
) -> None:
    """The speaker's Local TLV shows another loopback state (its parser and multiplexer actions).

    57.2.11: the peer of the initiator loops once its State field shows the parser
    looping back (local_loopback), and the loopback ended once it shows forwarding again
    (no_loopback); that ends the initiator's open loopback.  A first Local TLV showing no
    loopback is not an event.  Caveat on trimmed captures: a change within a capture gap
    shows as the state after it; what it went through is unknown.
    """
    state = loopback_state(local)
    if first and state == "no_loopback":
        return
    timeline.event(
        speaker,
        record,
        {
            "kind": "loopback_state",
            "state": state,
            "parser": _PARSER_NAMES[local.parser_action & 3],
            "mux": _MUX_NAMES[local.mux_action & 1],
        },
    )
    peer = iface.peer(speaker)
    sequence = peer.loop_open if peer is not None else None
    if peer is None or sequence is None:
        return
    if state == "local_loopback" and sequence.get("looping_frame") is None:
        sequence["looping_frame"] = record.number
    elif state == "no_loopback" and sequence.get("looping_frame") is not None:
        sequence["ended_frame"] = record.number
        peer.loop_open = None


def gap(iface: Interface) -> None:
    """A capture gap: every open loopback counts it (what happened in it is unknown).

    An open loopback stays open across the gap: its end may still come, and what was
    seen of it stays.
    """
    for speaker in iface.speakers.values():
        sequence: JsonObject | None = speaker.loop_open
        if sequence is not None:
            sequence["gaps"] += 1
