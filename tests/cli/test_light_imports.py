"""What the operator's everyday commands import: ``show port`` and ``watch`` start in well
under 100 ms only without scapy, yaml, the configuration loader or the daemon (the
benchmark is tests/bench/test_cli_startup_bench.py).  Real runs (``-X importtime``),
against a socket nobody listens on: everything is imported before the first connect."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.cli.conftest import REPO, subprocess_env

HEAVY = ("scapy", "yaml", "efmoam.config", "efmoam.daemon.main", "efmoam.daemon.runtime", "efmoam.core.port")


@pytest.mark.parametrize(
    "args", [["show", "port"], ["show", "port", "eth0", "-f", "json"], ["watch"], ["watch", "eth0", "-f", "json"]]
)
def test_show_and_watch_import_nothing_heavy(args: list[str]) -> None:
    command = [sys.executable, "-X", "importtime", "-m", "efmoam.cli", *args, "--socket", "/nonexistent/efmoam.sock"]
    result = subprocess.run(command, capture_output=True, text=True, env=subprocess_env(), cwd=REPO, check=False)
    assert result.returncode == 1 and "not running" in (result.stdout + result.stderr)
    imported = {
        line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")
    }
    assert "efmoam.cli.main" in imported
    assert not [name for name in imported if name.startswith(HEAVY)], sorted(imported)
