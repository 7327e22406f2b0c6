"""The action policy keys (event_actions, discovery_timeout, unidirectional_time, recovery,
track) and dying_gasp_count: what they build, how rules merge them, every rejected value."""

from __future__ import annotations

import pytest

from efmoam.config import ActionBackend
from efmoam.core.policy.settings import (
    Action,
    EventActions,
    EventName,
    PolicySettings,
    Recovery,
    Track,
    TrackKind,
)
from efmoam.core.settings import PortSettings
from tests.config.support import load, only_profile, problems

A = Action

POLICY = """\
    defaults:
      event_actions:
        session_down: [error-disable, exec, notify-peer]
        session_up: exec
        capabilities_conflict: log
        unidirectional: [block, notify-peer]
        loop: down
        wiring_conflict: [log]
        remote_loopback: notify-peer
      discovery_timeout: 30
      unidirectional_time: 2.5
      recovery:
        auto_after: 600
        hold_down: 0
      track:
        - interface: eth9
        - unit: frr.service
          interval: 5
        - command: [/usr/local/bin/check-uplink, --quiet]
          interval: 10
          name: uplink
      dying_gasp_count: 3
      action_command: /usr/local/bin/on-event
    ports:
      - match: eth0
"""


# -- what the keys build -----------------------------------------------------------------------


def test_the_policy_keys_build_the_core_classes() -> None:
    settings = only_profile(load(POLICY)).settings
    assert settings.policy == PolicySettings(
        event_actions=EventActions(
            session_down=frozenset({A.ERROR_DISABLE, A.EXEC, A.NOTIFY_PEER}),
            session_up=frozenset({A.EXEC}),
            capabilities_conflict=frozenset({A.LOG}),
            unidirectional=frozenset({A.BLOCK, A.NOTIFY_PEER}),
            loop=frozenset({A.DOWN}),
            wiring_conflict=frozenset({A.LOG}),
            remote_loopback=frozenset({A.NOTIFY_PEER}),
        ),
        discovery_timeout=30.0,
        unidirectional_time=2.5,
        recovery=Recovery(auto_after=600.0, hold_down=0.0),
        track=(
            Track(TrackKind.INTERFACE, "eth9"),
            Track(TrackKind.UNIT, "frr.service", interval=5.0),
            Track(TrackKind.COMMAND, ("/usr/local/bin/check-uplink", "--quiet"), interval=10.0, name="uplink"),
        ),
    )
    assert settings.dying_gasp_count == 3
    assert [track.name for track in settings.policy.track] == ["interface:eth9", "unit:frr.service", "uplink"]


def test_what_the_yaml_leaves_out_keeps_the_core_defaults() -> None:
    settings = only_profile(load("ports:\n  - match: eth0\n")).settings
    assert settings.policy == PolicySettings()
    assert settings.policy.event_actions.loop == frozenset({A.ERROR_DISABLE})  # the core's choice, not the loader's
    assert settings.dying_gasp_count == PortSettings().dying_gasp_count == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("log", {A.LOG}),
        ("notify-peer", {A.NOTIFY_PEER}),
        ("[error-disable, down, notify-peer]", {A.ERROR_DISABLE, A.DOWN, A.NOTIFY_PEER}),
        ("[block, log]", {A.BLOCK, A.LOG}),
        ('"down"', {A.DOWN}),
    ],
)
def test_an_event_takes_an_action_or_a_list_of_them(text: str, expected: set[Action]) -> None:
    config = load(f"defaults:\n  event_actions:\n    wiring_conflict: {text}\nports: [{{match: a}}]\n")
    assert only_profile(config).settings.policy.event_actions.wiring_conflict == expected


def test_a_command_string_is_split_as_a_shell_would() -> None:
    config = load(
        """\
        defaults:
          track:
            - command: "/usr/local/bin/check 'two words' --quiet"
        ports: [{match: a}]
        """
    )
    (track,) = only_profile(config).settings.policy.track
    assert track == Track(TrackKind.COMMAND, ("/usr/local/bin/check", "two words", "--quiet"))
    assert track.name == "command:/usr/local/bin/check two words --quiet"


def test_null_timeouts_and_recovery() -> None:
    config = load(
        """\
        defaults:
          discovery_timeout: 10
          unidirectional_time: 1
          recovery: {auto_after: 60}
        ports:
          - match: eth0
            discovery_timeout: null
            unidirectional_time: null
            recovery: {auto_after: null}
        """
    )
    policy = only_profile(config).settings.policy
    assert (policy.discovery_timeout, policy.unidirectional_time, policy.recovery) == (None, None, Recovery())


# -- merging -----------------------------------------------------------------------------------


def test_event_actions_and_recovery_merge_key_by_key() -> None:
    config = load(
        """\
        defaults:
          event_actions:
            session_down: error-disable
            loop: [down, notify-peer]
          recovery: {auto_after: 120, hold_down: 60}
        ports:
          - match: eth0
            event_actions: {loop: log, unidirectional: block}
            recovery: {hold_down: 0}
          - match: eth1
        """
    )
    eth0, eth1 = (rule.profile.settings.policy for rule in config.rules)
    assert eth0.event_actions == EventActions(
        session_down=frozenset({A.ERROR_DISABLE}), loop=frozenset({A.LOG}), unidirectional=frozenset({A.BLOCK})
    )
    assert eth0.recovery == Recovery(auto_after=120.0, hold_down=0.0)
    assert eth1.event_actions == EventActions(
        session_down=frozenset({A.ERROR_DISABLE}), loop=frozenset({A.DOWN, A.NOTIFY_PEER})
    )
    assert eth1.recovery == Recovery(auto_after=120.0, hold_down=60.0)


def test_an_action_list_replaces_the_defaults_list() -> None:
    config = load(
        """\
        defaults:
          event_actions: {session_down: [block, notify-peer]}
        ports:
          - match: eth0
            event_actions: {session_down: [log]}
        """
    )
    assert only_profile(config).settings.policy.event_actions.session_down == {A.LOG}


def test_a_rules_track_list_replaces_the_defaults_list() -> None:
    config = load(
        """\
        defaults:
          track:
            - interface: eth9
            - unit: frr.service
        ports:
          - match: eth0
            track:
              - unit: bird.service
          - match: eth1
            track: []
          - match: eth2
        """
    )
    eth0, eth1, eth2 = (rule.profile.settings.policy.track for rule in config.rules)
    assert eth0 == (Track(TrackKind.UNIT, "bird.service"),)
    assert eth1 == ()
    assert eth2 == (Track(TrackKind.INTERFACE, "eth9"), Track(TrackKind.UNIT, "frr.service"))


# -- action_command and the exec action ---------------------------------------------------------


def test_an_exec_event_action_allows_action_command() -> None:
    config = load(
        """\
        defaults:
          event_actions: {loop: [error-disable, exec]}
          action_command: "/usr/local/bin/on-event --verbose"
        ports:
          - match: eth0
          - match: eth1
            action_backend: exec
        """
    )
    eth0, eth1 = (rule.profile for rule in config.rules)
    assert eth0.action_backend is ActionBackend.BLOCK
    assert eth0.action_command == eth1.action_command == "/usr/local/bin/on-event --verbose"
    assert eth1.action_backend is ActionBackend.EXEC


def test_an_exec_event_action_needs_action_command() -> None:
    text = """\
        ports:
          - match: eth0
            event_actions:
              session_up: [log, exec]
          - match: eth1
        """
    assert problems(text) == [
        "efmoam.yaml:2:5: ports.0.action_command: required when action_backend is exec or an event action is exec"
    ]
    assert problems("defaults:\n  event_actions: {loop: exec}\n") == [
        "efmoam.yaml:2:3: defaults.action_command: required when action_backend is exec or an event action is exec"
    ]


def test_action_command_without_exec_is_an_error() -> None:
    text = """\
        defaults:
          event_actions: {session_down: exec}
          action_command: /usr/local/bin/on-event
        ports:
          - match: eth0
            event_actions: {session_down: log}
          - match: eth1
          - match: eth2
            event_actions: {session_down: log}
            action_command: /usr/local/bin/other
        """
    assert problems(text) == [
        "efmoam.yaml:5:5: ports.0.action_command: only used when action_backend is exec or an event action is exec:"
        " remove it, or set it to null",
        "efmoam.yaml:10:21: ports.2.action_command: only used when action_backend is exec or an event action is"
        " exec: remove it, or set it to null",
    ]


def test_a_broken_event_action_does_not_make_action_command_wrong_too() -> None:
    text = """\
        defaults:
          event_actions: {session_down: [exec, bogus]}
          action_command: /usr/local/bin/on-event
        """
    assert problems(text) == [
        "efmoam.yaml:2:40: defaults.event_actions.session_down.1: must be one of log, block, error-disable, down,"
        " exec, notify-peer, not the string 'bogus'"
    ]


# -- rejected values ----------------------------------------------------------------------------


def test_an_unknown_event_is_an_unknown_key_with_a_suggestion() -> None:
    text = """\
        defaults:
          event_actions:
            sesion_down: log
            session-up: log
            flap: block
        """
    assert problems(text) == [
        "efmoam.yaml:3:5: defaults.event_actions.sesion_down: unknown key; did you mean session_down?",
        "efmoam.yaml:4:5: defaults.event_actions.session-up: unknown key; did you mean session_up?",
        "efmoam.yaml:5:5: defaults.event_actions.flap: unknown key",
    ]


def test_session_up_is_a_moment() -> None:
    text = """\
        defaults:
          event_actions:
            session_up: block
        ports:
          - match: eth0
            event_actions: {session_up: [log, notify-peer]}
        """
    moment = "is a moment, not a lasting condition: its actions are log and exec"
    assert problems(text) == [
        f"efmoam.yaml:3:17: defaults.event_actions.session_up: {moment}",
        f"efmoam.yaml:6:33: ports.0.event_actions.session_up: {moment}",
    ]


def test_action_lists() -> None:
    text = """\
        defaults:
          event_actions:
            session_down: []
            loop: [log, exec, log]
            unidirectional: [Block, yes]
            wiring_conflict: {log: true}
            capabilities_conflict:
            remote_loopback: shutdown
        """
    names = "log, block, error-disable, down, exec, notify-peer"
    assert problems(text) == [
        "efmoam.yaml:3:19: defaults.event_actions.session_down: needs at least one action (log)",
        "efmoam.yaml:4:23: defaults.event_actions.loop.2: log is listed twice",
        f"efmoam.yaml:5:22: defaults.event_actions.unidirectional.0: must be one of {names},"
        " not the string 'Block' (names are lower case: block)",
        f"efmoam.yaml:5:29: defaults.event_actions.unidirectional.1: must be one of {names},"
        " not the boolean yes (YAML 1.1 reads unquoted yes/no/on/off as booleans)",
        f"efmoam.yaml:6:22: defaults.event_actions.wiring_conflict: must be an action ({names}) or a list of them,"
        " not a mapping",
        f"efmoam.yaml:7:27: defaults.event_actions.capabilities_conflict: must be one of {names}, not an empty value",
        f"efmoam.yaml:8:22: defaults.event_actions.remote_loopback: must be one of {names}, not the string 'shutdown'",
    ]


def test_out_of_range_policy_values() -> None:
    text = """\
        defaults:
          discovery_timeout: 0.5
          unidirectional_time: 0
          recovery:
            auto_after: 10
            hold_down: 86401
          dying_gasp_count: 6
        ports:
          - match: eth0
            recovery: {auto_after: 86400.5}
            dying_gasp_count: 0
        """
    assert problems(text) == [
        "efmoam.yaml:2:22: defaults.discovery_timeout: must be between 1 and 86400 seconds, not 0.5",
        "efmoam.yaml:3:24: defaults.unidirectional_time: must be between 0.1 and 3600 seconds, not 0",
        "efmoam.yaml:5:17: defaults.recovery.auto_after: must be between 30 and 86400 seconds, not 10",
        "efmoam.yaml:6:16: defaults.recovery.hold_down: must be between 0 and 86400 seconds, not 86401",
        "efmoam.yaml:7:21: defaults.dying_gasp_count: must be between 1 and 5, not 6",
        "efmoam.yaml:10:28: ports.0.recovery.auto_after: must be between 30 and 86400 seconds, not 86400.5",
        "efmoam.yaml:11:23: ports.0.dying_gasp_count: must be between 1 and 5, not 0",
    ]


def test_policy_values_of_the_wrong_type() -> None:
    text = """\
        defaults:
          discovery_timeout: soon
          recovery: {hold_down: null}
          dying_gasp_count: 1.5
          event_actions: [loop]
        """
    assert problems(text) == [
        "efmoam.yaml:2:22: defaults.discovery_timeout: must be a number of seconds, not the string 'soon'",
        "efmoam.yaml:3:25: defaults.recovery.hold_down: must be a number of seconds, not null",
        "efmoam.yaml:4:21: defaults.dying_gasp_count: must be a whole number, not the number 1.5",
        "efmoam.yaml:5:18: defaults.event_actions: must be a mapping, not a list",
    ]


# -- track ---------------------------------------------------------------------------------------


def test_a_track_entry_watches_exactly_one_thing() -> None:
    text = """\
        defaults:
          track:
            - interface: eth9
              unit: frr.service
            - interval: 5
            - {}
            - interface: eth1
              unit: a.service
              command: /bin/true
        """
    assert problems(text) == [
        "efmoam.yaml:3:7: defaults.track.0: has interface and unit: give only one of interface, unit or command",
        "efmoam.yaml:5:7: defaults.track.1: missing: needs one of interface, unit or command",
        "efmoam.yaml:6:7: defaults.track.2: missing: needs one of interface, unit or command",
        "efmoam.yaml:7:7: defaults.track.3: has interface and unit and command:"
        " give only one of interface, unit or command",
    ]


def test_track_values() -> None:
    text = """\
        defaults:
          track:
            - command: []
            - command: [/usr/local/bin/check, 3, ""]
            - command: "/usr/local/bin/check 'x"
            - command: {program: /bin/true}
            - unit: frr.service
              interval: 0.1
            - unit: frr.service
              interval: 3601
            - interface: "eth*"
            - interface: a-name-much-too-long
            - unit: ""
              name: ""
        """
    assert problems(text) == [
        "efmoam.yaml:3:16: defaults.track.0.command: must name at least the program to run, not an empty list",
        "efmoam.yaml:4:39: defaults.track.1.command.1: must be a string, not the number 3: quote it",
        "efmoam.yaml:4:42: defaults.track.1.command.2: must not be empty",
        "efmoam.yaml:5:16: defaults.track.2.command: cannot be split into words (no closing quotation)",
        "efmoam.yaml:6:16: defaults.track.3.command: must be a list of words ([/usr/bin/check, --quiet])"
        " or a string, not a mapping",
        "efmoam.yaml:8:17: defaults.track.4.interval: must be between 0.5 and 3600 seconds, not 0.1",
        "efmoam.yaml:10:17: defaults.track.5.interval: must be between 0.5 and 3600 seconds, not 3601",
        "efmoam.yaml:11:18: defaults.track.6.interface: must be one interface name, not the pattern 'eth*'",
        "efmoam.yaml:12:18: defaults.track.7.interface: interface names have at most 15 characters, not 20",
        "efmoam.yaml:13:13: defaults.track.8.unit: must not be empty",
        "efmoam.yaml:14:13: defaults.track.8.name: must not be empty",
    ]


def test_two_tracks_of_one_name_are_reported_at_the_second() -> None:
    text = """\
        defaults:
          track:
            - interface: eth9
            - unit: frr.service
              name: routing
            - interface: eth9
              interval: 1
            - unit: bird.service
              name: routing
            - command: [/bin/check]
              name: interface:eth9
        """
    assert problems(text) == [
        "efmoam.yaml:6:7: defaults.track.2: two tracked conditions are named 'interface:eth9': give one a name",
        "efmoam.yaml:8:7: defaults.track.3: two tracked conditions are named 'routing': give one a name",
        "efmoam.yaml:10:7: defaults.track.4: two tracked conditions are named 'interface:eth9': give one a name",
    ]


def test_track_must_be_a_list_of_mappings() -> None:
    text = """\
        defaults:
          track: {interface: eth9}
        ports:
          - match: eth0
            track:
              - eth9
              - interfce: eth9
          - match: eth1
            track:
        """
    assert problems(text) == [
        "efmoam.yaml:2:10: defaults.track: must be a list of tracked conditions (- interface: eth1), not a mapping",
        "efmoam.yaml:6:9: ports.0.track.0: must be a mapping, not the string 'eth9'",
        "efmoam.yaml:7:9: ports.0.track.1.interfce: unknown key; did you mean interface?",
        "efmoam.yaml:7:9: ports.0.track.1: missing: needs one of interface, unit or command",
        "efmoam.yaml:9:11: ports.1.track: must be a list of tracked conditions (- interface: eth1), not an empty value",
    ]


def test_every_event_is_a_key_of_event_actions() -> None:
    """The loader reads the events from the core's table: a new event is a new key."""
    from efmoam.config.loader import PORT, Section

    section = PORT.fields["event_actions"]
    assert isinstance(section, Section)
    assert list(section.fields) == [name.value for name in EventName]
