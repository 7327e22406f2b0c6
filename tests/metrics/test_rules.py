"""The alert rules, checked and unit-tested with promtool (Debian package ``prometheus``)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "config" / "prometheus" / "efmoam-rules.yaml"
TESTS = Path(__file__).parent / "rules_test.yaml"

pytestmark = pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool (apt-get install prometheus)")


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["promtool", *args], capture_output=True, text=True, timeout=60, check=False)


def test_the_rules_are_valid() -> None:
    result = promtool("check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_rules_fire_and_resolve_as_specified() -> None:
    result = promtool("test", "rules", str(TESTS))
    assert result.returncode == 0, result.stdout + result.stderr
