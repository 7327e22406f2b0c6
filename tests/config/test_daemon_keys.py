"""daemon.control_socket_group and daemon.metrics.detail: defaults, good values, and
hostile ones refused with their place (never a traceback)."""

from __future__ import annotations

import pytest

from efmoam.config.model import MetricsDetail
from tests.config.support import load, problems


def test_defaults() -> None:
    daemon = load("ports: [{match: eth0}]\n").daemon
    assert (daemon.control_socket_group, daemon.metrics.detail) == ("efmoam", MetricsDetail.FULL)


def test_good_values() -> None:
    daemon = load("daemon:\n  control_socket_group: netops\n  metrics: {detail: basic}\n").daemon
    assert (daemon.control_socket_group, daemon.metrics.detail) == ("netops", MetricsDetail.BASIC)
    assert load("daemon:\n  control_socket_group: null\n").daemon.control_socket_group is None


@pytest.mark.parametrize(
    "value",
    ['"wheel;rm -rf /"', '"../etc"', '""', '"a b"', '"' + "g" * 40 + '"', '"-x"', "[efmoam]", "12"],
)
def test_a_group_that_is_not_a_group_name_is_refused(value: str) -> None:
    (problem,) = problems(f"daemon:\n  control_socket_group: {value}\n")
    assert problem.startswith("efmoam.yaml:2:") and "daemon.control_socket_group" in problem


@pytest.mark.parametrize("value", ["verbose", '""', "true", "[basic]"])
def test_a_detail_other_than_basic_or_full_is_refused(value: str) -> None:
    (problem,) = problems(f"daemon:\n  metrics:\n    detail: {value}\n")
    assert problem.startswith("efmoam.yaml:3:") and "daemon.metrics.detail" in problem
