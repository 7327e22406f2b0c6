"""Shadowed port rules: the indexed search reports exactly what asking every earlier rule would,
and stays linear in the number of rules (issue 18: thousands of literal rules)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings, strategies as st
from yaml import Mark
from yaml.nodes import ScalarNode

from efmoam.config.loader import _Loader, _Rule

MATCHES = ["*", "eth0", "eth1", "eth*", "eth?", "e*", "[ae]th0", "veth0", "v*", None]


def rule(index: int, match: str | None, physical_only: bool | None) -> _Rule:
    mark = Mark("efmoam.yaml", 0, index + 1, 9, None, None)
    node = ScalarNode("tag:yaml.org,2002:str", match or "", start_mark=mark, end_mark=mark)
    return _Rule(match, physical_only, {}, node, f"ports.{index}")


def reported(rules: Sequence[_Rule]) -> list[tuple[str, str]]:
    loader = _Loader("efmoam.yaml")
    loader.shadowed(rules)
    return [(problem.path, problem.message) for problem in loader.problems]


def brute_force(rules: Sequence[_Rule]) -> list[tuple[str, str]]:
    """The definition: the first earlier rule that covers each rule."""
    found = []
    for index, later in enumerate(rules):
        earlier = next((other for other in rules[:index] if other.covers(later)), None)
        if earlier is not None:
            message = f"never used: {earlier.path} (match {earlier.match!r}) comes first and fits every port it fits"
            found.append((f"{later.path}.match", message))
    return found


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(MATCHES), st.sampled_from([None, False, True])), max_size=12))
def test_the_indexed_search_reports_what_asking_every_earlier_rule_reports(
    specs: list[tuple[str | None, bool | None]],
) -> None:
    rules = [rule(i, match, only) for i, (match, only) in enumerate(specs)]
    assert reported(rules) == brute_force(rules)


def test_thousands_of_rules_ask_covers_a_bounded_number_of_times(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = [0]
    covers = _Rule.covers

    def counted(self: _Rule, later: _Rule) -> bool:
        calls[0] += 1
        return covers(self, later)

    count = 4096
    rules = [rule(i, f"eth{i}", None) for i in range(count)] + [rule(count, "v*", None), rule(count + 1, "veth7", True)]
    expected = brute_force(rules)
    monkeypatch.setattr(_Rule, "covers", counted)
    assert reported(rules) == expected == [("ports.4097.match", expected[0][1])]
    assert calls[0] <= 4 * len(rules)  # asking every earlier rule: about 8.4 million
