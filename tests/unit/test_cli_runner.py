"""tests.cli_runner: stdout and stderr apart on every supported click (.ci/bookworm runs 8.1.3)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from tests.cli_runner import CliRunner

TESTS = Path(__file__).resolve().parents[1]


@click.command()
def _speaks() -> None:
    click.echo("to stdout")
    click.echo("to stderr by click", err=True)  # click.echo flushes
    print("to stderr, not flushed", file=sys.stderr)


def test_stdout_and_stderr_are_captured_apart() -> None:
    result = CliRunner().invoke(_speaks)
    assert result.exit_code == 0
    assert result.stdout == "to stdout\n"
    assert result.stderr == "to stderr by click\nto stderr, not flushed\n"


def test_no_test_uses_clicks_runner_directly() -> None:
    """click's own runner mixes the streams on click 8.1: every test takes the one above."""
    direct = re.compile(r"^\s*from click\.testing import .*\bCliRunner\b|click\.testing\.CliRunner\(", re.MULTILINE)
    offenders = [
        str(path.relative_to(TESTS))
        for path in TESTS.rglob("*.py")
        if path.name != "cli_runner.py" and direct.search(path.read_text())
    ]
    assert offenders == []
