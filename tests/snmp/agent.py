"""A private net-snmp world for tests of the AgentX subagent: `Snmpd` (the AgentX master),
`TrapReceiver` (snmptrapd) and the client tools (`walk`, `get`, `set`, `translate`).

Everything is private to one test directory: no system configuration, no system MIB list,
no persistent state under /var/lib/snmp, free UDP ports on 127.0.0.1 only.

* Every net-snmp process gets ``SNMPCONFPATH`` (an empty private folder: no snmp.conf,
  no ~/.snmp), ``SNMP_PERSISTENT_DIR`` (a private folder: engineBoots, cert_indexes),
  ``MIBDIRS`` (only the reference MIB folder) and ``MIBS=DOT3-OAM-MIB`` (which pulls
  SNMPv2-SMI/TC/CONF, SNMPv2-MIB, IF-MIB, HCNUM-TC and IANAifType-MIB, and nothing that
  is missing, so no "Cannot find module" noise); the command lines repeat ``-M``/``-m``
  so that a command copied from a failure message runs as is.  The daemons also get
  ``-C`` (no default configuration files).  Checked with strace: neither snmpd nor
  snmptrapd nor the clients open anything under /etc/snmp, /var/lib/snmp or ~/.snmp.
* snmpd runs with ``-I -smux``: Debian's snmpd otherwise listens on TCP 0.0.0.0:199
  (SMUX) and two tests (or a test and another lab) would fight over it.
* snmptrapd runs with ``-X``: it otherwise connects as an AgentX subagent (for its
  NOTIFICATION-LOG-MIB) to the system master at /var/agentx/master.

Values.  The numeric functions (`walk`, `get`, `get_next`, traps' ``varbinds``) print with
``-On -Oe -Ox -OU -Ih --hexOutputLength=0``: numeric OIDs, numeric enums, every OCTET
STRING as upper-case hex bytes separated by blanks on one line, no units, no DISPLAY-HINTs.
A varbind is ``(oid, type, value)``: ``(".1.3.6.1.2.1.158.1.1.1.1.1", "INTEGER", "1")``,
``(".1.3.6.1.2.1.158.1.2.1.1.1", "Hex-STRING", "02 00 00 00 AA 01")`` (dot3OamPeerMacAddress.1;
an empty string is ``("Hex-STRING", "")``), ``("...", "BITS", "F0 0 1 2 3")`` (a BITS object
of the MIB: its bytes, then the numbers of the bits set), ``("...", "Timeticks", "12345")`` (centiseconds),
``("...", "Counter64", "5")``, ``("...", "OID", ".1.3.6.1.2.1.158.0.1")``, and the exceptions
``("...", "noSuchObject" | "noSuchInstance" | "endOfMibView", "")``.  The MIBs stay loaded, so
a value of the wrong type for the MIB keeps net-snmp's complaint as its type:
``("...", "Wrong Type (should be Counter64)", "Gauge32: 5")``.  The ``*_named`` variants
print ``DOT3-OAM-MIB::dot3OamAdminState.1 = INTEGER: enabled(1)`` style (``-OS``, enum
names, DISPLAY-HINTs), for readable failure messages.

Client defaults: SNMPv2c, community public (reads) / private (`set`), ``-r 1 -t 2``.  The
master's default AgentX timeout here is 1 s with no retry, so a subagent that does not
answer makes the client see genErr after about 1 s, well inside its own 2 s timeout.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import ctypes
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import ClassVar, Self, TypedDict

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
MIB_DIR = REPO_ROOT / ".." / "shared" / "reference" / "mibs"  #: DOT3-OAM-MIB and the support MIBs Debian lacks
MIBS = "DOT3-OAM-MIB"
TOOLS = {
    "snmpd": "snmpd",
    "snmptrapd": "snmptrapd",
    "snmpwalk": "snmp",
    "snmpbulkwalk": "snmp",
    "snmpget": "snmp",
    "snmpgetnext": "snmp",
    "snmpset": "snmp",
    "snmptranslate": "snmp",
}
HOST = "127.0.0.1"
RO_COMMUNITY = "public"
RW_COMMUNITY = "private"
CLIENT_OPTIONS = ("-v2c", "-r", "1", "-t", "2")
NUMERIC_OUTPUT = ("-On", "-Oe", "-Ox", "-OU", "-Ih", "--hexOutputLength=0")
NAMED_OUTPUT = ("-OS", "-OU", "--hexOutputLength=0")
START_TIMEOUT = 10.0
STOP_TIMEOUT = 5.0
MAX_SOCKET_PATH = 100  #: sun_path holds 108 bytes; longer socket paths go under a short temporary folder

SYS_UPTIME = ".1.3.6.1.2.1.1.3.0"
SNMP_TRAP_OID = ".1.3.6.1.6.3.1.1.4.1.0"
DOT3_OAM_MIB = ".1.3.6.1.2.1.158"
COLD_START = ".1.3.6.1.6.3.1.1.5.1"  #: snmpd sends it to its sinks when it starts
NS_NOTIFY_SHUTDOWN = ".1.3.6.1.4.1.8072.4.0.2"  #: ... and this one when it stops (SIGTERM)
EXCEPTIONS = {
    "No Such Object available on this agent at this OID": "noSuchObject",
    "No Such Instance currently exists at this OID": "noSuchInstance",
    "No more variables left in this MIB View (It is past the end of the MIB tree)": "endOfMibView",
}

Varbind = tuple[str, str, str]  #: (oid, type, value), see the module's docstring


class Trap(TypedDict):
    """One notification as snmptrapd received it."""

    version: str  #: "v1", "v2c" or "v3"
    source: str  #: snmptrapd's transport text, "UDP: [127.0.0.1]:40000->[127.0.0.1]:16162"
    community: str
    uptime: int | None  #: sysUpTime.0 in centiseconds
    trap_oid: str  #: snmpTrapOID.0, numeric ("" if absent)
    trap_name: str  #: its label without module: "dot3OamThresholdEvent"
    varbinds: list[Varbind]  #: all of them, numeric, sysUpTime.0 and snmpTrapOID.0 first
    objects: list[Varbind]  #: the notification's OBJECTS: varbinds without sysUpTime.0 and snmpTrapOID.0
    named: list[Varbind]  #: `varbinds` with symbolic OIDs (OID values translated too)


class SnmpError(AssertionError):
    """A client tool failed (timeout, an error-status, an unparsable answer)."""

    def __init__(self, result: subprocess.CompletedProcess[str]) -> None:
        self.result = result
        self.reason = snmp_error(result)
        super().__init__(
            f"`{command_line(list(map(str, result.args)))}` exited {result.returncode} ({self.reason}):\n"
            f"{result.stderr.strip()}\n{result.stdout.strip()}".rstrip()
        )


def missing_requirements() -> str | None:
    """Why this machine cannot run the SNMP tests, or None."""
    if not MIB_DIR.is_dir():
        return f"needs the reference MIBs in {MIB_DIR} (DOT3-OAM-MIB and its imports)"
    missing = sorted({f"{tool} ({package})" for tool, package in TOOLS.items() if shutil.which(tool) is None})
    if missing:
        return f"needs {', '.join(missing)} on PATH"
    if os.geteuid() != 0:
        return "needs root"
    return None


def mib_dirs() -> str:
    return str(MIB_DIR.resolve())


def command_line(argv: Sequence[str]) -> str:
    """`argv` as a shell command (bash's $'...' for arguments with control characters)."""

    def quoted(arg: str) -> str:
        if arg.isprintable():
            return shlex.quote(arg)
        return "$'" + arg.encode("unicode_escape").decode("ascii").replace("'", "\\'") + "'"

    return " ".join(quoted(arg) for arg in argv)


def free_udp_port() -> int:
    """A UDP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


def environment(home: Path) -> dict[str, str]:
    """The environment for a net-snmp process whose private files live under `home`."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("SNMP", "MIB"))}
    (home / "conf").mkdir(parents=True, exist_ok=True)  # empty: no snmp.conf is read
    (home / "persist").mkdir(parents=True, exist_ok=True)
    env.update(
        SNMPCONFPATH=str(home / "conf"),
        SNMP_PERSISTENT_DIR=str(home / "persist"),
        MIBDIRS=mib_dirs(),
        MIBS=MIBS,
    )
    return env


# --- the processes -----------------------------------------------------------------------

_LIVE: builtins.set[subprocess.Popen[bytes]] = builtins.set()
_LIBC = ctypes.CDLL(None, use_errno=True)
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child between fork and exec
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


@atexit.register
def _kill_leftovers() -> None:
    for process in list(_LIVE):
        with contextlib.suppress(OSError):
            process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(STOP_TIMEOUT)
    _LIVE.clear()


class _Daemon:
    """A foreground net-snmp daemon with its log; every start appends to the same log."""

    name = ""

    def __init__(self, directory: Path, port: int | None, debug: Sequence[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._fixed_port = port is not None
        self.port = port if port is not None else free_udp_port()
        self.debug = tuple(debug)
        self.config_path = self.directory / f"{self.name}.conf"
        self.log_path = self.directory / f"{self.name}.log"
        self.output_path = self.directory / f"{self.name}.out"  # stdout/stderr, normally empty
        self.pid_path = self.directory / f"{self.name}.pid"
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self._log_mark = 0

    @property
    def address(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def config_text(self) -> str:
        raise NotImplementedError

    def argv(self) -> list[str]:
        raise NotImplementedError

    def _ready(self) -> bool:
        raise NotImplementedError

    def start(self, timeout: float = START_TIMEOUT) -> None:
        if self.running:
            raise RuntimeError(f"{self.name} is already running (pid {self.pid})")
        for attempt in range(3):
            self.config_path.write_text(self.config_text())
            self._log_mark = len(self._log_text())
            with self.output_path.open("ab") as output:
                process = subprocess.Popen(
                    self.argv(),
                    stdin=subprocess.DEVNULL,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    env=environment(self.directory),
                    cwd=self.directory,
                    preexec_fn=_die_with_parent,  # noqa: PLW1509 -- no process outlives the test run
                )
            self.process = process
            _LIVE.add(process)
            give_up = time.monotonic() + timeout
            while process.poll() is None and time.monotonic() < give_up:
                if self._ready():
                    self.starts += 1
                    return
                time.sleep(0.05)
            state = f"exited {process.returncode}" if process.poll() is not None else f"not ready in {timeout} s"
            self._reap()
            this_start = self.log()[self._log_mark :]
            taken = "Error opening specified endpoint" in this_start or "Address already in use" in this_start
            if taken and not self._fixed_port and self.starts == 0 and attempt < 2:
                self.port = free_udp_port()  # lost the race for the free port: take another
                continue
            raise RuntimeError(f"{self.name} {state}: {command_line(self.argv())}\n{self.log()}")

    def stop(self, timeout: float = STOP_TIMEOUT) -> int | None:
        """SIGTERM (SIGKILL after `timeout`); the exit status, None if it was not running."""
        process = self.process
        if process is None:
            return None
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout)
        return self._reap()

    def kill(self) -> int | None:
        """SIGKILL: no clean-up by the daemon (snmpd leaves its AgentX socket file behind)."""
        process = self.process
        if process is None:
            return None
        with contextlib.suppress(OSError):
            process.kill()
        process.wait(STOP_TIMEOUT)
        return self._reap()

    def restart(self, timeout: float = START_TIMEOUT) -> None:
        """Stop and start again on the same port (and, for snmpd, the same AgentX socket)."""
        self.stop()
        self.start(timeout)

    def _reap(self) -> int | None:
        process, self.process = self.process, None
        if process is None:
            return None
        _LIVE.discard(process)
        if process.poll() is None:
            process.kill()
        return process.wait(STOP_TIMEOUT)

    def close(self) -> None:
        self.stop()

    def _log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log(self) -> str:
        """The daemon's log (all starts) and anything it wrote to stdout/stderr."""
        text = self._log_text()
        output = self.output_path.read_text(errors="replace") if self.output_path.exists() else ""
        return text + (f"\n--- {self.name} stdout/stderr ---\n{output}" if output.strip() else "")

    def wait_for_log(self, pattern: str, timeout: float = 5.0, *, since_start: bool = True) -> re.Match[str]:
        """The first match of the regular expression `pattern` in the log (of this start)."""
        give_up = time.monotonic() + timeout
        while True:
            text = self.log()
            match = re.compile(pattern).search(text, self._log_mark if since_start else 0)
            if match:
                return match
            if time.monotonic() >= give_up:
                raise AssertionError(f"{pattern!r} not in {self.name}'s log after {timeout} s:\n{text}")
            time.sleep(0.05)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()


class TrapReceiver(_Daemon):
    """snmptrapd on 127.0.0.1:<port>, accepting every community, one parsable record per trap.

    Records are written with ``-F`` as STX, fields separated by RS (version, transport,
    community, varbinds), varbinds separated by US, ETX and a newline.  The values are
    printed with `NUMERIC_OUTPUT` (-Ox: no octet string is ever printed raw), so no value
    can contain these control characters or a newline.
    """

    name = "snmptrapd"
    FORMAT = "\x02%s\x1e%b\x1e%u\x1e%V\x1f%v\x03\n"
    VERSIONS: ClassVar[dict[str, str]] = {"0": "v1", "1": "v2c", "2": "v3"}

    def __init__(self, directory: Path, *, port: int | None = None, debug: Sequence[str] = ()) -> None:
        super().__init__(directory, port, debug)
        self._parsed: list[Trap] = []
        self._consumed = 0  # characters of the log already parsed into _parsed

    def config_text(self) -> str:
        return (
            "# a private snmptrapd for one test (tests/snmp/agent.py)\n"
            f"snmpTrapdAddr udp:{self.address}\n"
            "disableAuthorization yes\n"
        )

    def argv(self) -> list[str]:
        argv = ["snmptrapd", "-f", "-C", "-c", str(self.config_path), "-A", "-Lf", str(self.log_path)]
        argv += ["-p", str(self.pid_path), "-n", "-t", "-X", "-M", mib_dirs(), "-m", MIBS]
        argv += [*NUMERIC_OUTPUT, "-F", self.FORMAT]
        if self.debug:
            argv.append("-D" + ",".join(self.debug))
        return argv

    def _ready(self) -> bool:
        # snmptrapd logs its version once its listening sockets are bound (strace: bind, then this write)
        return "NET-SNMP version" in self.log()[self._log_mark :]

    def traps(self) -> list[Trap]:
        """Every trap received so far (all starts), oldest first."""
        text = self._log_text()
        records = re.compile("\x02(.*?)\x03", re.S)
        for match in records.finditer(text, self._consumed):
            self._parsed.append(_parse_trap(match.group(1)))
            self._consumed = match.end()
        return list(self._parsed)

    def wait_for_trap(
        self, predicate: Callable[[Trap], object] | str | None = None, timeout: float = 5.0, *, start: int = 0
    ) -> Trap:
        """The first trap (from index `start` of `traps()`) that satisfies `predicate`: a function,
        a trap name ("dot3OamThresholdEvent") or a numeric trap OID, or None for any trap."""

        def test(trap: Trap) -> object:
            if predicate is None:
                return True
            if isinstance(predicate, str):
                return predicate in (trap["trap_name"], trap["trap_oid"])
            return predicate(trap)

        give_up = time.monotonic() + timeout
        while True:
            received = self.traps()[start:]
            for trap in received:
                if test(trap):
                    return trap
            if time.monotonic() >= give_up:
                names = [trap["trap_name"] or trap["trap_oid"] for trap in received]
                raise AssertionError(f"no matching trap in {timeout} s; received {names}\n{self.log()}")
            time.sleep(0.05)


class Snmpd(_Daemon):
    """snmpd as AgentX master on a private unix socket, SNMP on 127.0.0.1:<port>.

    `agentx_socket` defaults to <directory>/agentx/master (under a short temporary folder if
    that path is too long for a unix socket); `trap_receiver` gets v2c traps (trap2sink: the
    DOT3-OAM-MIB notifications carry Counter64 varbinds, which v1 traps cannot).
    `agentx_timeout` (s) and `agentx_retries` are how long snmpd waits for a subagent's
    answer; after timeout * (retries + 1) it answers genErr and drops the subagent's session.
    `debug` are snmpd -D tokens (e.g. ``["agentx/master"]``: every AgentX PDU in the log).
    """

    name = "snmpd"

    def __init__(
        self,
        directory: Path,
        *,
        agentx_socket: Path | str | None = None,
        port: int | None = None,
        trap_receiver: TrapReceiver | None = None,
        agentx_timeout: int = 1,
        agentx_retries: int = 0,
        agentx_perms: str = "0660 0770",
        extra_config: Sequence[str] = (),
        debug: Sequence[str] = (),
    ) -> None:
        super().__init__(directory, port, debug)
        self._short_dir: Path | None = None
        if agentx_socket is None:
            agentx_socket = self.directory / "agentx" / "master"
            if len(str(agentx_socket)) > MAX_SOCKET_PATH:
                self._short_dir = Path(tempfile.mkdtemp(prefix="snmpd-agentx-"))
                agentx_socket = self._short_dir / "master"
        self.agentx_socket = Path(agentx_socket)
        self.trap_receiver = trap_receiver
        self.agentx_timeout = agentx_timeout
        self.agentx_retries = agentx_retries
        self.agentx_perms = agentx_perms
        self.extra_config = tuple(extra_config)

    def config_text(self) -> str:
        lines = [
            "# a private AgentX master for one test (tests/snmp/agent.py)",
            "master agentx",
            f"agentXSocket unix:{self.agentx_socket}",
            f"agentXPerms {self.agentx_perms}",
            f"agentXTimeout {self.agentx_timeout}",
            f"agentXRetries {self.agentx_retries}",
            f"agentaddress udp:{self.address}",
            f"rocommunity {RO_COMMUNITY} {HOST}",
            f"rwcommunity {RW_COMMUNITY} {HOST}",
            "dontLogTCPWrappersConnects yes",
        ]
        if self.trap_receiver is not None:
            lines.append(f"trap2sink {self.trap_receiver.address} {RO_COMMUNITY}")
        return "\n".join([*lines, *self.extra_config, ""])

    def argv(self) -> list[str]:
        argv = ["snmpd", "-f", "-C", "-c", str(self.config_path), "-A", "-Lf", str(self.log_path)]
        argv += ["-p", str(self.pid_path), "-I", "-smux", "-M", mib_dirs(), "-m", MIBS]
        if self.debug:
            argv.append("-D" + ",".join(self.debug))
        return argv

    def _ready(self) -> bool:
        # the version line comes once the ports and the AgentX socket are open (a SIGKILLed snmpd
        # leaves its socket file behind, and a request sent before the UDP port is bound is lost)
        if "NET-SNMP version" not in self.log()[self._log_mark :] or not self.agentx_socket.is_socket():
            return False
        result = run_tool(
            "snmpget", "-v2c", "-c", RO_COMMUNITY, "-r", "0", "-t", "0.5", "-On", self.address, SYS_UPTIME
        )
        return result.returncode == 0 and "Timeticks" in result.stdout

    def close(self) -> None:
        self.stop()
        if self._short_dir is not None:
            shutil.rmtree(self._short_dir, ignore_errors=True)

    # the client tools against this agent
    def walk(self, oid: str = DOT3_OAM_MIB, *, bulk: bool = False) -> list[Varbind]:
        return walk(self, oid, bulk=bulk)

    def walk_named(self, oid: str = DOT3_OAM_MIB, *, bulk: bool = False) -> list[Varbind]:
        return walk_named(self, oid, bulk=bulk)

    def get(self, *oids: str) -> list[Varbind]:
        return get(self, *oids)

    def get_named(self, *oids: str) -> list[Varbind]:
        return get_named(self, *oids)

    def get_next(self, *oids: str) -> list[Varbind]:
        return get_next(self, *oids)

    def set(self, oid: str, type_char: str, value: str | int, *more: tuple[str, str, str | int]) -> Result:
        return set(self, oid, type_char, value, *more)


# --- the client tools ----------------------------------------------------------------------

Result = subprocess.CompletedProcess[str]
Agent = Snmpd | str  #: an Snmpd or an "host:port" address
_CLIENT_HOME: list[Path] = []


def _client_home() -> Path:
    """One private folder per test process for the clients' persistent files (cert_indexes)."""
    if not _CLIENT_HOME:
        home = Path(tempfile.mkdtemp(prefix="snmp-client-"))
        atexit.register(shutil.rmtree, home, True)
        _CLIENT_HOME.append(home)
    return _CLIENT_HOME[0]


def run_tool(tool: str, *args: str, timeout: float = 30.0) -> Result:
    """Run a net-snmp client tool with the private environment, the MIB folder and `args`."""
    argv = [tool, "-M", mib_dirs(), "-m", MIBS, *args]
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        errors="replace",
        env=environment(_client_home()),
        timeout=timeout,
        check=False,
    )


def _address(agent: Agent) -> str:
    return agent.address if isinstance(agent, Snmpd) else agent


def _request(tool: str, agent: Agent, oids: Sequence[str], output: Sequence[str], *options: str) -> list[Varbind]:
    result = run_tool(tool, *CLIENT_OPTIONS, "-c", RO_COMMUNITY, *output, *options, _address(agent), *oids)
    if result.returncode != 0:
        raise SnmpError(result)
    return parse_output(result.stdout, hex_strings="-Ox" in output)


def _walk(agent: Agent, oid: str, bulk: bool, output: Sequence[str]) -> list[Varbind]:
    varbinds = _request("snmpbulkwalk" if bulk else "snmpwalk", agent, [oid], output)
    # with nothing under `oid` both tools GET `oid` itself and print that exception: an empty walk
    if len(varbinds) == 1 and varbinds[0][1] in EXCEPTIONS.values():
        return []
    return varbinds


def walk(agent: Agent, oid: str = DOT3_OAM_MIB, *, bulk: bool = False) -> list[Varbind]:
    """snmpwalk (or snmpbulkwalk) of `oid`: numeric varbinds; [] when the subtree is empty.
    A walk of one instance (a scalar's .0) gives that instance, as snmpwalk does.
    Raises `SnmpError` on a timeout, an error-status or OIDs that do not increase."""
    return _walk(agent, oid, bulk, NUMERIC_OUTPUT)


def walk_named(agent: Agent, oid: str = DOT3_OAM_MIB, *, bulk: bool = False) -> list[Varbind]:
    """`walk` with symbolic OIDs and values (DOT3-OAM-MIB::dot3OamMode.1, "active(2)")."""
    return _walk(agent, oid, bulk, NAMED_OUTPUT)


def get(agent: Agent, *oids: str) -> list[Varbind]:
    """snmpget: one numeric varbind per OID (noSuchObject/noSuchInstance are values, not errors)."""
    return _request("snmpget", agent, oids, NUMERIC_OUTPUT)


def get_named(agent: Agent, *oids: str) -> list[Varbind]:
    return _request("snmpget", agent, oids, NAMED_OUTPUT)


def get_next(agent: Agent, *oids: str) -> list[Varbind]:
    """snmpgetnext: the successor of each OID (endOfMibView at the end)."""
    return _request("snmpgetnext", agent, oids, NUMERIC_OUTPUT)


def set(  # the tool's name (shadows the builtin in this module: use builtins.set)
    agent: Agent,
    oid: str,
    type_char: str,
    value: str | int,
    *more: tuple[str, str, str | int],
    community: str = RW_COMMUNITY,
    timeout: float = 30.0,
) -> Result:
    """snmpset of one or more (oid, type, value) (types as snmpset's: i u c s x d n o t a b U I F D);
    never raises for an SNMP error: see `snmp_error(result)` ("notWritable", "wrongValue" ...).
    ``-Ir``: the client does not check the value against the MIB, the agent must."""
    triples = [(oid, type_char, value), *more]
    args = [arg for triple in triples for arg in (triple[0], triple[1], str(triple[2]))]
    return run_tool(
        "snmpset", *CLIENT_OPTIONS, "-c", community, "-Ir", *NUMERIC_OUTPUT, _address(agent), *args, timeout=timeout
    )


def snmp_error(result: Result) -> str | None:
    """The error of a client tool's run: None (success), "timeout", an SNMP error-status name
    ("notWritable", "wrongValue", "genError", "noAccess" ...) or the first line of stderr."""
    if result.returncode == 0:
        return None
    if "Timeout: No Response" in result.stderr:
        return "timeout"
    match = re.search(r"Reason: \(?([A-Za-z]+)\)?", result.stderr)
    if match:
        return match.group(1)
    lines = result.stderr.strip().splitlines()
    return lines[0] if lines else f"exit status {result.returncode}"


def translate(*oids: str) -> list[str]:
    """Symbolic names of numeric OIDs (DOT3-OAM-MIB::dot3OamThresholdEvent); an OID no loaded
    MIB knows keeps the nearest name (SNMPv2-SMI::enterprises.99999.1.0)."""
    if not oids:
        return []
    result = run_tool("snmptranslate", "-OS", *oids)
    names = [line.strip() for line in result.stdout.splitlines() if line.strip()]
    return names if result.returncode == 0 and len(names) == len(oids) else list(oids)


# --- parsing ----------------------------------------------------------------------------------

_NUMERIC_LINE = re.compile(r"^(\.\d+(?:\.\d+)*) = (.*)$")
_NAMED_LINE = re.compile(r"^([A-Za-z][\w-]*::\S+|[.\w-]+) = (.*)$")


def parse_value(text: str, *, hex_strings: bool = True) -> tuple[str, str]:
    """(type, value) of net-snmp's printed value (the part after " = ")."""
    text = text.strip()
    if text in EXCEPTIONS:
        return EXCEPTIONS[text], ""
    if text == '""':
        return ("Hex-STRING" if hex_strings else "STRING"), ""
    kind, colon, value = text.partition(": ")
    if not colon:
        return "", text
    if kind == "Timeticks":
        ticks = re.match(r"\((\d+)\)", value)
        value = ticks.group(1) if ticks else value
    elif kind == "Hex-STRING":
        value = " ".join(value.split())
    elif kind == "STRING" and len(value) >= 2 and value[0] == value[-1] == '"':
        value = re.sub(r"\\(.)", r"\1", value[1:-1], flags=re.S)
    return kind, value


def parse_output(text: str, *, hex_strings: bool = True) -> list[Varbind]:
    """The varbinds of a client tool's output ("OID = TYPE: value" lines; a line that does not
    start a varbind continues the previous value, as a string with a newline does)."""
    varbinds: list[list[str]] = []
    for line in text.splitlines():
        match = _NUMERIC_LINE.match(line) or _NAMED_LINE.match(line)
        if match:
            varbinds.append([match.group(1), match.group(2)])
        elif varbinds:
            varbinds[-1][1] += "\n" + line
    return [(oid, *parse_value(value, hex_strings=hex_strings)) for oid, value in varbinds]


def _parse_trap(record: str) -> Trap:
    version, source, community, listed = [*record.split("\x1e"), "", "", ""][:4]
    varbinds: list[Varbind] = []
    for item in listed.split("\x1f"):
        oid, separator, value = item.strip().partition(" = ")
        if separator:
            varbinds.append((oid, *parse_value(value)))
    values = {oid: value for oid, _, value in varbinds}
    to_name = sorted({oid for oid, _, _ in varbinds} | {value for _, kind, value in varbinds if kind == "OID"})
    names = dict(zip(to_name, translate(*to_name), strict=True))
    trap_oid = values.get(SNMP_TRAP_OID, "")
    uptime = values.get(SYS_UPTIME, "")
    return Trap(
        version=TrapReceiver.VERSIONS.get(version, version),
        source=source,
        community=community,
        uptime=int(uptime) if uptime.isdigit() else None,
        trap_oid=trap_oid,
        trap_name=names.get(trap_oid, trap_oid).rpartition("::")[2],
        varbinds=varbinds,
        objects=[varbind for varbind in varbinds if varbind[0] not in (SYS_UPTIME, SNMP_TRAP_OID)],
        named=[
            (names[oid], kind, names.get(value, value) if kind == "OID" else value) for oid, kind, value in varbinds
        ],
    )


def processes(directory: Path) -> Iterator[int]:
    """Pids of live processes whose command line mentions `directory` (for leak checks)."""
    needle = str(directory).encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if needle in (entry / "cmdline").read_bytes():
                    yield int(entry.name)
