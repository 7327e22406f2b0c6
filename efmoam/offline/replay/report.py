"""``efmoam replay FILE`` (observe mode): the timeline and the per-speaker summary.

Nothing here depends on click: `run_observe` takes a path and two text streams and
returns the exit status.

Plain text
    The timeline, one line per thing that happened (the steady state prints nothing):
    ``FRAME  TIME  SPEAKER  WHAT``, TIME in seconds since the first record.  Every
    finding's first occurrence is a line, and so is every occurrence of the timed ones
    (gaps, silences, bursts).  Then one block per speaker: capabilities, frames per
    code, the Discovery states it reached and when, time to SEND_ANY, revisions, events,
    loopbacks, and its findings with the frames that show them.

JSON (``--json``)
    One document, written as it goes: ``{"schema": 1, "file", "mode": "observe",
    "limits", "timeline": [...], "summary": {...}, "exit"}``.  Timeline entries have
    ``frame``, ``time`` (seconds since the epoch, as ``efmoam decode --json``), ``t``
    (seconds since the first record), ``speaker`` (its id: the MAC, with ``@N`` for
    pcapng interface N > 0; null for a capture gap), ``what`` and what belongs to it.
    Event Notification TLVs are rendered as ``efmoam decode --json`` renders them.

Exit status
    0 no finding, 1 findings, 2 unreadable input (not a capture, damaged, not Ethernet,
    cannot be opened: what was read before is still reported).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import BinaryIO, TextIO

from efmoam.offline.capture import CaptureError
from efmoam.offline.decode import JsonObject, NotEthernetError, open_records
from efmoam.offline.replay.findings import Limits
from efmoam.offline.replay.lines import TEXT, LineFormat, capabilities_text, event_text, json_format, render_entry
from efmoam.offline.replay.observe import Observer
from efmoam.offline.replay.timeline import Line
from efmoam.offline.source import source_name

__all__ = ["EXIT_FINDINGS", "EXIT_OK", "EXIT_UNREADABLE", "observe_file", "render_entry", "run_check", "run_observe"]

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_UNREADABLE = 2

_dumps = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode


def observe_file(
    source: str | os.PathLike[str],
    *,
    limits: Limits | None = None,
    on_entry: Callable[[JsonObject], None] | None = None,
    on_line: Line | None = None,
    line_format: LineFormat = TEXT,
    stdin: BinaryIO | None = None,
) -> tuple[Observer, str]:
    """Observe the capture `source`; returns the observer and the problem ("" if none).

    The timeline goes to `on_entry` (dicts) or to `on_line` (lines in `line_format`), as
    `Observer` says.
    """
    observer = Observer(limits, on_entry, on_line, line_format)
    name = source_name(source, stdin)
    problem = ""
    try:
        records = open_records(source, stdin)
        first = next(records, None)
        if first is not None:
            if first.linktype != 1:
                raise NotEthernetError(first.linktype)
            observer.run((first,))
            observer.run(records)
    except (CaptureError, NotEthernetError) as error:
        problem = f"{name}: {error}"
    except OSError as error:
        problem = f"cannot read {name}: {error.strerror or error}"
    observer.finish()
    return observer, problem


def exit_status(observer: Observer, problem: str) -> int:
    if problem:
        return EXIT_UNREADABLE
    return EXIT_FINDINGS if observer.finding_total() else EXIT_OK


def run_observe(
    source: str | os.PathLike[str],
    out: TextIO,
    err: TextIO,
    *,
    json_output: bool = False,
    limits: Limits | None = None,
    timeline: bool = True,
    stdin: BinaryIO | None = None,
) -> int:
    """Observe `source`, write the report to `out` and problems to `err`; the exit status."""
    limits = limits or Limits()
    if json_output:
        head = {"schema": 1, "file": source_name(source, stdin), "mode": "observe", "limits": limits.to_dict()}
        out.write(_dumps(head)[:-1] + ',"timeline":[')
        separator = ["\n"]

        def write_json(entry: str) -> None:
            out.write(separator[0] + entry)
            separator[0] = ",\n"

        observer, problem = observe_file(
            source, limits=limits, on_line=write_json if timeline else None, line_format=json_format(), stdin=stdin
        )
        status = exit_status(observer, problem)
        summary = observer.summary()
        out.write('\n],"summary":' + json.dumps(summary, indent=1) + ',"exit":%d}\n' % status)  # noqa: UP031
    else:
        if timeline:
            out.write("FRAME  TIME  SPEAKER  WHAT\n")
        observer, problem = observe_file(source, limits=limits, on_line=out.write if timeline else None, stdin=stdin)
        status = exit_status(observer, problem)
        summary = observer.summary()
        out.write(render_summary(summary))
    out.flush()
    if problem:
        err.write(f"efmoam replay: error: {problem}\n")
        err.flush()
    return status


# -- text -------------------------------------------------------------------------------


def _frames_text(frames: list[int], count: int, last: int) -> str:
    shown = ", ".join(str(f) for f in frames)
    if count * 2 > len(frames) and last not in frames:
        shown += f", ... {last}"
    return shown


def _at_frame(frame: int | None) -> str:
    return "not captured" if frame is None else f"at frame {frame}"


def _loopback_text(lb: JsonObject) -> str:
    """One loopback: what was seen of it; what was not (in a capture gap, or after the end) in words."""
    text = (
        f"  loopback: enable at frame {lb['enable_frame']}, peer looping {_at_frame(lb['looping_frame'])},"
        f" disable {_at_frame(lb['disable_frame'])}, ended {_at_frame(lb['ended_frame'])}"
    )
    gaps = lb.get("gaps", 0)
    if gaps:
        text += f" ({gaps} capture gap{'s' if gaps > 1 else ''} while it was open)"
    return text


def render_summary(summary: JsonObject) -> str:
    """The per-speaker summary after the timeline."""
    lines = [""]
    speakers = summary["speakers"]
    lines.append(
        f"{summary['records']} records, {summary['oampdus']} OAMPDUs, {summary['malformed']} malformed,"
        f" {summary['not_oam']} other frames; {len(speakers)} speakers; {summary['duration']:.3f} s"
    )
    for gap in summary["gaps"]:
        lines.append(f"capture gap: {gap['seconds']:.3f} s between frames {gap['after_frame']} and {gap['frame']}")
    for speaker_id, s in speakers.items():
        lines.append("")
        caps = s["capabilities"]
        lines.append(f"{speaker_id}: " + (capabilities_text(caps) if caps else "no Local Information TLV seen"))
        counts = ", ".join(f"{code} {n}" for code, n in s["counts"].items())
        lines.append(
            f"  frames {s['first_frame']}..{s['last_frame']} ({s['first_time']:.3f}..{s['last_time']:.3f} s): {counts}"
        )
        states = ", ".join(
            f"{st['state']}{'?' if st.get('inferred') else ''} at {st['time']:.3f} (frame {st['frame']})"
            for st in s["states"]
        )
        lines.append(f"  states: {states or '-'}")
        to_any = s["time_to_send_any"]
        lines.append(
            "  time to SEND_ANY: " + (f"{to_any:.3f} s" if to_any is not None else "not seen (no Discovery captured)")
        )
        revisions = ", ".join(f"{r['revision']} (frame {r['frame']})" for r in s["revisions"])
        lines.append(f"  revisions: {revisions or '-'}")
        events = s["events"]
        if events:
            lines.append(f"  events ({len(events) + s['events_dropped']}):")
            lines.extend(f"    {e['frame']}  {e['time']:.3f}  {event_text(e)}" for e in events)
        for lb in s["loopbacks"]:
            lines.append(_loopback_text(lb))
        orgs = s.get("organization_specific")
        if orgs:
            lines.append(
                "  organization specific: "
                + ", ".join(f"{o['oui']}{' ' + o['name'] if o['name'] else ''} x{o['count']}" for o in orgs)
            )
        findings = s["findings"]
        if findings:
            total = sum(f["count"] for f in findings)
            lines.append(f"  findings ({total}):")
            for f in findings:
                lines.append(
                    f"    {f['kind']} x{f['count']}: {f['detail']}"
                    f" (frames {_frames_text(f['frames'], f['count'], f['last_frame'])})"
                )
        else:
            lines.append("  findings: none")
    total = summary["findings"]
    lines.append("")
    lines.append(f"{total} findings" if total else "no findings")
    return "\n".join(lines) + "\n"


def run_check(
    source: str | os.PathLike[str],
    out: TextIO,
    err: TextIO,
    *,
    expect_path: str | os.PathLike[str] | None = None,
    write: bool = False,
    json_output: bool = False,
    limits: Limits | None = None,
    stdin: BinaryIO | None = None,
) -> int:
    """``--check``: compare what replay finds with the expectations file (0 match, 1 not, 2 unreadable).

    With `write`, (re)write the expectations file from what replay finds instead.  The
    capture is read once: `source` "-" streams `stdin`, which has no file to put the
    sidecar beside, so `expect_path` is then required (the command line says so).
    """
    from efmoam.offline.replay import expect  # noqa: PLC0415
    from efmoam.offline.source import is_stdin, source_name  # noqa: PLC0415

    if expect_path is None and is_stdin(source, stdin):
        raise ValueError("standard input has no expectations file beside it: give expect_path")
    name = source_name(source, stdin)
    path = expect.sidecar_path(source) if expect_path is None else expect_path
    observer, problem = observe_file(source, limits=limits, stdin=stdin)
    if problem:
        err.write(f"efmoam replay: error: {problem}\n")
        return EXIT_UNREADABLE
    summary = observer.summary()
    status = exit_status(observer, problem)
    if write:
        try:
            expect.write(path, summary, status)
        except OSError as error:
            err.write(f"efmoam replay: error: cannot write {os.fspath(path)}: {error.strerror or error}\n")
            return EXIT_UNREADABLE
        out.write(f"{os.fspath(path)}: written\n")
        return EXIT_OK
    try:
        expected = expect.load(path)
    except expect.ExpectError as error:
        err.write(f"efmoam replay: error: {error}\n")
        return EXIT_UNREADABLE
    diffs = expect.compare(expected, summary, status)
    if json_output:
        result = {"file": name, "expect": os.fspath(path), "ok": not diffs, "differences": diffs}
        out.write(json.dumps(result, indent=1) + "\n")
    elif diffs:
        out.write(f"{name}: {len(diffs)} differences from {os.fspath(path)}:\n")
        out.write("".join(f"  {line}\n" for line in diffs))
    else:
        out.write(f"{name}: as expected ({os.fspath(path)})\n")
    return EXIT_FINDINGS if diffs else EXIT_OK
