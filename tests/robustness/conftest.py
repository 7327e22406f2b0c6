"""The daemon lab (two namespaces, a veth pair, two daemons) for the campaign's end-to-end tests."""

from tests.daemon.conftest import lab, pytest_runtest_makereport

__all__ = ["lab", "pytest_runtest_makereport"]
