"""What observe mode knows of one speaker, and of one capture interface; the speaker's summary.

Design: plain slotted objects, no behaviour beyond reading themselves: the observer
(`observe.Observer`) and its trackers (`discovery`, `loopbacks`, `silences`, `timeline`)
update them frame by frame, and the rules (`rules`) judge them.  The per-speaker lists are
capped where they grow; the timeline has everything.  The Discovery state is inferred
from what a speaker sends (`infer_state`).
"""

from __future__ import annotations

from efmoam.offline.decode import JsonObject, flag_names, oam_config_names, tlv_to_dict
from efmoam.offline.replay.findings import KINDS, Finding
from efmoam.offline.replay.rules import EVALUATING_AND_STABLE
from pdu import Code, EventNotification, Flag, Information, InfoTlv, InfoTlvType, OamConfig, ParserAction, format_oui
from pdu.oui import name as oui_name

__all__ = [
    "AFTER_DISCOVERY",
    "CODE_NAMES",
    "Interface",
    "Speaker",
    "capabilities",
    "infer_state",
    "loopback_state",
    "relative_time",
    "shown_state",
    "speaker_summary",
]

# The values of efmoam.core.DiscoveryState (importing the engine costs 0.1 s of start-up;
# a test checks that the names agree).
FAULT = "FAULT"
ACTIVE_SEND_LOCAL = "ACTIVE_SEND_LOCAL"
SEND_LOCAL_REMOTE = "SEND_LOCAL_REMOTE"
SEND_LOCAL_REMOTE_OK = "SEND_LOCAL_REMOTE_OK"
SEND_ANY = "SEND_ANY"
#: the states after Discovery's first one: falling back from them goes through FAULT
AFTER_DISCOVERY = frozenset({SEND_LOCAL_REMOTE, SEND_LOCAL_REMOTE_OK, SEND_ANY})

#: code -> name, as ``efmoam decode`` names them; a reserved code is "unsupported"
CODE_NAMES = {int(code): code.name.lower() for code in Code}

# plain ints: an IntFlag operand makes every & an enum operation
_LINK_FAULT = int(Flag.LINK_FAULT)
_LOCAL_STABLE, _REMOTE_STABLE = int(Flag.LOCAL_STABLE), int(Flag.REMOTE_STABLE)
_ACTIVE = int(OamConfig.ACTIVE)
_LOOPBACK, _DISCARD = int(ParserAction.LOOPBACK), int(ParserAction.DISCARD)


def infer_state(pdu: Information) -> str | None:
    """The Discovery state an Information OAMPDU shows (None: it shows none)."""
    local = remote = False
    for tlv in pdu.tlvs:
        if type(tlv) is InfoTlv:
            if tlv.type == InfoTlvType.LOCAL:
                local = True
            elif tlv.type == InfoTlvType.REMOTE:
                remote = True
    return shown_state(int(pdu.flags), local, remote, bool(pdu.tlvs))


def shown_state(flags: int, local: bool, remote: bool, tlvs: bool) -> str | None:
    """`infer_state` of an Information OAMPDU with these flags, Local and Remote TLVs (and any TLV)."""
    if not local:
        return FAULT if flags & _LINK_FAULT and not tlvs else None
    if not remote:
        return ACTIVE_SEND_LOCAL
    if flags & EVALUATING_AND_STABLE == _LOCAL_STABLE:
        return SEND_ANY if flags & _REMOTE_STABLE else SEND_LOCAL_REMOTE_OK
    return SEND_LOCAL_REMOTE


def loopback_state(tlv: InfoTlv) -> str:
    """What the State field says about loopback (RFC 4878 dot3OamLoopbackStatus terms)."""
    parser, mux = tlv.parser_action, tlv.mux_action
    if parser == _LOOPBACK:
        return "local_loopback"  # loops the peer's frames back
    if parser == _DISCARD:
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
        "org_specific",
        "prev_local",
        "repeat_findings",
        "repeats",
        "revisions",
        "ring",
        "ring_index",
        "send_any_since",
        "send_any_time",
        "silence_checked",
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
        self.org_specific: dict[int, int] = {}  # OUI -> Organization Specific OAMPDUs
        self.silence_checked = False  # its current silence was held against its peer (lost_link_ignored)

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


class Interface:
    """One capture interface: its speakers and its gaps."""

    __slots__ = ("gap_end", "gap_start", "id", "last_frame", "last_time", "recent", "silence_deadline", "speakers")

    def __init__(self, interface: int, time: float) -> None:
        self.id = interface
        self.speakers: dict[str, Speaker] = {}
        self.recent: list[Speaker] = []  # the speakers with a steady state, latest first (a few)
        self.last_time = time
        self.last_frame = 0
        self.gap_start = float("-inf")  # when the latest capture gap began
        self.gap_end = float("-inf")  # and when it ended (the first frame after it)
        # no speaker can have been silent for the lost-link time before this (a lower bound)
        self.silence_deadline = float("inf")

    def peer(self, speaker: Speaker) -> Speaker | None:
        """The other speaker on the link (the latest heard, if there are several)."""
        best: Speaker | None = None
        for other in self.speakers.values():
            if other is not speaker and (best is None or other.last_time > best.last_time):
                best = other
        return best


_KIND_ORDER = list(KINDS)


def capabilities(tlv: InfoTlv) -> JsonObject:
    """What a Local Information TLV says the speaker is and can do (JSON-ready)."""
    return {
        "mode": "active" if tlv.oam_config & OamConfig.ACTIVE else "passive",
        "oam_config": oam_config_names(tlv.oam_config),
        "max_pdu_size": tlv.max_pdu_size,
        "oui": format_oui(tlv.oui),
        "vendor_info": tlv.vendor_info,
        "oam_version": tlv.oam_version,
    }


def relative_time(entry: JsonObject, start: float) -> JsonObject:
    """`entry` with its ``time`` in seconds since `start`."""
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
        "capabilities": capabilities(local) if local is not None else None,
        "local": tlv_to_dict(local) if local is not None else None,
        "flags": flag_names(speaker.flags) if speaker.flags is not None else None,
        "counts": {_code_name(code): n for code, n in sorted(speaker.counts.items(), key=lambda i: str(i[0]))},
        "states": [relative_time(s, start) for s in speaker.states],
        "states_dropped": speaker.states_dropped,
        "state": speaker.state,
        "time_to_send_any": time_to_send_any,
        "revisions": [relative_time(r, start) for r in speaker.revisions],
        "events": [relative_time(e, start) for e in speaker.events],
        "events_dropped": speaker.events_dropped,
        "loopbacks": [relative_time(lb, start) for lb in speaker.loopbacks],
        "organization_specific": [
            {"oui": format_oui(oui), "name": oui_name(oui), "count": n}
            for oui, n in sorted(speaker.org_specific.items())
        ],
        "finding_counts": speaker.finding_counts(),
        "findings": [f.to_dict(start) for f in findings],
    }
