"""The webhook worker's HTTP client: POSTs over kept-alive HTTP/1.1 connections, one small pool
per receiver (scheme, host, port), the protocol spoken by h11 (the HTTP/1.1 state machine httpx
itself is built on) without a general client's layers, so that a delivery costs little of the
node's event loop. TLS through the standard library's default context (certificates verified);
no redirects followed, no proxy from the environment, at most ``read_limit`` bytes of an answer
read (the connection is then closed, not reused).

Unless private targets are allowed (``webhook_allow_private``), a receiver's host is resolved
when a connection is opened, every address checked (:func:`alarmhub.core.webhooks.
resolved_problem`) and the connection made to a checked address, TLS still verifying the host's
name: a name that resolved to a public address when the webhook was added and to a private one
now (DNS rebinding) is not connected to (:class:`TargetRefused`)."""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Sequence
from urllib.parse import urlsplit

import h11

from alarmhub.core.webhooks import resolved_problem

Origin = tuple[str, str, int]
READ_CHUNK = 65536


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.http = h11.Connection(h11.CLIENT)

    def close(self) -> None:
        self.writer.close()


class TargetRefused(OSError):
    """A receiver's host resolves to an address webhooks may not go to: the attempt fails as
    one with no connection does, the error saying why."""


class WebhookHttp:
    """POST bodies to URLs; reuse each receiver's connections (at most ``idle_per_origin``
    kept idle); ``allow_private``: connect to whatever the host resolves to."""

    def __init__(self, read_limit: int, idle_per_origin: int = 32, allow_private: bool = False):
        self._allow_private = allow_private
        self._read_limit = read_limit
        self._idle_max = idle_per_origin
        self._idle: dict[Origin, list[_Connection]] = {}
        self._tls: ssl.SSLContext | None = None

    async def post(self, url: str, headers: Sequence[tuple[str, str]], body: bytes) -> int:
        """The receiver's status code; raises ``OSError`` or ``h11.ProtocolError`` when no
        answer came. The caller bounds the time it may take."""
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        host = parts.hostname or ""
        port = parts.port or (443 if scheme == "https" else 80)
        origin = (scheme, host, port)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        host_header = parts.netloc.rpartition("@")[2]
        conn = self._take(origin) or await self._open(origin)
        try:
            status, reusable = await self._exchange(conn, host_header, target, headers, body)
        except BaseException:
            conn.close()
            raise
        if reusable and len(self._idle.setdefault(origin, [])) < self._idle_max:
            conn.http.start_next_cycle()
            self._idle[origin].append(conn)
        else:
            conn.close()
        return status

    async def close(self) -> None:
        for conns in self._idle.values():
            for conn in conns:
                conn.close()
        self._idle.clear()

    def _take(self, origin: Origin) -> _Connection | None:
        idle = self._idle.get(origin)
        while idle:
            conn = idle.pop()
            if not conn.reader.at_eof() and not conn.writer.is_closing():
                return conn
            conn.close()
        return None

    async def _open(self, origin: Origin) -> _Connection:
        scheme, host, port = origin
        tls = None
        if scheme == "https":
            if self._tls is None:
                self._tls = ssl.create_default_context()
            tls = self._tls
        error: OSError | None = None
        for address in [host] if self._allow_private else await _checked(host, port):
            try:
                reader, writer = await asyncio.open_connection(
                    address, port, ssl=tls, server_hostname=host if tls else None, limit=READ_CHUNK
                )
            except OSError as exc:
                error = exc
                continue
            return _Connection(reader, writer)
        assert error is not None
        raise error

    async def _exchange(
        self,
        conn: _Connection,
        host: str,
        target: str,
        headers: Sequence[tuple[str, str]],
        body: bytes,
    ) -> tuple[int, bool]:
        http = conn.http
        sent = [("Host", host), ("Content-Length", str(len(body))), *headers]
        request = h11.Request(method="POST", target=target, headers=sent)
        conn.writer.write(
            http.send(request) + http.send(h11.Data(data=body)) + http.send(h11.EndOfMessage())
        )
        await conn.writer.drain()
        status = 0
        read = 0
        while True:
            event = http.next_event()
            if event is h11.NEED_DATA:
                chunk = await conn.reader.read(READ_CHUNK)
                http.receive_data(chunk)  # b"": the receiver closed
                continue
            if isinstance(event, h11.Response):
                status = event.status_code
            elif isinstance(event, h11.Data):
                read += len(event.data)
                if read > self._read_limit:  # enough of an answer nobody reads
                    return status, False
            elif isinstance(event, h11.EndOfMessage):
                reusable = http.our_state is h11.DONE and http.their_state is h11.DONE
                return status, reusable
            elif isinstance(event, h11.ConnectionClosed):
                raise ConnectionResetError("the receiver closed the connection")


async def _checked(host: str, port: int) -> list[str]:
    """The addresses ``host`` resolves to now, each one allowed; TargetRefused when one is not
    (an OSError when the name does not resolve)."""
    found = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses = [str(sockaddr[0]) for *_, sockaddr in found]
    problem = resolved_problem(addresses)
    if problem:
        raise TargetRefused(problem)
    return list(dict.fromkeys(addresses))
