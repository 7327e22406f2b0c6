"""Where observe mode's findings and timeline entries go.

Design: one small object (`Timeline`) that the observer and its trackers (`discovery`,
`loopbacks`, `silences`) share: `find` counts a finding on its speaker (aggregated by
kind and detail, so memory does not grow with the capture), `event` keeps an event in the
speaker's capped list, and both stream a timeline entry to `on_entry` when there is one
(a JSON-ready dict: ``frame``, ``time``, ``t``, ``speaker``, ``what``, then what belongs
to it).  Without `on_entry` no entry is built.  With `on_line` instead (the reports),
each entry goes out as its line in a `lines.LineFormat` (plain text, or JSON text),
rendered from what belongs to it: no entry dict is built either (the dict, then its text,
cost twice as much).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from efmoam.offline.capture import CaptureRecord
from efmoam.offline.decode import JsonObject
from efmoam.offline.replay.findings import Finding
from efmoam.offline.replay.lines import TEXT, LineFormat, entry_dict
from efmoam.offline.replay.speaker import Speaker

__all__ = ["MAX_EVENTS", "MAX_FINDINGS", "Entry", "Line", "Timeline"]

#: per-speaker caps on what the summary keeps (the timeline has everything)
MAX_EVENTS = 1000
MAX_FINDINGS = 1000  #: distinct (kind, detail) per speaker; more are counted under one detail
_MORE = "(more details not kept)"

#: finding kinds whose every occurrence is a timeline line (the others: the first one)
EVERY_OCCURRENCE = frozenset(
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

Entry = Callable[[JsonObject], None]
Line = Callable[[str], object]  #: receives each timeline line (plain text: with its newline, as a stream's write)


class Timeline:
    """The findings and events of the speakers, and the timeline entries they make."""

    __slots__ = ("_entry_line", "_finding_line", "on_entry", "on_line", "start", "wanted")

    def __init__(self, on_entry: Entry | None, on_line: Line | None = None, line_format: LineFormat = TEXT) -> None:
        self.on_entry = on_entry
        self.on_line = on_line
        self._entry_line, self._finding_line = line_format
        self.wanted = on_entry is not None or on_line is not None  #: whether entries go anywhere
        self.start = 0.0  #: the first record's time (entries' ``t`` counts from it)

    def emit(self, speaker: Speaker | None, record: CaptureRecord, what: str, fields: JsonObject | None = None) -> None:
        """One timeline entry (`speaker` None: about the capture, not a speaker)."""
        if self.on_line is not None:
            who = None if speaker is None else speaker.id
            self.on_line(self._entry_line(record.number, record.time, self.start, who, what, fields or {}))
        elif self.on_entry is not None:
            who = None if speaker is None else speaker.id
            self.on_entry(entry_dict(record.number, record.time, self.start, who, what, fields or {}))

    def find(
        self,
        speaker: Speaker,
        record: CaptureRecord,
        kind: str,
        detail: str,
        frames: tuple[int, ...] | None = None,
        **extra: Any,
    ) -> Finding:
        """Count a finding; its first occurrence (and every one of the timed kinds) goes to the timeline."""
        findings = speaker.findings
        finding = findings.get((kind, detail))
        if finding is None:
            key = (kind, detail) if len(findings) < MAX_FINDINGS else (kind, _MORE)
            finding = findings.get(key)
            if finding is None:
                finding = findings[key] = Finding(*key)
        previous = finding.last_time
        t = record.time
        first = finding.add(frames or (record.number,), t)
        if self.wanted and (first or kind in EVERY_OCCURRENCE or (kind == "rate_exceeded" and t - previous > 1.0)):
            if self.on_line is not None:
                self.on_line(self._finding_line(record.number, t, self.start, speaker.id, kind, detail, extra))
            else:
                self.emit(speaker, record, "finding", {"kind": kind, "detail": detail, **extra})
        return finding

    def event(self, speaker: Speaker, record: CaptureRecord, event: JsonObject) -> None:
        """Something a speaker did (``kind`` and what belongs to it), kept and shown."""
        event["frame"] = record.number
        event["time"] = record.time
        if len(speaker.events) < MAX_EVENTS:
            speaker.events.append(event)
        else:
            speaker.events_dropped += 1
        self.emit(speaker, record, "event", {"event": event})
