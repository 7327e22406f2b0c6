"""systemd's notify protocol (sd_notify(3)): a datagram to $NOTIFY_SOCKET, no-op without it."""

from __future__ import annotations

import os
import socket


def notify(*lines: str) -> bool:
    """Send ``READY=1``, ``STATUS=...`` and the like; False when not under systemd."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]  # the abstract namespace
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        try:
            sock.sendto("\n".join(lines).encode(), address)
        except OSError:
            return False
    return True
