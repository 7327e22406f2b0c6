"""A copy of the checkout's files (tracked, and new ones not ignored: no .venv, no caches)
for the packaging tests to build from, so nothing is written beside the checkout."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.packaging.unprivileged import ROOT


def copy_checkout(destination: Path) -> Path:
    """Copy the checkout's files to `destination` (symbolic links kept); return it."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True, check=True,
    ).stdout  # fmt: skip
    for name in filter(None, listed.decode().split("\0")):
        source = ROOT / name
        if not source.exists() and not source.is_symlink():
            continue  # deleted in the working tree
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(source.readlink())
        else:
            shutil.copy2(source, target)
    return destination
