"""Fixtures for the SNMP tests: a private snmpd as AgentX master (`snmpd`), a private
snmptrapd (`trap_receiver`) and an snmpd that sends it v2c traps (`snmpd_with_traps`);
see tests/snmp/agent.py; and the daemons' `lab` (tests/daemon/conftest.py).  They skip
when net-snmp, the reference MIBs or root are missing;
mark the tests that use them ``pytest.mark.root``.  A failed test's report carries the
daemons' logs."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.conftest import lab  # noqa: F401 - the fixture
from tests.daemon.lab import Lab
from tests.snmp.agent import Snmpd, TrapReceiver, missing_requirements


@pytest.fixture
def snmp_requirements() -> None:
    """Skips the test when this machine cannot run net-snmp's daemons for it."""
    reason = missing_requirements()
    if reason:
        pytest.skip(reason)


@pytest.fixture
def trap_receiver(snmp_requirements: None, tmp_path: Path) -> Iterator[TrapReceiver]:
    """A started snmptrapd on 127.0.0.1:<free port>, in tmp_path/snmptrapd."""
    receiver = TrapReceiver(tmp_path / "snmptrapd")
    try:
        receiver.start()
        yield receiver
    finally:
        receiver.close()


@pytest.fixture
def snmpd(snmp_requirements: None, tmp_path: Path) -> Iterator[Snmpd]:
    """A started snmpd (AgentX master on tmp_path/snmpd/agentx/master, no trap sink)."""
    agent = Snmpd(tmp_path / "snmpd")
    try:
        agent.start()
        yield agent
    finally:
        agent.close()


@pytest.fixture
def snmpd_with_traps(trap_receiver: TrapReceiver, tmp_path: Path) -> Iterator[Snmpd]:
    """A started snmpd whose trap2sink is `trap_receiver` (v2c, community public).  snmpd
    itself sends coldStart when it starts and nsNotifyShutdown when it stops: wait for
    traps by name or OID (`TrapReceiver.wait_for_trap`), not by position."""
    agent = Snmpd(tmp_path / "snmpd-traps", trap_receiver=trap_receiver)
    try:
        agent.start()
        yield agent
    finally:
        agent.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    for name, value in getattr(item, "funcargs", {}).items():
        if isinstance(value, Snmpd | TrapReceiver):
            report.sections.append((f"{name} log ({value.directory})", value.log()))
        elif isinstance(value, Lab):  # the end-to-end tests' daemons (tests/daemon/conftest.py)
            report.sections.append(("efmoam daemon logs", value.logs()))
