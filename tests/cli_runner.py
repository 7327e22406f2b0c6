"""click's `CliRunner` with stdout and stderr kept apart, on every click the project supports.

click 8.2 and later always keep them apart (and dropped ``mix_stderr``).  click 8.1 (Debian
bookworm's 8.1.3) mixes stderr into stdout unless told not to, and then reads the captured
stderr without flushing it, so its wrapper is made to write through.  Tests import
`CliRunner` from here, so ``result.stdout`` and ``result.stderr`` mean the same on both.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
from collections.abc import Iterator
from typing import Any

import click.testing

_OLD_CLICK = "mix_stderr" in inspect.signature(click.testing.CliRunner).parameters
_APART: dict[str, Any] = {"mix_stderr": False} if _OLD_CLICK else {}


class CliRunner(click.testing.CliRunner):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**_APART, **kwargs)

    @contextlib.contextmanager
    def isolation(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        with super().isolation(*args, **kwargs) as streams:
            if _OLD_CLICK:
                sys.stderr.reconfigure(write_through=True)  # type: ignore[union-attr]
            yield streams
