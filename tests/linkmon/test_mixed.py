"""Mixed environments: a port with link monitoring that conveys its failure in the
Information flags, facing a peer without link monitoring (reference: "In mixed
environments where Link Monitoring is supported on one peer but not the other")."""

from __future__ import annotations

import pytest

from efmoam.core import DiscoveryChanged
from pdu import Flag
from tests.linkmon import (
    SUPPORTIVE,
    UNSUPPORTIVE,
    LocalSfAction,
    S,
    information_flags,
    link_monitoring,
    mark,
    monitor,
    notification_frames,
    outputs,
    port_settings,
    raised,
    start,
)

FLAGS = [Flag.DYING_GASP, Flag.CRITICAL_EVENT]
FLAG_IDS = ["dying-gasp", "critical-event"]


def monitoring(flag: Flag | None) -> object:
    action = LocalSfAction(dying_gasp=flag is Flag.DYING_GASP, critical_event=flag is Flag.CRITICAL_EVENT)
    return port_settings(link_monitoring(errored_frame=monitor(), local_sf_action=action))


def moves(pair, name: str, after: int) -> list[S]:  # type: ignore[no-untyped-def]
    return [r.output.new for r in pair.records[after:] if r.port == name and isinstance(r.output, DiscoveryChanged)]


@pytest.mark.parametrize("flag", FLAGS, ids=FLAG_IDS)
def test_unsupportive_peer_leaves_send_any_while_the_flag_is_set(flag: Flag) -> None:
    pair, feed = start(monitoring(flag), UNSUPPORTIVE)  # type: ignore[arg-type]
    before = mark(pair)
    feed.sample(1)  # signal failure on a
    pair.run_for(3)
    assert pair.b.state is S.SEND_LOCAL_REMOTE
    assert pair.a.state is S.SEND_LOCAL_REMOTE_OK
    assert moves(pair, "b", before) == [S.SEND_LOCAL_REMOTE]
    assert moves(pair, "a", before) == [S.SEND_LOCAL_REMOTE_OK]
    assert notification_frames(pair) == []  # b did not advertise Link Events
    # a keeps the flag set until the condition is cleared
    pair.run_for(20)
    assert (pair.a.state, pair.b.state) == (S.SEND_LOCAL_REMOTE_OK, S.SEND_LOCAL_REMOTE)
    failed = feed.mark
    flags = information_flags(pair, after=failed)
    assert len(flags) >= 20 and all(f & flag for f in flags)
    assert pair.a.out_of_service
    # the clear ends the event: both recover to SEND_ANY
    cleared_at = mark(pair)
    pair.call("a", "clear_events")
    pair.run_for(3)
    assert pair.a.state is S.SEND_ANY and pair.b.state is S.SEND_ANY
    assert moves(pair, "a", cleared_at)[-1] is S.SEND_ANY
    assert moves(pair, "b", cleared_at)[-1] is S.SEND_ANY
    assert not any(f & flag for f in information_flags(pair, after=cleared_at))
    assert not pair.a.out_of_service


@pytest.mark.parametrize("flag", FLAGS, ids=FLAG_IDS)
def test_symbol_recovery_also_recovers_the_unsupportive_peer(flag: Flag) -> None:
    action = LocalSfAction(dying_gasp=flag is Flag.DYING_GASP, critical_event=flag is Flag.CRITICAL_EVENT)
    lm = link_monitoring(errored_symbol_period=monitor(sd_threshold=1, sf_threshold=5), local_sf_action=action)
    pair, feed = start(port_settings(lm), UNSUPPORTIVE)
    feed.sample(symbols=5)
    pair.run_for(2)
    assert pair.b.state is S.SEND_LOCAL_REMOTE
    feed.sample(symbols=0, at=4.0)
    pair.run_for(3)
    assert pair.a.state is S.SEND_ANY and pair.b.state is S.SEND_ANY


@pytest.mark.parametrize("flag", FLAGS, ids=FLAG_IDS)
def test_supportive_peers_both_stay_in_send_any(flag: Flag) -> None:
    pair, feed = start(monitoring(flag), SUPPORTIVE)  # type: ignore[arg-type]
    before = mark(pair)
    feed.sample(1)
    pair.run_for(10)
    assert moves(pair, "a", before) == [] and moves(pair, "b", before) == []
    assert pair.a.state is S.SEND_ANY and pair.b.state is S.SEND_ANY
    assert len(notification_frames(pair)) == 1
    # b took the flag as a remote event
    assert any(e.event_type.name in ("DYING_GASP_EVENT", "CRITICAL_LINK_EVENT") for e in raised(pair, "b"))
    pair.call("a", "clear_events")
    pair.run_for(3)
    assert outputs(pair, "a", DiscoveryChanged)[-1].new is S.SEND_ANY
    assert pair.a.state is S.SEND_ANY and pair.b.state is S.SEND_ANY


def test_without_info_notification_the_unsupportive_peer_stays_in_send_any() -> None:
    pair, feed = start(monitoring(None), UNSUPPORTIVE)  # type: ignore[arg-type]
    before = mark(pair)
    feed.sample(1)
    pair.run_for(5)
    assert pair.a.out_of_service
    assert moves(pair, "a", before) == [] and moves(pair, "b", before) == []
