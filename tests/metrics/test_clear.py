"""``clear port P statistics``: show starts from zero, the exported counters never go back.

`DisplayBaseline` on its own, then a real daemon: a scrape before and after the clear
(never lower) while show's counters start again from 0.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from efmoam.core.stats import DisplayBaseline
from efmoam.daemon.operations import CLEARED, SPARSE
from tests.daemon.lab import Lab, device_samples

VIEW: dict[str, Any] = {
    "name": "eth0",
    "statistics": {"dot3OamInformationTx": 40, "dot3OamInformationRx": 38, "dot3OamLoopbackControlTx": 0},
    "drops": {"loop": 3, "truncated": 1},
    "rx_policed": {"peer": 5, "others": 0},
    "tx_errors": 2,
    "ifindex": 7,
}


def later(view: dict[str, Any]) -> dict[str, Any]:
    """The same port after some traffic: a keep-alive each way, a new drop reason."""
    moved = copy.deepcopy(view)
    moved["statistics"]["dot3OamInformationTx"] += 1
    moved["statistics"]["dot3OamInformationRx"] += 1
    moved["drops"]["too_long"] = 2
    return moved


def cleared() -> DisplayBaseline:
    baseline = DisplayBaseline()
    baseline.take(VIEW, ("statistics", "drops", "rx_policed", "tx_errors", "absent"), sparse=("drops",))
    return baseline


def test_before_a_clear_show_is_the_counters() -> None:
    assert DisplayBaseline().shown(VIEW) == VIEW


def test_after_a_clear_show_counts_from_zero() -> None:
    shown = cleared().shown(later(VIEW))
    assert shown["statistics"] == {"dot3OamInformationTx": 1, "dot3OamInformationRx": 1, "dot3OamLoopbackControlTx": 0}
    assert shown["drops"] == {"too_long": 2}  # sparse: the reasons back at their baseline are left out
    assert shown["rx_policed"] == {"peer": 0, "others": 0}  # not sparse: every name stays
    assert shown["tx_errors"] == 0
    assert shown["ifindex"] == 7 and shown["name"] == "eth0"  # not counters: as they are


def test_show_leaves_the_view_alone_and_the_baseline_is_a_copy() -> None:
    view = later(VIEW)
    before = copy.deepcopy(view)
    baseline = cleared()
    baseline.shown(view)
    assert view == before
    taken_from = copy.deepcopy(VIEW)
    baseline.take(taken_from, ("drops",), sparse=("drops",))
    taken_from["drops"]["loop"] += 10
    assert baseline.shown(taken_from)["drops"] == {"loop": 10}


def test_a_counter_below_its_baseline_started_again_and_is_shown_as_it_is() -> None:
    restarted = {**later(VIEW), "tx_errors": 1, "drops": {"loop": 1}}
    shown = cleared().shown(restarted)
    assert shown["tx_errors"] == 1 and shown["drops"] == {"loop": 1}


@pytest.mark.parametrize("odd", [None, "many", [1, 2], {"peer": "x", "others": None}, 3.5, True])
def test_a_counter_of_another_shape_is_left_as_it_is(odd: object) -> None:
    baseline = DisplayBaseline()
    baseline.take(VIEW, ("tx_errors", "rx_policed"))
    for key in ("tx_errors", "rx_policed"):
        assert baseline.shown({**VIEW, key: odd})[key] == odd
    odd_baseline = DisplayBaseline()
    odd_baseline.take({**VIEW, "tx_errors": odd, "rx_policed": odd}, ("tx_errors", "rx_policed"))
    assert odd_baseline.shown(VIEW) == VIEW


# -- a real daemon -----------------------------------------------------------------------

METRICS_PORT = 9718


def scrape(lab: Lab) -> dict[str, float]:
    return device_samples(lab, METRICS_PORT)


@pytest.mark.root
def test_a_clear_restarts_show_and_never_the_exported_counters(lab: Lab) -> None:
    lab.a.overrides = {"daemon": {"metrics": {"enabled": True, "address": "127.0.0.1", "port": METRICS_PORT}}}
    lab.start()
    lab.wait_for(lambda: lab.a.fast_port()["statistics"]["dot3OamInformationRx"] >= 10, 10, "ten keep-alives")
    before = scrape(lab)
    lab.a.query("clear_statistics", port="veth0")
    shown = lab.a.query("show_port", port="veth0")
    after = scrape(lab)
    counters = [name for name in before if name.split("{")[0].endswith("_total")]
    assert len(counters) > 30
    assert before["efmoam_information_rx_total{}"] >= 10
    lowered = {name: (before[name], after[name]) for name in counters if after[name] < before[name]}
    assert not lowered
    assert shown["statistics"]["dot3OamInformationRx"] <= 2  # from zero: at most a keep-alive since
    assert shown["statistics"]["dot3OamInformationTx"] <= 2
    assert set(SPARSE) <= set(CLEARED) <= set(shown), set(CLEARED) - set(shown)  # a renamed view key fails here
    assert shown["statistics_since"] > 0
    lab.wait_for(lambda: lab.a.fast_port()["statistics"]["dot3OamInformationRx"] >= 3, 5, "three more keep-alives")
    again = lab.a.query("show_port", port="veth0")["statistics"]["dot3OamInformationRx"]
    assert scrape(lab)["efmoam_information_rx_total{}"] >= before["efmoam_information_rx_total{}"] + again
