"""``efmoam config check``: validate a configuration file without a daemon."""

from __future__ import annotations

import errno
import json
from typing import Any, BinaryIO, TextIO

from efmoam.config.loader import ConfigError, decode_config, load_config_text, read_config_file
from efmoam.linux.files import CONFIG_FILE_LIMIT, FileRefusedError

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_UNREADABLE = 2


def run_check(
    path: str, stdout: TextIO, stderr: TextIO, stdin: BinaryIO | None = None, *, json_output: bool = False
) -> int:
    """Check the configuration file `path` ("-": `stdin`); returns the exit status.

    Valid: one line ``FILE: ok, N port rules`` on `stdout`, status 0.  Invalid: each
    problem as ``file:line:column: path: message`` on `stderr`, status 1.  Unreadable
    (missing, not a regular file, larger than the daemon reads): one line on `stderr`,
    status 2.  The file is read as the daemon reads it (`read_config_file`): a FIFO or a
    device is refused at once, never waited on or read without end.

    `json_output`: one JSON object on `stdout` instead, whatever the outcome:
    ``{"schema": 1, "file": ..., "ok": ..., "port_rules": N | null, "problems": [{"line",
    "column", "path", "message"}...], "error": null | {"code": "unreadable", "message"}}``.
    """
    name = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            if stdin is None:
                raise OSError("no standard input")
            data = stdin.read(CONFIG_FILE_LIMIT + 1)
            if len(data) > CONFIG_FILE_LIMIT:
                raise FileRefusedError(
                    name,
                    errno.EFBIG,
                    f"File too large (a configuration file may have at most {CONFIG_FILE_LIMIT >> 20} MiB)",
                )
        else:
            data = read_config_file(path)
    except OSError as exc:
        message = f"cannot read {name}: {exc.strerror or exc}"
        if json_output:
            _json(stdout, name, error={"code": "unreadable", "message": message})
        else:
            print(f"efmoam config check: {message}", file=stderr)
        return EXIT_UNREADABLE
    try:
        config = load_config_text(decode_config(data, name), name)
    except ConfigError as exc:
        if json_output:
            problems = [
                {"line": p.line, "column": p.column, "path": p.path, "message": p.message} for p in exc.problems
            ]
            _json(stdout, name, problems=problems)
        else:
            for problem in exc.problems:
                print(problem, file=stderr)
        return EXIT_INVALID
    rules = len(config.rules)
    if json_output:
        _json(stdout, name, port_rules=rules)
    else:
        print(f"{name}: ok, {rules} port rule{'' if rules == 1 else 's'}", file=stdout)
    return EXIT_OK


def _json(
    stdout: TextIO, name: str, *, port_rules: int | None = None, problems: list[Any] | None = None,
    error: dict[str, str] | None = None,
) -> None:  # fmt: skip
    ok = error is None and not problems
    report = {"schema": 1, "file": name, "ok": ok, "port_rules": port_rules, "problems": problems or [], "error": error}
    print(json.dumps(report), file=stdout)
