"""The ``efmoam`` command line: `main` (the click group, `efmoam.cli.main`) and the
demonstration lab (`efmoam.cli.lab`).  Kept light: ``efmoam --help`` imports neither
the engine nor scapy."""

from __future__ import annotations

from efmoam.cli.main import EXIT_BROKEN_PIPE, exit_quietly_on_broken_pipe, main

__all__ = ["EXIT_BROKEN_PIPE", "exit_quietly_on_broken_pipe", "main"]
