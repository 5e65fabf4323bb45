"""A node's run directory (the writer's socket, the workers' metric files) left behind by a node
killed outright is removed when the next node starts; a live node's, another process's or a
directory of another shape are left alone, and so is one whose writer's socket is listened on
(``alarmhub.node.run_dir.remove_abandoned_run_dirs``)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from alarmhub.node.run_dir import RUN_DIR_PREFIX, WRITER_SOCKET, remove_abandoned_run_dirs


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_only_the_run_dirs_of_dead_nodes_are_removed(tmp_path: Path) -> None:
    dead = tmp_path / f"{RUN_DIR_PREFIX}{_dead_pid()}-abc123"
    live = tmp_path / f"{RUN_DIR_PREFIX}{os.getpid()}-def456"
    unnamed = tmp_path / f"{RUN_DIR_PREFIX}xyz789"  # no process number in its name
    other = tmp_path / "something-else"
    for path in (dead, live, unnamed, other):
        (path / "metrics").mkdir(parents=True)
    (dead / "writer.sock").write_text("")

    assert remove_abandoned_run_dirs(tmp_path) == 1
    assert not dead.exists()
    assert live.exists() and unnamed.exists() and other.exists()


def test_a_run_dir_whose_writer_socket_is_listened_on_is_left() -> None:
    """A node of another process namespace: its process number means nothing here."""
    # a short parent, as the system's temporary directory is: a socket's path has a limit
    with tempfile.TemporaryDirectory(prefix="rd") as parent:
        elsewhere = Path(parent) / f"{RUN_DIR_PREFIX}{_dead_pid()}-ghi012"
        elsewhere.mkdir()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as writer:
            writer.bind(str(elsewhere / WRITER_SOCKET))
            writer.listen(1)
            assert remove_abandoned_run_dirs(Path(parent)) == 0
        assert elsewhere.exists()
        assert remove_abandoned_run_dirs(Path(parent)) == 1  # no one listens any more
