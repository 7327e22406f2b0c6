"""``efmoam config check``: through click's CliRunner and as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from efmoam.cli import main
from tests.cli_runner import CliRunner

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


def test_without_a_file_it_checks_efmoam_config_and_says_so(files: dict[str, Path]) -> None:
    result = CliRunner().invoke(main, ["config", "check"], env={"EFMOAM_CONFIG": str(files["valid"])})
    assert (result.exit_code, result.stdout) == (0, f"{files['valid']}: ok, 2 port rules\n")
    assert result.stderr == f"efmoam config check: checking {files['valid']} ($EFMOAM_CONFIG)\n"
    result = CliRunner().invoke(main, ["config", "check"], env={"EFMOAM_CONFIG": str(files["invalid"])})
    assert result.exit_code == 1
    assert result.stderr.splitlines()[1:] == [line.format(files["invalid"]) for line in INVALID_PROBLEMS]


def test_without_a_file_or_efmoam_config_it_checks_etc_efmoam() -> None:
    result = CliRunner().invoke(main, ["config", "check"], env={"EFMOAM_CONFIG": None})
    first = "efmoam config check: checking /etc/efmoam/efmoam.yaml (no FILE given)"
    assert result.stderr.splitlines()[0] == first
    assert result.exit_code == (0 if os.path.isfile("/etc/efmoam/efmoam.yaml") else 2)


def test_json_output(files: dict[str, Path]) -> None:
    status, stdout, stderr = _invoke(str(files["valid"]), "-f", "json")
    assert (status, stderr) == (0, "")
    assert json.loads(stdout) == {
        "schema": 1, "file": str(files["valid"]), "ok": True, "port_rules": 2, "problems": [], "error": None
    }  # fmt: skip
    status, stdout, stderr = _invoke(str(files["invalid"]), "-f", "json")
    report = json.loads(stdout)
    assert (status, stderr, report["ok"], report["port_rules"], report["error"]) == (1, "", False, None, None)
    assert [f"{{}}:{p['line']}:{p['column']}: {p['path']}: {p['message']}" for p in report["problems"]] == (
        INVALID_PROBLEMS
    )
    status, stdout, stderr = _invoke(str(files["missing"]), "-f", "json")
    assert (status, stderr) == (2, "")
    assert json.loads(stdout)["error"] == {
        "code": "unreadable", "message": f"cannot read {files['missing']}: No such file or directory"
    }  # fmt: skip
    # -f before the subcommand does the same; the subcommand's own -f wins
    result = CliRunner().invoke(main, ["-f", "json", "config", "check", str(files["valid"])])
    assert json.loads(result.stdout)["ok"] is True
    result = CliRunner().invoke(main, ["-f", "json", "config", "check", str(files["valid"]), "-f", "plain"])
    assert result.stdout == f"{files['valid']}: ok, 2 port rules\n"


def test_config_default_prints_the_default_configuration_byte_for_byte() -> None:
    result = CliRunner().invoke(main, ["config", "default"])
    assert result.exit_code == 0
    assert result.stdout == (REPO / "efmoam" / "config" / "default.yaml").read_text(encoding="utf-8")
    assert result.stdout == (REPO / "config" / "default.yaml").read_text(encoding="utf-8")


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
