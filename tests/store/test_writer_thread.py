"""The writer loop in a thread of the node's process (``WriterThread``), as in-process tests run
it: the node's side commits through it as through the writer process, and it reports how it
ended as a process does."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from alarmhub.core.errors import StoreUnavailable
from alarmhub.core.signal import Signal, SignalFields
from alarmhub.settings import load
from alarmhub.store import framing
from alarmhub.store.commit import Stored, to_wire
from alarmhub.store.engine import open_engine
from alarmhub.store.writer import SignalWriter, WriterHandle, writer_config
from alarmhub.store.writer_process import ROUTE_SLICE, WriterLoop, WriterThread
from tests.support.database import database_url, db_rows, sqlite_only


def _signal(zone: str) -> Signal:
    return Signal("site1", "rx1", SignalFields("1234", "0042", "E130", "01", zone), "t", 1, None)


class Started:
    """``WriterThread.start``, keeping the writers it started."""

    def __init__(self) -> None:
        self.writers: list[WriterHandle] = []

    def __call__(self, sock: socket.socket) -> WriterHandle:
        writer = WriterThread.start(sock)
        self.writers.append(writer)
        return writer


def test_signals_are_committed_and_answered_through_a_writer_thread(tmp_path: Path) -> None:
    database_url(tmp_path)
    settings = load(tmp_path)
    started = Started()

    async def scenario() -> list[Stored]:
        engine = open_engine(settings.database)
        writer = SignalWriter(engine, settings, started)
        await writer.start()
        try:
            return await asyncio.gather(*(writer.submit(_signal(f"{i:03}")) for i in range(5)))
        finally:
            await writer.stop()
            engine.dispose()

    stored = asyncio.run(scenario())
    numbers = [x.incident_number for x in stored]
    assert numbers == sorted(numbers) and len(set(numbers)) == 5
    assert not any(x.duplicate or x.conflict for x in stored)
    rows = db_rows(tmp_path, "SELECT incident_number, zone FROM signal ORDER BY incident_number")
    assert [(r["incident_number"], r["zone"]) for r in rows] == [
        (n, f"{i:03}") for i, n in enumerate(numbers)
    ]
    [thread] = started.writers
    assert thread.poll() == 0, "the loop ends once the node's end of the socket closes"
    assert thread.wait() == 0


def test_a_writer_thread_that_cannot_open_its_database_fails_the_start(tmp_path: Path) -> None:
    database_url(tmp_path)
    settings = load(tmp_path)
    unreachable = load(tmp_path, database_url=f"sqlite:///{tmp_path / 'no' / 'such.db'}")
    started = Started()

    async def scenario() -> None:
        engine = open_engine(settings.database)
        writer = SignalWriter(engine, unreachable, started)
        try:
            await writer.start()
        finally:
            await writer.stop()
            engine.dispose()

    with pytest.raises(StoreUnavailable, match="did not start"):
        asyncio.run(scenario())
    assert [w.wait() for w in started.writers] == [1]


@sqlite_only("on PostgreSQL every node routes from the database, not from the writer's memory")
def test_routing_stops_after_a_slice_when_signals_wait_and_routes_the_rest_after(
    tmp_path: Path,
) -> None:
    """A commit never waits for a whole routing: when signals arrive while committed ones are
    routed, routing stops after the slice in progress; the rest are routed later, each once and
    in incident-number order."""
    ours, theirs, loop = _writer_loop(tmp_path)
    try:
        loop.recall()
        loop._route()  # the catch-up of a start: nothing is unrouted
        count = 3 * ROUTE_SLICE
        theirs.sendall(_frame(f"{i:03}" for i in range(count)))
        loop._receive(1.0)
        loop._commit()
        assert len(loop._unrouted) == count
        theirs.sendall(_frame(["999"]))  # arrives while routing
        loop._route_committed()
        assert _routed_up_to(tmp_path) == loop._unrouted[0].incident_number - 1
        assert len(loop._unrouted) == count - ROUTE_SLICE
        assert loop._may_route_committed(), "the rest is overdue: routed after the next commit"
        loop._commit()
        loop._route_committed()
        assert not loop._unrouted
    finally:
        ours.close()
        theirs.close()
    signals = [
        r["incident_number"] for r in db_rows(tmp_path, "SELECT incident_number FROM signal")
    ]
    rows = db_rows(
        tmp_path,
        "SELECT h.incident_number FROM history h JOIN signal s"
        " ON s.incident_number = h.incident_number ORDER BY h.event_id",
    )
    assert [r["incident_number"] for r in rows] == sorted(signals)  # each once, in order
    assert len(signals) == count + 1
    assert _routed_up_to(tmp_path) == max(signals)


def test_what_waits_is_committed_at_once_without_waiting_for_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit takes the signals that wait and waits for no more: a sender that waits for
    each answer before it sends again (a receiver link, stop-and-wait) never waits for a batch
    to fill. Every read of the writer's channels while a signal waits returns at once."""
    ours, theirs, loop = _writer_loop(tmp_path)
    reads: list[tuple[float | None, int]] = []  # each read's timeout, and the signals waiting
    read = loop._channels.read

    def counted(timeout: float | None) -> Any:
        reads.append((timeout, sum(map(len, loop._waiting))))
        return read(timeout)

    monkeypatch.setattr(loop._channels, "read", counted)
    loop.recall()
    running = threading.Thread(target=loop.run)
    running.start()
    buffer = bytearray()

    def answer() -> dict[str, Any]:
        while True:
            for message in framing.decode_all(buffer):
                if isinstance(message, dict) and "stored" in message:
                    return message
            chunk = theirs.recv(65536)
            assert chunk, "the writer ended"
            buffer.extend(chunk)

    try:
        for i in range(20):  # stop-and-wait, one or two signals a frame
            theirs.sendall(_frame(f"{i:02}{j}" for j in range(1 + i % 2)))
            assert len(answer()["stored"]) == 1 + i % 2
    finally:
        theirs.close()
        running.join(30)
        ours.close()
    assert not running.is_alive()
    assert len(db_rows(tmp_path, "SELECT incident_number FROM signal")) == 30
    waited = [timeout for timeout, waiting in reads if waiting and timeout != 0.0]
    assert waited == [], "a read waited while signals were waiting to be committed"


def _writer_loop(data_dir: Path) -> tuple[socket.socket, socket.socket, WriterLoop]:
    """A writer loop on a new database, driven step by step over a socket pair (its end, ours)."""
    database_url(data_dir)
    ours, theirs = socket.socketpair()
    return ours, theirs, WriterLoop(ours, writer_config(load(data_dir), leader=True), bytearray())


def _frame(zones: Iterable[str]) -> bytes:
    """A frame of signals from the node, one for each zone."""
    return framing.encode([to_wire(_signal(zone)) for zone in zones])


def _routed_up_to(data_dir: Path) -> int:
    [row] = db_rows(data_dir, "SELECT value FROM sequence WHERE name = 'routed'")
    return int(row["value"])


@sqlite_only("the log is SQLite's")
def test_the_writer_completes_a_checkpoint_the_node_asks_for_and_the_log_starts_again(
    tmp_path: Path,
) -> None:
    """Under a steady load the node's own checkpoint never completes (commits keep coming), so
    the log grew without end; the writer completes it between its own transactions when asked,
    and its next commits write the log from its beginning again (the file stops growing)."""
    ours, theirs, loop = _writer_loop(tmp_path)
    log_file = tmp_path / "alarmhub.db-wal"

    def store_and_route(zone: str) -> int:
        theirs.sendall(_frame(f"{zone}{i:02}"[-3:] for i in range(64)))
        loop._receive(1.0)
        loop._commit()
        loop._route_committed()
        return log_file.stat().st_size

    try:
        loop.recall()
        loop._route()
        store_and_route("1")
        grown = store_and_route("2")
        assert store_and_route("3") > grown, "with no checkpoint the log only grows"
        theirs.sendall(framing.CHECKPOINT_REQUEST)
        loop._receive(1.0)
        assert loop._checkpoint_due and loop._leader, "a checkpoint leaves the lead as it is"
        size = log_file.stat().st_size
        loop._checkpoint()
        assert store_and_route("4") == size, "the log is written from its beginning again"
    finally:
        ours.close()
        theirs.close()
