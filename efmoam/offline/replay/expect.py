"""Expectations files: what ``efmoam replay FILE`` must find in a capture (``--check``).

Every capture in ``pcaps/`` has a sidecar ``NAME.expect.json`` next to it (``events.pcapng``
-> ``events.expect.json``)::

    {
      "schema": 1,
      "about": "what the capture shows, in words",
      "exit": 1,                      # the exit status of observe mode
      "gaps": 0,                      # capture gaps: nothing recorded for longer than the keep-alive limit
      "speakers": {                   # exactly these speakers, by id
        "02:00:00:00:0a:02": {
          "mode": "active",
          "states": ["SEND_LOCAL_REMOTE", "SEND_ANY"],       # in the order reached
          "revisions": [0],
          "counts": {"information": 15, "event_notification": 6},   # exactly
          "findings": {"short_frame": 18, "implausible_event": 9},  # exactly: others are 0
          "events": [{"kind": "event_notification", "sequence": 0, "frame": 23,
                      "tlvs": [{"kind": "errored_symbol_period", "window": 1000}]}]
        }
      }
    }

Every key is optional: `check` compares what the file states.  ``events`` must have the
same length as what replay found, and each expected event must agree with the found one
on the keys it gives (nested lists and objects likewise).  ``--write-expect`` writes a
file from what replay finds (keeping ``about``), to be read and corrected by hand.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from efmoam.offline.decode import JsonObject

__all__ = ["SCHEMA", "ExpectError", "compare", "expectations", "load", "sidecar_path", "write"]

SCHEMA = 1
_CAPTURE_SUFFIXES = (".pcapng", ".pcap", ".cap")
#: the speaker keys `compare` reads as a container, and what each must be
_SPEAKER_KEYS: dict[str, tuple[type, str]] = {
    "states": (list, "a list"),
    "revisions": (list, "a list"),
    "counts": (dict, "an object"),
    "findings": (dict, "an object"),
    "events": (list, "a list"),
}


class ExpectError(Exception):
    """The expectations file is missing or not valid."""


def sidecar_path(capture: str | os.PathLike[str]) -> Path:
    """``dir/NAME.pcapng`` -> ``dir/NAME.expect.json``."""
    path = Path(capture)
    name = path.name
    for suffix in _CAPTURE_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return path.with_name(name + ".expect.json")


def load(path: str | os.PathLike[str]) -> JsonObject:
    """Read and check the shape of an expectations file."""
    try:
        with open(path, encoding="utf-8") as stream:
            data = json.load(stream)
    except FileNotFoundError as error:
        raise ExpectError(f"no expectations file {os.fspath(path)}") from error
    except (OSError, ValueError) as error:
        raise ExpectError(f"{os.fspath(path)}: {error}") from error
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ExpectError(f"{os.fspath(path)}: not an expectations file of schema {SCHEMA}")
    speakers = data.get("speakers", {})
    if not isinstance(speakers, dict) or not all(isinstance(v, dict) for v in speakers.values()):
        raise ExpectError(f"{os.fspath(path)}: speakers must be an object of objects")
    for speaker_id, speaker in speakers.items():
        for key, (kind, name) in _SPEAKER_KEYS.items():
            if key in speaker and not isinstance(speaker[key], kind):
                raise ExpectError(f"{os.fspath(path)}: speakers.{speaker_id}.{key} must be {name}")
    return data


def _compact_event(event: JsonObject) -> JsonObject:
    """What an expectations file keeps of an event: enough to tell it from another."""
    keep: JsonObject = {"kind": event["kind"], "frame": event["frame"]}
    kind = event["kind"]
    if kind == "event_notification":
        keep["sequence"] = event["sequence"]
        keep["duplicates"] = event["duplicates"]
        keep["tlvs"] = [
            {k: tlv[k] for k in ("kind", "window", "threshold", "errors") if k in tlv} for tlv in event["tlvs"]
        ]
    elif kind == "flag":
        keep.update(flag=event["flag"], change=event["change"])
    elif kind == "loopback_command":
        keep["command"] = event["command"]
    elif kind == "loopback_state":
        keep["state"] = event["state"]
    elif kind == "variable_request":
        keep["descriptors"] = event["descriptors"]
    elif kind == "variable_response":
        keep["containers"] = [{k: c[k] for k in ("branch", "leaf", "indication")} for c in event["containers"]]
    elif kind == "organization_specific":
        keep["oui"] = event["oui"]
    return keep


def _speaker_facts(speaker: JsonObject) -> JsonObject:
    caps = speaker["capabilities"]
    return {
        "mode": caps["mode"] if caps else None,
        "states": [s["state"] for s in speaker["states"]],
        "revisions": [r["revision"] for r in speaker["revisions"]],
        "counts": speaker["counts"],
        "findings": speaker["finding_counts"],
    }


def expectations(summary: JsonObject, status: int, about: str = "") -> JsonObject:
    """An expectations file stating what `summary` shows."""
    speakers = {}
    for speaker_id, speaker in summary["speakers"].items():
        facts = _speaker_facts(speaker)
        facts["events"] = [_compact_event(e) for e in speaker["events"]]
        speakers[speaker_id] = facts
    return {"schema": SCHEMA, "about": about, "exit": status, "gaps": len(summary["gaps"]), "speakers": speakers}


def write(path: str | os.PathLike[str], summary: JsonObject, status: int) -> None:
    """Write the expectations of `summary` to `path`, keeping an existing ``about``."""
    about = ""
    with contextlib.suppress(ExpectError):
        about = str(load(path).get("about", ""))
    text = json.dumps(expectations(summary, status, about), indent=2) + "\n"
    Path(path).write_text(text, encoding="utf-8")


def _matches(expected: Any, actual: Any) -> bool:
    """`actual` agrees with `expected` on everything `expected` states."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and _matches(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(_matches(e, a) for e, a in zip(expected, actual, strict=True))
        )
    return bool(expected == actual)


def _text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def compare(expected: JsonObject, summary: JsonObject, status: int) -> list[str]:
    """The differences between an expectations file and what replay found (empty: it matches)."""
    diffs: list[str] = []
    if "exit" in expected and expected["exit"] != status:
        diffs.append(f"exit status: expected {_text(expected['exit'])}, found {status}")
    if "gaps" in expected and expected["gaps"] != len(summary["gaps"]):
        diffs.append(f"capture gaps: expected {_text(expected['gaps'])}, found {len(summary['gaps'])}")
    wanted: dict[str, JsonObject] = expected.get("speakers", {})
    found: dict[str, JsonObject] = summary["speakers"]
    for speaker_id in wanted.keys() - found.keys():
        diffs.append(f"{speaker_id}: expected, not found")
    for speaker_id in found.keys() - wanted.keys():
        diffs.append(f"{speaker_id}: found, not expected")
    for speaker_id in (s for s in wanted if s in found):
        want, speaker = wanted[speaker_id], found[speaker_id]
        facts = _speaker_facts(speaker)
        for key in ("mode", "states", "revisions", "counts"):
            if key in want and want[key] != facts[key]:
                diffs.append(f"{speaker_id}: {key}: expected {_text(want[key])}, found {_text(facts[key])}")
        if "findings" in want:
            kinds = dict.fromkeys([*want["findings"], *facts["findings"]])
            for kind in kinds:
                a, b = want["findings"].get(kind, 0), facts["findings"].get(kind, 0)
                if a != b:
                    diffs.append(f"{speaker_id}: findings: {kind}: expected {_text(a)}, found {_text(b)}")
        if "events" in want:
            diffs += _compare_events(speaker_id, want["events"], speaker["events"])
    return diffs


def _compare_events(speaker_id: str, wanted: list[JsonObject], found: list[JsonObject]) -> list[str]:
    diffs = []
    if len(wanted) != len(found):
        diffs.append(f"{speaker_id}: events: expected {len(wanted)}, found {len(found)}")
    for index, (want, event) in enumerate(zip(wanted, found, strict=False)):
        if not _matches(want, event):
            diffs.append(f"{speaker_id}: event {index}: expected {_text(want)}, found {_text(_compact_event(event))}")
    for index in range(len(found), len(wanted)):
        diffs.append(f"{speaker_id}: event {index}: expected {_text(wanted[index])}, not found")
    for index in range(len(wanted), len(found)):
        diffs.append(f"{speaker_id}: event {index}: found {_text(_compact_event(found[index]))}, not expected")
    return diffs
