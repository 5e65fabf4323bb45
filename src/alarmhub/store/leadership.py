"""Which node runs the supervision checks (heartbeat loss, DC-09 communication failure).

On one node (SQLite) that node does. On a database shared by several nodes (PostgreSQL) the
node that holds a session-level advisory lock does: the lock lives as long as the database
connection that took it, so when the leader dies its connection closes, the server frees the
lock, and another node takes it at its next try (every second).

A node of several worker processes (``serve --workers N``) is several nodes in this respect: on
PostgreSQL each worker tries the advisory lock; on SQLite each tries an exclusive ``flock`` of a
file in the data directory (``lock_path``), which the kernel frees when its holder dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import Connection, text
from sqlalchemy.engine import Engine

from alarmhub import metrics

log = logging.getLogger("alarmhub.leadership")
TRY_SECONDS = 1.0
LOCK_KEY = 0x616C61726D687562  # "alarmhub" in ASCII (a signed 64-bit key)


class Leadership:
    """Whether this node leads supervision; :attr:`held` is read by the check loops."""

    def __init__(self, engine: Engine, lock_path: Path | None = None) -> None:
        self._engine = engine
        alone = engine.dialect.name == "sqlite"
        # SQLite with sibling workers: the lead is a file lock (PostgreSQL: the advisory lock)
        self._lock_path = lock_path if alone else None
        self.shared = not alone or lock_path is not None
        self.held = not self.shared
        self._conn: Connection | None = None
        self._lock_fd: int | None = None
        self._task: asyncio.Task[None] | None = None
        self.listeners: list[Callable[[bool], None]] = []
        """Told whenever this node takes or loses the lead (the writer, for the checks it runs)."""
        metrics.SUPERVISION_LEADER.set(1 if self.held else 0)

    async def start(self) -> None:
        if self.shared:
            await asyncio.to_thread(self.try_to_lead)
            self._task = asyncio.create_task(self._keep_trying(), name="leadership")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.to_thread(self._let_go)

    async def _keep_trying(self) -> None:
        while True:
            await asyncio.sleep(TRY_SECONDS)
            await asyncio.to_thread(self.try_to_lead)

    def try_to_lead(self) -> bool:
        """Take the lock if it is free; while held, check that its connection still works."""
        if self._lock_path is not None:
            return self._try_lock_file(self._lock_path)
        try:
            if self._conn is None:
                self._conn = self._engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            if self.held:
                self._conn.execute(text("SELECT 1"))
            else:
                taken = self._conn.execute(
                    text("SELECT pg_try_advisory_lock(:key)"), {"key": LOCK_KEY}
                )
                self._set(bool(taken.scalar()))
        except Exception as exc:
            log.warning("leadership check failed", extra={"error": repr(exc)})
            self._drop_connection()
            self._set(False)
        return self.held

    def _set(self, held: bool) -> None:
        changed = held != self.held
        if changed:
            log.info("supervision leader" if held else "no longer supervision leader")
        self.held = held
        metrics.SUPERVISION_LEADER.set(1 if held else 0)
        if changed:
            for listener in self.listeners:
                listener(held)

    def _try_lock_file(self, path: Path) -> bool:
        try:
            if self._lock_fd is None:
                self._lock_fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            if not self.held:
                fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self._set(True)
        except BlockingIOError:
            self._set(False)
        except OSError as exc:
            log.warning("leadership check failed", extra={"error": repr(exc)})
            self._set(False)
        return self.held

    def _drop_connection(self) -> None:
        if self._conn is not None:
            try:
                self._conn.invalidate()  # never back to the pool: its session may hold the lock
                self._conn.close()
            except Exception as exc:  # the connection is already broken: nothing to give back
                log.debug("leadership connection dropped", extra={"error": repr(exc)})
            self._conn = None

    def _let_go(self) -> None:
        """On a clean stop: free the lock at once, so another node leads without waiting."""
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._lock_fd)  # frees the file lock
            self._lock_fd = None
        if self.held and self._conn is not None:
            try:
                self._conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": LOCK_KEY})
            except Exception as exc:
                log.warning("leadership release failed", extra={"error": repr(exc)})
        self._drop_connection()
        self._set(not self.shared)
