"""An in-memory double of the store functions an automation output's sender calls
(``alarmhub.outbound.automation.OutputStore``), and the helpers of the sender's tests: the
store itself is tested against both databases."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import replace
from typing import Any, TypeVar

from sqlalchemy import Connection

from alarmhub.core.outputs import OutputReport, OutputSettings, QueuedFrame
from alarmhub.core.surgard import contact_id_frame
from alarmhub.outbound.automation import OutputSender
from tests.support.automation_sim import AutomationSim

T = TypeVar("T")
WAIT = 30.0  # seconds a condition is given (a failure, not a measure)


class FakeStore:
    """The store functions of an automation output, in memory (thread-safe)."""

    def __init__(self, *outputs: OutputSettings) -> None:
        self.outputs = {o.output_id: o for o in outputs}
        self.queue: dict[int, list[QueuedFrame]] = {o.output_id: [] for o in outputs}
        self.delivered_ids: list[int] = []
        self.reports: dict[int, OutputReport] = {}
        self.elsewhere: set[int] = set()  # outputs another node holds
        self.released: list[str] = []
        self.down = False  # hold() fails
        self.hold_seconds = 0.0  # how long hold() takes (a slow commit)
        self.holds: list[float] = []  # when each hold() was asked (time.monotonic())
        self._next = 0
        self._lock = threading.Lock()

    def enqueue(self, output_id: int, frame: bytes) -> None:
        with self._lock:
            self._next += 1
            self.queue[output_id].append(QueuedFrame(self._next, frame, 0))

    def settings(self, conn: Connection) -> list[OutputSettings]:
        return list(self.outputs.values())

    def head(self, conn: Connection, output_id: int, after: int, limit: int) -> list[QueuedFrame]:
        with self._lock:
            return [f for f in self.queue[output_id] if f.frame_id > after][:limit]

    def delivered(self, conn: Connection, output_id: int, frame_id: int) -> None:
        with self._lock:
            self.queue[output_id] = [f for f in self.queue[output_id] if f.frame_id != frame_id]
            self.delivered_ids.append(frame_id)

    def hold(self, conn: Connection, output_id: int, node: str, now_us: int) -> bool:
        self.holds.append(time.monotonic())
        time.sleep(self.hold_seconds)
        if self.down:
            raise ConnectionError("the database is away")
        return output_id not in self.elsewhere

    def release(self, conn: Connection, node: str) -> None:
        self.released.append(node)

    def report(self, conn: Connection, output_id: int, report: OutputReport) -> None:
        self.reports[output_id] = report

    def list_outputs(self, conn: Connection, now_us: int) -> list[dict[str, Any]]:
        with self._lock:
            return [
                {"name": o.name, "queued": len(self.queue[i]), "oldest_queued_s": 0.0}
                for i, o in self.outputs.items()
            ]


class FakeDatabase:
    """Runs the store's functions in a thread, as the engine does, without a database."""

    async def read(self, work: Callable[[Connection], T]) -> T:
        return await asyncio.to_thread(work, None)  # type: ignore[arg-type]

    async def commit(self, work: Callable[[Connection], T]) -> T:
        return await asyncio.to_thread(work, None)  # type: ignore[arg-type]


def settings(*addresses: str, **changes: Any) -> OutputSettings:
    base = OutputSettings(
        output_id=1,
        name="automation",
        protocol="surgard",
        transport="connect",
        addresses=addresses,
        baud=None,
        framing=None,
        accounts=(),
        receiver=1,
        line=1,
        line_digits=1,
        ack_timeout_seconds=2.0,
        heartbeat_seconds=0,
    )
    return replace(base, **changes)


def frames(count: int, first_zone: int = 1) -> list[bytes]:
    return [
        contact_id_frame(1, 1, "1234", "E130", "01", f"{zone:03d}")
        for zone in range(first_zone, first_zone + count)
    ]


async def eventually(condition: Callable[[], bool], timeout: float = WAIT) -> None:
    async def wait() -> None:
        while not condition():
            await asyncio.sleep(0.01)

    try:
        await asyncio.wait_for(wait(), timeout)
    except TimeoutError:
        raise AssertionError(f"not within {timeout} s") from None


@contextlib.asynccontextmanager
async def running(sender: OutputSender) -> AsyncIterator[OutputSender]:
    task = asyncio.create_task(sender.run())
    try:
        yield sender
    finally:
        task.cancel()
        await asyncio.wait((task,), timeout=WAIT)
        assert task.cancelled(), "the sender did not stop when cancelled"
        await sender.stop()


@contextlib.asynccontextmanager
async def sim_at(port: int = 0) -> AsyncIterator[AutomationSim]:
    sim = AutomationSim(port=port)
    await sim.start()
    try:
        yield sim
    finally:
        await sim.stop()


def run(scenario: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(scenario())


def sender_for(output: OutputSettings, store: FakeStore) -> OutputSender:
    return OutputSender(output, store, FakeDatabase(), "node-1")
