"""The event stream ``GET /api/v1/events`` (decisions section 10): the outbox's events as
server-sent events (``id`` the event's id, ``event`` its kind, ``data`` its body, as webhooks
send it), only those of the key's accounts, resumable with ``Last-Event-ID``.

The outbox is the truth (on PostgreSQL every node writes to it): each stream reads it a page at a
time after the last event it sent, sends the page, and reads again; when it is caught up it looks
again every :data:`POLL_SECONDS`. No connection is held while a page is sent, so a slow client
holds nothing of the database. A stream ends when the client goes, when its key is revoked, or
when the node stops (clients then reconnect, to this node or another, with ``Last-Event-ID``).
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
from alarmhub.api.problems import INPUT, ApiProblem
from alarmhub.core import events
from alarmhub.core.api_keys import ApiKey
from alarmhub.store import api_keys
from alarmhub.store import events as outbox

log = logging.getLogger("alarmhub.api")
SCOPE = "events:read"
POLL_SECONDS = 0.25
"""How often a stream that is caught up looks for new events."""
KEEPALIVE_SECONDS = 15.0
"""A comment line this often when nothing else was sent (and the key is checked again)."""
PAGE = 500
"""Events read at once; the next page is read only after this one was sent."""
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
        return last, gap_frame(last, forgotten, detail)
    return last, b""


class EventStream(Response):
    """``text/event-stream`` of one client (see the module's docstring)."""

    media_type = "text/event-stream"

    def __init__(
        self,
        api: Api,
        key: ApiKey,
        still_valid: Callable[[], bool],
        closed: Callable[[], bool],
        after: int,
        first: bytes,
    ) -> None:
        self.status_code = 200
        self.background = None
        self._api = api
        self._key = key
        self._still_valid = still_valid
        self._closed = closed
        self._after = after
        self._first = first
        self.init_headers({"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        gone = asyncio.Event()

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        watcher = asyncio.create_task(watch())
        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            first = b"retry: %d\n\n" % RETRY_MS + self._first
            await send({"type": "http.response.body", "body": first, "more_body": True})
            await self._stream(gone, send)
        except OSError:
            pass  # the client went away
        finally:
            watcher.cancel()
        with contextlib.suppress(OSError):
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _stream(self, gone: asyncio.Event, send: Send) -> None:
        sees = self._key.sees
        last_sent = time.monotonic()
        while not gone.is_set() and not self._closed():
            try:
                page = await self._api.read(lambda conn: outbox.after(conn, self._after, PAGE))
            except Exception as exc:  # the client reconnects, to this node or another
                log.warning("event stream cannot read the outbox", extra={"error": repr(exc)})
                return
            if page:
                self._after = page[-1].event_id
                body = b"".join(frame(e) for e in page if sees(e.account_number))
                if body:
                    await send({"type": "http.response.body", "body": body, "more_body": True})
                    last_sent = time.monotonic()
                if len(page) == PAGE:
                    continue  # more to read at once
            if time.monotonic() - last_sent >= KEEPALIVE_SECONDS:
                if not await asyncio.to_thread(self._still_valid):
                    return
                await send({"type": "http.response.body", "body": KEEPALIVE, "more_body": True})
                last_sent = time.monotonic()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(gone.wait(), POLL_SECONDS)


def routes(api: Api, closed: Callable[[], bool]) -> list[BaseRoute]:
    """The event stream's route; ``closed`` says when the node stops (streams then end)."""

    async def stream(request: Request, key: ApiKey) -> Response:
        last = resume_point(request)
        after, first = await api.read(lambda conn: start_of(conn, last))
        presented = request.headers["authorization"].partition(" ")[2].strip()

        def still_valid() -> bool:
            with api.engine.connect() as conn:
                return api_keys.authenticate(conn, presented) is not None

        return EventStream(api, key, still_valid, closed, after, first)

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
                "comment line every 15 s keeps the connection open. Scope `events:read`."
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
            },
        }
    }
}
"""The OpenAPI path item of the event stream."""
