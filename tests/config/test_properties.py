"""Properties: no input makes the loader fail with anything but ConfigError; valid values round-trip."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from efmoam.config import ConfigError, load_config_text
from efmoam.config.loader import SCHEMA, Section
from efmoam.core.linkmon.settings import MonitorSettings
from efmoam.core.settings import PortSettings


def _all_keys(section: Section) -> set[str]:
    keys = set(section.fields)
    for field in section.fields.values():
        if isinstance(field, Section):
            keys |= _all_keys(field)
    return keys


KEYS = sorted(_all_keys(SCHEMA) | _all_keys(SCHEMA.fields["ports"]) | {"match", "physical_only"})  # type: ignore[arg-type]

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(
        ["active", "passive", "file", "exec", "log-only", "out-of-service", "00:11:22", "0x1", "*", "eth0"]
    ),
)

VALUES = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), children, max_size=5),
    ),
    max_leaves=25,
)

DOCUMENTS = st.dictionaries(st.sampled_from(["daemon", "defaults", "ports", "other"]), VALUES, max_size=4)


def _shaped(section: Section) -> st.SearchStrategy[dict[str, Any]]:
    """Mappings with the schema's keys and random values: they reach the deep checks."""
    fields = {
        key: (_shaped(field) | SCALARS) if isinstance(field, Section) else (SCALARS | VALUES)
        for key, field in section.fields.items()
    }
    return st.fixed_dictionaries({}, optional=fields)


SHAPED = st.fixed_dictionaries(
    {},
    optional={
        "daemon": _shaped(SCHEMA.fields["daemon"]),  # type: ignore[arg-type]
        "defaults": _shaped(SCHEMA.fields["defaults"]),  # type: ignore[arg-type]
        "ports": st.lists(_shaped(SCHEMA.fields["ports"]), max_size=3),  # type: ignore[arg-type]
    },
)


def _load(text: str) -> None:
    try:
        load_config_text(text, "fuzz.yaml")
    except ConfigError as exc:
        assert exc.problems
        for problem in exc.problems:
            assert problem.line >= 1 and problem.column >= 1


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DOCUMENTS)
def test_any_document_gives_a_config_or_a_config_error(document: dict[str, Any]) -> None:
    _load(yaml.safe_dump(document))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SHAPED)
def test_any_document_of_the_right_shape_gives_a_config_or_a_config_error(document: dict[str, Any]) -> None:
    _load(yaml.safe_dump(document))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_any_text_gives_a_config_or_a_config_error(text: str) -> None:
    _load(text)


@settings(max_examples=100, deadline=None)
@given(
    transmit_interval=st.floats(min_value=0.1, max_value=10.0),
    multiplier=st.integers(min_value=2, max_value=10),
    max_pdu_size=st.integers(min_value=64, max_value=1518),
    oui=st.integers(min_value=0, max_value=0xFFFFFF),
    vendor_info=st.integers(min_value=0, max_value=0xFFFFFFFF),
    sf=st.integers(min_value=1, max_value=2**32),
    data=st.data(),
)
def test_valid_values_round_trip(
    transmit_interval: float,
    multiplier: int,
    max_pdu_size: int,
    oui: int,
    vendor_info: int,
    sf: int,
    data: st.DataObject,
) -> None:
    sd = data.draw(st.none() | st.integers(min_value=0, max_value=sf - 1))
    text = (
        "defaults:\n"
        f"  transmit_interval: {transmit_interval!r}\n"
        f"  multiplier: {multiplier}\n"
        f"  max_pdu_size: {max_pdu_size}\n"
        f'  oui: "{oui >> 16:02x}:{(oui >> 8) & 0xFF:02x}:{oui & 0xFF:02x}"\n'
        f"  vendor_info: {vendor_info}\n"
        "  link_monitoring:\n"
        f"    errored_frame: {{sf_threshold: {sf}, sd_threshold: {'null' if sd is None else sd}}}\n"
        "ports: [{match: eth0}]\n"
    )
    settings_ = load_config_text(text).rules[0].profile.settings
    assert (settings_.transmit_interval, settings_.multiplier, settings_.max_pdu_size) == (
        transmit_interval,
        multiplier,
        max_pdu_size,
    )
    assert (settings_.oui, settings_.vendor_info) == (oui, vendor_info)
    assert settings_.link_monitoring.errored_frame == MonitorSettings(sf_threshold=sf, sd_threshold=sd)
    assert isinstance(settings_, PortSettings)
