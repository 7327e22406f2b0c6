"""Log lines for people and journald: one line per event, ``key=value`` fields.

Without timestamps (the journal adds them); with a ``<N>`` priority prefix when
stderr is the journal ($JOURNAL_STREAM), a level word otherwise.  Lines about bad input
are rate limited per (port, reason): a burst of 5 a minute, the rest counted and the
count given with the next line logged.
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

PRIORITIES = {"error": 3, "warning": 4, "notice": 5, "info": 6, "debug": 7}


class Journal:
    """Writes log lines; `limited` applies the bad-input rate limit."""

    BURST = 5
    PERIOD = 60.0

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream or sys.stderr
        self._journald = bool(os.environ.get("JOURNAL_STREAM"))
        self._buckets: dict[tuple[str, str], tuple[float, int, int]] = {}  # (start, logged, suppressed)

    def log(self, level: str, message: str, **fields: object) -> None:
        prefix = f"<{PRIORITIES[level]}>" if self._journald else f"{level.upper()} "
        extra = " ".join(f"{key}={_quote(value)}" for key, value in fields.items() if value is not None)
        self._stream.write(f"{prefix}{message}{' ' if extra else ''}{extra}\n")
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


def _quote(value: object) -> str:
    text = str(value)
    return f'"{text}"' if not text or " " in text else text
