"""`refusals` on its own: every combination of what a request depends on gets an answer
in an operator's words (no state name), and the answer follows the rules: Active mode and
a discovered peer for loopback and variables, a discovered peer for Organization Specific
OAMPDUs, the peer's advertised function, the loopback status moving (`loopback.step`)."""

from __future__ import annotations

import itertools

from efmoam.core import refusals
from efmoam.core.loopback import Input, step
from efmoam.core.outputs import LoopbackStatus, OperStatus
from efmoam.core.refusals import Asking
from efmoam.core.settings import OamMode
from pdu.enums import OamConfig
from tests.cli.test_refusal_words import words

FUNCTIONS = [OamConfig(0), OamConfig.REMOTE_LOOPBACK, OamConfig.VARIABLE_RETRIEVAL,
             OamConfig.REMOTE_LOOPBACK | OamConfig.VARIABLE_RETRIEVAL | OamConfig.LINK_EVENTS]  # fmt: skip


def every_asking() -> list[Asking]:
    return [
        Asking(mode, status is OperStatus.OPERATIONAL, status, offers, loopback)
        for mode, status, offers, loopback in itertools.product(OamMode, OperStatus, FUNCTIONS, LoopbackStatus)
    ]


def test_each_refusal_follows_its_rules_and_names_no_state() -> None:
    for asking in every_asking():
        active_ready = asking.mode is OamMode.ACTIVE and asking.discovered
        offers_variables = bool(asking.peer_offers & OamConfig.VARIABLE_RETRIEVAL)
        offers_loopback = bool(asking.peer_offers & OamConfig.REMOTE_LOOPBACK)
        loopback_moves = step(asking.loopback, Input.START) is not None
        checks = [
            (refusals.variables_refusal(asking), active_ready and offers_variables),
            (refusals.org_specific_refusal(asking), asking.discovered),
            (refusals.loopback_refusal(asking, start=True), active_ready and offers_loopback and loopback_moves),
        ]
        for refusal, allowed in checks:
            assert (refusal is None) == allowed, (asking, refusal)
            if refusal is not None:
                words(refusal)
        stop = refusals.loopback_refusal(asking, start=False)
        assert (stop is None) == (step(asking.loopback, Input.STOP) is not None)
        if stop is not None:
            assert words(stop).startswith("no loopback of ours to stop: ")


def test_the_first_reason_is_the_one_given() -> None:
    passive = Asking(OamMode.PASSIVE, False, OperStatus.LINK_FAULT, OamConfig(0), LoopbackStatus.NO_LOOPBACK)
    assert refusals.loopback_refusal(passive, start=True) == (
        "remote loopback is asked by an Active port only, and this port is Passive"
    )
    undiscovered = Asking(OamMode.ACTIVE, False, OperStatus.LINK_FAULT, OamConfig(0), LoopbackStatus.NO_LOOPBACK)
    assert refusals.variables_refusal(undiscovered) == "the link is down (or has a fault)"
    assert refusals.org_specific_refusal(undiscovered) == (
        "organization specific OAMPDUs wait for discovery: the link is down (or has a fault)"
    )
