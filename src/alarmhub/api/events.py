"""The event stream ``GET /api/v1/events`` (decisions section 10): the outbox's events as
server-sent events (``id`` the event's id, ``event`` its kind, ``data`` its body, as webhooks
send it), only those of the key's accounts, resumable with ``Last-Event-ID``.

The outbox is the truth (on PostgreSQL every node writes to it): one task a process reads it
for every stream (:mod:`alarmhub.api.stream_hub`); a stream sends a page at a time after the
last event it sent, and waits, costing nothing, when it is caught up. No connection is held
while a page is sent, so a slow client holds nothing of the database. A stream ends when the
client goes, within :data:`~alarmhub.node.listener_limits.STREAM_CHECK_SECONDS` of its key's
revocation, or when the node stops (clients then reconnect, to this node or another, with
``Last-Event-ID``). Streams are limited per key, per address and per listener
(:class:`~alarmhub.node.listener_limits.StreamBudget`): one over answers 429 (503 when the
listener's budget is full) with ``API-STREAMS``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

import orjson
from sqlalchemy import Connection
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from alarmhub.api.openapi import REFUSALS, SECURITY, problem
from alarmhub.api.plumbing import Api
from alarmhub.api.problems import INPUT, STREAMS, ApiProblem
from alarmhub.api.stream_hub import PAGE, Follower, OutboxHub, wait
from alarmhub.core import events
from alarmhub.core.api_keys import ApiKey
from alarmhub.node.listener_limits import StreamBudget, StreamRefused, StreamSlot
from alarmhub.store import events as outbox

log = logging.getLogger("alarmhub.api")
SCOPE = "events:read"
KEEPALIVE_SECONDS = 15.0
"""A comment line this often when nothing else was sent."""
RETRY_MS = 2000
"""How long a client waits before it reconnects (the stream's ``retry`` field)."""
KEEPALIVE = b": keep-alive\n\n"


def frame(event: outbox.Event) -> bytes:
    """One event as a server-sent event; the body is JSON, so one line."""
    return b"id: %s\nevent: %s\ndata: %s\n\n" % (
        events.event_id_text(event.event_id).encode(),
        event.kind.encode(),
        event.body.encode(),
    )


def gap_frame(last_event_id: int, resumed_after: int, detail: str) -> bytes:
    """The ``gap`` event: events after ``last_event_id`` may be missing (forgotten, or the id is
    not one of this station's). It has no ``id``, so the client's Last-Event-ID stays."""
    body = {
        "last_event_id": events.event_id_text(last_event_id),
        "resumed_after": events.event_id_text(resumed_after),
        "detail": detail,
    }
    return b"event: gap\ndata: " + orjson.dumps(body) + b"\n\n"


def resume_point(request: Request) -> int | None:
    """The event id the client names (``Last-Event-ID``, else ``?last_event_id=``), or None;
    422 API-INPUT for one that is not an event id."""
    given = request.headers.get("last-event-id")
    if given is None:
        given = request.query_params.get("last_event_id")
    if given is None or not given.strip():
        return None
    event_id = events.event_id_of(given)
    if event_id is None:
        raise ApiProblem(INPUT, "Last-Event-ID must be an event id, e.g. evt_42")
    return event_id


def start_of(conn: Connection, last: int | None) -> tuple[int, bytes]:
    """Where a stream starts (after this id) and what it sends first: the ``gap`` event when
    events after ``last`` were forgotten, or ``last`` is newer than every event."""
    newest = outbox.newest(conn)
    if last is None:
        return newest, b""
    if last > newest:
        detail = "no such event here: the stream resumes with the next new event"
        return newest, gap_frame(last, newest, detail)
    forgotten = outbox.forgotten_through(conn)
    if last < forgotten:
        detail = (
            f"events up to {events.event_id_text(forgotten)} were forgotten (they are kept "
            f"{outbox.KEEP_DAYS} days): the stream resumes with the oldest event kept"
        )
        return forgotten, gap_frame(last, forgotten, detail)
    return last, b""


class EventStream(Response):
    """``text/event-stream`` of one client (see the module's docstring)."""

    media_type = "text/event-stream"

    def __init__(
        self, api: Api, hub: OutboxHub, key: ApiKey, slot: StreamSlot, after: int, first: bytes
    ) -> None:
        self.status_code = 200
        self.background = None
        self._api = api
        self._hub = hub
        self._key = key
        self._slot = slot
        self._after = after
        self._first = first
        self.init_headers({"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        follower = self._hub.join(self._key.name)
        gone = False

        async def watch() -> None:
            nonlocal gone
            while (await receive())["type"] != "http.disconnect":
                pass
            gone = True
            follower.wake.set()

        watcher = asyncio.create_task(watch())
        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            first = b"retry: %d\n\n" % RETRY_MS + self._first
            await send({"type": "http.response.body", "body": first, "more_body": True})
            await self._stream(follower, lambda: gone, send)
        except OSError:
            pass  # the client went away
        finally:
            watcher.cancel()
            self._hub.leave(follower)
            self._slot.release()
        with contextlib.suppress(OSError):
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _stream(self, follower: Follower, gone: Callable[[], bool], send: Send) -> None:
        sees = self._key.sees
        last_sent = time.monotonic()
        while not gone() and not follower.revoked and not self._hub.closed():
            head = self._hub.head
            if head is not None and self._after < head:
                page = self._hub.after(self._after)
                if page is None:  # behind what the hub keeps: read the outbox
                    try:
                        page = await self._api.read(lambda c: outbox.after(c, self._after, PAGE))
                    except Exception as exc:  # the client reconnects, to this node or another
                        log.warning(
                            "event stream cannot read the outbox", extra={"error": repr(exc)}
                        )
                        return
                if page:
                    self._after = page[-1].event_id
                    body = b"".join(frame(e) for e in page if sees(e.account_number))
                    if body:
                        await send({"type": "http.response.body", "body": body, "more_body": True})
                        last_sent = time.monotonic()
                    continue  # more may be there at once
            idle = time.monotonic() - last_sent
            if idle >= KEEPALIVE_SECONDS:
                await send({"type": "http.response.body", "body": KEEPALIVE, "more_body": True})
                last_sent, idle = time.monotonic(), 0.0
            await wait(follower, KEEPALIVE_SECONDS - idle)


def routes(api: Api, budget: StreamBudget, closed: Callable[[], bool]) -> list[BaseRoute]:
    """The event stream's route; streams take their slots in ``budget``; ``closed`` says when
    the node stops (streams then end)."""
    hub = OutboxHub(api, closed)

    async def stream(request: Request, key: ApiKey) -> Response:
        last = resume_point(request)
        address = request.client.host if request.client else ""
        try:
            slot = budget.take(request.scope, key.name, address)
        except StreamRefused as refused:
            raise ApiProblem(STREAMS, refused.detail, refused.status) from None
        try:
            after, first = await api.read(lambda conn: start_of(conn, last))
        except BaseException:
            slot.release()
            raise
        return EventStream(api, hub, key, slot, after, first)

    return [Route("/events", api.endpoint(SCOPE, stream), methods=["GET"])]


PATHS: dict[str, Any] = {
    "/api/v1/events": {
        "get": {
            "summary": "The event stream: server-sent events of the key's accounts",
            "description": (
                "Each event has `id` (its id, `evt_<n>`: the webhooks' `webhook-id`), `event` "
                "(its kind) and `data` (its body, `{type, timestamp, data}`). Without "
                "`Last-Event-ID` the stream starts with the next new event; with it, after that "
                "event (events are kept 7 days; an older id gets an `event: gap` first). A "
                "comment line every 15 s keeps the connection open. At most 4 streams of one "
                "key and 16 from one address at once (the station's settings), each on a budget "
                "of its own, apart from the listener's connections. Scope `events:read`."
            ),
            "security": SECURITY,
            "parameters": [
                {
                    "name": "Last-Event-ID",
                    "in": "header",
                    "required": False,
                    "schema": {"type": "string", "pattern": "^(evt_)?[0-9]{1,18}$"},
                    "description": "Resume after this event.",
                },
                {
                    "name": "last_event_id",
                    "in": "query",
                    "required": False,
                    "schema": {"type": "string", "pattern": "^(evt_)?[0-9]{1,18}$"},
                    "description": "As Last-Event-ID (for clients that cannot set headers).",
                },
            ],
            "responses": {
                "200": {
                    "description": "The stream (it does not end by itself)",
                    "content": {"text/event-stream": {"schema": {"type": "string"}}},
                },
                **REFUSALS,
                "422": problem("API-INPUT: Last-Event-ID is not an event id"),
                "429": problem("API-STREAMS: the key's, or the address's, streams are open"),
                "503": problem("API-STREAMS: the listener's stream budget is full"),
            },
        }
    }
}
"""The OpenAPI path item of the event stream."""
