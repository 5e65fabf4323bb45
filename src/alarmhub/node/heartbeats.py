"""Heartbeat supervision on a node: last-seen times in memory, persisted in batches.

A heartbeat costs a dictionary write. Every few seconds the changed pairs are written through the
writer in one transaction. A supervision loop marks a pair failed when it misses its timeout and
restored when it beats again, and writes that change within a second; the writer process turns
it into a SOURCE FAILURE alarm or its restoral.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from typing import Any, Literal

from sqlalchemy import Connection, func, select, tuple_

from alarmhub import metrics
from alarmhub.clock import now_us
from alarmhub.core.supervision import PairState
from alarmhub.node.supervised import BatchedSupervision
from alarmhub.store import schema as s
from alarmhub.store.last_seen import write_seen
from alarmhub.store.leadership import Leadership
from alarmhub.store.writer import SignalWriter

log = logging.getLogger("alarmhub.heartbeat")
Change = Literal["failed", "restored"]


class HeartbeatSupervisor(BatchedSupervision[tuple[str, str], Any]):
    """Keeps every supervised pair's last-seen time and failure state."""

    kind = "heartbeat"
    supervised_gauge = metrics.SOURCES_SUPERVISED
    failed_gauge = metrics.SOURCES_FAILED

    def __init__(
        self,
        writer: SignalWriter,
        leadership: Leadership,
        timeout_s: int,
        flush_seconds: float,
    ) -> None:
        self._init_batches(writer, leadership, flush_seconds)
        self._timeout_s = timeout_s
        self.pairs: dict[tuple[str, str], PairState] = {}

    def load(self, conn: Connection) -> None:
        """Supervise every pair that ever beat. A pair gets a full timeout from start-up."""
        started = now_us()
        for row in self.stored(conn):
            key = (row.source, row.destination)
            self.pairs[key] = self._state(row, max(row.last_seen_us, started))
        self._gauges()

    def _state(self, row: Any, last_seen_us: int) -> PairState:
        return PairState(
            source=row.source,
            destination=row.destination,
            last_seen_us=last_seen_us,
            timeout_s=row.timeout_s or self._timeout_s,
            failed=row.failed_us is not None,
        )

    def suspects(self, now: int) -> list[tuple[str, str]]:
        return [key for key, state in self.pairs.items() if state.failed or state.overdue(now)]

    def stored(
        self,
        conn: Connection,
        failed_only: bool = False,
        keys: Collection[tuple[str, str]] | None = None,
    ) -> Sequence[Any]:
        t = s.heartbeat.c
        query = select(t.source, t.destination, t.last_seen_us, t.timeout_s, t.failed_us)
        if failed_only:
            query = query.where(t.failed_us.is_not(None))
        if keys is not None:
            query = query.where(tuple_(t.source, t.destination).in_(list(keys)))
        return conn.execute(query).all()

    def count_stored(self, conn: Connection) -> int:
        return int(conn.execute(select(func.count()).select_from(s.heartbeat)).scalar_one())

    def entries(self) -> dict[tuple[str, str], PairState]:
        return self.pairs

    def entry_key(self, row: Any) -> tuple[str, str]:
        return (row.source, row.destination)

    def merge(self, rows: Sequence[Any]) -> None:
        for row in rows:
            key = (row.source, row.destination)
            state = self.pairs.get(key)
            if state is None:
                self.pairs[key] = self._state(row, row.last_seen_us)
                continue
            state.last_seen_us = max(state.last_seen_us, row.last_seen_us)
            if not self.changed_here(key):
                was_failed, state.failed = state.failed, row.failed_us is not None
                if was_failed and not state.failed and self._leadership.held:
                    # beats another node (or worker) took: the leader, who logged the failure,
                    # logs its end too (that one logs it only if it knew of the failure)
                    log.info(
                        "source restored",
                        extra={"source": state.source, "destination": state.destination},
                    )
        self._gauges()

    async def start(self) -> None:
        self._start_loops()

    async def stop(self) -> None:
        await self._stop_loops()

    async def beat(self, source: str, destination: str) -> None:
        """A beat of the pair: its last-seen time in memory, written with the next flush; a pair
        this node did not know yet is written before the beat is answered
        (:meth:`~alarmhub.node.supervised.BatchedSupervision.write_now`)."""
        key = (source, destination)
        now = now_us()
        state = self.pairs.get(key)
        metrics.HEARTBEATS.inc()
        if state is None:
            self.pairs[key] = PairState(source, destination, now, self._timeout_s)
            log.info("pair supervised", extra={"source": source, "destination": destination})
            self._gauge_added()
            await self.write_now({key})
            return
        state.last_seen_us = now
        self._touched(key)
        if state.failed:
            state.failed = False
            self._tell(state, "restored")

    def check(self, now: int) -> None:
        """Mark overdue pairs failed (once each)."""
        for key, state in self.pairs.items():
            if not state.failed and state.overdue(now):
                state.failed = True
                self._touched(key)
                self._tell(state, "failed")

    def _tell(self, state: PairState, change: Change) -> None:
        self._turned()
        level = logging.WARNING if change == "failed" else logging.INFO
        log.log(
            level,
            f"source {change}",
            extra={"source": state.source, "destination": state.destination},
        )
        self._gauges()

    def persisting(self, keys: set[tuple[str, str]]) -> Callable[[Connection], None]:
        snapshot = [
            (p.source, p.destination, p.last_seen_us, p.failed)
            for p in (self.pairs[k] for k in keys)
        ]
        return lambda conn: _persist(conn, snapshot)


def _persist(conn: Connection, rows: list[tuple[str, str, int, bool]]) -> None:
    now = now_us()
    write_seen(
        conn,
        s.heartbeat,
        ("source", "destination"),
        "last_seen_us",
        [
            {
                "source": source,
                "destination": destination,
                "last_seen_us": last_seen,
                "failed_us": now if failed else None,
            }
            for source, destination, last_seen, failed in rows
        ],
    )
