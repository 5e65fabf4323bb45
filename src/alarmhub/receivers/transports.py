"""The ways a receiver link's bytes come in, each a task keeping its link connected: TCP listen,
TCP connect (again within seconds of a drop) and serial (opened again when it fails or
vanishes); each connection a :class:`~alarmhub.receivers.session.Session`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, TypeVar

import serial_asyncio_fast

from alarmhub.receivers.session import Link, Session

log = logging.getLogger("alarmhub.receivers")
CONNECTIONS_MAX = 3  # a listen link's connections: a new one closes the oldest beyond
RETRY_MIN_SECONDS = 0.25
RETRY_MAX_SECONDS = 2.0  # a connect link back within 5 s of a drop (with CONNECT_TIMEOUT)
CONNECT_TIMEOUT_SECONDS = 2.5
BIND_RETRY_SECONDS = 2.0
REOPEN_SECONDS = 1.0
DRAIN_SECONDS = 10.0  # answers in flight finish when a link stops (commits wait that long)


def host_port(address: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) as ``serve`` reads it; ValueError when it is
    not one, or has no port."""
    from alarmhub.node.server import parse_address  # the node's, loaded by then: no cycle

    host, port = parse_address(address)
    if not port:
        raise ValueError(f"{address!r} has no port")
    return host, port


P = TypeVar("P", bound=asyncio.Protocol)


async def open_tcp(factory: Callable[[], P], host: str, port: int) -> P:
    """A TCP connection to ``host:port`` for the protocol ``factory`` makes, given
    CONNECT_TIMEOUT_SECONDS to open."""
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(CONNECT_TIMEOUT_SECONDS):  # wait_for may swallow a cancel (3.11)
        _, protocol = await loop.create_connection(factory, host, port)
    return protocol


async def open_serial(factory: Callable[[], P], device: str, baud: int, framing: str) -> P:
    """The serial port ``device`` at ``baud``, ``framing`` as ``8N1`` (data bits, parity, stop
    bits), for the protocol ``factory`` makes."""
    bits, parity, stop = framing[0], framing[1], framing[2]
    _, protocol = await serial_asyncio_fast.create_serial_connection(
        asyncio.get_running_loop(),
        factory,
        device,
        baudrate=baud,
        bytesize=int(bits),
        parity=parity,
        stopbits=int(stop),
    )
    return protocol  # type: ignore[return-value]


class Transport(ABC):
    """A link's connections: :meth:`run` keeps them up until :meth:`stop`."""

    def __init__(self, link: Link) -> None:
        self.link = link
        self.sessions: list[Session] = []
        self.problem = ""  # why it is not connected now ("" when it is, or has not tried)
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._guarded(), name=f"receiver link {self.link.name}")

    async def _guarded(self) -> None:
        while True:
            try:
                await self.run()
            except asyncio.CancelledError:
                raise
            except Exception:  # one link's fault stalls no other: logged, the link run again
                log.exception("receiver link failed to run", extra={"link": self.link.name})
            self.sessions = [s for s in self.sessions if s.connected]
            await asyncio.sleep(REOPEN_SECONDS)

    @abstractmethod
    async def run(self) -> None: ...

    def _session(self, peer: str = "") -> Session:
        session = Session(self.link, peer)
        self.sessions.append(session)
        session.closed.add_done_callback(lambda _: self._ended(session))
        return session

    def _ended(self, session: Session) -> None:
        with contextlib.suppress(ValueError):
            self.sessions.remove(session)

    def _failed(self, problem: str, **extra: Any) -> None:
        if problem != self.problem:
            log.warning(problem, extra={"link": self.link.name, **extra})
        self.problem = problem

    async def stop(self) -> None:
        """Take no more frames; let the answers in flight go out; close."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._close()
        sessions = list(self.sessions)
        for session in sessions:
            session.pause()
        await asyncio.gather(*(s.drain(DRAIN_SECONDS) for s in sessions))
        for session in sessions:
            session.close()

    async def _close(self) -> None:  # noqa: B027 (only a listen link has a server to close)
        """Stop taking connections (a listen link's server)."""


class Listen(Transport):
    """A TCP server on the link's address; a connection beyond CONNECTIONS_MAX closes the
    oldest (terminal servers reconnect without closing their old connection)."""

    def __init__(self, link: Link, address: str) -> None:
        super().__init__(link)
        self.host, self.port = host_port(address)
        self._server: asyncio.Server | None = None

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while self._server is None:
            try:
                self._server = await loop.create_server(
                    self._accept, self.host, self.port, reuse_address=True
                )
            except OSError as exc:
                self._failed("receiver link cannot listen", error=exc.strerror or repr(exc))
                await asyncio.sleep(BIND_RETRY_SECONDS)
        self.problem = ""
        log.info(
            "receiver link listening",
            extra={"link": self.link.name, "host": self.host, "port": self.port},
        )
        await asyncio.Future()  # serves until cancelled

    def _accept(self) -> Session:
        session = self._session()
        while len(self.sessions) > CONNECTIONS_MAX:
            oldest = self.sessions.pop(0)
            log.info("receiver connection replaced", extra={"link": self.link.name})
            oldest.close()
        return session

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None


class _Reconnecting(Transport):
    """A connection alarmhub opens, opened again after it drops or fails to open."""

    async def run(self) -> None:
        delay = RETRY_MIN_SECONDS
        while True:
            try:
                session = await self.open()
            except Exception as exc:  # refused, unreachable, no such device, port settings
                self.sessions = [s for s in self.sessions if s.connected]
                self._failed("receiver link cannot connect", error=str(exc) or repr(exc))
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_SECONDS)
                continue
            delay = RETRY_MIN_SECONDS
            self.problem = ""
            await session.closed  # logged by the session
            await asyncio.sleep(RETRY_MIN_SECONDS)

    @abstractmethod
    async def open(self) -> Session: ...


class Connect(_Reconnecting):
    """A TCP connection to the receiver (or its terminal server) at the link's address."""

    def __init__(self, link: Link, address: str) -> None:
        super().__init__(link)
        self.host, self.port = host_port(address)

    async def open(self) -> Session:
        return await open_tcp(self._session, self.host, self.port)


class Serial(_Reconnecting):
    """A serial port: ``baud``, ``framing`` as ``8N1`` (data bits, parity, stop bits)."""

    def __init__(self, link: Link, device: str, baud: int, framing: str) -> None:
        super().__init__(link)
        self.device = device
        self.baud = baud
        self.framing = framing

    async def open(self) -> Session:
        return await open_serial(
            lambda: self._session(self.device), self.device, self.baud, self.framing
        )
