"""The writer process's watchdog: a database call that never returns ends the writer.

A connection can go silent rather than fail: a firewall or NAT that lost its state drops what
either side sends, a server hangs. Nothing is answered and nothing is closed; where a kernel
still acknowledges the packets, TCP keepalives and ``tcp_user_timeout`` never fire either. A
writer waiting in such a call would wait for ever, and the node, which answers ``503 STORE-1``
once ``store_commit_timeout`` passes (decisions §14), would never acknowledge again.

So the writer process runs a thread that looks, once a second, at how long its one database
call in progress (a transaction of its :class:`~alarmhub.store.engine.WriteConnection`, from
its connect to its commit) has run. Past :func:`stuck_seconds` it asks the server, on a new
connection, whether it is still working on that call (:func:`server_working_on`: a commit
waiting for a synchronous standby that is gone, a lock, a stalled disk): then the database is
not committing, and the writer waits on, as decisions §14 has it (a late commit keeps its
signals), asking again after as long. Otherwise (the server waits for the client, or does not
answer, or the session is gone) the connection went silent: the watchdog logs and ends the
process with ``os._exit`` (:data:`EXIT_CODE`). The node starts a writer again whenever one ends (its
waiting requests fail with ``STORE-1`` and the senders retry), and the new writer connects
again. Nothing answered ``200`` is lost: a signal is answered only after its commit; those of
the abandoned commit were answered ``503`` long before, and stay stored if that commit was
made (decisions §14).

The same bound is the server's: the writer's sessions end on the server once idle in a
transaction for as long (``idle_in_transaction_session_timeout``, ``engine.open_engine``), so
that a silent session's locks (the incident counter's row) are released by the time a new
writer needs them; and it is how long the node waits for a writer to stop before it kills it.

A writer in a thread of the node's own process (``WriterThread``) has no watchdog: ending the
process would end the node.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable

from alarmhub.store.engine import WriteConnection, libpq_conninfo

log = logging.getLogger("alarmhub.writer")

STUCK_TIMEOUTS = 3
"""A writer's database call may run this many times ``store_commit_timeout``..."""
STUCK_MIN_SECONDS = 30.0
"""... and at least this long (a short ``store_commit_timeout`` does not make a writer that is
slow for a while, a synchronous standby catching up, restart again and again), before the
writer process ends itself."""
CHECK_SECONDS = 1.0
EXIT_CODE = 3


def stuck_seconds(commit_timeout: float) -> float:
    """How long one database call of a writer may run before the writer gives it up and ends
    (the node starts a new writer); also how long a node waits for its writer to stop."""
    return max(STUCK_TIMEOUTS * commit_timeout, STUCK_MIN_SECONDS)


def _exit(seconds: float) -> None:
    log.critical(
        "database call stuck; writer process ends, the node starts a new one",
        extra={"seconds": round(seconds, 1)},
    )
    logging.shutdown()  # flush the handlers: os._exit skips that
    os._exit(EXIT_CODE)


def server_working_on(url: str, backend_pid: int | None, answer_seconds: float) -> bool:
    """Whether the PostgreSQL server at ``url`` is working on a statement of its process
    ``backend_pid`` (``pg_stat_activity``'s ``active``: running, or waiting for a lock, a
    synchronous standby, the disk), asked on a new connection; False when it cannot tell (it
    does not answer within ``answer_seconds``, the session is gone, not PostgreSQL)."""
    if backend_pid is None or not url.startswith("postgres"):
        return False
    import psycopg

    from alarmhub.store.answering import AnsweringConnection

    try:
        with AnsweringConnection.connect(libpq_conninfo(url), autocommit=True) as conn:
            conn.answer_seconds = answer_seconds
            row = conn.execute(
                "SELECT state FROM pg_stat_activity WHERE pid = %s", (backend_pid,)
            ).fetchone()
    except psycopg.Error as exc:
        log.warning("the server cannot tell the writer's session", extra={"error": repr(exc)})
        return False
    return row is not None and row[0] == "active"


class Watchdog:
    """Calls ``on_stuck`` (by default: ends the process) once ``busy_since()``, the monotonic
    time the call in progress began (None when none is), lies ``limit`` seconds back, unless
    ``working()`` says the server is still working on that call: then it asks again ``limit``
    seconds later."""

    def __init__(
        self,
        busy_since: Callable[[], float | None],
        limit: float,
        on_stuck: Callable[[float], None] = _exit,
        check_seconds: float = CHECK_SECONDS,
        working: Callable[[], bool] = lambda: False,
    ) -> None:
        self._busy_since = busy_since
        self._limit = limit
        self._on_stuck = on_stuck
        self._check_seconds = check_seconds
        self._working = working
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="watchdog", daemon=True)

    @classmethod
    def over(cls, conn: WriteConnection, url: str, limit: float) -> Watchdog:
        """The writer's: over its connection ``conn`` to the database at ``url``."""

        def working() -> bool:
            return server_working_on(url, conn.backend_pid, limit)

        return cls(lambda: conn.busy_since, limit, working=working)

    def start(self) -> Watchdog:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        asked: float | None = None  # when the server last said it was working on the call
        while not self._stop.wait(self._check_seconds):
            since = self._busy_since()
            now = time.monotonic()
            if since is None:
                asked = None
            if since is None or now - since < self._limit:
                continue
            if asked is not None and now - asked < self._limit:
                continue
            if self._working():
                asked = time.monotonic()
                log.warning(
                    "database call outstanding; the server is working on it, the writer waits",
                    extra={"seconds": round(now - since, 1)},
                )
                continue
            self._on_stuck(time.monotonic() - since)
            return


__all__ = ["STUCK_MIN_SECONDS", "STUCK_TIMEOUTS", "Watchdog", "server_working_on", "stuck_seconds"]
