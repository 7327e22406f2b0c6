"""The CLI as operators use it, against a real daemon (root): ``--socket`` and ``-f`` before
the subcommand (the subcommand's own option wins, the group's wins over $EFMOAM_SOCKET),
``-f json`` on every command that changes something, and refusals in an operator's words."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.daemon.lab import PYTHON, ROOT, Lab, efmoam

pytestmark = pytest.mark.root


def cli(*args: str, socket_env: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("EFMOAM_SOCKET", None)
    if socket_env is not None:
        env["EFMOAM_SOCKET"] = socket_env
    command = [PYTHON, "-m", "efmoam.cli", *args]
    return subprocess.run(command, check=False, capture_output=True, text=True, env=env, timeout=30)


def test_global_options_before_the_subcommand(lab: Lab) -> None:
    lab.start(lab.a, operational=False)
    socket, nowhere = lab.a.socket, "/nonexistent/efmoam.sock"
    as_json = cli("-f", "json", "--socket", socket, "show", "port")
    assert as_json.returncode == 0, as_json.stderr
    assert [port["name"] for port in json.loads(as_json.stdout)["ports"]] == ["veth0"]
    plain = cli("--socket", socket, "show", "port")
    assert (plain.returncode, plain.stdout.split()[0]) == (0, "Port")
    # the subcommand's own option wins over the group's
    assert cli("--socket", nowhere, "show", "port", "--socket", socket).returncode == 0
    assert cli("-f", "json", "--socket", socket, "show", "port", "-f", "plain").stdout == plain.stdout
    # the group's --socket wins over $EFMOAM_SOCKET, which is the default otherwise
    assert cli("--socket", socket, "show", "port", socket_env=nowhere).returncode == 0
    assert cli("show", "port", socket_env=socket).returncode == 0
    missing = cli("show", "port", socket_env=nowhere)
    assert (missing.returncode, missing.stderr) == (
        1,
        f"efmoam: the efmoam daemon is not running (no answer on {nowhere})\n",
    )


def test_json_from_the_commands_that_change_something(lab: Lab) -> None:
    lab.start(lab.a, operational=False)
    ask = lambda *args: json.loads(efmoam("-f", "json", "--socket", lab.a.socket, *args).stdout)  # noqa: E731
    assert ask("clear", "port", "veth0", "events") == {
        "schema": 1, "port": "veth0", "cleared": "events", "location": "both"
    }  # fmt: skip
    assert ask("clear", "port", "veth0", "events", "remote")["location"] == "remote"
    assert ask("clear", "port", "veth0", "statistics") == {"schema": 1, "port": "veth0", "cleared": "statistics"}
    assert ask("admin", "veth0", "disabled") == {
        "schema": 1, "port": "veth0", "admin_state": "disabled", "override": True
    }  # fmt: skip
    assert ask("admin", "veth0", "config") == {
        "schema": 1, "port": "veth0", "admin_state": "enabled", "override": False
    }  # fmt: skip


def refusal(lab: Lab, *args: str) -> tuple[str, dict[str, str]]:
    """The plain refusal (stderr) and the JSON one (stdout) of ``efmoam ARGS``, both exit 1."""
    plain, as_json = lab.a.cli(*args), lab.a.cli(*args, "-f", "json")
    assert (plain.returncode, plain.stdout, as_json.returncode, as_json.stderr) == (1, "", 1, ""), (plain, as_json)
    error = json.loads(as_json.stdout)["error"]
    assert plain.stderr == f"efmoam: {error['message']}\n"
    return error["message"], error


def test_refusals_in_an_operators_words(lab: Lab) -> None:
    lab.start(lab.a, operational=False)  # no peer: B is not running
    message, error = refusal(lab, "loopback", "veth0", "start")
    assert (message, error["code"]) == ("cannot start loopback on veth0: no peer discovered yet", "not_allowed")
    message, _ = refusal(lab, "loopback", "veth0", "stop")
    assert message == "cannot stop loopback on veth0: no loopback of ours to stop: no loopback is running"
    message, _ = refusal(lab, "variables", "veth0", "251")
    assert message == "cannot ask the peer on veth0 for variables: no peer discovered yet"
    message, error = refusal(lab, "clear", "port", "eth0", "events")
    assert (message, error["code"]) == ("eth0 is not a port efmoam manages (ports: veth0)", "unknown_port")
    assert lab.a.cli("admin", "veth0", "disabled").returncode == 0
    message, _ = refusal(lab, "loopback", "veth0", "start")
    assert message == "cannot start loopback on veth0: OAM is administratively disabled on this port"
    assert lab.a.cli("admin", "veth0", "config").returncode == 0
    lab.start(lab.b)  # discovery; B ignores Loopback Control (the default)
    message, _ = refusal(lab, "loopback", "veth0", "start")
    assert message == (
        "cannot start loopback on veth0: the peer does not offer remote loopback (its OAM configuration leaves it out)"
    )
    assert lab.a.running
