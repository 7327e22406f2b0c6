"""The packages that load their names on first use (`pdu`, `efmoam.core`,
`efmoam.core.linkmon`) list each name twice: for type checkers (``TYPE_CHECKING``
imports) and for the loader.  The two lists must agree, name by name and module by
module, and every name must load; and reading the settings must not load the codec."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGES = ["pdu", "efmoam.core", "efmoam.core.linkmon"]


def type_checking_imports(package: str) -> dict[str, str]:
    """name -> module, from the package's ``if TYPE_CHECKING:`` block."""
    path = ROOT.joinpath(*package.split("."), "__init__.py")
    tree = ast.parse(path.read_text())
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.module is not None
                for alias in statement.names:
                    assert alias.asname == alias.name, f"{alias.name}: re-export it as `{alias.name} as {alias.name}`"
                    found[alias.name] = statement.module
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_both_lists_agree_and_every_name_loads(package: str) -> None:
    module = importlib.import_module(package)
    expected = type_checking_imports(package)
    assert expected, "no TYPE_CHECKING imports found"
    assert set(expected) <= set(dir(module))
    for name, home in expected.items():
        value = getattr(module, name)
        assert value is getattr(importlib.import_module(home), name), name
    # in a fresh interpreter, the names only the loader knows (none loaded yet) are exactly those
    code = f"import {package} as m; print(sorted(set(dir(m)) - set(vars(m))))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert result.stdout.strip() == str(sorted(expected))


def test_an_unknown_name_is_an_attribute_error() -> None:
    import efmoam.core

    with pytest.raises(AttributeError, match="no attribute 'NoSuchName'"):
        efmoam.core.NoSuchName  # noqa: B018


def test_reading_a_configuration_loads_neither_the_engine_nor_scapy() -> None:
    code = (
        "import sys\n"
        "from efmoam.config.check import run_check\n"
        "assert run_check('config/default.yaml', sys.stdout, sys.stderr) == 0\n"
        "from efmoam.views import text\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(('scapy', 'pdu.codec', 'efmoam.core.port')))\n"
        "print(loaded)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert result.stdout.splitlines()[-1] == "[]", result.stdout
