"""What the crash tests share: the servers a test starts (killed at its end), the writer
processes a server's log names, and waiting for a killed process to be gone."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from tests.support.processes import Server

WRITER_STARTED = re.compile(r'event="writer process started".*?\bpid=(\d+)')


class Servers(list[Server]):
    """Servers a test starts, each on a new port; :meth:`kill_all` ends whatever still runs."""

    def start(self, data_dir: Path) -> Server:
        server = Server(data_dir)
        self.append(server)
        return server.start()

    def kill_all(self) -> None:
        for server in self:
            server.kill()


def writer_pids(server: Server) -> list[int]:
    """The writer processes this server started, oldest first, from its log."""
    return [int(pid) for pid in WRITER_STARTED.findall(server.log())]


def wait_for_writer(server: Server, not_pid: int | None = None) -> int:
    """The pid of the server's newest writer process (other than ``not_pid``) once it logs."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        pids = [pid for pid in writer_pids(server) if pid != not_pid]
        if pids:
            return pids[-1]
        time.sleep(0.05)
    raise AssertionError(f"no writer process start in the log:\n{server.log()}")


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, an orphan nobody has reaped yet, counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def wait_gone(pid: int, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while alive(pid):
        assert time.monotonic() < deadline, f"process {pid} still runs after {seconds} s"
        time.sleep(0.02)
