"""Every kind of rejected configuration, with the exact line and column of each problem."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from efmoam.config import ConfigError, Problem, load_config, load_config_text
from tests.config.support import problems

# -- the document as a whole ---------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "---\n"])
def test_an_empty_file_is_an_error(text: str) -> None:
    assert problems(text) == ["efmoam.yaml:1:1: empty configuration"]


def test_the_top_level_must_be_a_mapping() -> None:
    assert problems("- match: eth0\n") == ["efmoam.yaml:1:1: must be a mapping, not a list"]


def test_a_syntax_error_has_its_position() -> None:
    text = """\
        defaults:
          mode: active
         multiplier: 3
        """
    assert problems(text) == [
        "efmoam.yaml:3:2: YAML syntax error: expected <block end>, but found '<block mapping start>'"
        " (while parsing a block mapping at line 1)"
    ]


def test_an_unquoted_star_gets_a_hint() -> None:
    (problem,) = problems("ports:\n  - match: *\n")
    assert problem.startswith("efmoam.yaml:2:13: YAML syntax error: expected alphabetic or numeric character")
    assert problem.endswith("""a value that starts with '*' is an alias: quote it (match: "*")""")
    (problem,) = problems("ports:\n  - match: *eth\n")
    assert problem == (
        "efmoam.yaml:2:12: YAML syntax error: found undefined alias 'eth'; "
        """a value that starts with '*' is an alias: quote it (match: "*")"""
    )


def test_two_documents_are_an_error() -> None:
    (problem,) = problems("daemon: {}\n---\ndaemon: {}\n")
    assert problem.startswith("efmoam.yaml:2:1: YAML syntax error: but found another document")


def test_a_control_character_is_an_error() -> None:
    assert problems("daemon:\n  state_dir: /x\x00\n") == [
        "efmoam.yaml:2:16: character #x0000 is not allowed in YAML (special characters are not allowed)"
    ]


def test_a_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"daemon:\n  state_dir: /caf\xe9\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert [str(p) for p in caught.value.problems] == [f"{path}:2:18: not UTF-8 text (invalid continuation byte)"]


def test_an_unreadable_file_raises_oserror(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_config(tmp_path / "missing.yaml")


def test_problem_and_error_formats() -> None:
    problem = Problem("f.yaml", 3, 11, "ports.0.mode", "must be one of active, passive")
    assert str(problem) == "f.yaml:3:11: ports.0.mode: must be one of active, passive"
    assert str(Problem("f.yaml", 1, 1, "", "empty configuration")) == "f.yaml:1:1: empty configuration"
    error = ConfigError([problem, problem])
    assert str(error) == f"{problem}\n{problem}"


# -- keys ------------------------------------------------------------------------------------


def test_a_duplicate_key_is_reported_at_the_second_key() -> None:
    text = """\
        daemon:
          rx_rate_limit: 10
          rx_rate_limit: 20
        daemon: {}
        """
    assert problems(text) == [
        "efmoam.yaml:3:3: daemon.rx_rate_limit: duplicate key (first at line 2)",
        "efmoam.yaml:4:1: daemon: duplicate key (first at line 1)",
    ]


def test_a_duplicate_key_deep_in_a_port_rule() -> None:
    text = """\
        ports:
          - match: eth0
            link_monitoring:
              errored_frame: {sf_threshold: 3, window: 2, sf_threshold: 4}
        """
    assert problems(text) == [
        "efmoam.yaml:4:51: ports.0.link_monitoring.errored_frame.sf_threshold: duplicate key (first at line 4)"
    ]


def test_an_unknown_key_is_reported_at_the_key_with_a_suggestion() -> None:
    text = """\
        defaults:
          link_monitoring:
            errored_frame:
              threshhold: 3
              sf-threshold: 3
              colour: blue
        port:
          - match: eth0
        """
    assert problems(text) == [
        "efmoam.yaml:4:7: defaults.link_monitoring.errored_frame.threshhold: unknown key; did you mean sf_threshold?",
        "efmoam.yaml:5:7: defaults.link_monitoring.errored_frame.sf-threshold: unknown key; did you mean sf_threshold?",
        "efmoam.yaml:6:7: defaults.link_monitoring.errored_frame.colour: unknown key",
        "efmoam.yaml:7:1: port: unknown key; did you mean ports?",
    ]


def test_rule_keys_in_the_defaults_get_a_hint() -> None:
    assert problems("defaults:\n  match: eth0\n") == [
        "efmoam.yaml:2:3: defaults.match: unknown key: match and physical_only belong in a rule under ports"
    ]


def test_merge_keys_are_not_supported() -> None:
    text = """\
        defaults:
          <<: {mode: passive}
        """
    assert problems(text) == ["efmoam.yaml:2:3: defaults: merge keys (<<) are not supported: use the defaults section"]


# -- types ---------------------------------------------------------------------------------


def test_wrong_types() -> None:
    text = """\
        daemon:
          control_socket: 5
          dying_gasp_on_shutdown: "yes"
          counter_interval: fast
          rx_rate_limit: 1.5
        defaults:
          enabled: 1
          multiplier: true
          transmit_interval: [1]
          link_monitoring: on
        """
    assert problems(text) == [
        "efmoam.yaml:2:19: daemon.control_socket: must be a string, not the number 5: quote it",
        "efmoam.yaml:3:27: daemon.dying_gasp_on_shutdown: must be true or false, not the string 'yes'",
        "efmoam.yaml:4:21: daemon.counter_interval: must be a number of seconds, not the string 'fast'",
        "efmoam.yaml:5:18: daemon.rx_rate_limit: must be a whole number, not the number 1.5",
        "efmoam.yaml:7:12: defaults.enabled: must be true or false, not the number 1",
        "efmoam.yaml:8:15: defaults.multiplier: must be a whole number, not the boolean true",
        "efmoam.yaml:9:22: defaults.transmit_interval: must be a number of seconds, not a list",
        "efmoam.yaml:10:20: defaults.link_monitoring: must be a mapping, not the boolean on",
    ]


def test_yaml_11_booleans_where_a_string_is_expected() -> None:
    text = """\
        defaults:
          mode: on
          loopback: yes
          action_backend: exec
          action_command: off
          link_monitoring:
            peer_actions:
              link_fault: no
        """
    assert problems(text) == [
        "efmoam.yaml:2:9: defaults.mode: must be one of active, passive, not the boolean on"
        " (YAML 1.1 reads unquoted yes/no/on/off as booleans)",
        "efmoam.yaml:3:13: defaults.loopback: must be one of ignore, process, not the boolean yes"
        " (YAML 1.1 reads unquoted yes/no/on/off as booleans)",
        "efmoam.yaml:5:19: defaults.action_command: must be a string, not the boolean off"
        " (YAML 1.1 reads unquoted yes/no/on/off as booleans): quote it",
        "efmoam.yaml:8:19: defaults.link_monitoring.peer_actions.link_fault: must be one of out-of-service (or block),"
        " log-only (or log), error-disable, down, not the boolean no (YAML 1.1 reads unquoted yes/no/on/off as"
        " booleans)",
    ]


def test_names_are_lower_case() -> None:
    assert problems("defaults:\n  mode: Active\n") == [
        "efmoam.yaml:2:9: defaults.mode: must be one of active, passive, not the string 'Active'"
        " (names are lower case: active)"
    ]


def test_an_empty_value_where_one_is_needed() -> None:
    assert problems("defaults:\n  mode:\n  counter_file: ''\n") == [
        "efmoam.yaml:2:8: defaults.mode: must be one of active, passive, not an empty value",
        "efmoam.yaml:3:17: defaults.counter_file: must not be empty",
    ]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("001122", 'quote the OUI: YAML reads 001122 as the number 594; write "001122"'),
        ("10:20:30", 'quote the OUI: YAML reads 10:20:30 as the number 37230; write "10:20:30"'),
        ("0x_", "YAML reads 0x_ as a int but cannot make one of it: quote it"),
        ('"00:11"', "must be an OUI like \"00:11:22\", not the string '00:11'"),
        ('"00:11-22"', "must be an OUI like \"00:11:22\", not the string '00:11-22'"),
        ("[0, 17, 34]", 'must be an OUI like "00:11:22", not a list'),
    ],
)
def test_an_oui_must_be_a_quoted_string(value: str, message: str) -> None:
    assert problems(f"defaults:\n  oui: {value}\n") == [f"efmoam.yaml:2:8: defaults.oui: {message}"]


def test_an_unquoted_oui_in_the_org_specific_tlv() -> None:
    text = """\
        ports:
          - match: eth0
            org_specific_tlv:
              oui: 10:20:30
              value: 0102
        """
    assert problems(text) == [
        "efmoam.yaml:4:12: ports.0.org_specific_tlv.oui:"
        ' quote the OUI: YAML reads 10:20:30 as the number 37230; write "10:20:30"',
        'efmoam.yaml:5:14: ports.0.org_specific_tlv.value: must be a quoted hex string like "0102ab", not 0102,'
        " which YAML reads as the number 66: quote it",
    ]


def test_the_org_specific_tlv_needs_both_keys() -> None:
    text = """\
        defaults:
          org_specific_tlv: {oui: "00:11:22"}
        """
    assert problems(text) == [
        "efmoam.yaml:2:21: defaults.org_specific_tlv.value: missing: org_specific_tlv needs oui and value"
    ]
    assert problems('defaults:\n  org_specific_tlv: {oui: "00:11:22", value: "zz"}\n') == [
        'efmoam.yaml:2:46: defaults.org_specific_tlv.value: must be a quoted hex string like "0102ab",'
        " not the string 'zz'"
    ]
    assert problems(f'defaults:\n  org_specific_tlv: {{oui: "00:11:22", value: "{"ab" * 251}"}}\n') == [
        "efmoam.yaml:2:46: defaults.org_specific_tlv.value: must be at most 250 octets, not 251"
    ]


def test_vendor_info() -> None:
    text = """\
        ports:
          - {match: a, vendor_info: 4294967296}
          - {match: b, vendor_info: "0x123456789"}
          - {match: c, vendor_info: "12"}
          - {match: d, vendor_info: -1}
        """
    assert problems(text) == [
        "efmoam.yaml:2:29: ports.0.vendor_info: must be between 0 and 4294967295, not 4294967296",
        'efmoam.yaml:3:29: ports.1.vendor_info: must be a number or a hex string like "0x00000001",'
        " not the string '0x123456789'",
        'efmoam.yaml:4:29: ports.2.vendor_info: must be a number or a hex string like "0x00000001",'
        " not the string '12'",
        "efmoam.yaml:5:29: ports.3.vendor_info: must be between 0 and 4294967295, not -1",
    ]


def test_required_functions() -> None:
    text = """\
        defaults:
          peer_policy:
            required_functions: [link_events, loopback, link_events, yes]
            required_mode: both
        ports:
          - match: eth0
            peer_policy: {required_functions: link_events}
        """
    assert problems(text) == [
        "efmoam.yaml:3:39: defaults.peer_policy.required_functions.1: must be one of unidirectional, remote_loopback,"
        " link_events, variable_retrieval, not the string 'loopback'",
        "efmoam.yaml:3:49: defaults.peer_policy.required_functions.2: link_events is listed twice",
        "efmoam.yaml:3:62: defaults.peer_policy.required_functions.3: must be one of unidirectional, remote_loopback,"
        " link_events, variable_retrieval, not the boolean yes (YAML 1.1 reads unquoted yes/no/on/off as booleans)",
        "efmoam.yaml:4:20: defaults.peer_policy.required_mode: must be one of active, passive, not the string 'both'",
        "efmoam.yaml:7:39: ports.0.peer_policy.required_functions: must be a list of unidirectional, remote_loopback,"
        " link_events, variable_retrieval, not the string 'link_events'",
    ]


def test_an_action_command_must_split_into_words() -> None:
    assert problems('defaults:\n  action_backend: exec\n  action_command: "/bin/act \'x"\n') == [
        "efmoam.yaml:3:19: defaults.action_command: cannot be split into words (no closing quotation)"
    ]


def test_non_finite_numbers() -> None:
    assert problems("defaults:\n  transmit_interval: .nan\n  loopback_timeout: .inf\n") == [
        "efmoam.yaml:2:22: defaults.transmit_interval: must be a number of seconds, not .nan",
        "efmoam.yaml:3:21: defaults.loopback_timeout: must be a number of seconds, not .inf",
    ]


# -- ranges (the core's validators) ----------------------------------------------------------


def test_out_of_range_values() -> None:
    text = """\
        daemon:
          counter_interval: 0
          rx_rate_limit: 20000
          control_socket: run/efmoam.sock
        defaults:
          transmit_interval: 20
          multiplier: 11
          max_pdu_size: 63
          loopback_timeout: 0
          counter_file: counters/eth0
          link_monitoring:
            symbol_rate: 0
            errored_frame: {window: 0.5, sf_threshold: 0}
            errored_frame_seconds: {window: 901}
            errored_frame_period: {window: 0, sd_threshold: -1}
            local_sf_action: {event_burst: 6}
        """
    assert problems(text) == [
        "efmoam.yaml:2:21: daemon.counter_interval: must be between 0.1 and 60, not 0",
        "efmoam.yaml:3:18: daemon.rx_rate_limit: must be between 1 and 10000, not 20000",
        "efmoam.yaml:4:19: daemon.control_socket: must be an absolute path, not 'run/efmoam.sock'",
        "efmoam.yaml:6:22: defaults.transmit_interval: must be between 0.1 and 10.0, not 20.0",
        "efmoam.yaml:7:15: defaults.multiplier: must be between 2 and 10, not 11",
        "efmoam.yaml:8:17: defaults.max_pdu_size: must be between 64 and 1518, not 63",
        "efmoam.yaml:9:21: defaults.loopback_timeout: must be between 0.1 and 60, not 0",
        "efmoam.yaml:10:17: defaults.counter_file: must be an absolute path, not 'counters/eth0'",
        "efmoam.yaml:12:18: defaults.link_monitoring.symbol_rate: must be at least 1, not 0",
        "efmoam.yaml:13:29: defaults.link_monitoring.errored_frame.window:"
        " errored-frame window must be between 1 and 60, not 0.5",
        "efmoam.yaml:13:48: defaults.link_monitoring.errored_frame.sf_threshold: errored-frame sf-threshold must be"
        " at least 1",
        "efmoam.yaml:14:37: defaults.link_monitoring.errored_frame_seconds.window: errored-frame-seconds-summary window"
        " must be between 10 and 900, not 901",
        "efmoam.yaml:15:36: defaults.link_monitoring.errored_frame_period.window: errored-frame-period window must be"
        " between 1 and 4.29497e+09, not 0",
        "efmoam.yaml:15:53: defaults.link_monitoring.errored_frame_period.sd_threshold: must be at least 0, not -1",
        "efmoam.yaml:16:36: defaults.link_monitoring.local_sf_action.event_burst: must be <= 5: 6",
    ]


def test_the_frame_period_window_is_a_whole_number_of_frames() -> None:
    assert problems("defaults:\n  link_monitoring:\n    errored_frame_period: {window: 1.5}\n") == [
        "efmoam.yaml:3:36: defaults.link_monitoring.errored_frame_period.window:"
        " must be a whole number, not the number 1.5"
    ]


# -- values checked together -----------------------------------------------------------------


def test_sd_threshold_must_be_below_sf_threshold() -> None:
    text = """\
        defaults:
          link_monitoring:
            errored_frame:
              sf_threshold: 5
              sd_threshold: 5
            errored_symbol_period:
              sf_threshold: 5
              sd_threshold: 9
        """
    assert problems(text) == [
        "efmoam.yaml:5:21: defaults.link_monitoring.errored_frame.sd_threshold:"
        " errored-frame sd-threshold 5 must be lower than sf-threshold 5",
        "efmoam.yaml:8:21: defaults.link_monitoring.errored_symbol_period.sd_threshold:"
        " errored-symbol-period sd-threshold 9 must be lower than sf-threshold 5",
    ]


def test_sd_and_sf_from_two_sections_blame_the_port_rule() -> None:
    text = """\
        defaults:
          link_monitoring:
            errored_frame: {sf_threshold: 10, sd_threshold: 5}
        ports:
          - match: eth0
            link_monitoring:
              errored_frame: {sf_threshold: 4}
          - match: eth1
          - match: eth2
            link_monitoring:
              errored_frame: {sd_threshold: 12}
        """
    assert problems(text) == [
        "efmoam.yaml:7:37: ports.0.link_monitoring.errored_frame.sf_threshold:"
        " errored-frame sd-threshold 5 must be lower than sf-threshold 4",
        "efmoam.yaml:11:37: ports.2.link_monitoring.errored_frame.sd_threshold:"
        " errored-frame sd-threshold 12 must be lower than sf-threshold 10",
    ]


def test_a_problem_in_the_defaults_is_reported_once_for_all_rules() -> None:
    text = """\
        defaults:
          link_monitoring:
            errored_frame: {sf_threshold: 2, sd_threshold: 3}
        ports:
          - match: eth0
          - match: eth1
        """
    assert problems(text) == [
        "efmoam.yaml:3:52: defaults.link_monitoring.errored_frame.sd_threshold:"
        " errored-frame sd-threshold 3 must be lower than sf-threshold 2"
    ]


def test_counter_file_and_action_command_are_required() -> None:
    text = """\
        defaults:
          counter_source: file
        ports:
          - match: veth0
            counter_file: /run/lab/veth0
          - match: veth1
            action_backend: exec
          - match: veth2
            counter_source: sysfs
            action_backend: exec
            action_command: /usr/local/bin/port-action
        """
    assert problems(text) == [
        "efmoam.yaml:6:5: ports.1.counter_file: required when counter_source is file",
        "efmoam.yaml:6:5: ports.1.action_command: required when action_backend is exec or an event action is exec",
    ]


def test_a_value_that_nothing_uses_is_an_error() -> None:
    text = """\
        defaults:
          action_backend: exec
          action_command: /usr/local/bin/port-action
        ports:
          - match: eth0
            action_backend: block
          - match: eth1
            counter_file: /run/counters.json
          - match: eth2
            action_backend: down
            action_command: null
        """
    assert problems(text) == [
        "efmoam.yaml:5:5: ports.0.action_command: only used when action_backend is exec or an event action is exec:"
        " remove it, or set it to null",
        "efmoam.yaml:8:19: ports.1.counter_file: only used when counter_source is file: remove it, or set it to null",
    ]
    assert problems("defaults:\n  counter_file: /run/counters.json\n") == [
        "efmoam.yaml:2:17: defaults.counter_file: only used when counter_source is file: remove it, or set it to null"
    ]


def test_a_required_value_without_ports_is_reported_in_the_defaults() -> None:
    text = """\
        daemon: {}
        defaults:
          counter_source: file
        """
    assert problems(text) == ["efmoam.yaml:3:3: defaults.counter_file: required when counter_source is file"]


# -- port rules ------------------------------------------------------------------------------


def test_port_rules() -> None:
    text = """\
        ports:
          - physical_only: true
          - eth0
          - match: "eth 0"
          - match: a-name-much-too-long
          - match: ""
          - match: eth0
            physical_only: "true"
        """
    assert problems(text) == [
        "efmoam.yaml:2:5: ports.0.match: missing: a port rule needs match (an interface name or pattern)",
        "efmoam.yaml:3:5: ports.1: must be a mapping, not the string 'eth0'",
        "efmoam.yaml:4:12: ports.2.match: interface names contain no spaces and no '/', not 'eth 0'",
        "efmoam.yaml:5:12: ports.3.match: interface names have at most 15 characters, not 20",
        "efmoam.yaml:6:12: ports.4.match: must not be empty",
        "efmoam.yaml:8:20: ports.5.physical_only: must be true or false, not the string 'true'",
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "ports:\n",
            "efmoam.yaml:1:7: ports: is empty:"
            " write ports: [] to manage no port, or remove it to manage every physical port",
        ),
        (
            "ports:\n  match: eth0\n",
            "efmoam.yaml:2:3: ports: must be a list of port rules (- match: ...), not a mapping",
        ),
        ("daemon: []\n", "efmoam.yaml:1:9: daemon: must be a mapping, not a list"),
    ],
)
def test_sections_of_the_wrong_shape(text: str, message: str) -> None:
    assert problems(text) == [message]


def test_every_problem_is_reported_in_file_order() -> None:
    text = """\
        ports:
          - match: eth0
            mode: on
            multiplier: 1
        defaults:
          oui: 001122
          link_monitoring:
            errored_frame: {sf_threshold: 1, sd_threshold: 1}
        daemon:
          rx_rate_limit: 0
          bogus: 1
        """
    lines = problems(text)
    assert [line.split(": ")[0] for line in lines] == [
        "efmoam.yaml:3:11",
        "efmoam.yaml:4:17",
        "efmoam.yaml:6:8",
        "efmoam.yaml:8:52",
        "efmoam.yaml:10:18",
        "efmoam.yaml:11:3",
    ]


def test_a_rule_that_an_earlier_rule_hides_is_an_error() -> None:
    text = """\
        ports:
          - match: "eth*"
          - match: eth0
          - match: "eth*"
          - match: "enp*"
            physical_only: true
          - match: enp1s0
          - match: "*"
          - match: veth0
        """
    assert problems(text) == [
        "efmoam.yaml:3:12: ports.1.match: never used: ports.0 (match 'eth*') comes first and fits every port it fits",
        "efmoam.yaml:4:12: ports.2.match: never used: ports.0 (match 'eth*') comes first and fits every port it fits",
        "efmoam.yaml:9:12: ports.6.match: never used: ports.5 (match '*') comes first and fits every port it fits",
    ]


def test_a_rule_after_a_narrower_one_is_fine() -> None:
    text = """\
        ports:
          - match: eth0
          - match: "eth*"
            physical_only: true
          - match: "eth*"
          - match: "enp[0-9]*"
          - match: "enp1*"
        """
    assert len(load_config_text(textwrap.dedent(text)).rules) == 5


def test_load_config_text_names_the_file_in_problems() -> None:
    with pytest.raises(ConfigError) as caught:
        load_config_text("daemon: 1\n", "/etc/efmoam/efmoam.yaml")
    assert str(caught.value) == "/etc/efmoam/efmoam.yaml:1:9: daemon: must be a mapping, not the number 1"
