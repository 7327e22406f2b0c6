"""debian/manpage.py: efmoam(8) has every command and option of the CLI, renders without
groff warnings, and help texts cannot inject roff."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import click
import pytest

from efmoam.cli.main import main as efmoam_command
from tests.packaging.unprivileged import ROOT


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("efmoam_manpage", ROOT / "debian" / "manpage.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


manpage = load_generator()


def visible_commands(command: click.Command, path: tuple[str, ...]) -> list[tuple[tuple[str, ...], click.Command]]:
    found = [(path, command)]
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            if not sub.hidden:
                found += visible_commands(sub, (*path, name))
    return found


def test_every_command_and_option_is_in_the_page() -> None:
    page = manpage.page("9.9.9")
    commands = visible_commands(efmoam_command, ("efmoam",))[1:]
    assert {"daemon", "show", "clear", "config"} <= {path[1] for path, _ in commands}
    for path, command in commands:
        heading = f'.SS "{manpage.escape(" ".join(path))}"'
        assert heading in page, heading
        section = page.split(heading, 1)[1].split("\n.SS ", 1)[0]
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                for name in param.opts:
                    assert manpage.escape(name) in section, (path, name)
    assert '.TH EFMOAM 8 "' in page and '"efmoam 9.9.9"' in page


def test_help_text_cannot_inject_roff() -> None:
    hostile = "first\n.SH OWNED\n'br\n\\fBbold\\fR \\(em ``ok``"
    escaped = manpage.escape(hostile)
    lines = escaped.splitlines()
    assert lines[1] == "\\&.SH OWNED"  # a request at the start of a line is shown, not run
    assert lines[2] == "\\&'br"
    assert "\\fBbold" not in escaped and "\\efBbold\\efR \\e(em" in escaped
    assert escaped.endswith("\\fBok\\fR")  # ``literal`` is the one markup kept


def test_preformatted_paragraphs_stay_as_written() -> None:
    roff = "\n".join(manpage.paragraphs("Intro text\n    refilled.\n\n\b\n--as MAC: one\n--to IFACE: two"))
    assert ".PP\nIntro text refilled." in roff
    assert ".nf\n\\-\\-as MAC: one\n\\-\\-to IFACE: two\n.fi" in roff


@pytest.mark.skipif(shutil.which("groff") is None, reason="needs groff (groff-base)")
def test_page_renders_without_warnings(tmp_path: Path) -> None:
    source = tmp_path / "efmoam.8"
    source.write_text(manpage.page("9.9.9"))
    result = subprocess.run(
        ["groff", "-man", "-Tutf8", "-ww", "-z", str(source)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0 and result.stderr == "", result.stderr
