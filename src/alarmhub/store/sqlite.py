"""Everything SQLite-specific: WAL, ``synchronous=FULL``, busy waits and immediate transactions."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import OperationalError

from alarmhub import files
from alarmhub.store.prepared import driver_execute

BUSY_TIMEOUT_MS = 10_000
RESTART_FRAMES = 65_536  # 256 MiB of 4 KiB pages: a few seconds of a busy node's commits
WRITE_OPTION = "alarmhub_write"
WRITER_CACHE_MIB = 64
"""The page cache of the writer process's connections. Routing writes, for nearly every signal,
a page of the history index by account at a place of its own, and SQLite's default cache of
2 MiB held too few of them: pages were read again from the log, and dirty ones written out to
it in the middle of transactions that changed them again before their commit
(bench/README.md: the page writes and reads were a quarter of the writer's time). The cache
fills as pages are first read or written and keeps them while the connection is open, so under
a steady load the writer's resident memory grows with the pages touched, bounded by this size
a connection (and by the size of the database): a cache filling, not a leak. Measured
(docs/reliability.md): a writer grew 55 MiB in 9.5 minutes of steady HTTP and DC-09 load with
this cache, 11 MiB with a 2 MiB one."""
BEGIN_WRITE = "BEGIN IMMEDIATE"
WRITER_SPIN_FIRST_SECONDS = 0.0002
WRITER_SPIN_MAX_SECONDS = 0.002
"""The writer process's waits for the write lock another process holds (``configure``)."""


SIDE_FILES = ("-wal", "-shm", "-journal")


def database_file(url: str) -> Path | None:
    """The file of a SQLite database URL; None for another database, one in memory, or a
    ``file:`` URI."""
    if not url.startswith("sqlite"):
        return None
    database = make_url(url).database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database)


def prepare_url(url: str) -> None:
    """Create the directory of a file database (mode 0700) and the file itself (mode 0600), so
    that a new data directory just works and is its user's alone.

    SQLite gives the ``-wal`` and ``-shm`` files the database file's mode; files an older
    version left open to group or others are brought to 0600."""
    path = database_file(url)
    if path is None:
        return
    files.private_directory(path.parent)
    files.private_file(path)
    for suffix in SIDE_FILES:
        side = path.with_name(path.name + suffix)
        if side.exists():
            files.restrict(side)


def configure(engine: Engine, synchronous: bool = True, writer: bool = False) -> None:
    """Durable, concurrent settings on every new connection.

    WAL lets readers (the CLI, queries) run beside the writer; ``synchronous=FULL`` fsyncs the WAL
    at every commit, so a committed signal survives power loss. Transactions start with
    ``BEGIN IMMEDIATE`` when they will write (execution option ``alarmhub_write``), so two
    writers queue on the busy timeout instead of failing to upgrade a read lock; reads take none.
    ``synchronous=False`` gives ``synchronous=NORMAL``: in WAL mode a commit is then written but
    not fsynced, and becomes durable with the next fsynced commit of any connection.
    ``writer``: the writer process's connection, which waits for the write lock on its own
    (:func:`_begin_writing`), with a larger page cache
    (:data:`WRITER_CACHE_MIB`) and its statement journals in memory: a statement of many rows
    (the multi-row INSERTs of signals and history) keeps the pages it changes in a journal of
    its own until it ends, written to a temporary file beyond 64 KiB; those writes took a tenth
    of the writer's time.
    """
    level = "FULL" if synchronous else "NORMAL"

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: sqlite3.Connection, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA synchronous={level}")
        # the writer waits for the write lock itself (_begin_writing): no busy handler
        cursor.execute(f"PRAGMA busy_timeout={0 if writer else BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA wal_autocheckpoint=0")
        if writer:
            cursor.execute(f"PRAGMA cache_size=-{WRITER_CACHE_MIB * 1024}")  # negative: in KiB
            cursor.execute("PRAGMA temp_store=MEMORY")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        # on the driver's cursor (``prepared.driver_execute``): SQLAlchemy's own execution of
        # the statement cost most of a small transaction's fixed cost, and the writer process
        # runs a few transactions a frame when frames come one at a time
        write = connection.get_execution_options().get(WRITE_OPTION)
        if write and writer:
            _begin_writing(connection)
        else:
            driver_execute(connection, BEGIN_WRITE if write else "BEGIN", ()).close()


def _begin_writing(connection: Connection) -> None:
    """``BEGIN IMMEDIATE`` for the writer process, retried every
    WRITER_SPIN_FIRST_SECONDS (then twice as long, up to WRITER_SPIN_MAX_SECONDS) while another
    process holds the write lock, for BUSY_TIMEOUT_MS at most.

    SQLite's own busy handler sleeps 1, 2, 5, 10, 15, 20, 25 ms... between its tries: a signal
    whose commit found the lock held by another process's short transaction (a command, an
    automation output recording an ACK) waited for the next of those steps, tens of
    milliseconds, long after the lock was free."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    pause = WRITER_SPIN_FIRST_SECONDS
    while True:
        try:
            driver_execute(connection, BEGIN_WRITE, ()).close()
            return
        except OperationalError as exc:
            if not _busy(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(2 * pause, WRITER_SPIN_MAX_SECONDS)


def _busy(exc: OperationalError) -> bool:
    """Whether the driver said the database is locked by another connection (SQLITE_BUSY)."""
    code = getattr(exc.orig, "sqlite_errorcode", None)
    return code == sqlite3.SQLITE_BUSY or "database is locked" in str(exc.orig)


def set_synchronous(conn: Connection, synchronous: bool) -> None:
    """Whether the connection's next commits wait for the disk (``configure``); set between
    transactions, on the driver's connection (a statement through SQLAlchemy would begin one)."""
    level = "FULL" if synchronous else "NORMAL"
    driver = conn.connection.dbapi_connection
    assert driver is not None
    driver.execute(f"PRAGMA synchronous={level}")


@contextmanager
def not_synchronous(conn: Connection) -> Iterator[None]:
    """The connection's commits meanwhile do not wait for the disk (``synchronous=NORMAL``: in
    WAL mode written, so a killed process loses none, but a power loss may); its level before
    is set again after. Entered and left between transactions."""
    driver = conn.connection.dbapi_connection
    assert driver is not None
    (level,) = driver.execute("PRAGMA synchronous").fetchone()
    driver.execute("PRAGMA synchronous=NORMAL")
    try:
        yield
    finally:
        driver.execute(f"PRAGMA synchronous={int(level)}")


def checkpoint(engine: Engine) -> int:
    """Copy committed WAL pages into the database file without blocking the writer; the frames
    the log holds.

    Automatic checkpoints are off because they run inside a committing transaction and would
    stall the signal path for tens of milliseconds; the node calls this every second instead.
    Such a checkpoint never completes while signals keep coming (new frames arrive while it
    copies), and the log only starts again from its beginning after a complete one: under a
    steady load it grew for as long as the load lasted (1.6 GB in a 100-second benchmark, for
    a 100 MB database), every commit extending the file, every read looking its pages up in a
    larger index, and a restart after a crash reading it all. So once the log holds
    RESTART_FRAMES frames, the node asks the writer process to checkpoint too, between two of
    its transactions, where no commit can overtake it: it copies the few frames written since
    the node's checkpoint, and the next commit starts the log again.
    """
    with engine.connect() as connection:
        _, frames, _ = connection.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)").one()
        return int(frames)
