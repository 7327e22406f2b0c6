"""Write efmoam(8) in roff on standard output, from the click command tree itself.

Usage: ``PYTHONPATH=... python3 debian/manpage.py VERSION > efmoam.8``.  The package build
runs it on the built command, so every subcommand, argument and option the command has is
in the page, with its own help text, and nothing else can drift: the fixed sections
(files, signals, see also) name only paths and signals.  ``text`` in a help text becomes
bold; a paragraph that starts with click's ``\\b`` is kept as written (no refill).
"""

from __future__ import annotations

import datetime
import inspect
import os
import re
import sys
from collections.abc import Iterator

import click

from efmoam.cli.main import main as efmoam_command

FILES = [
    ("/etc/efmoam/efmoam.yaml", "The configuration (a conffile: upgrades keep your edits). Check it with "
     "\\fBefmoam config check\\fR; \\fBsystemctl reload efmoam\\fR applies it."),
    ("/run/efmoam/efmoam.sock", "The control socket the CLI talks to; root and members of the "
     "\\fBefmoam\\fR group (\\fBdaemon.control_socket_group\\fR) may use it."),
    ("/var/lib/efmoam/state.json", "Active events and event logs that survive a restart."),
    ("/var/log/efmoam/", "Where an \\fBevent_stream\\fR file belongs (the unit lets the daemon write there)."),
    ("/lib/systemd/system/efmoam.service", "The unit: user \\fBefmoam\\fR, CAP_NET_RAW and CAP_NET_ADMIN only."),
    ("/usr/share/efmoam/examples/", "Example configurations (router uplinks, RDMA hosts, a veth lab)."),
    ("/usr/share/efmoam/prometheus/efmoam-rules.yaml", "Prometheus alert rules for the daemon's metrics."),
]  # fmt: skip

SIGNALS = [
    ("SIGHUP", "Reload the configuration; an invalid one is refused and the running one stays."),
    ("SIGTERM", "Send a Dying Gasp on every port (unless dying_gasp_on_shutdown is false), save state, exit."),
]

SEE_ALSO = "systemctl(1), journalctl(1), ip(8), nft(8), ethtool(8), snmpd(8)"


def escape(text: str) -> str:
    """Text safe in roff: backslashes and hyphens escaped, no line starting a request."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    text = re.sub(r"``(.+?)``", r"\\fB\1\\fR", text)
    return "\n".join("\\&" + line if line.startswith((".", "'")) else line for line in text.splitlines())


def paragraphs(help_text: str) -> Iterator[str]:
    """Roff for a click help text: refilled paragraphs, \\b paragraphs kept line by line."""
    for block in re.split(r"\n\s*\n", inspect.cleandoc(help_text)):
        if block.startswith("\b"):
            yield ".PP\n.nf\n" + escape(block.removeprefix("\b").strip("\n")) + "\n.fi"
        else:
            yield ".PP\n" + escape(" ".join(block.split()))


def commands(command: click.Command, path: list[str]) -> Iterator[tuple[list[str], click.Command]]:
    """Every visible command under `command`, depth first in name order, groups before their members."""
    yield path, command
    if isinstance(command, click.Group):
        context = click.Context(command, info_name=path[-1])
        for name in command.list_commands(context):
            sub = command.get_command(context, name)
            if sub is not None and not sub.hidden:
                yield from commands(sub, [*path, name])


def command_section(path: list[str], command: click.Command) -> Iterator[str]:
    context = click.Context(command, info_name=" ".join(path))
    pieces = command.collect_usage_pieces(context)
    yield f'.SS "{escape(" ".join(path))}"'
    yield ".B " + escape(" ".join(path)) + "\n" + escape(" ".join(pieces))
    if command.help:
        yield from paragraphs(command.help)
    for param in command.get_params(context):
        if not isinstance(param, click.Option) or set(param.opts) & set(context.help_option_names):
            continue  # arguments are in the usage line; --help is everywhere
        record = param.get_help_record(context)
        if record is None:
            continue
        names, help_text = record
        yield f".TP\n.B {escape(names)}\n{escape(' '.join(help_text.split()))}"


def page(version: str) -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = datetime.datetime.fromtimestamp(int(epoch), datetime.UTC) if epoch else datetime.datetime.now(datetime.UTC)
    summary = inspect.cleandoc(efmoam_command.help or "").splitlines()[0]
    out = [
        f'.TH EFMOAM 8 "{when:%Y-%m-%d}" "efmoam {escape(version)}" "System Administration"',
        ".SH NAME",
        "efmoam \\- " + escape(summary),
        ".SH SYNOPSIS",
        ".B efmoam\n[\\fB\\-\\-version\\fR] [\\fB\\-h\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]...",
        ".SH DESCRIPTION",
        ".PP\nOne command for the OAM daemon and everything around it: \\fBefmoam daemon\\fR runs the"
        " daemon (under systemd, \\fBsystemctl start efmoam\\fR), the other commands talk to it over its"
        " control socket or work on files.  The README, in /usr/share/doc/efmoam, is the operators'"
        " manual.",
        ".SH COMMANDS",
    ]
    for path, command in commands(efmoam_command, ["efmoam"]):
        if path != ["efmoam"]:
            out.extend(command_section(path, command))
    out.append(".SH SIGNALS")
    for name, text in SIGNALS:
        out.append(f".TP\n.B {name}\n{escape(text)}")
    out.append(".SH FILES")
    for name, text in FILES:
        out.append(f".TP\n.I {escape(name)}\n{text}")  # the texts carry their own roff fonts
    out.append(".SH SEE ALSO\n" + escape(SEE_ALSO))
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: manpage.py VERSION")
    sys.stdout.write(page(sys.argv[1]))
