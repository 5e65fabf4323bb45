"""Limits of the HTTP listeners, enforced before a request reaches the application: the time and
size of a request's headers, and the connections open at once on one listener.

uvicorn's httptools protocol has none of them (its keep-alive timer runs only between
requests), so a client sending its headers one byte at a time, or a header block without end,
would hold a connection, and the parser's buffer, for ever. :func:`guarded_protocol` makes a
subclass that:

- closes a connection that has not sent a request's complete headers within
  ``http_header_seconds`` of its first byte (of the connection's opening for the first
  request), checked by :func:`close_slow_headers` once a second;
- answers 431 and closes when a request's headers (request line included) pass
  ``http_max_header_bytes``: bytes are counted as they arrive, so the parser never holds more;
- answers 503 and closes a connection that would be one more than ``http_max_connections`` on
  its listener, before reading anything from it; connections serving an event stream are not
  counted (they have a budget of their own, :class:`StreamBudget`), so long-lived streams never
  take the slots the signaling path and the console need.

The cost on a request is a few attribute reads and updates in ``data_received`` and one in the
parser's end-of-message callback: no timer is armed per request.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Iterable
from typing import Any

from starlette.requests import Request
from starlette.types import Scope
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from alarmhub.settings import Settings

HEADERS_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
    b"content-length: 0\r\nconnection: close\r\n\r\n"
)
TOO_MANY_CONNECTIONS = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
)
HEADER_END = b"\r\n\r\n"
CONNECTION = "alarmhub.connection"
"""The scope's key for the connection (a weak reference to the protocol) a request came on."""
STREAM_CHECK_SECONDS = 5.0
"""How often an open event stream's credentials (API key, console session) are checked again,
whatever the traffic: a revoked key's or an ended session's stream ends within this."""
_streams: weakref.WeakKeyDictionary[ServerState, int] = weakref.WeakKeyDictionary()
"""Connections serving an event stream now, per listener (its server state)."""


class GuardedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the listener limits (set by :func:`guarded_protocol`)."""

    header_seconds = 10.0
    max_header_bytes = 16384
    max_connections = 2048

    # slots, so the instance's dict stays as uvicorn's protocol lays it out (about 30 keys)
    __slots__ = (
        "_header_bytes",
        "_headers_since",
        "_in_headers",
        "_message_done",
        "_ref",
        "_refused",
        "_stream",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._in_headers = True
        self._message_done = False  # the parser has read the current request to its end
        self._header_bytes = 0
        self._headers_since: float | None = None  # when the headers began; None: not timed
        self._refused = False
        self._stream = False  # serving an event stream: outside the connection cap
        self._ref = weakref.ref(self)  # what a request's scope holds (no reference cycle)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        state = self.server_state
        if len(state.connections) - _streams.get(state, 0) >= self.max_connections:
            # refused before anything is read or allocated for it
            self._refused = True
            self.transport = transport  # type: ignore[assignment]
            transport.write(TOO_MANY_CONNECTIONS)  # type: ignore[attr-defined]
            transport.close()
            return
        super().connection_made(transport)  # type: ignore[arg-type]
        self._headers_since = self.loop.time()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._refused:
            return
        self.stream_ended()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if not self._in_headers:
            if not self._message_done:
                # the body of the request being read, even when it was answered before its
                # end (a body over a limit): its bytes are never the next request's headers
                cycle = self.cycle
                _data_received(self, data)
                if self.cycle is not cycle:  # the next request's headers came in this read
                    self._message_done = not self.cycle.more_body
                return
            # the last request is read to its end: the next one's headers begin (counted from
            # this read on; what followed the end in the same read is not counted)
            self._in_headers = True
            self._message_done = False
            self._header_bytes = 0
        if self._headers_since is None:
            self._headers_since = self.loop.time()
        room = self.max_header_bytes - self._header_bytes
        self._header_bytes += len(data)
        cycle = self.cycle  # replaced by a new one when the parser completes the headers
        if self._header_bytes > self.max_header_bytes:
            # the headers may end in this chunk: give the parser what fits, see whether they
            # ended, and only then the rest
            _data_received(self, data[:room])
            if self.cycle is cycle:
                self.refuse_headers()
                return
            self._headers_done()
            if room < len(data) and not self.transport.is_closing():
                _data_received(self, data[room:])
            return
        _data_received(self, data)
        if self.cycle is not cycle:
            self._headers_done()

    def on_message_complete(self) -> None:
        self._message_done = True
        _on_message_complete(self)

    def _headers_done(self) -> None:
        self._in_headers = False
        self._headers_since = None
        self.cycle.scope[CONNECTION] = self._ref  # type: ignore[literal-required]

    def stream_began(self) -> None:
        """This connection serves an event stream from now on: off the connection cap."""
        if not self._stream:
            self._stream = True
            _streams[self.server_state] = _streams.get(self.server_state, 0) + 1

    def stream_ended(self) -> None:
        if self._stream:
            self._stream = False
            _streams[self.server_state] -= 1

    def refuse_headers(self) -> None:
        self._in_headers = False
        self._headers_since = None
        if not self.transport.is_closing():
            self.transport.write(HEADERS_TOO_LARGE)
            self.transport.close()

    def headers_overdue(self, now: float) -> bool:
        """Whether the current request's headers are late; never while the node is still
        answering the previous request on this connection (a client may send the next one
        meanwhile)."""
        since = self._headers_since
        if since is None or now - since <= self.header_seconds:
            return False
        return self.cycle is None or self.cycle.response_complete

    def close_slow(self) -> None:
        self._headers_since = None
        if not self.transport.is_closing():
            self.transport.close()


# called directly: cheaper than super()
_data_received = HttpToolsProtocol.data_received
_on_message_complete = HttpToolsProtocol.on_message_complete


def guarded_protocol(settings: Settings) -> type[GuardedProtocol]:
    """The protocol class of a listener, with the limits of ``settings``."""
    attributes: dict[str, Any] = {
        "header_seconds": settings.http_header_seconds,
        "max_header_bytes": settings.http_max_header_bytes,
        "max_connections": settings.http_max_connections,
    }
    return type("ListenerProtocol", (GuardedProtocol,), attributes)


class StreamRefused(Exception):
    """No room for one more event stream: ``status`` 429 (the key's or the address's share is
    taken) or 503 (the listener's stream budget is)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


class StreamBudget:
    """The event streams one listener of this process holds open, apart from its connection
    cap: at most ``stream_max_connections`` in all, ``stream_max_per_key`` of one API key and
    ``stream_max_per_address`` from one client address (the console's feeds count in the
    listener's budget alone: each has an operator's session)."""

    def __init__(self, settings: Settings) -> None:
        self.most = settings.stream_max_connections
        self.per_key = settings.stream_max_per_key
        self.per_address = settings.stream_max_per_address
        self.open = 0
        self._keys: dict[str, int] = {}
        self._addresses: dict[str, int] = {}

    def take(self, scope: Scope, key: str | None = None, address: str | None = None) -> StreamSlot:
        """A slot for one stream (StreamRefused when there is none); the stream gives it back
        with :meth:`StreamSlot.release` when it ends."""
        if key is not None and self._keys.get(key, 0) >= self.per_key:
            raise StreamRefused(429, f"this key has {self.per_key} event streams open already")
        if address is not None and self._addresses.get(address, 0) >= self.per_address:
            raise StreamRefused(
                429, f"this address has {self.per_address} event streams open already"
            )
        if self.open >= self.most:
            raise StreamRefused(503, "the node serves as many event streams as it can")
        self.open += 1
        _count(self._keys, key, 1)
        _count(self._addresses, address, 1)
        ref = scope.get(CONNECTION)
        connection = ref() if ref is not None else None
        if isinstance(connection, GuardedProtocol):
            connection.stream_began()
        return StreamSlot(self, connection, key, address)


class StreamSlot:
    """One stream's place in a :class:`StreamBudget`."""

    __slots__ = ("_address", "_budget", "_connection", "_key")

    def __init__(
        self, budget: StreamBudget, connection: object, key: str | None, address: str | None
    ) -> None:
        self._budget: StreamBudget | None = budget
        self._connection = connection
        self._key = key
        self._address = address

    def release(self) -> None:
        budget, self._budget = self._budget, None
        if budget is None:
            return
        budget.open -= 1
        _count(budget._keys, self._key, -1)
        _count(budget._addresses, self._address, -1)
        if isinstance(self._connection, GuardedProtocol):
            self._connection.stream_ended()


def _count(counts: dict[str, int], name: str | None, step: int) -> None:
    if name is None:
        return
    value = counts.get(name, 0) + step
    if value > 0:
        counts[name] = value
    else:
        counts.pop(name, None)


def close_slow_headers(connections: Iterable[object], now: float) -> int:
    """Close the connections whose headers are overdue; how many were closed."""
    overdue = [c for c in connections if isinstance(c, GuardedProtocol) and c.headers_overdue(now)]
    for connection in overdue:
        connection.close_slow()
    return len(overdue)


async def read_limited(request: Request, limit: int) -> bytes | None:
    """A request's body as it arrives (chunked too), or None as soon as it passes ``limit``
    bytes: never more than ``limit`` and one chunk is held."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)
