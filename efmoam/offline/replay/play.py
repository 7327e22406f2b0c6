"""Play mode (``efmoam replay FILE --as MAC``): our engine plays MAC against the recorded peer.

The frames of every other speaker on MAC's interface are fed into an `OamPort` with the
capture timestamps as ``now`` (its timers run in between, at their deadlines).  The
engine is configured as MAC showed itself (its first Local Information TLV: mode, OUI,
vendor information, maximum OAMPDU size, capabilities, revision; its Organization
Specific TLV; its keep-alive interval, the median gap of its Information OAMPDUs) or from
a configuration file.  What MAC did on its own account, its OAM client's inputs, is
mirrored into the engine at the time MAC did it: Critical Event and Dying Gasp flags,
Link Fault (the flag with TLVs as a flag, the Link Fault form without TLVs as a failed
link), unique Event Notifications (with as many duplicates as MAC sent), Loopback
Control commands, Variable Requests and Organization Specific OAMPDUs.  Everything else
is the engine's own doing, and is compared with what MAC sent:

* states: the Discovery states both show on the wire (the same inference as observe
  mode, over MAC's frames and over ours), in order and in time;
* flags: Link Fault, Dying Gasp, Critical Event and reserved bits (the Discovery bits
  are the states);
* local: the Local Information TLV over time (revision, State field, configuration);
* events: each Event Notification MAC sent, and whether our engine sent it the same way;
* counts: OAMPDUs per code, and the keep-alive interval;
* findings: what observe mode finds in MAC's frames and in ours.

A difference in time larger than ``--tolerance`` or in order or value is a divergence.

Our engine starts when MAC does, at MAC's first frame: a capture may begin before MAC's
OAM was enabled (or restarted) while its peer was already sending, and Discovery run
from the capture's start would be ahead of MAC's.  What the peer sent before, MAC did not
act on, and neither does the engine, with two exceptions the capture shows: the peer's
frames recorded at the very instant of MAC's first were on the wire as MAC started (a
capture's order within one instant says nothing), so the engine hears them just after
its start; and when MAC's first frame shows it had heard its peer already (a Remote
Information TLV, remote Discovery flags, or a code other than Information), MAC's OAM
ran before the capture shows it, and the engine hears the peer's latest Information
OAMPDU at its start.  Times are still reported from the capture's first record.

Captures are trimmed: where observe mode finds a capture gap (nothing recorded at all),
the engine is paused and resumes where it stopped, so trimming costs no lost link, no
keep-alives and no time (a gap of days is one step); ``capture_gap`` findings are the
capture's, never a divergence.  The engine's clock is 0 at the first record and never
goes backwards (a capture whose clock steps back is resynchronised likewise).
``--keepalive`` and ``--lost-link``, when given, are the engine's interval and lost-link
time (a whole multiple of the interval, as configured in the daemon), and the observers
use the engine's lost-link time.

The capture is read twice (`infer`, then the run): FILE ``-`` is standard input copied
to a temporary file first (`efmoam.offline.source.capture_path`).

Exit status 0 without divergences, 1 with, 2 when the capture is unreadable or MAC
sends no Local Information TLV in it.
"""

from __future__ import annotations

import collections
import difflib
import json
import os
import statistics
from collections.abc import Iterator
from typing import Any, BinaryIO, TextIO

import attrs

from efmoam.core import (
    DiscoveryChanged,
    LocalProtocolError,
    OamMode,
    OamPort,
    PortSettings,
    Transmit,
)
from efmoam.core.linkmon import LinkMonitoringSettings
from efmoam.offline.capture import CaptureError, CaptureRecord
from efmoam.offline.decode import ETHERNET, JsonObject, NotEthernetError, flag_names, open_records
from efmoam.offline.replay.findings import Limits
from efmoam.offline.replay.observe import CODE_NAMES, Observer, speaker_summary
from efmoam.offline.replay.report import EXIT_FINDINGS, EXIT_OK, EXIT_UNREADABLE
from efmoam.offline.source import capture_path, source_name
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
    OamConfig,
    Oampdu,
    OrgSpecificPdu,
    OrgSpecificTlv,
    PeerDecoder,
    VariableRequest,
    format_oui,
)
from pdu.enums import SLOW_PROTOCOLS_ETHERTYPE

__all__ = ["PlayError", "Player", "Recorded", "infer", "run_play"]

_ETHERTYPE = SLOW_PROTOCOLS_ETHERTYPE.to_bytes(2, "big")
_DISCOVERY_FLAGS = int(Flag.LOCAL_EVALUATING | Flag.LOCAL_STABLE | Flag.REMOTE_EVALUATING | Flag.REMOTE_STABLE)
_MAX_CHANGES = 10_000
_MAX_GAPS = 1_000
_MAX_EVENTS = 1_000
_GAPS_SHOWN = 5  # capture gaps listed in the text report
_MAX_AT_INSTANT = 64  # a peer's frames at MAC's first instant that our engine hears at its start
_MAX_TIMERS = 100_000  # timer runs between two records (a bug, if ever reached)


class PlayError(Exception):
    """MAC cannot be played from this capture."""


@attrs.define
class Recorded:
    """What the first pass learnt about MAC."""

    mac: str
    interface: int
    local: InfoTlv
    org_specific: tuple[int, bytes] | None
    interval: float  #: MAC's keep-alive interval, seconds
    peers: list[str]
    duplicates: dict[int, int]  #: frame number of a unique Event Notification -> copies after it


def _oampdus(source: str | os.PathLike[str]) -> Iterator[CaptureRecord]:
    """The capture's Ethernet records carrying the Slow Protocols EtherType."""
    for record in open_records(source):
        if record.linktype == ETHERNET and record.data.startswith(_ETHERTYPE, 12):
            yield record


def infer(source: str | os.PathLike[str], mac: str) -> Recorded:
    """First pass: how MAC showed itself in the capture `source`."""
    decoder = PeerDecoder()
    interface: int | None = None
    local: InfoTlv | None = None
    org: tuple[int, bytes] | None = None
    peers: dict[str, None] = {}
    gaps: list[float] = []
    last_info: float | None = None
    last_event: EventNotification | None = None
    unique_frame = 0
    duplicates: dict[int, int] = {}
    for record in _oampdus(source):
        try:
            pdu = decoder.decode(record.data)
        except DecodeError:
            continue
        if pdu.src != mac:
            if interface is None or record.interface == interface:
                peers[pdu.src] = None
            continue
        if interface is None:
            interface = record.interface
        elif record.interface != interface:
            continue
        if isinstance(pdu, Information):
            if local is None and pdu.local is not None:
                local = pdu.local
            for tlv in pdu.tlvs:
                if isinstance(tlv, OrgSpecificTlv) and org is None:
                    org = (tlv.oui, tlv.value)
            if last_info is not None and len(gaps) < _MAX_GAPS:
                gaps.append(record.time - last_info)
            last_info = record.time
        elif isinstance(pdu, EventNotification):
            if last_event is not None and last_event.sequence == pdu.sequence and last_event.tlvs == pdu.tlvs:
                if len(duplicates) < _MAX_EVENTS or unique_frame in duplicates:
                    duplicates[unique_frame] = duplicates.get(unique_frame, 0) + 1
            else:
                unique_frame = record.number
            last_event = pdu
    if interface is None or local is None:
        raise PlayError(f"{mac} sends no Local Information TLV in this capture")
    interval = min(10.0, max(0.1, round(statistics.median(gaps), 1))) if gaps else 1.0
    return Recorded(mac, interface, local, org, interval, [p for p in peers if p != mac], duplicates)


def settings_from(recorded: Recorded) -> PortSettings:
    """Our engine's settings for MAC, from what the capture shows of it."""
    tlv = recorded.local
    config = tlv.oam_config
    return PortSettings(
        mode=OamMode.ACTIVE if config & OamConfig.ACTIVE else OamMode.PASSIVE,
        transmit_interval=recorded.interval,
        max_pdu_size=min(1518, max(64, tlv.max_pdu_size)),
        oui=tlv.oui,
        vendor_info=tlv.vendor_info,
        unidirectional=bool(config & OamConfig.UNIDIRECTIONAL),
        loopback_process=bool(config & OamConfig.REMOTE_LOOPBACK),
        variable_retrieval=bool(config & OamConfig.VARIABLE_RETRIEVAL),
        # advertising Link Events is interpreting them: link monitoring on, no monitor of its own
        link_monitoring=LinkMonitoringSettings(enabled=bool(config & OamConfig.LINK_EVENTS)),
        org_specific_tlv=recorded.org_specific,
    )


def settings_from_config(path: str, port: str | None) -> PortSettings:
    """Our engine's settings from a configuration file (the rule for `port`)."""
    from efmoam.config.loader import ConfigError, load_config  # noqa: PLC0415

    try:
        config = load_config(path)
    except (ConfigError, OSError) as error:
        raise PlayError(f"{path}: {error}") from error
    if port is None:
        if len(config.rules) != 1:
            raise PlayError(f"{path} has {len(config.rules)} port rules: say which port with --port")
        return config.rules[0].profile.settings
    profile = config.profile_for(port, physical=True)
    if profile is None:
        raise PlayError(f"{path} does not manage a port named {port}")
    return profile.settings


class _Side:
    """What one side (MAC in the capture, or our engine) showed over time."""

    def __init__(self) -> None:
        self.flags: list[tuple[float, int, int]] = []  # (time, frame, non-Discovery flags)
        self.local: list[tuple[float, int, tuple[int, int, int, int, int, int, int]]] = []
        self.info_times: list[float] = []
        self.dropped = 0
        self._flags: int | None = None
        self._local: InfoTlv | None = None

    def frame(self, time: float, number: int, pdu: Oampdu) -> None:
        flags = int(pdu.flags) & ~_DISCOVERY_FLAGS
        if flags != self._flags:
            self._flags = flags
            self._add(self.flags, (time, number, flags))
        if isinstance(pdu, Information):
            if len(self.info_times) < _MAX_GAPS:
                self.info_times.append(time)
            local = pdu.local
            if local is not None and local != self._local:
                self._local = local
                key = (
                    local.revision,
                    local.parser_action,
                    local.mux_action,
                    int(local.oam_config),
                    local.max_pdu_size,
                    local.oui,
                    local.vendor_info,
                )
                self._add(self.local, (time, number, key))

    def _add(self, changes: list[Any], change: Any) -> None:
        if len(changes) < _MAX_CHANGES:
            changes.append(change)
        else:
            self.dropped += 1

    def interval(self) -> float | None:
        gaps = [b - a for a, b in zip(self.info_times, self.info_times[1:], strict=False)]
        return round(statistics.median(gaps), 3) if gaps else None


class Player:
    """Runs our engine as MAC over the records of MAC's interface (second pass)."""

    def __init__(self, recorded: Recorded, settings: PortSettings, limits: Limits, tolerance: float) -> None:
        self.recorded = recorded
        self.mac = recorded.mac
        self.settings = settings
        self.tolerance = tolerance
        self.theirs = Observer(limits)  # the capture as it is
        self.ours = Observer(limits)  # the peers' frames and our engine's
        self.their_side = _Side()
        self.our_side = _Side()
        self.engine_states: list[JsonObject] = []
        self.events: list[JsonObject] = []  # MAC's unique Event Notifications and our engine's answer
        self.refused: list[JsonObject] = []  # client inputs our engine refused
        self.port: OamPort | None = None
        self._decoder = PeerDecoder()
        self._our_decoder = PeerDecoder()
        self._our_number = 0
        self._their_last_event: EventNotification | None = None
        self._their_flags = 0
        self._link_up = True
        self._start = 0.0
        self.paused: list[JsonObject] = []  # the capture gaps the engine was paused across
        self.paused_dropped = 0  # and those beyond `_MAX_GAPS`
        self._offset = 0.0  # capture time minus engine time
        self._now = 0.0  # the engine's time
        self._last_time = float("-inf")  # the capture time of the last record
        # before our engine starts: the peers' frames at the latest instant, and their latest Information
        self._instant = float("nan")
        self._at_instant: collections.deque[bytes] = collections.deque(maxlen=_MAX_AT_INSTANT)
        self._latest_information: bytes | None = None

    # -- the run -------------------------------------------------------------------------

    def run(self, records: Iterator[CaptureRecord]) -> None:
        for record in records:
            if record.interface != self.recorded.interface:
                continue
            t = record.time
            if self.theirs.start is None:
                self._start = t  # times are reported from the first record, as observe mode does
                self._offset = t  # the engine's clock is 0 here (see `_engine_time`)
            gaps = self._capture_gaps()
            self.theirs.run((record,))
            now = self._engine_time(t, gap=self._capture_gaps() != gaps)
            if self.port is not None:
                self._advance(now)
            if record.linktype != ETHERNET or not record.data.startswith(_ETHERTYPE, 12):
                continue
            try:
                pdu = self._decoder.decode(record.data)
            except DecodeError:
                continue
            if pdu.src == self.mac:
                if self.port is None:
                    self._start_engine(pdu, t, now)
                self.their_side.frame(t, record.number, pdu)
                self._mirror(record, pdu, now)
            else:
                self.ours.run((record,))
                if self.port is None:
                    self._before(t, record.data, pdu)
                    continue
                self.port.receive(record.data, now=now)
            self._drain(now)

    def _before(self, t: float, frame: bytes, pdu: Oampdu) -> None:
        """A peer's `frame` at capture time `t`, before MAC's first: kept for `_start_engine`."""
        if t != self._instant:
            self._instant = t
            self._at_instant.clear()
        self._at_instant.append(frame)
        if isinstance(pdu, Information):
            self._latest_information = frame

    def _start_engine(self, first: Oampdu, t: float, now: float) -> None:
        """Start our engine at MAC's `first` frame, at capture time `t` (see the module's comment)."""
        self.port = OamPort(self.settings, self.mac, now=now, revision=self.recorded.local.revision)
        self._drain(now)
        heard = list(self._at_instant) if t == self._instant else []
        latest = self._latest_information
        if latest is not None and latest not in heard and _had_heard_its_peer(first):
            heard.insert(0, latest)
        for frame in heard:
            self.port.receive(frame, now=now)
        self._at_instant.clear()
        self._latest_information = None

    # -- the engine's clock --------------------------------------------------------------

    def _capture_gaps(self) -> int:
        """How many capture gaps observe mode has found so far (the one rule for them)."""
        return len(self.theirs.gaps) + self.theirs.gaps_dropped

    def _engine_time(self, t: float, *, gap: bool) -> float:
        """The engine's time for a record at capture time `t`.

        The engine's clock is the capture's minus `_offset`.  Across a capture gap (as
        observe mode finds them in the capture: `Observer.gaps`) and when the capture's
        clock goes backwards, the engine is paused: it resumes where it stopped, so the
        trimmed time neither expires its lost-link timer nor costs its keep-alives, and
        28 hours cost nothing.  Its clock never goes backwards, and is 0 at the first
        record (far future timestamps keep the engine's float precision).
        """
        if gap or t < self._last_time:
            if gap and len(self.paused) >= _MAX_GAPS:
                self.paused_dropped += 1
            elif gap:
                self.paused.append({"time": self._rel(self._last_time), "seconds": round(t - self._last_time, 6)})
            self._offset = t - self._now
        self._last_time = t
        self._now = max(self._now, t - self._offset)
        return self._now

    def _capture_time(self, now: float) -> float:
        """The capture time of the engine's time `now` (its frames are placed there)."""
        return now + self._offset

    def _advance(self, until: float) -> None:
        """Run the engine's timers due up to `until` (engine time), each at its deadline."""
        port = self.port
        assert port is not None
        for _ in range(_MAX_TIMERS):
            deadline = port.next_deadline()
            if deadline is None or deadline > until:
                return
            port.handle_timer(now=deadline)
            self._drain(deadline)
        when = self._rel(self._capture_time(until))
        raise PlayError(f"our engine's timers do not advance at {when:.6f} s: this capture cannot be played")

    def _drain(self, now: float) -> None:
        assert self.port is not None
        t = self._capture_time(now)
        for output in self.port.take_outputs():
            if isinstance(output, Transmit):
                self._our_number += 1
                pdu = self._our_decoder.decode(output.frame)
                self.our_side.frame(t, self._our_number, pdu)
                record = CaptureRecord(
                    self._our_number, t, output.frame, len(output.frame), self.recorded.interface, ETHERNET
                )
                self.ours.run((record,))
                if isinstance(pdu, EventNotification):
                    self._our_event(t, pdu)
            elif isinstance(output, DiscoveryChanged) and len(self.engine_states) < _MAX_CHANGES:
                self.engine_states.append({"state": output.new.value, "time": self._rel(t), "cause": output.cause})

    # -- MAC's client inputs, mirrored -------------------------------------------------

    def _mirror(self, record: CaptureRecord, pdu: Oampdu, t: float) -> None:
        """MAC's client inputs shown by `pdu`, given to the engine at its time `t`."""
        port = self.port
        assert port is not None
        flags = int(pdu.flags)
        link_fault_form = isinstance(pdu, Information) and not pdu.tlvs and flags & Flag.LINK_FAULT
        if isinstance(pdu, Information):
            if link_fault_form and self._link_up:
                self._link_up = False
                port.set_link(False, now=t)
            elif not link_fault_form and not self._link_up:
                self._link_up = True
                port.set_link(True, now=t)
        wanted = flags & (Flag.DYING_GASP | Flag.CRITICAL_EVENT)
        if not link_fault_form:
            wanted |= flags & Flag.LINK_FAULT
        changed = wanted ^ self._their_flags
        for flag in CRITICAL_FLAGS:
            if changed & flag:
                port.set_local_flags(flag, bool(wanted & flag), now=t)
        self._their_flags = wanted
        try:
            if isinstance(pdu, EventNotification):
                self._their_event(record, pdu, t)
            elif isinstance(pdu, LoopbackControl):
                if pdu.loopback_command == LoopbackCommand.ENABLE:
                    port.start_loopback(now=t)
                elif pdu.loopback_command == LoopbackCommand.DISABLE:
                    port.stop_loopback(now=t)
            elif isinstance(pdu, VariableRequest):
                port.request_variables(pdu.descriptors, now=t)
            elif isinstance(pdu, OrgSpecificPdu):
                port.send_org_specific(pdu.oui, pdu.value, now=t)
        except LocalProtocolError as error:
            self._refuse(record, CODE_NAMES.get(pdu.code, "unsupported"), str(error))

    def _refuse(self, record: CaptureRecord, what: str, why: str) -> None:
        if len(self.refused) < _MAX_EVENTS:
            self.refused.append(
                {"frame": record.number, "time": round(record.time - self._start, 6), "what": what, "why": why}
            )

    def _their_event(self, record: CaptureRecord, pdu: EventNotification, now: float) -> None:
        last = self._their_last_event
        self._their_last_event = pdu
        if last is not None and last.sequence == pdu.sequence and last.tlvs == pdu.tlvs:
            return  # a duplicate: our engine sent its copies with the unique one
        assert self.port is not None
        tlvs = tuple(tlv for tlv in pdu.tlvs if isinstance(tlv, LinkEventTlv | OrgSpecificTlv))
        burst = 1 + self.recorded.duplicates.get(record.number, 0)
        sequence = self.port.notify_link_events(tlvs, now=now, burst=min(burst, 5))
        entry: JsonObject = {
            "frame": record.number,
            "time": round(record.time - self._start, 6),
            "their_sequence": pdu.sequence,
            "their_copies": burst,
            "our_sequence": sequence,
            "our_copies": 0,
            "our_time": None,
        }
        if len(self.events) < _MAX_EVENTS:
            self.events.append(entry)
        if sequence is None:
            self._refuse(
                record,
                "event_notification",
                "our engine would not send it (not in SEND_ANY, or the peer does not advertise Link Events)",
            )

    def _our_event(self, now: float, pdu: EventNotification) -> None:
        for entry in reversed(self.events):
            if entry["our_sequence"] == pdu.sequence:
                entry["our_copies"] += 1
                if entry["our_time"] is None:
                    entry["our_time"] = round(now - self._start, 6)
                return

    # -- the comparison ------------------------------------------------------------------

    def report(self) -> JsonObject:
        """What both sides did and where they diverge (JSON-ready)."""
        self.theirs.finish()
        self.ours.finish()
        theirs = self._summary(self.theirs)
        ours = self._summary(self.ours)
        divergences: list[JsonObject] = []
        if theirs is None or ours is None:
            divergences.append(
                {"what": "frames", "detail": "our engine sent nothing" if ours is None else "MAC sent nothing"}
            )
        else:
            self._compare_states(theirs, ours, divergences)
            self._compare_changes("flags", self.their_side.flags, self.our_side.flags, divergences, _flags_text)
            self._compare_changes("local", self.their_side.local, self.our_side.local, divergences, _local_text)
            self._compare_counts(theirs, ours, divergences)
            self._compare_findings(theirs, ours, divergences)
        self._compare_events(divergences)
        for refused in self.refused:
            divergences.append(
                {
                    "what": "refused",
                    "time": refused["time"],
                    "frame": refused["frame"],
                    "detail": f"{refused['what']}: {refused['why']}",
                }
            )
        return {
            "mac": self.mac,
            "interface": self.recorded.interface,
            "peers": self.recorded.peers,
            "settings": _settings_dict(self.settings, self.recorded.local.revision),
            "engine_states": self.engine_states,
            "theirs": theirs,
            "ours": ours,
            "events": self.events,
            "paused": self.paused,
            "paused_dropped": self.paused_dropped,
            "divergences": divergences,
        }

    def _summary(self, observer: Observer) -> JsonObject | None:
        for speaker in observer.speakers:
            if speaker.mac == self.mac:
                return speaker_summary(speaker, self._start)
        return None

    def _rel(self, t: float) -> float:
        return round(t - self._start, 6)

    def _compare_states(self, theirs: JsonObject, ours: JsonObject, out: list[JsonObject]) -> None:
        a = [(s["state"], s["time"]) for s in theirs["states"]]
        b = [(s["state"], s["time"]) for s in ours["states"]]
        self._align("state", a, b, out, str)

    def _compare_changes(
        self,
        what: str,
        theirs: list[tuple[float, int, Any]],
        ours: list[tuple[float, int, Any]],
        out: list[JsonObject],
        text: Any,
    ) -> None:
        a = [(value, self._rel(t)) for t, _, value in theirs]
        b = [(value, self._rel(t)) for t, _, value in ours]
        self._align(what, a, b, out, text)

    def _align(
        self, what: str, a: list[tuple[Any, float]], b: list[tuple[Any, float]], out: list[JsonObject], text: Any
    ) -> None:
        """Divergences between two sequences of (value, time): order, values, then times."""
        matcher = difflib.SequenceMatcher(a=[v for v, _ in a], b=[v for v, _ in b], autojunk=False)
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            if op == "equal":
                for (value, ta), (_, tb) in zip(a[i1:i2], b[j1:j2], strict=True):
                    if abs(ta - tb) > self.tolerance:
                        out.append(
                            {
                                "what": what,
                                "time": ta,
                                "theirs": text(value),
                                "ours": text(value),
                                "detail": f"{text(value)}: theirs at {ta:.3f} s, ours at {tb:.3f} s",
                            }
                        )
                continue
            theirs = [f"{text(v)} at {t:.3f}" for v, t in a[i1:i2]]
            ours = [f"{text(v)} at {t:.3f}" for v, t in b[j1:j2]]
            when = a[i1][1] if i1 < i2 else b[j1][1]
            detail = f"theirs: {', '.join(theirs) or 'nothing'}; ours: {', '.join(ours) or 'nothing'}"
            out.append({"what": what, "time": when, "theirs": theirs, "ours": ours, "detail": detail})

    def _compare_counts(self, theirs: JsonObject, ours: JsonObject, out: list[JsonObject]) -> None:
        codes = dict.fromkeys([*theirs["counts"], *ours["counts"]])
        for code in codes:
            a, b = theirs["counts"].get(code, 0), ours["counts"].get(code, 0)
            slack = max(2, a // 10) if code == CODE_NAMES[Code.INFORMATION] else 0
            if abs(a - b) > slack:
                out.append({"what": "count", "theirs": a, "ours": b, "detail": f"{code} OAMPDUs: theirs {a}, ours {b}"})
        a_interval, b_interval = self.their_side.interval(), self.our_side.interval()
        if a_interval is not None and b_interval is not None and abs(a_interval - b_interval) > self.tolerance:
            out.append(
                {
                    "what": "keepalive",
                    "theirs": a_interval,
                    "ours": b_interval,
                    "detail": f"Information every {a_interval} s (theirs), {b_interval} s (ours)",
                }
            )

    def _compare_findings(self, theirs: JsonObject, ours: JsonObject, out: list[JsonObject]) -> None:
        kinds = dict.fromkeys([*theirs["finding_counts"], *ours["finding_counts"]])
        kinds.pop("capture_gap", None)  # the capture's, not a speaker's doing: the engine is paused across it
        for kind in kinds:
            a, b = theirs["finding_counts"].get(kind, 0), ours["finding_counts"].get(kind, 0)
            if (a == 0) != (b == 0):
                out.append({"what": "finding", "theirs": a, "ours": b, "detail": f"{kind}: theirs {a}, ours {b}"})

    def _compare_events(self, out: list[JsonObject]) -> None:
        for entry in self.events:
            if entry["our_sequence"] is None:
                continue  # reported as refused
            problems = []
            if entry["our_sequence"] != entry["their_sequence"]:
                problems.append(f"sequence {entry['their_sequence']} (theirs), {entry['our_sequence']} (ours)")
            if entry["our_copies"] != entry["their_copies"]:
                problems.append(f"{entry['their_copies']} copies (theirs), {entry['our_copies']} (ours)")
            if entry["our_time"] is None:
                problems.append(f"sent at {entry['time']:.3f} s (theirs), never (ours)")
            elif abs(entry["our_time"] - entry["time"]) > self.tolerance:
                problems.append(f"sent at {entry['time']:.3f} s (theirs), {entry['our_time']:.3f} s (ours)")
            if problems:
                out.append(
                    {
                        "what": "event",
                        "time": entry["time"],
                        "frame": entry["frame"],
                        "detail": f"Event Notification of frame {entry['frame']}: " + "; ".join(problems),
                    }
                )


def _had_heard_its_peer(pdu: Oampdu) -> bool:
    """`pdu`, a speaker's first frame, shows the speaker had heard its peer before it."""
    if not isinstance(pdu, Information):
        return True  # sent in SEND_ANY only
    return pdu.remote is not None or bool(int(pdu.flags) & (Flag.REMOTE_EVALUATING | Flag.REMOTE_STABLE))


def _flags_text(flags: int) -> str:
    return ",".join(flag_names(flags)) or "-"


def _local_text(key: tuple[int, ...]) -> str:
    revision, parser, mux, config, size, oui, vendor = key
    return (
        f"rev={revision} parser={parser} mux={mux} config={config:#04x} pdu={size} oui={format_oui(oui)}"
        f" vendor={vendor:#x}"
    )


def _settings_dict(settings: PortSettings, revision: int) -> JsonObject:
    return {
        "mode": settings.mode.value,
        "transmit_interval": settings.transmit_interval,
        "lost_link_time": settings.lost_link_time,
        "max_pdu_size": settings.max_pdu_size,
        "oui": format_oui(settings.oui),
        "vendor_info": settings.vendor_info,
        "oam_config": int(settings.oam_config),
        "revision": revision,
        "org_specific_tlv": None if settings.org_specific_tlv is None else format_oui(settings.org_specific_tlv[0]),
    }


def engine_settings(settings: PortSettings, interval: float | None, lost_link: float | None) -> PortSettings:
    """`settings` with the keep-alive interval and lost-link time asked for (None: as they are).

    The engine's lost-link time is a whole multiple (2 to 10) of its keep-alive interval,
    as in the daemon's configuration: the nearest one is taken.
    """
    if interval is not None:
        settings = attrs.evolve(settings, transmit_interval=interval)
    if lost_link is not None:
        multiplier = min(10, max(2, round(lost_link / settings.transmit_interval)))
        settings = attrs.evolve(settings, multiplier=multiplier)
    return settings


def play(
    source: str | os.PathLike[str],
    mac: str,
    *,
    limits: Limits | None = None,
    tolerance: float = 1.0,
    settings: PortSettings | None = None,
    interval: float | None = None,
    lost_link: float | None = None,
) -> JsonObject:
    """Play MAC from the capture `source`; the report (raises PlayError, CaptureError, OSError).

    `interval` and `lost_link` override the engine's keep-alive interval and lost-link
    time; both observers hold the speakers to the engine's lost-link time, so the
    engine and they agree on when a silent peer is lost.
    """
    mac = mac.lower()
    recorded = infer(source, mac)
    settings = engine_settings(settings or settings_from(recorded), interval, lost_link)
    limits = attrs.evolve(limits or Limits(), lost_link=settings.lost_link_time)
    player = Player(recorded, settings, limits, tolerance)
    player.run(open_records(source))
    return player.report()


def _normal_mac(mac: str) -> str:
    digits = mac.replace(":", "").replace("-", "").replace(".", "").lower()
    if len(digits) != 12 or any(c not in "0123456789abcdef" for c in digits):
        raise PlayError(f"{mac!r} is not a MAC address")
    return ":".join(digits[i : i + 2] for i in range(0, 12, 2))


def run_play(
    source: str,
    mac: str,
    out: TextIO,
    err: TextIO,
    *,
    json_output: bool = False,
    limits: Limits | None = None,
    tolerance: float = 1.0,
    config_path: str | None = None,
    port_name: str | None = None,
    interval: float | None = None,
    lost_link: float | None = None,
    stdin: BinaryIO | None = None,
) -> int:
    """``efmoam replay FILE --as MAC``: the report to `out`; the exit status (`source` "-": `stdin`).

    `interval` and `lost_link` are ``--keepalive`` and ``--lost-link`` when given:
    they set our engine's timers (see `play`).
    """
    name = source_name(source, stdin)
    try:
        mac = _normal_mac(mac)
        settings = settings_from_config(config_path, port_name) if config_path else None
        with capture_path(source, stdin) as path:
            first = next(open_records(path), None)
            if first is not None and first.linktype != ETHERNET:
                raise NotEthernetError(first.linktype)
            report = play(
                path,
                mac,
                limits=limits,
                tolerance=tolerance,
                settings=settings,
                interval=interval,
                lost_link=lost_link,
            )
    except (CaptureError, NotEthernetError) as error:
        err.write(f"efmoam replay: error: {name}: {error}\n")
        return EXIT_UNREADABLE
    except PlayError as error:
        err.write(f"efmoam replay: error: {error}\n")
        return EXIT_UNREADABLE
    except OSError as error:
        err.write(f"efmoam replay: error: cannot read {name}: {error.strerror or error}\n")
        return EXIT_UNREADABLE
    if json_output:
        out.write(json.dumps({"schema": 1, "file": name, "mode": "play", **report}, indent=1) + "\n")
    else:
        out.write(render_play(report))
    return EXIT_FINDINGS if report["divergences"] else EXIT_OK


def render_play(report: JsonObject) -> str:
    """The play report for people."""
    s = report["settings"]
    lines = [
        f"our engine as {report['mac']} (interface {report['interface']}) against"
        f" {', '.join(report['peers']) or 'no peer'}",
        f"  configured: {s['mode']}, oam_config {s['oam_config']:#04x}, pdu {s['max_pdu_size']}, oui {s['oui']},"
        f" vendor {s['vendor_info']:#x}, revision {s['revision']}, keep-alive every {s['transmit_interval']} s,"
        f" lost link after {s['lost_link_time']} s",
    ]
    paused = report["paused"]
    if paused:
        total = len(paused) + report["paused_dropped"]
        shown = ", ".join(f"{gap['seconds']:.3f} s from {gap['time']:.3f} s" for gap in paused[:_GAPS_SHOWN])
        more = f" and {total - _GAPS_SHOWN} more" if total > _GAPS_SHOWN else ""
        lines.append(f"  paused across {total} capture gap(s) (nothing recorded): {shown}{more}")
    for name in ("theirs", "ours"):
        side = report[name]
        label = "theirs (capture)" if name == "theirs" else "ours (engine)  "
        if side is None:
            lines.append(f"{label}: nothing sent")
            continue
        states = ", ".join(f"{st['state']} {st['time']:.3f}" for st in side["states"])
        counts = ", ".join(f"{code} {n}" for code, n in side["counts"].items())
        findings = ", ".join(f"{kind} {n}" for kind, n in side["finding_counts"].items()) or "none"
        lines.append(f"{label}: states {states or '-'}")
        lines.append(f"{' ' * len(label)}  frames: {counts}; findings: {findings}")
    for entry in report["events"]:
        lines.append(
            f"event notification (frame {entry['frame']}, {entry['time']:.3f} s): theirs seq {entry['their_sequence']}"
            f" x{entry['their_copies']}"
            + (
                ", ours not sent"
                if entry["our_sequence"] is None
                else f", ours seq {entry['our_sequence']} x{entry['our_copies']}"
                + ("" if entry["our_time"] is None else f" at {entry['our_time']:.3f} s")
            )
        )
    divergences = report["divergences"]
    lines.append("")
    if divergences:
        lines.append(f"{len(divergences)} divergences:")
        lines.extend(f"  {d['what']}: {d['detail']}" for d in divergences)
    else:
        lines.append("no divergences")
    return "\n".join(lines) + "\n"
