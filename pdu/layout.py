"""Build the struct codec of a fixed-size run of fields, once, from plain data.

This is how the fast path stays derived from the one definition of the format without
importing scapy: ``tests/pdu/make_layer_fields.py`` reads the scapy layers' ``fields_desc`` into
plain data (`pdu.layer_fields`, generated, checked against the layers by a test) and this
module turns that data into struct functions at import.  A field is a name, a width in
bits and a struct code: a plain struct field (byte, short, int, long, MAC) has its code,
a field of a bit run (bit fields, three-octet OUIs) has ``""`` and runs must add up to
whole octets.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import attrs

_T = TypeVar("_T")

#: (name, width in bits, struct code: "" for a field read from a run of bits)
Field = tuple[str, int, str]

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
    #: the struct's own ``unpack_from``, the names it binds and each field's expression of them
    _raw_unpack_from: Callable[[Any, int], tuple[Any, ...]]
    _raw: tuple[str, ...]
    _values: tuple[str, ...]

    def reader(self, make: Callable[..., _T], skip: Sequence[str] = ()) -> Callable[[Any, int], _T]:
        """``read(buffer, offset)`` -> ``make(*values)``, the fields named in *skip* left out.

        One generated function: no tuple of values in between and no unpacking of it
        (a link event TLV is read per Event Notification).
        """
        unknown = set(skip) - set(self.names)
        if unknown:
            raise ValueError(f"no field {sorted(unknown)} to skip")
        kept = [value for name, value in zip(self.names, self._values, strict=True) if name not in skip]
        read: Callable[[Any, int], _T] = _compile_read(self._raw_unpack_from, self._raw, kept, make)
        return read


@attrs.define
class _Run:
    """Consecutive octets read as one unsigned integer and split into fields."""

    octets: int = 0
    fields: list[tuple[str, int]] = attrs.Factory(list)  # (name, bits), MSB first


def build_layout(fields: Sequence[Field]) -> Layout:
    """The struct codec of `fields`, in wire order."""
    codes: list[str] = []
    slots: list[str | _Run] = []  # a field name read as is, or a run of bits
    bits: list[tuple[str, int]] = []
    for name, width, code in fields:
        if not code:
            bits.append((name, width))
            total = sum(size for _, size in bits)
            if total % 8 == 0:
                if total // 8 not in _INT_CODES:
                    raise TypeError(f"bit fields up to {name} fill {total // 8} octets")
                slots.append(_Run(total // 8, bits))
                codes.append(_INT_CODES[total // 8])
                bits = []
        elif bits:
            raise TypeError(f"bit fields before {name} do not fill whole octets")
        elif struct.calcsize(code) * 8 != width:
            raise TypeError(f"field {name}: struct code {code!r} is not {width} bits")
        else:
            slots.append(name)
            codes.append(code)
    if bits:
        raise TypeError("trailing bit fields do not fill whole octets")
    codec = struct.Struct("!" + "".join(codes))
    names = tuple(name for slot in slots for name in _slot_names(slot))
    raw, values, packed = _generate(slots)
    pack_src = f"def pack({', '.join(names)}):\n    return _pack({', '.join(packed)})\n"
    namespace: dict[str, Any] = {"_pack": codec.pack, "_check": _check}
    exec(pack_src, namespace)  # source generated from our own field lists
    unpack_from = _compile_read(codec.unpack_from, raw, values, None)
    widths = tuple(width for _, width, _ in fields)
    return Layout(names, codec.size, widths, unpack_from, namespace["pack"], codec.unpack_from, raw, values)


def _compile_read(
    struct_unpack_from: Callable[[Any, int], tuple[Any, ...]], raw: Sequence[str], values: Sequence[str],
    make: Callable[..., Any] | None,
) -> Callable[[Any, int], Any]:  # fmt: skip
    """``read(buffer, offset)``: the struct binds the `raw` names, then `values` (their
    expressions, one per field) go to `make`, or into a tuple when `make` is None."""
    result = f"make({', '.join(values)})" if make is not None else f"({', '.join(values)},)"
    namespace: dict[str, Any] = {"_unpack_from": struct_unpack_from, "make": make}
    exec(  # source generated from our own field lists
        f"def read(buffer, offset):\n    {', '.join(raw)}, = _unpack_from(buffer, offset)\n    return {result}\n",
        namespace,
    )
    read: Callable[[Any, int], Any] = namespace["read"]
    return read


def _slot_names(slot: str | _Run) -> list[str]:
    return [slot] if isinstance(slot, str) else [name for name, _ in slot.fields]


def _check(value: int, bits: int, name: str) -> int:
    if not 0 <= value < 1 << bits:
        raise struct.error(f"{name}={value} does not fit in {bits} bits")
    return value


def _generate(slots: list[str | _Run]) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """The names the struct binds, each field's expression of them, what is packed."""
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
    return tuple(raw), tuple(values), tuple(packed)
