"""The daemon with only what config/efmoam.service gives it (its user, its two ambient
capabilities, no new privileges), in a network namespace against a peer run as root: it
discovers the peer, takes its port out of service with the block action (nft, run with the
inherited capabilities), saves its state, and restores it after a restart.

Without systemd as PID 1 the unit cannot be started here, so setpriv does what User=,
AmbientCapabilities=, CapabilityBoundingSet= and NoNewPrivileges= do; a private mount
namespace with every mount read-only but the state and runtime directories, and /home and
/root hidden, what ProtectSystem=strict and ProtectHome= do; the kernel's PR_SET_MDWE what
MemoryDenyWriteExecute= does (where the kernel has it: Linux 6.3).  The directories
StateDirectory= and RuntimeDirectory= would make are made the same way (owned by the user,
0750).  The rest of the sandbox is checked by systemd-analyze only (test_unit.py)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from tests.daemon.lab import Lab, is_operational, missing_requirements
from tests.packaging.unprivileged import (
    Account,
    memory_deny_write_execute,
    process_status,
    protect_system_strict,
    readable_runtime,
    service_account,
    setpriv_prefix,
    unit_service_settings,
)

pytestmark = pytest.mark.root

SF_TIMEOUT = 5.0
UNIT = unit_service_settings()
CAP_NET_ADMIN, CAP_NET_RAW = 12, 13


@pytest.fixture
def account() -> Iterator[Account]:
    reason = missing_requirements()
    if reason:
        pytest.skip(reason)
    if shutil.which("setpriv") is None:
        pytest.skip("needs setpriv (util-linux) to drop to the unit's user and capabilities")
    with service_account(UNIT["User"]) as found:
        yield found


@pytest.fixture
def unprivileged_lab(account: Account) -> Iterator[Lab]:
    """The lab with daemon A run as the unit runs it; B stays root.  Every file A uses is
    in a world-traversable work directory; its state and socket directories are the user's."""
    prefix = setpriv_prefix(account, UNIT)
    workdir = Path(tempfile.mkdtemp(prefix="efmoam-lp-"))
    workdir.chmod(0o755)
    runtime = readable_runtime(prefix)
    if runtime is None:
        shutil.rmtree(workdir)
        pytest.skip(f"no Python {sys.version_info.major}.{sys.version_info.minor} that {account.name} may run")
    python, path = runtime
    lab = Lab(workdir)
    try:
        rundir = workdir / "run"
        for directory in (rundir, lab.a.state_dir):  # RuntimeDirectory=, StateDirectory=
            directory.mkdir(mode=0o750)
            os.chown(directory, account.uid, account.gid)
        lab.a.socket = str(rundir / "efmoam.sock")
        lab.a.overrides = {"daemon": {"control_socket_group": account.group}}
        sandbox = protect_system_strict([rundir, lab.a.state_dir]) if UNIT.get("ProtectSystem") == "strict" else []
        mdwe = memory_deny_write_execute(python) if UNIT.get("MemoryDenyWriteExecute") == "yes" else None
        lab.a.python = [*sandbox, *(mdwe or []), *prefix, "env", f"PYTHONPATH={path}", python]
        yield lab
    finally:
        lab.close()
        shutil.rmtree(path, ignore_errors=True)
        shutil.rmtree(workdir, ignore_errors=True)


def capability_mask(*bits: int) -> int:
    return sum(1 << bit for bit in bits)


def test_unit_runs_as_its_user_with_two_capabilities_and_nothing_more(unprivileged_lab: Lab, account: Account) -> None:
    lab = unprivileged_lab
    lab.start()  # both operational: A discovered B and B discovered A

    assert account.uid != 0, "the unit's user is not root"
    status = process_status(lab.a.pid)
    assert status["Uid"].split() == [str(account.uid)] * 4
    assert status["Gid"].split() == [str(account.gid)] * 4
    expected = capability_mask(CAP_NET_ADMIN, CAP_NET_RAW)
    for field in ("CapEff", "CapPrm", "CapAmb", "CapBnd"):
        assert int(status[field], 16) == expected, (field, status[field])
    assert status["NoNewPrivs"] == "1"

    # the control socket: the user's, and its group's (daemon.control_socket_group) to use
    socket_stat = os.stat(lab.a.socket)
    assert (socket_stat.st_uid, socket_stat.st_gid) == (account.uid, account.gid)
    assert stat.S_IMODE(socket_stat.st_mode) == 0o660
    assert lab.a.port()["oper_status"] == "operational"

    # a signal failure takes the port out of service: nft runs with the inherited CAP_NET_ADMIN
    lab.a.set_counters(errored_frames=20, frames_received=2000)
    view = lab.wait_view(lab.a, lambda v: v["out_of_service"], SF_TIMEOUT, "A out of service")
    assert view["action"]["backend"] == "block"
    assert view["action"]["applied"] is True, view["action"]
    assert view["action"]["error"] is None
    assert lab.block_table_present(lab.a), lab.nft_tables(lab.a)
    assert not lab.ping(lab.a)

    # the state is saved by the user, in its state directory
    state_file = lab.a.state_dir / "state.json"

    def saved() -> bool:
        return "veth0" in json.loads(state_file.read_text())["ports"]

    lab.wait_for(saved, 5.0, "the state file to hold veth0", retry_on=(OSError, ValueError, KeyError))
    assert state_file.stat().st_uid == account.uid

    # and read back after a restart, still unprivileged: the port stays out of service
    assert lab.a.stop() == 0, lab.a.log()
    lab.a.start()
    lab.wait_for(partial(is_operational, lab.a), 15.0, "A operational again")
    view = lab.a.port()
    assert view["out_of_service"], view
    assert lab.block_table_present(lab.a)
    assert not lab.a.log_lines(r"permission denied|PermissionError|Traceback"), lab.a.log()
