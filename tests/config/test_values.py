"""Valid configurations: what they build (the core's classes), merging, and rule order."""

from __future__ import annotations

import attrs
import pytest

from efmoam.config import ActionBackend, Config, CounterSource, DaemonConfig, PortProfile, PortRule
from efmoam.config.model import SettingError
from efmoam.core.linkmon.settings import (
    LinkMonitoringSettings,
    LocalSfAction,
    MonitorSettings,
    PeerActions,
    PortAction,
)
from efmoam.core.settings import OamMode, PeerPolicy, PortSettings
from pdu import OamConfig
from tests.config.support import load, only_profile, problems

FULL = """\
    daemon:
      control_socket: /run/efmoam/test.sock
      state_dir: /var/lib/efmoam-test
      counter_interval: 0.5
      dying_gasp_on_shutdown: false
      rx_rate_limit: 50
    defaults:
      enabled: true
      mode: passive
      transmit_interval: 0.5
      multiplier: 3
      max_pdu_size: 1500
      oui: "00:11:22"
      vendor_info: "0x0000abcd"
      unidirectional: true
      loopback: process
      loopback_timeout: 2
      variable_retrieval: false
      link_events: true
      org_specific_tlv: {oui: "00-11-33", value: "01:02:ab"}
      peer_policy:
        required_functions: [link_events, remote_loopback]
        required_mode: active
      counter_source: file
      counter_file: /run/counters/eth0
      action_backend: exec
      action_command: /usr/local/bin/port-action
      link_monitoring:
        enabled: true
        symbol_rate: 125000000
        errored_symbol_period:
          {enabled: true, event_notification: false, sf_threshold: 100, sd_threshold: 10, window: 2}
        errored_frame: {enabled: true, sf_threshold: 10, sd_threshold: 3, window: 5}
        errored_frame_period: {enabled: true, sf_threshold: 20, sd_threshold: 0, window: 1488095}
        errored_frame_seconds: {enabled: true, sf_threshold: 5, sd_threshold: null, window: 120}
        local_sf_action: {port_action: log-only, event_burst: 3, dying_gasp: true, critical_event: true}
        peer_actions:
          link_fault: log-only
          dying_gasp: log-only
          critical_event: out-of-service
          event_notification: out-of-service
    ports:
      - match: "eth0"
"""


def test_a_full_configuration_builds_the_core_classes() -> None:
    config = load(FULL)
    assert config.daemon == DaemonConfig(
        control_socket="/run/efmoam/test.sock",
        state_dir="/var/lib/efmoam-test",
        counter_interval=0.5,
        dying_gasp_on_shutdown=False,
        rx_rate_limit=50,
    )
    profile = only_profile(config)
    settings = profile.settings
    assert settings.transmit_interval == 0.5
    assert settings.oui == 0x001122
    assert settings.vendor_info == 0xABCD
    assert settings.link_monitoring.errored_frame.sd_threshold == 3
    assert settings.link_monitoring.errored_frame.sf_threshold == 10
    assert settings.lost_link_time == 1.5
    assert profile == PortProfile(
        settings=PortSettings(
            mode=OamMode.PASSIVE,
            enabled=True,
            transmit_interval=0.5,
            multiplier=3,
            max_pdu_size=1500,
            oui=0x001122,
            vendor_info=0xABCD,
            unidirectional=True,
            loopback_process=True,
            loopback_timeout=2.0,
            variable_retrieval=False,
            link_events=True,
            org_specific_tlv=(0x001133, b"\x01\x02\xab"),
            peer_policy=PeerPolicy(
                required_functions=OamConfig.LINK_EVENTS | OamConfig.REMOTE_LOOPBACK, required_mode=OamMode.ACTIVE
            ),
            link_monitoring=LinkMonitoringSettings(
                enabled=True,
                symbol_rate=125_000_000,
                errored_symbol_period=MonitorSettings(
                    enabled=True, event_notification=False, sf_threshold=100, sd_threshold=10, window=2.0
                ),
                errored_frame=MonitorSettings(enabled=True, sf_threshold=10, sd_threshold=3, window=5.0),
                errored_frame_period=MonitorSettings(enabled=True, sf_threshold=20, sd_threshold=0, window=1488095),
                errored_frame_seconds=MonitorSettings(enabled=True, sf_threshold=5, sd_threshold=None, window=120.0),
                local_sf_action=LocalSfAction(
                    port_action=PortAction.LOG_ONLY, event_burst=3, dying_gasp=True, critical_event=True
                ),
                peer_actions=PeerActions(
                    link_fault=PortAction.LOG_ONLY,
                    dying_gasp=PortAction.LOG_ONLY,
                    critical_event=PortAction.OUT_OF_SERVICE,
                    event_notification=PortAction.OUT_OF_SERVICE,
                ),
            ),
        ),
        counter_source=CounterSource.FILE,
        counter_file="/run/counters/eth0",
        action_backend=ActionBackend.EXEC,
        action_command="/usr/local/bin/port-action",
    )
    assert config.rules == (PortRule("eth0", physical_only=False, profile=profile),)


def test_what_the_yaml_leaves_out_keeps_the_code_defaults() -> None:
    config = load("ports:\n  - match: eth0\n")
    assert config == Config(DaemonConfig(), (PortRule("eth0", False, PortProfile()),))


def test_a_section_without_values_is_empty() -> None:
    assert load("daemon:\ndefaults:\nports: []\n") == Config(DaemonConfig(), ())


def test_without_a_ports_section_every_physical_port_gets_the_defaults() -> None:
    config = load("defaults:\n  mode: passive\n")
    assert config.rules == (PortRule("*", True, PortProfile(PortSettings(mode=OamMode.PASSIVE))),)
    assert config.profile_for("eth7", physical=True) == PortProfile(PortSettings(mode=OamMode.PASSIVE))
    assert config.profile_for("veth0", physical=False) is None


def test_an_empty_ports_list_manages_no_port() -> None:
    config = load("defaults:\n  mode: passive\nports: []\n")
    assert config.rules == ()
    assert config.profile_for("eth0", physical=True) is None


# -- merging -----------------------------------------------------------------------------------


def test_nested_sections_merge_key_by_key() -> None:
    config = load(
        """\
        defaults:
          mode: passive
          link_monitoring:
            enabled: true
            errored_frame: {enabled: true, sf_threshold: 10, sd_threshold: 4, window: 5}
            errored_symbol_period: {enabled: true}
            peer_actions: {link_fault: log-only, dying_gasp: log-only}
          peer_policy: {required_functions: [link_events], required_mode: active}
        ports:
          - match: eth0
            link_monitoring:
              errored_frame: {sf_threshold: 20}
              peer_actions: {dying_gasp: out-of-service}
            peer_policy: {required_mode: null}
          - match: eth1
        """
    )
    eth0 = config.rules[0].profile.settings
    eth1 = config.rules[1].profile.settings
    assert eth0.mode is OamMode.PASSIVE
    assert eth0.link_monitoring.enabled
    assert eth0.link_monitoring.errored_frame == MonitorSettings(
        enabled=True, sf_threshold=20, sd_threshold=4, window=5
    )
    assert eth0.link_monitoring.errored_symbol_period == MonitorSettings(enabled=True)
    assert eth0.link_monitoring.peer_actions == PeerActions(
        link_fault=PortAction.LOG_ONLY, dying_gasp=PortAction.OUT_OF_SERVICE
    )
    assert eth0.peer_policy == PeerPolicy(required_functions=OamConfig.LINK_EVENTS, required_mode=None)
    assert eth1.link_monitoring.errored_frame == MonitorSettings(
        enabled=True, sf_threshold=10, sd_threshold=4, window=5
    )
    assert eth1.peer_policy == PeerPolicy(required_functions=OamConfig.LINK_EVENTS, required_mode=OamMode.ACTIVE)


def test_a_rule_can_turn_off_what_the_defaults_turn_on() -> None:
    config = load(
        """\
        defaults:
          org_specific_tlv: {oui: "00:11:22", value: "01"}
          counter_source: file
          counter_file: /run/counters
          link_monitoring:
            errored_frame: {sf_threshold: 10, sd_threshold: 4}
        ports:
          - match: eth0
            org_specific_tlv: null
            counter_source: sysfs
            counter_file: null
            link_monitoring:
              errored_frame: {sd_threshold: null, sf_threshold: 2}
        """
    )
    profile = only_profile(config)
    assert profile.settings.org_specific_tlv is None
    assert profile.counter_source is CounterSource.SYSFS
    assert profile.counter_file is None
    assert profile.settings.link_monitoring.errored_frame == MonitorSettings(sf_threshold=2, sd_threshold=None)


def test_a_list_value_is_replaced_not_merged() -> None:
    config = load(
        """\
        defaults:
          peer_policy: {required_functions: [link_events, unidirectional]}
        ports:
          - match: eth0
            peer_policy: {required_functions: []}
        """
    )
    assert only_profile(config).settings.peer_policy.required_functions == OamConfig(0)


def test_rules_do_not_leak_into_each_other() -> None:
    config = load(
        """\
        ports:
          - match: eth0
            multiplier: 3
          - match: eth1
        """
    )
    assert [rule.profile.settings.multiplier for rule in config.rules] == [3, PortSettings().multiplier]


# -- rule order and patterns -------------------------------------------------------------------


RULES = """\
    ports:
      - match: eth0
        enabled: false
      - match: "eth*"
        physical_only: true
        mode: active
      - match: "enp*s0f*"
        mode: passive
      - match: "veth[01]"
        transmit_interval: 0.2
      - match: "*"
        physical_only: true
        multiplier: 2
"""


@pytest.mark.parametrize(
    ("ifname", "physical", "rule"),
    [
        ("eth0", True, 0),  # the first match wins, even though eth* fits too
        ("eth0", False, 0),
        ("eth1", True, 1),
        ("eth1", False, None),  # eth* is physical_only, and so is *
        ("enp65s0f1", True, 2),
        ("enp65s0f1np1", False, 2),
        ("enp65s0", True, 4),
        ("veth0", False, 3),
        ("veth1", False, 3),
        ("veth2", False, None),
        ("veth2", True, 4),
        ("ETH1", True, 4),  # patterns are case-sensitive
        ("lo", False, None),
    ],
)
def test_the_first_matching_rule_wins(ifname: str, physical: bool, rule: int | None) -> None:
    config = load(RULES)
    expected = None if rule is None else config.rules[rule].profile
    assert config.profile_for(ifname, physical) is expected


def test_rules_keep_their_order() -> None:
    config = load(RULES)
    assert [(rule.match, rule.physical_only) for rule in config.rules] == [
        ("eth0", False),
        ("eth*", True),
        ("enp*s0f*", False),
        ("veth[01]", False),
        ("*", True),
    ]
    assert not config.rules[0].profile.settings.enabled
    assert config.rules[4].profile.settings.multiplier == 2


# -- value forms ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('"00:11:22"', 0x001122),
        ('"00-11-22"', 0x001122),
        ('"aabbcc"', 0xAABBCC),
        ('"AA:BB:CC"', 0xAABBCC),
        ("00:11:22", 0x001122),  # YAML keeps it a string because it starts with 0
    ],
)
def test_oui_forms(text: str, expected: int) -> None:
    assert only_profile(load(f"defaults:\n  oui: {text}\nports: [{{match: a}}]\n")).settings.oui == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0", 0), ("4294967295", 0xFFFFFFFF), ("0x00000001", 1), ('"0x00000001"', 1), ('"0XFFffFFff"', 0xFFFFFFFF)],
)
def test_vendor_info_forms(text: str, expected: int) -> None:
    assert (
        only_profile(load(f"defaults:\n  vendor_info: {text}\nports: [{{match: a}}]\n")).settings.vendor_info
        == expected
    )


@pytest.mark.parametrize(
    ("text", "expected"), [('"0x0102"', b"\x01\x02"), ('"01 02 ff"', b"\x01\x02\xff"), ('""', b"")]
)
def test_org_specific_value_forms(text: str, expected: bytes) -> None:
    config = load(f'defaults:\n  org_specific_tlv: {{oui: "00:11:22", value: {text}}}\nports: [{{match: a}}]\n')
    assert only_profile(config).settings.org_specific_tlv == (0x001122, expected)


def test_whole_seconds_and_quoted_strings() -> None:
    config = load(
        """\
        daemon: {counter_interval: 1}
        defaults: {transmit_interval: 2, action_backend: "log-only", mode: !!str active}
        ports: [{match: 'eth0'}]
        """
    )
    assert config.daemon.counter_interval == 1.0
    assert isinstance(config.daemon.counter_interval, float)
    assert only_profile(config).settings.transmit_interval == 2.0
    assert only_profile(config).action_backend is ActionBackend.LOG_ONLY


def test_anchors_and_aliases_work_for_values() -> None:
    config = load(
        """\
        defaults:
          link_monitoring:
            errored_frame: &strict {enabled: true, sf_threshold: 3}
            errored_symbol_period: *strict
        ports: [{match: a}]
        """
    )
    lm = only_profile(config).settings.link_monitoring
    assert lm.errored_frame == lm.errored_symbol_period == MonitorSettings(enabled=True, sf_threshold=3)


# -- the model alone -------------------------------------------------------------------------------


def test_the_model_checks_itself() -> None:
    with pytest.raises(SettingError, match="counter_file is required when counter_source is file"):
        PortProfile(counter_source=CounterSource.FILE)
    with pytest.raises(SettingError, match="action_command is required when action_backend is exec"):
        PortProfile(action_backend=ActionBackend.EXEC)
    with pytest.raises(SettingError, match="counter_file is only used when counter_source is file"):
        PortProfile(counter_file="/run/counters")
    with pytest.raises(SettingError, match="action_command is only used when action_backend is exec"):
        PortProfile(action_command="/bin/true")
    with pytest.raises(ValueError, match="must be an absolute path"):
        PortProfile(counter_file="relative")
    with pytest.raises(ValueError, match=r"counter_interval must be between 0\.1 and 60, not 0"):
        DaemonConfig(counter_interval=0)
    with pytest.raises(ValueError, match="rx_rate_limit"):
        DaemonConfig(rx_rate_limit=0)
    assert Config(rules=[PortRule("a")]).rules == (PortRule("a"),)


def test_models_are_frozen_and_comparable() -> None:
    config = load(FULL)
    assert config == load(FULL)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        config.daemon.rx_rate_limit = 1  # type: ignore[misc]
    assert hash(config.daemon) == hash(load(FULL).daemon)


def test_expect_peer_is_per_port_and_a_boolean() -> None:
    config = load(
        """
        defaults:
          expect_peer: true
        ports:
          - match: eth0
            expect_peer: false
          - match: "eth*"
        """
    )
    assert [rule.profile.expect_peer for rule in config.rules] == [False, True]
    assert PortProfile().expect_peer is False  # the built-in default: no alert where a peer may not run OAM
    assert problems("defaults:\n  expect_peer: sometimes\n") == [
        "efmoam.yaml:2:16: defaults.expect_peer: must be true or false, not the string 'sometimes'"
    ]
