"""Hostile files for the tests of the daemon's readers, and a way to read them safely.

A reader that is wrong can block for ever (a FIFO) or read until memory runs out (a
symbolic link to /dev/zero), so every hostile read runs in a child process
(`run_reader`) with a timeout and an address-space limit: a blocked or runaway reader
fails its test instead of hanging or killing the test run.  The child prints one JSON
line: what the reader returned or raised, and how long it took.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
MiB = 1 << 20

#: what each reader may take for a hostile file, at most (they take milliseconds)
PROMPT = 5.0
#: a child that runs longer is killed: the reader blocked, or reads without end
CHILD_TIMEOUT = 30.0
#: the child's address space: a reader that reads /dev/zero fails with MemoryError
CHILD_MEMORY = 1536 * MiB

DEEP_JSON = "[" * 100_000 + "]" * 100_000


def deep_flow_yaml(depth: int) -> str:
    """Mappings nested `depth` deep in flow style: ``{a: {a: ... 1 ...}}``."""
    return "{a: " * depth + "1" + "}" * depth + "\n"


def deep_block_yaml(depth: int) -> str:
    """Mappings nested `depth` deep in block style (indentation)."""
    return "".join(" " * level + "a:\n" for level in range(depth)) + " " * depth + "b: 1\n"


def alias_bomb(key: str = "lol") -> str:
    """A "billion laughs": ten levels of ten aliases each, 10**9 leaves from 300 bytes."""
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 10):
        name, previous = chr(ord("a") + level), chr(ord("a") + level - 1)
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * 10) + "]")
    lines.append(f"{key}: *j")
    return "\n".join(lines) + "\n"


NOT_UTF8 = b"eth0:\n  errored_frames: 1 # \xff\xfe caf\xe9\n"


def make(kind: str, path: Path, *, padding_to: int = 0, valid: str = "") -> Path:
    """A hostile `path` of `kind`; `valid` is content that would be read fine, and
    `padding_to` the size a "too_large" file gets (`valid` padded with spaces)."""
    if kind == "dev_zero":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "socket":
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(path))
        server.close()  # the socket file stays
    elif kind == "too_large":
        with open(path, "wb") as stream:
            stream.write(valid.encode())
            stream.write(b" " * (padding_to - len(valid.encode())))
    elif kind == "not_utf8":
        path.write_bytes(NOT_UTF8)
    elif kind == "deep_json":
        path.write_text(DEEP_JSON)
    elif kind == "deep_yaml_600":
        path.write_text(deep_block_yaml(600))
    elif kind == "deep_yaml_100000":
        path.write_text(deep_flow_yaml(100_000))
    elif kind == "alias_bomb":
        path.write_text(alias_bomb())
    else:
        raise ValueError(kind)
    return path


def _limit_memory() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY, CHILD_MEMORY))


_PRELUDE = """\
import json, sys, time
started = time.monotonic()
def report(**fields):
    fields["elapsed"] = time.monotonic() - started
    print(json.dumps(fields, default=repr), flush=True)
def raised(exc):
    message = str(exc)
    return {
        "outcome": "raised", "type": type(exc).__name__, "message": message[:4000],
        "lines": len(message.splitlines()), "mro": [cls.__name__ for cls in type(exc).__mro__],
    }
"""


def run_child(code: str, *args: str, timeout: float = CHILD_TIMEOUT, wrapper: Sequence[str] = ()) -> dict[str, Any]:
    """Run `code` (after a prelude defining ``report``, ``raised`` and ``started``) in a
    child Python with the memory limit (under `wrapper`, a command such as ``unshare -m``);
    its last JSON line.  A child that blocks past `timeout` is killed and reported as
    ``{"outcome": "timeout"}``."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    command = [*wrapper, sys.executable, "-c", _PRELUDE + textwrap.dedent(code), *args]
    try:
        done = subprocess.run(
            command,
            check=False,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            cwd=REPO,
            preexec_fn=_limit_memory,
        )
    except subprocess.TimeoutExpired:
        return {"outcome": "timeout", "elapsed": timeout}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return {"outcome": "crashed", "returncode": done.returncode, "stderr": done.stderr[-3000:]}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def run_in_thread(function: Callable[[], object], timeout: float = PROMPT) -> object:
    """`function()` in a thread; AssertionError when it does not return within `timeout`
    (the thread is left behind: it is a daemon thread)."""
    values: list[object] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            values.append(function())
        except BaseException as exc:  # handed to the caller
            errors.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), f"still running after {timeout} s: it blocked"
    if errors:
        raise errors[0]
    return values[0]
