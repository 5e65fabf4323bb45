"""What the crash tests share: the servers a test starts (killed at its end), the writer
processes a server's log names, a node's processes by name, killing a whole node, and waiting
for a killed process to be gone."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from pathlib import Path

from tests.support.processes import Server, wait_for

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


def named(node: Server, name: str) -> list[int]:
    """The node's processes named ``name`` (``/proc/PID/comm``: ``ah-writer``, ``ah-worker``,
    ``ah-delivery``)."""
    found = []
    for pid in node.pids():
        try:
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue  # ended meanwhile
        if comm == name:
            found.append(pid)
    return found


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


def kill_node(node: Server) -> None:
    """SIGKILL the node and every process of it (its writer process would otherwise commit
    what it was handed before it ends with the node) at once; wait until they are gone."""
    assert node.process is not None
    wait_for_writer(node)
    pids = node.pids()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    node.process.wait(timeout=30)
    wait_for(lambda: not any(alive(pid) for pid in pids), "the node's processes end")
