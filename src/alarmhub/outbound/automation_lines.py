"""The lines an automation output sends over: a TCP connection alarmhub opens (the next address
when told), a TCP server the automation connects to (one connection at a time, a new one
replacing the old) and a serial port. What comes back is read without holding it: only ACK
(0x06) and NAK (0x15) matter, every other byte is counted and dropped."""

from __future__ import annotations

import asyncio
import logging
import re
from abc import ABC, abstractmethod
from typing import cast

from alarmhub.receivers.frames import ACK, NAK
from alarmhub.receivers.transports import (
    BIND_RETRY_SECONDS,
    host_port,
    open_serial,
    open_tcp,
)

log = logging.getLogger("alarmhub.outputs")
WRITE_BUFFER_MAX = 4096
"""Bytes written and not yet taken by the peer beyond which the connection is dropped (a peer
that reads nothing would otherwise be given a frame again every ack timeout, without end)."""
_ANSWER = re.compile(re.escape(ACK) + b"|" + re.escape(NAK))


class LineDown(ConnectionError):
    """The connection closed, or stopped taking what is written."""


class Peer(asyncio.Protocol):
    """One connection to the automation: :meth:`send` a frame, then :meth:`answer` waits for
    the first ACK or NAK after it. Answers that come when none is awaited (a late answer to a
    try given up on) are counted in :attr:`stray`; other bytes in :attr:`ignored`."""

    def __init__(self, peer: str = "") -> None:
        self.peer = peer
        self.transport: asyncio.BaseTransport | None = None
        loop = asyncio.get_running_loop()
        self.made: asyncio.Future[None] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()
        self.ignored = 0
        self.stray = 0
        self._waiter: asyncio.Future[bytes] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        if not self.peer:
            name = transport.get_extra_info("peername")
            self.peer = f"{name[0]}:{name[1]}" if isinstance(name, tuple) else ""
        self.made.set_result(None)

    def data_received(self, data: bytes) -> None:
        first = _ANSWER.search(data)
        answers = data.count(ACK) + data.count(NAK)
        self.ignored += len(data) - answers
        if first is not None and self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(first.group())
            answers -= 1
        self.stray += answers

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(LineDown(str(exc) if exc else "connection closed"))

    @property
    def connected(self) -> bool:
        return self.transport is not None and not self.closed.done()

    def send(self, frame: bytes) -> None:
        """Write ``frame``, awaiting its answer from now on (an answer that came before is
        not its)."""
        if not self.connected:
            raise LineDown("not connected")
        # uvloop's transports write as asyncio's do but are not their subclasses
        transport = cast(asyncio.WriteTransport, self.transport)
        if transport.get_write_buffer_size() > WRITE_BUFFER_MAX:
            self.close()
            raise LineDown(f"the peer took nothing of the last {WRITE_BUFFER_MAX} bytes")
        self._waiter = asyncio.get_running_loop().create_future()
        transport.write(frame)

    async def answer(self, timeout: float) -> bytes | None:
        """ACK or NAK, the first after the last :meth:`send`; None when none came within
        ``timeout`` seconds. Raises LineDown when the connection closes."""
        waiter = self._waiter
        assert waiter is not None, "answer() without send()"
        try:
            async with asyncio.timeout(timeout):  # wait_for may swallow a cancel (3.11)
                return await waiter
        except TimeoutError:
            return None
        finally:
            self._waiter = None
            if not waiter.done():
                waiter.cancel()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


class Line(ABC):
    """Where an output's frames go: :meth:`open` gives a connected :class:`Peer`."""

    addresses: tuple[str, ...]
    index = 0

    @property
    def address(self) -> str:
        return self.addresses[self.index]

    @property
    def moves(self) -> bool:
        """Whether :meth:`next_address` opens another connection (only a connect line does)."""
        return False

    def next_address(self) -> None:  # noqa: B027 (only a connect line has addresses to go to)
        """Go on at the next address (after the last, the first again)."""

    @abstractmethod
    async def open(self) -> Peer:
        """A connection; raises OSError (or TimeoutError) when none can be had now."""

    async def close(self) -> None:  # noqa: B027 (only a listen line has a server to close)
        """Stop taking connections."""


class ConnectLine(Line):
    """TCP connections alarmhub opens: to the primary address, then its backups in turn."""

    def __init__(self, addresses: tuple[str, ...]) -> None:
        if not addresses:
            raise ValueError("a connect output needs an address")
        self.addresses = addresses
        self._targets = [host_port(address) for address in addresses]

    @property
    def moves(self) -> bool:
        return True

    def next_address(self) -> None:
        self.index = (self.index + 1) % len(self.addresses)

    async def open(self) -> Peer:
        host, port = self._targets[self.index]
        return await open_tcp(lambda: Peer(self.address), host, port)


class ListenLine(Line):
    """A TCP server the automation connects to: one connection at a time, a new one closing the
    one before (a restarted automation may not have closed its old connection)."""

    def __init__(self, address: str) -> None:
        self.addresses = (address,)
        self.host, self.port = host_port(address)
        self._server: asyncio.Server | None = None
        self.problem = ""  # why it cannot listen ("" when it listens)
        self._current: Peer | None = None
        self._arrived = asyncio.Event()

    def _accept(self) -> Peer:
        if self._current is not None and self._current.connected:
            log.info("automation connection replaced", extra={"address": self.address})
            self._current.close()
        self._current = Peer()
        self._arrived.set()
        return self._current

    async def listen(self) -> None:
        """Start the server (raises OSError when the address cannot be had)."""
        if self._server is None:
            self._server = await asyncio.get_running_loop().create_server(
                self._accept, self.host, self.port, reuse_address=True
            )

    async def open(self) -> Peer:
        while self._server is None:
            try:
                await self.listen()
            except OSError as exc:
                error = exc.strerror or repr(exc)
                if error != self.problem:  # logged once, not at every try
                    log.warning(
                        "automation output cannot listen",
                        extra={"address": self.address, "error": error},
                    )
                self.problem = error
                await asyncio.sleep(BIND_RETRY_SECONDS)
        self.problem = ""
        while True:
            current = self._current
            if current is not None and not current.closed.done():
                await asyncio.wait((current.made, current.closed), return_when="FIRST_COMPLETED")
                if current.connected:
                    return current
                continue
            self._arrived.clear()
            await self._arrived.wait()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        if self._current is not None:
            self._current.close()


class SerialLine(Line):
    """A serial port (``framing`` as ``8N1``)."""

    def __init__(self, device: str, baud: int, framing: str) -> None:
        self.addresses = (device,)
        self.baud = baud
        self.framing = framing

    async def open(self) -> Peer:
        return await open_serial(lambda: Peer(self.address), self.address, self.baud, self.framing)
