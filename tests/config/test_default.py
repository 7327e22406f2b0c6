"""The embedded default configuration, its copy in config/, and the shipped examples."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import attrs
import pytest
import yaml

from efmoam.config import (
    ActionBackend,
    Config,
    CounterSource,
    default_config_text,
    load_config,
    load_default_config,
)
from efmoam.config.loader import SCHEMA, Section
from efmoam.config.model import DEFAULT_MATCH, DEFAULT_PHYSICAL_ONLY, DaemonConfig, PortProfile
from efmoam.core.linkmon.kinds import FACTS, MonitorKind
from efmoam.core.linkmon.settings import LinkMonitoringSettings, PortAction
from efmoam.core.policy.settings import HOLDING, Action, EventActions, EventName, PolicySettings
from efmoam.core.settings import PortSettings

REPO = Path(__file__).resolve().parents[2]
PACKAGED = REPO / "efmoam" / "config" / "default.yaml"
TOP_LEVEL = REPO / "config" / "default.yaml"
EXAMPLES = sorted((REPO / "config" / "examples").glob("*.yaml"))


def test_the_top_level_copy_is_byte_identical() -> None:
    assert TOP_LEVEL.read_bytes() == PACKAGED.read_bytes()
    assert default_config_text().encode() == PACKAGED.read_bytes()


def test_the_top_level_copy_loads_to_the_embedded_default() -> None:
    assert load_config(TOP_LEVEL) == load_default_config()


def test_the_default_manages_every_physical_port() -> None:
    config = load_default_config()
    (rule,) = config.rules
    assert (rule.match, rule.physical_only) == ("*", True) == (DEFAULT_MATCH, DEFAULT_PHYSICAL_ONLY)
    assert config.profile_for("enp3s0", physical=True) is rule.profile
    assert config.profile_for("veth0", physical=False) is None
    assert config.daemon == DaemonConfig()


def test_the_default_monitors_everything_and_takes_nothing_out_of_service() -> None:
    profile = load_default_config().rules[0].profile
    link_monitoring = profile.settings.link_monitoring
    assert profile.settings.enabled
    assert link_monitoring.enabled
    for kind in MonitorKind:
        monitor = link_monitoring.monitor(kind)
        assert monitor.enabled, kind
        assert (monitor.window or FACTS[kind].default_window) == FACTS[kind].default_window, kind  # the standard window
    assert link_monitoring.local_sf_action.port_action is PortAction.LOG_ONLY
    assert all(action is PortAction.LOG_ONLY for action in attrs.astuple(link_monitoring.peer_actions))
    event_actions = profile.settings.policy.event_actions
    assert all(not event_actions.of(name) & HOLDING for name in EventName)
    assert profile.settings.policy.track == ()


def test_the_default_differs_from_the_code_defaults_only_where_it_says() -> None:
    """Defaults live in code: default.yaml repeats them, except for these deliberate choices."""
    code = LinkMonitoringSettings()
    monitors = {
        attribute.name: attrs.evolve(getattr(code, attribute.name), enabled=True, window=FACTS[kind].default_window)
        for attribute, kind in zip(attrs.fields(LinkMonitoringSettings)[1:5], MonitorKind, strict=True)
    }
    expected = PortProfile(
        PortSettings(
            link_monitoring=attrs.evolve(
                code,
                enabled=True,
                **monitors,
                local_sf_action=attrs.evolve(code.local_sf_action, port_action=PortAction.LOG_ONLY),
                peer_actions=attrs.evolve(
                    code.peer_actions,
                    link_fault=PortAction.LOG_ONLY,
                    dying_gasp=PortAction.LOG_ONLY,
                    critical_event=PortAction.LOG_ONLY,
                ),
            ),
            policy=PolicySettings(event_actions=EventActions(loop=frozenset({Action.LOG}))),
        )
    )
    assert load_default_config().rules[0].profile == expected
    assert expected.counter_source is CounterSource.AUTO


def _keys(section: Section, prefix: str = "") -> set[str]:
    keys = set()
    for key, field in section.fields.items():
        keys.add(prefix + key)
        if isinstance(field, Section) and field.build is None:
            keys |= _keys(field, f"{prefix}{key}.")
    return keys


def _yaml_keys(tree: object, prefix: str = "") -> set[str]:
    keys = set()
    if isinstance(tree, dict):
        for key, value in tree.items():
            keys.add(prefix + key)
            if key != "org_specific_tlv":
                keys |= _yaml_keys(value, f"{prefix}{key}.")
    return keys


def test_the_default_file_shows_every_key() -> None:
    document = yaml.safe_load(PACKAGED.read_text())
    assert _yaml_keys(document["daemon"]) == _keys(SCHEMA.fields["daemon"])  # type: ignore[arg-type]
    assert _yaml_keys(document["defaults"]) == _keys(SCHEMA.fields["defaults"])  # type: ignore[arg-type]
    assert _yaml_keys(document["ports"][0]) == {"match", "physical_only"}


def test_every_key_of_the_default_file_has_a_comment_nearby() -> None:
    """Fully commented: each key line follows a comment line, or starts a section of keys explained above it."""
    lines = PACKAGED.read_text().splitlines()
    undocumented = []
    for number, line in enumerate(lines):
        if not re.match(r"\s*[a-z_]+:", line):
            continue
        above = lines[number - 1].strip()
        explained_in_block = any(
            re.match(rf"\s*#\s+{re.escape(line.split(':')[0].strip())}\b", earlier) for earlier in lines[:number]
        )
        if not above.startswith("#") and not explained_in_block:
            undocumented.append(f"{number + 1}: {line}")
    assert undocumented == []


def test_the_package_data_ships_the_default() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "config/*.yaml" in pyproject["tool"]["setuptools"]["package-data"]["efmoam"]


def test_the_names_match_the_linux_layer() -> None:
    from efmoam.linux.actions import BACKEND_KINDS
    from efmoam.linux.counters import KINDS

    assert sorted(source.value for source in CounterSource) == sorted(KINDS)
    assert sorted(backend.value for backend in ActionBackend) == sorted(BACKEND_KINDS)


def test_the_default_is_loaded_once() -> None:
    assert load_default_config() is load_default_config()


# -- examples ----------------------------------------------------------------------------------------


def test_there_are_examples() -> None:
    assert {path.name for path in EXAMPLES} >= {"router-uplinks.yaml", "rdma-hosts.yaml", "lab.yaml"}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda path: path.name)
def test_every_example_loads(path: Path) -> None:
    config = load_config(path)
    assert isinstance(config, Config)
    assert config.rules


@pytest.mark.parametrize("path", [*EXAMPLES, PACKAGED], ids=lambda path: path.name)
def test_every_oui_in_the_shipped_files_is_quoted(path: Path) -> None:
    for line in path.read_text().splitlines():
        code = line.split("#")[0]
        for value in re.findall(r"\boui:\s*([^,}\s]+)", code):
            assert value.startswith('"'), line


def test_the_router_example() -> None:
    config = load_config(REPO / "config" / "examples" / "router-uplinks.yaml")
    management = config.profile_for("eth0", physical=True)
    uplink = config.profile_for("eth1", physical=True)
    assert management is not None and not management.settings.enabled
    assert uplink is not None and uplink.settings.enabled
    assert config.profile_for("eth1.100", physical=False) is None
    link_monitoring = uplink.settings.link_monitoring
    assert link_monitoring.local_sf_action.port_action is PortAction.OUT_OF_SERVICE
    assert link_monitoring.local_sf_action.critical_event
    assert all(action is PortAction.OUT_OF_SERVICE for action in attrs.astuple(link_monitoring.peer_actions))
    assert all(link_monitoring.monitor(kind).sd is not None for kind in MonitorKind)


def test_the_rdma_example() -> None:
    config = load_config(REPO / "config" / "examples" / "rdma-hosts.yaml")
    profile = config.profile_for("enp65s0f0np0", physical=True)
    assert profile is not None
    assert profile.counter_source is CounterSource.INFINIBAND
    link_monitoring = profile.settings.link_monitoring
    assert link_monitoring.errored_frame.enabled and link_monitoring.errored_symbol_period.enabled
    assert link_monitoring.local_sf_action.port_action is PortAction.LOG_ONLY


def test_the_lab_example() -> None:
    config = load_config(REPO / "config" / "examples" / "lab.yaml")
    profiles = [config.profile_for(f"veth{index}", physical=False) for index in range(4)]
    assert all(profile is not None and profile.counter_source is CounterSource.FILE for profile in profiles)
    assert {profile.counter_file for profile in profiles if profile is not None} == {"/run/efmoam-lab/counters.json"}
    assert [profile.action_backend for profile in profiles if profile is not None] == [
        ActionBackend.BLOCK,
        ActionBackend.BLOCK,
        ActionBackend.EXEC,
        ActionBackend.BLOCK,
    ]
    assert all(
        profile is not None
        and profile.settings.link_monitoring.local_sf_action.port_action is PortAction.OUT_OF_SERVICE
        for profile in profiles
    )
