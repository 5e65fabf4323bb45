"""Which node holds each receiver link only one node may run (``--connect``, ``--serial``): on
PostgreSQL a session-level advisory lock per link, on one connection the node keeps, as
:mod:`alarmhub.store.leadership` does for supervision."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Collection

from sqlalchemy import Connection, text
from sqlalchemy.engine import Engine

log = logging.getLogger("alarmhub.receivers")


def lock_key(link: str) -> int:
    """The advisory lock key of ``link``: a signed 64-bit digest of its name."""
    digest = hashlib.blake2b(f"receiver link {link}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class LinkLeases:
    """The links this node holds; :meth:`renew` takes free ones and lets go of unwanted ones.
    When the holder dies its connection closes, the server frees its locks, and another node
    takes them at its next try."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._conn: Connection | None = None
        self.held: set[str] = set()

    def renew(self, wanted: Collection[str]) -> set[str]:
        """Hold what of ``wanted`` is free or already ours; let go of the rest. On a broken
        connection nothing is held (the server frees the locks when it sees it closed)."""
        try:
            if self._conn is None:
                self._conn = self._engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            conn = self._conn
            for name in sorted(self.held - set(wanted)):
                conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": lock_key(name)})
                self.held.discard(name)
            if self.held:
                conn.execute(text("SELECT 1"))
            for name in sorted(set(wanted) - self.held):
                taken = conn.execute(
                    text("SELECT pg_try_advisory_lock(:key)"), {"key": lock_key(name)}
                )
                if taken.scalar():
                    self.held.add(name)
        except Exception as exc:
            log.warning("receiver link leases lost", extra={"error": repr(exc)})
            self._drop_connection()
            self.held = set()
        return set(self.held)

    def release(self) -> None:
        """On a clean stop: free every lock at once, so another node takes the links."""
        self.renew(())
        self._drop_connection()

    def _drop_connection(self) -> None:
        if self._conn is not None:
            try:
                self._conn.invalidate()  # never back to the pool: its session may hold locks
                self._conn.close()
            except Exception as exc:  # already broken: nothing to give back
                log.debug("receiver link lease connection dropped", extra={"error": repr(exc)})
            self._conn = None
