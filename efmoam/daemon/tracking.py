"""Tracked conditions (a port's ``track``): facts outside OAM that are faults while true.

* ``interface NAME``: true while NAME does not exist or is not up (administratively down
  or without carrier).  Read from the daemon's link table and updated by its link
  notifications (`Tracking.set_links`): no polling.
* ``unit NAME``: true while ``systemctl is-active --quiet NAME`` exits non-zero.
* ``command ARGV``: true while its last run exited non-zero or timed out.

Unit and command checks run every ``interval`` seconds through the daemon's `Commands`
(never blocking the loop), at most one run per condition at a time, each killed after
min(interval, 10 s), with the daemon's environment plus ``EFMOAM_PORT`` and
``EFMOAM_TRACK`` (the condition's name).  A check that cannot start or times out counts as true; its error is
logged once (again only after a check has run to its end meanwhile).  A check's outcome
comes from the runner without a time: it is kept and applied at the next `service(now)`,
which `next_deadline` asks for at once.

Each change is given to the port's engine (`OamPort.set_tracked`, then the port's
outputs are carried out) and logged once.  The first value known of a condition is given
too, whichever it is (the engine's may have been restored); after a port was re-profiled
every value known is given again, and a condition that is no longer configured is given
as false.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import attrs

from efmoam.core.policy.settings import Track, TrackKind
from efmoam.daemon.commands import Commands
from efmoam.daemon.journal import Journal
from efmoam.linux.netlink import Link

if TYPE_CHECKING:
    from efmoam.daemon.runtime import PortRuntime

CHECK_TIMEOUT = 10.0  #: seconds a unit or command check may run at most
BUSY_RETRY = 1.0  #: seconds before a check the runner refused (too many running) is tried again
SYSTEMCTL = ("systemctl", "is-active", "--quiet", "--")  #: the unit's name is appended


@attrs.define(eq=False)
class _Condition:
    track: Track
    active: bool | None = None  #: what the engine was last told (None: not known yet)
    detail: str = ""  #: why, as logged
    due_at: float | None = None  #: when the next check starts (None: none planned)
    running_since: float | None = None  #: when the check running started (None: none runs)
    outcome: tuple[int | None, str | None] | None = None  #: a check's (exit status, error), to apply
    error: str | None = None  #: the check error last logged
    refused_at: float | None = None  #: since when the runner refuses its check (too many running)
    gone: bool = False  #: no longer configured: a check's outcome is dropped


@attrs.define(eq=False)
class _Port:
    runtime: PortRuntime
    conditions: dict[str, _Condition]


class Tracking:
    """Every managed port's tracked conditions; see the module's comment."""

    def __init__(self, commands: Commands, journal: Journal, *, systemctl: Sequence[str] = SYSTEMCTL) -> None:
        self._commands = commands
        self._journal = journal
        self._systemctl = tuple(systemctl)
        self._ports: dict[str, _Port] = {}
        self._links: dict[str, Link] = {}  #: the namespace's interfaces by name

    def conditions(self, port: str) -> dict[str, bool | None]:
        """The tracked conditions of `port` and whether each is true (None: not known yet)."""
        tracked = self._ports.get(port)
        return {} if tracked is None else {name: c.active for name, c in tracked.conditions.items()}

    # -- the daemon's hooks ------------------------------------------------------------

    def set_links(self, links: Iterable[Link], now: float) -> None:
        """The interfaces as they are now (at start, and after each batch of link events)."""
        self._links = {link.name: link for link in links}
        for port in list(self._ports.values()):
            for condition in list(port.conditions.values()):
                if condition.track.kind is TrackKind.INTERFACE:
                    self._interface(port, condition, now)

    def follow(self, runtime: PortRuntime, now: float) -> None:
        """A port was added or re-profiled: track what its settings name."""
        name = runtime.name
        previous = self._ports.pop(name, None)
        old = {} if previous is None else previous.conditions
        if previous is not None and previous.runtime is not runtime:
            self._drop(previous)
            old = {}
        conditions: dict[str, _Condition] = {}
        for track in runtime.profile.settings.policy.track:
            kept = old.pop(track.name, None)
            if kept is not None and kept.track == track:
                conditions[track.name] = kept
                continue
            if kept is not None:
                kept.gone = True
            interface = track.kind is TrackKind.INTERFACE
            conditions[track.name] = _Condition(track, due_at=None if interface else now)
        port = _Port(runtime, conditions)
        for condition in old.values():  # no longer configured: no longer true
            condition.gone = True
            if condition.active:
                condition.active = False
                self._journal.log("notice", "tracked condition removed", port=name, track=condition.track.name)
                self._tell(port, condition, now)
        if not conditions:
            return
        self._ports[name] = port
        for condition in conditions.values():
            if condition.active is not None:  # kept: the engine was given new settings
                self._tell(port, condition, now)
            if condition.track.kind is TrackKind.INTERFACE:
                self._interface(port, condition, now)

    def forget(self, name: str) -> None:
        """The port is no longer managed (checks running end unheard)."""
        port = self._ports.pop(name, None)
        if port is not None:
            self._drop(port)

    def next_deadline(self) -> float | None:
        """When `service` must run next (None: no need)."""
        times: list[float] = []
        for port in self._ports.values():
            for condition in port.conditions.values():
                if condition.outcome is not None and condition.running_since is not None:
                    times.append(condition.running_since)  # an outcome waits: at once
                elif condition.running_since is None and condition.due_at is not None:
                    times.append(condition.due_at)
        return min(times, default=None)

    def service(self, now: float) -> None:
        """Apply the checks' outcomes; start the checks that are due, the longest waiting first.

        When the runner was full, the checks it refused are tried again as soon as a check
        of ours ended (its place is free), before those that came due since: a condition
        cannot be starved by others whose checks happen to come due just before its retry.
        """
        conditions = [(port, c) for port in list(self._ports.values()) for c in list(port.conditions.values())]
        ended = False
        for port, condition in conditions:
            if condition.outcome is not None:
                self._apply(port, condition, now)
                ended = True
        due: list[tuple[float, int, _Port, _Condition]] = []
        for port, condition in conditions:
            if condition.running_since is not None or condition.due_at is None:
                continue
            if condition.refused_at is not None and (ended or condition.due_at <= now):
                due.append((condition.refused_at, len(due), port, condition))
            elif condition.due_at <= now:
                due.append((condition.due_at, len(due), port, condition))
        for _, _, port, condition in sorted(due, key=lambda item: item[:2]):
            self._check(port, condition, now)

    # -- conditions --------------------------------------------------------------------

    def _interface(self, port: _Port, condition: _Condition, now: float) -> None:
        target = condition.track.target
        link = self._links.get(target) if isinstance(target, str) else None
        if link is None:
            self._set(port, condition, True, "absent", now)
        elif not link.admin_up:
            self._set(port, condition, True, "admin down", now)
        elif not link.carrier:
            self._set(port, condition, True, "no carrier", now)
        else:
            self._set(port, condition, False, "up", now)

    def _check(self, port: _Port, condition: _Condition, now: float) -> None:
        track = condition.track
        target = track.target
        if track.kind is TrackKind.UNIT:
            argv = [*self._systemctl, target if isinstance(target, str) else " ".join(target)]
        else:
            argv = [target] if isinstance(target, str) else list(target)
        env = {key: value for key, value in os.environ.items() if key != "NOTIFY_SOCKET"}  # not systemd's to tell
        env.update(EFMOAM_PORT=port.runtime.name, EFMOAM_TRACK=track.name)
        started = self._commands.start(
            argv, env=env, timeout=min(track.interval, CHECK_TIMEOUT), on_done=functools.partial(_done, condition)
        )
        if not started:
            condition.due_at = now + min(track.interval, BUSY_RETRY)
            if condition.refused_at is None:
                condition.refused_at = now
                self._journal.log(
                    "warning", "tracked condition not checked: busy, too many commands running",
                    port=port.runtime.name, track=track.name, running=self._commands.running,
                )  # fmt: skip
            return
        condition.refused_at = None
        condition.running_since, condition.due_at = now, None

    def _apply(self, port: _Port, condition: _Condition, now: float) -> None:
        """A check ended: its outcome, and when the next one starts."""
        assert condition.outcome is not None
        status, error = condition.outcome
        started = condition.running_since if condition.running_since is not None else now
        condition.outcome, condition.running_since = None, None
        condition.due_at = max(started + condition.track.interval, now)
        if error is not None:
            if error != condition.error:
                condition.error = error
                self._journal.log(
                    "warning", "tracked condition check failed; counted as true",
                    port=port.runtime.name, track=condition.track.name, error=error,
                )  # fmt: skip
            self._set(port, condition, True, error, now)
            return
        condition.error = None
        self._set(port, condition, status != 0, f"exit status {status}", now)

    def _set(self, port: _Port, condition: _Condition, active: bool, detail: str, now: float) -> None:
        """A condition's value: logged and given to the engine when it changed (or was not known)."""
        if condition.active is active:
            return
        first = condition.active is None
        condition.active, condition.detail = active, detail
        self._journal.log(
            "notice" if active or not first else "info",
            "tracked condition true" if active else "tracked condition false",
            port=port.runtime.name, track=condition.track.name, detail=detail or None,
        )  # fmt: skip
        self._tell(port, condition, now)

    def _tell(self, port: _Port, condition: _Condition, now: float) -> None:
        runtime = port.runtime
        try:
            runtime.port.set_tracked(condition.track.name, bool(condition.active), now=now)
            runtime.flush(now)
        except Exception as exc:  # the engine's or the runtime's bug: this port's, not the loop's
            runtime.internal_error(now, "tracked condition", exc, track=condition.track.name)

    @staticmethod
    def _drop(port: _Port) -> None:
        for condition in port.conditions.values():
            condition.gone = True


def _done(condition: _Condition, status: int | None, error: str | None) -> None:
    """The runner's callback: the outcome is applied at the next `Tracking.service`."""
    if not condition.gone:
        condition.outcome = (status, error)
