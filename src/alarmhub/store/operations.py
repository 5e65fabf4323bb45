"""Running an operator's action: one write transaction each, after the lock that orders it with
routing and supervision.

Two operators never get the same alarm: taking one is a conditional UPDATE (``WHERE state =
'pending'``) whose row count says who won, which holds across processes and nodes sharing one
database (:mod:`alarmhub.store.handling`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import Connection
from sqlalchemy.engine import Engine

from alarmhub.core.errors import ActionRefused
from alarmhub.store.commit import lock_incidents
from alarmhub.store.engine import write_transaction

T = TypeVar("T")


def run(engine: Engine, work: Callable[[Connection], T]) -> T:
    """Run ``work`` in one write transaction. A refusal rolls it back, unless the refusal is
    ``recorded``: then what it wrote is committed, and it is raised after."""
    refused: ActionRefused
    with write_transaction(engine) as conn:
        try:
            return work(conn)
        except ActionRefused as exc:
            if not exc.recorded:
                raise
            refused = exc
    raise refused


def on_queues(work: Callable[[Connection], T], conn: Connection) -> T:
    """``work`` that may change the alarm queues or number incidents (every operator action),
    after taking the incident counter's lock. Routing and supervision take that lock first too
    (:func:`alarmhub.store.commit.lock_incidents`), so on PostgreSQL an operator's action and a
    routing turn run one after the other instead of each holding a row the other waits for
    (an operator's row against the counter, an alarm against the queue revision): a deadlock,
    which PostgreSQL breaks after a second by failing one of them."""
    lock_incidents(conn)
    return work(conn)
