"""The codec's field lists (`pdu.layer_fields`, generated) are what the scapy layers give.

The layers are the one definition of the format; the codec builds its struct functions from
the generated data so that it never imports scapy.  Here: the committed module is what the
generator writes from the layers now (under the venv's scapy, and under Debian's scapy 2.5
when /usr/bin/python3 has it), and each layout the codec uses behaves as the one compiled
straight from the layers, on any octets.  The codec against scapy's own dissection, PDU by
PDU, is tests/pdu/test_vectors.py and test_properties.py.
"""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from pdu import codec, layer_fields as F, layers as L
from pdu.layout import Field, Layout, build_layout
from tests.pdu.make_layer_fields import COMMAND, LINK_EVENT_TYPES, REPO, SOURCES, TARGET, compile_layout, render

#: name -> (the layout the codec uses, the layout compiled from the layers)
PAIRS: dict[str, tuple[Layout, Layout]] = {
    "HEADER": (codec._HEADER, compile_layout(*SOURCES["HEADER"][0])),
    "INFO_TLV": (codec._INFO_TLV, compile_layout(*SOURCES["INFO_TLV"][0])),
    "ORG_TLV_HEAD": (codec._ORG_TLV_HEAD, compile_layout(*SOURCES["ORG_TLV_HEAD"][0])),
    "SEQUENCE": (codec._SEQUENCE, compile_layout(*SOURCES["SEQUENCE"][0])),
    "DESCRIPTOR": (codec._DESCRIPTOR, compile_layout(*SOURCES["DESCRIPTOR"][0])),
    "COMMAND": (codec._COMMAND, compile_layout(*SOURCES["COMMAND"][0])),
    "OUI": (codec._OUI, compile_layout(*SOURCES["OUI"][0])),
    **{
        f"LINK_EVENTS[{int(t)}]": (codec._LINK_EVENT[t], compile_layout(L.EVENT_TLV_LAYERS[t]))
        for t in LINK_EVENT_TYPES
    },
}
DEBIAN_PYTHON = Path("/usr/bin/python3")


def test_the_committed_module_is_what_the_layers_give() -> None:
    assert TARGET.read_text() == render(), f"pdu/layer_fields.py differs from pdu/layers.py: run `{COMMAND}`"


def test_every_layout_of_the_generator_is_used_by_the_codec() -> None:
    assert set(PAIRS) == {*SOURCES, *(f"LINK_EVENTS[{int(t)}]" for t in LINK_EVENT_TYPES)}
    assert set(codec._LINK_EVENT) == set(F.LINK_EVENTS) == {int(t) for t in LINK_EVENT_TYPES}


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_the_codec_layout_has_the_layers_fields(name: str) -> None:
    used, compiled = PAIRS[name]
    assert (used.names, used.size, used.bits) == (compiled.names, compiled.size, compiled.bits)
    assert used.size == sum(compiled.bits) // 8


@pytest.mark.parametrize("name", sorted(PAIRS))
@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_the_codec_layout_reads_and_writes_as_the_layers_compiled(name: str, data: st.DataObject) -> None:
    used, compiled = PAIRS[name]
    octets = data.draw(st.binary(min_size=used.size, max_size=used.size))
    values = used.unpack_from(octets, 0)
    assert values == compiled.unpack_from(octets, 0)
    assert used.pack(*values) == compiled.pack(*values) == octets


@pytest.mark.parametrize("name", sorted(PAIRS))
@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_a_reader_hands_the_values_less_the_skipped_ones_to_its_maker(name: str, data: st.DataObject) -> None:
    used, _ = PAIRS[name]
    skip = data.draw(st.sets(st.sampled_from(used.names)))
    octets = data.draw(st.binary(min_size=used.size + 3, max_size=used.size + 3))
    values = zip(used.names, used.unpack_from(octets, 3), strict=True)
    expected = tuple(value for field, value in values if field not in skip)
    assert used.reader(lambda *values: values, skip=tuple(skip))(octets, 3) == expected


def test_a_reader_refuses_to_skip_a_field_the_layout_lacks() -> None:
    with pytest.raises(ValueError, match=r"no field \['lenght'\] to skip"):
        codec._INFO_TLV.reader(lambda *values: values, skip=("lenght",))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ((("a", 3, ""), ("b", 8, "B")), "bit fields before b do not fill whole octets"),
        ((("a", 8, "B"), ("b", 4, "")), "trailing bit fields do not fill whole octets"),
        ((("a", 16, "B"),), "field a: struct code 'B' is not 16 bits"),
        ((("a", 40, ""),), "bit fields up to a fill 5 octets"),
    ],
)
def test_data_the_codec_cannot_build_is_refused(fields: tuple[Field, ...], message: str) -> None:
    with pytest.raises(TypeError, match=message):
        build_layout(fields)


def test_a_bit_field_wider_than_its_width_is_a_struct_error() -> None:
    layout = build_layout((("a", 5, ""), ("b", 3, "")))
    assert layout.pack(31, 7) == b"\xff"
    with pytest.raises(struct.error, match="b=8 does not fit in 3 bits"):
        layout.pack(0, 8)


def _debian_scapy() -> str | None:
    if not DEBIAN_PYTHON.is_file():
        return None
    done = subprocess.run(
        [str(DEBIAN_PYTHON), "-c", "import attrs, scapy; print(scapy.VERSION)"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return done.stdout.strip() if done.returncode == 0 else None


def test_the_generator_gives_the_same_module_under_the_system_scapy() -> None:
    """Debian bookworm's python3-scapy (2.5) gives the module the venv's newer scapy gives."""
    version = _debian_scapy()
    if version is None:
        pytest.skip("no scapy and attrs under /usr/bin/python3")
    done = subprocess.run(
        [str(DEBIAN_PYTHON), "tests/pdu/make_layer_fields.py", "--check"],
        capture_output=True, text=True, cwd=REPO, check=False, env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, ""), f"scapy {version}"
