"""What every refusal an operator reads must be: words, never a state machine's state name
(SEND_LOCAL_REMOTE, ACTIVE_SEND_LOCAL ...)."""

from __future__ import annotations

import re

STATE_NAME = re.compile(r"\b[A-Z][A-Z_]{3,}\b")  #: SEND_ANY, FAULT ... (an all-caps word of 4 or more)


def words(refusal: str | None) -> str:
    """`refusal`, checked to be one and to name no state."""
    assert refusal is not None
    assert not STATE_NAME.search(refusal), refusal
    return refusal
