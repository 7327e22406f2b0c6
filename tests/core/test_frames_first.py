"""A counter sample that asks for its frames first (issue 18): its Event Notification
leaves at once, the rest of its epilogue waits for `settle_postponed` or the port's next
input, and together they come out as the whole epilogue makes them at once."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from efmoam.core import EventLogged, OamPort, PolicyEvent, PortServiceChanged, Transmit
from efmoam.core.linkmon import CounterSample, LocalSfAction, PortAction
from efmoam.core.outputs import Output
from pdu import Code, Flag, Information
from tests.core.test_support import discovered, frame
from tests.linkmon import link_monitoring, monitor, port_settings

FAILING = port_settings(link_monitoring(errored_frame=monitor(window=1.0, sf_threshold=5)))


def sample(errors: int, frames: int) -> CounterSample:
    return CounterSample(errored_frames=errors, frames_received=frames)


def failing_pair(settings: Any = FAILING) -> Any:  # a PortPair: port "a" has its baseline, the next sample fails
    pair = discovered(settings, port_settings(link_monitoring()))
    assert pair.a.on_counters(sample(0, 1000), now=pair.now) is False
    assert pair.a.on_counters(sample(0, 2000), now=pair.now + 1.0) is False
    pair.a.take_outputs()
    return pair


def kinds(outputs: list[Output]) -> list[str]:
    return [f"frame {output.code}" if isinstance(output, Transmit) else type(output).__name__ for output in outputs]


def fail(port: OamPort, now: float, frames_first: bool) -> list[Output]:
    assert port.on_counters(sample(50, 3000), now=now, frames_first=frames_first) is True
    return port.take_outputs()


@pytest.mark.parametrize("settings", [FAILING, attrs.evolve(
    FAILING, link_monitoring=attrs.evolve(FAILING.link_monitoring, local_sf_action=LocalSfAction(critical_event=True))
)], ids=["default-action", "critical-event"])  # fmt: skip
def test_the_frames_leave_first_and_the_rest_is_what_the_whole_epilogue_makes(settings: Any) -> None:
    whole, split = failing_pair(settings), failing_pair(settings)
    now = whole.now + 2.0
    at_once = fail(whole.a, now, frames_first=False)
    first = fail(split.a, now, frames_first=True)
    assert split.a.postponed
    assert kinds(first) == [kind for kind in kinds(at_once) if kind.startswith("frame")]
    assert f"frame {Code.EVENT_NOTIFICATION}" in kinds(first)
    # the same octets: the Flags field is the one the whole epilogue gives (Critical Event included)
    assert [o.frame for o in first] == [o.frame for o in at_once if isinstance(o, Transmit)]
    if settings is not FAILING:
        assert all(int.from_bytes(o.frame[15:17], "big") & Flag.CRITICAL_EVENT for o in first)
    assert not [o for o in first if isinstance(o, EventLogged | PortServiceChanged)]
    split.a.settle_postponed()
    rest = split.a.take_outputs()
    assert not split.a.postponed
    assert kinds(rest) == [kind for kind in kinds(at_once) if not kind.startswith("frame")]
    assert next(o for o in rest if isinstance(o, PortServiceChanged)).out_of_service
    assert split.a.service.out_of_service and whole.a.service.out_of_service
    split.a.settle_postponed()  # once only
    assert split.a.take_outputs() == []


def _repeated_information(pair: Any) -> bytes:
    return [r.output.frame for r in pair.outputs("b", Transmit) if r.output.code == Code.INFORMATION][-1]


@pytest.mark.parametrize("next_input", ["repeated-information", "quiet-timer", "another-sample"])
def test_the_port_s_next_input_runs_the_rest_first_even_one_that_is_quiet_otherwise(next_input: str) -> None:
    pair = failing_pair()
    now = pair.now + 2.0
    fail(pair.a, now, frames_first=True)
    later = now + 0.01
    if next_input == "repeated-information":
        assert pair.a.receive(_repeated_information(pair), now=later) is True
    elif next_input == "quiet-timer":
        pair.a.handle_timer(now=later)
    else:
        assert pair.a.on_counters(sample(50, 3500), now=later, frames_first=True) is True
    assert not pair.a.postponed
    outputs = pair.a.take_outputs()
    assert "EventLogged" in kinds(outputs) and "PortServiceChanged" in kinds(outputs)


def test_a_policy_deadline_that_has_come_judges_first_so_the_whole_epilogue_runs() -> None:
    pair = failing_pair()
    now = pair.now + 2.0
    own = frame(Information(pair.a.mac, Flag.LOCAL_STABLE | Flag.REMOTE_STABLE, ()))
    pair.a.receive(own, now=now - 1.0)  # our own OAMPDU came back: a loop, judged again when it lapses
    pair.a.take_outputs()
    looped_until = now - 1.0 + pair.a.settings.lost_link_time
    deadline = pair.a.next_deadline()
    assert deadline is not None and deadline <= looped_until
    outputs = fail(pair.a, looped_until, frames_first=True)
    assert not pair.a.postponed
    assert "EventLogged" in kinds(outputs) and f"frame {Code.EVENT_NOTIFICATION}" in kinds(outputs)


def test_a_sample_without_an_event_postpones_nothing() -> None:
    pair = failing_pair()
    assert pair.a.on_counters(sample(0, 3000), now=pair.now + 2.0, frames_first=True) is False
    assert not pair.a.postponed and pair.a.take_outputs() == []


LATCHING = attrs.evolve(
    FAILING,
    link_monitoring=attrs.evolve(
        FAILING.link_monitoring, local_sf_action=LocalSfAction(port_action=PortAction.ERROR_DISABLE)
    ),
)


def _described(outputs: list[Output]) -> list[Any]:
    """Outputs compared across two runs (a frame by its octets, a record whole)."""
    return [output.frame if isinstance(output, Transmit) else output for output in outputs]


@pytest.mark.parametrize("next_input", ["link-down", "clear", "reload-with-new-thresholds"])
def test_an_input_that_ends_the_event_before_the_rest_ran_leaves_what_the_whole_epilogue_leaves(
    next_input: str,
) -> None:
    """The sample's judgement (an error-disable latch) is made before the next input ends
    the event, at the sample's time, and the outputs keep their order: the two runs are
    output for output the same, the split one's frames first."""
    whole, split = failing_pair(LATCHING), failing_pair(LATCHING)
    now = whole.now + 2.0
    later = now + 0.05
    runs: list[list[Any]] = []
    for pair, frames_first in ((whole, False), (split, True)):
        first = fail(pair.a, now, frames_first)
        if next_input == "link-down":
            pair.a.set_link(False, now=later)
        elif next_input == "clear":
            pair.a.clear_events(now=later)
        else:
            lm = pair.a.settings.link_monitoring
            errored = attrs.evolve(lm.errored_frame, sf_threshold=9)
            pair.a.reconfigure(
                attrs.evolve(pair.a.settings, link_monitoring=attrs.evolve(lm, errored_frame=errored)), now=later
            )
        runs.append(_described(first + pair.a.take_outputs()))
        if next_input != "clear":
            assert pair.a.service.out_of_service, "the latch outlives the event"
        assert not pair.a.postponed
    at_once, frames_first_then_rest = runs
    frames = [item for item in at_once if isinstance(item, bytes)]
    assert [item for item in frames_first_then_rest if isinstance(item, bytes)] == frames
    assert frames_first_then_rest[0] == frames[0]  # the Event Notification, before any record
    records = [item for item in at_once if not isinstance(item, bytes)]
    assert [item for item in frames_first_then_rest if not isinstance(item, bytes)] == records
    assert any(isinstance(item, PolicyEvent) and item.latched for item in records)
