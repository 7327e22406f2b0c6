"""Helpers for the configuration tests: load a dedented YAML text, or list its problems."""

from __future__ import annotations

import textwrap

import pytest

from efmoam.config import Config, ConfigError, PortProfile, load_config_text

FILENAME = "efmoam.yaml"


def load(text: str) -> Config:
    """The configuration in `text` (dedented); the test fails on any problem."""
    return load_config_text(textwrap.dedent(text), FILENAME)


def problems(text: str) -> list[str]:
    """Every problem in `text` (dedented), as printed; the test fails if there is none."""
    with pytest.raises(ConfigError) as caught:
        load_config_text(textwrap.dedent(text), FILENAME)
    assert caught.value.problems, "a ConfigError without problems"
    return [str(problem) for problem in caught.value.problems]


def only_profile(config: Config) -> PortProfile:
    """The profile of a configuration with exactly one rule."""
    (rule,) = config.rules
    return rule.profile
