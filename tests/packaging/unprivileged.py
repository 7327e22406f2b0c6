"""The daemon run as config/efmoam.service runs it, without systemd: as the unit's user,
with only the unit's ambient capabilities (setpriv), on a read-only file system but for its
own directories (a private mount namespace), without writable executable memory
(PR_SET_MDWE), from files that user may read.

The user, the capabilities and which of these apply are read from the unit itself, so the
test that uses them checks the unit as written.  The account is the unit's user when the host has
it (the Debian package creates it), else a throwaway system user removed afterwards.  The
checkout and the venv may sit where only root may enter (a mktemp -d clone; a pyenv under
/root), so `readable_runtime` copies the code and its libraries to a world-readable directory
and finds an interpreter of the same version the user may run.
"""

from __future__ import annotations

import grp
import importlib
import os
import pwd
import shlex
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
UNIT = ROOT / "config" / "efmoam.service"
#: what the daemon imports, besides the standard library (top-level names)
MODULES = ("efmoam", "pdu", "scapy", "yaml", "click", "attr", "attrs")


def unit_service_settings(path: Path = UNIT) -> dict[str, str]:
    """The [Service] section of a unit as key -> value (a later assignment wins)."""
    settings: dict[str, str] = {}
    section = None
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
        elif section == "Service" and "=" in line:
            key, _, value = line.partition("=")
            settings[key.strip()] = value.strip()
    return settings


@dataclass(frozen=True)
class Account:
    name: str
    uid: int
    gid: int
    group: str


@contextmanager
def service_account(name: str) -> Iterator[Account]:
    """`name` if the host has it, else a new system user and group (deleted afterwards)."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        pass
    else:
        yield Account(name, entry.pw_uid, entry.pw_gid, grp.getgrgid(entry.pw_gid).gr_name)
        return
    throwaway = f"efmoam-t{uuid.uuid4().hex[:6]}"
    subprocess.run(
        ["useradd", "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
         "--shell", "/usr/sbin/nologin", throwaway],
        check=True, capture_output=True,
    )  # fmt: skip
    try:
        entry = pwd.getpwnam(throwaway)
        yield Account(throwaway, entry.pw_uid, entry.pw_gid, throwaway)
    finally:
        subprocess.run(["userdel", throwaway], check=False, capture_output=True)


def capability_names(value: str) -> list[str]:
    """``CAP_NET_RAW CAP_NET_ADMIN`` -> ``["net_raw", "net_admin"]`` (setpriv's spelling)."""
    return [word.lower().removeprefix("cap_") for word in value.split()]


def setpriv_prefix(account: Account, unit: dict[str, str]) -> list[str]:
    """setpriv arguments that give a process what the unit gives the daemon."""
    ambient = ",".join(f"+{cap}" for cap in capability_names(unit["AmbientCapabilities"]))
    bounding = ",".join(f"+{cap}" for cap in capability_names(unit["CapabilityBoundingSet"]))
    prefix = [
        "setpriv", f"--reuid={account.uid}", f"--regid={account.gid}", "--init-groups",
        f"--inh-caps=-all,{ambient}", f"--ambient-caps=-all,{ambient}", f"--bounding-set=-all,{bounding}",
    ]  # fmt: skip
    if unit.get("NoNewPrivileges") == "yes":
        prefix.append("--no-new-privs")
    return [*prefix, "--"]


#: sets the kernel's memory-deny-write-execute (prctl PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN;
#: Linux 6.3), then execs its arguments: what MemoryDenyWriteExecute= does with seccomp, kept
#: across exec and by children
_MDWE_EXEC = """
import ctypes, os, sys
if ctypes.CDLL(None, use_errno=True).prctl(65, 1, 0, 0, 0) != 0:
    sys.exit("PR_SET_MDWE: " + os.strerror(ctypes.get_errno()))
os.execvp(sys.argv[1], sys.argv[1:])
"""


def memory_deny_write_execute(python: str) -> list[str] | None:
    """A command prefix for MemoryDenyWriteExecute=yes, or None if this kernel has no PR_SET_MDWE."""
    prefix = [python, "-c", _MDWE_EXEC]
    probe = [*prefix, python, "-c", "import mmap; mmap.mmap(-1, 4096, prot=7)"]  # read, write, exec
    result = subprocess.run(probe, capture_output=True, text=True, check=False)
    if "PR_SET_MDWE" in result.stderr:
        return None
    assert "PermissionError" in result.stderr, result  # a writable, executable mapping is refused
    return prefix


def protect_system_strict(writable: list[Path]) -> list[str]:
    """A command prefix (run as root) for ProtectSystem=strict and ProtectHome=yes: in a
    private mount namespace every mount read-only but `writable`, and /home, /root and
    /run/user empty and closed; then it execs its arguments."""
    script = "\n".join([
        "set -e",
        "for target in $(awk '{print $5}' /proc/self/mountinfo | sort -u); do",
        "    mount -o remount,bind,ro \"$(printf '%b' \"$target\")\" 2>/dev/null || true",
        "done",
        *(f"mount --bind {shlex.quote(str(d))} {shlex.quote(str(d))} && mount -o remount,bind,rw {shlex.quote(str(d))}"
          for d in writable),
        "for hidden in /home /root /run/user; do",
        "    [ ! -d \"$hidden\" ] || mount -t tmpfs -o ro,mode=000 tmpfs \"$hidden\"",
        "done",
        'exec "$@"',
    ])  # fmt: skip
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, "sh"]


def readable_runtime(account_prefix: list[str]) -> tuple[str, str] | None:
    """(interpreter, PYTHONPATH) with which `account_prefix` can import every module the
    daemon needs, from copies in a new world-readable directory; None if no interpreter works.
    The system's interpreter comes first (a venv's may be under /home, which the unit hides).
    The caller removes the directory (PYTHONPATH)."""
    shared = Path(tempfile.mkdtemp(prefix="efmoam-runtime-"))
    skip = shutil.ignore_patterns("__pycache__")
    for name in MODULES:
        module = importlib.import_module(name)
        assert module.__file__ is not None
        source = Path(module.__file__).resolve().parent
        shutil.copytree(source, shared / source.name, ignore=skip)
    for entry in [shared, *shared.rglob("*")]:
        entry.chmod(0o755 if entry.is_dir() else 0o644)
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    for python in (f"/usr/bin/python{version}", f"/usr/local/bin/python{version}", sys.executable):
        if not os.path.exists(python):
            continue
        probe = [*account_prefix, "env", f"PYTHONPATH={shared}", python, "-c", f"import {', '.join(MODULES)}"]
        if subprocess.run(probe, capture_output=True, cwd="/", check=False).returncode == 0:
            return python, str(shared)
    shutil.rmtree(shared, ignore_errors=True)
    return None


def process_status(pid: int) -> dict[str, str]:
    """/proc/PID/status as field -> value."""
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {key: value.strip() for key, _, value in (line.partition(":") for line in lines)}
