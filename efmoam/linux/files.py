"""Reading the files the daemon does not write itself, or cannot trust: bounded, never blocking.

The configuration, a counter file and the state file are read with `read_untrusted`:
whoever can write such a file, or its directory, can make it a FIFO (a plain ``open``
blocks until a writer comes), a symbolic link to ``/dev/zero`` (a plain ``read`` never
ends) or a file of gigabytes.  `read_untrusted` opens without blocking and without
taking a controlling terminal, refuses anything that is not a regular file, and reads at
most its cap plus one byte, so a file that grows while it is read is refused too.  A
refusal is a `FileRefusedError`, an `OSError`, so code that handles a missing or
unreadable file handles it the same way.

`BoundedYamlLoader` is PyYAML's safe loader with two limits for YAML from such files: how
deeply collections nest (PyYAML's composer recurses once per level and ends in a
`RecursionError`) and how much aliases may add (a "billion laughs" document is small but
stands for an exponential number of nodes).  A document over a limit is refused with a
`YamlLimitError`, a `yaml.YAMLError` that names the problem and where.  Never hand such
a file to ``yaml.CSafeLoader``: libyaml's composer recurses in C and a deeply nested
document crashes the process (segmentation fault).
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.events import AliasEvent
from yaml.nodes import Node

__all__ = [
    "CONFIG_FILE_LIMIT",
    "COUNTER_FILE_LIMIT",
    "STATE_FILE_LIMIT",
    "YAML_ALIAS_CHARS_LIMIT",
    "YAML_ALIAS_NODES_LIMIT",
    "YAML_DEPTH_LIMIT",
    "BoundedYamlLoader",
    "FileRefusedError",
    "YamlLimitError",
    "read_untrusted",
]

MiB = 1 << 20

#: the configuration file: a rule per port of a 4,096-port host, each rule with a mode,
#: a counter file and a monitor of its own, is 0.8 MiB (a bare ``- match: name`` 90 KiB)
CONFIG_FILE_LIMIT = 1 * MiB
#: a counter file: 4,096 ports with all three counters at their widest are 0.7 MiB of
#: JSON indented by four (0.4 MiB of YAML); it is read on every poll, so the cap stays small
COUNTER_FILE_LIMIT = 4 * MiB
#: the state file: 4,096 ports, each with a full event log (19 entries) and all 19
#: possible active events (the NIC health monitors' five among them), every number at its
#: widest, are 59 MiB (14.8 KiB a port); the rest is room for the policy's latches
STATE_FILE_LIMIT = 96 * MiB

#: YAML collections nest at most this deep (the configuration needs five levels)
YAML_DEPTH_LIMIT = 64
#: aliases may add at most this many nodes to a document ...
YAML_ALIAS_NODES_LIMIT = 100_000
#: ... and at most this many characters of text: a document with aliases is at most
#: about twice as large as the same document could be without them
YAML_ALIAS_CHARS_LIMIT = 1 * MiB

_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_CHUNK = 1 << 16


class FileRefusedError(OSError):
    """A file `read_untrusted` will not read: not a regular file, or over its cap.

    An `OSError` with ``errno`` (EISDIR for a directory, EINVAL for another file that is
    not a regular one, EFBIG for a file over its cap), ``strerror`` (the reason) and
    ``filename``; ``str()`` is one line, ``<path>: <reason>``.
    """

    def __init__(self, path: str | os.PathLike[str], code: int, reason: str) -> None:
        super().__init__(code, reason, os.fspath(path))

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


def _size_text(size: int) -> str:
    return f"{size // MiB} MiB" if size % MiB == 0 else f"{size} bytes"


def _kind(mode: int) -> str | None:
    """What a file that is not a regular file is, None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _refuse_kind(path: str | os.PathLike[str], mode: int) -> None:
    kind = _kind(mode)
    if kind == "a directory":
        raise FileRefusedError(path, errno.EISDIR, os.strerror(errno.EISDIR))
    if kind is not None:
        raise FileRefusedError(path, errno.EINVAL, f"Not a regular file ({kind})")


def _too_large(path: str | os.PathLike[str], limit: int, what: str, size: int | None) -> FileRefusedError:
    found = f"{size} bytes" if size is not None else "it grew while it was read"
    return FileRefusedError(path, errno.EFBIG, f"File too large ({found}; {what} may have at most {_size_text(limit)})")


def read_untrusted(path: str | os.PathLike[str], limit: int, what: str = "a file") -> bytes:
    """The whole content of the regular file `path`, at most `limit` bytes.

    `what` names the file in a refusal ("a configuration file").  Raises the `OSError`
    of a failed open or read (FileNotFoundError, PermissionError ...), or a
    `FileRefusedError`: `path` (after symbolic links) is not a regular file, or holds more
    than `limit` bytes.  Never blocks on a FIFO, never reads more than `limit` + 1 bytes.
    """
    # stat first, so that a device is never opened (opening some has effects: a watchdog
    # starts, a tape rewinds); fstat after the open catches a file swapped in between
    _refuse_kind(path, os.stat(path).st_mode)
    fd = os.open(path, _OPEN_FLAGS)
    try:
        status = os.fstat(fd)
        _refuse_kind(path, status.st_mode)
        if status.st_size > limit:
            raise _too_large(path, limit, what, status.st_size)
        chunks: list[bytes] = []
        total = 0
        # a regular file's size may be 0 and still have content (procfs): read to the end
        chunk_size = min(limit + 1, max(status.st_size + 1, _CHUNK))
        while total <= limit:
            chunk = os.read(fd, min(chunk_size, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            raise _too_large(path, limit, what, None)
        return b"".join(chunks)
    finally:
        os.close(fd)


# -- YAML ---------------------------------------------------------------------------------


class YamlLimitError(ComposerError):
    """A YAML document over one of `BoundedYamlLoader`'s limits; ``str()`` is one line."""

    def __str__(self) -> str:
        mark = self.problem_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        return f"{self.problem}{where}"


class BoundedYamlLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` that refuses documents nested or expanded beyond the limits.

    Collections nest at most `YAML_DEPTH_LIMIT` deep; the aliases of a document may add
    at most `YAML_ALIAS_NODES_LIMIT` nodes and `YAML_ALIAS_CHARS_LIMIT` characters to it
    (each alias counted as the nodes and text it stands for, its own aliases included);
    an alias inside its own anchor (a recursive document) is refused.  Use it as any
    loader: ``yaml.compose(text, Loader=BoundedYamlLoader)``, ``yaml.load(...)``.
    """

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        #: per node being composed: [nodes, characters added by aliases below it]
        self._open: list[list[int]] = []
        #: per anchor of a node composed: (nodes, characters) it stands for
        self._weights: dict[str, tuple[int, int]] = {}
        self._alias_nodes = 0
        self._alias_chars = 0

    def compose_document(self) -> Node | None:
        node: Node | None = super().compose_document()
        self._weights = {}  # anchors do not cross documents
        return node

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event: Any = self.peek_event()  # type: ignore[no-untyped-call]  # untyped in the stubs
        if isinstance(event, AliasEvent):
            self._count_alias(event)
            node: Node | None = super().compose_node(parent, index)
            return node
        if len(self._open) >= YAML_DEPTH_LIMIT:
            raise YamlLimitError(
                None, None, f"nested too deeply (more than {YAML_DEPTH_LIMIT} levels)", event.start_mark
            )
        weight = [1, 0]
        self._open.append(weight)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._open.pop()
        if self._open:
            self._open[-1][0] += weight[0]
            self._open[-1][1] += weight[1]
        if event.anchor is not None and node is not None:
            self._weights[event.anchor] = (weight[0], node.end_mark.index - node.start_mark.index + weight[1])
        return node

    def _count_alias(self, event: Any) -> None:
        anchor = event.anchor
        weight = self._weights.get(anchor) if anchor is not None else None
        if weight is None:
            if anchor in self.anchors:
                message = f"alias *{anchor} inside its own anchor (a recursive document)"
                raise YamlLimitError(None, None, message, event.start_mark)
            return  # an undefined alias: the composer reports it
        nodes, chars = weight
        self._alias_nodes += nodes
        self._alias_chars += chars
        if self._alias_nodes > YAML_ALIAS_NODES_LIMIT or self._alias_chars > YAML_ALIAS_CHARS_LIMIT:
            message = (
                f"aliases expand too far (to more than {YAML_ALIAS_NODES_LIMIT} values"
                f" or {_size_text(YAML_ALIAS_CHARS_LIMIT)} of text)"
            )
            raise YamlLimitError(None, None, message, event.start_mark)
        if self._open:
            self._open[-1][0] += nodes
            self._open[-1][1] += chars
