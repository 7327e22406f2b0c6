"""Importing the codec writes nothing on stderr, wherever the daemon starts.

scapy 2.5 (Debian bookworm) reads the routing table when its Ethernet layer is imported
and warns when the loopback has no address, as in a new network namespace: a stray line in
the daemon's log.  `pdu.layers` keeps that import quiet and leaves scapy's logging as it was.
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
def test_importing_the_codec_in_a_new_network_namespace_is_silent() -> None:
    code = "import logging, pdu.codec; print(logging.getLogger('scapy.runtime').disabled)"
    done = subprocess.run(
        ["unshare", "--net", sys.executable, "-c", code],
        capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False, timeout=60,
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, "False\n", "")  # and scapy's logger enabled again
