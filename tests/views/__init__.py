"""Tests of the views, and the YANG validator they share with the daemon's tests.

`validate` checks an RFC 7951 document with yanglint (Debian's libyang2-tools, which is
libyang) against the IEEE 802.3.2 modules in ``../shared/reference/yang`` from the
repository root.  The IEEE files are not the project's to ship, so they are never copied
here: `validator_missing` says why a test must skip when the folder or yanglint is absent.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from efmoam.views import yang

REPO = Path(__file__).resolve().parent.parent.parent
YANG_DIR = REPO / "../shared/reference/yang"
#: what yanglint loads: the augmenting module in the revision the view targets (its imports
#: come from YANG_DIR), and iana-if-type made implemented, so that
#: "iana-if-type:ethernetCsmacd" resolves
MODULES = (f"{yang.MODULE}@{yang.REVISION}.yang", "iana-if-type@2023-01-26.yang")


def validator_missing() -> str | None:
    """Why YANG data cannot be validated here, or None."""
    missing = [name for name in MODULES if not (YANG_DIR / name).is_file()]
    if missing:
        return (
            f"the IEEE 802.3.2 YANG modules are not in ../shared/reference/yang ({YANG_DIR.resolve()}): "
            f"{', '.join(missing)} missing; they are not shipped with efmoam"
        )
    if shutil.which("yanglint") is None:
        return "yanglint is not installed (Debian package libyang2-tools)"
    return None


def validate(data: Any, path: Path) -> subprocess.CompletedProcess[str]:
    """Write `data` as JSON to `path` and validate it as a datastore with state data."""
    path.write_text(json.dumps(data, indent=2))
    argv = ["yanglint", "-p", str(YANG_DIR), "-t", "data", *(str(YANG_DIR / name) for name in MODULES), str(path)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def assert_valid(result: subprocess.CompletedProcess[str]) -> None:
    """yanglint accepted the document: status 0 and not a word of output."""
    assert (result.returncode, result.stdout, result.stderr) == (0, "", ""), result.stdout + result.stderr
