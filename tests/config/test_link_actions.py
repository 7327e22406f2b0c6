"""Link monitoring's port actions (with the policy's names as aliases) and the monitors'
clear thresholds (sd_clear, sf_clear)."""

from __future__ import annotations

import pytest

from efmoam.core.linkmon.settings import LocalSfAction, MonitorSettings, PeerActions, PortAction
from tests.config.support import load, only_profile, problems

NAMES = "out-of-service (or block), log-only (or log), error-disable, down"


@pytest.mark.parametrize(
    ("name", "action"),
    [
        ("out-of-service", PortAction.OUT_OF_SERVICE),
        ("block", PortAction.OUT_OF_SERVICE),
        ("log-only", PortAction.LOG_ONLY),
        ("log", PortAction.LOG_ONLY),
        ("error-disable", PortAction.ERROR_DISABLE),
        ("down", PortAction.DOWN),
    ],
)
def test_port_actions_and_their_aliases(name: str, action: PortAction) -> None:
    config = load(
        f"""\
        defaults:
          link_monitoring:
            local_sf_action: {{port_action: {name}}}
            peer_actions: {{link_fault: {name}, dying_gasp: {name}, critical_event: {name}, event_notification: {name}}}
        ports: [{{match: eth0}}]
        """
    )
    link_monitoring = only_profile(config).settings.link_monitoring
    assert link_monitoring.local_sf_action == LocalSfAction(port_action=action)
    assert link_monitoring.peer_actions == PeerActions(action, action, action, action)


def test_a_wrong_port_action_lists_the_accepted_names() -> None:
    text = """\
        defaults:
          link_monitoring:
            local_sf_action: {port_action: shutdown}
            peer_actions:
              link_fault: Block
              event_notification: [down]
        """
    assert problems(text) == [
        f"efmoam.yaml:3:36: defaults.link_monitoring.local_sf_action.port_action: must be one of {NAMES},"
        " not the string 'shutdown'",
        f"efmoam.yaml:5:19: defaults.link_monitoring.peer_actions.link_fault: must be one of {NAMES},"
        " not the string 'Block' (names are lower case: block)",
        f"efmoam.yaml:6:27: defaults.link_monitoring.peer_actions.event_notification: must be one of {NAMES},"
        " not a list",
    ]


# -- clear thresholds ------------------------------------------------------------------------


def test_clear_thresholds_build_the_monitor_settings() -> None:
    config = load(
        """\
        defaults:
          link_monitoring:
            errored_frame: {sf_threshold: 10, sd_threshold: 5, sd_clear: 2, sf_clear: null}
            errored_symbol_period: {sf_threshold: 100, sd_threshold: 10, sd_clear: 5, sf_clear: 20}
            errored_frame_seconds: {sf_threshold: 3, sf_clear: null}
        ports: [{match: eth0}]
        """
    )
    link_monitoring = only_profile(config).settings.link_monitoring
    assert link_monitoring.errored_frame == MonitorSettings(sf_threshold=10, sd_threshold=5, sd_clear=2)
    assert link_monitoring.errored_symbol_period == MonitorSettings(
        sf_threshold=100, sd_threshold=10, sd_clear=5, sf_clear=20
    )
    assert link_monitoring.errored_frame_seconds == MonitorSettings(sf_threshold=3)
    assert link_monitoring.errored_frame_period == MonitorSettings()


def test_clear_thresholds_merge_key_by_key() -> None:
    config = load(
        """\
        defaults:
          link_monitoring:
            errored_symbol_period: {sf_threshold: 100, sd_threshold: 10, sd_clear: 5, sf_clear: 20}
        ports:
          - match: eth0
            link_monitoring:
              errored_symbol_period: {sf_clear: null, sd_clear: 8}
        """
    )
    assert only_profile(config).settings.link_monitoring.errored_symbol_period == MonitorSettings(
        sf_threshold=100, sd_threshold=10, sd_clear=8
    )


def test_clear_thresholds_out_of_range() -> None:
    text = """\
        defaults:
          link_monitoring:
            errored_frame: {sf_threshold: 10, sd_threshold: 5, sd_clear: 6}
            errored_frame_period: {sf_threshold: 10, sd_clear: 2}
            errored_frame_seconds: {sf_threshold: 10, sf_clear: 2}
            errored_symbol_period: {sf_threshold: 10, sd_threshold: 5, sd_clear: 0, sf_clear: 11}
        """
    assert problems(text) == [
        "efmoam.yaml:3:66: defaults.link_monitoring.errored_frame.sd_clear:"
        " errored-frame sd-clear 6 must be between 1 and sd-threshold 5",
        "efmoam.yaml:4:56: defaults.link_monitoring.errored_frame_period.sd_clear:"
        " errored-frame-period sd-clear needs an sd-threshold",
        "efmoam.yaml:5:57: defaults.link_monitoring.errored_frame_seconds.sf_clear:"
        " errored-frame-seconds-summary sf-clear is only used by errored-symbol-period"
        " (a frame monitor's failure lasts until it is cleared): remove it, or set it to null",
        "efmoam.yaml:6:74: defaults.link_monitoring.errored_symbol_period.sd_clear:"
        " errored-symbol-period sd-clear 0 must be between 1 and sd-threshold 5",
    ]
    assert problems("defaults:\n  link_monitoring:\n    errored_symbol_period: {sf_threshold: 10, sf_clear: 11}\n") == [
        "efmoam.yaml:3:57: defaults.link_monitoring.errored_symbol_period.sf_clear:"
        " errored-symbol-period sf-clear 11 must be between 1 and sf-threshold 10"
    ]


def test_clear_thresholds_of_the_wrong_type() -> None:
    text = """\
        defaults:
          link_monitoring:
            errored_frame: {sd_threshold: 3, sf_threshold: 5, sd_clear: 1.5}
            errored_symbol_period: {sf_clear: "2"}
        """
    assert problems(text) == [
        "efmoam.yaml:3:65: defaults.link_monitoring.errored_frame.sd_clear: must be a whole number, not the number 1.5",
        "efmoam.yaml:4:39: defaults.link_monitoring.errored_symbol_period.sf_clear: must be a whole number,"
        " not the string '2'",
    ]


def test_a_threshold_a_rule_lowers_below_the_defaults_clear_is_blamed_on_the_rule() -> None:
    text = """\
        defaults:
          link_monitoring:
            errored_frame: {sf_threshold: 20, sd_threshold: 10, sd_clear: 8}
            errored_symbol_period: {sf_threshold: 20, sf_clear: 15}
        ports:
          - match: eth0
            link_monitoring:
              errored_frame: {sd_threshold: 5}
              errored_symbol_period: {sf_threshold: 10}
          - match: eth1
            link_monitoring:
              errored_frame: {sd_clear: 12}
        """
    assert problems(text) == [
        "efmoam.yaml:8:37: ports.0.link_monitoring.errored_frame.sd_threshold:"
        " errored-frame sd-clear 8 must be between 1 and sd-threshold 5",
        "efmoam.yaml:9:45: ports.0.link_monitoring.errored_symbol_period.sf_threshold:"
        " errored-symbol-period sf-clear 15 must be between 1 and sf-threshold 10",
        "efmoam.yaml:12:33: ports.1.link_monitoring.errored_frame.sd_clear:"
        " errored-frame sd-clear 12 must be between 1 and sd-threshold 10",
    ]
