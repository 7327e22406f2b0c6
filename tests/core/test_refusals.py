"""`refusals` on its own: each mode, operational status (discovered when operational), a
sample of the peer's advertised functions and each loopback status get an answer in an
operator's words (no state name) that follows the rules: Active mode and a discovered peer
for loopback and variables, a discovered peer for Organization Specific OAMPDUs, the
peer's advertised function, the loopback status moving (`loopback.step`); and where
several reasons hold, the first of them in that order is the one given."""

from __future__ import annotations

import itertools

import attrs

from efmoam.core import refusals
from efmoam.core.loopback import Input, step
from efmoam.core.outputs import LoopbackStatus, OperStatus
from efmoam.core.refusals import RequestContext
from efmoam.core.settings import OamMode
from pdu.enums import OamConfig
from tests.core.refusal_words import words

FUNCTIONS = [OamConfig(0), OamConfig.REMOTE_LOOPBACK, OamConfig.VARIABLE_RETRIEVAL,
             OamConfig.REMOTE_LOOPBACK | OamConfig.VARIABLE_RETRIEVAL | OamConfig.LINK_EVENTS]  # fmt: skip


def every_context() -> list[RequestContext]:
    return [
        RequestContext(mode, status is OperStatus.OPERATIONAL, status, offers, loopback)
        for mode, status, offers, loopback in itertools.product(OamMode, OperStatus, FUNCTIONS, LoopbackStatus)
    ]


def test_each_refusal_follows_its_rules_and_names_no_state() -> None:
    for context in every_context():
        active_ready = context.mode is OamMode.ACTIVE and context.discovered
        offers_variables = bool(context.peer_offers & OamConfig.VARIABLE_RETRIEVAL)
        offers_loopback = bool(context.peer_offers & OamConfig.REMOTE_LOOPBACK)
        loopback_moves = step(context.loopback, Input.START) is not None
        checks = [
            (refusals.variables_refusal(context), active_ready and offers_variables),
            (refusals.org_specific_refusal(context), context.discovered),
            (refusals.loopback_refusal(context, start=True), active_ready and offers_loopback and loopback_moves),
        ]
        for refusal, allowed in checks:
            assert (refusal is None) == allowed, (context, refusal)
            if refusal is not None:
                words(refusal)
        stop = refusals.loopback_refusal(context, start=False)
        assert (stop is None) == (step(context.loopback, Input.STOP) is not None)
        if stop is not None:
            assert words(stop).startswith("no loopback of ours to stop: ")


def test_the_first_reason_is_the_one_given() -> None:
    passive = RequestContext(OamMode.PASSIVE, False, OperStatus.LINK_FAULT, OamConfig(0), LoopbackStatus.NO_LOOPBACK)
    assert refusals.loopback_refusal(passive, start=True) == (
        "remote loopback is asked by an Active port only, and this port is Passive"
    )
    undiscovered = RequestContext(
        OamMode.ACTIVE, False, OperStatus.LINK_FAULT, OamConfig(0), LoopbackStatus.NO_LOOPBACK
    )
    assert refusals.variables_refusal(undiscovered) == "the link is down (or has a fault)"
    assert refusals.org_specific_refusal(undiscovered) == (
        "organization specific OAMPDUs wait for discovery: the link is down (or has a fault)"
    )


def test_mode_comes_before_discovery_and_the_peer_s_offer_before_the_loopback_status() -> None:
    passive = RequestContext(OamMode.PASSIVE, True, OperStatus.OPERATIONAL, OamConfig(0), LoopbackStatus.NO_LOOPBACK)
    assert refusals.variables_refusal(passive) == (
        "variable request is asked by an Active port only, and this port is Passive"
    )
    busy = RequestContext(
        OamMode.ACTIVE, True, OperStatus.OPERATIONAL, OamConfig(0), LoopbackStatus.INITIATING_LOOPBACK
    )
    assert refusals.loopback_refusal(busy, start=True) == (
        "the peer does not offer remote loopback (its OAM configuration leaves it out)"
    )
    offered = attrs.evolve(busy, peer_offers=OamConfig.REMOTE_LOOPBACK)
    assert refusals.loopback_refusal(offered, start=True) == "a loopback request to the peer is already under way"
