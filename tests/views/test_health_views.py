"""NIC health monitors in the views: ``show port`` (JSON and text) shows them with their
names, the event-log entry names its monitor, and the standard views (DOT3-OAM-MIB, the
IEEE YANG view) leave health events out without breaking."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from efmoam.core.linkmon.eventlog import EventLogEntry
from efmoam.snmp.mib import OBJECTS, in_mib
from efmoam.views.data import port_view
from efmoam.views.text import render_event_log, render_port
from efmoam.views.yang import interfaces
from pdu import EventLogType
from tests.core.pair import PortPair
from tests.linkmon import link_monitoring, monitor, port_settings
from tests.linkmon.test_health import health, start_health
from tests.snmp.test_mib import Row, make, walk
from tests.views import assert_valid, validate, validator_missing

WALL = 1_795_471_200.0
IFINDEX = 7


def failed_pair() -> PortPair:
    """Port "a" with a local errored-frame failure and two NIC health events (fec_uncorrectable
    failed, fec_corrected degraded), on a 25 Gb/s link; it has a wall clock as in the daemon."""
    pair, feed = start_health(
        errored_frame=monitor(window=2.0),
        fec_uncorrectable=health(window=2.0),
        fec_corrected=health(window=2.0, sd_threshold=10.0, sf_threshold=1e6),
    )
    pair.a.link_monitoring.wall_clock_offset = WALL
    feed.sample(fec_uncorrectable_blocks=3, fec_corrected_bits=500, errored_frames=1)
    feed.sample(fec_corrected_bits=500)
    return pair


def health_entries(pair: PortPair) -> list[EventLogEntry]:
    return [e for _, e in pair.a.event_log() if e.event_type is EventLogType.NIC_HEALTH_EVENT]


def view(pair: PortPair, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return port_view("eth0", pair.a, {"ifindex": IFINDEX, **(extra or {})})


def test_show_json_has_the_health_monitors_and_names_their_events() -> None:
    pair = failed_pair()
    data = view(pair)
    monitors = data["link_monitoring"]["health_monitors"]
    assert set(monitors) == {"fec_uncorrectable", "fec_corrected"}  # only the enabled ones
    corrected = monitors["fec_corrected"]
    assert corrected["counting"] == "rate" and corrected["sd_threshold"] == 10.0 and corrected["state"] == "degraded"
    assert (corrected["errors_last_window"], corrected["value_last_window"]) == (1000, 500.0)
    assert corrected["pre_fec_ber"] == pytest.approx(1000 / (25e9 * 2.0))
    uncorrectable = monitors["fec_uncorrectable"]
    assert (uncorrectable["fatal"], uncorrectable["fatal_last_window"], uncorrectable["state"]) == (True, 3, "failed")
    assert "pre_fec_ber" not in uncorrectable
    events = [e for e in data["event_log"] if e["type"] == "nicHealthEvent"]
    assert sorted((e["monitor"], e["severity"]) for e in events) == [
        ("fec_corrected", "sd"),
        ("fec_uncorrectable", "sf"),
    ]
    failure = next(e for e in events if e["monitor"] == "fec_uncorrectable")
    assert (failure["window_seconds"], failure["window_on_wire"], failure["errors"], failure["threshold"]) == (
        2.0,
        None,
        3,
        1,
    )
    assert failure["type_number"] == 0x10000
    assert "monitor" not in next(e for e in data["event_log"] if e["type"] == "erroredFrameEvent")
    assert data["out_of_service_reasons"] == ["local errored_frame_event", "local fec_uncorrectable"]


def test_a_port_without_health_monitors_has_no_health_key() -> None:
    pair, _ = start_health(errored_frame=monitor())
    assert "health_monitors" not in view(pair)["link_monitoring"]
    assert "NIC Health" not in render_port(view(pair))


def test_a_health_monitor_disabled_again_leaves_the_view() -> None:
    pair, _ = start_health(ib_fatal=health(), link_flaps=health())
    assert set(view(pair)["link_monitoring"]["health_monitors"]) == {"ib_fatal", "link_flaps"}
    pair.call("a", "reconfigure", port_settings(link_monitoring(link_flaps=health())))
    assert set(view(pair)["link_monitoring"]["health_monitors"]) == {"link_flaps"}


def test_show_text_has_the_health_blocks_the_counters_and_the_named_events() -> None:
    pair = failed_pair()
    provides = {"fec_corrected_bits": "ethtool FEC_GET corrected bits", "errored_frames": "sysfs rx_crc_errors"}
    text = render_port(view(pair, {"counters": {"source": "auto", "provides": provides, "error": None}}))
    assert "NIC Health Monitors" in text and "FEC Uncorrectable" in text and "FEC Corrected" in text
    assert "  Pre-FEC BER      : 2.00e-08" in text
    assert "  Errors (last)    : 1000 (500 /s)" in text
    assert "Health Counters    : fec_corrected_bits (ethtool FEC_GET corrected bits)" in text
    log = render_event_log(view(pair))
    assert any(line.split()[4:5] == ["fec_uncorrectable"] for line in log.splitlines())


def test_the_text_log_shows_slots_past_12() -> None:
    pair = failed_pair()
    data = view(pair)
    entry = dict(data["event_log"][0], slot=14)
    log = render_event_log(dict(data, event_log=[*data["event_log"], entry]))
    assert [line.split()[0] for line in log.splitlines()[3:]][-3:] == ["12", "13", "14"]


def test_a_health_event_saved_and_read_back_keeps_its_monitor_and_window() -> None:
    (entry, *_) = health_entries(failed_pair())
    slot, again = EventLogEntry.from_view(entry.saved(5))
    assert (slot, again) == (5, entry)
    with pytest.raises(ValueError, match="no health monitor"):
        EventLogEntry.from_view({**entry.saved(5), "monitor": "errored_frame"})
    with pytest.raises(ValueError, match="names a monitor"):
        EventLogEntry.from_view({**entry.saved(5), "type_number": 3, "window_on_wire": 10})
    with pytest.raises(ValueError, match="without monitor"):
        EventLogEntry.from_view({k: v for k, v in entry.saved(5).items() if k != "monitor"})


# -- the standard views leave them out -------------------------------------------------------------


def test_the_mib_has_no_row_for_a_health_event_and_the_walk_holds() -> None:
    pair = failed_pair()
    entries = health_entries(pair)
    assert entries and not any(in_mib(e) for e in entries)
    mib, _ = make([Row("a", IFINDEX, pair.a)], [pair.now])
    varbinds = walk(mib)
    names = [vb.name for vb in varbinds]
    assert names == sorted(names)  # the walk is whole and in order
    log_rows = {vb.name[-2:] for vb in varbinds if vb.name[: len(OBJECTS) + 1] == (*OBJECTS, 6)}
    standard = [e for _, e in pair.a.event_log() if e.event_type is not EventLogType.NIC_HEALTH_EVENT]
    assert log_rows == {(IFINDEX, e.index) for e in standard} and log_rows
    assert not any((IFINDEX, e.index) in log_rows for e in entries)


def test_the_yang_view_leaves_health_events_out_and_stays_valid(tmp_path: Path) -> None:
    pair = failed_pair()
    data = interfaces([view(pair)], now=WALL + 3600)
    oam = data["ietf-interfaces:interfaces"]["interface"][0]["ieee802-ethernet-link-oam:link-oam"]
    logged = {int(e["index"]) for e in oam["event-log"]["event-log-entry"]}
    standard = {e.index for _, e in pair.a.event_log() if e.event_type is not EventLogType.NIC_HEALTH_EVENT}
    assert logged == standard and logged
    assert not logged & {e.index for e in health_entries(pair)}
    if validator_missing() is None:
        assert_valid(validate(data, tmp_path / "health.json"))


def test_the_event_stream_names_the_health_monitor() -> None:
    import io
    import json

    from efmoam.config.model import EventSink, EventStreamConfig
    from efmoam.core.outputs import EventLogged
    from efmoam.daemon.eventstream import EventStream
    from tests.linkmon import logged

    pair = failed_pair()
    out = io.StringIO()
    stream = EventStream(EventStreamConfig(sink=EventSink.STDERR), stderr=out)
    for event in logged(pair):
        assert isinstance(event, EventLogged)
        stream.event("eth0", event, "block", pair.now, WALL)
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    named = [(r["event"].get("monitor"), r["event"]["type"]) for r in records]
    assert ("fec_uncorrectable", "nicHealthEvent") in named and ("fec_corrected", "nicHealthEvent") in named
    assert (None, "erroredFrameEvent") in named
