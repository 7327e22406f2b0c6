"""``efmoam config check``: through click's CliRunner and as a real process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from efmoam.cli import main

REPO = Path(__file__).resolve().parents[2]

VALID = """\
ports:
  - match: "eth*"
  - match: veth0
"""

INVALID = """\
defaults:
  mode: on
  oui: 001122
ports:
  - match: eth0
    multiplier: 20
"""

INVALID_PROBLEMS = [
    "{}:2:9: defaults.mode: must be one of active, passive, not the boolean on"
    " (YAML 1.1 reads unquoted yes/no/on/off as booleans)",
    '{}:3:8: defaults.oui: quote the OUI: YAML reads 001122 as the number 594; write "001122"',
    "{}:6:17: ports.0.multiplier: must be between 2 and 10, not 20",
]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    valid = tmp_path / "valid.yaml"
    valid.write_text(VALID)
    invalid = tmp_path / "invalid.yaml"
    invalid.write_text(INVALID)
    one = tmp_path / "one.yaml"
    one.write_text("ports: [{match: eth0}]\n")
    return {"valid": valid, "invalid": invalid, "one": one, "missing": tmp_path / "missing.yaml", "dir": tmp_path}


def _invoke(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["config", "check", *args], input=stdin)
    return result.exit_code, result.stdout, result.stderr


def test_a_valid_file(files: dict[str, Path]) -> None:
    assert _invoke(str(files["valid"])) == (0, f"{files['valid']}: ok, 2 port rules\n", "")
    assert _invoke(str(files["one"])) == (0, f"{files['one']}: ok, 1 port rule\n", "")


def test_an_invalid_file_prints_every_problem_on_stderr(files: dict[str, Path]) -> None:
    status, stdout, stderr = _invoke(str(files["invalid"]))
    assert (status, stdout) == (1, "")
    assert stderr.splitlines() == [line.format(files["invalid"]) for line in INVALID_PROBLEMS]


def test_an_unreadable_file(files: dict[str, Path]) -> None:
    assert _invoke(str(files["missing"])) == (
        2,
        "",
        f"efmoam config check: cannot read {files['missing']}: No such file or directory\n",
    )
    status, stdout, stderr = _invoke(str(files["dir"]))
    assert (status, stdout) == (2, "")
    assert stderr == f"efmoam config check: cannot read {files['dir']}: Is a directory\n"


def test_standard_input() -> None:
    assert _invoke("-", stdin=VALID) == (0, "<stdin>: ok, 2 port rules\n", "")
    status, _, stderr = _invoke("-", stdin=INVALID)
    assert status == 1
    assert stderr.splitlines() == [line.format("<stdin>") for line in INVALID_PROBLEMS]


def test_an_empty_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert _invoke(str(empty)) == (1, "", f"{empty}:1:1: empty configuration\n")


def test_the_shipped_files_pass() -> None:
    for path in [REPO / "config" / "default.yaml", *(REPO / "config" / "examples").glob("*.yaml")]:
        status, stdout, stderr = _invoke(str(path))
        assert (status, stderr) == (0, ""), path
        assert stdout.startswith(f"{path}: ok, ")


def test_a_missing_argument_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["config", "check"])
    assert result.exit_code == 2
    assert "Missing argument 'FILE'" in result.stderr


# -- a real process --------------------------------------------------------------------------------


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, check=False, capture_output=True, text=True, env=_env(), cwd=REPO, timeout=120)


@pytest.mark.parametrize("kind", ["valid", "invalid", "missing"])
def test_python_m_efmoam_cli(files: dict[str, Path], kind: str) -> None:
    path = files[kind]
    done = _run(sys.executable, "-m", "efmoam.cli", "config", "check", str(path))
    if kind == "valid":
        assert (done.returncode, done.stdout, done.stderr) == (0, f"{path}: ok, 2 port rules\n", "")
    elif kind == "invalid":
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr.splitlines() == [line.format(path) for line in INVALID_PROBLEMS]
    else:
        assert (done.returncode, done.stdout) == (2, "")
        assert done.stderr == f"efmoam config check: cannot read {path}: No such file or directory\n"


def test_the_installed_entry_point(files: dict[str, Path]) -> None:
    script = Path(sys.executable).parent / "efmoam"
    if not script.exists():
        pytest.skip("the efmoam entry point is not installed in this environment")
    assert _run(str(script), "config", "check", str(files["valid"])).returncode == 0
    assert _run(str(script), "config", "check", str(files["invalid"])).returncode == 1
    assert _run(str(script), "config", "check", str(files["missing"])).returncode == 2


def test_help_does_not_import_the_config_package_or_scapy() -> None:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from efmoam.cli import main\n"
        "assert CliRunner().invoke(main, ['config', '--help']).exit_code == 0\n"
        "assert CliRunner().invoke(main, ['--help']).exit_code == 0\n"
        "print(sorted(name for name in sys.modules if name.startswith(('scapy', 'efmoam.config', 'yaml'))))\n"
    )
    done = _run(sys.executable, "-c", code)
    assert (done.returncode, done.stdout, done.stderr) == (0, "[]\n", "")
