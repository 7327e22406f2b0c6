"""Observe mode's timing of silences: late keep-alives, silent speakers, peers that ignore them.

Design: functions over an `Interface` and its speakers, run by the observer only when
time says a rule may apply (a speaker back after more than a keep-alive, a frame after
`Interface.silence_deadline`, a capture gap, the end), never per steady frame; the
judgements are `rules`'.  Only what the capture recorded counts: a speaker's silence is
judged stretch by stretch between capture gaps (a stretch with no frame of anybody for
longer than the keep-alive limit), measured from its last frame or from the end of the
latest gap, whichever is later (`heard_silence`).
"""

from __future__ import annotations

from efmoam.offline.capture import CaptureRecord
from efmoam.offline.decode import ETHERNET
from efmoam.offline.replay import rules
from efmoam.offline.replay.findings import Limits
from efmoam.offline.replay.speaker import Interface, Speaker
from efmoam.offline.replay.timeline import Timeline

__all__ = ["before_gap", "check_silence", "heard_silence", "judge_at_end", "silent_speakers"]

_NEVER = float("inf")


def heard_silence(iface: Interface, speaker: Speaker, time: float) -> float:
    """How long the capture recorded the speaker saying nothing, up to `time`.

    Measured from its last frame or from the end of the latest capture gap, whichever
    is later: what a speaker sent while nothing was recorded is unknown.
    """
    return time - max(speaker.last_time, iface.gap_end)


def at_frame(iface: Interface, number: int, time: float) -> CaptureRecord:
    """A record standing for frame `number` at `time`, where a finding is shown."""
    return CaptureRecord(number, time, b"", 0, iface.id, ETHERNET)


def check_silence(
    timeline: Timeline, limits: Limits, iface: Interface, speaker: Speaker, record: CaptureRecord
) -> None:
    """The speaker's silence since its last frame, if longer than a keep-alive.

    Clause 57.3.2.2: a DTE that must send sends an OAMPDU at least every pdu_timer
    period, so two of its frames are never more than `Limits.keepalive_limit` apart
    (`keepalive_late`), and its peer restarts Discovery after the lost-link time
    (`silence`).  Only what the capture recorded counts: the silence is judged stretch
    by stretch between capture gaps (`before_gap` judges the stretch before a gap,
    this the one after the latest), so a late keep-alive is a finding only when
    something else was heard meanwhile.  Caveats on trimmed captures: frames sent in a
    gap are unknown, so a stretch is measured from the gap's end, not from the
    speaker's last frame; a silence longer than the lost-link time that a gap explains
    is a `capture_gap` finding, not a fault.
    """
    t = record.time
    gap = t - speaker.last_time
    if gap <= limits.keepalive_limit:
        return
    if speaker.silence_checked:
        speaker.silence_checked = False
        iface.silence_deadline = min(iface.silence_deadline, t + limits.lost_link)
    frames = (speaker.last_frame, record.number)
    heard = heard_silence(iface, speaker, t)
    if heard > limits.keepalive_limit:
        _judge(timeline, limits, iface, speaker, record, heard, frames)
    if gap > limits.lost_link:
        if heard <= limits.lost_link:
            timeline.find(
                speaker,
                record,
                "capture_gap",
                "the capture has no frames for longer than the lost-link time",
                frames=frames,
                seconds=round(gap, 6),
            )
        _forget(speaker)


def before_gap(timeline: Timeline, limits: Limits, iface: Interface) -> None:
    """Judge the stretch that ends where a capture gap begins (at `iface.last_time`).

    57.3.2.2: every speaker that must send would have sent within the keep-alive limit, so a
    stretch in which nobody sent anything is taken as the capture not recording
    (trimmed, or the capturing host busy), for every rule.  The caveat: two speakers that
    both stop sending at once are taken for a capture gap.
    """
    at = at_frame(iface, iface.last_frame, iface.last_time)
    silent_speakers(timeline, limits, iface, at)  # lost-link timers that ran out before the gap
    for speaker in iface.speakers.values():
        heard = heard_silence(iface, speaker, iface.last_time)
        if heard > limits.keepalive_limit:
            _judge(timeline, limits, iface, speaker, at, heard, (speaker.last_frame, iface.last_frame))


def _judge(
    timeline: Timeline,
    limits: Limits,
    iface: Interface,
    speaker: Speaker,
    record: CaptureRecord,
    heard: float,
    frames: tuple[int, ...],
) -> None:
    """A recorded stretch of `heard` seconds without a frame of the speaker (`rules.silence`)."""
    finding = rules.silence(heard, limits)
    if finding is not None and (finding[0] != "silence" or _should_send(limits, iface, speaker)):
        timeline.find(speaker, record, *finding, frames=frames, seconds=round(heard, 6))


def _should_send(limits: Limits, iface: Interface, speaker: Speaker) -> bool:
    """Whether the speaker had to send during its silence that began at `last_time` (`rules.must_send`)."""
    peer = iface.peer(speaker)
    peer_talked = peer is not None and peer.last_time - speaker.last_time > limits.lost_link
    return rules.must_send(speaker.mode == "passive", speaker.flags, peer_talked)


def silent_speakers(timeline: Timeline, limits: Limits, iface: Interface, record: CaptureRecord) -> None:
    """Hold every speaker silent for the lost-link time against its peer, while the silence lasts.

    Runs when `record` comes after `Interface.silence_deadline`; sets the next one.
    A speaker is checked once per silence (`Speaker.silence_checked`), as soon as its
    peer has been heard after the lost-link timer ran out (the capture is running).
    """
    t = record.time
    lost_link = limits.lost_link
    gap_end = iface.gap_end
    deadline = _NEVER
    for speaker in iface.speakers.values():  # once per lost-link time in the steady state: lean
        if speaker.silence_checked:
            continue
        last = speaker.last_time
        expired = (last if last > gap_end else gap_end) + lost_link
        if t > expired:
            expired = _silent_speaker(timeline, limits, iface, speaker, t, expired)
        if expired < deadline:  # noqa: PLR1730 - no call: this runs every few frames
            deadline = expired
    iface.silence_deadline = deadline


def _silent_speaker(
    timeline: Timeline, limits: Limits, iface: Interface, speaker: Speaker, t: float, expired: float
) -> float:
    """`speaker` silent since `expired` - lost-link time, at `t`; when to look again."""
    peer = iface.peer(speaker)
    if peer is None or heard_silence(iface, peer, t) > limits.lost_link:
        speaker.silence_checked = True  # nobody to hold to it, or nobody is heard
    elif peer.last_time <= expired:
        return t  # the peer not heard since: look again at the next frame
    elif _should_send(limits, iface, speaker):  # shown at the peer's frame that ignored the timer
        _lost_link_noticed(timeline, peer, speaker, at_frame(iface, peer.last_frame, peer.last_time), expired)
        speaker.silence_checked = True
    else:
        speaker.silence_checked = True
    return _NEVER


def _lost_link_noticed(
    timeline: Timeline, peer: Speaker, silent: Speaker, record: CaptureRecord, expired: float
) -> None:
    """The peer of a speaker silent since `expired` - lost-link time (`rules.ignored_lost_link`).

    57.3.2.1: a DTE whose peer is silent for the lost-link time leaves SEND_ANY.  Caveat
    on trimmed captures: a DTE that went through Discovery again within a gap is not
    flagged.
    """
    if rules.ignored_lost_link(peer.state, peer.send_any_since, peer.last_time, expired):
        timeline.find(
            peer,
            record,
            "lost_link_ignored",
            f"stayed in SEND_ANY while {silent.id} was silent for longer than the lost-link time",
            frames=(silent.last_frame, peer.last_frame),
        )


def judge_at_end(timeline: Timeline, limits: Limits, iface: Interface) -> None:
    """At the end of the capture: speakers that stopped while their peer went on.

    57.3.2.2, as `check_silence`: a speaker silent for longer than the lost-link time
    while its peer was still heard, if it had to send (``silence``), and its peer held
    to its lost-link timer if that was not done while the silence lasted.  Caveat: a
    capture that ends is not a gap; a speaker that stops shortly before the end is not
    judged (its silence is shorter than the lost-link time).
    """
    for speaker in iface.speakers.values():
        speaker.flush()
        peer = iface.peer(speaker)
        if peer is None:
            continue
        silent = peer.last_time - speaker.last_time
        heard = heard_silence(iface, speaker, peer.last_time)
        if heard > limits.lost_link and _should_send(limits, iface, speaker):
            record = at_frame(iface, peer.last_frame, peer.last_time)
            timeline.find(
                speaker,
                record,
                "silence",
                f"stopped sending while {peer.id} went on for more than the lost-link time",
                frames=(speaker.last_frame, peer.last_frame),
                seconds=round(silent, 6),
            )
            if not speaker.silence_checked:
                expired = max(speaker.last_time, iface.gap_end) + limits.lost_link
                _lost_link_noticed(timeline, peer, speaker, record, expired)


def _forget(speaker: Speaker) -> None:
    """After a long silence: the peer restarted Discovery, the speaker may have restarted.

    An open loopback is kept: its end may still come, and what was seen of it stays.
    """
    speaker.local = speaker.prev_local = None
    speaker.last_event = speaker.last_event_entry = None
    speaker.totals = {}
    speaker.steady = None
