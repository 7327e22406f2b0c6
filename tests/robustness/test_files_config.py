"""The configuration file, hostile: `load_config` (what the daemon calls at start and on
SIGHUP) raises only `ConfigError` or `OSError`, at once; ``efmoam config check`` prints
a clean error (never a traceback) and exits 1 (invalid) or 2 (unreadable), at once.

Every read runs in a child process with a timeout and a memory limit
(`files_support.run_child`): a FIFO must not block it, /dev/zero must not fill memory.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from efmoam.config.loader import ConfigError, load_config_text
from efmoam.linux.files import CONFIG_FILE_LIMIT
from tests.robustness.files_support import CHILD_TIMEOUT, PROMPT, REPO, _limit_memory, make, run_child

VALID = "ports:\n  - match: eth0\n"

#: hostile kind -> how it must be refused: "unreadable" (OSError) or "invalid" (ConfigError)
KINDS = {
    "dev_zero": "unreadable",
    "fifo": "unreadable",
    "directory": "unreadable",
    "socket": "unreadable",
    "too_large": "unreadable",
    "not_utf8": "invalid",
    "deep_json": "invalid",
    "deep_yaml_600": "invalid",
    "deep_yaml_100000": "invalid",
    "alias_bomb": "invalid",
    "alias_walk_bomb": "invalid",
}


def walk_bomb() -> str:
    """Aliases where the loader walks: 4,000 port rules that are one rule of 2,000 unknown
    keys (composed in linear time, but 8,000,000 problems to report without a limit)."""
    keys = ", ".join(f"k{index}: 0" for index in range(2000))
    return f"r: &r {{match: eth0, {keys}}}\nports: [" + ", ".join(["*r"] * 4000) + "]\n"


def hostile(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"{kind}.yaml"
    if kind == "alias_walk_bomb":
        path.write_text(walk_bomb())
        return path
    return make(kind, path, valid=VALID + "#", padding_to=CONFIG_FILE_LIMIT + 1)


LOAD = """
from efmoam.config.loader import ConfigError, load_config
try:
    config = load_config(sys.argv[1])
    report(outcome="returned", value=repr(config)[:200])
except BaseException as exc:
    report(**raised(exc))
"""


@pytest.mark.parametrize("kind", KINDS)
def test_load_config_refuses_a_hostile_file_at_once(tmp_path: Path, kind: str) -> None:
    path = hostile(tmp_path, kind)
    result = run_child(LOAD, str(path))
    assert result["outcome"] == "raised", result
    expected = "OSError" if KINDS[kind] == "unreadable" else "ConfigError"
    assert expected in result["mro"], result  # what the daemon's reload catches
    assert result["elapsed"] < PROMPT, result
    assert str(path) in result["message"], result
    if KINDS[kind] == "unreadable":
        assert result["lines"] == 1, result


@pytest.mark.parametrize("kind", ["deep_json", "deep_yaml_600", "deep_yaml_100000"])
def test_deep_nesting_is_one_problem_naming_the_file(tmp_path: Path, kind: str) -> None:
    path = hostile(tmp_path, kind)
    result = run_child(LOAD, str(path))
    assert result["type"] == "ConfigError", result
    assert result["lines"] == 1, result
    assert result["message"].startswith(f"{path}:"), result
    assert "nested too deeply" in result["message"], result


def test_an_alias_bomb_is_refused_by_its_expansion(tmp_path: Path) -> None:
    for kind in ("alias_bomb", "alias_walk_bomb"):
        result = run_child(LOAD, str(hostile(tmp_path, kind)))
        assert result["type"] == "ConfigError", result
        assert "aliases expand too far" in result["message"], result


def test_a_config_at_the_limit_is_still_read(tmp_path: Path) -> None:
    path = make("too_large", tmp_path / "big.yaml", valid=VALID + "#", padding_to=CONFIG_FILE_LIMIT)
    result = run_child(LOAD, str(path))
    assert result["outcome"] == "returned", result


def test_a_whole_number_of_hundreds_of_digits_is_a_problem() -> None:
    for text in (
        "daemon: {counter_interval: 1" + "0" * 400 + "}\n",
        "daemon: {rx_rate_limit: 1" + "0" * 400 + "}\n",
        "defaults: {link_monitoring: {errored_frame_period: {window: 1" + "0" * 400 + "}}}\n",
    ):
        with pytest.raises(ConfigError, match="is far too large a number"):
            load_config_text(text, "big.yaml")


# -- efmoam config check ----------------------------------------------------------------------


def check(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    try:
        return subprocess.run(
            [sys.executable, "-m", "efmoam.cli", "config", "check", *args], check=False, input=stdin,
            capture_output=True, timeout=CHILD_TIMEOUT, env=env, cwd=REPO, preexec_fn=_limit_memory,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"efmoam config check {' '.join(args)} blocked for {CHILD_TIMEOUT} s")


@pytest.mark.parametrize("kind", KINDS)
def test_config_check_prints_a_clean_error(tmp_path: Path, kind: str) -> None:
    path = hostile(tmp_path, kind)
    done = check(str(path))
    stderr = done.stderr.decode(errors="replace")
    assert b"Traceback" not in done.stderr, stderr
    assert done.stdout == b""
    if KINDS[kind] == "unreadable":
        assert done.returncode == 2, stderr
        assert stderr.startswith(f"efmoam config check: cannot read {path}: "), stderr
        assert stderr.count("\n") == 1, stderr
    else:
        assert done.returncode == 1, stderr
        assert stderr.startswith(f"{path}:"), stderr


def test_config_check_of_standard_input_is_bounded_too() -> None:
    done = check("-", stdin=VALID.encode() + b"#" + b" " * CONFIG_FILE_LIMIT)
    assert done.returncode == 2
    assert (
        done.stderr
        == b"efmoam config check: cannot read <stdin>: File too large (a configuration file may have at most 1 MiB)\n"
    )
    done = check("-", stdin=b"{a: " * 1000)
    assert (done.returncode, b"Traceback" in done.stderr) == (1, False)
    assert b"nested too deeply" in done.stderr
