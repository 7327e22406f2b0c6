"""Inputs that change nothing say so (issue 18): `OamPort.receive` and `on_counters` return
False when the caller has nothing to take and no earlier deadline to wait for, so the
daemon skips its flush and reschedule on the steady state of every port-second."""

from __future__ import annotations

from efmoam.core import EventLogged, Transmit
from efmoam.core.linkmon import CounterSample
from efmoam.core.variables import A_FRAMES_RECEIVED_OK
from pdu import Branch, Code, VariableDescriptor
from tests.core.test_support import discovered
from tests.core.test_variables import ask
from tests.linkmon import link_monitoring, monitor, port_settings


def last_information_of(pair, name: str) -> bytes:  # type: ignore[no-untyped-def]
    sent = [r.output.frame for r in pair.outputs(name, Transmit) if r.output.code == Code.INFORMATION]
    return sent[-1]


def test_a_repeated_information_is_quiet_and_moves_no_deadline_earlier() -> None:
    pair = discovered()
    a, now = pair.a, pair.now
    repeat = last_information_of(pair, "b")
    before = a.next_deadline()
    assert before is not None
    assert a.receive(repeat, now=now) is False
    assert a.take_outputs() == []
    after = a.next_deadline()
    assert after is not None and after >= before  # only the lost-link timer moved, later
    assert a.lost_link_at == now + a.settings.lost_link_time


def test_a_changed_information_or_a_bad_frame_is_not_quiet() -> None:
    pair = discovered()
    a, now = pair.a, pair.now
    repeat = last_information_of(pair, "b")
    changed = bytearray(repeat)
    changed[16] ^= 0x01  # the Flags field's Link Fault bit: new content
    assert a.receive(bytes(changed), now=now) is True
    assert a.take_outputs()  # the peer's flags changed: an output to take
    assert a.receive(b"\x01" * 20, now=now) is True  # not an OAMPDU: a drop to report
    assert a.take_outputs()


def test_a_sample_without_an_event_is_quiet_and_one_that_raises_one_is_not() -> None:
    settings = port_settings(link_monitoring(errored_frame=monitor(window=1.0, sf_threshold=5)))
    pair = discovered(settings, port_settings(link_monitoring()))
    a, now = pair.a, pair.now
    assert a.on_counters(CounterSample(errored_frames=0, frames_received=1000), now=now) is False
    assert a.on_counters(CounterSample(errored_frames=0, frames_received=2000), now=now + 1.0) is False
    assert a.take_outputs() == []
    assert a.on_counters(CounterSample(errored_frames=50, frames_received=3000), now=now + 2.0) is True
    assert any(isinstance(output, EventLogged) for output in a.take_outputs())
    # the failure holds: later windows with errors raise nothing new
    assert a.on_counters(CounterSample(errored_frames=100, frames_received=4000), now=now + 3.0) is False
    assert a.take_outputs() == []


def test_the_frames_received_of_a_sample_answer_variable_retrieval() -> None:
    """aFramesReceivedOK comes from the counter sample itself (the daemon no longer supplies it)."""
    pair = discovered()
    pair.b.on_counters(CounterSample(errored_frames=0, frames_received=123_456), now=pair.now)
    (container,) = ask(pair, VariableDescriptor(Branch.ATTRIBUTE, A_FRAMES_RECEIVED_OK))
    assert container.values == ((123_456).to_bytes(8, "big"),)
