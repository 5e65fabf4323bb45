"""Heartbeat supervision on a node: last-seen times in memory, persisted in batches.

A heartbeat costs a dictionary write. Every few seconds the changed pairs are written through the
writer in one transaction. A supervision loop marks a pair failed when it misses its timeout and
restored when it beats again, and writes that change within a second; the writer process turns
it into a SOURCE FAILURE alarm or its restoral.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Literal

from sqlalchemy import Connection, insert, select, update

from alarmhub import metrics
from alarmhub.clock import now_us
from alarmhub.core.supervision import PairState
from alarmhub.store import schema as s
from alarmhub.store.writer import SignalWriter

log = logging.getLogger("alarmhub.heartbeat")
Change = Literal["failed", "restored"]
Listener = Callable[[PairState, Change], None]
CHECK_SECONDS = 1.0


class HeartbeatSupervisor:
    """Keeps every supervised pair's last-seen time and failure state."""

    def __init__(self, writer: SignalWriter, timeout_s: int, flush_seconds: float) -> None:
        self._writer = writer
        self._timeout_s = timeout_s
        self._flush_seconds = flush_seconds
        self.pairs: dict[tuple[str, str], PairState] = {}
        self._dirty: set[tuple[str, str]] = set()
        self._listeners: list[Listener] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._changed = False

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def load(self, conn: Connection) -> None:
        """Supervise every pair that ever beat. A pair gets a full timeout from start-up."""
        started = now_us()
        for row in conn.execute(select(s.heartbeat)).mappings():
            key = (row["source"], row["destination"])
            self.pairs[key] = PairState(
                source=key[0],
                destination=key[1],
                last_seen_us=max(row["last_seen_us"], started),
                timeout_s=row["timeout_s"] or self._timeout_s,
                failed=row["failed_us"] is not None,
            )
        self._gauges()

    async def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._flush_loop(), name="heartbeat-flush"),
            asyncio.create_task(self._check_loop(), name="heartbeat-check"),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await self.flush()

    def beat(self, source: str, destination: str) -> None:
        key = (source, destination)
        now = now_us()
        state = self.pairs.get(key)
        if state is None:
            state = self.pairs[key] = PairState(source, destination, now, self._timeout_s)
            log.info("pair supervised", extra={"source": source, "destination": destination})
            self._gauges()
        state.last_seen_us = now
        self._dirty.add(key)
        metrics.HEARTBEATS.inc()
        if state.failed:
            state.failed = False
            self._tell(state, "restored")

    def check(self, now: int) -> None:
        """Mark overdue pairs failed (once each)."""
        for key, state in self.pairs.items():
            if not state.failed and state.overdue(now):
                state.failed = True
                self._dirty.add(key)
                self._tell(state, "failed")

    def _tell(self, state: PairState, change: Change) -> None:
        self._changed = True  # written at the next check, not at the next periodic flush
        level = logging.WARNING if change == "failed" else logging.INFO
        log.log(
            level,
            f"source {change}",
            extra={"source": state.source, "destination": state.destination},
        )
        self._gauges()
        for listener in self._listeners:
            listener(state, change)

    def _gauges(self) -> None:
        metrics.SOURCES_SUPERVISED.set(len(self.pairs))
        metrics.SOURCES_FAILED.set(sum(1 for p in self.pairs.values() if p.failed))

    async def flush(self) -> None:
        """Write the pairs that changed since the last flush, in one transaction."""
        if not self._dirty:
            return
        keys, self._dirty = self._dirty, set()
        rows = [self.pairs[k] for k in keys]
        snapshot = [(p.source, p.destination, p.last_seen_us, p.failed) for p in rows]
        try:
            await self._writer.run(lambda conn: _persist(conn, snapshot))
        except Exception as exc:
            self._dirty |= keys
            log.warning("heartbeat flush failed", extra={"pairs": len(keys), "error": repr(exc)})

    async def _flush_loop(self) -> None:
        while True:
            await asyncio.sleep(self._flush_seconds)
            await self.flush()

    async def _check_loop(self) -> None:
        while True:
            await asyncio.sleep(CHECK_SECONDS)
            self.check(now_us())
            if self._changed:
                self._changed = False
                await self.flush()


def _persist(conn: Connection, rows: list[tuple[str, str, int, bool]]) -> None:
    t = s.heartbeat
    now = now_us()
    for source, destination, last_seen, failed in rows:
        values = {"last_seen_us": last_seen, "failed_us": now if failed else None}
        where = (t.c.source == source) & (t.c.destination == destination)
        if failed:
            # keep the first failure time when the pair is still down
            current = conn.execute(select(t.c.failed_us).where(where)).scalar()
            values["failed_us"] = current or now
        if not conn.execute(update(t).where(where).values(values)).rowcount:
            conn.execute(insert(t).values(source=source, destination=destination, **values))
