"""Who holds a turn's lease, and whether that process is known to be dead.

A lease owner id names the host, the process's PID namespace and its PID (and a random part, so
two generators in one process differ): ``host-pidns-pid-random``. A listener that finds a turn
leased by a process of its own host and PID namespace whose PID no longer exists (a worker that
crashed, an ``hh serve`` that was killed and restarted) takes the turn over at once instead of
waiting for the lease to run out. Anything else (another host, another PID namespace, a live
PID, an id it cannot read) waits for the lease, as before.
"""

from __future__ import annotations

import os
import socket
import uuid

__all__ = ["new_owner_id", "dead_here"]


def _pid_namespace() -> str:
    """The inode of this process's PID namespace ("0" where there is no ``/proc``)."""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "0"


def _host() -> str:
    # the id's parts are joined by "-": a host name's own dashes are kept out of them
    return socket.gethostname()[:20].replace("-", "_") or "host"


def new_owner_id() -> str:
    """A lease owner id for one generator (at most 64 characters, the column's size)."""
    return f"{_host()}-{_pid_namespace()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by another user
        return True
    except OSError:
        return True
    return True


def dead_here(owner: str | None) -> bool:
    """True only when ``owner`` is a process of this host and PID namespace that has exited.

    Never true for this process (another generator in it may be live), for a namespace of "0"
    (no ``/proc``: PIDs cannot be compared safely) or for an id in another format."""
    if not owner:
        return False
    parts = owner.split("-")
    if len(parts) != 4 or not parts[2].isascii() or not parts[2].isdigit():
        return False
    host, namespace, pid_text, _ = parts
    if host != _host() or namespace == "0" or namespace != _pid_namespace():
        return False
    pid = int(pid_text)
    if pid <= 0 or pid == os.getpid():
        return False
    return not _alive(pid)
