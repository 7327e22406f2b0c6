"""Mutated captures for the fuzz test: a capture as records, mutations of the records, and
mutations of the bytes of the file written from them.

Design: a capture is read once with the project's reader into a `Model` (records with
integer seconds and microseconds, one link type per interface).  Record-level mutations
(`Mutation`) change the model: timestamps, dropped and duplicated records, bit flips and
truncation of the frames, link types, captured vs original lengths.  The model is then
written as pcap (either byte order, micro- or nanoseconds) or pcapng (either byte order)
by `write`, which also returns where every record, length field and header is, so the
byte-level mutations (`ByteMutation`) can truncate at every boundary, make length fields
lie and flip bits in headers without parsing the file again.  Every mutation holds plain
numbers and is applied modulo the sizes it meets, so any drawn value is valid and a
failing example prints as a short, replayable constructor call.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Sequence
from pathlib import Path

import attrs

from efmoam.offline.capture import read_capture

MICRO = 1_000_000
MAX_INTERFACES = 16
FORMATS = ("pcap-le-us", "pcap-be-ns", "pcapng-le", "pcapng-be", "pcapng-le-pb", "pcapng-be-spb", "pcapng-le-2s")
#: link types worth trying: Ethernet, none, raw IP, Linux cooked, Ethernet with FCS bits set
#: (pcap's upper link-type bits), 802.11, an unassigned one, the largest
LINKTYPES = (1, 0, 101, 113, 1 | 0x1000_0000 | 0x0400_0000, 105, 0x7FFF, 0xFFFF)
#: times that are not plausible or not representable as a datetime
ODD_SECONDS = (0, 1, 0x7FFF_FFFF, 0xFFFF_FFFF)
#: 28 hours (issue 16, defect 5), a year, a century, 2**32 - 1 seconds
JUMPS = (-(10**9), -86400, -1, 0, 5, 100_800, 31_536_000, 3_155_760_000, 0xFFFF_FFFF)


@attrs.frozen
class Record:
    seconds: int
    micros: int
    data: bytes
    original: int
    interface: int


@attrs.frozen
class Model:
    records: tuple[Record, ...]
    linktypes: tuple[int, ...]  # per interface; pcap uses the first


@functools.lru_cache(maxsize=64)
def load(path: str | Path) -> Model:
    """The records of a capture file (read with the project's reader; kept, it is read often)."""
    records = []
    linktypes: dict[int, int] = {}
    for record in read_capture(path):
        micros_total = round(record.time * MICRO)
        seconds, micros = divmod(micros_total, MICRO)
        records.append(Record(seconds, micros, record.data, record.original_length, record.interface))
        linktypes.setdefault(record.interface, record.linktype)
    count = max(linktypes, default=0) + 1
    return Model(tuple(records), tuple(linktypes.get(i, 1) for i in range(count)))


def speakers(model: Model) -> list[str]:
    """Source MACs of the Slow Protocols frames (the --as candidates), in order of appearance."""
    seen: dict[str, None] = {}
    for record in model.records:
        if record.data[12:14] == b"\x88\x09":
            seen[record.data[6:12].hex(":")] = None
    return list(seen)


# -- record-level mutations ---------------------------------------------------------------------


@attrs.frozen
class Retime:
    """Record `index` gets a time relative to the previous record (`how`: equal, jump by
    `value` seconds) or an absolute odd one (`how`: odd, `value` picks from ODD_SECONDS)."""

    index: int
    how: str  # "jump" | "odd" | "micros"
    value: int

    def apply(self, model: Model) -> Model:
        records = list(model.records)
        if not records:
            return model
        i = self.index % len(records)
        record = records[i]
        previous = records[i - 1] if i else record
        if self.how == "jump":
            seconds = max(0, min(0xFFFF_FFFF, previous.seconds + self.value))
            record = attrs.evolve(record, seconds=seconds, micros=previous.micros)
        elif self.how == "odd":
            record = attrs.evolve(record, seconds=ODD_SECONDS[self.value % len(ODD_SECONDS)])
        else:  # a fraction of a second that is not one (>= 1 s) or the largest field value
            record = attrs.evolve(record, micros=(MICRO, 999_999, 0xFFFF_FFFF)[self.value % 3])
        records[i] = record
        return attrs.evolve(model, records=tuple(records))


@attrs.frozen
class ShiftRest:
    """Every record from `index` on moves by `seconds` (a trimmed gap, a clock step)."""

    index: int
    seconds: int

    def apply(self, model: Model) -> Model:
        if not model.records:
            return model
        start = self.index % len(model.records)
        moved = [
            attrs.evolve(r, seconds=max(0, min(0xFFFF_FFFF, r.seconds + self.seconds))) if n >= start else r
            for n, r in enumerate(model.records)
        ]
        return attrs.evolve(model, records=tuple(moved))


@attrs.frozen
class Drop:
    index: int
    count: int

    def apply(self, model: Model) -> Model:
        if not model.records:
            return model
        start = self.index % len(model.records)
        return attrs.evolve(model, records=model.records[:start] + model.records[start + self.count :])


@attrs.frozen
class Duplicate:
    """Record `index` again, `later` records after itself (0: right after)."""

    index: int
    later: int

    def apply(self, model: Model) -> Model:
        if not model.records:
            return model
        i = self.index % len(model.records)
        at = min(len(model.records), i + 1 + self.later)
        return attrs.evolve(model, records=(*model.records[:at], model.records[i], *model.records[at:]))


@attrs.frozen
class FlipBits:
    """XOR `mask` into the byte at `offset` of record `index`'s frame; `body` offsets count
    from the OAMPDU's code octet (byte 17), else from the frame's first byte."""

    index: int
    offset: int
    mask: int
    body: bool

    def apply(self, model: Model) -> Model:
        if not model.records:
            return model
        i = self.index % len(model.records)
        record = model.records[i]
        data = bytearray(record.data)
        if not data:
            return model
        start = 17 if self.body and len(data) > 17 else 0
        at = start + self.offset % (len(data) - start)
        data[at] ^= self.mask or 0x01
        return _replace(model, i, attrs.evolve(record, data=bytes(data)))


@attrs.frozen
class SetByte:
    """Byte `offset` (from the OAMPDU's code octet) of record `index` becomes `value`:
    the TLV types and lengths the decoder trusts."""

    index: int
    offset: int
    value: int

    def apply(self, model: Model) -> Model:
        if not model.records:
            return model
        i = self.index % len(model.records)
        record = model.records[i]
        if len(record.data) <= 17:
            return model
        data = bytearray(record.data)
        data[17 + self.offset % (len(data) - 17)] = self.value
        return _replace(model, i, attrs.evolve(record, data=bytes(data)))


def frame_boundaries(data: bytes) -> list[int]:
    """Where a frame can be cut meaningfully: Ethernet and OAMPDU header fields, then each
    TLV (walked from the Information TLVs' start and from after an Event Notification's
    sequence number)."""
    cuts = {0, 1, 6, 12, 13, 14, 15, 17, 18, 20}
    for start in (18, 20):
        at = start
        while at + 1 < len(data) and data[at] != 0:
            cuts.add(at + 1)
            step = data[at + 1]
            if step < 2:
                break
            at += step
            cuts.add(at)
    return sorted(c for c in cuts if c <= len(data))


@attrs.frozen
class Truncate:
    """Record `index` keeps only its frame up to boundary `cut` (+ `delta` bytes); the
    original length is kept (as a snapshot length would leave it)."""

    index: int
    cut: int
    delta: int

    def apply(self, model: Model) -> Model:
        if not model.records:
            return model
        i = self.index % len(model.records)
        record = model.records[i]
        cuts = frame_boundaries(record.data)
        end = max(0, min(len(record.data), cuts[self.cut % len(cuts)] + self.delta))
        return _replace(model, i, attrs.evolve(record, data=record.data[:end]))


@attrs.frozen
class Original:
    """Record `index`'s original length becomes `value` (0, shorter than captured, huge)."""

    index: int
    value: int

    def apply(self, model: Model) -> Model:
        if not model.records:
            return model
        i = self.index % len(model.records)
        return _replace(model, i, attrs.evolve(model.records[i], original=self.value))


@attrs.frozen
class Linktype:
    """Interface `interface`'s link type becomes LINKTYPES[`choice`]."""

    interface: int
    choice: int

    def apply(self, model: Model) -> Model:
        linktypes = list(model.linktypes)
        linktypes[self.interface % len(linktypes)] = LINKTYPES[self.choice % len(LINKTYPES)]
        return attrs.evolve(model, linktypes=tuple(linktypes))


@attrs.frozen
class Interface:
    """Record `index` moves to interface `interface` (pcapng); when beyond the last one,
    interfaces up to it are declared if `declared` (and it is below MAX_INTERFACES)."""

    index: int
    interface: int
    declared: bool = True

    def apply(self, model: Model) -> Model:
        if not model.records:
            return model
        i = self.index % len(model.records)
        if self.declared and self.interface < MAX_INTERFACES:
            linktypes = model.linktypes + (1,) * (self.interface + 1 - len(model.linktypes))
            model = attrs.evolve(model, linktypes=linktypes)
        return _replace(model, i, attrs.evolve(model.records[i], interface=self.interface))


def _replace(model: Model, index: int, record: Record) -> Model:
    records = list(model.records)
    records[index] = record
    return attrs.evolve(model, records=tuple(records))


Mutation = Retime | ShiftRest | Drop | Duplicate | FlipBits | SetByte | Truncate | Original | Linktype | Interface


def mutate(model: Model, mutations: Sequence[Mutation]) -> Model:
    for mutation in mutations:
        model = mutation.apply(model)
    return model


# -- writing, with the places of the fields -------------------------------------------------------


@attrs.frozen
class Layout:
    """Where things are in a written file (byte offsets)."""

    byte_order: str
    boundaries: tuple[int, ...]  # each record's or block's start, and the end of the file
    lengths: tuple[int, ...]  # each 32-bit length field (captured, original, block total, trailer)
    headers: tuple[tuple[int, int], ...]  # (start, end) of the file, block and record headers
    snaplens: tuple[int, ...]  # each 32-bit snapshot length field


@attrs.frozen
class Clock:
    """How pcapng timestamps are written: ``if_tsresol`` (None: microseconds, else the
    option's byte: 2**-n when bit 7 is set, else 10**-n), ``if_tsoffset`` seconds, and an
    extra value XORed into every timestamp's high word (times far beyond any calendar)."""

    tsresol: int | None = None
    tsoffset: int = 0
    high: int = 0


def write(model: Model, fmt: str, snaplen: int = 0, clock: Clock = Clock()) -> tuple[bytes, Layout]:
    """The model as a file of format `fmt` (one of FORMATS)."""
    kind, order, *rest = fmt.split("-")
    byte_order = "<" if order == "le" else ">"
    if kind == "pcap":
        return _write_pcap(model, byte_order, nanoseconds=rest == ["ns"], snaplen=snaplen)
    return _write_pcapng(model, byte_order, snaplen, clock, rest[0] if rest else "epb")


def _write_pcap(model: Model, bo: str, nanoseconds: bool, snaplen: int) -> tuple[bytes, Layout]:
    magic = 0xA1B23C4D if nanoseconds else 0xA1B2C3D4
    out = bytearray(struct.pack(bo + "IHHiIII", magic, 2, 4, 0, 0, snaplen, model.linktypes[0] & 0xFFFF_FFFF))
    boundaries, lengths, headers = [0, 24], [], [(0, 24)]
    for record in model.records:
        fraction = record.micros * 1000 if nanoseconds else record.micros
        start = len(out)
        out += struct.pack(bo + "IIII", record.seconds, fraction & 0xFFFF_FFFF, len(record.data), record.original)
        out += record.data
        lengths += [start + 8, start + 12]
        headers.append((start, start + 16))
        boundaries.append(len(out))
    return bytes(out), Layout(bo, tuple(boundaries), tuple(lengths), tuple(headers), (16,))


def _ticks(record: Record, clock: Clock) -> int:
    """A record's time in the units of `clock` (relative to its offset), modulo 2**64."""
    seconds = record.seconds - clock.tsoffset
    if clock.tsresol is None:
        ticks = seconds * MICRO + record.micros
    else:
        exponent = clock.tsresol & 0x7F
        per_second = 1 << exponent if clock.tsresol & 0x80 else 10**exponent
        ticks = seconds * per_second + record.micros * per_second // MICRO
    return (ticks ^ (clock.high << 32)) & 0xFFFF_FFFF_FFFF_FFFF


def _write_pcapng(model: Model, bo: str, snaplen: int, clock: Clock, blocks: str) -> tuple[bytes, Layout]:
    """pcapng with Enhanced (`blocks` "epb"), obsolete (`pb`) or Simple Packet Blocks
    (`spb`: no timestamps, interface 0), or EPBs in two sections (`2s`: the second
    half of the records after a new Section Header and the interfaces again)."""
    out = bytearray()
    boundaries, lengths, headers, snaplens = [0], [], [], []

    def block(block_type: int, head: bytes, tail: bytes = b"") -> int:
        body = head + tail + bytes(-len(head + tail) % 4)
        start = len(out)
        total = struct.pack(bo + "I", 12 + len(body))
        out.extend(struct.pack(bo + "I", block_type) + total + body + total)
        lengths.extend([start + 4, len(out) - 4])
        headers.append((start, start + 8 + len(head)))
        boundaries.append(len(out))
        return start

    options = b""
    if clock.tsresol is not None:
        options += struct.pack(bo + "HH", 9, 1) + bytes([clock.tsresol, 0, 0, 0])
    if clock.tsoffset:
        options += struct.pack(bo + "HHq", 14, 8, clock.tsoffset)
    if options:
        options += struct.pack(bo + "HH", 0, 0)

    def section() -> None:
        block(0x0A0D0D0A, struct.pack(bo + "IHHq", 0x1A2B3C4D, 1, 0, -1))
        for linktype in model.linktypes:
            start = block(1, struct.pack(bo + "HHI", linktype & 0xFFFF, 0, snaplen) + options)
            snaplens.append(start + 12)

    section()
    second_section_at = len(model.records) // 2 if blocks == "2s" else -1
    for n, record in enumerate(model.records):
        if n == second_section_at:
            section()
        ticks = _ticks(record, clock)
        high, low = ticks >> 32, ticks & 0xFFFF_FFFF
        captured, original = len(record.data), record.original
        if blocks == "spb":
            start = block(3, struct.pack(bo + "I", original), record.data)
            lengths.append(start + 8)
        elif blocks == "pb":
            interface = min(record.interface, 0xFFFF)
            start = block(2, struct.pack(bo + "HHIIII", interface, 0, high, low, captured, original), record.data)
            lengths.extend([start + 20, start + 24])
        else:
            start = block(6, struct.pack(bo + "IIIII", record.interface, high, low, captured, original), record.data)
            lengths.extend([start + 20, start + 24])
    return bytes(out), Layout(bo, tuple(boundaries), tuple(lengths), tuple(headers), tuple(snaplens))


# -- byte-level mutations -----------------------------------------------------------------------------


@attrs.frozen
class Cut:
    """The file ends at boundary `boundary` + `delta` bytes (truncation at every boundary)."""

    boundary: int
    delta: int

    def apply(self, data: bytes, layout: Layout) -> bytes:
        end = layout.boundaries[self.boundary % len(layout.boundaries)] + self.delta
        return data[: max(0, end)]


@attrs.frozen
class LieLength:
    """Length field `field` (captured, original, block total or trailing length) says
    `value`, or its true value + `value` when `relative`."""

    field: int
    value: int
    relative: bool

    def apply(self, data: bytes, layout: Layout) -> bytes:
        if not layout.lengths:
            return data
        at = layout.lengths[self.field % len(layout.lengths)]
        if at + 4 > len(data):  # cut off already
            return data
        (true,) = struct.unpack_from(layout.byte_order + "I", data, at)
        value = (true + self.value if self.relative else self.value) & 0xFFFF_FFFF
        return data[:at] + struct.pack(layout.byte_order + "I", value) + data[at + 4 :]


@attrs.frozen
class Snaplen:
    """Every snapshot length field says `value`."""

    value: int

    def apply(self, data: bytes, layout: Layout) -> bytes:
        out = bytearray(data)
        for at in layout.snaplens:
            if at + 4 > len(out):
                break
            out[at : at + 4] = struct.pack(layout.byte_order + "I", self.value)
        return bytes(out)


@attrs.frozen
class FlipHeader:
    """XOR `mask` into byte `offset` of header `header` (file, block or record header)."""

    header: int
    offset: int
    mask: int

    def apply(self, data: bytes, layout: Layout) -> bytes:
        start, end = layout.headers[self.header % len(layout.headers)]
        end = min(end, len(data))
        if start >= end:
            return data
        out = bytearray(data)
        out[start + self.offset % (end - start)] ^= self.mask or 0x80
        return bytes(out)


@attrs.frozen
class ShrinkBlock:
    """pcapng block `block` keeps `words` 32-bit words of its body, both of its lengths
    saying so (a block too short for its fields, yet well framed)."""

    block: int
    words: int

    def apply(self, data: bytes, layout: Layout) -> bytes:
        if not data.startswith(b"\x0a\x0d\x0d\x0a"):
            return data
        n = self.block % (len(layout.boundaries) - 1)
        start, end = layout.boundaries[n], layout.boundaries[n + 1]
        if end > len(data):
            return data
        body = data[start + 8 : end - 4][: 4 * self.words]
        total = struct.pack(layout.byte_order + "I", 12 + len(body))
        return data[:start] + data[start : start + 4] + total + body + total + data[end:]


ByteMutation = Cut | LieLength | Snaplen | FlipHeader | ShrinkBlock


@attrs.frozen
class Case:
    """One fuzz input: a capture of the corpus, its mutations, how it is written."""

    capture: str  # path relative to the repository
    mutations: tuple[Mutation, ...] = ()
    fmt: str = "pcap-le-us"
    snaplen: int = 0
    byte_mutations: tuple[ByteMutation, ...] = ()
    clock: Clock = Clock()

    def build(self, root: Path) -> bytes:
        model = mutate(load(root / self.capture), self.mutations)
        data, layout = write(model, self.fmt, self.snaplen, self.clock)
        for mutation in self.byte_mutations:
            data = mutation.apply(data, layout)
        return data
