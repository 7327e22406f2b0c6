"""Who may use the control socket: the daemon's user, and the members of one group.

``daemon.control_socket_group`` names the group (as lldpd's ``_lldpd`` and FRR's
``frrvty`` do): the socket is then mode 0660, owned by the daemon's uid and that group.
Without a group, or when the group does not exist or cannot be given (the daemon is
not root and not a member of it), the socket is 0600: its user only, and root.  A
directory the daemon creates for the socket is 0750 with the same group, so that the
group can reach the socket; a directory that exists (systemd's RuntimeDirectory=, a
test's tmp) is left as it is.
"""

from __future__ import annotations

import grp
import os

GROUP_MODE = 0o660  #: the socket when a group may use it
OWNER_MODE = 0o600  #: the socket when only its user (and root) may
DIRECTORY_MODE = 0o750


def group_id(name: str | None) -> tuple[int | None, str | None]:
    """(gid, None) for an existing group; (None, why) when there is none by that name;
    (None, None) for no group configured."""
    if name is None:
        return None, None
    try:
        return grp.getgrnam(name).gr_gid, None
    except KeyError:
        return None, f"group {name} does not exist: the control socket is for its user and root only (mode 0600)"
    except (OSError, UnicodeError) as exc:  # an NSS backend that fails
        return None, f"group {name} not looked up ({exc}): the control socket is for its user and root only"


def make_directory(directory: str) -> bool:
    """Create the socket's directory (its parents as usual) with `DIRECTORY_MODE`; True
    when it was created here.  Raises OSError."""
    if os.path.isdir(directory):
        return False
    parent = os.path.dirname(directory.rstrip("/"))
    if parent:
        os.makedirs(parent, exist_ok=True)
    try:
        os.mkdir(directory, DIRECTORY_MODE)
    except FileExistsError:  # made meanwhile by someone else: theirs
        return False
    os.chmod(directory, DIRECTORY_MODE)  # whatever the umask took away
    return True


def grant(path: str, gid: int | None, directory: str | None) -> str | None:
    """Give the socket at `path` (and `directory`, one the daemon made) to group `gid` with
    `GROUP_MODE`; None: `OWNER_MODE`.  Returns the problem when the group could not be
    given (the socket is then `OWNER_MODE`).  Raises OSError when the mode cannot be set."""
    problem = None
    if gid is not None:
        try:
            os.chown(path, -1, gid, follow_symlinks=False)
            if directory is not None:
                os.chown(directory, -1, gid, follow_symlinks=False)
        except OSError as exc:
            problem = f"cannot give the control socket to group {gid}: {exc.strerror or exc}; it is mode 0600"
            gid = None
    os.chmod(path, GROUP_MODE if gid is not None else OWNER_MODE)
    return problem
