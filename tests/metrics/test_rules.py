"""The alert rules, checked and unit-tested with promtool (Debian package ``prometheus``)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from efmoam.daemon.metrics.schema import BASIC

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


def test_the_rules_read_only_what_basic_detail_exports() -> None:
    """Every metric an alert reads is one that ``daemon.metrics.detail: basic`` keeps."""
    basic = {family.name for family in BASIC}
    exprs = [rule["expr"] for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]]
    read = {name for expr in exprs for name in re.findall(r"\befmoam_[a-z_]+", expr)}
    assert len(read) >= 6
    assert read <= basic, read - basic
    # of the state sets basic keeps the current state only: a rule may compare with 1, never 0
    assert not any(re.search(r"efmoam_(oper_status|monitor_state)\{[^}]*\}\s*(==\s*0|!=\s*1|<)", e) for e in exprs)
