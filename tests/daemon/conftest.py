"""Fixtures for the daemon's end-to-end tests: `lab` (two namespaces, a veth pair, two
daemons ready to start) and a report section with the daemons' logs when a test fails."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.lab import Lab, missing_requirements


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    """Two namespaces joined by veth0/veth1; daemons configured, not started.

    Set ``lab.a.overrides`` / ``lab.b.overrides`` (merged into the configuration) before
    ``lab.start()``.  Teardown kills the daemons and deletes the namespaces, whatever
    the test did; the logs stay under tmp_path.
    """
    reason = missing_requirements()
    if reason:
        pytest.skip(reason)
    built = Lab(tmp_path)
    try:
        yield built
    finally:
        built.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    built = getattr(item, "funcargs", {}).get("lab")
    if isinstance(built, Lab) and report.when == "call" and report.failed:
        report.sections.append(("efmoam daemon logs", built.logs()))
