"""The state file, hostile: `StateStore.load` never raises and never blocks; a file it
cannot use is set aside (``state.bad``) and reported, and the store works on from empty;
a port snapshot the core refuses is set aside (a copy: the other ports are good) and the
problem kept for show and metrics.

Each load of a hostile file runs in a child process with a timeout and a memory limit
(`files_support.run_child`): a FIFO must not block it, /dev/zero must not fill memory.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from efmoam.core import OamPort, PortSettings
from efmoam.daemon.state import StateStore
from efmoam.linux.files import STATE_FILE_LIMIT
from tests.robustness.files_support import PROMPT, make, run_child

MAC = "02:00:00:00:00:0a"
GOOD_PORT = OamPort(PortSettings(), MAC, now=0.0).saved_state()
GOOD = json.dumps({"version": 1, "ports": {"eth1": GOOD_PORT}}, separators=(",", ":"))

#: file contents of the wrong shape, each set aside whole
WRONG_SHAPES = {
    "list": "[]",
    "version_1e400": '{"version": 1e400}',
    "version_true": '{"version": true, "ports": {}}',
    "version_2": '{"version": 2, "ports": {}}',
    "no_ports": '{"version": 1}',
    "ports_list": '{"version": 1, "ports": []}',
    "truncated": GOOD[: len(GOOD) // 2],
    "empty": "",
    "deep_in_version": '{"version": ' + "[" * 5000 + "]" * 5000 + ', "ports": {}}',
    "huge_integer": '{"version": 1' + "0" * 5000 + ', "ports": {}}',
    "nan": '{"version": NaN, "ports": {}}',
}

KINDS = ["dev_zero", "fifo", "directory", "socket", "too_large", "not_utf8", "deep_json", *WRONG_SHAPES]

#: load, then show that the store works on: a port updated and saved
LOAD = """
import os
from efmoam.daemon.state import StateStore
directory = sys.argv[1]
store = StateStore(directory)
try:
    problem = store.load()
except BaseException as exc:
    report(**raised(exc))
    raise SystemExit(0)
loaded_for = time.monotonic() - started
ports = sorted(store.ports)
store.update("eth9", {"version": 2, "next_index": 1, "log": [], "active": []}, 100.0)
store.save()
with open(os.path.join(directory, "state.json")) as stream:
    saved = json.load(stream)
report(
    outcome="returned", problem=problem, ports=ports, loaded_for=loaded_for, saved=sorted(saved["ports"]),
    set_aside_problem=getattr(store, "set_aside_problem", problem), listing=sorted(os.listdir(directory)),
)
"""


def hostile_state(directory: Path, kind: str) -> Path:
    directory.mkdir()
    path = directory / "state.json"
    if kind in WRONG_SHAPES:
        path.write_text(WRONG_SHAPES[kind])
        return path
    return make(kind, path, valid=GOOD, padding_to=STATE_FILE_LIMIT + 1)


@pytest.mark.parametrize("kind", KINDS)
def test_a_hostile_state_file_is_set_aside_and_reported(tmp_path: Path, kind: str) -> None:
    directory = tmp_path / "state"
    hostile_state(directory, kind)
    result = run_child(LOAD, str(directory))
    assert result["outcome"] == "returned", result
    assert result["loaded_for"] < PROMPT, result
    problem = result["problem"]
    assert problem is not None and "\n" not in problem, result
    assert problem.startswith(f"state file {directory / 'state.json'} "), result
    assert f"set aside as {directory / 'state.bad'}" in problem, result
    assert result["set_aside_problem"] == problem
    assert result["ports"] == []
    assert result["saved"] == ["eth9"]  # the daemon starts and saves again
    assert result["listing"] == ["state.bad", "state.json"]


def test_the_set_aside_file_is_the_file_that_was_there(tmp_path: Path) -> None:
    directory = tmp_path / "state"
    path = hostile_state(directory, "truncated")
    store = StateStore(str(directory))
    problem = store.load()
    assert problem is not None and "not JSON" in problem
    assert not path.exists()
    assert (directory / "state.bad").read_text() == WRONG_SHAPES["truncated"]
    assert (store.set_asides, store.set_aside_problem, store.ports, store.dirty) == (1, problem, {}, False)


def test_a_port_entry_that_is_not_an_object_is_dropped_and_the_file_copied(tmp_path: Path) -> None:
    directory = tmp_path / "state"
    directory.mkdir()
    text = json.dumps({"version": 1, "ports": {"eth0": [], "eth1": GOOD_PORT}})
    (directory / "state.json").write_text(text)
    store = StateStore(str(directory))
    problem = store.load()
    assert problem == (
        f"state file {directory / 'state.json'}: saved state of eth0 is not an object; not restored;"
        f" the file is copied to {directory / 'state.bad'}"
    )
    assert store.ports == {"eth1": GOOD_PORT}  # the good port is kept
    assert (directory / "state.bad").read_text() == (directory / "state.json").read_text() == text
    assert store.dirty  # the file still holds eth0: written at the next flush
    assert store.flush(10.0)
    assert json.loads((directory / "state.json").read_text()) == {"version": 1, "ports": {"eth1": GOOD_PORT}}


def test_a_port_the_core_cannot_restore_is_set_aside(tmp_path: Path) -> None:
    directory = tmp_path / "state"
    directory.mkdir()
    bad_port = {**GOOD_PORT, "next_index": 1e400}
    text = json.dumps({"version": 1, "ports": {"eth0": bad_port, "eth1": GOOD_PORT}})
    (directory / "state.json").write_text(text)
    store = StateStore(str(directory))
    assert store.load() is None  # the top level is fine
    # what the daemon does when it adds the ports
    with pytest.raises(ValueError, match="next_index") as refused:
        OamPort(PortSettings(), MAC, now=0.0).restore(store.ports["eth0"], now=0.0)
    problem = store.set_aside(refused.value, port="eth0")
    assert problem == (
        f"state file {directory / 'state.json'}: saved state of eth0 not restored: saved next_index inf is not"
        f" a positive integer; the file is copied to {directory / 'state.bad'}"
    )
    assert (store.set_aside_problem, store.set_asides) == (problem, 1)
    assert (directory / "state.bad").read_text() == text  # a copy: eth1 is in it too
    assert OamPort(PortSettings(), MAC, now=0.0).restore(store.ports["eth1"], now=0.0) == []
    assert "eth0" not in store.ports and store.dirty
    store.flush(5.0)
    assert json.loads((directory / "state.json").read_text()) == {"version": 1, "ports": {"eth1": GOOD_PORT}}


def test_set_aside_without_a_port_keeps_the_store(tmp_path: Path) -> None:
    directory = tmp_path / "state"
    directory.mkdir()
    (directory / "state.json").write_text(GOOD)
    store = StateStore(str(directory))
    assert store.load() is None
    problem = store.set_aside("port eth1: something the core refused")
    assert problem.endswith(f"port eth1: something the core refused; the file is copied to {directory / 'state.bad'}")
    assert store.ports == {"eth1": GOOD_PORT}
    assert (directory / "state.bad").read_text() == GOOD


def test_a_set_aside_copy_of_a_file_gone_bad_is_bounded_too(tmp_path: Path) -> None:
    directory = tmp_path / "state"
    directory.mkdir()
    (directory / "state.json").write_text(GOOD)
    store = StateStore(str(directory))
    assert store.load() is None
    (directory / "state.json").unlink()
    make("fifo", directory / "state.json")  # swapped after the load: the copy must not block
    result = run_child(
        """
        from efmoam.daemon.state import StateStore
        store = StateStore(sys.argv[1])
        store.ports = {"eth1": {}}
        report(outcome="returned", problem=store.set_aside("bad", port="eth1"))
        """,
        str(directory),
    )
    assert result["outcome"] == "returned", result
    assert result["elapsed"] < PROMPT
    assert result["problem"].endswith("the file could not be copied aside (Not a regular file (a FIFO))")


def test_no_file_is_no_problem(tmp_path: Path) -> None:
    store = StateStore(str(tmp_path / "missing"))
    assert store.load() is None
    assert (store.ports, store.set_aside_problem) == ({}, None)
