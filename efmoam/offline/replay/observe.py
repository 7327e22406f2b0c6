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
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from efmoam.core.linkmon.kinds import BY_WIRE_TYPE, FACTS, MonitorKind
from efmoam.offline.capture import CaptureRecord
from efmoam.offline.decode import ETHERNET, JsonObject, flag_names, oam_config_names, pdu_to_dict, tlv_to_dict
from efmoam.offline.replay.findings import KINDS, Finding, Limits
from pdu import (
    CRITICAL_FLAGS,
    Code,
    DecodeError,
    EventNotification,
    EventTlvType,
    Flag,
    Information,
    InfoTlv,
    InfoTlvType,
    LinkEventTlv,
    LoopbackCommand,
    LoopbackControl,
    OamConfig,
    Oampdu,
    OrgSpecificPdu,
    ParserAction,
    PeerDecoder,
    UnknownTlv,
    UnsupportedPdu,
    VariableRequest,
    VariableResponse,
    format_oui,
)
from pdu.enums import HEADER_LENGTH, MAX_OAMPDU_SIZE, MIN_FRAME_LENGTH, SLOW_PROTOCOLS_ETHERTYPE

__all__ = ["CODE_NAMES", "Observer", "Speaker", "infer_state", "implausibilities"]

# The values of efmoam.core.DiscoveryState (importing the engine costs 0.1 s of start-up;
# a test checks that the names agree).
FAULT = "FAULT"
ACTIVE_SEND_LOCAL = "ACTIVE_SEND_LOCAL"
SEND_LOCAL_REMOTE = "SEND_LOCAL_REMOTE"
SEND_LOCAL_REMOTE_OK = "SEND_LOCAL_REMOTE_OK"
SEND_ANY = "SEND_ANY"
_AFTER_DISCOVERY = frozenset({SEND_LOCAL_REMOTE, SEND_LOCAL_REMOTE_OK, SEND_ANY})

#: code -> name, as ``efmoam decode`` names them; a reserved code is "unsupported"
CODE_NAMES = {int(code): code.name.lower() for code in Code}
_EVENT_NAMES = {int(t): t.name.lower() for t in EventTlvType}
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
_EVALUATING_AND_STABLE = int(Flag.LOCAL_EVALUATING | Flag.LOCAL_STABLE)
# plain ints: an IntFlag operand makes every & an enum operation
_LINK_FAULT, _DYING_GASP = int(Flag.LINK_FAULT), int(Flag.DYING_GASP)
_LOCAL_STABLE, _REMOTE_STABLE = int(Flag.LOCAL_STABLE), int(Flag.REMOTE_STABLE)
_ACTIVE, _LINK_EVENTS = int(OamConfig.ACTIVE), int(OamConfig.LINK_EVENTS)
_REMOTE_LOOPBACK, _VARIABLE_RETRIEVAL = int(OamConfig.REMOTE_LOOPBACK), int(OamConfig.VARIABLE_RETRIEVAL)
_RESERVED_FLAGS = 0xFF80
_EVENT_DATA_OFFSET = HEADER_LENGTH + 2  # after the sequence number
_MAX_FRAME = MAX_OAMPDU_SIZE - 4
_EPSILON = 1e-6  # seconds: timestamps written with microseconds
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
#: what an Information TLV says (all but its type), and its content (all but the revision)
_INFORMATION_FIELDS = tuple(a.name for a in attrs.fields(InfoTlv) if a.name != "type")
_TLV_FIELDS = tuple(name for name in _INFORMATION_FIELDS if name != "revision")
_information = operator.attrgetter(*_INFORMATION_FIELDS)  # InfoTlv.same_information, without attrs.evolve
_content = operator.attrgetter(*_TLV_FIELDS)

# Plausibility bounds of link event windows: the monitor table's (57.5.3; protocol.md section 6)
_SYMBOL, _FRAME, _PERIOD, _SECONDS = (FACTS[kind] for kind in MonitorKind)


def infer_state(pdu: Information) -> str | None:
    """The Discovery state an Information OAMPDU shows (None: it shows none)."""
    local = remote = False
    for tlv in pdu.tlvs:
        if type(tlv) is InfoTlv:
            if tlv.type == InfoTlvType.LOCAL:
                local = True
            elif tlv.type == InfoTlvType.REMOTE:
                remote = True
    flags = int(pdu.flags)
    if not local:
        return FAULT if flags & _LINK_FAULT and not pdu.tlvs else None
    if not remote:
        return ACTIVE_SEND_LOCAL
    if flags & _EVALUATING_AND_STABLE == _LOCAL_STABLE:
        return SEND_ANY if flags & _REMOTE_STABLE else SEND_LOCAL_REMOTE_OK
    return SEND_LOCAL_REMOTE


def implausibilities(tlv: LinkEventTlv) -> list[str]:
    """Why the values of a link event TLV cannot be what its IEEE type says (empty: plausible)."""
    kind = _EVENT_NAMES.get(tlv.type, f"type {tlv.type:#04x}")
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


def _tlvs_run_to_the_end(data: bytes, offset: int) -> bool:
    """True when the TLV list starting at `offset` ends with the frame, not with an End marker."""
    end = len(data)
    while offset < end:
        if not data[offset]:
            return False
        offset += data[offset + 1]  # checked by the codec: >= 2 and within the frame
    return True


def _loopback_state(tlv: InfoTlv) -> str:
    """What the State field says about loopback (RFC 4878 dot3OamLoopbackStatus terms)."""
    parser, mux = tlv.parser_action, tlv.mux_action
    if parser == ParserAction.LOOPBACK:
        return "local_loopback"  # loops the peer's frames back
    if parser == ParserAction.DISCARD:
        return "initiating_or_terminating" if mux else "remote_loopback"
    return "no_loopback" if not mux else "discarding"


class Speaker:
    """What is known about one speaker (a source MAC on one interface)."""

    __slots__ = (
        "advertised",
        "counts",
        "discovery_start",
        "events",
        "events_dropped",
        "findings",
        "first_frame",
        "first_time",
        "flags",
        "id",
        "interface",
        "last_event",
        "last_event_entry",
        "last_frame",
        "last_time",
        "local",
        "local_frame",
        "local_since",
        "loop_open",
        "loopbacks",
        "mac",
        "prev_local",
        "repeat_findings",
        "repeats",
        "revisions",
        "ring",
        "ring_index",
        "send_any_since",
        "send_any_time",
        "state",
        "states",
        "states_dropped",
        "steady",
        "totals",
    )

    def __init__(self, mac: str, interface: int, number: int, time: float, rate: int) -> None:
        self.mac = mac
        self.interface = interface
        self.id = mac if interface == 0 else f"{mac}@{interface}"
        self.first_frame = self.last_frame = number
        self.first_time = self.last_time = time
        self.steady: bytes | None = None  # the Information OAMPDU whose repeats are the steady state
        self.repeats = 0  # repeats of `steady` not yet in counts
        self.repeat_findings: list[Finding] = []  # findings every repeat of `steady` shows again
        self.counts: dict[int | str, int] = {}
        self.ring = [float("-inf")] * rate  # times of the last `rate` OAMPDUs
        self.ring_index = 0
        self.findings: dict[tuple[str, str], Finding] = {}
        self.state: str | None = None
        self.states: list[JsonObject] = []
        self.states_dropped = 0
        self.discovery_start: float | None = None
        self.send_any_time: float | None = None
        self.send_any_since: float | None = None
        self.flags: int | None = None
        self.local: InfoTlv | None = None  # the last Local TLV since the last reset (gap, silence)
        self.prev_local: InfoTlv | None = None
        self.local_since = time
        self.local_frame = 0
        self.advertised: InfoTlv | None = None  # the last Local TLV ever
        self.revisions: list[JsonObject] = []
        self.events: list[JsonObject] = []
        self.events_dropped = 0
        self.last_event: EventNotification | None = None
        self.last_event_entry: JsonObject | None = None
        self.totals: dict[int, tuple[int, int]] = {}  # event type -> (error, event) running totals
        self.loop_open: JsonObject | None = None  # a loopback this speaker initiated, not ended yet
        self.loopbacks: list[JsonObject] = []

    @property
    def mode(self) -> str | None:
        """ "active" or "passive" as advertised, None before a Local TLV."""
        if self.advertised is None:
            return None
        return "active" if int(self.advertised.oam_config) & _ACTIVE else "passive"

    def finding_counts(self) -> dict[str, int]:
        """Occurrences per finding kind, in the order of `KINDS`."""
        counts: dict[str, int] = {}
        for finding in self.findings.values():
            counts[finding.kind] = counts.get(finding.kind, 0) + finding.count
        return {kind: counts[kind] for kind in KINDS if kind in counts}

    def flush(self) -> None:
        """Count the repeats of the steady state."""
        if self.repeats:
            self.counts[Code.INFORMATION] = self.counts.get(Code.INFORMATION, 0) + self.repeats
            self.repeats = 0


class _Interface:
    """One capture interface: its speakers and its gaps."""

    __slots__ = ("gap_start", "id", "last_frame", "last_time", "recent", "speakers")

    def __init__(self, interface: int, time: float) -> None:
        self.id = interface
        self.speakers: dict[str, Speaker] = {}
        self.recent: list[Speaker] = []  # the speakers with a steady state, latest first (a few)
        self.last_time = time
        self.last_frame = 0
        self.gap_start = float("-inf")  # when the latest capture gap began


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
        self._interfaces: dict[int, _Interface] = {}
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
        lost_link = limits.lost_link
        gap_limit = limits.keepalive_limit
        rate = limits.rate
        rate_period = limits.rate_period - _EPSILON
        slow = self._slow
        iface: _Interface | None = None
        iface_id = -1
        recent: list[Speaker] = []
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
                if t - iface.last_time > lost_link and iface.speakers:
                    self._capture_gap(iface, record)
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

    def _interface(self, record: CaptureRecord) -> _Interface:
        if self.start is None:
            self.start = record.time
        iface = self._interfaces.get(record.interface)
        if iface is None:
            iface = self._interfaces[record.interface] = _Interface(record.interface, record.time)
        return iface

    def _slow(self, iface: _Interface, steady: Speaker | None, record: CaptureRecord) -> None:
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

    def _new_speaker(self, iface: _Interface, mac: str, record: CaptureRecord) -> Speaker:
        speaker = Speaker(mac, iface.id, record.number, record.time, self.limits.rate)
        iface.speakers[mac] = speaker
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

    def _capture_gap(self, iface: _Interface, record: CaptureRecord) -> None:
        """No frame at all on the interface for longer than the lost-link time."""
        iface.gap_start = iface.last_time
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

    def _check_gap(self, iface: _Interface, speaker: Speaker, record: CaptureRecord) -> None:
        """The speaker's silence since its last frame, if longer than a keep-alive."""
        limits = self.limits
        gap = record.time - speaker.last_time
        if gap <= limits.keepalive_limit:
            return
        frames = (speaker.last_frame, record.number)
        seconds = round(gap, 6)
        if gap <= limits.lost_link:
            self._find(
                speaker,
                record,
                "keepalive_late",
                f"no OAMPDU for more than {limits.keepalive_limit:g} s",
                frames=frames,
                seconds=seconds,
            )
            return
        if iface.gap_start >= speaker.last_time:
            self._find(
                speaker,
                record,
                "capture_gap",
                "the capture has no frames for longer than the lost-link time",
                frames=frames,
                seconds=seconds,
            )
        elif self._should_send(iface, speaker):
            self._find(
                speaker,
                record,
                "silence",
                f"no OAMPDU for more than the lost-link time ({limits.lost_link:g} s)",
                frames=frames,
                seconds=seconds,
            )
            peer = self._peer(iface, speaker)
            if peer is not None:
                self._check_lost_link_noticed(peer, speaker, record)
        self._forget(speaker)

    def _should_send(self, iface: _Interface, speaker: Speaker) -> bool:
        """Whether the speaker had to send during its silence that began at `last_time`."""
        if speaker.flags is not None and speaker.flags & _DYING_GASP:
            return False  # it said it was going away
        if speaker.mode != "passive":
            return True
        peer = self._peer(iface, speaker)  # a passive DTE answers a peer that talks
        return peer is not None and peer.last_time - speaker.last_time > self.limits.lost_link

    def _check_lost_link_noticed(self, peer: Speaker, silent: Speaker, record: CaptureRecord) -> None:
        """The peer of a silent speaker must leave SEND_ANY once its lost-link timer ran out."""
        expired = silent.last_time + self.limits.lost_link
        since = peer.send_any_since
        if peer.state == SEND_ANY and since is not None and since <= expired and peer.last_time > expired:
            self._find(
                peer,
                record,
                "lost_link_ignored",
                f"stayed in SEND_ANY while {silent.id} was silent for longer than the lost-link time",
                frames=(silent.last_frame, peer.last_frame),
            )

    def _forget(self, speaker: Speaker) -> None:
        """After a long silence: the peer restarted Discovery, the speaker may have restarted."""
        speaker.local = speaker.prev_local = None
        speaker.last_event = speaker.last_event_entry = None
        speaker.totals = {}
        speaker.loop_open = None
        speaker.steady = None

    # -- frames ------------------------------------------------------------------------

    def _malformed(self, iface: _Interface, record: CaptureRecord, error: DecodeError) -> None:
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

    def _analyse(self, iface: _Interface, speaker: Speaker, record: CaptureRecord, pdu: Oampdu) -> None:
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
        if flags & _EVALUATING_AND_STABLE == _EVALUATING_AND_STABLE:
            repeat.append(find(speaker, record, "invalid_flags", "Local Evaluating and Local Stable both set"))
        if flags & _RESERVED_FLAGS:
            repeat.append(find(speaker, record, "invalid_flags", f"reserved flag bits {flags & _RESERVED_FLAGS:#06x}"))
        if isinstance(pdu, Information):
            speaker.repeat_findings = repeat
            if steady:
                self._steady(iface, speaker, record.data)
            else:
                speaker.steady = None
        elif speaker.steady is not None and speaker.steady[15:17] != record.data[15:17]:
            speaker.steady = None  # its flags changed: the next Information is news

    @staticmethod
    def _steady(iface: _Interface, speaker: Speaker, data: bytes) -> None:
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
        if _tlvs_run_to_the_end(data, offset):
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
        self, iface: _Interface, speaker: Speaker, record: CaptureRecord, pdu: Information, repeat: list[Finding]
    ) -> bool:
        """Check an Information OAMPDU and follow the speaker; False when a repeat must be looked at again."""
        find = self._find
        flags = int(pdu.flags)
        local: InfoTlv | None = None
        remote: InfoTlv | None = None
        locals_ = remotes = 0
        for tlv in pdu.tlvs:
            if type(tlv) is InfoTlv:
                if tlv.type == InfoTlvType.LOCAL:
                    locals_ += 1
                    local = local or tlv
                else:
                    remotes += 1
                    remote = remote or tlv
            elif type(tlv) is UnknownTlv:
                repeat.append(
                    find(
                        speaker,
                        record,
                        "tlv_not_allowed",
                        f"reserved TLV type {tlv.type:#04x} in an Information OAMPDU",
                    )
                )
        if flags & _LINK_FAULT and pdu.tlvs:
            what = "+".join(k for k, n in (("Local", locals_), ("Remote", remotes)) if n) or "other"
            repeat.append(find(speaker, record, "link_fault_with_tlvs", f"Link Fault flag with {what} TLVs"))
        if local is None and not (flags & _LINK_FAULT and not pdu.tlvs):
            detail = "Remote Information TLV without a Local one" if remote else "no Local Information TLV"
            repeat.append(find(speaker, record, "missing_local_tlv", detail))
        if locals_ > 1 or remotes > 1:
            repeat.append(find(speaker, record, "tlv_not_allowed", "more than one Local or Remote Information TLV"))
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

    def _local(self, iface: _Interface, speaker: Speaker, record: CaptureRecord, local: InfoTlv) -> None:
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
            if changed and not 0 < (local.revision - old.revision) & 0xFFFF < 0x8000:
                self._find(
                    speaker,
                    record,
                    "revision_not_increased",
                    f"{', '.join(changed)} changed; revision {old.revision} -> {local.revision}",
                )
            self._revision(speaker, record, local, changed)
            for other in iface.speakers.values():
                if other is not speaker:
                    other.steady = None  # its Remote TLV must be checked against the new one
        before = speaker.advertised
        if before is None or _loopback_state(before) != _loopback_state(local):
            self._loopback_state(iface, speaker, record, local, first=before is None)
        speaker.prev_local = old
        speaker.local = speaker.advertised = local
        speaker.local_since = t
        speaker.local_frame = record.number

    @staticmethod
    def _changed(old: InfoTlv, new: InfoTlv) -> list[str]:
        return [name for name, a, b in zip(_TLV_FIELDS, _content(old), _content(new), strict=True) if a != b]

    def _revision(self, speaker: Speaker, record: CaptureRecord, local: InfoTlv, changed: list[str]) -> None:
        entry: JsonObject = {"revision": local.revision, "frame": record.number, "time": record.time}
        if changed:
            entry["changed"] = changed
        if not speaker.revisions:
            entry.update(_capabilities(local))
        if len(speaker.revisions) < MAX_REVISIONS:
            speaker.revisions.append(entry)
        self._emit(speaker, record, "revision" if speaker.advertised else "capabilities", **entry)

    def _loopback_state(
        self, iface: _Interface, speaker: Speaker, record: CaptureRecord, local: InfoTlv, first: bool
    ) -> None:
        state = _loopback_state(local)
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
        self, iface: _Interface, speaker: Speaker, record: CaptureRecord, remote: InfoTlv, repeat: list[Finding]
    ) -> bool:
        """Check a Remote Information TLV against the peer's Local TLV; False: look again at the next frame."""
        peer = self._peer(iface, speaker)
        if peer is None:
            return True  # the peer is not in the capture
        if peer.advertised is None:
            repeat.append(
                self._find(
                    speaker, record, "tlv_not_allowed", "Remote Information TLV before the peer sent a Local one"
                )
            )
            return False
        expected = peer.local
        if expected is None or _information(remote) == _information(expected):
            return True
        previous = peer.prev_local
        recent = record.time - peer.local_since <= self.limits.keepalive_limit
        if recent and previous is not None and _information(remote) == _information(previous):
            return False  # the change may still be on its way: look again
        differences = ", ".join(
            f"{name} {a} != {b}"
            for name, a, b in zip(_INFORMATION_FIELDS, _information(remote), _information(expected), strict=True)
            if a != b
        )
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
        if state == ACTIVE_SEND_LOCAL and old in _AFTER_DISCOVERY:
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
        self, iface: _Interface, speaker: Speaker, record: CaptureRecord, pdu: Oampdu, repeat: list[Finding]
    ) -> None:
        name = CODE_NAMES.get(pdu.code)
        if isinstance(pdu, UnsupportedPdu) or name is None:
            self._find(speaker, record, "reserved_code", f"code {pdu.code:#04x}")
            return
        state = speaker.state
        if state is not None and state != SEND_ANY:
            self._find(speaker, record, "code_not_allowed", f"{name} OAMPDU in {state}")
        peer = self._peer(iface, speaker)
        peer_config = int(peer.advertised.oam_config) if peer is not None and peer.advertised is not None else None
        passive = speaker.mode == "passive"
        if isinstance(pdu, EventNotification):
            if peer_config is not None and not peer_config & _LINK_EVENTS:
                self._find(
                    speaker,
                    record,
                    "code_not_allowed",
                    "Event Notification to a peer that does not advertise Link Events",
                )
            self._event_notification(speaker, record, pdu, repeat)
        elif isinstance(pdu, LoopbackControl):
            if passive:
                self._find(speaker, record, "code_not_allowed", "Loopback Control from a Passive DTE")
            if peer_config is not None and not peer_config & _REMOTE_LOOPBACK:
                self._find(
                    speaker,
                    record,
                    "code_not_allowed",
                    "Loopback Control to a peer that does not advertise remote loopback",
                )
            self._loopback_command(speaker, record, pdu)
        elif isinstance(pdu, VariableRequest):
            if passive:
                self._find(speaker, record, "code_not_allowed", "Variable Request from a Passive DTE")
            if peer_config is not None and not peer_config & _VARIABLE_RETRIEVAL:
                self._find(
                    speaker,
                    record,
                    "code_not_allowed",
                    "Variable Request to a peer that does not advertise variable retrieval",
                )
            descriptors = pdu_to_dict(pdu)["descriptors"]
            self._event(speaker, record, {"kind": "variable_request", "descriptors": descriptors})
        elif isinstance(pdu, VariableResponse):
            own = speaker.advertised
            if own is not None and not int(own.oam_config) & _VARIABLE_RETRIEVAL:
                self._find(
                    speaker,
                    record,
                    "code_not_allowed",
                    "Variable Response from a DTE that does not advertise variable retrieval",
                )
            containers = pdu_to_dict(pdu)["containers"]
            self._event(speaker, record, {"kind": "variable_response", "containers": containers})
        elif isinstance(pdu, OrgSpecificPdu):
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
        last = speaker.last_event
        speaker.last_event = pdu
        if last is not None and last.sequence == pdu.sequence:
            if last.tlvs == pdu.tlvs:
                if speaker.last_event_entry is not None:
                    speaker.last_event_entry["duplicates"] += 1
                self._emit(speaker, record, "duplicate_event", sequence=pdu.sequence)
                return
            self._find(speaker, record, "duplicate_event_differs", f"sequence {pdu.sequence} repeated with other TLVs")
        unique = last is None or last.sequence != pdu.sequence
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
                totals = self._totals(speaker, tlv)
                for detail in implausibilities(tlv) + (totals if unique else []):
                    self._find(speaker, record, "implausible_event", detail, sequence=pdu.sequence)

    @staticmethod
    def _totals(speaker: Speaker, tlv: LinkEventTlv) -> list[str]:
        """Running totals must grow from one event of a type to the next."""
        kind = _EVENT_NAMES.get(tlv.type, f"type {tlv.type:#04x}")
        previous = speaker.totals.get(tlv.type)
        speaker.totals[tlv.type] = (tlv.error_running_total, tlv.event_running_total)
        if previous is None:
            return []
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
    def _peer(iface: _Interface, speaker: Speaker) -> Speaker | None:
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
                if peer is None or iface.gap_start >= speaker.last_time:
                    continue
                silent = peer.last_time - speaker.last_time
                if silent > self.limits.lost_link and self._should_send(iface, speaker):
                    record = CaptureRecord(peer.last_frame, peer.last_time, b"", 0, iface.id, ETHERNET)
                    self._find(
                        speaker,
                        record,
                        "silence",
                        f"stopped sending while {peer.id} went on for more than the lost-link time",
                        frames=(speaker.last_frame, peer.last_frame),
                        seconds=round(silent, 6),
                    )
                    self._check_lost_link_noticed(peer, speaker, record)

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
            "gaps": [_relative(gap, start) for gap in self.gaps],
            "speakers": {s.id: speaker_summary(s, start) for s in self.speakers},
            "findings": self.finding_total(),
        }


_KIND_ORDER = list(KINDS)


def _capabilities(tlv: InfoTlv) -> JsonObject:
    return {
        "mode": "active" if tlv.oam_config & OamConfig.ACTIVE else "passive",
        "oam_config": oam_config_names(tlv.oam_config),
        "max_pdu_size": tlv.max_pdu_size,
        "oui": format_oui(tlv.oui),
        "vendor_info": tlv.vendor_info,
        "oam_version": tlv.oam_version,
    }


def _relative(entry: JsonObject, start: float) -> JsonObject:
    out = dict(entry)
    if "time" in out:
        out["time"] = round(out["time"] - start, 6)
    return out


def _code_name(code: int | str) -> str:
    if isinstance(code, str):
        return code
    return CODE_NAMES.get(code, f"unsupported_{code:#04x}")


def speaker_summary(speaker: Speaker, start: float) -> JsonObject:
    """One speaker's report (times in seconds since the first record of the capture)."""
    speaker.flush()
    local = speaker.advertised
    findings = sorted(speaker.findings.values(), key=lambda f: (_KIND_ORDER.index(f.kind), f.first_time))
    time_to_send_any = None
    if speaker.send_any_time is not None and speaker.discovery_start is not None:
        time_to_send_any = round(speaker.send_any_time - speaker.discovery_start, 6)
    return {
        "mac": speaker.mac,
        "interface": speaker.interface,
        "first_frame": speaker.first_frame,
        "first_time": round(speaker.first_time - start, 6),
        "last_frame": speaker.last_frame,
        "last_time": round(speaker.last_time - start, 6),
        "capabilities": _capabilities(local) if local is not None else None,
        "local": tlv_to_dict(local) if local is not None else None,
        "flags": flag_names(speaker.flags) if speaker.flags is not None else None,
        "counts": {_code_name(code): n for code, n in sorted(speaker.counts.items(), key=lambda i: str(i[0]))},
        "states": [_relative(s, start) for s in speaker.states],
        "states_dropped": speaker.states_dropped,
        "state": speaker.state,
        "time_to_send_any": time_to_send_any,
        "revisions": [_relative(r, start) for r in speaker.revisions],
        "events": [_relative(e, start) for e in speaker.events],
        "events_dropped": speaker.events_dropped,
        "loopbacks": [_relative(lb, start) for lb in speaker.loopbacks],
        "finding_counts": speaker.finding_counts(),
        "findings": [f.to_dict(start) for f in findings],
    }
