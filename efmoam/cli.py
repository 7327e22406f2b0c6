"""The ``efmoam`` command line.

Keep this module light: ``efmoam --help`` must start fast and must not import scapy
(which `pdu` imports).  Every subcommand imports what it needs inside its function.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

import click

#: Exit status after a broken pipe (as for a process killed by SIGPIPE: 128 + 13).
EXIT_BROKEN_PIPE = 141


def _version() -> str:
    """The installed version, or the one in pyproject.toml of a source checkout."""
    from importlib import metadata  # noqa: PLC0415 - only for --version

    try:
        return metadata.version("efmoam")
    except metadata.PackageNotFoundError:
        pass
    import tomllib  # noqa: PLC0415

    pyproject = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "pyproject.toml")
    try:
        with open(pyproject, "rb") as stream:
            return str(tomllib.load(stream)["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    click.echo(f"efmoam {_version()}")
    ctx.exit()


@contextlib.contextmanager
def exit_quietly_on_broken_pipe() -> Iterator[None]:
    """Exit with `EXIT_BROKEN_PIPE`, without a traceback, when stdout's reader goes away.

    For ``efmoam ... | head``: stdout is pointed at /dev/null first, so that Python's
    own flush of stdout at exit does not fail again.
    """
    try:
        yield
    except BrokenPipeError:
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        sys.exit(EXIT_BROKEN_PIPE)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
def main() -> None:
    """IEEE 802.3 Clause 57 Ethernet OAM (802.3ah EFM OAM, Link OAM) for Linux."""


@main.command()
@click.argument("capture", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--json", "json_output", is_flag=True, help="One JSON object per line instead of text.")
def decode(capture: str, json_output: bool) -> None:
    """Print the OAMPDUs in the pcap or pcapng file CAPTURE ("-": standard input).

    One line per OAMPDU: frame number, seconds since the first record, source MAC,
    flags, code and TLVs.  Frames that are not OAMPDUs are counted and skipped;
    malformed OAMPDUs are reported with their reason and decoding goes on.  A summary
    goes to standard error.  Exit status: 0, or 2 if the file cannot be read to the
    end or is not an Ethernet capture.
    """
    from efmoam.decoding import run_decode  # noqa: PLC0415 - imports scapy

    with exit_quietly_on_broken_pipe():
        status = run_decode(
            capture,
            sys.stdout,
            sys.stderr,
            json_output=json_output,
            stdin=sys.stdin.buffer,
        )
    sys.exit(status)


@main.group()
def config() -> None:
    """Work with configuration files."""


@config.command("check")
@click.argument("file", type=click.Path(allow_dash=True))
def config_check(file: str) -> None:
    """Check a configuration file without a daemon.

    FILE is a YAML configuration file ("-": standard input).  A valid file prints one
    line, "FILE: ok, N port rules".  Each problem is printed on standard error as
    file:line:column: path.to.key: message, every problem in the file, not just the
    first.  Exit status: 0 valid, 1 invalid, 2 if FILE cannot be read.
    """
    from efmoam.config.check import run_check  # noqa: PLC0415 - imports the core (and scapy)

    with exit_quietly_on_broken_pipe():
        status = run_check(file, sys.stdout, sys.stderr, stdin=sys.stdin.buffer)
    sys.exit(status)


if __name__ == "__main__":
    main()
