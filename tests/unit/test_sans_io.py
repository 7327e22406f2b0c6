"""The wire format (`pdu`), the engine (`efmoam.core`) and the AgentX side (`efmoam.snmp`)
do no I/O: checked, not only stated.

Every module of these packages, and every efmoam module they import, is read as source:
none may import a module that reaches the clock, the network, processes, threads, files
or logging.  Time comes in as ``now``; outputs are data (architecture.md, "efmoam/core").
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
SANS_IO = (ROOT / "pdu", ROOT / "efmoam" / "core", ROOT / "efmoam" / "snmp")
#: modules whose import means I/O, a clock or concurrency
BANNED = frozenset({"socket", "select", "selectors", "asyncio", "threading", "subprocess", "logging", "os", "time"})


def imported(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in the file at `path`."""
    tree = ast.parse(path.read_text(), str(path))
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    if path.name == "__init__.py":
        package = ".".join(path.relative_to(ROOT).parts[:-1])
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]  # `from efmoam import lazy`
    return found


def module_file(name: str) -> Path | None:
    """The source file of an efmoam or pdu module, if it is one."""
    parts = name.split(".")
    for candidate in (ROOT.joinpath(*parts).with_suffix(".py"), ROOT.joinpath(*parts, "__init__.py")):
        if candidate.is_file():
            return candidate
    return None


def violations() -> list[str]:
    todo = [path for root in SANS_IO for path in sorted(root.rglob("*.py"))]
    seen: set[Path] = set()
    problems = []
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for line, name in imported(path):
            if name.split(".")[0] in BANNED:
                problems.append(f"{path.relative_to(ROOT)}:{line}: imports {name}")
            source = module_file(name) if name.split(".")[0] in ("efmoam", "pdu") else None
            if source is not None:
                todo.append(source)  # what the engine imports from the rest of efmoam is held to the same rule
    return problems


def test_pdu_and_the_core_import_nothing_that_does_io() -> None:
    assert violations() == []


def test_the_check_sees_a_banned_import(tmp_path: Path) -> None:
    """The control: the walk finds ``import time`` and ``from os import path`` where they are."""
    module = ROOT / "efmoam" / "core" / "_probe_sans_io.py"
    module.write_text("import time\nfrom os import path\nfrom . import discovery\n")
    try:
        problems = violations()
    finally:
        module.unlink()
    assert problems == [
        "efmoam/core/_probe_sans_io.py:1: imports time",
        "efmoam/core/_probe_sans_io.py:2: imports os",
        "efmoam/core/_probe_sans_io.py:2: imports os.path",
    ]
