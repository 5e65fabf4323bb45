"""The ways a receiver link's bytes come in, each a task keeping its link connected: TCP listen,
TCP connect (again within seconds of a drop) and serial (opened again when it fails or
vanishes); each connection a :class:`~alarmhub.receivers.session.Session`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from abc import ABC, abstractmethod
from typing import Any

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
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) as a host and a port."""
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


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
        loop = asyncio.get_running_loop()
        _, session = await asyncio.wait_for(
            loop.create_connection(self._session, self.host, self.port),
            CONNECT_TIMEOUT_SECONDS,
        )
        return session


class Serial(_Reconnecting):
    """A serial port: ``baud``, ``framing`` as ``8N1`` (data bits, parity, stop bits)."""

    def __init__(self, link: Link, device: str, baud: int, framing: str) -> None:
        super().__init__(link)
        self.device = device
        self.baud = baud
        self.framing = framing

    async def open(self) -> Session:
        bits, parity, stop = self.framing[0], self.framing[1], self.framing[2]
        _, session = await serial_asyncio_fast.create_serial_connection(
            asyncio.get_running_loop(),
            lambda: self._session(self.device),
            self.device,
            baudrate=self.baud,
            bytesize=int(bits),
            parity=parity,
            stopbits=int(stop),
        )
        assert isinstance(session, Session)
        return session
