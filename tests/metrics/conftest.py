"""The daemon lab's fixture (two namespaces, a veth pair, two daemons), for the end-to-end test."""

from __future__ import annotations

from tests.daemon.conftest import lab, pytest_runtest_makereport

__all__ = ["lab", "pytest_runtest_makereport"]
