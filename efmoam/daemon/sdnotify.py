"""systemd's notify protocol (sd_notify(3)): a datagram to $NOTIFY_SOCKET, no-op without it.

`StatusLine` keeps ``STATUS=`` current without costing the loop: what the status says
is computed at most once per `interval` (a pass over the ports), and sent only when
it changed, so a burst of changes is one datagram and a quiet daemon sends none.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable


def notify(*lines: str) -> bool:
    """Send ``READY=1``, ``STATUS=...`` and the like; False when not under systemd."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]  # the abstract namespace
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.setblocking(False)  # a manager that lags misses a line; the loop never waits
        try:
            sock.sendto("\n".join(lines).encode(), address)
        except OSError:
            return False
    return True


class StatusLine:
    """``STATUS=`` sent whenever `describe()` changes, at most once per `interval` seconds
    (checked when `next_deadline` is due); nothing at all without $NOTIFY_SOCKET."""

    def __init__(self, describe: Callable[[], str], interval: float = 1.0) -> None:
        self._describe = describe
        self.interval = interval
        self.enabled = bool(os.environ.get("NOTIFY_SOCKET"))
        self.text: str | None = None  #: the status last sent
        self.sent = 0  #: STATUS= datagrams sent
        self._due = 0.0

    def next_deadline(self) -> float | None:
        return self._due if self.enabled else None

    def service(self, now: float) -> None:
        if self.enabled and now >= self._due:
            self._due = now + self.interval
            self._send(self._describe())

    def send_now(self, now: float, *lines: str) -> None:
        """``STATUS=`` at once, with `lines` (``READY=1``) in the same datagram."""
        if self.enabled:
            self._due = now + self.interval
            self.text = self._describe()
            self.sent += notify(*lines, f"STATUS={self.text}")

    def _send(self, text: str) -> None:
        if text != self.text:
            self.text = text
            self.sent += notify(f"STATUS={text}")
