"""Package exports loaded on first use (PEP 562).

A package's ``__init__`` names what it exports and the module each name lives in; the
module is imported only when the name is first read.  So ``efmoam config check`` can read
the monitor table in `efmoam.core.linkmon` without importing the engine, the codec and
scapy.  Type checkers see the package's plain ``TYPE_CHECKING`` imports instead.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def exports(package: str, namespace: dict[str, Any], homes: Mapping[str, tuple[str, ...]]) -> None:
    """Install ``__getattr__`` and ``__dir__`` in `namespace` (a package's globals).

    `homes` maps a module (relative to `package`, e.g. ``".port"``) to the names it
    exports.  The package also imports them under ``TYPE_CHECKING`` as ``A as A`` (the
    explicit re-export type checkers read); a test checks that the two lists agree.
    """
    home_of = {name: module for module, names in homes.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = home_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value  # later lookups are plain module attributes
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(home_of))

    hooks: dict[str, Callable[..., Any]] = {"__getattr__": __getattr__, "__dir__": __dir__}
    namespace.update(hooks)
