"""Observe mode: each finding from crafted frames, the inferred states, the steady state."""

from __future__ import annotations

import attrs
import pytest

from efmoam.core import DiscoveryState
from efmoam.offline.replay import observe as observe_module, timeline as timeline_module
from efmoam.offline.replay.findings import KINDS, MAX_FRAMES, Limits
from efmoam.offline.replay.observe import implausibilities, infer_state
from pdu import (
    EventTlvType,
    Flag,
    Information,
    LinkEventTlv,
    LoopbackCommand,
    UnknownTlv,
    encode,
)
from tests.replay.frames import (
    A_LOCAL,
    B_LOCAL,
    BASE_TIME,
    EVALUATING,
    STABLE,
    A,
    B,
    conversation,
    details,
    event,
    findings,
    frame_event,
    info,
    local,
    loopback,
    observe,
    remote,
    steady,
    unpadded,
)

T0 = BASE_TIME


def test_state_names_are_the_engines() -> None:
    names = {
        observe_module.FAULT,
        observe_module.ACTIVE_SEND_LOCAL,
        observe_module.SEND_LOCAL_REMOTE,
        observe_module.SEND_LOCAL_REMOTE_OK,
        observe_module.SEND_ANY,
    }
    assert names == {s.value for s in DiscoveryState} - {DiscoveryState.PASSIVE_WAIT.value}


def test_every_finding_kind_is_described() -> None:
    assert all(text and kind == kind.lower() for kind, text in KINDS.items())


# -- states ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "tlvs", "state"),
    [
        (Flag.LINK_FAULT, (), "FAULT"),
        (EVALUATING, (A_LOCAL,), "ACTIVE_SEND_LOCAL"),
        (EVALUATING | Flag.REMOTE_EVALUATING, (A_LOCAL, remote(B_LOCAL)), "SEND_LOCAL_REMOTE"),
        (Flag(0), (A_LOCAL, remote(B_LOCAL)), "SEND_LOCAL_REMOTE"),  # locally rejected
        (Flag.LOCAL_STABLE | Flag.REMOTE_EVALUATING, (A_LOCAL, remote(B_LOCAL)), "SEND_LOCAL_REMOTE_OK"),
        (STABLE, (A_LOCAL, remote(B_LOCAL)), "SEND_ANY"),
        (Flag(0), (), None),
    ],
)
def test_state_inferred_from_flags_and_tlvs(flags: Flag, tlvs: tuple[object, ...], state: str | None) -> None:
    assert infer_state(Information(A, flags, tlvs)) == state  # type: ignore[arg-type]


def discovery_then(*extra: tuple[float, bytes]) -> list[tuple[float, bytes]]:
    """A's Discovery with B, then `extra` frames."""
    return [
        (T0 + 0.0, info(A, EVALUATING, A_LOCAL)),
        (T0 + 0.1, info(B, EVALUATING | Flag.REMOTE_EVALUATING, B_LOCAL, remote(A_LOCAL))),
        (T0 + 0.2, info(A, Flag.LOCAL_STABLE | Flag.REMOTE_EVALUATING, A_LOCAL, remote(B_LOCAL))),
        (T0 + 0.3, info(B, STABLE, B_LOCAL, remote(A_LOCAL))),
        (T0 + 0.4, steady(A)),
        *extra,
    ]


def test_states_reached_and_time_to_send_any() -> None:
    summary = observe(discovery_then())
    a = summary["speakers"][A]
    assert [(s["state"], s["frame"]) for s in a["states"]] == [
        ("ACTIVE_SEND_LOCAL", 1),
        ("SEND_LOCAL_REMOTE_OK", 3),
        ("SEND_ANY", 5),
    ]
    assert a["time_to_send_any"] == pytest.approx(0.4)
    assert summary["speakers"][B]["time_to_send_any"] == pytest.approx(0.2)
    assert summary["findings"] == 0


def test_falling_back_to_active_send_local_went_through_fault() -> None:
    summary = observe(discovery_then((T0 + 1.4, info(A, EVALUATING, A_LOCAL))))
    states = summary["speakers"][A]["states"]
    assert [s["state"] for s in states][-2:] == ["FAULT", "ACTIVE_SEND_LOCAL"]
    assert states[-2].get("inferred") is True


def test_capture_starting_in_send_any_has_no_time_to_send_any() -> None:
    a = observe(conversation(3))["speakers"][A]
    assert [s["state"] for s in a["states"]] == ["SEND_ANY"]
    assert a["time_to_send_any"] is None


def test_link_fault_form_is_fault_without_finding() -> None:
    frames = [*conversation(2), (T0 + 2.0, info(A, Flag.LINK_FAULT)), (T0 + 2.5, steady(B))]
    summary = observe(frames)
    assert summary["speakers"][A]["state"] == "FAULT"
    assert findings(summary, A) == {}
    assert [e["flag"] for e in summary["speakers"][A]["events"]] == ["link_fault"]


# -- the steady state ------------------------------------------------------------------------


def test_steady_state_counts_every_frame_and_repeats_findings() -> None:
    short = unpadded(Information(A, STABLE, (A_LOCAL, remote(B_LOCAL))), 32)
    frames = [(T0 + s, short) for s in range(50)] + [(T0 + s + 0.5, steady(B)) for s in range(50)]
    summary = observe(sorted(frames))
    a = summary["speakers"][A]
    assert a["counts"] == {"information": 50}
    assert findings(summary, A) == {"short_frame": 50, "missing_end_marker": 50}
    (finding,) = details(summary, A, "short_frame")
    assert len(finding["frames"]) == MAX_FRAMES  # the first ones, not all 50
    assert finding["last_frame"] == 99


def test_identical_event_notifications_are_duplicates_not_steady_state() -> None:
    copy = event(A, 3, frame_event())
    summary = observe([*conversation(2), (T0 + 2.0, copy), (T0 + 2.1, copy), (T0 + 2.2, copy)])
    a = summary["speakers"][A]
    assert a["counts"] == {"information": 2, "event_notification": 3}
    (notification,) = a["events"]
    assert (notification["sequence"], notification["duplicates"]) == (3, 2)
    assert findings(summary, A) == {}


# -- time ------------------------------------------------------------------------------------


def test_more_than_ten_oampdus_in_one_second() -> None:
    burst = [(T0 + 1 + i * 0.09, event(A, i, frame_event(total=5 * (i + 1), events=i + 1))) for i in range(11)]
    summary = observe(conversation(1) + burst)
    assert findings(summary, A) == {"rate_exceeded": 1}
    assert details(summary, A, "rate_exceeded")[0]["frames"] == [13]


def test_ten_oampdus_every_tenth_of_a_second_are_within_the_budget() -> None:
    paced = [(T0 + 1 + i * 0.1, event(A, i, frame_event(total=5 * (i + 1), events=i + 1))) for i in range(30)]
    assert findings(observe(conversation(1) + paced), A) == {}


def test_keepalive_late_and_in_time() -> None:
    frames = [(T0, steady(A)), (T0 + 1.9, steady(A)), (T0 + 4.5, steady(A))]  # gaps 1.9 s and 2.6 s
    frames += [(T0 + s * 0.5, steady(B)) for s in range(10)]
    summary = observe(sorted(frames))
    (late,) = details(summary, A, "keepalive_late")
    numbers = {t: n for n, (t, _) in enumerate(sorted(frames), 1)}
    assert late["frames"] == [numbers[T0 + 1.9] + 1, numbers[T0 + 4.5] + 1] or late["count"] == 1
    assert findings(summary, B) == {}


def test_keepalive_limit_follows_the_option() -> None:
    # B every 0.2 s (within the 0.22 s limit) shows the capture running while A is late
    frames = sorted([(T0 + s * 0.5, steady(A)) for s in range(10)] + [(T0 + s * 0.2, steady(B)) for s in range(23)])
    assert findings(observe(frames, Limits(keepalive=0.1)), A) == {"keepalive_late": 9}


def test_silence_while_the_peer_talks_and_the_peer_that_ignores_it() -> None:
    frames = conversation(3) + conversation(10, start=3, skip=(A,)) + conversation(3, start=13)
    summary = observe(frames)
    assert findings(summary, A) == {"silence": 1}
    (silence,) = details(summary, A, "silence")
    assert silence["frames"] == [5, 17]
    # B kept sending SEND_ANY frames through A's 10 s silence: its lost-link timer never ran out
    assert findings(summary, B) == {"lost_link_ignored": 1}


def test_no_silence_after_a_dying_gasp() -> None:
    last = info(A, STABLE | Flag.DYING_GASP, A_LOCAL, remote(B_LOCAL))
    frames = [*conversation(2), (T0 + 2.0, last), *conversation(8, start=2, skip=(A,))]
    summary = observe(sorted(frames))
    assert "silence" not in findings(summary, A)


def test_speaker_that_stopped_while_its_peer_went_on() -> None:
    summary = observe(conversation(2) + conversation(10, start=2, skip=(A,)))
    assert findings(summary, A) == {"silence": 1}


def test_hand_trimmed_capture_is_a_gap_not_a_silence_nor_a_crash() -> None:
    frames = discovery_then() + conversation(3, start=1) + conversation(3, start=600)
    summary = observe(frames)
    assert len(summary["gaps"]) == 1
    assert summary["gaps"][0]["seconds"] == pytest.approx(596.5)
    assert findings(summary, A) == {"capture_gap": 1}
    assert findings(summary, B) == {"capture_gap": 1}
    assert [s["state"] for s in summary["speakers"][A]["states"]][-1] == "SEND_ANY"


def test_no_revision_check_across_a_gap() -> None:
    changed = local(1, 0x001122, vendor_info=9)  # a restarted device: same revision, new content
    frames = [*conversation(2), (T0 + 100, info(A, STABLE, changed, remote(B_LOCAL)))]
    assert "revision_not_increased" not in findings(observe(frames), A)


# -- frames ------------------------------------------------------------------------------------


def test_short_frame_and_missing_end_marker_as_eoam_sends_them() -> None:
    pdu = Information(A, STABLE, (A_LOCAL, remote(B_LOCAL)))
    summary = observe([(T0, unpadded(pdu, 32)), (T0 + 0.5, steady(B))])
    assert findings(summary, A) == {"short_frame": 1, "missing_end_marker": 1}
    assert details(summary, A, "short_frame")[0]["detail"] == "information OAMPDU of 50 octets"


def test_sixty_octets_filled_by_tlvs_need_no_end_marker() -> None:
    symbol = LinkEventTlv(EventTlvType.ERRORED_SYMBOL_PERIOD, 1, 125_000_000, 1, 5, 5, 1)
    frame = event(A, 0, symbol)
    assert len(frame) == 60  # 20 octets of header and sequence, 40 of the symbol TLV: no room for an End
    assert findings(observe([*conversation(1), (T0 + 1.0, frame)]), A) == {}


def test_long_frame_without_end_marker() -> None:
    tlvs = (A_LOCAL, remote(B_LOCAL), *[UnknownTlv(0x10 + i, b"x" * 8) for i in range(3)])
    frame = encode(Information(A, STABLE, tlvs))  # type: ignore[arg-type]
    assert frame.endswith(b"\0\0")
    summary = observe([(T0, frame[:-2]), (T0 + 0.5, steady(B))])
    assert findings(summary, A)["missing_end_marker"] == 1
    assert findings(summary, A)["tlv_not_allowed"] == 3  # reserved TLV types


def test_malformed_tlv_is_a_finding_of_its_speaker() -> None:
    frame = bytearray(steady(A))
    frame[19] = 1  # the Local TLV's length
    summary = observe([*conversation(1), (T0 + 1.0, bytes(frame))])
    (malformed,) = details(summary, A, "malformed")
    assert malformed["detail"].startswith("tlv_too_short")
    assert summary["speakers"][A]["counts"]["malformed"] == 1


def test_invalid_flags() -> None:
    frames = [(T0, info(A, STABLE | Flag.LOCAL_EVALUATING, A_LOCAL, remote(B_LOCAL))), (T0 + 0.5, steady(B))]
    frames.append((T0 + 1.0, info(A, STABLE | 0x0100, A_LOCAL, remote(B_LOCAL))))
    assert findings(observe(frames), A) == {"invalid_flags": 2}


def test_link_fault_with_information_tlvs() -> None:
    frames = [*conversation(1), (T0 + 1.0, info(A, STABLE | Flag.LINK_FAULT, A_LOCAL, remote(B_LOCAL)))]
    summary = observe(frames)
    assert findings(summary, A) == {"link_fault_with_tlvs": 1}
    assert summary["speakers"][A]["state"] == "SEND_ANY"  # its flags still say so


def test_missing_local_tlv() -> None:
    frames = [*conversation(1), (T0 + 1.0, info(A, STABLE)), (T0 + 1.2, info(A, STABLE, remote(B_LOCAL)))]
    assert findings(observe(frames), A) == {"missing_local_tlv": 2}


def test_remote_tlv_before_the_peer_sent_a_local_one() -> None:
    frames = [(T0, info(B, Flag.LINK_FAULT)), (T0 + 0.1, info(A, EVALUATING, A_LOCAL, remote(B_LOCAL)))]
    assert findings(observe(frames), A) == {"tlv_not_allowed": 1}


# -- OAMPDUs other than Information ------------------------------------------------------------


def test_event_notification_before_send_any() -> None:
    frames = [(T0, info(A, EVALUATING, A_LOCAL)), (T0 + 0.1, event(A, 0, frame_event(), flags=EVALUATING))]
    summary = observe(frames)
    assert details(summary, A, "code_not_allowed")[0]["detail"] == "event_notification OAMPDU in ACTIVE_SEND_LOCAL"


def test_loopback_control_from_a_passive_dte() -> None:
    passive = local(1, config=0)
    frames = [(T0, info(A, STABLE, passive, remote(B_LOCAL))), (T0 + 0.5, info(B, STABLE, B_LOCAL, remote(passive)))]
    frames.append((T0 + 1.0, loopback(A, LoopbackCommand.ENABLE)))
    assert findings(observe(frames), A) == {"code_not_allowed": 1}


def test_reserved_code() -> None:
    frame = bytearray(steady(A))
    frame[17] = 0x05
    assert findings(observe([*conversation(1), (T0 + 1.0, bytes(frame))]), A) == {"reserved_code": 1}


def test_duplicate_event_notification_with_other_content() -> None:
    frames = [
        *conversation(1),
        (T0 + 1.0, event(A, 4, frame_event(errors=5))),
        (T0 + 1.1, event(A, 4, frame_event(errors=6, total=6))),
    ]
    summary = observe(frames)
    assert findings(summary, A) == {"duplicate_event_differs": 1}
    assert len(summary["speakers"][A]["events"]) == 2


EOAM_FRAME_PERIOD_AS_ERRORED_FRAME = LinkEventTlv(EventTlvType.ERRORED_FRAME, 26650, 1000, 1, 200, 10200, 1)
EOAM_ERRORED_FRAME_AS_PERIOD = LinkEventTlv(EventTlvType.ERRORED_FRAME_PERIOD, 26660, 10, 1, 200, 10200, 1)


def test_errored_frame_window_that_is_a_frame_count() -> None:
    (problem,) = implausibilities(EOAM_FRAME_PERIOD_AS_ERRORED_FRAME)
    assert "looks like a frame count" in problem


def test_errored_frame_period_window_that_is_a_duration() -> None:
    problems = implausibilities(EOAM_ERRORED_FRAME_AS_PERIOD)
    assert any("looks like a duration" in p for p in problems)
    assert any("200 errored frames in a window of 10 frames" in p for p in problems)


@pytest.mark.parametrize(
    "tlv",
    [
        LinkEventTlv(EventTlvType.ERRORED_SYMBOL_PERIOD, 1, 125_000_000, 1, 3, 3, 1),
        LinkEventTlv(EventTlvType.ERRORED_FRAME, 1, 10, 1, 5, 5, 1),
        LinkEventTlv(EventTlvType.ERRORED_FRAME_PERIOD, 1, 1_488_095, 1, 5, 5, 1),
        LinkEventTlv(EventTlvType.ERRORED_FRAME_SECONDS_SUMMARY, 1, 600, 1, 3, 3, 1),
        LinkEventTlv(EventTlvType.ERRORED_SYMBOL_PERIOD, 1, 125_000_000, 10, 0, 0, 1),  # a recovery below threshold
    ],
)
def test_plausible_events(tlv: LinkEventTlv) -> None:
    assert implausibilities(tlv) == []


def test_running_totals_must_grow() -> None:
    first = frame_event(errors=5, total=5, events=1)
    frames = [
        *conversation(1),
        (T0 + 1.0, event(A, 0, first)),
        (T0 + 1.5, event(A, 1, frame_event(errors=5, total=7, events=1))),
    ]
    problems = [f["detail"] for f in details(observe(frames), A, "implausible_event")]
    assert problems == [
        "errored_frame: error running total grew by 2, less than the 5 errors of the window",
        "errored_frame: event running total did not grow (1 -> 1)",
    ]


# -- the peer's Information ------------------------------------------------------------------


def test_remote_tlv_that_does_not_echo_the_peers_local_tlv() -> None:
    wrong = attrs.evolve(remote(B_LOCAL), oui=0x999999)
    frames = [(T0, steady(B)), (T0 + 0.5, info(A, STABLE, A_LOCAL, wrong)), (T0 + 1.5, info(A, STABLE, A_LOCAL, wrong))]
    (mismatch,) = details(observe(frames), A, "remote_mismatch")
    assert mismatch["count"] == 2
    assert "oui 10066329 != 1118481" in mismatch["detail"]


def test_remote_tlv_may_lag_the_peers_change_briefly() -> None:
    b_new = attrs.evolve(B_LOCAL, revision=8, vendor_info=1)
    frames = [
        (T0, steady(A)),
        (T0 + 0.5, steady(B)),
        (T0 + 1.0, info(B, STABLE, b_new, remote(A_LOCAL))),
        (T0 + 1.1, steady(A)),  # still the old one: the change is on its way
        (T0 + 1.5, info(A, STABLE, A_LOCAL, remote(b_new))),
    ]
    assert findings(observe(frames), A) == {}
    # the next Information may carry the change (57.2.5.3.4): up to the keep-alive limit
    stale = [*frames[:4], *((T0 + t, steady(A)) for t in (2.1, 3.1, 4.1, 5.1))]
    (mismatch,) = details(observe(stale), A, "remote_mismatch")
    assert (mismatch["count"], mismatch["frames"]) == (2, [7, 8])


def test_revision_must_grow_with_a_content_change() -> None:
    changed = attrs.evolve(A_LOCAL, vendor_info=5)
    frames = [*conversation(1), (T0 + 1.0, info(A, STABLE, changed, remote(B_LOCAL)))]
    (finding,) = details(observe(frames), A, "revision_not_increased")
    assert finding["detail"] == "vendor_info changed; revision 1 -> 1"
    bumped = [*conversation(1), (T0 + 1.0, info(A, STABLE, attrs.evolve(changed, revision=2), remote(B_LOCAL)))]
    summary = observe(bumped)
    assert findings(summary, A) == {}
    assert [r["revision"] for r in summary["speakers"][A]["revisions"]] == [1, 2]


def test_revision_wraps() -> None:
    old, new = local(0xFFFF), local(0, vendor_info=3)
    frames = [(T0, info(A, STABLE, old)), (T0 + 1, info(A, STABLE, new))]
    assert "revision_not_increased" not in findings(observe(frames), A)


def test_loopback_sequence() -> None:
    looping = attrs.evolve(B_LOCAL, revision=8, parser_action=1, mux_action=1)
    back = attrs.evolve(B_LOCAL, revision=9)
    frames = [
        *conversation(1),
        (T0 + 1.0, loopback(A, LoopbackCommand.ENABLE)),
        (T0 + 1.1, info(B, STABLE, looping, remote(A_LOCAL))),
        (T0 + 2.0, loopback(A, LoopbackCommand.DISABLE)),
        (T0 + 2.1, info(B, STABLE, back, remote(A_LOCAL))),
    ]
    summary = observe(frames)
    assert summary["speakers"][A]["loopbacks"] == [
        {"enable_frame": 3, "time": 1.0, "looping_frame": 4, "disable_frame": 5, "ended_frame": 6, "gaps": 0}
    ]
    assert [e["state"] for e in summary["speakers"][B]["events"]] == ["local_loopback", "no_loopback"]


# -- memory and work per frame ---------------------------------------------------------------


def test_repeated_frames_are_not_decoded_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from efmoam.offline.capture import CaptureRecord
    from efmoam.offline.replay import observe as observe_module
    from efmoam.offline.replay.observe import Observer

    observer = Observer()
    decoded = []
    decode = observe_module.decode
    monkeypatch.setattr(observe_module, "decode", lambda frame: decoded.append(frame) or decode(frame))
    frames = conversation(500)
    observer.run(CaptureRecord(n, t, data, len(data), 0, 1) for n, (t, data) in enumerate(frames, 1))
    assert len(decoded) == 2  # one per speaker: every repeat is an octet compare
    assert observer.summary()["speakers"][A]["counts"] == {"information": 500}


def test_what_a_speaker_keeps_is_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timeline_module, "MAX_EVENTS", 5)
    monkeypatch.setattr(timeline_module, "MAX_FINDINGS", 3)
    notifications = [
        (T0 + 1 + n * 0.2, event(A, n, LinkEventTlv(EventTlvType.ERRORED_FRAME, n, 10_000 + n, 1, 5, 5 * n + 5, n + 1)))
        for n in range(20)
    ]
    summary = observe(sorted(conversation(6) + notifications))
    a = summary["speakers"][A]
    assert (len(a["events"]), a["events_dropped"]) == (5, 15)
    assert len(a["findings"]) == 4  # three details, then one bucket for the rest
    assert a["finding_counts"] == {"implausible_event": 20}
