"""The NIC health monitors' keys under link_monitoring: defaults, good values, hostile values
refused with their place."""

from __future__ import annotations

import pytest

from efmoam.config import load_default_config
from efmoam.core.linkmon.kinds import HEALTH, HealthKind
from efmoam.core.linkmon.settings import HealthSettings
from tests.config.support import load, only_profile, problems


def test_they_are_off_by_default() -> None:
    link_monitoring = load_default_config().rules[0].profile.settings.link_monitoring
    assert all(link_monitoring.health(facts.kind) == HealthSettings() for facts in HEALTH)
    assert only_profile(load("ports:\n  - match: eth0\n")).settings.link_monitoring.fec_corrected == HealthSettings()


def test_good_values() -> None:
    text = """\
        defaults:
          link_monitoring:
            enabled: true
            fec_corrected: {enabled: true, window: 30, sf_threshold: 250000.0, sd_threshold: 1000.5}
            pause_storm: {enabled: true, sf_threshold: 500, fatal: false}
        ports:
          - match: eth0
            link_monitoring:
              link_flaps: {enabled: true, window: 300, sf_threshold: 5, sd_threshold: 2, fatal: true}
              ib_fatal: {enabled: true}
              pause_storm: {sd_threshold: 100}
        """
    lm = only_profile(load(text)).settings.link_monitoring
    assert lm.fec_corrected == HealthSettings(enabled=True, window=30.0, sf_threshold=250_000.0, sd_threshold=1000.5)
    assert lm.pause_storm == HealthSettings(enabled=True, sf_threshold=500.0, sd_threshold=100.0, fatal=False)
    assert lm.link_flaps == HealthSettings(enabled=True, window=300.0, sf_threshold=5, sd_threshold=2, fatal=True)
    assert lm.ib_fatal.effective(HealthKind.IB_FATAL) == (10.0, 1.0, None, True)
    assert lm.fec_uncorrectable == HealthSettings()


def _one(key: str, value: str) -> list[str]:
    return problems(f"defaults:\n  link_monitoring:\n    {key}: {value}\n")


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("fec_corrected", "{sf_threshold: -1}", "3:35: defaults.link_monitoring.fec_corrected.sf_threshold: "
         "fec_corrected sf-threshold must be above 0 and at most 1e+15, not -1"),
        ("fec_corrected", "{sf_threshold: .nan}", "3:35: defaults.link_monitoring.fec_corrected.sf_threshold: "
         "must be a number, not .nan"),
        ("fec_corrected", "{sf_threshold: 1.0e+300}", "3:35: defaults.link_monitoring.fec_corrected.sf_threshold: "
         "fec_corrected sf-threshold must be above 0 and at most 1e+15, not 1e+300"),
        ("fec_corrected", "{sf_threshold: lots}", "3:35: defaults.link_monitoring.fec_corrected.sf_threshold: "
         "must be a number, not the string 'lots'"),
        ("fec_corrected", "{fatal: true}", "3:28: defaults.link_monitoring.fec_corrected.fatal: "
         "fec_corrected cannot be fatal: it has no fatal counter (its rate has sd/sf thresholds)"),
        ("fec_corrected", "{sd_threshold: 10, sf_threshold: 10}", "3:35: defaults.link_monitoring.fec_corrected"
         ".sd_threshold: fec_corrected sd-threshold 10 must be above 0 and below sf-threshold 10 "
         "(corrected bits (or codewords) per second)"),
        ("link_flaps", "{sf_threshold: 2.5}", "3:32: defaults.link_monitoring.link_flaps.sf_threshold: "
         "must be a whole number, not the number 2.5"),
        ("link_flaps", "{window: 0.5}", "3:26: defaults.link_monitoring.link_flaps.window: "
         "link_flaps window must be between 1 and 86400 seconds, not 0.5"),
        ("ib_fatal", "{window: .inf}", "3:24: defaults.link_monitoring.ib_fatal.window: "
         "must be a number of seconds, not .inf"),
        ("pause_storm", "{fatal: 1}", "3:26: defaults.link_monitoring.pause_storm.fatal: must be true or false"),
        ("pause_storm", "{sd_threshold: -5}", "3:33: defaults.link_monitoring.pause_storm.sd_threshold: "
         "pause_storm sd-threshold -5 must be above 0 and below sf-threshold 10000 (pause frames per second)"),
        ("pause_storm", "[1, 2]", "3:18: defaults.link_monitoring.pause_storm: must be a mapping"),
        ("fec_uncorrectable", "{sf: 1}", "3:25: defaults.link_monitoring.fec_uncorrectable.sf: unknown key"),
    ],
)  # fmt: skip
def test_hostile_values_are_refused_with_their_place(key: str, value: str, expected: str) -> None:
    (problem,) = _one(key, value)
    assert problem.startswith(f"efmoam.yaml:{expected}"), problem


def test_a_rule_s_value_is_blamed_before_the_defaults() -> None:
    text = """\
        defaults:
          link_monitoring:
            pause_storm: {sf_threshold: 100}
        ports:
          - match: eth0
            link_monitoring:
              pause_storm: {sd_threshold: 200}
        """
    (problem,) = problems(text)
    place = "efmoam.yaml:7:35: ports.0.link_monitoring.pause_storm.sd_threshold: "
    assert problem.startswith(place + "pause_storm sd-threshold 200")
