"""Fuzz the three parsers of daemon input files: random bytes, YAML-ish text, random
nested JSON/YAML documents (with anchors and aliases), configuration-shaped documents.
Nothing but the documented error escapes: `ConfigError` from the configuration loader,
`CounterError` from the counter file source, nothing at all from `StateStore.load`."""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from efmoam.config.loader import RULE, SCHEMA, ConfigError, Section, decode_config, load_config_text
from efmoam.daemon.state import StateStore
from efmoam.linux.counters import CounterError, FileSource

FUZZ = settings(max_examples=250, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(10**400), max_value=10**400)
    | st.floats()
    | st.text(max_size=20)
)
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner, max_size=5)
)


def _schema_keys(section: Section) -> Iterator[str]:
    for key, field in section.fields.items():
        yield key
        if isinstance(field, Section):
            yield from _schema_keys(field)


KEYS = sorted({*_schema_keys(SCHEMA), "ports", "match", "unknown_key"})
#: values at the edges: numbers no float holds, no C integer holds, not numbers at all
edges = st.sampled_from([10**400, -(10**400), 2**64, 2**63, -1, 0, 1e308, 1e-320, float("inf"), float("nan")])
config_values = st.recursive(
    scalars
    | edges
    | st.sampled_from(["active", "passive", "file", "exec", "eth0", "*", "00:11:22", "0x1", "1e400", "/x", "a b"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=6),
    max_leaves=40,
)


def _deferred(section: Section) -> st.SearchStrategy[Any]:
    return st.deferred(lambda: shaped(section))


def shaped(section: Section) -> st.SearchStrategy[Any]:
    """Documents that follow the schema (known keys at their places, ``ports`` a list of
    rules) with random values: they reach the checks of every value."""
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for key, field in section.fields.items():
        if key == "ports" and section is SCHEMA:
            fields[key] = st.lists(shaped(RULE), max_size=3) | config_values
        elif isinstance(field, Section):
            fields[key] = _deferred(field) | config_values
        else:
            fields[key] = config_values
    return st.fixed_dictionaries({}, optional=fields)


yaml_ish = st.text(alphabet="[]{}:,-&*!|>'\"#%@`?\n \tab01.eE+~<=\\", max_size=300)


def as_yaml(value: Any, flow: bool | None) -> str:
    return yaml.safe_dump(value, default_flow_style=flow, allow_unicode=True)


def with_aliases(value: Any, uses: int) -> str:
    """`value` anchored once and used `uses` times through aliases."""
    return f"x: &x {json.dumps(value)}\nports: [" + ", ".join(["*x"] * uses) + "]\n"


documents = st.one_of(
    st.binary(max_size=2000).map(lambda data: data.decode("utf-8", "replace")),
    yaml_ish,
    st.builds(json.dumps, values),
    st.builds(as_yaml, values, st.sampled_from([None, True, False])),
    st.builds(as_yaml, config_values, st.sampled_from([None, True, False])),
    st.builds(as_yaml, shaped(SCHEMA), st.sampled_from([None, True, False])),
    st.builds(with_aliases, config_values, st.integers(0, 40)),
)


# -- the configuration -------------------------------------------------------------------------


@FUZZ
@given(documents)
def test_the_config_loader_raises_only_config_error(text: str) -> None:
    with contextlib.suppress(ConfigError):
        load_config_text(text, "fuzz.yaml")


@FUZZ
@given(shaped(SCHEMA), st.sampled_from([None, True, False]))
def test_schema_shaped_configs_raise_only_config_error(document: Any, flow: bool | None) -> None:
    with contextlib.suppress(ConfigError):
        load_config_text(as_yaml(document, flow), "fuzz.yaml")


@FUZZ
@given(st.binary(max_size=500))
def test_config_bytes_raise_only_config_error(data: bytes) -> None:
    with contextlib.suppress(ConfigError):
        load_config_text(decode_config(data, "fuzz.yaml"), "fuzz.yaml")


# -- the counter file ----------------------------------------------------------------------


@FUZZ
@given(st.one_of(documents.map(str.encode), st.binary(max_size=2000)), st.sampled_from([".json", ".yaml"]))
def test_the_counter_file_source_raises_only_counter_error(data: bytes, suffix: str) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / f"counters{suffix}"
        path.write_bytes(data)
        source = FileSource(path)
        with contextlib.suppress(CounterError):
            source.read("eth0")
        source.provides("eth0")


counter_files = st.dictionaries(
    st.text(max_size=8),
    st.none() | st.dictionaries(st.sampled_from(["errored_frames", "frames_received", "symbol_errors", "x"]), scalars),
    max_size=4,
)


@FUZZ
@given(counter_files, st.sampled_from([".json", ".yaml"]))
def test_counter_shaped_files_raise_only_counter_error(document: Any, suffix: str) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / f"counters{suffix}"
        path.write_text(json.dumps(document) if suffix == ".json" else as_yaml(document, None))
        with contextlib.suppress(CounterError):
            FileSource(path).read("eth0")


# -- the state file -----------------------------------------------------------------------------


state_documents = st.one_of(
    st.binary(max_size=2000),
    st.builds(json.dumps, values).map(str.encode),
    st.builds(
        lambda ports: json.dumps({"version": 1, "ports": ports}), st.dictionaries(st.text(max_size=8), values)
    ).map(str.encode),
)


@FUZZ
@given(state_documents)
def test_the_state_store_load_never_raises(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as directory:
        (Path(directory) / "state.json").write_bytes(data)
        store = StateStore(directory)
        problem = store.load()
        assert problem is None or isinstance(problem, str)
        assert all(isinstance(name, str) and isinstance(saved, dict) for name, saved in store.ports.items())
        store.save()  # and it works on
