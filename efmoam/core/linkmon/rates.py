"""What a link carries per second: symbols for the symbol monitor, minimum frames for
the frame-period window (protocol.md 6.1 and 6.2).

A "symbol" is the PCS code unit: an 8B/10B code-group, a 64B/66B block or a PAM symbol.
Speeds not in the table fall back to one symbol per octet of line rate; a port can set
its own rate (``symbol_rate``).
"""

from __future__ import annotations

#: link speed in Mb/s -> symbols per second
SYMBOLS_PER_SECOND: dict[int, int] = {
    100: 25_000_000,  # 100BASE-X, 4B/5B code-groups
    1_000: 125_000_000,  # 1000BASE-X code-groups / 1000BASE-T 4-D symbols
    2_500: 312_500_000,  # 2.5GBASE-X code-groups
    5_000: 78_125_000,  # 5GBASE-R blocks
    10_000: 156_250_000,  # 10GBASE-R blocks
    25_000: 390_625_000,  # 25GBASE-R blocks
    40_000: 625_000_000,  # 40GBASE-R blocks
    50_000: 781_250_000,  # 50GBASE-R blocks
    100_000: 1_562_500_000,  # 100GBASE-R blocks
}

DEFAULT_SPEED_MBPS = 1_000  #: assumed while the link speed is unknown
MIN_FRAME_BITS = 672  #: 64-octet frame + preamble/SFD + inter-packet gap
MAX_FRAME_WINDOW = 0xFFFFFFFF  #: the Errored Frame Period window is 32 bits


def symbols_per_second(speed_mbps: int | None) -> int:
    speed = speed_mbps or DEFAULT_SPEED_MBPS
    return SYMBOLS_PER_SECOND.get(speed, speed * 1_000_000 // 8)


def min_frames_per_second(speed_mbps: int | None) -> int:
    """Minimum-size frames the link carries in one second, clamped to 32 bits."""
    return min((speed_mbps or DEFAULT_SPEED_MBPS) * 1_000_000 // MIN_FRAME_BITS, MAX_FRAME_WINDOW)
