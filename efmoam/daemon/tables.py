"""The nftables tables the daemon leaves on the system: none stale at start, none a port or
the daemon outlives.

A port's block table (out of service) and loopback table (Clause 57.3.3's parser and
multiplexer actions in the data plane) are written by the actuator, off the loop.  The
rule kept here, in one place:

* at start, before the loop runs, the tables a previous run left are removed: the blocks
  of ports not out of service now (a restored port still out of service keeps its
  block), and every loopback table (no loopback survives a restart).  Each kind in one
  nft transaction (`reconcile`);
* a port the daemon stops managing (link gone, renamed, new MAC, configuration changed)
  is returned to forwarding, after whatever is on its way for it, and returned to
  service when the configuration no longer names it (`release`);
* at exit, every port in loopback, or with a loopback change on its way, is returned to
  forwarding in one transaction, after waiting a little longer for a batch in flight
  that changes loopback (`end_loopbacks_at_exit`).  A block stays: the port is out of
  service for a reason the next start reads back.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable

from efmoam.core import LoopbackStatus
from efmoam.daemon.actuator import Actuator, Job
from efmoam.daemon.journal import Journal
from efmoam.daemon.runtime import LOOPBACK_PLANE, PortRuntime, loopback_key
from efmoam.linux.actions import (
    ActionError,
    BlockBackend,
    LoopbackPlane,
    LoopbackStep,
    PortActionBackend,
    Step,
    end_loopbacks,
    stale_block_tables,
    stale_loopback_tables,
)
from pdu import MuxAction, ParserAction

#: what `release` hands the actuator
ReleaseStep = tuple[PortActionBackend, Step] | tuple[LoopbackPlane, LoopbackStep]
_Remove = Callable[[list[str]], list[ActionError | None]]


def reconcile(journal: Journal, out_of_service: Callable[[str], bool]) -> None:
    """Remove the tables a previous run left (see the module's comment); `out_of_service`:
    whether a port is out of service now (its block stays)."""
    kinds: tuple[tuple[str, Callable[[], list[str]], _Remove, Callable[[str], bool]], ...] = (
        ("block", stale_block_tables, _end_blocks, out_of_service),
        ("loopback", stale_loopback_tables, end_loopbacks, lambda _name: False),
    )
    for what, list_stale, remove, keep in kinds:
        try:
            stale = [name for name in list_stale() if not keep(name)]
        except ActionError as exc:
            journal.log("warning", "cannot list nftables tables", error=exc)
            return
        for name, error in zip(stale, remove(stale) if stale else [], strict=True):
            if error is None:
                journal.log("notice", f"stale {what} removed", port=name)
            else:
                journal.log("error", f"stale {what} not removed", port=name, error=error)


def release(actuator: Actuator, journal: Journal, key: Hashable, step: ReleaseStep, failed: str | None = None) -> None:
    """Return a port to service, or end its loopback: `step`, off the loop (under the
    actuator's `key`, after what is on its way there); `failed`: the log line if that fails."""

    def done(results: list[bool | ActionError], _now: float) -> None:
        if failed is not None and isinstance(results[0], ActionError):
            journal.log("error", failed, port=step[1].ifname, error=results[0])

    actuator.submit(key, Job((step,), done))


def release_port(actuator: Actuator, journal: Journal, runtime: PortRuntime, *, to_service: bool) -> None:
    """A port no longer managed: its loopback ended (always), and its action undone
    (`to_service`: the configuration no longer names it)."""
    name = runtime.name
    actuator.orphan(name)  # what is on its way still runs; the runtime is not told
    actuator.orphan(loopback_key(name))
    forward = LoopbackStep(name, ParserAction.FORWARD, MuxAction.FORWARD)
    release(actuator, journal, loopback_key(name), (LOOPBACK_PLANE, forward), "loopback not ended")
    if to_service:
        release(actuator, journal, name, (runtime.actions, Step(name, False)), "action not undone")


def end_loopbacks_at_exit(actuator: Actuator, journal: Journal, ports: Iterable[PortRuntime]) -> None:
    """Stop the actuator and leave no loopback behind: the tables of every port in
    loopback, or with a loopback change on its way (queued changes are dropped; one in
    flight is waited for, `efmoam.daemon.actuator.CLOSE_WAIT_LONGER` at most), in one nft
    transaction."""
    keys = actuator.pending_keys()
    changing = {key[0] for key in keys if isinstance(key, tuple) and key == loopback_key(key[0])}
    abandoned = actuator.close(longer_for=_changes_loopback)
    looping = {runtime.name for runtime in ports if runtime.port.loopback is not LoopbackStatus.NO_LOOPBACK}
    names = sorted(changing | looping)
    for name, error in zip(names, end_loopbacks(names) if names else [], strict=True):
        if error is not None:
            journal.log("error", "loopback not ended", port=name, error=error)
    if abandoned and changing:
        journal.log("warning", "a loopback change was still on its way at exit; the next start removes it")


def _changes_loopback(job: Job) -> bool:
    return any(isinstance(backend, LoopbackPlane) for backend, _ in job.steps)


def _end_blocks(names: list[str]) -> list[ActionError | None]:
    """Remove the block tables of many ports in one nft transaction; each one's error."""
    results = BlockBackend().carry_out([Step(name, False) for name in names])
    return [result if isinstance(result, ActionError) else None for result in results]
