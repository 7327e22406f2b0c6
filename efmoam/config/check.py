"""``efmoam config check``: validate a configuration file without a daemon."""

from __future__ import annotations

from typing import BinaryIO, TextIO

from efmoam.config.loader import ConfigError, decode_config, load_config_text

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_UNREADABLE = 2


def run_check(path: str, stdout: TextIO, stderr: TextIO, stdin: BinaryIO | None = None) -> int:
    """Check the configuration file `path` ("-": `stdin`); returns the exit status.

    Valid: one line ``FILE: ok, N port rules`` on `stdout`, status 0.  Invalid: each
    problem as ``file:line:column: path: message`` on `stderr`, status 1.  Unreadable:
    one line on `stderr`, status 2.
    """
    name = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            if stdin is None:
                raise OSError("no standard input")
            data = stdin.read()
        else:
            with open(path, "rb") as stream:
                data = stream.read()
    except OSError as exc:
        print(f"efmoam config check: cannot read {name}: {exc.strerror or exc}", file=stderr)
        return EXIT_UNREADABLE
    try:
        config = load_config_text(decode_config(data, name), name)
    except ConfigError as exc:
        for problem in exc.problems:
            print(problem, file=stderr)
        return EXIT_INVALID
    rules = len(config.rules)
    print(f"{name}: ok, {rules} port rule{'' if rules == 1 else 's'}", file=stdout)
    return EXIT_OK
