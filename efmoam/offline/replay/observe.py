"""Observe mode: reconstruct every OAM speaker of a capture and hold it to Clause 57.

A speaker is a source MAC on one capture interface.  From the OAMPDUs it sends,
`Observer` infers its Discovery state over time (from its flags and Information TLVs),
its revisions and capabilities, the Event Notifications it sends (link events decoded by
the IEEE numbering), its flag events, loopback and variable retrieval exchanges, and the
findings: what it does that Clause 57 does not allow (`findings.KINDS`), each with the
frame numbers that show it.

How the state is inferred (a speaker only shows what it sends):

* Link Fault flag and no TLVs: FAULT (``local_pdu = LF_INFO``);
* a Local Information TLV alone: ACTIVE_SEND_LOCAL;
* Local and Remote TLVs: SEND_LOCAL_REMOTE while Local Stable is clear,
  SEND_LOCAL_REMOTE_OK with Local Stable, SEND_ANY with Local and Remote Stable;
* a fall back to ACTIVE_SEND_LOCAL from a later state went through FAULT (the only way
  back), recorded as an inferred FAULT.

PASSIVE_WAIT sends nothing and is never seen.  OAMPDUs other than Information are only
allowed in SEND_ANY; they do not change the inferred state.

Memory does not grow with the capture: findings are aggregated by kind and detail, and
the per-speaker lists of states, revisions and events are capped (the timeline, streamed
to a callback, has everything).  The steady state (a speaker repeating its last
Information OAMPDU in time) costs a few attribute operations per frame: `PeerDecoder`
returns the very same object for an identical frame.

Trimmed captures: a stretch with no frame at all for longer than the keep-alive limit is
a capture gap for every rule (`Observer._capture_gap`); a speaker's silence is judged
stretch by stretch between gaps, and the peer of a silent speaker is held to its lost-link
timer while the silence lasts (`Interface.silence_deadline`, one comparison per frame).

Where things live: this module is the per-frame loop (`Observer.run`, kept inlined, in
locals) and the bookkeeping that decides when a rule applies and counts its findings;
`speaker` holds what is known of a speaker and an interface, and the summary; `rules`
holds the Clause 57 rules as named functions, each stating its clause and its caveats on
trimmed captures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import attrs

from efmoam.offline.capture import CaptureRecord
from efmoam.offline.decode import ETHERNET, JsonObject, pdu_to_dict, tlv_to_dict
from efmoam.offline.replay import rules
from efmoam.offline.replay.findings import Finding, Limits
from efmoam.offline.replay.rules import implausibilities
from efmoam.offline.replay.speaker import (
    ACTIVE_SEND_LOCAL,
    AFTER_DISCOVERY,
    CODE_NAMES,
    FAULT,
    SEND_ANY,
    SEND_LOCAL_REMOTE,
    SEND_LOCAL_REMOTE_OK,
    Interface,
    Speaker,
    capabilities,
    infer_state,
    loopback_state,
    relative_time,
    speaker_summary,
)
from pdu import (
    CRITICAL_FLAGS,
    Code,
    DecodeError,
    EventNotification,
    Flag,
    Information,
    InfoTlv,
    LinkEventTlv,
    LoopbackCommand,
    LoopbackControl,
    Oampdu,
    OrgSpecificPdu,
    PeerDecoder,
    UnknownTlv,
    UnsupportedPdu,
    VariableRequest,
    VariableResponse,
    format_oui,
)
from pdu.enums import HEADER_LENGTH, MAX_OAMPDU_SIZE, MIN_FRAME_LENGTH, SLOW_PROTOCOLS_ETHERTYPE

__all__ = [
    "ACTIVE_SEND_LOCAL",
    "CODE_NAMES",
    "FAULT",
    "SEND_ANY",
    "SEND_LOCAL_REMOTE",
    "SEND_LOCAL_REMOTE_OK",
    "Observer",
    "Speaker",
    "implausibilities",
    "infer_state",
    "speaker_summary",
]

_LOOPBACK_NAMES = {int(c): c.name.lower() for c in LoopbackCommand}
_PARSER_NAMES = ("fwd", "lb", "discard", "rsvd")
_MUX_NAMES = ("fwd", "discard")

_ETHERTYPE = SLOW_PROTOCOLS_ETHERTYPE.to_bytes(2, "big")
_CRITICAL = int(CRITICAL_FLAGS)
_CRITICAL_NAMES = (
    (int(Flag.LINK_FAULT), "link_fault"),
    (int(Flag.DYING_GASP), "dying_gasp"),
    (int(Flag.CRITICAL_EVENT), "critical_event"),
)
_FLAGS_CHECKED = rules.FLAGS_CHECKED
_EVENT_DATA_OFFSET = HEADER_LENGTH + 2  # after the sequence number
_MAX_FRAME = MAX_OAMPDU_SIZE - 4
_EPSILON = 1e-6  # seconds: timestamps written with microseconds
_NEVER = float("inf")
_RECENT = 4  # speakers per interface whose steady frame is compared before decoding

#: per-speaker caps on what the summary keeps (the timeline has everything)
MAX_STATES = 1000
MAX_EVENTS = 1000
MAX_REVISIONS = 1000
MAX_FINDINGS = 1000  #: distinct (kind, detail) per speaker; more are counted under "other"
MAX_GAPS = 1000

#: finding kinds whose every occurrence is a timeline line (the others: the first one)
_EVERY_OCCURRENCE = frozenset(
    {
        "keepalive_late",
        "silence",
        "capture_gap",
        "lost_link_ignored",
        "implausible_event",
        "duplicate_event_differs",
        "revision_not_increased",
        "code_not_allowed",
        "reserved_code",
    }
)


@attrs.define
class Counters:
    """What the observer has read."""

    records: int = 0
    malformed: int = 0
    not_oam: int = 0
    not_ethernet: int = 0


Entry = Callable[[JsonObject], None]


class Observer:
    """Reconstructs the speakers of a capture, frame by frame, in capture order.

    `run` takes capture records (it may be called several times, for example once per
    frame by play mode); `finish` runs the checks that need the end of the capture;
    `summary` gives the per-speaker report.  `on_entry`, when given, receives every
    timeline entry as it happens (a JSON-ready dict with ``frame``, ``time``,
    ``speaker`` and ``what``).
    """

    def __init__(self, limits: Limits | None = None, on_entry: Entry | None = None) -> None:
        self.limits = limits or Limits()
        self.on_entry = on_entry
        self.counters = Counters()
        self.start: float | None = None
        self.end: float | None = None
        self.gaps: list[JsonObject] = []
        self.gaps_dropped = 0
        self._interfaces: dict[int, Interface] = {}
        self._decoder = PeerDecoder()
        self._finished = False

    # -- the per-frame loop --------------------------------------------------------------

    def run(self, records: Iterable[CaptureRecord]) -> None:  # noqa: PLR0915 - the per-frame loop, in locals
        """Observe `records` (in capture order).

        Raises whatever iterating `records` raises (CaptureError, OSError), after
        observing the records before.
        """
        counters = self.counters
        ethertype = _ETHERTYPE
        limits = self.limits
        gap_limit = limits.keepalive_limit
        rate = limits.rate
        rate_period = limits.rate_period - _EPSILON
        slow = self._slow
        iface: Interface | None = None
        iface_id = -1
        recent: list[Speaker] = []
        deadline = float("inf")  # iface.silence_deadline, kept in a local
        count = 0
        t = 0.0
        try:
            for record in records:
                count += 1
                t = record.time
                if record.interface != iface_id or iface is None:
                    iface_id = record.interface
                    iface = self._interface(record)
                    recent = iface.recent
                    deadline = iface.silence_deadline
                if t - iface.last_time > gap_limit and iface.speakers:
                    self._capture_gap(iface, record)
                    deadline = iface.silence_deadline
                if t > deadline:
                    self._silent_speakers(iface, record)
                    deadline = iface.silence_deadline
                iface.last_time = t
                iface.last_frame = record.number
                data = record.data
                # the steady state: a speaker repeats its last Information OAMPDU, in time
                # (compared octet for octet, before any decoding; no object is made)
                for speaker in recent:
                    if data == speaker.steady:
                        break
                else:
                    speaker = None
                if speaker is None or t - speaker.last_time > gap_limit or record.linktype != ETHERNET:
                    if record.linktype != ETHERNET:
                        counters.not_ethernet += 1
                    elif not data.startswith(ethertype, 12) and len(data) >= 14:
                        counters.not_oam += 1  # another EtherType or a VLAN tag: not an OAMPDU
                    else:
                        slow(iface, speaker, record)
                        deadline = iface.silence_deadline  # a new or returning speaker lowers it
                    continue
                ring = speaker.ring
                i = speaker.ring_index
                if t - ring[i] < rate_period:
                    self._rate_exceeded(speaker, record)
                ring[i] = t
                speaker.ring_index = i + 1 if i + 1 < rate else 0
                speaker.repeats += 1
                if speaker.repeat_findings:
                    for finding in speaker.repeat_findings:
                        finding.add((record.number,), t)
                speaker.last_time = t
                speaker.last_frame = record.number
        finally:
            counters.records += count
            if count:
                self.end = t

    def _interface(self, record: CaptureRecord) -> Interface:
        if self.start is None:
            self.start = record.time
        iface = self._interfaces.get(record.interface)
        if iface is None:
            iface = self._interfaces[record.interface] = Interface(record.interface, record.time)
        return iface

    def _slow(self, iface: Interface, steady: Speaker | None, record: CaptureRecord) -> None:
        """Everything but the steady state: a new frame, a new speaker, a gap.

        `steady` is the speaker whose steady-state frame this is, when it came late.
        """
        t, number = record.time, record.number
        pdu: Oampdu | None = None
        speaker = steady
        if speaker is None:
            try:
                pdu = self._decoder.decode(record.data)
            except DecodeError as error:
                if error.reason.not_oampdu:
                    self.counters.not_oam += 1
                else:
                    self._malformed(iface, record, error)
                return
            speaker = iface.speakers.get(pdu.src)
        if speaker is None:
            assert pdu is not None
            speaker = self._new_speaker(iface, pdu.src, record)
        else:
            self._check_gap(iface, speaker, record)
            self._check_rate(speaker, record)
        speaker.flush()
        if pdu is None:  # the steady frame, late
            speaker.counts[Code.INFORMATION] = speaker.counts.get(Code.INFORMATION, 0) + 1
            for finding in speaker.repeat_findings:
                finding.add((number,), t)
        else:
            speaker.counts[pdu.code] = speaker.counts.get(pdu.code, 0) + 1
            self._analyse(iface, speaker, record, pdu)
        speaker.last_time = t
        speaker.last_frame = number

    def _new_speaker(self, iface: Interface, mac: str, record: CaptureRecord) -> Speaker:
        speaker = Speaker(mac, iface.id, record.number, record.time, self.limits.rate)
        iface.speakers[mac] = speaker
        iface.silence_deadline = min(iface.silence_deadline, record.time + self.limits.lost_link)
        self._check_rate(speaker, record)
        self._emit(speaker, record, "speaker", mac=mac, interface=iface.id)
        return speaker

    # -- time --------------------------------------------------------------------------

    def _check_rate(self, speaker: Speaker, record: CaptureRecord) -> None:
        ring, i = speaker.ring, speaker.ring_index
        if record.time - ring[i] < self.limits.rate_period - _EPSILON:
            self._rate_exceeded(speaker, record)
        ring[i] = record.time
        speaker.ring_index = (i + 1) % len(ring)

    def _rate_exceeded(self, speaker: Speaker, record: CaptureRecord) -> None:
        ring, i = speaker.ring, speaker.ring_index
        span = record.time - ring[i]
        self._find(
            speaker, record, "rate_exceeded", f"more than {self.limits.rate} OAMPDUs in one second", span=round(span, 6)
        )

    def _capture_gap(self, iface: Interface, record: CaptureRecord) -> None:
        """No frame at all on the interface for longer than the keep-alive limit.

        Every speaker that must send would have sent within the limit, so a stretch in
        which nobody sent anything is taken as the capture not recording (trimmed, or the
        capturing host busy), for every rule: a speaker's silence is judged stretch by
        stretch between gaps (`_heard_silence`); the stretch before this gap is judged
        here.  The caveat: two speakers that both stop sending at once are taken for a
        capture gap.
        """
        at = CaptureRecord(iface.last_frame, iface.last_time, b"", 0, iface.id, ETHERNET)
        self._silent_speakers(iface, at)  # lost-link timers that ran out before the gap
        for speaker in iface.speakers.values():
            heard = self._heard_silence(iface, speaker, iface.last_time)
            if heard > self.limits.keepalive_limit:
                self._judge_silence(iface, speaker, at, heard, (speaker.last_frame, iface.last_frame))
            if speaker.loop_open is not None:
                speaker.loop_open["gaps"] += 1
        iface.gap_start = iface.last_time
        iface.gap_end = record.time
        gap: JsonObject = {
            "interface": iface.id,
            "after_frame": iface.last_frame,
            "frame": record.number,
            "time": iface.last_time,
            "seconds": round(record.time - iface.last_time, 6),
        }
        if len(self.gaps) < MAX_GAPS:
            self.gaps.append(gap)
        else:
            self.gaps_dropped += 1
        self._emit(None, record, "capture_gap", after_frame=iface.last_frame, seconds=gap["seconds"])

    @staticmethod
    def _heard_silence(iface: Interface, speaker: Speaker, time: float) -> float:
        """How long the capture recorded the speaker saying nothing, up to `time`.

        Measured from its last frame or from the end of the latest capture gap,
        whichever is later: what a speaker sent while nothing was recorded is unknown.
        """
        return time - max(speaker.last_time, iface.gap_end)

    def _check_gap(self, iface: Interface, speaker: Speaker, record: CaptureRecord) -> None:
        """The speaker's silence since its last frame, if longer than a keep-alive.

        Clause 57.3.2.2: a DTE that must send sends an OAMPDU at least every pdu_timer
        period, so two of its frames are never more than `Limits.keepalive_limit` apart
        (`keepalive_late`), and its peer restarts Discovery after the lost-link time
        (`silence`).  Only what the capture recorded counts: the silence is judged stretch
        by stretch between capture gaps (`_capture_gap` judges the stretch before a gap,
        this the one after the latest), so a late keep-alive is a finding only when
        something else was heard meanwhile.  Caveats on trimmed captures: frames sent in a
        gap are unknown, so a stretch is measured from the gap's end, not from the
        speaker's last frame; a silence longer than the lost-link time that a gap explains
        is a `capture_gap` finding, not a fault.
        """
        limits = self.limits
        t = record.time
        gap = t - speaker.last_time
        if gap <= limits.keepalive_limit:
            return
        if speaker.silence_checked:
            speaker.silence_checked = False
            iface.silence_deadline = min(iface.silence_deadline, t + limits.lost_link)
        frames = (speaker.last_frame, record.number)
        heard = self._heard_silence(iface, speaker, t)
        if heard > limits.keepalive_limit:
            self._judge_silence(iface, speaker, record, heard, frames)
        if gap > limits.lost_link:
            if heard <= limits.lost_link:
                self._find(
                    speaker,
                    record,
                    "capture_gap",
                    "the capture has no frames for longer than the lost-link time",
                    frames=frames,
                    seconds=round(gap, 6),
                )
            self._forget(speaker)

    def _judge_silence(
        self, iface: Interface, speaker: Speaker, record: CaptureRecord, heard: float, frames: tuple[int, ...]
    ) -> None:
        """A recorded stretch of `heard` seconds without a frame of the speaker (`rules.silence`)."""
        finding = rules.silence(heard, self.limits)
        if finding is not None and (finding[0] != "silence" or self._should_send(iface, speaker)):
            self._find(speaker, record, *finding, frames=frames, seconds=round(heard, 6))

    def _should_send(self, iface: Interface, speaker: Speaker) -> bool:
        """Whether the speaker had to send during its silence that began at `last_time` (`rules.must_send`)."""
        peer = self._peer(iface, speaker)
        peer_talked = peer is not None and peer.last_time - speaker.last_time > self.limits.lost_link
        return rules.must_send(speaker.mode == "passive", speaker.flags, peer_talked)

    def _silent_speakers(self, iface: Interface, record: CaptureRecord) -> None:
        """Hold every speaker silent for the lost-link time against its peer, while the silence lasts.

        Runs when `record` comes after `Interface.silence_deadline`; sets the next one.
        A speaker is checked once per silence (`Speaker.silence_checked`), as soon as its
        peer has been heard after the lost-link timer ran out (the capture is running).
        """
        t = record.time
        lost_link = self.limits.lost_link
        gap_end = iface.gap_end
        deadline = _NEVER
        for speaker in iface.speakers.values():  # once per lost-link time in the steady state: lean
            if speaker.silence_checked:
                continue
            last = speaker.last_time
            expired = (last if last > gap_end else gap_end) + lost_link
            if t > expired:
                expired = self._silent_speaker(iface, speaker, t, expired)
            if expired < deadline:  # noqa: PLR1730 - no call: this runs every few frames
                deadline = expired
        iface.silence_deadline = deadline

    def _silent_speaker(self, iface: Interface, speaker: Speaker, t: float, expired: float) -> float:
        """`speaker` silent since `expired` - lost-link time, at `t`; when to look again."""
        peer = self._peer(iface, speaker)
        if peer is None or self._heard_silence(iface, peer, t) > self.limits.lost_link:
            speaker.silence_checked = True  # nobody to hold to it, or nobody is heard
        elif peer.last_time <= expired:
            return t  # the peer not heard since: look again at the next frame
        elif self._should_send(iface, speaker):  # shown at the peer's frame that ignored the timer
            at = CaptureRecord(peer.last_frame, peer.last_time, b"", 0, iface.id, ETHERNET)
            self._check_lost_link_noticed(peer, speaker, at, expired)
            speaker.silence_checked = True
        else:
            speaker.silence_checked = True
        return _NEVER

    def _check_lost_link_noticed(self, peer: Speaker, silent: Speaker, record: CaptureRecord, expired: float) -> None:
        """The peer of a speaker silent since `expired` - lost-link time (`rules.ignored_lost_link`)."""
        if rules.ignored_lost_link(peer.state, peer.send_any_since, peer.last_time, expired):
            self._find(
                peer,
                record,
                "lost_link_ignored",
                f"stayed in SEND_ANY while {silent.id} was silent for longer than the lost-link time",
                frames=(silent.last_frame, peer.last_frame),
            )

    def _forget(self, speaker: Speaker) -> None:
        """After a long silence: the peer restarted Discovery, the speaker may have restarted.

        An open loopback is kept: its end may still come, and what was seen of it stays.
        """
        speaker.local = speaker.prev_local = None
        speaker.last_event = speaker.last_event_entry = None
        speaker.totals = {}
        speaker.steady = None

    # -- frames ------------------------------------------------------------------------

    def _malformed(self, iface: Interface, record: CaptureRecord, error: DecodeError) -> None:
        self.counters.malformed += 1
        data = record.data
        if len(data) < 12:
            return
        mac = data[6:12].hex(":")
        speaker = iface.speakers.get(mac)
        if speaker is None:
            speaker = self._new_speaker(iface, mac, record)
        else:
            self._check_gap(iface, speaker, record)
            self._check_rate(speaker, record)
        speaker.flush()
        speaker.counts["malformed"] = speaker.counts.get("malformed", 0) + 1
        detail = f"{error.reason.value}" + (f": {error.detail}" if error.detail else "")
        self._find(speaker, record, "malformed", detail, offset=error.offset)
        speaker.last_time = record.time
        speaker.last_frame = record.number

    def _analyse(self, iface: Interface, speaker: Speaker, record: CaptureRecord, pdu: Oampdu) -> None:
        """A frame that is not a repeat of the speaker's last one."""
        repeat: list[Finding] = []
        flags = int(pdu.flags)
        self._flag_events(speaker, record, flags)
        steady = False
        if isinstance(pdu, Information):
            steady = self._information(iface, speaker, record, pdu, repeat)
        else:
            self._other(iface, speaker, record, pdu, repeat)
        speaker.flags = flags
        find = self._find
        length = record.original_length
        if length < MIN_FRAME_LENGTH:
            name = CODE_NAMES.get(pdu.code, "unsupported")
            repeat.append(find(speaker, record, "short_frame", f"{name} OAMPDU of {length} octets"))
        for detail in rules.flag_problems(flags) if flags & _FLAGS_CHECKED else ():
            repeat.append(find(speaker, record, "invalid_flags", detail))
        if isinstance(pdu, Information):
            speaker.repeat_findings = repeat
            if steady:
                self._steady(iface, speaker, record.data)
            else:
                speaker.steady = None
        elif speaker.steady is not None and speaker.steady[15:17] != record.data[15:17]:
            speaker.steady = None  # its flags changed: the next Information is news

    @staticmethod
    def _steady(iface: Interface, speaker: Speaker, data: bytes) -> None:
        """`data` is the frame whose repeats are the speaker's steady state."""
        speaker.steady = data
        recent = iface.recent
        if not recent or recent[0] is not speaker:
            if speaker in recent:
                recent.remove(speaker)
            recent.insert(0, speaker)
            del recent[_RECENT:]

    def _flag_events(self, speaker: Speaker, record: CaptureRecord, flags: int) -> None:
        old = speaker.flags or 0
        if (old ^ flags) & _CRITICAL:
            for bit, name in _CRITICAL_NAMES:
                if (old ^ flags) & bit:
                    self._event(
                        speaker,
                        record,
                        {"kind": "flag", "flag": name, "change": "raised" if flags & bit else "cleared"},
                    )

    def _end_marker(self, speaker: Speaker, record: CaptureRecord, offset: int, repeat: list[Finding]) -> None:
        data = record.data
        length = len(data)
        if length < record.original_length or length == MIN_FRAME_LENGTH or length + 2 > self._max_frame(speaker):
            return  # cut by the snapshot length, or no room for the marker
        if rules.tlvs_run_to_the_end(data, offset):
            code = CODE_NAMES[data[17]]
            repeat.append(
                self._find(
                    speaker, record, "missing_end_marker", f"{code} OAMPDU of {length} octets ends with its last TLV"
                )
            )

    @staticmethod
    def _max_frame(speaker: Speaker) -> int:
        if speaker.advertised is None:
            return _MAX_FRAME
        return min(_MAX_FRAME, speaker.advertised.max_pdu_size - 4)

    def _information(
        self, iface: Interface, speaker: Speaker, record: CaptureRecord, pdu: Information, repeat: list[Finding]
    ) -> bool:
        """Check an Information OAMPDU and follow the speaker; False when a repeat must be looked at again."""
        local, remote, problems = rules.information_tlvs(int(pdu.flags), pdu.tlvs)
        for kind, detail in problems:
            repeat.append(self._find(speaker, record, kind, detail))
        if local is not None:
            self._local(iface, speaker, record, local)
        steady = True
        if remote is not None:
            steady = self._remote(iface, speaker, record, remote, repeat)
        state = infer_state(pdu)
        if state is not None:
            self._set_state(speaker, record, state)
        if pdu.tlvs:
            self._end_marker(speaker, record, HEADER_LENGTH, repeat)
        return steady

    def _local(self, iface: Interface, speaker: Speaker, record: CaptureRecord, local: InfoTlv) -> None:
        """Follow the speaker's Local Information TLV: revisions, capabilities, loopback."""
        old = speaker.local
        if old == local:
            return
        t = record.time
        if old is None:
            changed = [] if speaker.advertised is None else self._changed(speaker.advertised, local)
            if speaker.advertised is None or changed or local.revision != speaker.advertised.revision:
                self._revision(speaker, record, local, changed)
        else:
            changed = self._changed(old, local)
            if changed and not rules.revision_increased(old, local):
                self._find(
                    speaker,
                    record,
                    "revision_not_increased",
                    f"{', '.join(changed)} changed; revision {old.revision} -> {local.revision}",
                )
            self._revision(speaker, record, local, changed)
        if speaker.advertised is not None:  # a new Local TLV (or the first after a gap)
            for other in iface.speakers.values():
                if other is not speaker:
                    other.steady = None  # its Remote TLV must be checked against the new one
        before = speaker.advertised
        if before is None or loopback_state(before) != loopback_state(local):
            self._loopback_change(iface, speaker, record, local, first=before is None)
        speaker.prev_local = old
        speaker.local = speaker.advertised = local
        speaker.local_since = t
        speaker.local_frame = record.number

    @staticmethod
    def _changed(old: InfoTlv, new: InfoTlv) -> list[str]:
        return rules.changed_fields(old, new)

    def _revision(self, speaker: Speaker, record: CaptureRecord, local: InfoTlv, changed: list[str]) -> None:
        entry: JsonObject = {"revision": local.revision, "frame": record.number, "time": record.time}
        if changed:
            entry["changed"] = changed
        if not speaker.revisions:
            entry.update(capabilities(local))
        if len(speaker.revisions) < MAX_REVISIONS:
            speaker.revisions.append(entry)
        self._emit(speaker, record, "revision" if speaker.advertised else "capabilities", **entry)

    def _loopback_change(
        self, iface: Interface, speaker: Speaker, record: CaptureRecord, local: InfoTlv, first: bool
    ) -> None:
        state = loopback_state(local)
        if first and state == "no_loopback":
            return
        self._event(
            speaker,
            record,
            {
                "kind": "loopback_state",
                "state": state,
                "parser": _PARSER_NAMES[local.parser_action & 3],
                "mux": _MUX_NAMES[local.mux_action & 1],
            },
        )
        peer = self._peer(iface, speaker)
        sequence = peer.loop_open if peer is not None else None
        if sequence is None:
            return
        if state == "local_loopback" and sequence.get("looping_frame") is None:
            sequence["looping_frame"] = record.number
        elif state == "no_loopback" and sequence.get("looping_frame") is not None:
            sequence["ended_frame"] = record.number
            assert peer is not None
            peer.loop_open = None

    def _remote(
        self, iface: Interface, speaker: Speaker, record: CaptureRecord, remote: InfoTlv, repeat: list[Finding]
    ) -> bool:
        """Check a Remote Information TLV against the peer's Local TLV; False: look again at the next frame."""
        peer = self._peer(iface, speaker)
        if peer is None:
            return True  # the peer is not in the capture
        if peer.last_time < iface.gap_end:
            return False  # the peer's Local TLV is from before a capture gap: wait for its next one
        if peer.advertised is None:
            repeat.append(
                self._find(
                    speaker, record, "tlv_not_allowed", "Remote Information TLV before the peer sent a Local one"
                )
            )
            return False
        expected = peer.local
        if expected is None or rules.same_information(remote, expected):
            return True
        previous = peer.prev_local
        recent = record.time - peer.local_since <= self.limits.keepalive_limit
        if recent and previous is not None and rules.same_information(remote, previous):
            return False  # the change may still be on its way: look again
        differences = rules.remote_differences(remote, expected)
        repeat.append(
            self._find(
                speaker,
                record,
                "remote_mismatch",
                f"Remote TLV differs from {peer.id}'s Local TLV: {differences}",
                peer_frame=peer.local_frame,
            )
        )
        return True

    def _set_state(self, speaker: Speaker, record: CaptureRecord, state: str, inferred: bool = False) -> None:
        old = speaker.state
        if state == old:
            return
        if state == ACTIVE_SEND_LOCAL and old in AFTER_DISCOVERY:
            self._set_state(speaker, record, FAULT, inferred=True)  # the only way back is through FAULT
        t = record.time
        speaker.state = state
        entry: JsonObject = {"state": state, "frame": record.number, "time": t}
        if inferred:
            entry["inferred"] = True
        if state == SEND_ANY:
            speaker.send_any_since = t
            if speaker.send_any_time is None and speaker.discovery_start is not None:
                speaker.send_any_time = t
                entry["after"] = round(t - speaker.discovery_start, 6)
        elif speaker.discovery_start is None and speaker.send_any_time is None:
            speaker.discovery_start = t
        if len(speaker.states) < MAX_STATES:
            speaker.states.append(entry)
        else:
            speaker.states_dropped += 1
        self._emit(speaker, record, "state", **{k: v for k, v in entry.items() if k not in ("frame", "time")})

    # -- OAMPDUs other than Information --------------------------------------------------

    def _other(
        self, iface: Interface, speaker: Speaker, record: CaptureRecord, pdu: Oampdu, repeat: list[Finding]
    ) -> None:
        name = CODE_NAMES.get(pdu.code)
        if isinstance(pdu, UnsupportedPdu) or name is None:
            self._find(speaker, record, "reserved_code", f"code {pdu.code:#04x}")
            return
        peer = self._peer(iface, speaker)
        peer_local = peer.advertised if peer is not None else None
        own = speaker.advertised
        for detail in rules.code_problems(
            name,
            speaker.state,
            speaker.mode == "passive",
            int(own.oam_config) if own is not None else None,
            int(peer_local.oam_config) if peer_local is not None else None,
        ):
            self._find(speaker, record, "code_not_allowed", detail)
        if isinstance(pdu, EventNotification):
            self._event_notification(speaker, record, pdu, repeat)
        elif isinstance(pdu, LoopbackControl):
            self._loopback_command(speaker, record, pdu)
        elif isinstance(pdu, VariableRequest):
            descriptors = pdu_to_dict(pdu)["descriptors"]
            self._event(speaker, record, {"kind": "variable_request", "descriptors": descriptors})
        elif isinstance(pdu, VariableResponse):
            containers = pdu_to_dict(pdu)["containers"]
            self._event(speaker, record, {"kind": "variable_response", "containers": containers})
        elif isinstance(pdu, OrgSpecificPdu):
            # counted and shown, never acted on: only its flags (the speaker's) are read
            speaker.org_specific[pdu.oui] = speaker.org_specific.get(pdu.oui, 0) + 1
            self._event(
                speaker, record, {"kind": "organization_specific", "oui": format_oui(pdu.oui), "value": pdu.value.hex()}
            )

    def _event_notification(
        self, speaker: Speaker, record: CaptureRecord, pdu: EventNotification, repeat: list[Finding]
    ) -> None:
        for tlv in pdu.tlvs:
            if type(tlv) is UnknownTlv:
                repeat.append(
                    self._find(
                        speaker,
                        record,
                        "tlv_not_allowed",
                        f"reserved TLV type {tlv.type:#04x} in an Event Notification",
                    )
                )
        if pdu.tlvs:
            self._end_marker(speaker, record, _EVENT_DATA_OFFSET, repeat)
        duplicate = rules.duplicate_event(speaker.last_event, pdu)
        speaker.last_event = pdu
        if duplicate == "duplicate":
            if speaker.last_event_entry is not None:
                speaker.last_event_entry["duplicates"] += 1
            self._emit(speaker, record, "duplicate_event", sequence=pdu.sequence)
            return
        if duplicate == "differs":
            self._find(speaker, record, "duplicate_event_differs", f"sequence {pdu.sequence} repeated with other TLVs")
        entry: JsonObject = {
            "kind": "event_notification",
            "sequence": pdu.sequence,
            "tlvs": [tlv_to_dict(tlv) for tlv in pdu.tlvs],
            "duplicates": 0,
        }
        speaker.last_event_entry = entry
        self._event(speaker, record, entry)
        for tlv in pdu.tlvs:
            if type(tlv) is LinkEventTlv:
                previous = speaker.totals.get(tlv.type)
                speaker.totals[tlv.type] = (tlv.error_running_total, tlv.event_running_total)
                totals = rules.running_totals(previous, tlv) if duplicate is None else []
                for detail in implausibilities(tlv) + totals:
                    self._find(speaker, record, "implausible_event", detail, sequence=pdu.sequence)

    def _loopback_command(self, speaker: Speaker, record: CaptureRecord, pdu: LoopbackControl) -> None:
        command = _LOOPBACK_NAMES.get(pdu.loopback_command, f"unknown_{pdu.loopback_command}")
        self._event(speaker, record, {"kind": "loopback_command", "command": command})
        if pdu.loopback_command == LoopbackCommand.ENABLE and speaker.loop_open is None:
            sequence: JsonObject = {
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
        elif pdu.loopback_command == LoopbackCommand.DISABLE and speaker.loop_open is not None:
            speaker.loop_open.setdefault("disable_frame", None)
            if speaker.loop_open["disable_frame"] is None:
                speaker.loop_open["disable_frame"] = record.number

    # -- helpers -----------------------------------------------------------------------

    @staticmethod
    def _peer(iface: Interface, speaker: Speaker) -> Speaker | None:
        """The other speaker on the link (the latest heard, if there are several)."""
        best: Speaker | None = None
        for other in iface.speakers.values():
            if other is not speaker and (best is None or other.last_time > best.last_time):
                best = other
        return best

    def _find(
        self,
        speaker: Speaker,
        record: CaptureRecord,
        kind: str,
        detail: str,
        frames: tuple[int, ...] | None = None,
        **extra: Any,
    ) -> Finding:
        """Count a finding; its first occurrence (and every one of the timed kinds) goes to the timeline."""
        key = (kind, detail)
        finding = speaker.findings.get(key)
        if finding is None:
            if len(speaker.findings) >= MAX_FINDINGS:
                key = (kind, "(more details not kept)")
                finding = speaker.findings.get(key)
            if finding is None:
                finding = speaker.findings[key] = Finding(*key)
        previous = finding.last_time
        first = finding.add(frames or (record.number,), record.time)
        if first or kind in _EVERY_OCCURRENCE or (kind == "rate_exceeded" and record.time - previous > 1.0):
            self._emit(speaker, record, "finding", kind=kind, detail=detail, **extra)
        return finding

    def _event(self, speaker: Speaker, record: CaptureRecord, event: JsonObject) -> None:
        event["frame"] = record.number
        event["time"] = record.time
        if len(speaker.events) < MAX_EVENTS:
            speaker.events.append(event)
        else:
            speaker.events_dropped += 1
        self._emit(speaker, record, "event", event=event)

    def _emit(self, speaker: Speaker | None, record: CaptureRecord, what: str, **fields: Any) -> None:
        """One timeline entry (`speaker` None: about the capture, not a speaker)."""
        if self.on_entry is not None:
            self.on_entry(
                {
                    "frame": record.number,
                    "time": record.time,
                    "t": self._relative(record.time),
                    "speaker": None if speaker is None else speaker.id,
                    "what": what,
                    **fields,
                }
            )

    def _relative(self, time: float) -> float:
        return round(time - (self.start or time), 6)

    # -- the end -------------------------------------------------------------------------

    def finish(self) -> None:
        """Checks that need the end of the capture: speakers that stopped while their peer went on."""
        if self._finished:
            return
        self._finished = True
        for iface in self._interfaces.values():
            for speaker in iface.speakers.values():
                speaker.flush()
                peer = self._peer(iface, speaker)
                if peer is None:
                    continue
                silent = peer.last_time - speaker.last_time
                heard = self._heard_silence(iface, speaker, peer.last_time)
                if heard > self.limits.lost_link and self._should_send(iface, speaker):
                    record = CaptureRecord(peer.last_frame, peer.last_time, b"", 0, iface.id, ETHERNET)
                    self._find(
                        speaker,
                        record,
                        "silence",
                        f"stopped sending while {peer.id} went on for more than the lost-link time",
                        frames=(speaker.last_frame, peer.last_frame),
                        seconds=round(silent, 6),
                    )
                    if not speaker.silence_checked:
                        expired = max(speaker.last_time, iface.gap_end) + self.limits.lost_link
                        self._check_lost_link_noticed(peer, speaker, record, expired)

    @property
    def speakers(self) -> list[Speaker]:
        """Every speaker, by interface then first appearance."""
        return [s for iface in sorted(self._interfaces) for s in self._interfaces[iface].speakers.values()]

    def finding_total(self) -> int:
        return sum(f.count for s in self.speakers for f in s.findings.values())

    def summary(self) -> JsonObject:
        """The report: counters, gaps and one summary per speaker (JSON-ready)."""
        self.finish()
        start = self.start or 0.0
        return {
            "limits": self.limits.to_dict(),
            "records": self.counters.records,
            "oampdus": sum(n for s in self.speakers for c, n in s.counts.items() if c != "malformed"),
            "malformed": self.counters.malformed,
            "not_oam": self.counters.not_oam,
            "not_ethernet": self.counters.not_ethernet,
            "start_time": self.start,
            "duration": round((self.end or start) - start, 6),
            "gaps": [relative_time(gap, start) for gap in self.gaps],
            "speakers": {s.id: speaker_summary(s, start) for s in self.speakers},
            "findings": self.finding_total(),
        }
