"""No runtime path imports scapy: only the scapy layer API (`pdu.layers`, `pdu.reference`)
and the tests do (issue 18: importing scapy enumerates every interface of the namespace,
6.6 s and 203 MB for ``efmoam decode`` among 1,024 veths).

Every command runs for real in a subprocess, in-process through the click group, on a tiny
input (a one-frame capture), and reports afterwards whether ``scapy`` is in ``sys.modules``.
The daemon, ``diagnose`` and ``replay --to`` need root: they run in a new network namespace
(``unshare --net``) on a veth pair, the daemon until a SIGTERM after a second.
"""

from __future__ import annotations

import os
import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import efmoam
import pdu
from pdu import Information, InfoTlv, encode
from tests.replay.make_pcaps import A_MAC, pcap_bytes

ROOT = Path(__file__).resolve().parents[2]
#: the scapy layer API and what runs only as a program
SCAPY_API = frozenset({"pdu.layers", "pdu.reference"})
NOT_IMPORTABLE = frozenset({"efmoam.cli.__main__"})  # runs the CLI when imported

#: runs ``efmoam ARGS`` in-process, then writes whether scapy was loaded to $SCAPY_PROBE
WRAPPER = """
import os, signal, sys, threading
if os.environ.get("STOP_AFTER"):
    threading.Timer(float(os.environ["STOP_AFTER"]), os.kill, (os.getpid(), signal.SIGTERM)).start()
from efmoam.cli.main import main
try:
    main.main(args=sys.argv[1:], prog_name="efmoam")
    code = 0
except SystemExit as exc:
    code = exc.code
with open(os.environ["SCAPY_PROBE"], "w") as probe:
    probe.write(f"{code} {sorted(m for m in sys.modules if m.split('.')[0] == 'scapy')[:3]}")
"""

needs_root_and_unshare = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("ip") is None,
    reason="needs root, unshare (util-linux) and ip (iproute2)",
)


def one_frame_capture(directory: Path) -> Path:
    """A pcap of one Information OAMPDU from A_MAC (Active, link events, loopback)."""
    local = InfoTlv(1, 1, 0, 0, 0, 0, 0x0D, 0, 1518, 0x001122, 0)
    path = directory / "one.pcap"
    path.write_bytes(pcap_bytes([(0.0, encode(Information(A_MAC, 0x08, (local,))))]))
    return path


def run_efmoam(args: list[str], tmp_path: Path, *, netns: bool = False, stop_after: float = 0) -> tuple[str, str]:
    """(exit code, scapy modules loaded) of ``efmoam ARGS`` run in a fresh interpreter.

    With `netns`, in a new network namespace with ``lo`` up and a veth pair ``d0``-``d1``, up.
    """
    probe = tmp_path / "probe"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SCAPY_PROBE": str(probe), "STOP_AFTER": str(stop_after or "")}
    command = [sys.executable, "-c", WRAPPER, *args]
    if netns:
        links = "ip link add d0 type veth peer name d1 && ip link set d0 up && ip link set d1 up"
        setup = f'ip link set lo up && {links} && exec "$@"'
        command = ["unshare", "--net", "sh", "-c", setup, "sh", *command]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60, check=False)
    assert probe.is_file(), (done.returncode, done.stdout, done.stderr)
    code, loaded = probe.read_text().split(" ", 1)
    return code, loaded


def test_no_module_of_efmoam_or_pdu_imports_scapy_but_the_layer_api() -> None:
    names = [
        module.name
        for package in (efmoam, pdu)
        for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")
        if module.name not in SCAPY_API | NOT_IMPORTABLE
    ]
    assert len(names) > 50  # the walk found the packages' modules
    code = (
        "import importlib, sys\n"
        "for name in sys.argv[1:]:\n"
        "    importlib.import_module(name)\n"
        "    if 'scapy' in sys.modules:\n"
        "        sys.exit(f'{name} imports scapy')\n"
        "importlib.import_module('pdu.layers')\n"
        "print('scapy' in sys.modules)\n"  # the control: the layer API does load it
    )
    done = subprocess.run([sys.executable, "-c", code, *names], capture_output=True, text=True, cwd=ROOT, check=False)
    assert (done.returncode, done.stderr.strip()[-200:], done.stdout) == (0, "", "True\n")


def test_importing_the_model_and_codec_names_of_pdu_does_not_import_scapy() -> None:
    code = "import sys, pdu\nfor name in dir(pdu): getattr(pdu, name)\nprint('scapy' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout == "False\n"


@pytest.mark.parametrize(
    ("args", "expected_code"),
    [
        (["decode", "one.pcap"], "0"),
        (["decode", "--json", "one.pcap"], "0"),
        (["replay", "one.pcap"], "0"),
        (["replay", "--json", "one.pcap"], "0"),
        (["replay", "--as", A_MAC, "one.pcap"], "0"),
        (["show", "port", "--socket", "/nonexistent/efmoam.sock"], "1"),
        (["config", "check", str(ROOT / "config" / "default.yaml")], "0"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else None,
)
def test_a_command_runs_without_scapy(args: list[str], expected_code: str, tmp_path: Path) -> None:
    one_frame_capture(tmp_path)
    assert run_efmoam(args, tmp_path) == (expected_code, "[]")


def test_replay_check_runs_without_scapy(tmp_path: Path) -> None:
    one_frame_capture(tmp_path)
    assert run_efmoam(["replay", "--write-expect", "one.pcap"], tmp_path) == ("0", "[]")
    assert (tmp_path / "one.expect.json").is_file()
    assert run_efmoam(["replay", "--check", "one.pcap"], tmp_path) == ("0", "[]")


@needs_root_and_unshare
def test_replay_transmit_and_diagnose_run_without_scapy(tmp_path: Path) -> None:
    one_frame_capture(tmp_path)
    assert run_efmoam(["replay", "--to", "d0", "--from", A_MAC, "one.pcap"], tmp_path, netns=True) == ("0", "[]")
    # d0 hears nothing from its silent peer d1: diagnose finds a problem (1), after listening with the codec loaded
    assert run_efmoam(["diagnose", "d0", "--listen", "0.2"], tmp_path, netns=True) == ("1", "[]")


@needs_root_and_unshare
def test_the_daemon_runs_without_scapy(tmp_path: Path) -> None:
    config = tmp_path / "efmoam.yaml"
    config.write_text(
        "daemon:\n"
        f"  control_socket: {tmp_path / 'efmoam.sock'}\n"
        f"  state_dir: {tmp_path / 'state'}\n"
        "  metrics: {enabled: false}\n"
        "defaults:\n"
        "  transmit_interval: 0.1\n"
        "  link_monitoring: {enabled: true}\n"
        "ports:\n"
        "  - match: d0\n"
    )
    # served for a second (Information OAMPDUs encoded and sent), stopped by SIGTERM: exit 0
    assert run_efmoam(["daemon", "--config", str(config)], tmp_path, netns=True, stop_after=1.5) == ("0", "[]")


def test_the_probe_sees_scapy_when_a_command_loads_it(tmp_path: Path) -> None:
    """The control: a command that has loaded scapy is reported as such."""
    one_frame_capture(tmp_path)
    sitecustomize = tmp_path / "site"
    sitecustomize.mkdir()
    (sitecustomize / "sitecustomize.py").write_text("import pdu.layers\n")
    probe = tmp_path / "probe"
    env = {**os.environ, "PYTHONPATH": f"{sitecustomize}{os.pathsep}{ROOT}", "SCAPY_PROBE": str(probe)}
    subprocess.run(
        [sys.executable, "-c", WRAPPER, "decode", "one.pcap"], env=env, cwd=tmp_path, check=False, capture_output=True
    )
    code, loaded = probe.read_text().split(" ", 1)
    assert code == "0" and "scapy" in loaded
