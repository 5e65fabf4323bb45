"""A PostgreSQL primary and a synchronous streaming standby on this machine, for fault tests.

Built from the server binaries Debian ships (``initdb``, ``pg_ctl``, ``pg_basebackup``,
``pg_isready`` under ``/usr/lib/postgresql/VERSION/bin``): one ``initdb``, one
``pg_basebackup``, each server on a free port of 127.0.0.1 in a directory of its own under a
temporary directory. The primary's ``synchronous_standby_names`` names the standby, so each
commit waits until the standby has flushed its WAL (what Patroni's ``synchronous_mode`` with
``synchronous_mode_strict`` sets): with the standby stopped, commits wait for ever.

For speed the servers run with ``fsync=off`` and ``full_page_writes=off``: the tests kill
server *processes* (SIGKILL) and never the machine, and a process's death loses nothing the
kernel has, so what they prove holds with fsync on; a power cut is not what they test.

The faults: :meth:`PgCluster.stop_standby` / :meth:`PgCluster.start_standby` (commits wait,
then go on), :meth:`PgCluster.kill_primary` (SIGKILL of the postmaster and its backends),
:meth:`PgCluster.promote` (``pg_ctl promote``, what Patroni does) and
:meth:`PgCluster.switchover` (the primary stopped cleanly, the standby promoted). After a
promotion the cluster is one server until :meth:`PgCluster.rejoin` makes the old primary the
new one's synchronous standby again (a new copy), after which the primary can fail again.

The machine may run the tests as root: ``initdb`` refuses to, so the binaries then run as the
``postgres`` user (``runuser -u postgres --``) on directories it owns. :meth:`PgCluster.cleanup`
stops every server it started (immediate shutdown, then SIGKILL) and removes the directories;
use the cluster as a context manager so that a failing test never leaves a server running.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import psycopg
import pytest

from tests.support.processes import free_port

STANDBY_NAME = "standby1"
DATABASE = "alarmhub"
START_SECONDS = 60.0
SERVER_SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "max_connections": "200",
    "shared_buffers": "32MB",
    "wal_level": "replica",
    "max_wal_senders": "5",
    "wal_keep_size": "256MB",
    "hot_standby": "on",
    "synchronous_commit": "on",
    "fsync": "off",  # see the module's docstring
    "full_page_writes": "off",
    "wal_sender_timeout": "10s",
    "wal_receiver_status_interval": "1s",
    "log_min_messages": "warning",
}


def binaries() -> Path | None:
    """The directory of the newest PostgreSQL server binaries installed, or None."""
    found = [Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/initdb")]
    found.sort(key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    return found[-1] if found else None


MARKS = [
    pytest.mark.faults,
    pytest.mark.backends("postgresql"),
    pytest.mark.skipif(binaries() is None, reason="no PostgreSQL server binaries"),
]
"""A fault test module's marks (``pytestmark = pg_cluster.MARKS``): ``make faults`` selects
them; they run on PostgreSQL, and need the server binaries (Debian's postgresql package)."""


@dataclass
class Server:
    """One server of the cluster: its data directory and port."""

    name: str
    data: Path
    port: int
    running: bool = False

    def pid(self) -> int | None:
        """The postmaster's process number while it runs."""
        try:
            return int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None


class PgCluster:
    """A primary and a synchronous standby (see the module's docstring)."""

    def __init__(self) -> None:
        bin_dir = binaries()
        if bin_dir is None:
            raise RuntimeError("no PostgreSQL server binaries (/usr/lib/postgresql/*/bin)")
        self.bin = bin_dir
        self._as_postgres = os.geteuid() == 0
        self.base = Path(tempfile.mkdtemp(prefix="alarmhub-pg-"))
        if self._as_postgres:
            user = pwd.getpwnam("postgres")
            os.chown(self.base, user.pw_uid, user.pw_gid)
        self.primary = Server("primary", self.base / "primary", free_port())
        self.standby: Server | None = Server(STANDBY_NAME, self.base / "standby", free_port())
        self._servers = [self.primary, self.standby]

    # the cluster's life ---------------------------------------------------------------------

    def __enter__(self) -> PgCluster:
        try:
            self.start()
        except BaseException:
            self.cleanup()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.cleanup()

    def start(self) -> None:
        """Make and start the primary, copy it into the standby, start that, and wait until the
        standby is the primary's synchronous one; create the database :data:`DATABASE`."""
        primary, standby = self.primary, self.standby
        assert standby is not None
        self._run(
            "initdb", "-D", str(primary.data), "-U", "postgres", "-A", "trust", "-N",
            "--locale=C.UTF-8", "-E", "UTF8",
        )  # fmt: skip
        settings = {
            **SERVER_SETTINGS,
            "port": str(primary.port),
            "unix_socket_directories": f"'{self.base}'",
        }
        with (primary.data / "postgresql.conf").open("a") as conf:
            conf.writelines(f"{key} = {value}\n" for key, value in settings.items())
        with (primary.data / "pg_hba.conf").open("a") as hba:
            hba.write("host replication postgres 127.0.0.1/32 trust\n")
        self._pg_ctl(primary, "start")
        self._execute(primary, f'CREATE DATABASE "{DATABASE}"')
        self._follow(standby)

    def _follow(self, standby: Server) -> None:
        """Make ``standby`` a copy of the primary (``pg_basebackup``), start it streaming, make
        it the primary's synchronous standby and wait until it is."""
        primary = self.primary
        self._run(
            "pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres",
            "-D", str(standby.data), "-X", "stream", "-R", "--no-sync", "-c", "fast",
        )  # fmt: skip
        with (standby.data / "postgresql.auto.conf").open("a") as conf:
            conf.write(f"port = {standby.port}\n")
            conf.write(
                f"primary_conninfo = 'host=127.0.0.1 port={primary.port} user=postgres "
                f"application_name={STANDBY_NAME}'\n"
            )
        self._pg_ctl(standby, "start")
        self.standby = standby
        # only now: the commits before (CREATE DATABASE) would have waited for a standby
        self._execute(primary, f"ALTER SYSTEM SET synchronous_standby_names = '{STANDBY_NAME}'")
        self._execute(primary, "SELECT pg_reload_conf()")
        self.wait_synchronous()

    def cleanup(self) -> None:
        """Stop every server still running (immediately, SIGKILL if that fails) and remove the
        directories. Never raises."""
        for server in self._servers:
            if server.data.exists():
                with contextlib.suppress(Exception):
                    self._run("pg_ctl", "-D", str(server.data), "-m", "immediate", "-w",
                              "-t", "20", "stop", check=False)  # fmt: skip
                pid = server.pid()
                if pid is not None:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
            server.running = False
        shutil.rmtree(self.base, ignore_errors=True)

    # faults -----------------------------------------------------------------------------------

    def stop_standby(self) -> None:
        """Stop the standby (fast shutdown): the primary's commits wait for it from now on."""
        assert self.standby is not None
        self._pg_ctl(self.standby, "stop", "-m", "fast")

    def start_standby(self) -> None:
        """Start the standby again and wait until it is synchronous again (waiting commits go
        on)."""
        assert self.standby is not None
        self._pg_ctl(self.standby, "start")
        self.wait_synchronous()

    def kill_primary(self) -> None:
        """SIGKILL the primary's postmaster and every one of its processes (a machine lost)."""
        pid = self.primary.pid()
        assert pid is not None, "the primary is not running"
        pids = [pid, *_children(pid)]
        for each in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(each, signal.SIGKILL)
        deadline = time.monotonic() + START_SECONDS
        while any(_alive(each) for each in pids) and time.monotonic() < deadline:
            time.sleep(0.02)
        self.primary.running = False

    def promote(self) -> float:
        """Promote the standby (``pg_ctl promote``, waiting until it accepts writes): it is the
        primary from now on, without a standby. The monotonic time the promotion ended."""
        standby = self.standby
        assert standby is not None
        self._run("pg_ctl", "-D", str(standby.data), "-w", "-t", str(int(START_SECONDS)),
                  "promote")  # fmt: skip
        self._wait_writable(standby)
        done = time.monotonic()
        self.primary, self.standby = standby, None
        self._execute(self.primary, "ALTER SYSTEM SET synchronous_standby_names = ''")
        self._execute(self.primary, "SELECT pg_reload_conf()")
        return done

    def rejoin(self) -> None:
        """After a promotion: the old primary (killed or stopped) made the new primary's
        synchronous standby again, on its port, from a new copy (Patroni's reinit of a member
        that cannot follow), so that the primary can fail again."""
        assert self.standby is None, "no promotion since the last standby was made"
        old = next(server for server in self._servers if server is not self.primary)
        if old.pid() is not None:
            self._run("pg_ctl", "-D", str(old.data), "-m", "immediate", "-w", "stop", check=False)
        shutil.rmtree(old.data)
        self._follow(old)

    def switchover(self) -> float:
        """Stop the primary cleanly (fast shutdown: its WAL reaches the standby first), then
        promote the standby; the monotonic time the promotion ended."""
        self._pg_ctl(self.primary, "stop", "-m", "fast")
        return self.promote()

    # what tests read ----------------------------------------------------------------------------

    def url(self, comma: bool = False) -> str:
        """The multi-host URL of the database :data:`DATABASE` with
        ``target_session_attrs=read-write`` (docs/deployment.md's form; ``comma``: libpq's
        other form, the servers in the authority)."""
        ports = [server.port for server in self._servers]
        if comma:
            hosts = ",".join(f"127.0.0.1:{port}" for port in ports)
            return f"postgresql://postgres@{hosts}/{DATABASE}?target_session_attrs=read-write"
        hosts = "&".join(f"host=127.0.0.1:{port}" for port in ports)
        return f"postgresql://postgres@/{DATABASE}?{hosts}&target_session_attrs=read-write"

    def direct(self) -> str:
        """The URL of the primary itself (the promoted standby after a promotion)."""
        return f"postgresql://postgres@127.0.0.1:{self.primary.port}/{DATABASE}"

    def wait_synchronous(self) -> None:
        """Wait until the primary sees the standby as its synchronous standby."""
        deadline = time.monotonic() + START_SECONDS
        query = "SELECT sync_state FROM pg_stat_replication WHERE application_name = %s"
        while True:
            with psycopg.connect(self._conninfo(self.primary), autocommit=True) as conn:
                row = conn.execute(query, (STANDBY_NAME,)).fetchone()
            if row is not None and row[0] == "sync":
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the standby did not become synchronous: {row}")
            time.sleep(0.05)

    def connect(self, server: Server | None = None) -> psycopg.Connection[tuple[object, ...]]:
        """A connection (autocommit) to :data:`DATABASE` on ``server`` (the primary)."""
        return psycopg.connect(self._conninfo(server or self.primary, DATABASE), autocommit=True)

    # the binaries -------------------------------------------------------------------------------

    def _conninfo(self, server: Server, dbname: str = "postgres") -> str:
        return f"host=127.0.0.1 port={server.port} user=postgres dbname={dbname} connect_timeout=5"

    def _execute(self, server: Server, statement: str) -> None:
        with psycopg.connect(self._conninfo(server), autocommit=True) as conn:
            conn.execute(statement.encode())

    def _wait_writable(self, server: Server) -> None:
        deadline = time.monotonic() + START_SECONDS
        while True:
            with psycopg.connect(self._conninfo(server), autocommit=True) as conn:
                row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
            if row is not None and row[0] is False:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{server.name} still in recovery")
            time.sleep(0.02)

    def _pg_ctl(self, server: Server, action: str, *args: str) -> None:
        log = self.base / f"{server.name}.log"
        self._run(
            "pg_ctl", "-D", str(server.data), "-l", str(log), "-w", "-t",
            str(int(START_SECONDS)), *args, action,
        )  # fmt: skip
        server.running = action != "stop"

    def _run(self, binary: str, *args: str, check: bool = True) -> None:
        command = [str(self.bin / binary), *args]
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=START_SECONDS + 30, cwd=self.base
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"{binary} exited {done.returncode}: {done.stdout}{done.stderr}")


def _children(pid: int) -> list[int]:
    """Every descendant of ``pid`` (the postmaster's backends and auxiliary processes)."""
    found: list[int] = []
    queue = [pid]
    while queue:
        parent = queue.pop()
        try:
            text = Path(f"/proc/{parent}/task/{parent}/children").read_text()
        except OSError:
            continue
        children = [int(child) for child in text.split()]
        found += children
        queue += children
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError):  # a zombie is dead
        if Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z"):
            return False
    return True
