"""Importing the scapy layers writes nothing on stderr, wherever a program starts.

scapy 2.5 (Debian bookworm) reads the routing table when its Ethernet layer is imported
and warns when the loopback has no address, as in a new network namespace: a stray line in
a program's output.  `pdu.layers` keeps that import quiet and leaves scapy's logging as it
was.  (The codec imports no scapy at all: tests/unit/test_scapy_free_runtime.py.)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.linux.netns import needs_root

ROOT = Path(__file__).resolve().parents[2]


@needs_root
@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare (util-linux)")
def test_importing_the_layers_in_a_new_network_namespace_is_silent() -> None:
    code = "import logging, pdu.layers; print(logging.getLogger('scapy.runtime').disabled)"
    done = subprocess.run(
        ["unshare", "--net", sys.executable, "-c", code],
        capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False, timeout=60,
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, "False\n", "")  # and scapy's logger enabled again
