"""The console's live feed: one task per node watches the queue revision and, when it changes,
builds one snapshot of the queues and pushes it to every connected console as a server-sent
event (``GET /console/events``). On PostgreSQL the node also LISTENs for the revision's
notification, so a change made on any node reaches every node's consoles at once; the revision
is still read every second in case a notification is missed."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy.engine import Engine
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from alarmhub.clock import now_us
from alarmhub.console import views
from alarmhub.core.operations import AlarmState
from alarmhub.node.listener_limits import STREAM_CHECK_SECONDS
from alarmhub.store import on_test, queries, statistics, storm
from alarmhub.store.engine import libpq_conninfo
from alarmhub.store.provisioning import notify_channel
from alarmhub.wake import woken

log = logging.getLogger("alarmhub.console")
POLL_SECONDS = 0.2
"""How often the revision is read (SQLite, or PostgreSQL while not listening)."""
LISTENING_POLL_SECONDS = 1.0
"""How often it is read on PostgreSQL while notifications arrive (a safety net only)."""
MIN_SNAPSHOT_SECONDS = 0.05
"""Snapshots follow each other at most this often however fast the queues change."""
LISTEN_RETRY_SECONDS = 2.0
KEEPALIVE_SECONDS = 15.0
RETRY_MS = 2000
PENDING_SHOWN = 2000
"""At most this many pending alarms go into a snapshot (the count says how many there are)."""
STATS_SECONDS = 15.0
STATS_MINUTES = 60


class Subscriber:
    """One connected console: the newest snapshot not yet sent (older ones are superseded)."""

    __slots__ = ("gone", "message", "revision", "wake")

    def __init__(self) -> None:
        self.message: bytes | None = None
        self.revision = -1
        self.wake = asyncio.Event()
        self.gone = False

    def offer(self, revision: int, message: bytes) -> None:
        if revision > self.revision:
            self.revision = revision
            self.message = message
            self.wake.set()

    def sent(self, revision: int) -> None:
        """The snapshot of ``revision`` went out directly: drop any older one offered."""
        if revision >= self.revision:
            self.revision = revision
            self.message = None
            self.wake.clear()

    def take(self) -> bytes | None:
        message, self.message = self.message, None
        self.wake.clear()
        return message


class LiveFeed:
    """Watches ``queue_revision`` a few times a second while consoles are connected and
    publishes a snapshot (pending, in process, on hold, operators, the TYPEs in storm mode
    and the size of the storm list, the accounts on test, server time) on change."""

    def __init__(self, engine: Engine, poll_seconds: float = POLL_SECONDS) -> None:
        self._engine = engine
        self.poll_seconds = poll_seconds
        self._subscribers: set[Subscriber] = set()
        self._published: int | None = None
        self._latest: tuple[int, bytes] | None = None
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._stats: tuple[float, list[int]] | None = None
        self._stats_lock = asyncio.Lock()
        self._changed = asyncio.Event()
        self._listener: asyncio.Task[None] | None = None
        self.listening = False

    @property
    def closed(self) -> bool:
        return self._closed

    async def start(self) -> None:
        self._closed = False
        self._task = asyncio.create_task(self._run(), name="console-feed")
        if self._engine.dialect.name == "postgresql":
            self._listener = asyncio.create_task(self._listen(), name="console-feed-listen")

    def close(self) -> None:
        """End every event stream (consoles reconnect to another node, or when this one is
        back) and publish nothing more."""
        self._closed = True
        for subscriber in self._subscribers:
            subscriber.wake.set()

    async def stop(self) -> None:
        self.close()
        for task in (self._task, self._listener):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._task = self._listener = None

    def subscribe(self) -> Subscriber:
        subscriber = Subscriber()
        self._subscribers.add(subscriber)
        return subscriber

    def unsubscribe(self, subscriber: Subscriber) -> None:
        self._subscribers.discard(subscriber)

    async def _next_look(self) -> None:
        """Wait for the next look at the revision: a notification, or the poll interval."""
        poll = LISTENING_POLL_SECONDS if self.listening else self.poll_seconds
        await woken(self._changed, poll)
        self._changed.clear()

    async def _listen(self) -> None:
        """Hold a connection that LISTENs for the queue revision's notification (PostgreSQL)."""
        import psycopg  # the PostgreSQL driver: a node on SQLite never loads it

        conninfo = libpq_conninfo(self._engine.url)  # a multi-host URL too (decisions §14)
        channel = notify_channel(queries.QUEUE)
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
                    await conn.execute(f"LISTEN {channel}")
                    self.listening = True
                    self._changed.set()  # whatever changed while nobody listened
                    async for _ in conn.notifies():
                        self._changed.set()
            except (psycopg.Error, OSError) as exc:
                log.warning("console feed cannot listen", extra={"error": repr(exc)})
            finally:
                self.listening = False
            await asyncio.sleep(LISTEN_RETRY_SECONDS)

    async def _run(self) -> None:
        failing = False
        while True:
            await self._next_look()
            if not self._subscribers:
                self._published = None
                continue
            try:
                revision = await asyncio.to_thread(self._revision)
                if revision != self._published:
                    self._published, message = await self._snapshot()
                    for subscriber in self._subscribers:
                        subscriber.offer(self._published, message)
                    await asyncio.sleep(MIN_SNAPSHOT_SECONDS)
                if failing:
                    log.info("console feed reads the database again")
                failing = False
            except Exception as exc:
                if not failing:
                    log.warning("console feed cannot read the queues", extra={"error": repr(exc)})
                failing = True
                await asyncio.sleep(1.0)

    def _revision(self) -> int:
        with self._engine.connect() as conn:
            return queries.queue_revision(conn)

    async def current(self) -> tuple[int, bytes]:
        """The snapshot of the queues as they are now (the cached one when nothing changed)."""
        latest = self._latest
        if latest is not None and latest[0] == await asyncio.to_thread(self._revision):
            return latest
        return await self._snapshot()

    async def snapshot_now(self) -> dict[str, Any]:
        """A fresh snapshot as a value (the API's ``GET /console/api/snapshot``)."""
        return (await asyncio.to_thread(self._build))[1]

    async def _snapshot(self) -> tuple[int, bytes]:
        revision, message = await asyncio.to_thread(self._build_message)
        if self._latest is None or revision >= self._latest[0]:
            self._latest = (revision, message)
        return revision, message

    def _build_message(self) -> tuple[int, bytes]:
        revision, snapshot = self._build()
        return revision, event("snapshot", snapshot)

    def _build(self) -> tuple[int, dict[str, Any]]:
        with self._engine.connect() as conn:  # one read transaction: a consistent picture
            revision = queries.queue_revision(conn)
            pending = queries.alarms_in(conn, AlarmState.PENDING, PENDING_SHOWN)
            total = len(pending)
            if total == PENDING_SHOWN:
                total = queries.count_pending(conn)
            in_process = queries.alarms_in(conn, AlarmState.IN_PROCESS)
            on_hold = queries.alarms_in(conn, AlarmState.ON_HOLD)
            statuses = queries.operator_statuses(conn)
            storm_status = storm.status(conn)
            tests = on_test.running_tests(conn, now_us())
        snapshot = {
            "revision": revision,
            "server_us": now_us(),
            "fields": views.QUEUE_FIELDS,
            "pending": views.queue(pending),
            "pending_total": total,
            "in_process": views.queue(in_process),
            "on_hold": views.queue(on_hold),
            "operators": views.operator_statuses(statuses, in_process),
            "storm": storm_status,
            "on_test": tests,
        }
        return revision, snapshot

    async def signals_per_minute(self) -> list[int]:
        """Signals received in each of the last 60 minutes, oldest first; computed at most once
        every STATS_SECONDS for the whole node, however many consoles ask."""
        async with self._stats_lock:
            cached = self._stats
            if cached is not None and time.monotonic() - cached[0] < STATS_SECONDS:
                return cached[1]

            def read() -> list[int]:
                with self._engine.connect() as conn:
                    return statistics.signals_per_minute(conn, now_us(), STATS_MINUTES)

            counts = await asyncio.to_thread(read)
            self._stats = (time.monotonic(), counts)
            return counts


def event(name: str, data: Any) -> bytes:
    """One server-sent event; JSON never holds a raw line break, so ``data`` is one line."""
    return b"event: " + name.encode() + b"\ndata: " + views.dumps(data) + b"\n\n"


def clock() -> bytes:
    """The server's time, sent with every message: the page ticks ages from its offset."""
    return event("clock", {"server_us": now_us()})


class EventStream(Response):
    """``text/event-stream`` of one console: the current snapshot at once, each new one as it
    is published, a keep-alive comment every KEEPALIVE_SECONDS; the session is checked again
    every STREAM_CHECK_SECONDS whatever the traffic (a session that ended, by sign-out, a new
    password or the operator's disabling, gets ``signed-out`` and the stream ends).
    ``release`` is called when the stream ends (its slot in the listener's stream budget)."""

    media_type = "text/event-stream"

    def __init__(
        self,
        feed: LiveFeed,
        session_valid: Callable[[], Awaitable[bool]],
        headers: dict[str, str],
        release: Callable[[], None] = lambda: None,
        keepalive_seconds: float = KEEPALIVE_SECONDS,
    ) -> None:
        self.status_code = 200
        self.background = None
        self._feed = feed
        self._session_valid = session_valid
        self._release = release
        self._keepalive = keepalive_seconds
        self.init_headers({**headers, "X-Accel-Buffering": "no"})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        subscriber = self._feed.subscribe()

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            subscriber.gone = True
            subscriber.wake.set()

        watcher = asyncio.create_task(watch())
        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            revision, snapshot = await self._feed.current()
            subscriber.sent(revision)
            first = b"retry: %d\n\n" % RETRY_MS + snapshot + clock()
            await send({"type": "http.response.body", "body": first, "more_body": True})
            await self._stream(subscriber, send)
        except OSError:
            pass  # the console went away
        finally:
            watcher.cancel()
            self._feed.unsubscribe(subscriber)
            self._release()
        with contextlib.suppress(OSError):
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _stream(self, subscriber: Subscriber, send: Send) -> None:
        checked = sent = time.monotonic()
        while True:
            now = time.monotonic()
            due = min(sent + self._keepalive, checked + STREAM_CHECK_SECONDS) - now
            await woken(subscriber.wake, max(due, 0.0))
            if subscriber.gone or self._feed.closed:
                return
            now = time.monotonic()
            if now - checked >= STREAM_CHECK_SECONDS:
                checked = now
                if not await self._session_valid():
                    body = event("signed-out", {"message": "your console session has ended"})
                    await send({"type": "http.response.body", "body": body, "more_body": True})
                    return
            message = subscriber.take()
            if message is None:
                if now - sent < self._keepalive:
                    continue
                message = b": keep-alive\n\n"
            await send({"type": "http.response.body", "body": message + clock(), "more_body": True})
            sent = time.monotonic()
