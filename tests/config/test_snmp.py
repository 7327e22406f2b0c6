"""daemon.snmp: the subagent's settings, and the AgentX addresses it accepts."""

from __future__ import annotations

import socket

import pytest

from efmoam.config.model import agentx_address
from tests.config.support import load, problems


def test_off_by_default() -> None:
    snmp = load("ports: [{match: eth0}]\n").daemon.snmp
    assert (snmp.enabled, snmp.agentx_socket, snmp.writes) == (False, "/var/agentx/master", False)


def test_a_full_section() -> None:
    snmp = load(
        """
        daemon:
          snmp: {enabled: true, agentx_socket: "tcp:localhost:3161", writes: true}
        """
    ).daemon.snmp
    assert (snmp.enabled, snmp.agentx_socket, snmp.writes) == (True, "tcp:localhost:3161", True)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/var/agentx/master", (socket.AF_UNIX, "/var/agentx/master")),
        ("unix:/run/snmp/agentx", (socket.AF_UNIX, "/run/snmp/agentx")),
        ("tcp:localhost:3161", (socket.AF_INET, ("127.0.0.1", 3161))),
        ("tcp:192.0.2.1", (socket.AF_INET, ("192.0.2.1", 705))),
        ("tcp:[::1]:705", (socket.AF_INET6, ("::1", 705))),
    ],
)
def test_addresses(text: str, expected: tuple[int, object]) -> None:
    assert agentx_address(text) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("agentx", "is not an AgentX address"),
        ("udp:127.0.0.1:705", "is not an AgentX address"),
        ("tcp:127.0.0.1:0", "a port from 1 to 65535"),
        ("tcp:127.0.0.1:x", "a port from 1 to 65535"),
        ("tcp:snmp.example.net:705", "not a name to resolve"),  # resolving could block the loop
        ("tcp:", "is not an AgentX address"),
    ],
)
def test_bad_addresses_are_refused_with_their_place(value: str, message: str) -> None:
    (problem,) = problems(f'daemon:\n  snmp:\n    agentx_socket: "{value}"\n')
    assert problem.startswith("efmoam.yaml:3:") and "daemon.snmp.agentx_socket" in problem and message in problem


def test_a_wrong_type_is_refused() -> None:
    (problem,) = problems("daemon:\n  snmp:\n    writes: maybe\n")
    assert "daemon.snmp.writes" in problem
