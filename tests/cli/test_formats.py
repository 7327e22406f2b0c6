"""``-f json`` on decode and replay is their ``--json`` (kept as an alias), before or after
the subcommand; ``efmoam --help`` names the global options."""

from __future__ import annotations

import pytest

from tests.cli.conftest import PCAPS, RunEfmoam

CAPTURE = sorted((PCAPS / "interop").glob("*.pcap*"))[0]


@pytest.mark.parametrize("command", [["decode"], ["replay"]])
def test_f_json_is_the_json_alias(run_efmoam: RunEfmoam, command: list[str]) -> None:
    alias = run_efmoam(*command, str(CAPTURE), "--json")
    assert alias.stdout.lstrip().startswith("{"), alias.stdout[:200]
    for args in ([*command, str(CAPTURE), "-f", "json"], ["-f", "json", *command, str(CAPTURE)]):
        same = run_efmoam(*args)
        assert (same.returncode, same.stdout) == (alias.returncode, alias.stdout), args
    plain = run_efmoam("-f", "json", *command, str(CAPTURE), "-f", "plain")
    assert plain.stdout != alias.stdout and not plain.stdout.lstrip().startswith("{")


def test_help_names_the_global_options(run_efmoam: RunEfmoam) -> None:
    helped = run_efmoam("--help").stdout
    assert "--socket TEXT" in helped and "-f, --format [plain|json]" in helped
    assert "watch" in helped
