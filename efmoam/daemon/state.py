"""The daemon's saved state: per port, its event log and active events (JSON, atomic).

Written whenever an event is logged or cleared, with write-to-temporary, fsync and
rename, so a crash leaves either the old file or the new one.  A file that cannot be
read is reported and set aside (renamed ``*.bad``), never fatal.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

FILE_NAME = "state.json"
VERSION = 1


class StateStore:
    """Port snapshots under a state directory."""

    def __init__(self, directory: str) -> None:
        self.path = Path(directory) / FILE_NAME
        self.ports: dict[str, dict[str, Any]] = {}

    def load(self) -> str | None:
        """Read the file; returns a problem to report, or None."""
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            with contextlib.suppress(OSError):
                self.path.replace(self.path.with_suffix(".bad"))
            return f"unreadable state file {self.path} set aside: {exc}"
        if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("ports"), dict):
            return f"state file {self.path} has an unknown format; ignored"
        self.ports = data["ports"]
        return None

    def save(self) -> None:
        """Write every port's snapshot atomically (raises OSError to the caller)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        with open(temporary, "w") as handle:
            json.dump({"version": VERSION, "ports": self.ports}, handle, separators=(",", ":"))
            handle.flush()
            os.fsync(handle.fileno())
        temporary.replace(self.path)
