"""Read a YAML configuration into a `Config`, reporting every problem with its position.

The text is composed (not loaded) with PyYAML's safe loader, so every value keeps its
node and the node's position; the walk below checks the nodes against a schema and
reports each problem as ``file:line:column: path.to.key: message``.  It rejects what
PyYAML would let through silently: duplicate keys, unknown keys, YAML 1.1's retyping of
bare values (``on`` is a boolean, ``10:20:30`` and ``001122`` are numbers), and values
of the wrong type.  Ranges are checked by constructing the core's own classes, so the
loader states no default and no range that the core already owns.

Two passes: the walk turns each section (``defaults``, each port rule) into a tree of
located values, checking each value on its own; then each rule's tree is laid over the
defaults' tree key by key and built into the core's classes, which checks the values
together (sd-threshold below sf-threshold, a counter file for the file source).
"""

from __future__ import annotations

import difflib
import fnmatch
import functools
import ipaddress
import math
import os
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from typing import Any, TypeAlias

import attrs
import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from efmoam.config.model import (
    DEFAULT_MATCH,
    DEFAULT_PHYSICAL_ONLY,
    ActionBackend,
    Config,
    CounterSource,
    DaemonConfig,
    EventSink,
    EventStreamConfig,
    MetricsConfig,
    MetricsDetail,
    PortProfile,
    PortRule,
    SettingError,
    SnmpConfig,
)
from efmoam.core.linkmon.kinds import HEALTH, MONITORS, Counting, HealthFacts, MonitorFacts, WindowUnit
from efmoam.core.linkmon.settings import (
    HealthSettings,
    LinkMonitoringSettings,
    LocalSfAction,
    MonitorSettings,
    PeerActions,
    PortAction,
)
from efmoam.core.policy.settings import Action, EventActions, EventName, PolicySettings, Recovery, Track, TrackKind
from efmoam.core.settings import OamMode, PeerPolicy, PortSettings
from efmoam.linux.files import (
    CONFIG_FILE_LIMIT,
    BoundedYamlLoader,
    YamlLimitError,
    read_untrusted,
)
from pdu import OamConfig

__all__ = [
    "ConfigError",
    "Problem",
    "SCHEMA",
    "default_config_text",
    "load_config",
    "load_config_text",
    "load_default_config",
    "read_config_file",
]

_TAG = "tag:yaml.org,2002:"
STR, INT, FLOAT, BOOL, NULL = (_TAG + name for name in ("str", "int", "float", "bool", "null"))
TIMESTAMP, MAP, SEQ, MERGE = (_TAG + name for name in ("timestamp", "map", "seq", "merge"))

#: Linux interface names have at most IFNAMSIZ - 1 characters
_IFNAME_MAX = 15
#: an Organization Specific Information TLV carries at most 255 - 5 octets of value
_ORG_VALUE_MAX = 250


# -- problems -----------------------------------------------------------------------------


@attrs.frozen
class Problem:
    """One thing wrong with a configuration file, and where."""

    filename: str
    line: int  #: 1-based
    column: int  #: 1-based
    path: str  #: dotted key path (``ports.0.mode``); empty for syntax errors
    message: str

    def __str__(self) -> str:
        where = f"{self.filename}:{self.line}:{self.column}"
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"


class ConfigError(Exception):
    """A configuration that cannot be used; `problems` lists everything found, in file order."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(str(problem) for problem in self.problems))


# -- the schema ---------------------------------------------------------------------------


class _Invalid(Exception):
    """A value that does not fit.  Each problem is (node or None for the value, sub-path, message)."""

    def __init__(self, message: str = "", problems: Sequence[tuple[Node | None, str, str]] = ()) -> None:
        super().__init__(message)
        self.problems = list(problems) or [(None, "", message)]


Convert = Callable[[Node], Any]


@attrs.frozen
class Scalar:
    """A value: `convert` turns its node into the core's value; `check` raises ValueError if out of range."""

    convert: Convert
    check: Callable[[Any], object] | None = None


@attrs.frozen
class Section:
    """A mapping.  Merged key by key with the defaults, unless `build` makes it one value."""

    fields: Mapping[str, Scalar | Section | Items]
    #: null is allowed: an empty section, or None for a section with `build`
    nullable: bool = False
    #: keys that must be present (only for sections with `build`)
    required: tuple[str, ...] = ()
    #: keys of which exactly one must be present (only for sections with `build`)
    one_of: tuple[str, ...] = ()
    #: builds one value from the checked fields (raising ValueError for a problem of the
    #: whole section); the section then replaces, never merges
    build: Callable[[dict[str, Any]], Any] | None = None


@attrs.frozen
class Items:
    """A list of mappings, each built into one value by `item`; a rule's list replaces the defaults'."""

    item: Section  #: with `build`
    what: str  #: what the list holds, for "must be a list of <what>"
    #: checks the items so far (raising ValueError): a problem is the last item's
    check: Callable[[tuple[Any, ...]], object] | None = None


def _construct(node: Node) -> Any:
    try:
        return SafeConstructor().construct_object(node)
    except (ValueError, yaml.YAMLError):  # 0x_ resolves as an int that int() refuses, 2001-13-45 as a date
        kind = str(node.tag).rsplit(":", 1)[-1]
        raise _Invalid(f"YAML reads {node.value} as a {kind} but cannot make one of it: quote it") from None


def _found(node: Node) -> str:
    """How a node reads to someone who wrote it, for "must be X, not Y" messages."""
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, SequenceNode):
        return "a list"
    text = str(node.value)
    if node.tag == NULL:
        return "an empty value" if text in ("", "~") else "null"
    if node.tag == BOOL:
        return f"the boolean {text}"
    if node.tag in (INT, FLOAT):
        try:
            value = _construct(node)
        except _Invalid:
            return f"{text}, which YAML reads as a broken number"
        return f"the number {text}" if text == str(value) else f"{text}, which YAML reads as the number {value}"
    if node.tag == STR:
        return f"the string {text!r}"
    if node.tag == TIMESTAMP:
        return f"{text}, which YAML reads as a date"
    return f"a value tagged {node.tag}"


def _quote_hint(node: Node) -> str:
    if node.tag == BOOL:
        return " (YAML 1.1 reads unquoted yes/no/on/off as booleans): quote it"
    if node.tag in (INT, FLOAT, TIMESTAMP):
        return ": quote it"
    return ""


def _scalar(node: Node, tags: tuple[str, ...], what: str, hint: bool = False) -> Any:
    """The value of a scalar node with one of `tags`, or _Invalid("must be <what>, not ...")."""
    if not isinstance(node, ScalarNode) or node.tag not in tags:
        raise _Invalid(f"must be {what}, not {_found(node)}" + (_quote_hint(node) if hint else ""))
    return _construct(node)


def _number_text(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:g}"


def _range(value: float, low: float | None, high: float | None) -> None:
    low_text, high_text, text = (_number_text(number) for number in (low or 0, high or 0, value))
    if low is not None and high is not None and not low <= value <= high:
        raise _Invalid(f"must be between {low_text} and {high_text}, not {text}")
    if low is not None and value < low:
        raise _Invalid(f"must be at least {low_text}, not {text}")


def _bool(node: Node) -> bool:
    return bool(_scalar(node, (BOOL,), "true or false"))


def _integer(low: int | None = None, high: int | None = None) -> Convert:
    def convert(node: Node) -> int:
        value = int(_scalar(node, (INT,), "a whole number"))
        _range(value, low, high)
        return value

    return convert


def _number(low: float | None = None, high: float | None = None, what: str = "a number") -> Convert:
    def convert(node: Node) -> float:
        value = float(_scalar(node, (INT, FLOAT), what))
        if not math.isfinite(value):
            raise _Invalid(f"must be {what}, not {node.value}")
        _range(value, low, high)
        return value

    return convert


_SECONDS = "a number of seconds"


def _nullable(convert: Convert) -> Convert:
    def nullable(node: Node) -> Any:
        return None if isinstance(node, ScalarNode) and node.tag == NULL else convert(node)

    return nullable


def _string(node: Node) -> str:
    value = str(_scalar(node, (STR,), "a string", hint=True))
    if not value.strip():
        raise _Invalid("must not be empty")
    return value


def _command(node: Node) -> str:
    """A command line, split into words as a shell would (the exec backend runs it without a shell)."""
    value = _string(node)
    try:
        shlex.split(value)
    except ValueError as exc:
        raise _Invalid(f"cannot be split into words ({str(exc).lower()})") from None
    return value


def _choice(choices: Mapping[str, Any], names: str = "") -> Convert:
    """One of the names in `choices`; `names` lists them in messages (all of them, by default)."""
    names = names or ", ".join(choices)

    def convert(node: Node) -> Any:
        if isinstance(node, ScalarNode) and node.tag == STR and node.value in choices:
            return choices[node.value]
        hint = ""
        if node.tag == BOOL:
            hint = " (YAML 1.1 reads unquoted yes/no/on/off as booleans)"
        elif isinstance(node, ScalarNode) and str(node.value).lower() in choices:
            hint = f" (names are lower case: {str(node.value).lower()})"
        raise _Invalid(f"must be one of {names}, not {_found(node)}{hint}")

    return convert


def _enum(cls: type[Any]) -> Convert:
    return _choice({member.value: member for member in cls})


_OUI = re.compile(r"([0-9A-Fa-f]{2})([:-]?)([0-9A-Fa-f]{2})\2([0-9A-Fa-f]{2})")


def _oui(node: Node) -> int:
    if isinstance(node, ScalarNode) and node.tag in (INT, FLOAT):
        example = node.value if _OUI.fullmatch(node.value) else "00:11:22"
        raise _Invalid(f'quote the OUI: YAML reads {node.value} as the number {_construct(node)}; write "{example}"')
    value = str(_scalar(node, (STR,), 'an OUI like "00:11:22"'))
    match = _OUI.fullmatch(value)
    if match is None:
        raise _Invalid(f'must be an OUI like "00:11:22", not {_found(node)}')
    return int(match[1] + match[3] + match[4], 16)


def _vendor_info(node: Node) -> int:
    what = 'a number or a hex string like "0x00000001"'
    value = _scalar(node, (INT, STR), what)
    if isinstance(value, str):
        if not re.fullmatch(r"0[xX][0-9A-Fa-f]{1,8}", value):
            raise _Invalid(f"must be {what}, not {_found(node)}")
        value = int(value, 16)
    _range(value, 0, 0xFFFFFFFF)
    return int(value)


def _hex_bytes(node: Node) -> bytes:
    what = 'a quoted hex string like "0102ab"'
    value = str(_scalar(node, (STR,), what, hint=True))
    digits = value.strip().removeprefix("0x").removeprefix("0X").replace(":", "").replace(" ", "")
    try:
        data = bytes.fromhex(digits)
    except ValueError:
        raise _Invalid(f"must be {what}, not {_found(node)}") from None
    if len(data) > _ORG_VALUE_MAX:
        raise _Invalid(f"must be at most {_ORG_VALUE_MAX} octets, not {len(data)}")
    return data


def _pattern(node: Node) -> str:
    value = _string(node)
    if any(char.isspace() or char == "/" for char in value):
        raise _Invalid(f"interface names contain no spaces and no '/', not {value!r}")
    if not any(char in "*?[" for char in value) and len(value) > _IFNAME_MAX:
        raise _Invalid(f"interface names have at most {_IFNAME_MAX} characters, not {len(value)}")
    return value


_FUNCTIONS = {
    "unidirectional": OamConfig.UNIDIRECTIONAL,
    "remote_loopback": OamConfig.REMOTE_LOOPBACK,
    "link_events": OamConfig.LINK_EVENTS,
    "variable_retrieval": OamConfig.VARIABLE_RETRIEVAL,
}


def _each(node: SequenceNode, convert: Convert, once: bool = False) -> list[Any]:
    """The items of a list, converted (each at most `once`); every problem is reported at its item."""
    values: list[Any] = []
    problems: list[tuple[Node | None, str, str]] = []
    for index, item in enumerate(node.value):
        try:
            value = convert(item)
        except _Invalid as exc:
            problems += [(item, f".{index}", message) for _, _, message in exc.problems]
            continue
        if once and value in values:
            problems.append((item, f".{index}", f"{item.value} is listed twice"))
        values.append(value)
    if problems:
        raise _Invalid(problems=problems)
    return values


def _functions(node: Node) -> OamConfig:
    if not isinstance(node, SequenceNode):
        raise _Invalid(f"must be a list of {', '.join(_FUNCTIONS)}, not {_found(node)}")
    functions = OamConfig(0)
    for function in _each(node, _choice(_FUNCTIONS), once=True):
        functions |= function
    return functions


_ACTION = _enum(Action)


def _actions(node: Node) -> frozenset[Action]:
    """An event's actions: one action name, or a list of them."""
    if isinstance(node, ScalarNode):
        return frozenset({_ACTION(node)})
    if not isinstance(node, SequenceNode):
        names = ", ".join(action.value for action in Action)
        raise _Invalid(f"must be an action ({names}) or a list of them, not {_found(node)}")
    return frozenset(_each(node, _ACTION, once=True))


#: the policy's names for two port actions (an event's block is out-of-service, its log log-only)
_PORT_ACTION_ALIASES = {Action.LOG.value: PortAction.LOG_ONLY, Action.BLOCK.value: PortAction.OUT_OF_SERVICE}


def _port_action() -> Convert:
    names = ", ".join(
        member.value + "".join(f" (or {alias})" for alias, target in _PORT_ACTION_ALIASES.items() if target is member)
        for member in PortAction
    )
    return _choice({**{member.value: member for member in PortAction}, **_PORT_ACTION_ALIASES}, names)


def _interface(node: Node) -> str:
    value = _pattern(node)
    if any(char in "*?[" for char in value):
        raise _Invalid(f"must be one interface name, not the pattern {value!r}")
    return value


def _argv(node: Node) -> tuple[str, ...]:
    """A command as its words: a list of strings, or one string split as a shell would."""
    if isinstance(node, ScalarNode):
        return tuple(shlex.split(_command(node)))
    if not isinstance(node, SequenceNode):
        raise _Invalid(f"must be a list of words ([/usr/bin/check, --quiet]) or a string, not {_found(node)}")
    if not node.value:
        raise _Invalid("must name at least the program to run, not an empty list")
    return tuple(_each(node, _string))


def _track(values: dict[str, Any]) -> Track:
    """A tracked condition from its checked keys (exactly one kind among them)."""
    kind = next(kind for kind in TrackKind if kind.value in values)
    return Track(kind, values[kind.value], **{key: values[key] for key in ("interval", "name") if key in values})


def _core(cls: type[Any], name: str) -> Callable[[Any], object]:
    """A check that constructs `cls` with just this field, so that its validator runs."""
    return lambda value: cls(**{name: value})


def _counter_file(value: str | None) -> object:
    """The counter file's own check (an absolute path); whether it is used is checked when built."""
    return value is None or PortProfile(counter_source=CounterSource.FILE, counter_file=value)


def _port(name: str, convert: Convert) -> Scalar:
    return Scalar(convert, _core(PortSettings, name))


def _monitor(facts: MonitorFacts) -> Section:
    kind = facts.kind
    window = _integer() if facts.window_unit is WindowUnit.FRAMES else _number(what=_SECONDS)
    return Section(
        {
            "enabled": Scalar(_bool),
            "event_notification": Scalar(_bool),
            "sf_threshold": Scalar(_integer(), lambda value: MonitorSettings(sf_threshold=value).check(kind)),
            "sd_threshold": Scalar(_nullable(_integer(low=0))),  # checked against sf_threshold when built
            "window": Scalar(_nullable(window), lambda value: MonitorSettings(window=value).check(kind)),
            # checked against the thresholds when built
            "sd_clear": Scalar(_nullable(_integer())),
            "sf_clear": Scalar(_nullable(_integer())),
        }
    )


def _health(facts: HealthFacts) -> Section:
    """A NIC health monitor: thresholds are whole numbers per window, or numbers per second for a rate."""
    kind = facts.kind
    threshold = _integer() if facts.counting is Counting.COUNT else _number()
    return Section(
        {
            "enabled": Scalar(_bool),
            "window": Scalar(_nullable(_number(what=_SECONDS)), lambda value: HealthSettings(window=value).check(kind)),
            "sf_threshold": Scalar(_nullable(threshold), lambda value: HealthSettings(sf_threshold=value).check(kind)),
            "sd_threshold": Scalar(_nullable(threshold)),  # checked against sf_threshold when built
            "fatal": Scalar(_nullable(_bool), lambda value: HealthSettings(fatal=value).check(kind)),
        }
    )


_PORT_ACTION = _port_action()

LINK_MONITORING = Section(
    {
        "enabled": Scalar(_bool),
        "symbol_rate": Scalar(_nullable(_integer(low=1)), _core(LinkMonitoringSettings, "symbol_rate")),
        **{facts.key: _monitor(facts) for facts in MONITORS},
        **{facts.key: _health(facts) for facts in HEALTH},
        "local_sf_action": Section(
            {
                "port_action": Scalar(_PORT_ACTION),
                "event_burst": Scalar(_integer(), _core(LocalSfAction, "event_burst")),
                "dying_gasp": Scalar(_bool),
                "critical_event": Scalar(_bool),
            }
        ),
        "peer_actions": Section({name: Scalar(_PORT_ACTION) for name in attrs.fields_dict(PeerActions)}),
    }
)

PORT = Section(
    nullable=True,
    fields={
        "enabled": _port("enabled", _bool),
        "mode": _port("mode", _enum(OamMode)),
        "transmit_interval": _port("transmit_interval", _number(what=_SECONDS)),
        "multiplier": _port("multiplier", _integer()),
        "max_pdu_size": _port("max_pdu_size", _integer()),
        "oui": _port("oui", _oui),
        "vendor_info": _port("vendor_info", _vendor_info),
        "unidirectional": _port("unidirectional", _bool),
        "loopback": _port("loopback_process", _choice({"ignore": False, "process": True})),
        "loopback_timeout": _port("loopback_timeout", _number(0.1, 60.0, _SECONDS)),
        "variable_retrieval": _port("variable_retrieval", _bool),
        "link_events": _port("link_events", _bool),
        "org_specific_tlv": Section(
            {"oui": Scalar(_oui), "value": Scalar(_hex_bytes)},
            nullable=True,
            required=("oui", "value"),
            build=lambda values: (values["oui"], values["value"]),
        ),
        "peer_policy": Section(
            {
                "required_functions": Scalar(_functions, _core(PeerPolicy, "required_functions")),
                "required_mode": Scalar(_nullable(_enum(OamMode)), _core(PeerPolicy, "required_mode")),
            }
        ),
        "event_actions": Section({name.value: Scalar(_actions, _core(EventActions, name.value)) for name in EventName}),
        "discovery_timeout": Scalar(_nullable(_number(what=_SECONDS)), _core(PolicySettings, "discovery_timeout")),
        "unidirectional_time": Scalar(_nullable(_number(what=_SECONDS)), _core(PolicySettings, "unidirectional_time")),
        "recovery": Section(
            {
                "auto_after": Scalar(_nullable(_number(what=_SECONDS)), _core(Recovery, "auto_after")),
                "hold_down": Scalar(_number(what=_SECONDS), _core(Recovery, "hold_down")),
            }
        ),
        "track": Items(
            Section(
                {
                    TrackKind.INTERFACE.value: Scalar(_interface),
                    TrackKind.UNIT.value: Scalar(_string),
                    TrackKind.COMMAND.value: Scalar(_argv),
                    # the core checks an interval only in a whole Track: any target will do
                    "interval": Scalar(
                        _number(what=_SECONDS), lambda value: Track(TrackKind.UNIT, "-", interval=value)
                    ),
                    "name": Scalar(_string),
                },
                one_of=tuple(kind.value for kind in TrackKind),
                build=_track,
            ),
            what="tracked conditions (- interface: eth1)",
            check=lambda tracks: PolicySettings(track=tracks),
        ),
        "dying_gasp_count": _port("dying_gasp_count", _integer()),
        "counter_source": Scalar(_enum(CounterSource)),
        "counter_file": Scalar(_nullable(_string), _counter_file),
        "action_backend": Scalar(_enum(ActionBackend)),
        "action_command": Scalar(_nullable(_command)),
        "expect_peer": Scalar(_bool),
        "link_monitoring": LINK_MONITORING,
    },
)

RULE = Section({"match": Scalar(_pattern), "physical_only": Scalar(_bool), **PORT.fields})

DAEMON = Section(
    nullable=True,
    fields={
        "control_socket": Scalar(_string, _core(DaemonConfig, "control_socket")),
        "control_socket_group": Scalar(_nullable(_string), _core(DaemonConfig, "control_socket_group")),
        "state_dir": Scalar(_string, _core(DaemonConfig, "state_dir")),
        "counter_interval": Scalar(_number(what=_SECONDS), _core(DaemonConfig, "counter_interval")),
        "dying_gasp_on_shutdown": Scalar(_bool),
        "rx_rate_limit": Scalar(_integer(), _core(DaemonConfig, "rx_rate_limit")),
        "rx_others_rate_limit": Scalar(_integer(), _core(DaemonConfig, "rx_others_rate_limit")),
        "action_verify_interval": Scalar(_number(what=_SECONDS), _core(DaemonConfig, "action_verify_interval")),
        # -- fleet visibility: daemon.metrics and daemon.event_stream --
        "metrics": Section(
            nullable=True,
            fields={
                "enabled": Scalar(_bool),
                "address": Scalar(_string, ipaddress.ip_address),
                "port": Scalar(_integer(), _core(MetricsConfig, "port")),
                "detail": Scalar(_enum(MetricsDetail)),
            },
        ),
        "event_stream": Section(
            nullable=True,
            fields={
                "sink": Scalar(_enum(EventSink)),
                "path": Scalar(
                    _nullable(_string), lambda value: value is None or EventStreamConfig(EventSink.FILE, value)
                ),
            },
        ),
        "snmp": Section(
            nullable=True,
            fields={
                "enabled": Scalar(_bool),
                "agentx_socket": Scalar(_string, _core(SnmpConfig, "agentx_socket")),
                "writes": Scalar(_bool),
            },
        ),
    },
)

#: the whole file; ``ports`` is a list of `RULE` mappings (a placeholder here, walked apart)
SCHEMA = Section({"daemon": DAEMON, "defaults": PORT, "ports": RULE})

#: port keys that belong to the profile rather than to the core's PortSettings
_PROFILE_GROUPS = (("counter_source", "counter_file"), ("action_backend", "action_command"), ("expect_peer",))
_PROFILE_KEYS = tuple(key for group in _PROFILE_GROUPS for key in group)
#: port keys that are values of the core's PolicySettings (its sections are built apart)
_POLICY_KEYS = ("discovery_timeout", "unidirectional_time", "track")
_BUILT_APART = (*_PROFILE_KEYS, *_POLICY_KEYS)
#: a monitor's checks in turn, each with the clear thresholds it leaves out and the values
#: it blames (the most specific first): the thresholds, then sd_clear, then sf_clear
_MONITOR_CHECKS = (
    (("sd_clear", "sf_clear"), ("sd_threshold", "sf_threshold", "window")),
    (("sf_clear",), ("sd_clear", "sd_threshold")),
    ((), ("sf_clear", "sf_threshold")),
)
_RENAME = {"loopback": "loopback_process"}
_HINTS = {
    "match": "match and physical_only belong in a rule under ports",
    "physical_only": "match and physical_only belong in a rule under ports",
}


# -- the walk -----------------------------------------------------------------------------


#: the value of a leaf whose problem is reported already: it is left out of what is built,
#: and no check that needs it runs (no "missing" for a value that was given but wrong)
BROKEN: Any = object()


@attrs.frozen
class _Leaf:
    value: Any
    node: Node
    path: str
    origin: int  #: 0 from defaults, 1 from a port rule: a port rule is the more specific

    @property
    def broken(self) -> bool:
        return self.value is BROKEN


_Tree: TypeAlias = "dict[str, _Leaf | _Tree]"


@attrs.frozen
class _Rule:
    match: str | None  #: None after a problem
    physical_only: bool | None  #: None: not set
    tree: _Tree
    node: Node  #: where problems of the whole rule are reported
    path: str
    tree_match: Node | None = None  #: the node of the match value
    origin: int = 1  #: the origin of the rule's own values (0: the implicit rule, whose values are the defaults)

    def covers(self, later: _Rule) -> bool:
        """Whether this rule fits every interface that `later` fits, so that `later` can never win."""
        if self.match is None or later.match is None or (self.physical_only and not later.physical_only):
            return False
        literal = not any(char in later.match for char in "*?[")
        return self.match in ("*", later.match) or (literal and fnmatch.fnmatchcase(later.match, self.match))


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _strip_name(message: str, key: str) -> str:
    """`must be ...` rather than `transmit_interval must be ...`: the path names the key already."""
    for name in (key, _RENAME.get(key, key)):
        for prefix in (f"{name} ", f"'{name}' "):
            if message.startswith(prefix):
                return message[len(prefix) :]
    return message


class _Loader:
    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.problems: list[Problem] = []

    def report(self, node: Node, path: str, message: str) -> None:
        mark = node.start_mark
        self.problems.append(Problem(self.filename, mark.line + 1, mark.column + 1, path, message))

    def pairs(
        self, node: MappingNode, path: str, known: Mapping[str, object], hints: Mapping[str, str] | None = None
    ) -> list[tuple[str, Node, Node]]:
        """The (key, key node, value node) of a mapping, reporting duplicate and unknown keys."""
        seen: dict[str, Node] = {}
        out: list[tuple[str, Node, Node]] = []
        for key_node, value_node in node.value:
            if key_node.tag == MERGE:
                self.report(key_node, path, "merge keys (<<) are not supported: use the defaults section")
                continue
            if not isinstance(key_node, ScalarNode):
                self.report(key_node, path, f"keys must be names, not {_found(key_node)}")
                continue
            key = str(key_node.value)
            key_path = _join(path, key)
            if key in seen:
                self.report(key_node, key_path, f"duplicate key (first at line {seen[key].start_mark.line + 1})")
                continue
            seen[key] = key_node
            if key not in known:
                self.report(key_node, key_path, "unknown key" + self._suggest(key, known, hints))
                continue
            out.append((key, key_node, value_node))
        return out

    @staticmethod
    def _suggest(key: str, known: Mapping[str, object], hints: Mapping[str, str] | None) -> str:
        if hints and key in hints:
            return f": {hints[key]}"
        close = difflib.get_close_matches(key.replace("-", "_").lower(), list(known), n=1, cutoff=0.6)
        return f"; did you mean {close[0]}?" if close else ""

    def mapping(self, node: Node, path: str) -> MappingNode | None:
        if isinstance(node, MappingNode) and node.tag == MAP:
            return node
        self.report(node, path, f"must be a mapping, not {_found(node)}")
        return None

    def section(
        self, node: Node, path: str, spec: Section, origin: int, hints: Mapping[str, str] | None = None
    ) -> _Tree:
        """Walk a mapping against `spec`: a tree of the values that passed their own checks."""
        if spec.nullable and isinstance(node, ScalarNode) and node.tag == NULL:
            return {}
        mapping = self.mapping(node, path)
        if mapping is None:
            return {}
        tree: _Tree = {}
        for key, _key_node, value_node in self.pairs(mapping, path, spec.fields, hints):
            field = spec.fields[key]
            key_path = _join(path, key)
            if isinstance(field, Section) and field.build is None:
                tree[key] = self.section(value_node, key_path, field, origin)
            elif isinstance(field, Section):
                tree[key] = self.built(value_node, key_path, field, origin)
            elif isinstance(field, Items):
                tree[key] = self.items(value_node, key_path, field, origin)
            else:
                tree[key] = self.scalar(value_node, key_path, key, field, origin)
        return tree

    def scalar(self, node: Node, path: str, key: str, spec: Scalar, origin: int) -> _Leaf:
        try:
            value = spec.convert(node)
        except _Invalid as exc:
            for where, sub_path, message in exc.problems:
                self.report(where or node, path + sub_path, message)
            return _Leaf(BROKEN, node, path, origin)
        except OverflowError:  # float() of a whole number of hundreds of digits
            self.report(node, path, "is far too large a number")
            return _Leaf(BROKEN, node, path, origin)
        if spec.check is not None:
            try:
                spec.check(value)
            except (ValueError, TypeError) as exc:
                self.report(node, path, _strip_name(str(exc), key))
                return _Leaf(BROKEN, node, path, origin)
            except OverflowError:  # a range check that formats the value with {:g}
                self.report(node, path, "is far too large a number")
                return _Leaf(BROKEN, node, path, origin)
        return _Leaf(value, node, path, origin)

    def built(self, node: Node, path: str, spec: Section, origin: int) -> _Leaf:
        """A section that is one value (org_specific_tlv, a track entry): null if allowed, or its fields."""
        assert spec.build is not None
        if spec.nullable and isinstance(node, ScalarNode) and node.tag == NULL:
            return _Leaf(None, node, path, origin)
        before = len(self.problems)
        tree = self.section(node, path, attrs.evolve(spec, nullable=False), origin)
        if isinstance(node, MappingNode):
            self.present(node, path, spec)
        if len(self.problems) > before:
            return _Leaf(BROKEN, node, path, origin)
        try:
            return _Leaf(spec.build(_values(tree)), node, path, origin)
        except ValueError as exc:
            self.report(node, path, str(exc))
            return _Leaf(BROKEN, node, path, origin)

    def present(self, node: MappingNode, path: str, spec: Section) -> None:
        """Report the keys a built section lacks (`required`, `one_of`) or has too many of."""
        keys = _keys(node)
        for key in spec.required:
            if key not in keys:
                needs = " and ".join(spec.required)
                self.report(node, _join(path, key), f"missing: {path.rsplit('.', 1)[-1]} needs {needs}")
        if spec.one_of:
            given = [key for key in spec.one_of if key in keys]
            choices = ", ".join(spec.one_of[:-1]) + f" or {spec.one_of[-1]}"
            if not given:
                self.report(node, path, f"missing: needs one of {choices}")
            elif len(given) > 1:
                self.report(node, path, f"has {' and '.join(given)}: give only one of {choices}")

    def items(self, node: Node, path: str, spec: Items, origin: int) -> _Leaf:
        """A list of built sections (track), each checked with the ones before it."""
        if not isinstance(node, SequenceNode) or node.tag != SEQ:
            self.report(node, path, f"must be a list of {spec.what}, not {_found(node)}")
            return _Leaf(BROKEN, node, path, origin)
        before = len(self.problems)
        values: list[Any] = []
        for index, item in enumerate(node.value):
            leaf = self.built(item, f"{path}.{index}", spec.item, origin)
            if leaf.broken:
                continue
            if spec.check is not None:
                try:
                    spec.check((*values, leaf.value))
                except ValueError as exc:
                    self.report(item, leaf.path, str(exc))
                    continue
            values.append(leaf.value)
        if len(self.problems) > before:
            return _Leaf(BROKEN, node, path, origin)
        return _Leaf(tuple(values), node, path, origin)

    # -- building ---------------------------------------------------------------------

    def profile(self, tree: _Tree, where: Node, path: str, origin: int) -> PortProfile | None:
        """Build one port's profile from its merged tree; None after reporting a problem.

        A part that fails is replaced by its default so that the other parts are still
        checked: every problem is reported, not just the first.  `origin` is that of the
        rule's own values: a problem of one of them is reported at it.
        """
        before = len(self.problems)
        link_monitoring = _sub(tree, "link_monitoring")
        monitors: dict[str, Any] = {
            facts.key: self.monitor(facts, _sub(link_monitoring, facts.key), where, path) for facts in MONITORS
        }
        for health in HEALTH:
            monitors[health.key] = self.health(health, _sub(link_monitoring, health.key), where, path)
        settings = PortSettings()
        built = False
        try:
            settings = PortSettings(
                **{_RENAME.get(key, key): value for key, value in _values(tree).items() if key not in _BUILT_APART},
                link_monitoring=LinkMonitoringSettings(
                    **_values(link_monitoring),
                    **monitors,
                    local_sf_action=LocalSfAction(**_values(_sub(link_monitoring, "local_sf_action"))),
                    peer_actions=PeerActions(**_values(_sub(link_monitoring, "peer_actions"))),
                ),
                peer_policy=PeerPolicy(**_values(_sub(tree, "peer_policy"))),
                policy=_policy(tree),
            )
            built = True
        except (ValueError, TypeError) as exc:  # a rule the core checks across fields
            self.report(where, path, str(exc))
        event_actions = _sub(tree, "event_actions")
        # action_command's condition reads the event actions: unknown while one of them is broken
        exec_known = built and not any(_broken(event_actions, name) for name in event_actions)
        values = {key: value for key, value in _values(tree).items() if key in _PROFILE_KEYS}
        conflict = not exec_known  # and then no profile is built, which could only report it wrongly
        for group in _PROFILE_GROUPS:  # each group alone first, so that each problem is reported
            reads_settings = "action_command" in group
            if reads_settings and not exec_known:
                continue
            try:
                group_values = {key: value for key, value in values.items() if key in group}
                PortProfile(settings if reads_settings else PortSettings(), **group_values)
            except SettingError as exc:
                conflict = True
                leaf = tree.get(exc.name)
                if _broken(tree, exc.name):
                    continue  # reported already
                if isinstance(leaf, _Leaf) and leaf.origin >= origin:  # the rule's own value
                    self.report(leaf.node, leaf.path, exc.reason)
                else:  # missing, or inherited from the defaults
                    self.report(where, _join(path, exc.name), exc.reason)
        if conflict or len(self.problems) > before:
            return None
        try:
            return PortProfile(settings, **values)
        except (ValueError, TypeError) as exc:
            self.report(where, path, str(exc))
            return None

    def monitor(self, facts: MonitorFacts, tree: _Tree, where: Node, path: str) -> MonitorSettings:
        """One monitor's settings, its values checked together (the default after a problem)."""
        if any(_broken(tree, name) for name in tree):
            return MonitorSettings()  # reported already
        monitor = MonitorSettings(**_values(tree))
        for left_out, blamed in _MONITOR_CHECKS:
            without: dict[str, Any] = dict.fromkeys(left_out)
            try:
                attrs.evolve(monitor, **without).check(facts.kind)
            except ValueError as exc:
                self.blame(exc, where, path, tree, *blamed)
                return MonitorSettings()
        return monitor

    def health(self, facts: HealthFacts, tree: _Tree, where: Node, path: str) -> HealthSettings:
        """One NIC health monitor's settings, its values checked together (the default after a problem)."""
        if any(_broken(tree, name) for name in tree):
            return HealthSettings()  # reported already
        settings = HealthSettings(**_values(tree))
        try:
            settings.check(facts.kind)
        except ValueError as exc:
            self.blame(exc, where, path, tree, "sd_threshold", "sf_threshold", "fatal", "window")
            return HealthSettings()
        return settings

    def blame(self, exc: Exception, where: Node, path: str, tree: _Tree, *keys: str) -> None:
        """Report a problem of several values at the most specific one (a port rule's before the defaults')."""
        leaves = [leaf for key in keys if isinstance(leaf := tree.get(key), _Leaf)]
        if not leaves:
            self.report(where, path, str(exc))
            return
        leaf = max(leaves, key=lambda leaf: leaf.origin)  # the first of the most specific
        self.report(leaf.node, leaf.path, str(exc))

    def load(self, text: str) -> Config:
        root = self.compose(text)
        top = None if root is None else self.mapping(root, "")
        if root is None or top is None:
            raise ConfigError(self.problems)
        daemon: _Tree = {}
        defaults: _Tree = {}
        defaults_node: Node = root
        rules: list[_Rule] | None = None
        for key, _key_node, value in self.pairs(top, "", SCHEMA.fields):
            if key == "daemon":
                daemon = self.section(value, key, DAEMON, origin=0)
            elif key == "defaults":
                defaults_node = value
                defaults = self.section(value, key, PORT, origin=0, hints=_HINTS)
            else:
                rules = self.rules(value)
        if rules is None:  # no ports section: every physical port, with the defaults
            rules = [_Rule(DEFAULT_MATCH, DEFAULT_PHYSICAL_ONLY, {}, defaults_node, "defaults", origin=0)]
        self.shadowed(rules)
        built = []
        for rule in rules:
            profile = self.profile(_merge(defaults, rule.tree), rule.node, rule.path, rule.origin)
            if profile is not None and rule.match is not None:
                extra = {} if rule.physical_only is None else {"physical_only": rule.physical_only}
                built.append(PortRule(rule.match, profile=profile, **extra))
        if self.problems:
            raise ConfigError(sorted(dict.fromkeys(self.problems), key=lambda p: (p.line, p.column)))
        daemon_config = self.daemon_config(daemon, root)
        if self.problems or daemon_config is None:
            raise ConfigError(sorted(dict.fromkeys(self.problems), key=lambda p: (p.line, p.column)))
        return Config(daemon_config, built)

    def daemon_config(self, tree: _Tree, where: Node) -> DaemonConfig | None:
        """The daemon's settings, with its nested sections (metrics, event_stream, snmp) built."""
        nested: dict[str, Any] = {}
        for key, cls in (("metrics", MetricsConfig), ("event_stream", EventStreamConfig), ("snmp", SnmpConfig)):
            sub = _sub(tree, key)
            if any(_broken(sub, name) for name in sub):
                return None
            try:
                nested[key] = cls(**_values(sub))
            except (ValueError, TypeError) as exc:
                self.blame(exc, where, _join("daemon", key), sub, *sub)
                return None
        return DaemonConfig(**_values(tree), **nested)

    def shadowed(self, rules: Sequence[_Rule]) -> None:
        """Report the rules that an earlier rule hides: the first rule that fits wins.

        `_Rule.covers` decides; only the earlier rules that can cover are asked (linear
        in the rules, not quadratic, for thousands of literal names): the first rule of
        each match text (a ``*`` rule among them) per physical_only, and the glob
        patterns, which only a literal name can fall under.
        """
        first: dict[tuple[str, bool], tuple[int, _Rule]] = {}
        patterns: list[tuple[int, _Rule]] = []
        for index, rule in enumerate(rules):
            match = rule.match
            candidates = (
                [] if match is None else [first.get((text, only)) for text in ("*", match) for only in (False, True)]
            )
            if match is not None and not any(char in match for char in "*?["):
                candidates.extend(patterns)
            covering = [found for found in candidates if found is not None and found[1].covers(rule)]
            earlier = min(covering, key=lambda found: found[0])[1] if covering else None
            if match is not None:
                first.setdefault((match, bool(rule.physical_only)), (index, rule))
                if match != "*" and any(char in match for char in "*?["):
                    patterns.append((index, rule))
            if earlier is not None:
                where = rule.tree_match or rule.node
                message = (
                    f"never used: {earlier.path} (match {earlier.match!r}) comes first and fits every port it fits"
                )
                self.report(where, _join(rule.path, "match"), message)

    def rules(self, node: Node) -> list[_Rule]:
        if isinstance(node, ScalarNode) and node.tag == NULL:
            message = "is empty: write ports: [] to manage no port, or remove it to manage every physical port"
            self.report(node, "ports", message)
            return []
        if not isinstance(node, SequenceNode) or node.tag != SEQ:
            self.report(node, "ports", f"must be a list of port rules (- match: ...), not {_found(node)}")
            return []
        rules = []
        for index, item in enumerate(node.value):
            path = f"ports.{index}"
            tree = self.section(item, path, RULE, origin=1)
            if isinstance(item, MappingNode) and "match" not in _keys(item):
                self.report(
                    item, _join(path, "match"), "missing: a port rule needs match (an interface name or pattern)"
                )
            values = _values(tree)
            match_leaf = tree.pop("match", None)
            tree.pop("physical_only", None)
            match_node = match_leaf.node if isinstance(match_leaf, _Leaf) else None
            rules.append(_Rule(values.get("match"), values.get("physical_only"), tree, item, path, match_node))
        return rules

    def compose(self, text: str) -> Node | None:
        """The document's root node, or None after reporting why there is none."""
        try:
            root = yaml.compose(text, Loader=BoundedYamlLoader)
        except YamlLimitError as exc:  # nested too deeply, or aliases that stand for too much
            mark = exc.problem_mark
            line, column = (mark.line, mark.column) if mark is not None else (0, 0)
            self.problems.append(Problem(self.filename, line + 1, column + 1, "", str(exc.problem)))
            return None
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            message = f"YAML syntax error: {exc.problem}"
            if exc.context and exc.context_mark is not None:
                message += f" ({exc.context} at line {exc.context_mark.line + 1})"
            if "alias" in f"{exc.context} {exc.problem}":
                message += "; a value that starts with '*' is an alias: quote it (match: \"*\")"
            line, column = (mark.line, mark.column) if mark is not None else (0, 0)
            self.problems.append(Problem(self.filename, line + 1, column + 1, "", message))
            return None
        except yaml.reader.ReaderError as exc:
            line, column = _position(text, exc.position)
            message = f"character #x{exc.character:04x} is not allowed in YAML ({exc.reason})"
            self.problems.append(Problem(self.filename, line, column, "", message))
            return None
        if root is None or (isinstance(root, ScalarNode) and root.tag == NULL):  # nothing, or only "---"
            self.problems.append(Problem(self.filename, 1, 1, "", "empty configuration"))
            return None
        return root


def _values(tree: _Tree) -> dict[str, Any]:
    """The values of a tree's own keys (not of its sections), leaving out broken ones."""
    return {key: leaf.value for key, leaf in tree.items() if isinstance(leaf, _Leaf) and not leaf.broken}


def _policy(tree: _Tree) -> PolicySettings:
    """A port's action policy: its sections, and its values among the port's keys."""
    values = _values(tree)
    return PolicySettings(
        event_actions=EventActions(**_values(_sub(tree, "event_actions"))),
        recovery=Recovery(**_values(_sub(tree, "recovery"))),
        **{key: values[key] for key in _POLICY_KEYS if key in values},
    )


def _broken(tree: _Tree, key: str) -> bool:
    leaf = tree.get(key)
    return isinstance(leaf, _Leaf) and leaf.broken


def _sub(tree: _Tree, key: str) -> _Tree:
    sub = tree.get(key, {})
    return sub if isinstance(sub, dict) else {}


def _merge(base: _Tree, over: _Tree) -> _Tree:
    """`over` laid over `base`, key by key into nested sections."""
    merged = dict(base)
    for key, value in over.items():
        below = merged.get(key)
        merged[key] = _merge(below, value) if isinstance(below, dict) and isinstance(value, dict) else value
    return merged


def _keys(node: MappingNode) -> set[str]:
    return {str(key.value) for key, _ in node.value if isinstance(key, ScalarNode)}


def _position(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of `offset` in `text`."""
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1


# -- entry points -------------------------------------------------------------------------


def load_config_text(text: str, filename: str = "<string>") -> Config:
    """The configuration in `text`; raises `ConfigError` listing every problem.

    Whatever `text` holds, nothing else is raised: YAML nested too deeply
    (`efmoam.linux.files.YAML_DEPTH_LIMIT`), or whose aliases stand for too much, is one problem.
    """
    try:
        return _Loader(filename).load(text)
    except RecursionError:  # the composer stops far earlier; this is the last resort
        raise ConfigError([Problem(filename, 1, 1, "", "nested too deeply to be read")]) from None
    except MemoryError:
        raise ConfigError([Problem(filename, 1, 1, "", "too large to be read (out of memory)")]) from None


def decode_config(data: bytes, filename: str) -> str:
    """The text of a configuration file; raises `ConfigError` if it is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigError([Problem(filename, line, column, "", f"not UTF-8 text ({exc.reason})")]) from None


def read_config_file(path: str | os.PathLike[str]) -> bytes:
    """The bytes of configuration file `path`: a regular file of at most `CONFIG_FILE_LIMIT`
    bytes.  Raises OSError (`FileRefusedError` for a FIFO, a device, a directory or a file
    too large); never blocks."""
    return read_untrusted(path, CONFIG_FILE_LIMIT, "a configuration file")


def load_config(path: str | os.PathLike[str]) -> Config:
    """The configuration in file `path`.  Raises OSError if it cannot be read (see
    `read_config_file`), `ConfigError` if invalid; nothing else, whatever the file holds."""
    data = read_config_file(path)
    return load_config_text(decode_config(data, os.fspath(path)), os.fspath(path))


def default_config_text() -> str:
    """The embedded default configuration (``efmoam/config/default.yaml``)."""
    return resources.files("efmoam.config").joinpath("default.yaml").read_text(encoding="utf-8")


@functools.cache
def load_default_config() -> Config:
    """The configuration used without a configuration file: OAM on every physical port."""
    return load_config_text(default_config_text(), "<default configuration>")
