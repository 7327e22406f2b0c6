"""The daemon's saved state: per port, its event log and active events (JSON, atomic).

The file is ``<state_dir>/state.json``: ``{"version": 1, "ports": {name: snapshot}}``,
each snapshot what `OamPort.saved_state` returns.  It is written with write to a
temporary file (``state.tmp``), fsync and rename, so a crash leaves either the old file or
the new one.

Writes are coalesced: `update` and `forget` change the store in memory and mark it dirty;
`flush` writes a dirty store at most once per `min_interval` (the first change after a
quiet spell is written at the next `flush`, later ones wait for the interval); `save`
writes at once (shutdown).  A failed write is counted (`save_failures`, `last_error`) and
retried at the next interval while the store is dirty; it never raises out of `flush`.

With ``background=True`` (the daemon) the file's content is made in the caller's thread,
and its write, fsync and rename are made on a thread of their own: a slow or stalled disk
(an fsync of 50 ms under load, a frozen file system) never holds the loop.  One write is
in flight at most; `flush` then writes nothing, and its outcome is taken in (counted,
`dirty` cleared if nothing changed since) by the next `flush` or read of the counts.
`save` waits for the write in flight, then writes, `timeout` seconds at most in all: a
SIGTERM is not held by a disk that does not answer.  `last_saved_at` is when the write
began.

The file is input like any other: `load` reads it bounded (`STATE_FILE_LIMIT`) and never
raises.  A file that cannot be read, is not JSON, or is not of the known shape is renamed
``state.bad`` and reported; a port whose saved state is not an object, or that the core
cannot restore (`StateStore.set_aside`), is dropped from the store after the file is
copied to ``state.bad``.  Only the latest ``state.bad`` is kept: each new one replaces the one
before, so the disk used stays bounded.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any, Generic, TypeVar

from efmoam.linux.files import STATE_FILE_LIMIT, read_untrusted

FILE_NAME = "state.json"
VERSION = 1
#: seconds between two writes of a store that keeps changing
MIN_INTERVAL = 1.0
#: characters of a parser's or the core's message kept in a problem
_MESSAGE_LIMIT = 300


def _short(message: object) -> str:
    """A message on one line of at most `_MESSAGE_LIMIT` characters."""
    text = " ".join(str(message).split())
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 3] + "..."


def _write_atomically(path: Path, data: bytes, temporary: Path) -> None:
    """Write `data` to `path` through `temporary`: created anew (never through a symbolic
    link or into a FIFO left there), fsynced, renamed over `path`.  Raises OSError."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        temporary.unlink()
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise


T = TypeVar("T")


class _TakenIn(Generic[T]):
    """A count of `StateStore` (``name``), read from ``_name`` once the background write's
    outcome is taken in: what show and metrics read is what reached the disk."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._private = "_" + name

    def __get__(self, store: StateStore, owner: type | None = None) -> T:
        store._take_in()
        value: T = getattr(store, self._private)
        return value

    def __set__(self, store: StateStore, value: T) -> None:  # read-only: the store counts
        raise AttributeError(f"{self._private[1:]} is counted by the store")


class StateStore:
    """Port snapshots under a state directory, written coalesced.

    What the daemon calls, and when:

    * `load` once at start; it returns a problem to log (or None) and never raises;
    * ``ports.get(name)`` for a port's saved snapshot, to restore; when the core refuses it
      (``OamPort.restore`` raises ValueError), ``set_aside(exc, port=name)`` (returns the
      problem to log);
    * ``update(name, snapshot, now)`` after an event changed a port's snapshot,
      ``forget(name, now)`` when a port's state is to go (its rule removed); neither writes;
    * `flush` with the loop's time after each wake-up (cheap when clean or not yet due),
      and `next_deadline` among the loop's deadlines, so that a pending write is made on
      time when nothing else wakes the loop;
    * `save` at shutdown (raises OSError when the write fails).

    For show and metrics: `saves`, `save_failures`, `last_error` (None after a success),
    `last_saved_at` and `last_failed_at` (in the clock of the ``now`` given to `flush`),
    `dirty`, `set_aside_problem` (the latest load or set-aside problem), `set_asides`.
    With ``background``, a write's outcome counts once it is taken in; read them on the
    thread that calls `flush` (or under the lock it holds).
    """

    def __init__(
        self,
        directory: str,
        *,
        min_interval: float = MIN_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        background: bool = False,
    ) -> None:
        self.path = Path(directory) / FILE_NAME
        #: where a file that cannot be used is set aside (renamed, or copied for one port)
        self.bad_path = self.path.with_suffix(".bad")
        self.min_interval = min_interval
        self._clock = clock
        #: port -> its snapshot (do not change a snapshot after handing it to `update`)
        self.ports: dict[str, Any] = {}
        #: changes not written yet (`dirty`)
        self._dirty = False
        self._saves = 0
        self._save_failures = 0
        self.set_asides = 0
        self._last_error: str | None = None
        self._last_saved_at: float | None = None
        self._last_failed_at: float | None = None
        self.set_aside_problem: str | None = None
        #: the earliest time of the next write (a write is due at once before the first)
        self._next_write = -math.inf
        #: port -> (the snapshot, its JSON text): a write encodes only what changed
        self._encoded: dict[str, tuple[object, str]] = {}
        self._background = background
        self._taking_in = threading.Lock()
        #: the write in flight: its outcome, the change count it wrote, its ``now``
        self._in_flight: tuple[Future[None], int, float] | None = None
        #: changes made so far: a write clears `dirty` only if none was made since it began
        self._changes = 0

    # -- what show and metrics read (a finished background write counted first) ----------

    dirty: _TakenIn[bool] = _TakenIn()
    saves: _TakenIn[int] = _TakenIn()
    save_failures: _TakenIn[int] = _TakenIn()
    last_error: _TakenIn[str | None] = _TakenIn()
    last_saved_at: _TakenIn[float | None] = _TakenIn()
    last_failed_at: _TakenIn[float | None] = _TakenIn()

    @property
    def writing(self) -> bool:
        """A background write is in flight."""
        self._take_in()
        return self._in_flight is not None

    # -- reading ------------------------------------------------------------------------

    def load(self) -> str | None:
        """Read the file; returns a problem to report, or None.  Never raises.

        No file is no problem.  A file that cannot be read or used is renamed
        `bad_path`; a port entry that is not an object is dropped after the file is copied
        there (the other ports are kept).
        """
        try:
            data = read_untrusted(self.path, STATE_FILE_LIMIT, "a state file")
        except FileNotFoundError:
            return None
        except OSError as exc:
            return self._set_aside_file(f"unreadable ({exc.strerror or exc})")
        try:
            document = json.loads(data.decode("utf-8"))
        except ValueError as exc:  # not UTF-8, not JSON, an integer of too many digits
            return self._set_aside_file(f"not JSON ({_short(exc)})")
        except RecursionError:
            return self._set_aside_file("not usable (nested too deeply)")
        except MemoryError:
            return self._set_aside_file("not usable (too large to parse)")
        finally:
            del data
        shape = _shape_problem(document)
        if shape is not None:
            return self._set_aside_file(f"of an unknown format ({shape})")
        ports: dict[str, Any] = document["ports"]
        wrong = [name for name, saved in ports.items() if not isinstance(saved, dict)]
        self.ports = {name: saved for name, saved in ports.items() if isinstance(saved, dict)}
        if not wrong:
            return None
        self._changed(None)  # the file holds what the store dropped
        names = ", ".join(_short(name) for name in wrong[:5]) + (
            f" and {len(wrong) - 5} more" if len(wrong) > 5 else ""
        )
        return self._set_aside_copy(f"saved state of {names} is not an object; not restored")

    def set_aside(self, problem: object, port: str | None = None) -> str:
        """A saved snapshot the core could not restore (`problem`, its ValueError): copy the
        file to `bad_path` (the other ports' snapshots in it may be good) and return the
        problem to report.  With `port`, that port's snapshot is dropped from the store."""
        if port is not None:
            self.ports.pop(port, None)
            self._encoded.pop(port, None)
            self._changed(None)
            problem = f"saved state of {port} not restored: {_short(problem)}"
        return self._set_aside_copy(_short(problem))

    def _set_aside_file(self, why: str) -> str:
        """Rename the file aside; the store starts empty."""
        self.ports, self._encoded = {}, {}
        try:
            os.replace(self.path, self.bad_path)
            where = f"set aside as {self.bad_path}"
        except OSError as exc:
            where = f"could not be set aside ({exc.strerror or exc})"
        return self._report(f"state file {self.path} {why}; {where}")

    def _set_aside_copy(self, why: str) -> str:
        """Copy the file aside (bounded: it may have been replaced since it was loaded)."""
        try:
            data = read_untrusted(self.path, STATE_FILE_LIMIT, "a state file")
            _write_atomically(self.bad_path, data, self.bad_path.with_name(self.bad_path.name + ".tmp"))
            where = f"the file is copied to {self.bad_path}"
        except OSError as exc:
            where = f"the file could not be copied aside ({exc.strerror or exc})"
        return self._report(f"state file {self.path}: {why}; {where}")

    def _report(self, problem: str) -> str:
        self.set_asides += 1
        self.set_aside_problem = problem
        return problem

    # -- changing -----------------------------------------------------------------------

    def update(self, port: str, snapshot: dict[str, Any], now: float | None = None) -> None:
        """`port`'s snapshot is now `snapshot`, changed at `now` (written at a later `flush`)."""
        if self.ports.get(port) == snapshot:
            return
        self.ports[port] = snapshot
        # encoded now, not at the write: a thousand ports changing at once spread the cost
        # over the wake-ups that changed them (a snapshot that cannot be encoded fails the write)
        with contextlib.suppress(ValueError, TypeError, RecursionError):
            self._encoded[port] = (snapshot, _encoded(snapshot))
        self._changed(now)

    def forget(self, port: str, now: float | None = None) -> None:
        """`port` has no saved state any more, since `now` (written at a later `flush`)."""
        if self.ports.pop(port, None) is not None:
            self._encoded.pop(port, None)
            self._changed(now)

    def _changed(self, now: float | None) -> None:
        self._dirty = True
        self._changes += 1
        if now is not None:  # due now, unless a write was made less than min_interval ago
            self._next_write = max(self._next_write, now)

    # -- writing ------------------------------------------------------------------------

    def next_deadline(self) -> float | None:
        """When the pending write is due (`flush` writes then), None when there is none.
        A change made without ``now`` before any write is due at once: -inf.  While a
        background write is in flight: its interval's end, to take its outcome in.
        Reads only (the loop asks it outside its lock, while a scrape may read the counts)."""
        return self._next_write if self._dirty else None

    def flush(self, now: float, force: bool = False) -> bool:
        """Write a dirty store if a write is due at `now` (or `force`); True when written
        (with ``background``: when its write began).

        Never raises: a failed write is counted in `save_failures`, kept in `last_error`
        and tried again `min_interval` later.
        """
        if not self.dirty or (not force and now < self._next_write):
            return False
        if self._in_flight is not None:  # still writing: look again an interval later
            self._next_write = now + self.min_interval
            return False
        try:
            self._write(now)
        except (OSError, ValueError, TypeError, RecursionError, MemoryError):
            return False
        return True

    def save(self, now: float | None = None, timeout: float | None = None) -> None:
        """Write at once, dirty or not (shutdown); raises OSError when the write fails or,
        with ``background``, does not finish within `timeout` seconds (None: no limit)."""
        now = self._clock() if now is None else now
        give_up = None if timeout is None else time.monotonic() + timeout
        self._wait(give_up, timeout, "the write in flight")
        try:
            self._write(now)
        except (ValueError, TypeError, RecursionError, MemoryError) as exc:
            raise OSError(f"state not written: {exc}") from exc
        if self._in_flight is not None:
            future = self._in_flight[0]
            self._wait(give_up, timeout, "the write")
            failure = future.exception()
            if failure is not None:
                raise failure if isinstance(failure, OSError) else OSError(f"state not written: {failure}")

    def _wait(self, give_up: float | None, timeout: float | None, what: str) -> None:
        """Wait for the background write in flight, until `give_up` (monotonic; None: no
        limit); raises OSError when it is still in flight then."""
        if self._in_flight is None:
            return
        with contextlib.suppress(FutureTimeout):
            self._in_flight[0].exception(None if give_up is None else max(0.0, give_up - time.monotonic()))
        self._take_in()
        if self._in_flight is not None:
            raise OSError(f"state not written: {what} did not finish within {timeout} s")

    def _write(self, now: float) -> None:
        self._next_write = now + self.min_interval
        try:
            data = self._encode()
            if self._background:
                future = _in_background(_write_atomically, self.path, data, self.path.with_suffix(".tmp"))
                self._in_flight = (future, self._changes, now)
                return
            _write_atomically(self.path, data, self.path.with_suffix(".tmp"))
        except (OSError, ValueError, TypeError, RecursionError, MemoryError) as exc:
            self._failed(now, exc)
            raise
        self._written(now, self._changes)

    def _take_in(self) -> None:
        """Count the background write's outcome once it has one, once whatever the threads
        reading the counts (the loop's, a scrape's)."""
        in_flight = self._in_flight
        if in_flight is None or not in_flight[0].done():
            return
        with self._taking_in:
            if self._in_flight is not in_flight:
                return  # taken in meanwhile
            self._in_flight = None
        future, changes, now = in_flight
        exc = future.exception()
        if exc is None:
            self._written(now, changes)
        else:
            self._failed(now, exc)

    def _written(self, now: float, changes: int) -> None:
        if changes == self._changes:
            self._dirty = False
        self._saves += 1
        self._last_saved_at = now
        self._last_error = None

    def _failed(self, now: float, exc: BaseException) -> None:
        self._save_failures += 1
        self._last_failed_at = now
        self._last_error = _short(exc if isinstance(exc, OSError) else f"{type(exc).__name__}: {exc}")

    def _encode(self) -> bytes:
        """The file's content: the format ``json.dump`` wrote, each port encoded once per change."""
        parts = []
        for name, snapshot in self.ports.items():
            encoded = self._encoded.get(name)
            if encoded is None or encoded[0] is not snapshot:
                encoded = (snapshot, _encoded(snapshot))
                self._encoded[name] = encoded
            parts.append(f"{json.dumps(name)}:{encoded[1]}")
        for name in self._encoded.keys() - self.ports.keys():
            del self._encoded[name]
        return f'{{"version":{VERSION},"ports":{{{",".join(parts)}}}}}'.encode()


def _in_background(function: Callable[..., None], *args: Any) -> Future[None]:
    """`function(*args)` on a thread of its own, its outcome in the future returned.

    A daemon thread, not an executor's: the interpreter's exit joins an executor's workers,
    so a write stuck on a disk that does not answer would hold the daemon's exit after
    `StateStore.save` gave up on it."""
    future: Future[None] = Future()

    def run() -> None:
        try:
            function(*args)
        except BaseException as exc:  # handed over; taken in on the loop's thread
            future.set_exception(exc)
        else:
            future.set_result(None)

    threading.Thread(target=run, name="efmoam-state", daemon=True).start()
    return future


def _encoded(snapshot: dict[str, Any]) -> str:
    return json.dumps(snapshot, separators=(",", ":"))


def _shape_problem(document: object) -> str | None:
    """What is wrong with the file's top level, None when it is a known version with ports."""
    if not isinstance(document, dict):
        return f"an object with version and ports, not {type(document).__name__}"
    version = document.get("version")
    if type(version) is not int or version != VERSION:
        return f"version {_describe(version)}, expected {VERSION}"
    ports = document.get("ports")
    if not isinstance(ports, dict):
        return f"ports is {type(ports).__name__}, not an object"
    return None


def _describe(value: object) -> str:
    """A JSON value in a few characters (never the repr of a structure: it may be huge or deep)."""
    if value is None or isinstance(value, (bool, int, float)):
        text = repr(value)
        return text if len(text) <= 40 else text[:37] + "..."
    if isinstance(value, str):
        return repr(value[:37] + "..." if len(value) > 40 else value)
    return f"a {'list' if isinstance(value, list) else type(value).__name__}"
