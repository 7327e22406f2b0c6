"""Capture sources as the commands name them: a path, or ``-`` for standard input.

Messages name standard input ``<stdin>``, never ``-``.  A command that reads its capture
once streams standard input (`efmoam.offline.decode.open_records`); one that reads it
more than once (play mode infers, then runs; transmit mode finds the speakers, then
sends) gets a path from `capture_path`: standard input is copied once, in fixed-size
chunks, to a temporary file on disk (memory stays bounded whatever is piped in, and a
pipe needs no seeking), which is removed when the command ends, also on an error or
Ctrl-C.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import BinaryIO

__all__ = ["STDIN_NAME", "capture_path", "is_stdin", "source_name"]

STDIN_NAME = "<stdin>"
_COPY_CHUNK = 1 << 20


def is_stdin(source: str | os.PathLike[str], stdin: BinaryIO | None) -> bool:
    """`source` means standard input: ``-``, with a stream to read it from."""
    return stdin is not None and os.fspath(source) == "-"


def source_name(source: str | os.PathLike[str], stdin: BinaryIO | None = None) -> str:
    """How messages name `source`."""
    return STDIN_NAME if is_stdin(source, stdin) else os.fspath(source)


@contextlib.contextmanager
def capture_path(source: str | os.PathLike[str], stdin: BinaryIO | None = None) -> Iterator[str]:
    """A path from which the capture `source` can be read as often as needed.

    `source` itself, or for ``-`` a temporary copy of `stdin` made on entry (an
    `OSError` reading or writing it propagates) and removed on exit.
    """
    if stdin is None or not is_stdin(source, stdin):
        yield os.fspath(source)
        return
    import shutil  # noqa: PLC0415 - only here: every offline command imports this module, and
    import tempfile  # noqa: PLC0415 - these two are a few ms of its start-up

    descriptor, path = tempfile.mkstemp(prefix="efmoam-stdin-", suffix=".capture")
    try:
        with os.fdopen(descriptor, "wb") as copy:
            shutil.copyfileobj(stdin, copy, _COPY_CHUNK)
        yield path
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
