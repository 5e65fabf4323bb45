"""A stand-in for the automation software alarmhub's automation output sends to: the Sur-Gard
receiver input of a central station's automation. It reads frames ending with DC4 (0x14), records
each one's bytes, and answers each with one byte: ACK, NAK or nothing, as it is told (a mode, or
a script of answers for the next frames), at once or after a delay. A TCP server in the test's
event loop that can be stopped and started again on the same port, or one end of a serial line;
:class:`SimThread` runs one in a thread of its own, for tests whose own code is not asynchronous
(real ``alarmhub serve`` processes).
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

import serial_asyncio_fast

from alarmhub.core.surgard import DC4
from alarmhub.receivers.frames import ACK as ACK_BYTES
from alarmhub.receivers.frames import NAK as NAK_BYTES

ACK, NAK, SILENT = "ack", "nak", "silent"
ANSWERS = {ACK: ACK_BYTES, NAK: NAK_BYTES, SILENT: b""}
HELD_MAX = 4096  # bytes of an unfinished frame kept (a real automation input's buffer)
T = TypeVar("T")


@dataclass(frozen=True)
class Received:
    """A frame as received, and what it was answered (``silent``: nothing)."""

    frame: bytes
    answer: str
    connection: int  # which connection it came on: 1 for the first, and so on


class _Input(asyncio.Protocol):
    """One connection of the stand-in."""

    def __init__(self, sim: AutomationSim, number: int) -> None:
        self.sim = sim
        self.number = number
        self.transport: asyncio.Transport | None = None
        self.held = bytearray()
        self.pending = 0  # answers decided, not sent yet (a delay)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.sim.inputs.append(self)
        self.sim.changed()

    def data_received(self, data: bytes) -> None:
        self.held += data
        while (end := self.held.find(DC4)) != -1:
            frame = bytes(self.held[: end + 1])
            del self.held[: end + 1]
            self.sim.frame(self, frame)
        del self.held[: max(0, len(self.held) - HELD_MAX)]

    def connection_lost(self, exc: Exception | None) -> None:
        if self in self.sim.inputs:
            self.sim.inputs.remove(self)
        self.sim.changed()

    def answer(self, answer: bytes) -> None:
        self.pending -= 1
        if answer and self.transport is not None and not self.transport.is_closing():
            self.transport.write(answer)


class AutomationSim:
    """The stand-in: ``await start()`` listens on ``host:port`` (port 0: one is chosen, and
    kept for the next start); ``mode`` answers every frame (ACK, NAK or SILENT) unless
    ``script`` has an answer for it (taken in turn); ``delay`` seconds before each answer.
    ``received`` has every frame in the order it came. ``overlaps`` counts frames that came on
    a connection while an answer there was still being held back (two frames in flight)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self.port = port
        self.mode = ACK
        self.script: deque[str] = deque()
        self.delay = 0.0
        self.received: list[Received] = []
        self.overlaps = 0
        self.connections = 0
        self.inputs: list[_Input] = []
        self.on_frame: Callable[[bytes], None] | None = None  # called as each frame comes
        self._server: asyncio.Server | None = None
        self._changed = asyncio.Event()

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def frames(self) -> list[bytes]:
        return [r.frame for r in self.received]

    def _input(self) -> _Input:
        self.connections += 1
        return _Input(self, self.connections)

    async def start(self) -> None:
        self._server = await asyncio.get_running_loop().create_server(
            self._input, self.host, self.port, reuse_address=True
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        """Close the server and every connection (the automation's computer gone)."""
        if self._server is not None:
            self._server.close()
            self._server = None
        for connection in list(self.inputs):
            assert connection.transport is not None
            connection.transport.abort()
        await self.until(lambda: not self.inputs)

    async def attach_serial(self, device: str, baud: int = 9600) -> None:
        """Take frames on a serial device (one end of a pty pair) instead of a TCP port."""
        await serial_asyncio_fast.create_serial_connection(
            asyncio.get_running_loop(), self._input, device, baudrate=baud
        )

    def frame(self, connection: _Input, frame: bytes) -> None:
        if self.on_frame is not None:
            self.on_frame(frame)
        answer = self.script.popleft() if self.script else self.mode
        self.received.append(Received(frame, answer, connection.number))
        if connection.pending:
            self.overlaps += 1
        connection.pending += 1
        loop = asyncio.get_running_loop()
        if self.delay:
            loop.call_later(self.delay, connection.answer, ANSWERS[answer])
        else:
            connection.answer(ANSWERS[answer])
        self.changed()

    def push(self, data: bytes) -> None:
        """Write ``data`` to every connection (bytes a sender must not hold on to)."""
        for connection in self.inputs:
            assert connection.transport is not None
            connection.transport.write(data)

    def changed(self) -> None:
        self._changed.set()

    async def until(self, condition: Callable[[], bool], timeout: float = 30.0) -> None:
        """Wait until ``condition()`` holds; AssertionError after ``timeout`` seconds."""

        async def wait() -> None:
            while not condition():
                self._changed.clear()
                await self._changed.wait()

        try:
            await asyncio.wait_for(wait(), timeout)
        except TimeoutError:
            raise AssertionError(f"not within {timeout} s: {condition}") from None

    async def frames_count(self, count: int, timeout: float = 30.0) -> None:
        await self.until(lambda: len(self.received) >= count, timeout)


class SimThread:
    """An :class:`AutomationSim` on an event loop of its own in a daemon thread: ``sim`` is
    only touched there, through :meth:`call` (a function) and :meth:`run` (a coroutine), which
    wait for the result. ``with SimThread() as automation:`` closes it at the end."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="automation-sim", daemon=True
        )
        self._thread.start()
        self.sim = AutomationSim(host, port)

    def __enter__(self) -> SimThread:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def run(self, work: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        return asyncio.run_coroutine_threadsafe(work, self._loop).result(timeout)

    def call(self, work: Callable[[], T]) -> T:
        async def called() -> T:
            return work()

        return self.run(called())

    @property
    def address(self) -> str:
        return self.sim.address

    def start(self) -> SimThread:
        self.run(self.sim.start())
        return self

    def stop(self) -> None:
        self.run(self.sim.stop())

    def set(self, **settings: object) -> None:
        """Set the sim's ``mode`` (ACK, NAK or SILENT), ``delay`` and the like, from now on."""

        def apply() -> None:
            for name, value in settings.items():
                assert hasattr(self.sim, name), name
                setattr(self.sim, name, value)

        self.call(apply)

    def answer(self, mode: str, *script: str) -> None:
        """Answer every frame ``mode`` from now on, the next ones ``script`` first."""

        def change() -> None:
            self.sim.mode = mode
            self.sim.script = deque(script)

        self.call(change)

    def on_loop(self, work: Callable[[AutomationSim], T]) -> T:
        """``work(sim)`` run on the sim's loop (a read of what it counted, a change)."""
        return self.call(lambda: work(self.sim))

    def received(self) -> list[Received]:
        return self.call(lambda: list(self.sim.received))

    def until(self, condition: Callable[[AutomationSim], bool], timeout: float = 30.0) -> None:
        """Wait until ``condition(sim)`` holds, evaluated on the sim's loop as frames and
        connections come; AssertionError after ``timeout`` seconds."""
        self.run(self.sim.until(lambda: condition(self.sim), timeout), timeout + 10)

    def close(self) -> None:
        """Stop the sim and its loop, and end the thread."""
        if self._loop.is_closed():
            return
        if self._thread.is_alive():
            self.run(self.sim.stop())
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        self._loop.close()
