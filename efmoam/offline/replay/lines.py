"""How observe mode's timeline entries read: as plain text lines and as JSON objects.

Design: one text renderer per kind of entry (``what``), each a function of the entry's own
fields (what the entry says beyond ``frame``, ``time``, ``t``, ``speaker`` and ``what``).
`render_line` renders straight from those fields, so the text report never builds the
entry's dict (`timeline.Timeline` calls it when it writes lines); `render_entry` renders a
whole entry dict the same way.  For ``--json``, `JsonLines` writes the text
``json.dumps`` makes of `entry_dict` (the one definition of an entry's dict) without
building the dict: the common keys from a template, the fields by ``json``.  A finding
has its own renderers (`render_finding_line`, `JsonLines.finding`): findings are most of
a timeline.  Tests hold each pair to the dict's rendering.  The summary
(`report`) uses `event_text` and `capabilities_text` for its own lines.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import encode_basestring_ascii as _quote  # how json writes a str
from typing import Any, NamedTuple

from efmoam.offline.decode import JsonObject, format_text, tlv_text

__all__ = [
    "COMMON",
    "TEXT",
    "JsonLines",
    "LineFormat",
    "capabilities_text",
    "entry_dict",
    "event_text",
    "finding_text",
    "json_format",
    "render_entry",
    "render_finding_line",
    "render_line",
]

#: the keys every timeline entry has, before its own fields
COMMON = frozenset(("frame", "time", "t", "speaker", "what"))
_FINDING_KEYS = COMMON | {"kind", "detail"}


def _pdu_text(code_name: str, fields: JsonObject) -> str:
    """The body of an OAMPDU as ``efmoam decode`` prints it (without source and flags)."""
    line = format_text({"src": "", "flag_names": [], "code_name": code_name, **fields})
    return line.split("  ", 2)[2]


def event_text(event: JsonObject) -> str:
    """What a speaker did (`Timeline.event`'s dict), as the timeline and the summary show it."""
    kind = event["kind"]
    if kind == "event_notification":
        # what _pdu_text makes of it (a sequence number and TLVs), without the detour
        text = f"event_notification  seq={event['sequence']}"
        for tlv in event["tlvs"]:
            text += "  " + tlv_text(tlv)
        if event.get("duplicates"):
            text += f"  (+{event['duplicates']} duplicates)"
    elif kind in ("variable_request", "variable_response"):
        text = _pdu_text(kind, event)
    elif kind == "organization_specific":
        text = f"organization_specific  oui={event['oui']} value={event['value'] or '-'}"
    elif kind == "flag":
        text = f"flag {event['flag']} {event['change']}"
    elif kind == "loopback_command":
        text = f"loopback_control  command={event['command']}"
    elif kind == "loopback_state":
        text = f"loopback state {event['state']} (parser={event['parser']} mux={event['mux']})"
    else:
        text = kind
    return text


def capabilities_text(fields: JsonObject) -> str:
    """What a speaker advertises (`speaker.capabilities`)."""
    return (
        f"{fields['mode']}, config={','.join(fields['oam_config']) or '-'}, pdu={fields['max_pdu_size']},"
        f" oui={fields['oui']}, vendor={fields['vendor_info']:#010x}, version={fields['oam_version']}"
    )


def _extra(fields: JsonObject, skip: frozenset[str]) -> str:
    extra = [f"{k}={v}" for k, v in fields.items() if k not in skip]
    return f" ({', '.join(extra)})" if extra else ""


def finding_text(kind: str, detail: str, extra: JsonObject) -> str:
    """A finding (`Timeline.find`): its kind, its detail and what else belongs to it."""
    if extra:
        return f"FINDING {kind}: {detail} ({', '.join([f'{k}={v}' for k, v in extra.items()])})"
    return f"FINDING {kind}: {detail}"


def _revision_text(fields: JsonObject) -> str:
    changed = fields.get("changed")
    return f"revision {fields['revision']}" + (f": {', '.join(changed)} changed" if changed else "")


def _state_text(fields: JsonObject) -> str:
    text = f"state {fields['state']}"
    if fields.get("inferred"):
        text += " (inferred: fell back to ACTIVE_SEND_LOCAL)"
    if "after" in fields:
        text += f" ({fields['after']:.3f} s after Discovery began)"
    return text


#: what -> the text of a timeline entry of that kind (after FRAME, TIME and SPEAKER), from its fields
_WHAT_TEXT: dict[str, Callable[[JsonObject], str]] = {
    "speaker": lambda fields: f"new speaker on interface {fields['interface']}",
    "capabilities": lambda fields: f"advertises {capabilities_text(fields)}, revision {fields['revision']}",
    "revision": _revision_text,
    "state": _state_text,
    "event": lambda fields: event_text(fields["event"]),
    "duplicate_event": lambda fields: f"duplicate event_notification  seq={fields['sequence']}",
    "finding": lambda fields: finding_text(
        fields["kind"], fields["detail"], {k: v for k, v in fields.items() if k not in _FINDING_KEYS}
    ),
    "capture_gap": lambda fields: (
        f"CAPTURE GAP: no frame for {fields['seconds']:.3f} s after frame {fields['after_frame']}"
    ),
}


def render_line(frame: int, time: float, start: float, speaker: str | None, what: str, fields: JsonObject) -> str:
    """One timeline line, with its newline: FRAME, TIME, SPEAKER (None: ``-``), WHAT.

    TIME is `time` - `start` to the microsecond: the digits of the entry's ``t`` (rounded
    to the microsecond), without rounding it first.
    """
    text_of = _WHAT_TEXT.get(what)
    text = what + _extra(fields, COMMON) if text_of is None else text_of(fields)
    return f"{frame}  {time - start:.6f}  {speaker or '-'}  {text}\n"


def render_finding_line(
    frame: int, time: float, start: float, speaker: str, kind: str, detail: str, extra: JsonObject
) -> str:
    """`render_line` of a finding, from what `Timeline.find` has (its hot path: no fields dict)."""
    return f"{frame}  {time - start:.6f}  {speaker}  {finding_text(kind, detail, extra)}\n"


def render_entry(entry: JsonObject) -> str:
    """One timeline line (without its newline) from a whole entry dict."""
    fields = {key: value for key, value in entry.items() if key not in COMMON}
    return render_line(entry["frame"], entry["t"], 0.0, entry["speaker"], entry["what"], fields)[:-1]


# -- JSON ------------------------------------------------------------------------------------------


def compact_encoder() -> Callable[[Any], str]:
    """``json.dumps(obj, separators=(",", ":"))``, with json's C encoder made once.

    `json.JSONEncoder.encode` makes a new C encoder for every call (0.8 us, more than a
    small dict's encoding); without the C encoder (another Python), it is what is used.
    """
    standard = json.JSONEncoder(separators=(",", ":"), check_circular=False)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return standard.encode
    # the arguments JSONEncoder.iterencode gives it: no markers, the standard default,
    # ASCII strings, no indent, the separators, unsorted, no skipped keys, NaN allowed
    encoder = make(None, standard.default, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, True)

    def encode(obj: Any) -> str:
        text: str = "".join(encoder(obj, 0))
        return text

    return encode


_dumps = compact_encoder()


def entry_dict(frame: int, time: float, start: float, speaker: str | None, what: str, fields: JsonObject) -> JsonObject:
    """The JSON-ready dict of a timeline entry: the common keys, then `fields` (which may
    repeat ``frame`` and ``time``, with the same values)."""
    entry = {"frame": frame, "time": time, "t": round(time - start, 6), "speaker": speaker, "what": what}
    if fields:
        entry.update(fields)
    return entry


class JsonLines:
    """`entry_dict` as compact JSON text (what ``json.dumps`` makes of it), without building it.

    One per timeline: it keeps the last entry's JSON up to ``what`` (a frame that is news
    often makes several entries, and a float's repr is the dear part), for the very same
    frame, time, start and speaker (compared by identity, the same record's values being
    the same objects: never a wrong match, as 1 == 1.0 and 0.0 == -0.0 would be).
    """

    __slots__ = ("_head", "_key")

    def __init__(self) -> None:
        self._key: tuple[Any, ...] = (None, None, None, None)
        self._head = ""

    def _start(self, frame: int, time: float, start: float, speaker: str | None, what: str) -> str:
        # what json writes of the common keys: a time is finite (the capture readers make it
        # of integers) and json writes a finite float as its repr, a str as _quote does
        key = self._key
        if frame is not key[0] or time is not key[1] or start is not key[2] or speaker is not key[3]:
            who = "null" if speaker is None else _quote(speaker)
            self._key = (frame, time, start, speaker)
            self._head = f'{{"frame":{frame},"time":{time!r},"t":{round(time - start, 6)!r},"speaker":{who},"what":'
        return self._head + _quote(what)

    def entry(self, frame: int, time: float, start: float, speaker: str | None, what: str, fields: JsonObject) -> str:
        """The JSON text of `entry_dict` (same arguments)."""
        if not fields:
            return self._start(frame, time, start, speaker, what) + "}"
        if not COMMON.isdisjoint(fields):  # a common key again: where the dict keeps it
            return _dumps(entry_dict(frame, time, start, speaker, what, fields))
        return self._start(frame, time, start, speaker, what) + "," + _dumps(fields)[1:]

    def finding(
        self, frame: int, time: float, start: float, speaker: str, kind: str, detail: str, extra: JsonObject
    ) -> str:
        """`entry` of a finding, from what `Timeline.find` has."""
        if extra and not COMMON.isdisjoint(extra):
            return self.entry(frame, time, start, speaker, "finding", {"kind": kind, "detail": detail, **extra})
        text = self._start(frame, time, start, speaker, "finding") + ',"kind":' + _quote(kind)
        text += ',"detail":' + _quote(detail)
        return text + "," + _dumps(extra)[1:] if extra else text + "}"


class LineFormat(NamedTuple):
    """How `Timeline` writes an entry as a line: plain text or JSON (one object, no newline)."""

    entry: Callable[[int, float, float, str | None, str, JsonObject], str]
    finding: Callable[[int, float, float, str, str, str, JsonObject], str]


TEXT = LineFormat(render_line, render_finding_line)


def json_format() -> LineFormat:
    """A `LineFormat` of JSON text (a new `JsonLines`: one per timeline)."""
    lines = JsonLines()
    return LineFormat(lines.entry, lines.finding)
