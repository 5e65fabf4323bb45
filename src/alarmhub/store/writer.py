"""The group-commit writer: one thread commits whatever is queued, then answers each waiter.

Requests hand their signal to :meth:`SignalWriter.submit` and wait. The writer takes every signal
queued so far, commits them in one transaction (one fsync), and resolves each waiter with its
incident number only after that commit. While a commit runs, new signals queue for the next one,
so batches grow with load and the cost of an fsync is shared.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Connection, delete, insert, select
from sqlalchemy.engine import Engine

from alarmhub import metrics
from alarmhub.core.signal import Signal
from alarmhub.store import schema as s
from alarmhub.store.engine import StoreUnavailable, write_transaction

log = logging.getLogger("alarmhub.writer")
T = TypeVar("T")

_INSERT_SIGNALS = insert(s.signal).returning(
    s.signal.c.incident_number, sort_by_parameter_order=True
)


@dataclass(frozen=True, slots=True)
class Stored:
    """The outcome of one submitted signal."""

    incident_number: int
    duplicate: bool = False


def _row(sig: Signal) -> dict[str, Any]:
    f = sig.fields
    return {
        "source": sig.source,
        "destination": sig.destination,
        "dnis": f.dnis,
        "panel": f.panel,
        "code": f.code,
        "area": f.area,
        "zone": f.zone,
        "token_name": sig.token_name,
        "received_us": sig.received_us,
    }


def commit_signals(
    conn: Connection, batch: Sequence[Signal], idempotency_window_us: int
) -> list[Stored]:
    """Store a batch in the caller's transaction; retries with a known Idempotency-Key are not
    stored again but answered with the incident number of their first commit."""
    outcome: list[Stored | None] = [None] * len(batch)
    fresh: list[int] = []
    first_of_key: dict[tuple[str, str], int] = {}
    repeats: list[tuple[int, int]] = []
    for i, sig in enumerate(batch):
        if sig.idempotency_key is None:
            fresh.append(i)
            continue
        key = (sig.token_name, sig.idempotency_key)
        if key in first_of_key:
            repeats.append((i, first_of_key[key]))
            continue
        row = conn.execute(
            select(s.idempotency.c.incident_number, s.idempotency.c.created_us).where(
                s.idempotency.c.token_name == key[0],
                s.idempotency.c.idempotency_key == key[1],
            )
        ).first()
        if row is not None and sig.received_us - row.created_us <= idempotency_window_us:
            outcome[i] = Stored(row.incident_number, duplicate=True)
            continue
        if row is not None:
            conn.execute(
                delete(s.idempotency).where(
                    s.idempotency.c.token_name == key[0],
                    s.idempotency.c.idempotency_key == key[1],
                )
            )
        first_of_key[key] = i
        fresh.append(i)
    if fresh:
        numbers = conn.execute(_INSERT_SIGNALS, [_row(batch[i]) for i in fresh]).scalars().all()
        for i, number in zip(fresh, numbers, strict=True):
            outcome[i] = Stored(number)
        keyed = [
            {
                "token_name": batch[i].token_name,
                "idempotency_key": batch[i].idempotency_key,
                "incident_number": outcome[i].incident_number,  # type: ignore[union-attr]
                "created_us": batch[i].received_us,
            }
            for i in first_of_key.values()
        ]
        if keyed:
            conn.execute(insert(s.idempotency), keyed)
    for i, first in repeats:
        earlier = outcome[first]
        assert earlier is not None
        outcome[i] = Stored(earlier.incident_number, duplicate=True)
    return [o for o in outcome if o is not None]


class SignalWriter:
    """The single writer of a node: group commits on one thread, awaited from the event loop."""

    def __init__(self, engine: Engine, max_batch: int = 2000, idempotency_hours: int = 24) -> None:
        self._engine = engine
        self._max_batch = max_batch
        self._window_us = idempotency_hours * 3600 * 1_000_000
        self._queue: deque[tuple[Signal, asyncio.Future[Stored]]] = deque()
        self._wake = asyncio.Event()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="writer")
        self._task: asyncio.Task[None] | None = None
        self._closing = False

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="signal-writer")

    async def stop(self) -> None:
        """Refuse new signals, commit everything already queued, then stop."""
        self._closing = True
        self._wake.set()
        if self._task is not None:
            await self._task
        self._executor.shutdown(wait=True)

    @property
    def closing(self) -> bool:
        return self._closing

    async def submit(self, sig: Signal) -> Stored:
        """Queue a signal and wait until the commit holding it is durable."""
        if self._closing:
            raise StoreUnavailable("shutting down")
        future: asyncio.Future[Stored] = asyncio.get_running_loop().create_future()
        self._queue.append((sig, future))
        self._wake.set()
        return await future

    async def run(self, work: Callable[[Connection], T]) -> T:
        """Run other writes (heartbeats, supervision) in a transaction on the writer's thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._transaction, work)

    def _transaction(self, work: Callable[[Connection], T]) -> T:
        with write_transaction(self._engine) as conn:
            return work(conn)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if not self._queue:
                if self._closing:
                    return
                self._wake.clear()
                await self._wake.wait()
                continue
            take = min(len(self._queue), self._max_batch)
            batch = [self._queue.popleft() for _ in range(take)]
            signals = [sig for sig, _ in batch]
            started = time.perf_counter()
            try:
                stored = await loop.run_in_executor(self._executor, self._commit, signals)
            except Exception as exc:
                metrics.COMMIT_FAILURES.inc()
                log.error("group commit failed", extra={"signals": take, "error": repr(exc)})
                for _, future in batch:
                    if not future.done():
                        future.set_exception(StoreUnavailable(str(exc)))
                continue
            metrics.COMMIT_SECONDS.observe(time.perf_counter() - started)
            metrics.COMMIT_BATCH.observe(take)
            for (_, future), result in zip(batch, stored, strict=True):
                if not future.done():
                    future.set_result(result)

    def _commit(self, signals: list[Signal]) -> list[Stored]:
        with write_transaction(self._engine) as conn:
            return commit_signals(conn, signals, self._window_us)
