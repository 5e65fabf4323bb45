"""A bound on how long a PostgreSQL connection waits for the server's answer.

A connection can go silent rather than fail: a middlebox that lost its state drops what either
side sends, a server hangs. Nothing is answered, nothing is closed, and where a kernel still
acknowledges the packets no TCP timeout fires (``engine.CONNECTION_DEFAULTS`` covers the other
cases): a statement on it, or the pool's ping before a connection is handed out, would wait
for ever, holding its thread, and with it a node's stop (the event loop's threads are joined
at the end). An engine given ``answer_seconds`` (``engine.open_engine``) connects with
:class:`AnsweringConnection` instead: each wait for the server fails once it has run that
long, the connection closed; the pool then discards it and opens a new one.

It bounds a statement's whole wait, so the node's engines are given a bound far above what
their statements take (``store.watchdog.stuck_seconds``); a schema upgrade runs without it
(``engine.upgrade``). The writer's engine has none: its watchdog ends the writer instead.
psycopg before 3.3 has no timeout on its wait: there the engines are left unbounded.
"""

from __future__ import annotations

import time
from inspect import signature
from typing import Any, TypeVar

import psycopg
from psycopg.abc import PQGen
from sqlalchemy import event
from sqlalchemy.engine import Engine

RV = TypeVar("RV")
WAIT_BOUNDED = "timeout" in signature(psycopg.Connection.wait).parameters
"""Whether this psycopg's wait takes a timeout."""


class AnsweringConnection(psycopg.Connection[Any]):
    """A psycopg connection whose every wait for the server (a statement and its results, a
    commit, the pool's ping) fails once it has waited ``answer_seconds`` (None: no bound), the
    connection closed: it stopped mid-exchange, and cannot be used again."""

    answer_seconds: float | None = None

    def wait(self, gen: PQGen[RV], interval: float = 0.1, timeout: float | None = None) -> RV:
        bound = self.answer_seconds
        if timeout is not None or bound is None:
            return super().wait(gen, interval, timeout)
        started = time.monotonic()
        try:
            return super().wait(gen, interval, bound)
        except psycopg.OperationalError as exc:
            if time.monotonic() - started < bound:
                raise
            self.close()
            raise psycopg.OperationalError(f"no answer from the database in {bound:g} s") from exc


def bound(engine: Engine, answer_seconds: float) -> None:
    """Connect ``engine`` (PostgreSQL, psycopg) with :class:`AnsweringConnection`."""
    if not WAIT_BOUNDED:
        return

    @event.listens_for(engine, "do_connect")
    def connect(dialect: Any, record: Any, cargs: Any, cparams: Any) -> AnsweringConnection:
        conn = AnsweringConnection.connect(*cargs, **cparams)
        conn.answer_seconds = answer_seconds
        return conn


__all__ = ["AnsweringConnection", "bound"]
