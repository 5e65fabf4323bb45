"""Supervision state kept in memory on a node and written in batches: heartbeat pairs and DC-09
accounts. A report costs a dictionary write; changed entries go through the writer in one
transaction every few seconds; a check loop marks overdue entries failed (or back) and has
that written within a second, for the writer process to raise or restore the alarm."""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from sqlalchemy import Connection

from alarmhub.clock import now_us
from alarmhub.store.writer import SignalWriter

K = TypeVar("K", bound=Hashable)
CHECK_SECONDS = 1.0


class BatchedSupervision(ABC, Generic[K]):
    """The batching and the two loops; subclasses keep the entries, say how changed ones are
    written (:meth:`persisting`) and which are overdue (:meth:`check`)."""

    kind = "supervision"  # names the loops and the log lines
    _log = logging.getLogger("alarmhub.supervision")

    def _init_batches(self, writer: SignalWriter, flush_seconds: float) -> None:
        self._writer = writer
        self._flush_seconds = flush_seconds
        self._dirty: set[K] = set()
        self._changed = False
        self._loops: list[asyncio.Task[None]] = []

    @abstractmethod
    def persisting(self, keys: set[K]) -> Callable[[Connection], None]:
        """The write of the entries ``keys`` as they are now (taken before it runs)."""

    @abstractmethod
    def check(self, now: int) -> None:
        """Mark the entries overdue at ``now`` failed (and those back, restored)."""

    def _touched(self, key: K) -> None:
        """An entry changed: written at the next periodic flush."""
        self._dirty.add(key)

    def _turned(self) -> None:
        """An entry failed or came back: written at the next check, within a second."""
        self._changed = True

    async def flush(self) -> None:
        """Write the entries that changed since the last flush, in one transaction."""
        if not self._dirty:
            return
        keys, self._dirty = self._dirty, set()
        work = self.persisting(keys)
        try:
            await self._writer.run(work)
        except Exception as exc:
            self._dirty |= keys
            self._log.warning(
                f"{self.kind} flush failed", extra={"entries": len(keys), "error": repr(exc)}
            )

    def _start_loops(self) -> None:
        self._loops = [
            asyncio.create_task(self._flush_loop(), name=f"{self.kind}-flush"),
            asyncio.create_task(self._check_loop(), name=f"{self.kind}-check"),
        ]

    async def _stop_loops(self) -> None:
        for task in self._loops:
            task.cancel()
        await self.flush()

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
