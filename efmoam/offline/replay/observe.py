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
Information OAMPDU in time) costs a few attribute operations per frame and no decoding:
the frame is compared octet for octet with the speaker's last one.  A frame that is news
is decoded once per distinct content (`Observer._decode`: a bounded memo; news recurs, as
a peer alternating between two frames or a session replayed), and the timeline is
written as it happens, straight from what each entry says (`lines`), never kept.

Trimmed captures: a stretch with no frame at all for longer than the keep-alive limit is
a capture gap for every rule (`Observer._capture_gap`); a speaker's silence is judged
stretch by stretch between gaps, and the peer of a silent speaker is held to its lost-link
timer while the silence lasts (`Interface.silence_deadline`, one comparison per frame).

Where things live: this module is the per-frame loop (`Observer.run`, kept inlined, in
locals), the analysis of a frame that is news (`Observer._slow`), and the bookkeeping that
decides when a rule applies; `speaker` holds what is known of a speaker and an interface,
and the summary; `timeline` counts findings and streams the timeline, as `lines` renders
it (text or JSON); `discovery` tracks the Discovery state and the Local/Remote TLVs,
`loopbacks` the loopbacks, `events` the Event Notifications and the other codes,
`silences` the timers (late keep-alives, silences, lost-link); `rules` holds the Clause 57
rules as named functions, each stating its clause and its caveats on trimmed captures.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from efmoam.offline.capture import CaptureRecord
from efmoam.offline.decode import ETHERNET, JsonObject
from efmoam.offline.replay import discovery, events, loopbacks, rules, silences
from efmoam.offline.replay.findings import Finding, Limits
from efmoam.offline.replay.lines import TEXT, LineFormat
from efmoam.offline.replay.rules import implausibilities
from efmoam.offline.replay.speaker import (
    ACTIVE_SEND_LOCAL,
    CODE_NAMES,
    FAULT,
    SEND_ANY,
    SEND_LOCAL_REMOTE,
    SEND_LOCAL_REMOTE_OK,
    Interface,
    Speaker,
    infer_state,
    relative_time,
    shown_state,
    speaker_summary,
)
from efmoam.offline.replay.timeline import Entry, Line, Timeline
from pdu import Code, DecodeError, Information, Oampdu, decode
from pdu.enums import HEADER_LENGTH, MIN_FRAME_LENGTH, SLOW_PROTOCOLS_ETHERTYPE

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

_ETHERTYPE = SLOW_PROTOCOLS_ETHERTYPE.to_bytes(2, "big")
_FLAGS_CHECKED = rules.FLAGS_CHECKED
_INFORMATION = int(Code.INFORMATION)
_EPSILON = 1e-6  # seconds: timestamps written with microseconds
_RECENT = 4  # speakers per interface whose steady frame is compared before decoding
_DECODED = 256  # distinct frames whose OAMPDU is kept (then forgotten all at once; more costs the
# frames that never recur: 1,024 cost 5 % on a capture of all-distinct frames)

#: capture gaps the summary lists (the timeline has every one)
MAX_GAPS = 1000


@attrs.define
class Counters:
    """What the observer has read."""

    records: int = 0
    malformed: int = 0
    not_oam: int = 0
    not_ethernet: int = 0


class Observer:
    """Reconstructs the speakers of a capture, frame by frame, in capture order.

    `run` takes capture records (it may be called several times, for example once per
    frame by play mode); `finish` runs the checks that need the end of the capture;
    `summary` gives the per-speaker report.  `on_entry`, when given, receives every
    timeline entry as it happens (a JSON-ready dict with ``frame``, ``time``,
    ``speaker`` and ``what``); `on_line`, instead, receives each as its line in
    `line_format` (`lines.TEXT`, or `lines.json_format()`).
    """

    def __init__(
        self,
        limits: Limits | None = None,
        on_entry: Entry | None = None,
        on_line: Line | None = None,
        line_format: LineFormat = TEXT,
    ) -> None:
        self.limits = limits or Limits()
        self._gap_limit = self.limits.keepalive_limit
        self.on_entry = on_entry
        self.counters = Counters()
        self.start: float | None = None
        self.end: float | None = None
        self.gaps: list[JsonObject] = []
        self.gaps_dropped = 0
        self._interfaces: dict[int, Interface] = {}
        self._decoded: dict[bytes, Oampdu] = {}  # frame -> its OAMPDU, for news that recurs
        self._timeline = Timeline(on_entry, on_line, line_format)
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
                    silences.silent_speakers(self._timeline, limits, iface, record)
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
                        finding.repeat(record.number, t)
                speaker.last_time = t
                speaker.last_frame = record.number
        finally:
            counters.records += count
            if count:
                self.end = t

    def _interface(self, record: CaptureRecord) -> Interface:
        if self.start is None:
            self.start = self._timeline.start = record.time
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
                pdu = self._decode(record.data)
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
            if t - speaker.last_time > self._gap_limit:  # what check_silence looks at first
                silences.check_silence(self._timeline, self.limits, iface, speaker, record)
            self._check_rate(speaker, record)
        if speaker.repeats:
            speaker.flush()
        counts = speaker.counts
        if pdu is None:  # the steady frame, late
            counts[_INFORMATION] = counts.get(_INFORMATION, 0) + 1
            for finding in speaker.repeat_findings:
                finding.repeat(number, t)
        else:
            counts[pdu.code] = counts.get(pdu.code, 0) + 1
            self._analyse(iface, speaker, record, pdu)
        speaker.last_time = t
        speaker.last_frame = number

    def _decode(self, data: bytes) -> Oampdu:
        """`pdu.decode`, with a memo: news recurs (a peer alternating between two frames, an
        Event Notification repeated, a session replayed).  Malformed frames are not kept."""
        pdu = self._decoded.get(data)
        if pdu is None:
            pdu = decode(data)
            if len(self._decoded) >= _DECODED:
                self._decoded.clear()
            self._decoded[data] = pdu
        return pdu

    def _new_speaker(self, iface: Interface, mac: str, record: CaptureRecord) -> Speaker:
        speaker = Speaker(mac, iface.id, record.number, record.time, self.limits.rate)
        iface.speakers[mac] = speaker
        iface.silence_deadline = min(iface.silence_deadline, record.time + self.limits.lost_link)
        self._check_rate(speaker, record)
        self._timeline.emit(speaker, record, "speaker", {"mac": mac, "interface": iface.id})
        return speaker

    # -- time --------------------------------------------------------------------------

    def _check_rate(self, speaker: Speaker, record: CaptureRecord) -> None:
        ring, i = speaker.ring, speaker.ring_index
        if record.time - ring[i] < self.limits.rate_period - _EPSILON:
            self._rate_exceeded(speaker, record)
        ring[i] = record.time
        speaker.ring_index = (i + 1) % len(ring)

    def _rate_exceeded(self, speaker: Speaker, record: CaptureRecord) -> None:
        """57.3.2.2: at most `Limits.rate` OAMPDUs in any one second (pdu_cnt).

        Caveat: none on trimmed captures (frames missing cannot make a burst).
        """
        span = record.time - speaker.ring[speaker.ring_index]
        self._timeline.find(
            speaker, record, "rate_exceeded", f"more than {self.limits.rate} OAMPDUs in one second", span=round(span, 6)
        )

    def _capture_gap(self, iface: Interface, record: CaptureRecord) -> None:
        """No frame at all on the interface for longer than the keep-alive limit before `record`.

        Taken as the capture not recording, for every rule (`silences.before_gap` judges
        the stretch that ends here; the next one is measured from `record`).
        """
        silences.before_gap(self._timeline, self.limits, iface)
        loopbacks.gap(iface)
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
        self._timeline.emit(None, record, "capture_gap", {"after_frame": iface.last_frame, "seconds": gap["seconds"]})

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
            silences.check_silence(self._timeline, self.limits, iface, speaker, record)
            self._check_rate(speaker, record)
        speaker.flush()
        speaker.counts["malformed"] = speaker.counts.get("malformed", 0) + 1
        detail = f"{error.reason.value}" + (f": {error.detail}" if error.detail else "")
        self._timeline.find(speaker, record, "malformed", detail, offset=error.offset)
        speaker.last_time = record.time
        speaker.last_frame = record.number

    def _analyse(self, iface: Interface, speaker: Speaker, record: CaptureRecord, pdu: Oampdu) -> None:
        """A frame that is not a repeat of the speaker's last one."""
        timeline = self._timeline
        repeat: list[Finding] = []
        flags = int(pdu.flags)
        events.flag_changes(timeline, speaker, record, flags)
        information = type(pdu) is Information
        steady = False
        if information:
            steady = self._information(iface, speaker, record, pdu, repeat)  # type: ignore[arg-type]
        else:
            events.other(timeline, iface, speaker, record, pdu, repeat)
        speaker.flags = flags
        length = record.original_length
        if length < MIN_FRAME_LENGTH:
            name = CODE_NAMES.get(pdu.code, "unsupported")
            repeat.append(timeline.find(speaker, record, "short_frame", f"{name} OAMPDU of {length} octets"))
        if flags & _FLAGS_CHECKED:
            for detail in rules.flag_problems(flags):
                repeat.append(timeline.find(speaker, record, "invalid_flags", detail))
        if information:
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

    def _information(
        self, iface: Interface, speaker: Speaker, record: CaptureRecord, pdu: Information, repeat: list[Finding]
    ) -> bool:
        """Check an Information OAMPDU and follow the speaker; False when a repeat must be looked at again."""
        timeline = self._timeline
        flags = int(pdu.flags)
        local, remote, problems = rules.information_tlvs(flags, pdu.tlvs)
        for kind, detail in problems:
            repeat.append(timeline.find(speaker, record, kind, detail))
        if local is not None:
            discovery.follow_local(timeline, iface, speaker, record, local)
        steady = True
        if remote is not None:
            steady = discovery.check_remote(timeline, self.limits, iface, speaker, record, remote, repeat)
        state = shown_state(flags, local is not None, remote is not None, bool(pdu.tlvs))
        if state is not None:
            discovery.set_state(timeline, speaker, record, state)
        if pdu.tlvs:
            events.end_marker(timeline, speaker, record, HEADER_LENGTH, repeat)
        return steady

    # -- the end -------------------------------------------------------------------------

    def finish(self) -> None:
        """Checks that need the end of the capture: speakers that stopped while their peer went on."""
        if self._finished:
            return
        self._finished = True
        for iface in self._interfaces.values():
            silences.judge_at_end(self._timeline, self.limits, iface)

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
