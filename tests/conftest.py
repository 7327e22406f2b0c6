"""Shared test setup: the repository root is importable, so every test directory can use
the test helpers by their package path (``from tests.pdu.strategies import oampdus``)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parent.parent)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
