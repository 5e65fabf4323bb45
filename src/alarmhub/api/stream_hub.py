"""What the event streams of one process share: one task that reads the outbox for them all.

While any stream is open, the hub reads the events after the newest it has seen every
:data:`POLL_SECONDS` (one query a process, however many streams), keeps the most recent ones,
and wakes the streams; a stream that is caught up takes what it has not sent from the hub, and
an idle one costs nothing until something arrives. A stream further behind (resumed with
``Last-Event-ID``) reads the outbox itself until it has caught up. Every
:data:`~alarmhub.node.listener_limits.STREAM_CHECK_SECONDS` the hub also checks, in one query, that
the streams' keys are not revoked, whatever the traffic, and ends the streams of those that are.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import time
from collections.abc import Callable
from typing import Protocol, TypeVar

from sqlalchemy import Connection

from alarmhub.node.listener_limits import STREAM_CHECK_SECONDS
from alarmhub.store import api_keys
from alarmhub.store import events as outbox
from alarmhub.wake import woken

log = logging.getLogger("alarmhub.api")
T = TypeVar("T")
POLL_SECONDS = 0.25
"""How often the hub looks for new events while streams are open."""
PAGE = 500
"""Events read at once."""
KEPT = 4 * PAGE
"""Recent events the hub keeps for the streams that are caught up."""


class Reader(Protocol):
    """Reads in a thread (the API's :class:`~alarmhub.api.plumbing.Api`)."""

    async def read(self, work: Callable[[Connection], T]) -> T: ...


class Follower:
    """One open stream as the hub knows it: its key's name and what wakes it."""

    __slots__ = ("key_name", "revoked", "wake")

    def __init__(self, key_name: str) -> None:
        self.key_name = key_name
        self.wake = asyncio.Event()
        self.revoked = False


class OutboxHub:
    """The process's one reader of the outbox for its event streams (see the module)."""

    def __init__(self, reader: Reader, closed: Callable[[], bool]) -> None:
        self._reader = reader
        self.closed = closed
        """Whether the node stops (every stream then ends)."""
        self._followers: set[Follower] = set()
        self._task: asyncio.Task[None] | None = None
        self.head: int | None = None
        """The newest event read (None until the first read)."""
        self._base = 0  # the kept events are every event after this id
        self._ids: list[int] = []
        self._kept: list[outbox.Event] = []

    def join(self, key_name: str) -> Follower:
        follower = Follower(key_name)
        self._followers.add(follower)
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="event-streams")
        return follower

    def leave(self, follower: Follower) -> None:
        self._followers.discard(follower)

    def after(self, event_id: int) -> list[outbox.Event] | None:
        """Up to PAGE kept events after ``event_id``; None when they are not all kept (older
        than the oldest kept, or the hub has not read yet): read the outbox."""
        if self.head is None or event_id < self._base:
            return None
        start = bisect.bisect_right(self._ids, event_id)
        return self._kept[start : start + PAGE]

    async def _run(self) -> None:
        failing = False
        checked = time.monotonic()
        try:
            while self._followers:
                if self.closed():
                    self._wake_all()
                    return
                try:
                    more = await self._look()
                    if time.monotonic() - checked >= STREAM_CHECK_SECONDS:
                        checked = time.monotonic()
                        await self._check_keys()
                    failing = False
                except Exception as exc:  # the streams wait; the next look tries again
                    if not failing:
                        log.warning("event streams cannot read", extra={"error": repr(exc)})
                    failing = True
                    more = False
                if not more:
                    await asyncio.sleep(POLL_SECONDS)
        finally:
            self.head = None
            self._ids, self._kept = [], []

    async def _look(self) -> bool:
        """Read what is new and wake the streams; whether a full page came (read on at once)."""
        head = self.head
        if head is None:
            newest = await self._reader.read(outbox.newest)
            self.head = self._base = newest
            self._wake_all()
            return False
        page = await self._reader.read(lambda conn: outbox.after(conn, head, PAGE))
        if not page:
            return False
        self._ids += (e.event_id for e in page)
        self._kept += page
        if len(self._kept) > KEPT:
            dropped = len(self._kept) - KEPT
            self._base = self._ids[dropped - 1]
            del self._ids[:dropped], self._kept[:dropped]
        self.head = page[-1].event_id
        self._wake_all()
        return len(page) == PAGE

    async def _check_keys(self) -> None:
        names = {follower.key_name for follower in self._followers}
        valid = await self._reader.read(lambda conn: api_keys.valid_names(conn, names))
        for follower in self._followers:
            if follower.key_name not in valid:
                follower.revoked = True
                follower.wake.set()

    def _wake_all(self) -> None:
        for follower in self._followers:
            follower.wake.set()


async def wait(follower: Follower, seconds: float) -> None:
    """Until ``follower`` is woken, or ``seconds`` passed."""
    await woken(follower.wake, seconds)
    follower.wake.clear()
