"""The engine's refusals name what an operator sees, never a state machine's state name
(SEND_LOCAL_REMOTE, ACTIVE_SEND_LOCAL ...): every reason a loopback or a variable request
is refused, from a real pair of engines on a simulated wire."""

from __future__ import annotations

import pytest

from efmoam.core import LocalProtocolError, OamMode, OamPort, PortSettings
from tests.core.pair import PortPair
from tests.core.refusal_words import words


def test_before_discovery_and_without_the_peers_support() -> None:
    pair = PortPair()
    assert words(pair.a.loopback_refusal(start=True)) == "no peer discovered yet"
    with pytest.raises(LocalProtocolError, match=r"^no peer discovered yet$"):
        pair.a.request_variables((), now=pair.now)
    pair.run_for(5)
    assert words(pair.a.loopback_refusal(start=True)) == (
        "the peer does not offer remote loopback (its OAM configuration leaves it out)"
    )
    assert words(pair.a.loopback_refusal(start=False)) == "no loopback of ours to stop: no loopback is running"
    mute = PortPair(b=PortSettings(variable_retrieval=False))
    mute.run_for(5)
    with pytest.raises(LocalProtocolError) as refused:
        mute.a.request_variables((), now=mute.now)
    assert (
        words(str(refused.value)) == "the peer does not offer variable retrieval (its OAM configuration leaves it out)"
    )


def test_passive_disabled_link_down_and_half_duplex() -> None:
    passive = OamPort(PortSettings(mode=OamMode.PASSIVE), "02:00:00:00:00:01", now=0.0)
    assert words(passive.loopback_refusal(start=True)) == (
        "remote loopback is asked by an Active port only, and this port is Passive"
    )
    disabled = OamPort(PortSettings(enabled=False), "02:00:00:00:00:01", now=0.0)
    assert words(disabled.loopback_refusal(start=True)) == "OAM is administratively disabled on this port"
    down = OamPort(PortSettings(), "02:00:00:00:00:01", now=0.0, link_up=False)
    assert words(down.loopback_refusal(start=True)) == "the link is down (or has a fault)"
    half = OamPort(PortSettings(), "02:00:00:00:00:01", now=0.0, half_duplex=True)
    assert words(half.loopback_refusal(start=True)) == (
        "the link is half duplex, and OAM runs on full-duplex links only"
    )


def test_loopback_already_under_way() -> None:
    pair = PortPair(b=PortSettings(loopback_process=True))
    pair.run_for(5)
    pair.a.start_loopback(now=pair.now)
    assert words(pair.a.loopback_refusal(start=True)) == "a loopback request to the peer is already under way"
    pair.run_for(3)
    assert words(pair.a.loopback_refusal(start=True)) == "the peer already loops this port's frames back"
    assert words(pair.b.loopback_refusal(start=False)) == (
        "no loopback of ours to stop: this port loops the peer's frames back (the peer's loopback: the peer ends it)"
    )
