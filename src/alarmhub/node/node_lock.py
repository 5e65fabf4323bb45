"""One SQLite data directory, one node (decisions.md section 15): ``serve`` holds an exclusive
``flock`` of ``node.lock`` in the data directory from before it binds a port until it ends.

A second ``serve`` on the same data directory finds the lock taken and exits 1 at once, naming
the running node from what the file holds (its pid and HTTP addresses, written once the lock is
taken). The kernel frees the lock when the process that took it ends, however it ends (SIGKILL
included), so no node ever leaves a stale lock behind; the file itself stays, and what it holds
is read only while another process holds the lock.

Only the node's own process holds it: the lock belongs to the open file description, which
Python opens non-inheritable, and the node's workers, writer and delivery process are forked by
its spawner, which puts every descriptor it inherited on /dev/null first (or started by
``subprocess``), with the descriptors they are handed alone, so none of them shares it and none
frees it when it exits. On PostgreSQL several nodes share the database (each may share the data
directory, for ``secret.key``): no lock is taken.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator, Sequence

from alarmhub import files
from alarmhub.settings import Settings

LOCK_FILE = "node.lock"


@contextlib.contextmanager
def held(settings: Settings, addresses: Sequence[str]) -> Iterator[None]:
    """Hold the data directory's node lock (on SQLite) while the block runs, the node's pid and
    ``addresses`` written in its file; SystemExit with an ``error:`` line naming the running
    node when another holds it."""
    if not settings.database.startswith("sqlite"):
        yield
        return
    path = settings.data_dir / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, files.FILE_MODE)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SystemExit(f"error: {running_node(settings, fd)}") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "addresses": list(addresses)}).encode(), 0)
        yield
    finally:
        os.close(fd)


def running_node(settings: Settings, fd: int) -> str:
    """Why this node cannot start: the node that holds the lock, as its file ``fd`` tells."""
    try:
        holder = json.loads(os.pread(fd, 4096, 0))
        node = f"pid {int(holder['pid'])}, listening on {', '.join(holder['addresses'])}"
    except (OSError, ValueError, TypeError, KeyError):
        node = "its pid not written yet"  # it took the lock a moment ago
    return (
        f"a node already serves the data directory {files.shown(settings.data_dir)} ({node}); "
        "one SQLite data directory has one node (several nodes share a PostgreSQL database)"
    )
