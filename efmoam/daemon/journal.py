"""Log lines for people and journald: one line per event, ``key=value`` fields.

Under journald (`under_journald`: stderr is the stream $JOURNAL_STREAM names, as
systemd.exec(5) says; the variable alone may be inherited by a redirected process) each
line starts with a ``<N>`` priority prefix and has no timestamp (the journal adds one);
otherwise with a UTC timestamp (ISO 8601, milliseconds) and a level word.  journald
parses each line of a stream as its own entry, so a message of several lines (a
reload's list of problems, a traceback) is written as several lines, each with the
prefix, the lines after the first indented by two spaces; a field's value never
starts a line: a value with spaces, quotes, ``=``, ``\\`` or unprintable characters is
quoted with ``\\n``-style escapes.  Lines about bad input are rate limited per (port,
reason): a burst of 5 a minute, the rest counted and the count given with the next
line logged.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable
from typing import TextIO

PRIORITIES = {"error": 3, "warning": 4, "notice": 5, "info": 6, "debug": 7}
CONTINUATION = "  "  #: how the lines after a message's first start (after the prefix)
#: DEVICE:INODE, each at most 20 digits (a 64-bit number): a longer one names no stream
_JOURNAL_STREAM = re.compile(r"([0-9]{1,20}):([0-9]{1,20})")


def under_journald(stream: TextIO | None = None, environ: dict[str, str] | None = None) -> bool:
    """Whether `stream` (stderr by default) is the journal stream ``$JOURNAL_STREAM`` names
    (``DEVICE:INODE``, compared with the stream's fstat); anything malformed is no."""
    value = (os.environ if environ is None else environ).get("JOURNAL_STREAM", "")
    match = _JOURNAL_STREAM.fullmatch(value)
    if match is None:
        return False
    try:
        status = os.fstat((stream or sys.stderr).fileno())
    except (AttributeError, ValueError, OSError):  # no descriptor (io.StringIO raises a ValueError kind)
        return False
    return (status.st_dev, status.st_ino) == (int(match[1]), int(match[2]))


class Journal:
    """Writes log lines; `limited` applies the bad-input rate limit.

    `journald` None: decided by `under_journald` for `stream`; `clock` gives the wall
    time (seconds since the epoch) of the timestamps."""

    BURST = 5
    PERIOD = 60.0

    def __init__(
        self, stream: TextIO | None = None, *, journald: bool | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self._stream = stream or sys.stderr
        self.journald = under_journald(self._stream) if journald is None else journald
        self._clock = clock
        self._buckets: dict[tuple[str, str], tuple[float, int, int]] = {}  # (start, logged, suppressed)

    def log(self, level: str, message: str, **fields: object) -> None:
        prefix = f"<{PRIORITIES[level]}>" if self.journald else f"{timestamp(self._clock())} {level.upper()} "
        first, *rest = [line for line in message.splitlines() if line.strip()] or [""]
        extra = " ".join(f"{key}={quote(value)}" for key, value in fields.items() if value is not None)
        lines = [f"{prefix}{_printable(first)}{' ' if extra and first else ''}{extra}\n"]
        lines += [f"{prefix}{CONTINUATION}{_printable(line)}\n" for line in rest]
        self._stream.write("".join(lines))
        self._stream.flush()

    def limited(
        self,
        now: float,
        port: str,
        reason: str,
        message: str,
        level: str = "warning",
        *,
        burst: int = BURST,
        named: bool = True,
        **fields: object,
    ) -> None:
        """Log what a port's input caused, at most `burst` lines a minute per reason (the
        line says ``reason=`` unless not `named`, and how many were suppressed before it)."""
        start, logged, suppressed = self._buckets.get((port, reason), (now, 0, 0))
        if now - start >= self.PERIOD:
            start, logged = now, 0
        if logged < burst:
            named_fields: dict[str, object] = {"reason": reason} if named else {}
            self.log(level, message, port=port, **named_fields, suppressed=suppressed or None, **fields)
            self._buckets[(port, reason)] = (start, logged + 1, 0)
        else:
            self._buckets[(port, reason)] = (start, logged, suppressed + 1)


def timestamp(wall_time: float) -> str:
    """``2026-11-24T04:30:00.123Z``: UTC, milliseconds (truncated, never rounded up)."""
    milliseconds = int(wall_time * 1000)
    seconds, fraction = divmod(milliseconds, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{fraction:03d}Z"


_PLAIN_EXCLUDED = frozenset(' "=\\')


def quote(value: object) -> str:
    """A field's value as one token: as is when plain, else in double quotes with ``\\``,
    ``"`` and unprintable characters escaped (``\\n``, ``\\x1b``, ``\\u2028``)."""
    text = str(value)
    if text and text.isprintable() and not _PLAIN_EXCLUDED.intersection(text):
        return text
    return '"' + "".join(_escaped(char) for char in text) + '"'


def _escaped(char: str) -> str:
    if char in '"\\':
        return "\\" + char
    return char if char.isprintable() else char.encode("unicode_escape").decode("ascii")


def _printable(line: str) -> str:
    """A message line with its unprintable characters (an escape sequence, a carriage
    return) escaped; a tab stays."""
    if line.isprintable():
        return line
    return "".join(c if c.isprintable() or c == "\t" else c.encode("unicode_escape").decode("ascii") for c in line)
