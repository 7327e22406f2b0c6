"""Compile the field list of a fixed-size scapy layer into a struct codec, once.

This is how the fast path stays derived from the one definition of the format: the
struct format, the bit splitting and the packing are generated from ``fields_desc``.
Supported fields are those with a plain struct format (byte, short, int, long, MAC),
three-octet fields (OUI) and runs of bit fields that add up to whole octets.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

import attrs
from scapy.fields import ThreeBytesField, _BitField
from scapy.packet import Packet

# struct codes for a run of N octets read as one unsigned integer (3 octets: B then H)
_INT_CODES = {1: "B", 2: "H", 3: "BH", 4: "I", 8: "Q"}


@attrs.frozen
class Layout:
    """A fixed-size layer as struct functions over its fields, in field order."""

    names: tuple[str, ...]
    size: int
    #: the width in bits of each field, in field order (the widths TLV values must fit)
    bits: tuple[int, ...]
    #: ``unpack_from(buffer, offset)`` -> one int/bytes value per field
    unpack_from: Callable[[Any, int], tuple[Any, ...]]
    #: ``pack(*values)`` -> octets; raises struct.error for a value that does not fit
    pack: Callable[..., bytes]


@attrs.define
class _Run:
    """Consecutive octets read as one unsigned integer and split into fields."""

    octets: int = 0
    fields: list[tuple[str, int]] = attrs.Factory(list)  # (name, bits), MSB first


def compile_layout(*parts: type[Packet] | Sequence[Any]) -> Layout:
    """Build the struct codec of the concatenated fields of `parts`.

    A part is a layer (all its fields) or a list of fields (for example the fixed
    fields that open a layer whose tail has a variable size).
    """
    codes: list[str] = []
    slots: list[str | _Run] = []  # a field name read as is, or a run of bits
    bits: list[tuple[str, int]] = []
    widths: list[int] = []  # per field
    for field in _fields(parts):
        if isinstance(field, _BitField):
            bits.append((field.name, field.size))
            total = sum(size for _, size in bits)
            if total % 8 == 0:
                slots.append(_Run(total // 8, bits))
                codes.append(_INT_CODES[total // 8])
                widths += [size for _, size in bits]
                bits = []
        elif bits:
            raise TypeError(f"bit fields before {field.name} do not fill whole octets")
        elif isinstance(field, ThreeBytesField):
            slots.append(_Run(3, [(field.name, 24)]))
            codes.append(_INT_CODES[3])
            widths.append(24)
        else:
            fmt = field.fmt.lstrip("!<>=@")
            if struct.calcsize(fmt) != field.sz:
                raise TypeError(f"field {field.name} has no fixed struct format")
            slots.append(field.name)
            codes.append(fmt)
            widths.append(8 * field.sz)
    if bits:
        raise TypeError("trailing bit fields do not fill whole octets")
    codec = struct.Struct("!" + "".join(codes))
    names = tuple(name for slot in slots for name in _slot_names(slot))
    unpack_src, pack_src = _generate(slots)
    namespace: dict[str, Any] = {"_unpack_from": codec.unpack_from, "_pack": codec.pack, "_check": _check}
    exec(unpack_src + pack_src, namespace)  # source generated from our own field lists
    return Layout(names, codec.size, tuple(widths), namespace["unpack_from"], namespace["pack"])


def _fields(parts: Sequence[type[Packet] | Sequence[Any]]) -> list[Any]:
    fields: list[Any] = []
    for part in parts:
        fields += part.fields_desc if isinstance(part, type) else part
    return fields


def _slot_names(slot: str | _Run) -> list[str]:
    return [slot] if isinstance(slot, str) else [name for name, _ in slot.fields]


def _check(value: int, bits: int, name: str) -> int:
    if not 0 <= value < 1 << bits:
        raise struct.error(f"{name}={value} does not fit in {bits} bits")
    return value


def _generate(slots: list[str | _Run]) -> tuple[str, str]:
    """Python source of ``unpack_from`` and ``pack`` for these slots."""
    raw: list[str] = []  # names bound by struct.unpack_from
    values: list[str] = []  # expressions of the field values, in field order
    packed: list[str] = []  # expressions handed to struct.pack
    for i, slot in enumerate(slots):
        if isinstance(slot, str):
            raw.append(f"r{i}")
            values.append(f"r{i}")
            packed.append(slot)
            continue
        if slot.octets == 3:
            raw += [f"r{i}", f"s{i}"]
            whole = f"(r{i} << 16 | s{i})"
        else:
            raw.append(f"r{i}")
            whole = f"r{i}"
        shift = slot.octets * 8
        parts = []
        for name, size in slot.fields:
            shift -= size
            mask = (1 << size) - 1
            values.append(f"({whole} >> {shift} & {mask:#x})" if size < slot.octets * 8 else whole)
            parts.append(f"_check({name}, {size}, {name!r}) << {shift}")
        joined = " | ".join(parts)
        packed += [f"({joined}) >> 16", f"({joined}) & 0xFFFF"] if slot.octets == 3 else [f"({joined})"]
    params = ", ".join(name for slot in slots for name in _slot_names(slot))
    unpack_src = (
        "def unpack_from(buffer, offset):\n"
        f"    {', '.join(raw)}, = _unpack_from(buffer, offset)\n"
        f"    return ({', '.join(values)},)\n"
    )
    pack_src = f"def pack({params}):\n    return _pack({', '.join(packed)})\n"
    return unpack_src, pack_src
