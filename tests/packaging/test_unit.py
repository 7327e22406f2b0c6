"""config/efmoam.service: systemd's own checks (verify, the security exposure the README and
CI promise) and agreement with the default configuration and the Debian package's user."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from efmoam.config import load_default_config
from tests.packaging.unprivileged import ROOT, UNIT, unit_service_settings

MAX_EXPOSURE = 2.5
needs_systemd_analyze = pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze")


def exposure(unit: Path) -> float:
    result = subprocess.run(
        ["systemd-analyze", "security", "--offline=true", "--no-pager", str(unit)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    found = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", result.stdout + result.stderr)
    assert found, result
    return float(found.group(1))


@needs_systemd_analyze
def test_security_exposure_is_at_most_2_5() -> None:
    assert exposure(UNIT) <= MAX_EXPOSURE


@needs_systemd_analyze
def test_systemd_analyze_verify_passes(tmp_path: Path) -> None:
    """The unit as a pip install adjusts it (the command where pip put it): systemd checks
    every key and that ExecStartPre=/ExecStart= name an executable."""
    command = Path(sys.executable).parent / "efmoam"
    if not command.exists():
        pytest.skip(f"no efmoam command beside {sys.executable}")
    unit = tmp_path / "efmoam.service"
    unit.write_text(UNIT.read_text().replace("/usr/bin/efmoam", str(command)))
    result = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", str(unit)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "efmoam.service" not in result.stderr, result.stderr  # warnings about the unit exit 0 too


def test_least_privilege_settings() -> None:
    unit = unit_service_settings()
    assert unit["User"] == unit["Group"] == "efmoam"
    assert set(unit["AmbientCapabilities"].split()) == {"CAP_NET_RAW", "CAP_NET_ADMIN"}
    assert unit["CapabilityBoundingSet"] == unit["AmbientCapabilities"]
    assert unit["NoNewPrivileges"] == "yes"
    assert unit["ProtectSystem"] == "strict"


def test_unit_agrees_with_the_default_configuration() -> None:
    """The directories systemd makes are the ones the default configuration uses, the
    control socket's group is the unit's group, and both commands name the conffile."""
    unit = unit_service_settings()
    daemon = load_default_config().daemon
    assert str(Path(daemon.control_socket).parent) == "/run/" + unit["RuntimeDirectory"]
    assert unit["RuntimeDirectoryMode"] == "0750"  # the group reaches the socket, others do not
    assert daemon.state_dir == "/var/lib/" + unit["StateDirectory"]
    assert daemon.control_socket_group == unit["Group"]
    assert unit["ExecStartPre"] == "/usr/bin/efmoam config check /etc/efmoam/efmoam.yaml"
    assert unit["ExecStart"] == "/usr/bin/efmoam daemon -c /etc/efmoam/efmoam.yaml"


def test_unit_user_is_the_one_the_package_creates() -> None:
    """debian/efmoam.sysusers makes the unit's user, with the state directory as home."""
    unit = unit_service_settings()
    lines = [line.split() for line in (ROOT / "debian" / "efmoam.sysusers").read_text().splitlines()]
    users = [fields for fields in lines if fields and fields[0] == "u"]
    assert [fields[1] for fields in users] == [unit["User"]]
    assert "/var/lib/" + unit["StateDirectory"] in users[0]
