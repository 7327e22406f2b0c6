"""Shared test setup: the repository root is importable, so every test directory can use
the test helpers by their package path (``from tests.pdu.strategies import oampdus``)."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = str(Path(__file__).resolve().parent.parent)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


@pytest.fixture(scope="session")
def any_user_python() -> Iterator[tuple[str, dict[str, str]]]:
    """(interpreter, environment) with which a user other than root runs efmoam from this
    checkout: the checkout and its venv may sit where only root may enter (a ``mktemp -d``
    clone), so the code and its libraries are copied where anyone may read them
    (`readable_runtime`), once a session."""
    from tests.packaging.unprivileged import readable_runtime

    runtime = readable_runtime(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"])
    if runtime is None:
        pytest.skip("no interpreter another user may run imports what efmoam needs")
    python, path = runtime
    try:
        yield python, {**os.environ, "PYTHONPATH": path}
    finally:
        shutil.rmtree(path, ignore_errors=True)
