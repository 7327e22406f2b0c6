"""What the daemon needs of the host, tried once at start: without it, one line and exit 4.

Started without the privileges it needs, the daemon would otherwise end in a
PermissionError traceback, or run managing nothing.  Each check does the real kind of
operation, harmlessly: opens (and closes) a raw packet socket, asks rtnetlink for a
change of nothing on the loopback interface (any change needs CAP_NET_ADMIN), creates
(and removes) a file in the state directory.  Only a refusal (EPERM, EACCES) is a
`NotPermitted`; another error (no such interface, a read-only file system) is left to
the paths that handle it.  The control socket's directory is checked where the socket
is made (`efmoam.daemon.control`, a ``not_permitted`` ControlError) and reported the
same way (`CONTROL_SOCKET` says how to let it).  Exit status 4 is LSB's "user had insufficient privilege", as
systemd.exec(5) lists it.
"""

from __future__ import annotations

import errno
import os
import socket
import struct
import tempfile

from efmoam.linux.netlink import NETLINK_ROUTE, NetlinkSocket

EXIT_NOT_PERMITTED = 4
CAPABILITIES = "run as root, or with CAP_NET_RAW and CAP_NET_ADMIN"
CONTROL_SOCKET = "run as root, or as a user who may write its directory (RuntimeDirectory=efmoam under systemd)"
RTM_SETLINK = 19
LOOPBACK_INDEX = 1  #: the first interface of every network namespace
_NOTHING_ON_LOOPBACK = struct.pack("=BxHiII", socket.AF_UNSPEC, 0, LOOPBACK_INDEX, 0, 0)  # ifinfomsg


class NotPermitted(Exception):
    """What the daemon may not do, and how to let it; `str()` is the one line to log."""

    def __init__(self, what: str, hint: str) -> None:
        super().__init__(f"{what}: permission denied ({hint})")


def refused(exc: OSError) -> bool:
    """Whether the kernel refused for lack of privilege (a NetlinkError carries the errno)."""
    return exc.errno in (errno.EPERM, errno.EACCES)


def check(state_dir: str) -> None:
    """Raise `NotPermitted` for the first privilege the daemon lacks."""
    try:
        socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0).close()
    except OSError as exc:
        if refused(exc):
            raise NotPermitted("cannot open a raw socket (AF_PACKET)", CAPABILITIES) from exc
    try:
        with NetlinkSocket(NETLINK_ROUTE) as rtnl:
            rtnl.request(RTM_SETLINK, _NOTHING_ON_LOOPBACK)
    except OSError as exc:
        if refused(exc):
            raise NotPermitted("cannot change network interfaces (rtnetlink)", CAPABILITIES) from exc
    try:
        os.makedirs(state_dir, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=state_dir, prefix=".efmoam-probe-"):
            pass
    except OSError as exc:
        if refused(exc):
            hint = "run as root, or as a user who may write it (StateDirectory=efmoam under systemd)"
            raise NotPermitted(f"cannot write the state directory {state_dir}", hint) from exc
