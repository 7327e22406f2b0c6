"""The wheel carries the systemd unit, the alert rules and the examples (efmoam/share), and
the default configuration the daemon reads, byte for byte as they are in config/."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from tests.packaging.checkout import copy_checkout
from tests.packaging.unprivileged import ROOT

#: what the wheel must carry -> the one copy in the repository
CARRIED = {
    "efmoam/share/efmoam.service": "config/efmoam.service",
    "efmoam/share/prometheus/efmoam-rules.yaml": "config/prometheus/efmoam-rules.yaml",
    "efmoam/share/examples/lab.yaml": "config/examples/lab.yaml",
    "efmoam/share/examples/rdma-hosts.yaml": "config/examples/rdma-hosts.yaml",
    "efmoam/share/examples/router-uplinks.yaml": "config/examples/router-uplinks.yaml",
    "efmoam/config/default.yaml": "config/default.yaml",
}


def test_share_is_a_link_to_config_not_a_copy() -> None:
    share = ROOT / "efmoam" / "share"
    assert share.is_symlink() and share.readlink() == Path("../config")
    examples = {path.name for path in (ROOT / "config" / "examples").glob("*.yaml")}
    assert examples == {Path(name).name for name in CARRIED if "/examples/" in name}, "list new examples here"


def test_wheel_carries_unit_rules_examples_and_default_config(tmp_path: Path) -> None:
    source = copy_checkout(tmp_path / "src")
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(tmp_path / "dist")]
    result = subprocess.run([*pip_wheel, str(source)], capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    [wheel] = (tmp_path / "dist").glob("efmoam-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        for inside, original in CARRIED.items():
            assert inside in names, (inside, sorted(n for n in names if not n.endswith(".py")))
            assert archive.read(inside) == (ROOT / original).read_bytes(), inside
    assert not any(name.startswith(("config/", "debian/", "tests/")) for name in names)
