"""Saved state written before the vocabulary change (snapshot version 2) is still read.

`saved/snapshot-v2.json` is what the previous release's `OamPort.saved_state` wrote for
`failed_pair` (tests/core/test_persistence.py): a local errored-frame failure after a
degrade, and the peer's Critical Event; the failure's entry carries a wall-clock time.
Its entries have the old names (``time`` monotonic, ``wall_time``, ``window``,
``value``, ``running_total``, ``event_total``).
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs
from hypothesis import given, settings, strategies as st

from efmoam.core import OamPort, PortSettings
from efmoam.core.linkmon import EventLogEntry, MonitorKind, MonitorState
from efmoam.core.linkmon.eventlog import DERIVED_KEYS
from efmoam.core.linkmon.persist import VERSION
from tests.core.test_persistence import FRAME_SF, VALUES, failed_pair, mutate, restored_or_refused

V2 = Path(__file__).parent / "saved" / "snapshot-v2.json"


def restored(data: object) -> OamPort:
    port = OamPort(PortSettings(link_monitoring=FRAME_SF), "02:00:00:00:00:0a", now=50.0)
    port.restore(data, now=50.0)
    return port


def test_a_version_2_snapshot_restores_as_the_current_one_does() -> None:
    old = restored(json.loads(V2.read_text()))
    new = restored(json.loads(json.dumps(failed_pair().a.saved_state())))
    assert VERSION == 3
    # the same log, entry for entry, but for the wall time only the old file has
    stamped = {2: 1763990006.0}
    assert [(slot, attrs.evolve(e, wall_time=None)) for slot, e in old.event_log()] == new.event_log()
    assert [e.wall_time for _, e in old.event_log()] == [stamped.get(e.index) for _, e in new.event_log()]
    assert old.out_of_service and old.service.reasons == new.service.reasons
    assert old.link_monitoring.monitors[MonitorKind.ERRORED_FRAME].state is MonitorState.FAILED
    failure = next(e for _, e in old.event_log() if e.index == 2)
    assert (failure.time, failure.window, failure.value, failure.running_total, failure.event_total) == (6, 10, 6, 9, 2)
    # and it is written back in the current version, under the current names
    again = old.saved_state()
    assert again["version"] == VERSION
    assert {"monotonic", "time", "window_on_wire", "errors", "error_running_total"} <= set(again["log"][0])
    assert not {"wall_time", "value", "running_total", "event_total", "window"} & set(again["log"][0])


def test_a_version_2_entry_with_a_wrong_value_is_refused_by_its_old_name() -> None:
    data = json.loads(V2.read_text())
    data["log"][2]["running_total"] = -1
    try:
        restored(data)
    except ValueError as exc:
        assert "error_running_total" in str(exc)  # named as it is read now
    else:
        raise AssertionError("a negative running total was accepted")


def test_the_saved_entry_is_the_view_without_its_derived_keys() -> None:
    (slot, entry), *_ = ((s, e) for s, e in failed_pair().a.event_log() if e.index == 2)
    view, saved = entry.view(slot), entry.saved(slot)
    assert saved == {k: v for k, v in view.items() if k not in DERIVED_KEYS}
    assert sorted(saved) == sorted([
        "slot", "index", "location", "type_number", "severity", "time", "monotonic", "oui", "window_on_wire",
        "threshold", "errors", "error_running_total", "event_running_total", "port_affecting", "active",
    ])  # fmt: skip
    assert EventLogEntry.from_view(saved) == EventLogEntry.from_view(view) == (slot, entry)


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_any_mutation_of_a_version_2_snapshot_is_restored_or_refused(data: st.DataObject) -> None:
    """The old names are input too: whatever a version 2 file holds (an entry with both
    ``time`` and ``monotonic``, a key of each generation, a non-object), restore either
    restores it, consistently, or raises ValueError."""
    saved = json.loads(V2.read_text())
    for _ in range(data.draw(st.integers(1, 4))):
        mutate(saved, data)
    log = saved.get("log")
    if isinstance(log, list) and log and data.draw(st.booleans()):  # a key of the new names in an old entry
        entry = data.draw(st.sampled_from(log))
        if isinstance(entry, dict) and entry:  # never the shared empty {} of VALUES
            entry[data.draw(st.sampled_from(["monotonic", "errors", "window_on_wire", "time"]))] = data.draw(VALUES)
    port = restored_or_refused(saved)
    shown = {entry.index: entry for _, entry in port.event_log()}
    active = port.link_monitoring.active_events()
    assert all(shown.get(entry.index) == entry for entry in active)
    assert port.out_of_service is any(entry.port_affecting for entry in active)


def test_a_log_entry_that_differs_from_its_active_event_shows_the_event() -> None:
    """Found by the fuzz above: a log entry of an active event's index, changed in the
    file, was shown beside the event's own entry, both active."""
    saved = json.loads(json.dumps(failed_pair().a.saved_state()))
    del saved["log"][1]  # the degrade's slot is free for the failure's own entry
    next(view for view in saved["log"] if view["index"] == 2)["errors"] = None
    port = restored_or_refused(saved)
    assert [(e.index, e.value, e.active) for _, e in port.event_log() if e.index == 2] == [(2, 6, True)]
