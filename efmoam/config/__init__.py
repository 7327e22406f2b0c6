"""The configuration file: its model (`Config`) and its loader.

``load_config(path)`` reads a YAML file and raises `ConfigError` listing every problem
as ``file:line:column: path.to.key: message``; ``load_default_config()`` is what the
daemon runs with when it has no file (``efmoam/config/default.yaml``, shipped also as
``config/default.yaml`` in the source tree).
"""

from __future__ import annotations

from efmoam.config.loader import (
    ConfigError,
    Problem,
    default_config_text,
    load_config,
    load_config_text,
    load_default_config,
)
from efmoam.config.model import (
    ActionBackend,
    Config,
    CounterSource,
    DaemonConfig,
    PortProfile,
    PortRule,
)

__all__ = [
    "ActionBackend",
    "Config",
    "ConfigError",
    "CounterSource",
    "DaemonConfig",
    "PortProfile",
    "PortRule",
    "Problem",
    "default_config_text",
    "load_config",
    "load_config_text",
    "load_default_config",
]
