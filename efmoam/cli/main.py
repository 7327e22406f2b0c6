"""The ``efmoam`` command line.

Keep this module light: ``efmoam --help`` must start fast and must not import scapy
(which `pdu` imports).  Every subcommand imports what it needs inside its function.

Options operators give to every command are accepted before the subcommand too
(``efmoam -f json show port``, ``efmoam --socket /x show port``): `socket_option` and
`format_option` leave a subcommand's value unset when it is not given, and take the
group's then (itself from ``$EFMOAM_SOCKET`` or the default), so the subcommand's own
option wins.  Every command that prints takes ``-f plain|json``: plain text for people,
one JSON document (or one per line where the output is a stream) for programs.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any, TextIO

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

    checkout = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    pyproject = os.path.join(checkout, "pyproject.toml")
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


def block_buffered(stream: TextIO, capture: str) -> TextIO:
    """The stream a report of a capture file goes out on: `stream`, or where
    PYTHONUNBUFFERED or ``python -u`` made it write through, a buffered one over the same
    descriptor.  Writing through, every timeline line was a system call of its own
    (55,000 on a realistic 100,000 frames, about a tenth of ``--json``'s time).  A
    ``BufferedWriter`` is what keeps blocks whole: it writes again what a short write
    (a signal, a full pipe) left, where a text stream over the raw file would drop it.
    A capture read from standard input (a live ``tcpdump -w -``) and a terminal keep
    their lines going out as they come.  The caller flushes what it is given."""
    if capture == "-" or not isinstance(stream, io.TextIOWrapper) or not stream.write_through:
        return stream
    try:
        if stream.isatty():
            return stream
        raw = io.FileIO(stream.fileno(), "w", closefd=False)  # closing it leaves the descriptor open
    except (OSError, ValueError):  # (no descriptor: a test's stream)
        return stream
    return io.TextIOWrapper(io.BufferedWriter(raw), encoding=stream.encoding, errors=stream.errors)


DEFAULT_SOCKET = "/run/efmoam/efmoam.sock"
DEFAULT_CONFIG = "/etc/efmoam/efmoam.yaml"
FORMATS = ("plain", "json")
FORMAT_HELP = "plain text for people, json for programs (the same data)"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
@click.option(
    "--socket", "socket_path", envvar="EFMOAM_SOCKET", default=DEFAULT_SOCKET, show_default=True,
    help="The daemon's control socket (also $EFMOAM_SOCKET), for every command that talks to the daemon.",
)  # fmt: skip
@click.option(
    "-f", "--format", "fmt", type=click.Choice(FORMATS), default="plain", show_default=True,
    help=f"{FORMAT_HELP}, for every command that prints; a command's own -f wins.",
)  # fmt: skip
def main(socket_path: str, fmt: str) -> None:
    """IEEE 802.3 Clause 57 Ethernet OAM (802.3ah EFM OAM, Link OAM) for Linux."""


def _from_group(name: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """An option's callback: left out, it takes the value given before the subcommand."""

    def resolve(ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
        if value is not None:
            return value
        given = ctx.find_root().params.get(name)
        if given is not None:
            return given
        return {"socket_path": os.environ.get("EFMOAM_SOCKET") or DEFAULT_SOCKET, "fmt": "plain"}[name]

    return resolve


socket_option = click.option(
    "--socket", "socket_path", callback=_from_group("socket_path"),
    help=f"The daemon's control socket [default: efmoam --socket, $EFMOAM_SOCKET or {DEFAULT_SOCKET}].",
)  # fmt: skip


def format_option(*choices: str, help: str = FORMAT_HELP) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``-f``/``--format`` of a command that prints (default: efmoam -f, else plain)."""
    return click.option(
        "-f", "--format", "fmt", type=click.Choice(choices or FORMATS), callback=_from_group("fmt"),
        help=f"{help} [default: efmoam -f, else plain]",
    )  # fmt: skip


json_alias = click.option("--json", "json_alias", is_flag=True, help="The same as -f json.")


@main.command()
@click.argument("capture", type=click.Path(dir_okay=False, allow_dash=True))
@format_option(help="plain text for people, json: one JSON object per line")
@json_alias
def decode(capture: str, fmt: str, json_alias: bool) -> None:
    """Print the OAMPDUs in the pcap or pcapng file CAPTURE ("-": standard input).

    One line per OAMPDU: frame number, seconds since the first record, source MAC,
    flags, code and TLVs.  Frames that are not OAMPDUs are counted and skipped;
    malformed OAMPDUs are reported with their reason and decoding goes on.  A summary
    goes to standard error.  Exit status: 0, or 2 if the file cannot be read to the
    end or is not an Ethernet capture.
    """
    from efmoam.offline.decode import run_decode  # noqa: PLC0415 - imports the codec

    with exit_quietly_on_broken_pipe():
        status = run_decode(
            capture,
            sys.stdout,
            sys.stderr,
            json_output=json_alias or fmt == "json",
            stdin=sys.stdin.buffer,
        )
    sys.exit(status)


@main.group()
def config() -> None:
    """Work with configuration files."""


@config.command("check")
@click.argument("file", required=False, type=click.Path(allow_dash=True))
@format_option()
def config_check(file: str | None, fmt: str) -> None:
    """Check a configuration file without a daemon.

    FILE is a YAML configuration file ("-": standard input); without FILE,
    $EFMOAM_CONFIG, else /etc/efmoam/efmoam.yaml (the file checked is named on
    standard error).  A valid file prints one line, "FILE: ok, N port rules".  Each
    problem is printed on standard error as file:line:column: path.to.key: message,
    every problem in the file, not just the first.  Exit status: 0 valid, 1 invalid, 2
    if FILE cannot be read (missing, not a regular file, or larger than 1 MiB, as the
    daemon would refuse it).
    """
    from efmoam.config.check import run_check  # noqa: PLC0415 - imports the configuration model

    if file is None:
        from_env = os.environ.get("EFMOAM_CONFIG")
        file = from_env or DEFAULT_CONFIG
        click.echo(f"efmoam config check: checking {file} ({'$EFMOAM_CONFIG' if from_env else 'no FILE given'})",
                   err=True)  # fmt: skip
    with exit_quietly_on_broken_pipe():
        status = run_check(file, sys.stdout, sys.stderr, stdin=sys.stdin.buffer, json_output=fmt == "json")
    sys.exit(status)


@config.command("default")
def config_default() -> None:
    """Print the commented default configuration (what the daemon runs without -c).

    A starting point: efmoam config default > /etc/efmoam/efmoam.yaml
    """
    from efmoam.config.loader import default_config_text  # noqa: PLC0415

    with exit_quietly_on_broken_pipe():
        sys.stdout.write(default_config_text())
        sys.stdout.flush()


# -- the daemon and its control socket ------------------------------------------------


def _ask(socket_path: str, op: str, args: dict[str, object], fmt: str = "plain") -> object:
    """One control request; on failure the message (or a JSON error) and exit status 1."""
    from efmoam.daemon.control import request  # noqa: PLC0415 - stdlib only

    with _failing_as_cli(fmt):
        return request(socket_path, op, args)


def _ask_ports(socket_path: str, fmt: str = "plain") -> dict[str, Any]:
    """``show_ports`` of every port, in pages over one connection (`control.all_ports`);
    failing as `_ask` does."""
    from efmoam.daemon.control import Session, all_ports  # noqa: PLC0415 - stdlib only

    with _failing_as_cli(fmt), Session(socket_path) as session:
        return all_ports(session)


@contextlib.contextmanager
def _failing_as_cli(fmt: str) -> Iterator[None]:
    """A ControlError inside: its message (or a JSON error) and exit status 1."""
    from efmoam.daemon.control import ControlError  # noqa: PLC0415 - stdlib only

    try:
        yield
    except ControlError as exc:
        if fmt == "json":
            import json  # noqa: PLC0415

            click.echo(json.dumps({"error": {"code": exc.code, "message": exc.message}}))
        else:
            click.echo(f"efmoam: {exc.message}", err=True)
        sys.exit(1)


@main.command()
@click.option(
    "-c", "--config", "config_path", envvar="EFMOAM_CONFIG", type=click.Path(dir_okay=False),
    help="Configuration file (also $EFMOAM_CONFIG); without one, the embedded default.",
)  # fmt: skip
def daemon(config_path: str | None) -> None:
    """Run the OAM daemon in the foreground on every configured port.

    SIGHUP reloads the configuration (an invalid one is refused and the running one
    stays); SIGTERM sends a Dying Gasp and stops.  Logs go to standard error.
    """
    from efmoam.daemon.main import run_daemon  # noqa: PLC0415 - the whole engine

    sys.exit(run_daemon(config_path))


@main.group()
def show() -> None:
    """Show what the daemon knows."""


show_format_option = format_option(
    "plain", "json", "yang",
    help=f"{FORMAT_HELP}, yang: the IEEE 802.3.2 YANG model's data (ietf-interfaces with link-oam) in RFC 7951 JSON",
)  # fmt: skip


@show.command("port")
@click.argument("port", required=False)
@click.argument("what", required=False, type=click.Choice(["event-log", "statistics"]))
@show_format_option
@socket_option
def show_port(port: str | None, what: str | None, fmt: str, socket_path: str) -> None:
    """One line per port, or everything about PORT (its event-log or statistics only).

    -f yang prints every port (or PORT) as ieee802-ethernet-link-oam data, revision
    2025-09-10: configuration, local and remote state, statistics and the event log.
    """
    import json  # noqa: PLC0415

    from efmoam.views import text as render  # noqa: PLC0415 - standard library only

    if fmt == "yang":
        if what is not None:
            raise click.UsageError(f"-f yang shows whole ports: the model's {what} is in link-oam/{what} of the output")
        result: object = _yang(socket_path, port)
        text = ""
    elif port is None:
        result = _ask_ports(socket_path, fmt)
        text = render.render_summary(result["ports"])
    else:
        result = _ask(socket_path, "show_port", {"port": port}, fmt)
        assert isinstance(result, dict)
        if what == "event-log":
            result = {"schema": result["schema"], "name": result["name"], "event_log": result["event_log"]}
            text = render.render_event_log(result)
        elif what == "statistics":
            keys = ("schema", "name", "statistics", "drops", "peer_quirks", "org_specific_rx_by_oui",
                    "org_specific_rx_oui_names")  # fmt: skip
            result = {k: result[k] for k in keys}
            text = render.render_statistics(result)
        else:
            text = render.render_port(result)
    with exit_quietly_on_broken_pipe():
        click.echo(text if fmt == "plain" else json.dumps(result, indent=2), nl=fmt != "plain")


def _yang(socket_path: str, port: str | None) -> dict[str, Any]:
    """The YANG data of PORT, or of every port (a port that goes away meanwhile is left out)."""
    import time  # noqa: PLC0415

    from efmoam.daemon.control import ControlError, Session, all_ports  # noqa: PLC0415 - stdlib only
    from efmoam.views import yang  # noqa: PLC0415 - standard library only

    views: list[Any] = []
    with _failing_as_cli("plain"), Session(socket_path) as session:  # one connection for every request
        if port is not None:
            views.append(session.request("show_port", {"port": port}))
        else:
            for name in (p["name"] for p in all_ports(session)["ports"]):
                try:
                    views.append(session.request("show_port", {"port": name}))
                except ControlError as exc:
                    if exc.code != "unknown_port":  # removed by a reload since the list: not an error
                        raise
    return yang.interfaces(views, now=time.time())


@main.group()
def clear() -> None:
    """Clear events or statistics on the daemon's ports."""


@clear.command("port")
@click.argument("port")
@click.argument("what", type=click.Choice(["events", "statistics"]))
@click.argument("location", required=False, type=click.Choice(["local", "remote"]))
@format_option()
@socket_option
def clear_port(port: str, what: str, location: str | None, fmt: str, socket_path: str) -> None:
    """Clear PORT's active events (local, remote, or both when omitted) or its statistics.

    Clearing events ends every active event of that location, returns the port to
    service when nothing else holds it out, and clears the Information flags local
    events had set; the event log keeps the entries, marked cleared.  Clearing
    statistics sets the RFC 4878 counters, the drop and the peer quirk counters back to zero.
    """
    if what == "statistics" and location is not None:
        raise click.UsageError("statistics take no location")
    op = "clear_events" if what == "events" else "clear_statistics"
    _ask(socket_path, op, {"port": port, "location": location}, fmt)
    where = {"location": location or "both"} if what == "events" else {}
    text = f"{port}: {what} cleared" + (f" ({location})" if location else "")
    _done(fmt, {"port": port, "cleared": what, **where}, text)


def _done(fmt: str, result: dict[str, Any], text: str) -> None:
    """What a command that changes something did: `text`, or `result` as JSON."""
    import json  # noqa: PLC0415

    click.echo(json.dumps({"schema": 1, **result}) if fmt == "json" else text)


@main.command()
@click.argument("port")
@click.argument("leaves", nargs=-1, required=True, type=click.IntRange(0, 0xFFFF))
@click.option(
    "--wait", type=click.FloatRange(0.0, 60.0), default=3.0, show_default=True,
    help="Seconds to wait for the answer; 0: send the request and return (the daemon logs the answer).",
)  # fmt: skip
@format_option()
@socket_option
def variables(port: str, leaves: tuple[int, ...], wait: float, fmt: str, socket_path: str) -> None:
    """Ask PORT's peer for Clause 30 attributes (Variable Request; Active mode, SEND_ANY).

    LEAVES are attribute numbers, e.g. 251 (aOAMInformationTx) 239 (aOAMRemoteMACAddress).
    Prints the peer's Variable Response: one line per attribute with its name and value,
    or the peer's indication (attribute_unsupported, ...).  Exit status 1 when no answer
    came within --wait seconds (the request was sent; a late answer is still logged).
    """
    import json  # noqa: PLC0415
    import time  # noqa: PLC0415

    from efmoam.views import text as render  # noqa: PLC0415 - standard library only

    sent = _ask(socket_path, "variables", {"port": port, "leaves": list(leaves)}, fmt)
    assert isinstance(sent, dict)
    if wait == 0:
        click.echo(json.dumps({"schema": sent["schema"], "port": port, "requested": list(leaves)}) if fmt == "json" else
                   f"{port}: variable request sent for {' '.join(map(str, leaves))}")  # fmt: skip
        return
    deadline = time.monotonic() + wait
    while True:
        answer = _ask(socket_path, "variable_answer", {"port": port, "request": sent["request"]}, fmt)
        assert isinstance(answer, dict)
        if answer["answered"]:
            variables, schema = answer["variables"], answer["schema"]
            click.echo(json.dumps({"schema": schema, "port": port, "variables": variables}) if fmt == "json" else
                       render.render_variables(port, variables), nl=fmt == "json")  # fmt: skip
            return
        if time.monotonic() >= deadline:
            message = f"{port}: no Variable Response within {wait:g} s (the request was sent)"
            if fmt == "json":
                click.echo(json.dumps({"error": {"code": "no_answer", "message": message}}))
            else:
                click.echo(f"efmoam: {message}", err=True)
            sys.exit(1)
        time.sleep(0.05)


@main.command()
def lab() -> None:
    """The demonstration: two namespaces, two daemons, an SD then an SF, clear, recovery.

    Needs root, iproute2, nftables and ping.  Everything it builds is removed at the
    end, also on Ctrl-C or failure.  Exit status 0 when every step happened.
    """
    from efmoam.cli.lab import run_lab  # noqa: PLC0415

    sys.exit(run_lab())


@main.command()
@click.argument("port")
@click.argument("action", type=click.Choice(["start", "stop"]))
@format_option()
@socket_option
def loopback(port: str, action: str, fmt: str, socket_path: str) -> None:
    """Start or stop OAM remote loopback of the peer on PORT (Active mode, once the peer
    is discovered).  "started" means asked: show port PORT says when the peer loops."""
    result = _ask(socket_path, "loopback", {"port": port, "enable": action == "start"}, fmt)
    assert isinstance(result, dict)
    _done(fmt, {"port": port, "loopback": result["loopback"]}, f"{port}: loopback {result['loopback']}")


@main.command()
@click.argument("port")
@click.argument("state", type=click.Choice(["enabled", "disabled", "config"]))
@format_option()
@socket_option
def admin(port: str, state: str, fmt: str, socket_path: str) -> None:
    """Set OAM on PORT administratively enabled or disabled (dot3OamAdminState), over the
    configuration's ``enabled``; ``config`` goes back to the configuration.

    The setting holds across reloads, not across restarts (put it in the configuration
    to keep it).  SNMP writes of dot3OamAdminState do the same.
    """
    result = _ask(socket_path, "admin_state", {"port": port, "state": state}, fmt)
    assert isinstance(result, dict)
    source = "set here" if result["override"] else "as configured"
    text = f"{port}: OAM administratively {result['admin_state']} ({source})"
    _done(fmt, {"port": port, "admin_state": result["admin_state"], "override": result["override"]}, text)


@main.command()
@click.argument("port", required=False)
@format_option(help="plain: one line per record for people, json: the daemon's records, one JSON object a line")
@socket_option
def watch(port: str | None, fmt: str, socket_path: str) -> None:
    """Print events, policy events, port actions and operator commands as they happen
    (every port's, or PORT's), until Ctrl-C.

    The records are the event stream's (see "Event stream" in the README), sent by the
    daemon over its control socket whatever its event_stream sink is.  Exit status 130
    on Ctrl-C; 1 when the daemon stops or ends a watch that reads too slowly.
    """
    from efmoam.cli.watch import run_watch  # noqa: PLC0415

    with exit_quietly_on_broken_pipe():
        status = run_watch(socket_path, port, fmt, sys.stdout, sys.stderr)
    sys.exit(status)


@main.command()
@click.argument("port")
@click.option(
    "--listen", type=click.FloatRange(0.1, 60.0),
    help="Seconds to listen for OAMPDUs [default: two of the daemon's transmit intervals, else 2].",
)  # fmt: skip
@format_option()
@socket_option
def diagnose(port: str, listen: float | None, fmt: str, socket_path: str) -> None:
    """Check why OAM on PORT does not come up, and say what to check next.

    Reports carrier, speed and duplex; the OAMPDUs that arrive while listening (as root:
    on the wire and past the ingress hooks; else through the daemon); the counter
    source; efmoam's nftables tables and ingress chains that drop OAMPDUs; and, when the
    daemon runs PORT, where Discovery is stuck.  Exit status 0 when nothing is wrong, 1
    when a problem was found, 2 when PORT cannot be diagnosed (none, not Ethernet).
    """
    import json  # noqa: PLC0415

    from efmoam.linux.diagnose import DiagnoseError, probe  # noqa: PLC0415 - imports the linux side
    from efmoam.views import diagnosis  # noqa: PLC0415

    try:
        facts = probe(port, socket_path=socket_path, listen=listen)
    except DiagnoseError as exc:
        if fmt == "json":
            click.echo(json.dumps({"error": {"code": "cannot_diagnose", "message": str(exc)}}))
        else:
            click.echo(f"efmoam: {exc}", err=True)
        sys.exit(2)
    findings = diagnosis.analyse(facts)
    with exit_quietly_on_broken_pipe():
        click.echo(diagnosis.as_json(facts, findings) if fmt == "json" else diagnosis.as_text(facts, findings))
    sys.exit(1 if diagnosis.has_problem(findings) else 0)


@main.command()
@click.argument("capture", type=click.Path(dir_okay=False, allow_dash=True))
@format_option()
@json_alias
@click.option("--summary-only", is_flag=True, help="Observe mode: the summary without the timeline.")
@click.option("--check", is_flag=True, help="Compare with the expectations file (NAME.expect.json beside CAPTURE).")
@click.option(
    "--expect",
    "expect_path",
    type=click.Path(dir_okay=False),
    help="--check against this file instead (needed when CAPTURE is -).",
)
@click.option("--write-expect", is_flag=True, help="Write the expectations file from what replay finds.")
@click.option(
    "--keepalive",
    type=click.FloatRange(0.1, 10.0),
    default=1.0,
    show_default=True,
    help="Seconds of the speakers' pdu_timer (a gap over twice this, +10%, is a late keep-alive).",
)
@click.option(
    "--lost-link",
    type=click.FloatRange(0.2, 100.0),
    default=5.0,
    show_default=True,
    help="Seconds of silence after which a peer restarts Discovery.",
)
@click.option("--as", "as_mac", metavar="MAC", help="Play mode: our engine plays MAC against the other speaker.")
@click.option(
    "-c",
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    help="Play mode: configure our engine from this file instead of from the capture.",
)
@click.option("--port", "port_name", help="Play mode: the port of --config whose settings to use.")
@click.option(
    "--tolerance",
    type=click.FloatRange(0.0, 60.0),
    default=1.0,
    show_default=True,
    help="Play mode: seconds by which our engine may differ from MAC before it is a divergence.",
)
@click.option("--to", "to_iface", metavar="IFACE", help="Transmit mode: send a speaker's frames on IFACE (root).")
@click.option("--from", "from_mac", metavar="MAC", help="Transmit mode: the speaker whose frames to send.")
def replay(
    capture: str, fmt: str, json_alias: bool, summary_only: bool, check: bool, expect_path: str | None,
    write_expect: bool, keepalive: float, lost_link: float, as_mac: str | None, config_path: str | None,
    port_name: str | None, tolerance: float, to_iface: str | None, from_mac: str | None,
) -> None:  # fmt: skip
    """Replay the pcap or pcapng file CAPTURE ("-": standard input) through the OAM engine.

    Observe mode (default): reconstruct every OAM speaker (source MAC, per pcapng
    interface): Discovery states over time, revisions, capabilities, events, loopback,
    and findings against IEEE 802.3 Clause 57, each with the frames that show it.  A
    timeline and a summary per speaker.  Exit status 0 clean, 1 findings, 2 unreadable.

    --as MAC: feed the other speaker's frames into our engine configured as MAC and
    report where our engine diverges from what MAC sent (0 none, 1 divergences).

    --to IFACE [--from MAC]: send one speaker's frames on IFACE with their original
    timing (root), for a live peer to be tested against the recording.
    """
    from efmoam.offline.replay.findings import Limits  # noqa: PLC0415 - replay only

    check = check or expect_path is not None  # --expect FILE implies --check
    if sum(map(bool, (check or write_expect, as_mac, to_iface))) > 1:
        raise click.UsageError("--check/--write-expect, --as and --to are different modes: choose one")
    if (config_path or port_name) and not as_mac:
        raise click.UsageError("--config and --port belong to play mode (--as MAC)")
    if from_mac and not to_iface:
        raise click.UsageError("--from belongs to transmit mode (--to IFACE)")
    if (check or write_expect) and capture == "-" and expect_path is None:
        raise click.UsageError("standard input has no NAME.expect.json beside it: give --expect FILE")
    limits = Limits(keepalive=keepalive, lost_link=lost_link)
    json_output = json_alias or fmt == "json"
    stdin = sys.stdin.buffer  # read when CAPTURE is "-"
    # (transmit mode's lines say what goes out on the wire as it goes: as they come)
    out = sys.stdout if to_iface else block_buffered(sys.stdout, capture)
    with exit_quietly_on_broken_pipe():
        if to_iface:
            from efmoam.offline.replay.transmit import run_transmit  # noqa: PLC0415

            status = run_transmit(capture, to_iface, out, sys.stderr, from_mac=from_mac, stdin=stdin)
        elif as_mac:
            from click.core import ParameterSource  # noqa: PLC0415

            from efmoam.offline.replay.play import run_play  # noqa: PLC0415

            given = click.get_current_context().get_parameter_source  # --keepalive/--lost-link set the engine's timers
            status = run_play(
                capture, as_mac, out, sys.stderr, json_output=json_output, limits=limits,
                tolerance=tolerance, config_path=config_path, port_name=port_name,
                interval=None if given("keepalive") is ParameterSource.DEFAULT else keepalive,
                lost_link=None if given("lost_link") is ParameterSource.DEFAULT else lost_link, stdin=stdin,
            )  # fmt: skip
        elif check or write_expect:
            from efmoam.offline.replay.report import run_check  # noqa: PLC0415

            status = run_check(
                capture, out, sys.stderr, expect_path=expect_path, write=write_expect,
                json_output=json_output, limits=limits, stdin=stdin,
            )  # fmt: skip
        else:
            from efmoam.offline.replay.report import run_observe  # noqa: PLC0415

            status = run_observe(
                capture, out, sys.stderr, json_output=json_output, limits=limits,
                timeline=not summary_only, stdin=stdin,
            )  # fmt: skip
        out.flush()  # (inside: a reader gone meanwhile is a broken pipe, quietly)
    sys.exit(status)


if __name__ == "__main__":
    main()
