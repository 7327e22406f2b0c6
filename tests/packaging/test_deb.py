"""The Debian package, built from a copy of the checkout with dpkg-buildpackage (or the one
named by $EFMOAM_DEB, which .ci/package sets to the package it just built), unpacked and
read: what it installs where, byte for byte against config/, its metadata and its scripts.
Installing it and checking the installed unit is .ci/package's part."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.packaging.checkout import copy_checkout
from tests.packaging.unprivileged import ROOT

VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
#: path in the package -> the one copy in the repository
FROM_CONFIG = {
    "lib/systemd/system/efmoam.service": "config/efmoam.service",
    "etc/efmoam/efmoam.yaml": "config/default.yaml",
    "usr/share/efmoam/prometheus/efmoam-rules.yaml": "config/prometheus/efmoam-rules.yaml",
    "usr/share/efmoam/examples/lab.yaml": "config/examples/lab.yaml",
    "usr/share/efmoam/examples/rdma-hosts.yaml": "config/examples/rdma-hosts.yaml",
    "usr/share/efmoam/examples/router-uplinks.yaml": "config/examples/router-uplinks.yaml",
    "usr/lib/sysusers.d/efmoam.conf": "debian/efmoam.sysusers",
}
DEBIAN_PATH = "PATH=/usr/sbin:/usr/bin:/sbin:/bin"  # Debian's python3, not a venv's or pyenv's


@dataclass
class Package:
    deb: Path
    files: Path  #: the unpacked data
    control: Path  #: the unpacked control archive

    def field(self, name: str) -> str:
        for line in (self.control / "control").read_text().splitlines():
            if line.startswith(f"{name}: "):
                return line.split(": ", 1)[1]
        raise KeyError(name)


def build(workdir: Path) -> Path:
    if shutil.which("dpkg-buildpackage") is None:
        pytest.skip("needs dpkg-buildpackage (dpkg-dev)")
    source = copy_checkout(workdir / "src")
    missing = subprocess.run(
        ["env", DEBIAN_PATH, "dpkg-checkbuilddeps"], cwd=source, capture_output=True, text=True, check=False
    )
    if missing.returncode != 0:
        pytest.skip(f"build dependencies not installed (apt-get build-dep ./): {missing.stderr.strip()}")
    result = subprocess.run(
        ["env", DEBIAN_PATH, "dpkg-buildpackage", "-us", "-uc", "-b"],
        cwd=source, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return workdir / f"efmoam_{VERSION}-1_all.deb"


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Package]:
    workdir = tmp_path_factory.mktemp("deb")
    deb = Path(os.environ["EFMOAM_DEB"]) if os.environ.get("EFMOAM_DEB") else build(workdir)
    assert deb.is_file(), f"no {deb}"
    files, control = workdir / "files", workdir / "control"
    subprocess.run(["dpkg-deb", "--extract", str(deb), str(files)], check=True)
    subprocess.run(["dpkg-deb", "--control", str(deb), str(control)], check=True)
    yield Package(deb, files, control)


def test_changelog_is_at_the_pyproject_version() -> None:
    """debian/changelog's newest entry is pyproject's version with a Debian revision."""
    first = (ROOT / "debian" / "changelog").read_text().splitlines()[0]
    name, version = first.split()[:2]
    assert name == "efmoam"
    assert version.strip("()").rsplit("-", 1)[0] == VERSION, f"add a debian/changelog entry for {VERSION}"


def test_name_version_and_relations(package: Package) -> None:
    assert package.deb.name == f"efmoam_{VERSION}-1_all.deb"
    assert (package.field("Package"), package.field("Version")) == ("efmoam", f"{VERSION}-1")
    assert package.field("Architecture") == "all"
    depends = {relation.split()[0] for relation in package.field("Depends").split(", ")}
    assert {"python3-scapy", "python3-attr", "python3-yaml", "python3-click", "iproute2"} <= depends
    assert {"nftables", "ethtool"} <= set(package.field("Recommends").split(", "))


def test_files_from_config_are_byte_identical(package: Package) -> None:
    for inside, original in FROM_CONFIG.items():
        assert (package.files / inside).read_bytes() == (ROOT / original).read_bytes(), inside


def test_conffile_command_and_no_second_copy(package: Package) -> None:
    assert (package.control / "conffiles").read_text().split() == ["/etc/efmoam/efmoam.yaml"]
    command = package.files / "usr/bin/efmoam"
    assert os.access(command, os.X_OK)
    assert command.read_text().splitlines()[0] == "#!/usr/bin/python3"
    site = package.files / "usr/lib/python3/dist-packages"
    assert (site / "efmoam/config/default.yaml").is_file()  # the embedded default the daemon reads
    assert not (site / "efmoam/share").exists()  # the unit, rules and examples are in their FHS places


def test_man_page_and_completion_come_from_the_command(package: Package) -> None:
    page = gzip.decompress((package.files / "usr/share/man/man8/efmoam.8.gz").read_bytes()).decode()
    assert page.startswith(".TH EFMOAM 8 ") and f'"efmoam {VERSION}"' in page
    for command in ("admin", "clear port", "config check", "daemon", "decode", "show port", "variables"):
        assert f'.SS "efmoam {command}"' in page, command
    completion = (package.files / "usr/share/bash-completion/completions/efmoam").read_text()
    assert "_EFMOAM_COMPLETE=bash_complete" in completion and "complete " in completion


def test_maintainer_scripts_make_the_user_and_do_not_enable(package: Package) -> None:
    """postinst makes the user (systemd-sysusers, no systemd needed), enables nothing on a
    first install, and touches systemd only where it runs; purge keeps the user."""
    postinst = (package.control / "postinst").read_text()
    assert "systemd-sysusers" in postinst and "efmoam.conf" in postinst
    assert "deb-systemd-helper debian-installed 'efmoam.service'" in postinst  # what --no-enable writes
    assert "systemctl --system daemon-reload" in postinst
    assert "if [ -d /run/systemd/system ]" in postinst
    postrm = (package.control / "postrm").read_text()
    assert "userdel" not in postrm and "deluser" not in postrm
