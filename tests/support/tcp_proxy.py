"""A TCP proxy between a node and its database, for the fault tests: it forwards every
connection to ``target`` and :meth:`TcpProxy.cut` drops every connection at once (each side
reset, as when a network link or a firewall's state is lost mid-transaction).

asyncio in a thread of its own; use it as a context manager (started on enter, stopped with
every connection closed on exit). :meth:`TcpProxy.cut_on` cuts at a chosen moment instead: once
a client has sent bytes holding a marker and the server has answered, that answer dropped
(``b"BEGIN"`` with ``answers=2``: mid-transaction, the statement after the ``BEGIN`` executed;
``b"COMMIT"``: the commit is made, the client never learns it). New connections after a cut
are forwarded again, unless :meth:`TcpProxy.refuse` says otherwise (then they are reset at once,
until :meth:`TcpProxy.accept`).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
import time
from types import TracebackType

from tests.support.processes import free_port

CHUNK = 65536


class TcpProxy:
    """Forward ``127.0.0.1:port`` to ``target`` (host, port); see the module's docstring."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = free_port()
        self.connections = 0  # accepted so far
        self.cuts = 0  # connections dropped by cut()
        self.cut_at = 0.0  # the monotonic time of the last cut
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._pairs: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self._refusing = False
        self._marker: bytes | None = None
        self._answers = 1
        self._marked = threading.Event()
        self._silenced: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()

    def __enter__(self) -> TcpProxy:
        self._thread.start()
        self._call(self._start())
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        with contextlib.suppress(Exception):
            self._call(self._stop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    def cut(self) -> int:
        """Reset every connection now (both sides); how many were cut."""
        count: int = self._call(self._cut())
        return count

    def cut_on(self, marker: bytes, answers: int = 1) -> threading.Event:
        """Cut every connection at the server's ``answers``-th answer (its bytes read at once)
        after a client's bytes holding ``marker``, that answer dropped (those before it
        forwarded); the event is set when that cut is done."""
        self._marked = threading.Event()
        self._answers = answers
        self._marker = marker
        return self._marked

    def silence(self) -> int:
        """Every connection open now goes silent for ever: what either side sends is dropped,
        nothing is closed (a link whose state a firewall lost, its packets dropped); new
        connections are forwarded. How many were silenced."""
        count: int = self._call(self._silence())
        return count

    def refuse(self) -> None:
        """Reset new connections at once (the database unreachable) until :meth:`accept`."""
        self._refusing = True

    def accept(self) -> None:
        self._refusing = False

    def _call(self, coroutine: object) -> object:
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)  # type: ignore[arg-type]
        return future.result(timeout=30)

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)

    async def _stop(self) -> None:
        if self._server is not None:
            self._server.close()
        self._pairs.update(self._silenced)
        self._silenced.clear()
        await self._cut()

    async def _cut(self) -> int:
        pairs = list(self._pairs)
        self.cut_at = time.monotonic()
        for client, upstream in pairs:
            _reset(client)
            _reset(upstream)
        self._pairs.clear()
        self.cuts += len(pairs)
        return len(pairs)

    async def _silence(self) -> int:
        pairs = list(self._pairs)
        self.cut_at = time.monotonic()
        self._silenced.update(pairs)
        self._pairs.difference_update(pairs)
        return len(pairs)

    async def _handle(self, client_r: asyncio.StreamReader, client: asyncio.StreamWriter) -> None:
        self.connections += 1
        if self._refusing:
            _reset(client)
            return
        try:
            upstream_r, upstream = await asyncio.open_connection(*self.target)
        except OSError:
            _reset(client)
            return
        pair = (client, upstream)
        self._pairs.add(pair)
        marked = [0]  # this client sent the marker: the server's answers it has to go
        try:
            await asyncio.gather(
                self._pipe(client_r, upstream, pair, marked, True),
                self._pipe(upstream_r, client, pair, marked),
            )
        finally:
            if pair in self._pairs or pair in self._silenced:
                self._pairs.discard(pair)
                self._silenced.discard(pair)
                client.close()
                upstream.close()

    async def _pipe(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        pair: tuple[asyncio.StreamWriter, asyncio.StreamWriter],
        marked: list[int],
        from_client: bool = False,
    ) -> None:
        """Copy ``reader`` to ``writer`` until either ends (its end passed on as a half-close,
        a reset as a reset: a client killed with bytes unread resets its connection, and the
        server must learn it, or its session, and the locks it holds, would outlive the
        client); a client's bytes are looked at for the marker of :meth:`cut_on`, and the
        server's answer after them is dropped and every connection cut."""
        try:
            while data := await reader.read(CHUNK):
                if pair in self._silenced:
                    continue  # dropped
                if not from_client and marked[0]:
                    marked[0] -= 1
                    if not marked[0]:
                        await self._cut()
                        self._marked.set()
                        return
                writer.write(data)
                await writer.drain()
                if from_client and self._marker is not None and self._marker in data:
                    self._marker = None
                    marked[0] = self._answers
            if pair not in self._silenced and writer.can_write_eof():
                writer.write_eof()
        except (OSError, RuntimeError):
            if pair not in self._silenced:
                _reset(writer)


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP reset (SO_LINGER 0), as a lost link's peer sees it."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()
