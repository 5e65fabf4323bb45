"""A node's run directory: its own, private (mode 0700, under the system's temporary
directory, removed at its stop), for the Unix socket its writer listens on for the node's other
processes (its workers, its delivery process) and, with several workers, their metric files.
Nodes that share a data directory never meet there; a Unix socket's path must be short.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from pathlib import Path

RUN_DIR_PREFIX = "alarmhub-node-"  # then the node's process number
WRITER_SOCKET = "writer.sock"


def make() -> Path:
    """A new run directory for this process's node (the ones nodes killed outright left
    behind removed first: :func:`remove_abandoned_run_dirs`)."""
    remove_abandoned_run_dirs(Path(tempfile.gettempdir()))
    return Path(tempfile.mkdtemp(prefix=f"{RUN_DIR_PREFIX}{os.getpid()}-"))


def remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def remove_abandoned_run_dirs(parent: Path) -> int:
    """Remove the run directories in ``parent`` that nodes killed outright (SIGKILL, a power
    cut of a container) left behind: those of this user whose node's process is gone and whose
    writer's socket no one listens on (a node of another process namespace sharing the
    directory has a process number this one cannot see). How many. A directory whose process
    number was taken by another process since is left alone."""
    removed = 0
    for path in parent.glob(f"{RUN_DIR_PREFIX}*-*"):
        pid = path.name[len(RUN_DIR_PREFIX) :].split("-", 1)[0]
        try:
            if not pid.isdigit() or path.stat().st_uid != os.getuid() or _alive(int(pid)):
                continue
        except OSError:
            continue
        if _listened_on(path / WRITER_SOCKET):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed += 1
    return removed


def _listened_on(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        pass
    return True
