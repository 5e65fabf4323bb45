"""A commit that does not complete within ``store_commit_timeout`` (decisions §14): its signal is
answered STORE-1 then, new signals are refused at once while it is outstanding, the node says it
cannot commit, and when the commit completes after all the signal is kept and the node commits
again. The commit is held up by another transaction holding the incident counter's lock (on
SQLite: the write lock), as a primary waiting for a standby that is gone holds it up."""

from __future__ import annotations

import asyncio
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import Connection
from sqlalchemy.exc import OperationalError

from alarmhub.core.errors import StoreUnavailable
from alarmhub.core.signal import Signal, SignalFields
from alarmhub.settings import load
from alarmhub.store.commit import lock_incidents
from alarmhub.store.engine import open_engine, write_transaction
from alarmhub.store.writer import SignalWriter, writer_config
from alarmhub.store.writer_channels import Channels
from alarmhub.store.writer_process import WriterLoop, WriterThread
from tests.support.database import database_url, db_rows

TIMEOUT_S = 0.5


class LockHolder:
    """Another transaction that holds the incident counter's lock (on SQLite: the write lock)
    from :meth:`hold` until :meth:`release`, in a thread of its own."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._holding, self._released = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        engine = open_engine(self._url)
        deadline = time.monotonic() + 30
        try:
            while True:  # taken once the writer's transaction of the moment has ended
                try:
                    with write_transaction(engine) as conn:
                        lock_incidents(conn)
                        self._holding.set()
                        self._released.wait(60)
                    return
                except OperationalError:
                    if self._holding.is_set() or time.monotonic() > deadline:
                        raise
                time.sleep(0.01)
        finally:
            engine.dispose()

    def hold(self) -> None:
        """Start holding it; return once it is held."""
        self._thread.start()
        assert self._holding.wait(30), "the lock was not taken"

    def release(self) -> None:
        self._released.set()

    def join(self) -> None:
        self.release()
        if self._thread.is_alive():
            self._thread.join(30)


def _signal(zone: str) -> Signal:
    return Signal("site1", "rx1", SignalFields("1234", "0042", "E130", "01", zone), "t", 1, None)


def test_an_overdue_commit_is_answered_store_1_and_its_signal_kept(tmp_path: Path) -> None:
    database_url(tmp_path)
    settings = load(tmp_path, store_commit_timeout=TIMEOUT_S)
    lock = LockHolder(settings.database)

    async def scenario() -> tuple[str, str, bool, bool, int]:
        engine = open_engine(settings.database)
        writer = SignalWriter(engine, settings, WriterThread.start)
        await writer.start()
        try:
            await writer.submit(_signal("001"))  # committed before the lock is held
            await asyncio.to_thread(lock.hold)
            with pytest.raises(StoreUnavailable) as overdue:
                await writer.submit(_signal("002"))
            with pytest.raises(StoreUnavailable) as refused:
                await writer.submit(_signal("003"))  # at once: a commit is outstanding
            cannot = not writer.committing
            lock.release()
            while not writer.committing:  # the overdue commit completes
                await asyncio.sleep(0.01)
            stored = await writer.submit(_signal("004"))
            return (
                str(overdue.value),
                str(refused.value),
                cannot,
                writer.committing,
                (stored.incident_number),
            )
        finally:
            lock.release()
            await writer.stop()
            engine.dispose()
            lock.join()

    overdue, refused, cannot, committing_again, _ = asyncio.run(scenario())
    assert "not completed within 0.5 s" in overdue
    assert "a commit outstanding" in refused
    assert cannot, "the node said it could commit while a commit was overdue"
    assert committing_again
    zones = [r["zone"] for r in db_rows(tmp_path, "SELECT zone FROM signal ORDER BY zone")]
    assert zones == ["001", "002", "004"], "the overdue signal is kept; the refused one never sent"


def test_a_commit_stuck_for_one_worker_makes_another_workers_probe_overdue(
    tmp_path: Path,
) -> None:
    """Two workers on one writer (``serve --workers``): the commit of the first worker's signal
    is held up; the second, with no request of its own waiting, probes the writer (as its
    ``/healthz`` does) and cannot commit either until the commit completes."""
    database_url(tmp_path)
    settings = load(tmp_path, store_commit_timeout=TIMEOUT_S)
    run_dir = Path(tempfile.mkdtemp(prefix="ah-"))  # a Unix socket's path is short
    address = str(run_dir / "writer.sock")
    control, theirs = socket.socketpair()
    lock = LockHolder(settings.database)

    def writer() -> None:  # writer_process.main, in a thread
        buffer = bytearray()
        channels = Channels(theirs, buffer, True)
        loop = WriterLoop(theirs, writer_config(settings, leader=True), buffer, channels=channels)
        channels.listen(address)
        try:
            loop.run()
        finally:
            channels.close()
            theirs.close()

    async def until(condition: Callable[[], bool]) -> bool:
        for _ in range(3000):  # 30 s at most
            if condition():
                return True
            await asyncio.sleep(0.01)
        return False

    async def scenario() -> tuple[bool, bool, bool]:
        engine = open_engine(settings.database)
        first = SignalWriter(engine, settings, address=address)
        second = SignalWriter(engine, settings, address=address)
        await first.start()
        await second.start()
        try:
            await asyncio.to_thread(lock.hold)
            stuck = asyncio.ensure_future(first.submit(_signal("001")))

            def probed_overdue() -> bool:  # a probe sent before the frame is answered at once
                second.probe()  # (sent only while none is in flight)
                return not second.committing

            second_cannot = await until(probed_overdue)
            refused = False
            try:
                second.enqueue(_signal("002"))
            except StoreUnavailable:
                refused = True
            lock.release()
            with pytest.raises(StoreUnavailable):
                await stuck
            again = await until(lambda: first.committing and second.committing)
            return second_cannot, refused, again
        finally:
            lock.release()
            await first.stop()
            await second.stop()
            engine.dispose()
            lock.join()

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        for _ in range(3000):
            if Path(address).exists():
                break
            time.sleep(0.01)
        second_cannot, refused, again = asyncio.run(scenario())
    finally:
        control.close()  # the writer ends once its parent's channel closes
        thread.join(30)
        shutil.rmtree(run_dir, ignore_errors=True)
    assert second_cannot, "the second worker's probe never went overdue"
    assert refused, "the second worker took a signal while the writer was stuck"
    assert again, "the workers did not commit again"
    zones = [r["zone"] for r in db_rows(tmp_path, "SELECT zone FROM signal ORDER BY zone")]
    assert zones == ["001"]


def test_another_write_held_up_fails_in_time_and_the_node_cannot_commit_meanwhile(
    tmp_path: Path,
) -> None:
    """A write beside the signals (heartbeats, supervision, an operator's action) held up:
    StoreUnavailable after ``store_commit_timeout`` rather than a wait for ever; the node
    cannot commit until it completes, and a write queued behind it and not started by then
    never runs."""
    database_url(tmp_path)
    settings = load(tmp_path, store_commit_timeout=TIMEOUT_S)
    lock = LockHolder(settings.database)
    ran: list[str] = []

    def held_up(conn: Connection) -> None:
        lock_incidents(conn)  # waits for the holder
        ran.append("held up")

    def queued(conn: Connection) -> None:
        ran.append("queued")

    async def scenario() -> tuple[str, str, bool, bool]:
        engine = open_engine(settings.database)
        writer = SignalWriter(engine, settings, WriterThread.start)
        await writer.start()
        try:
            await asyncio.to_thread(lock.hold)
            with pytest.raises(StoreUnavailable) as first:
                await writer.run(held_up)
            with pytest.raises(StoreUnavailable) as second:
                await writer.run(queued)  # behind the first, in the same thread
            cannot = not writer.committing
            lock.release()
            while not writer.committing:  # the held-up write completes
                await asyncio.sleep(0.01)
            return str(first.value), str(second.value), cannot, writer.committing
        finally:
            lock.release()
            await writer.stop()
            engine.dispose()
            lock.join()

    first, second, cannot, again = asyncio.run(scenario())
    assert "not completed within 0.5 s" in first
    assert "not completed within 0.5 s" in second
    assert cannot, "the node said it could commit while a write was held up"
    assert again
    assert ran == ["held up"], "the queued write ran after its caller was told it failed"
