"""Supervision state kept in memory on a node and written in batches: heartbeat pairs and DC-09
accounts. A report costs a dictionary write; changed entries go through the writer in one
transaction every few seconds, new ones at once (a node killed before its next flush would
otherwise take them along, and no node would supervise them); a check loop marks overdue
entries failed (or back) and has that written within a second, for the writer process to raise
or restore the alarm.

Only the supervision leader (:mod:`alarmhub.store.leadership`) marks entries failed. On a
database shared by several nodes (or the workers of one node) the leader reads, each second,
what the others wrote of the entries it suspects (failed, or overdue by its own memory): a
newer last-seen time written elsewhere is all that can spare an entry it would fail, and a
restoral written elsewhere all that can change one failed. As a last-seen time in its memory is
never newer than the newest report of any node, an entry it does not suspect is not overdue
(suspects are taken a check interval ahead, so that none turns overdue between its read and
its check). It reads every entry when it takes over, when the number of stored entries
changed (the others added some), and every WHOLE_READ_SECONDS. The others read only the failed
entries each second, so that a report they take of a failed entry is written as its restoral
within a second. A read of every entry each second grew with the entries (11 % of a worker's
CPU at 6,000 DC-09 accounts when every worker read them all; about 5 % of a core for the
leader alone at 5,000 under load)."""

from __future__ import annotations

import asyncio
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from typing import Any, ClassVar, Generic, TypeVar

from prometheus_client import Gauge
from sqlalchemy import Connection

from alarmhub.clock import now_us
from alarmhub.core import units
from alarmhub.store.leadership import Leadership
from alarmhub.store.writer import SignalWriter

K = TypeVar("K", bound=Hashable)
R = TypeVar("R")
CHECK_SECONDS = 1.0
WHOLE_READ_SECONDS = 60.0  # the leader reads every entry at least this often
SUSPECTS_READ_MAX = 500  # the leader reads more suspects than this by reading every entry


class BatchedSupervision(ABC, Generic[K, R]):
    """The batching and the two loops; subclasses keep the entries, say how changed ones are
    written (:meth:`persisting`), which are overdue (:meth:`check`), and how the stored rows
    (``R``) of a shared database are read and taken in (:meth:`stored`, :meth:`merge`)."""

    kind = "supervision"  # names the loops and the log lines
    supervised_gauge: ClassVar[Gauge]  # the entries known here
    failed_gauge: ClassVar[Gauge]  # those of them failed
    _log = logging.getLogger("alarmhub.supervision")

    def _init_batches(
        self, writer: SignalWriter, leadership: Leadership, flush_seconds: float
    ) -> None:
        self._writer = writer
        self._leadership = leadership
        self._flush_seconds = flush_seconds
        self._dirty: set[K] = set()
        self._changed = False
        self._loops: list[asyncio.Task[None]] = []
        self._added_keys: set[K] = set()  # new entries to be written at once
        self._adding: asyncio.Task[None] | None = None
        self._whole_count: int | None = None  # entries of the leader's last read of them all
        self._whole_at = 0.0

    @abstractmethod
    def persisting(self, keys: set[K]) -> Callable[[Connection], None]:
        """The write of the entries ``keys`` as they are now (taken before it runs)."""

    @abstractmethod
    def check(self, now: int) -> None:
        """Mark the entries overdue at ``now`` failed (and those back, restored)."""

    @abstractmethod
    def suspects(self, now: int) -> list[K]:
        """The entries failed, or overdue at ``now``, by this node's memory."""

    @abstractmethod
    def stored(
        self, conn: Connection, failed_only: bool = False, keys: Collection[K] | None = None
    ) -> Sequence[R]:
        """Every entry as the database has it (a shared database: as any node wrote it), only
        the failed ones, or only those of ``keys``."""

    @abstractmethod
    def count_stored(self, conn: Connection) -> int:
        """How many entries :meth:`stored` would read."""

    @abstractmethod
    def merge(self, rows: Sequence[R]) -> None:
        """Take in what other nodes wrote: entries unknown here, newer last-seen times, and
        the failure state of every entry not changed here since the last flush."""

    @abstractmethod
    def entries(self) -> Mapping[K, Any]:
        """Every entry known here, by key; each has its ``failed`` flag."""

    @abstractmethod
    def entry_key(self, row: R) -> K:
        """The key of a stored row's entry."""

    def _merge_failed(self, rows: Sequence[R]) -> None:
        """Take in a read of the failed entries only (``rows``): an entry failed here but not
        there was restored elsewhere, unless it changed here since the last flush."""
        failed = {self.entry_key(row) for row in rows}
        for key, entry in self.entries().items():
            if entry.failed and key not in failed and not self.changed_here(key):
                entry.failed = False
        self.merge(rows)

    def _gauges(self) -> None:
        """Both gauges: the entries, and those failed (a walk of them all)."""
        entries = self.entries()
        self.supervised_gauge.set(len(entries))
        self.failed_gauge.set(sum(1 for entry in entries.values() if entry.failed))

    def _gauge_added(self) -> None:
        """A new entry, not failed: the count of entries alone moves (no walk of them all,
        which made learning many new entries quadratic)."""
        self.supervised_gauge.set(len(self.entries()))

    def changed_here(self, key: K) -> bool:
        """Whether ``key`` changed on this node since the last flush (then it is not merged)."""
        return key in self._dirty

    def _touched(self, key: K) -> None:
        """An entry changed: written at the next periodic flush."""
        self._dirty.add(key)

    def _turned(self) -> None:
        """An entry failed or came back: written at the next check, within a second."""
        self._changed = True

    async def write_now(self, keys: set[K]) -> None:
        """Write the entries ``keys`` at once, in a transaction of their own: new entries, which
        this node did not know, are stored without waiting for the next flush, so that a node
        killed before it does not take them along (no node would then supervise them). When the
        write fails they wait for the next flush, as any other change."""
        self._dirty -= keys
        try:
            await self._writer.run(self.persisting(keys))
        except Exception as exc:
            self._dirty |= keys
            self._log.warning(
                f"{self.kind} write failed", extra={"entries": len(keys), "error": repr(exc)}
            )

    def _added(self, key: K) -> None:
        """A new entry, reported where the answer cannot wait for a write: written at once by
        a task of its own (with the entries added meanwhile), not with the next flush."""
        self._added_keys.add(key)
        if self._adding is None or self._adding.done():
            self._adding = asyncio.get_running_loop().create_task(self._write_added())

    async def _write_added(self) -> None:
        while self._added_keys:
            keys, self._added_keys = self._added_keys, set()
            await self.write_now(keys)

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
        if self._adding is not None:
            await self._adding
        await self.flush()

    def _read_stored(self, suspects: list[K] | None) -> Sequence[R]:
        """The leader's read (``suspects``: its suspects) or another's (None: the failed)."""
        with self._writer.engine.connect() as conn:
            if suspects is None:
                self._whole_count = None  # when it leads again, it reads them all first
                return self.stored(conn, failed_only=True)
            if (
                self._whole_count is not None
                and len(suspects) <= SUSPECTS_READ_MAX
                and time.monotonic() - self._whole_at < WHOLE_READ_SECONDS
                and self.count_stored(conn) == self._whole_count
            ):
                return self.stored(conn, keys=suspects) if suspects else ()
            rows = self.stored(conn)
            self._whole_count, self._whole_at = len(rows), time.monotonic()
            return rows

    async def _flush_loop(self) -> None:
        while True:
            await asyncio.sleep(self._flush_seconds)
            await self.flush()

    async def _check_loop(self) -> None:
        while True:
            await asyncio.sleep(CHECK_SECONDS)
            await self.check_once()

    async def check_once(self) -> None:
        """One pass of the check loop: read what the others wrote (the suspects when leading,
        or all of it, see the module; the failed entries otherwise), judge the entries when
        leading, write what turned."""
        leading = self._leadership.held
        if self._leadership.shared:
            ahead = now_us() + units.seconds_us(CHECK_SECONDS)
            suspects = self.suspects(ahead) if leading else None
            try:
                rows = await asyncio.to_thread(self._read_stored, suspects)
            except Exception as exc:
                self._log.warning(f"{self.kind} read failed", extra={"error": repr(exc)})
                return
            if leading:
                self.merge(rows)
            else:
                self._merge_failed(rows)
        if leading and self._leadership.held:  # judged after a leader's read, never another's
            self.check(now_us())
        if self._changed:
            self._changed = False
            await self.flush()
