"""A commit the database refuses at once because it cannot commit at all (decisions §14; on a
full disk, or here the write lock held by another transaction longer than the writer waits for
it): its signal is answered STORE-1, and the node says it cannot commit (``/healthz`` 503) until
a commit succeeds, or, with nothing sent meanwhile, until ``store_commit_timeout`` has passed
(a node a load balancer took out of service is taken back and tries again). The full disk itself:
tests/e2e/test_sqlite_disk_full.py."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from alarmhub.core.errors import StoreUnavailable
from alarmhub.settings import load
from alarmhub.store import sqlite
from alarmhub.store.engine import open_engine
from alarmhub.store.writer import SignalWriter
from alarmhub.store.writer_process import WriterThread
from tests.store.test_commit_timeout import LockHolder, _signal
from tests.support.database import database_url, db_rows

pytestmark = pytest.mark.backends("sqlite")  # the writer's wait for SQLite's write lock
LOCK_WAIT_MS = 100  # how long the writer waits for the write lock here (10 s in service)


@pytest.mark.parametrize("then", ["a commit", "the timeout"])
def test_a_refused_commit_says_the_node_cannot_commit_until_one_succeeds_or_in_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, then: str
) -> None:
    database_url(tmp_path)
    timeout = 30.0 if then == "a commit" else 2.0  # the lock wait fails well before it
    settings = load(tmp_path, store_commit_timeout=timeout)
    lock = LockHolder(settings.database)

    async def scenario() -> tuple[bool, str, bool, bool]:
        engine = open_engine(settings.database)
        writer = SignalWriter(engine, settings, WriterThread.start)
        await writer.start()
        try:
            await writer.submit(_signal("001"))
            before = writer.committing
            # before the lock is held: a routing or supervision transaction of the writer that
            # began meanwhile would wait the service's 10 s for it (the holder tries again)
            monkeypatch.setattr(sqlite, "BUSY_TIMEOUT_MS", LOCK_WAIT_MS)
            await asyncio.to_thread(lock.hold)
            with pytest.raises(StoreUnavailable) as refused:
                await writer.submit(_signal("002"))
            cannot = not writer.committing
            lock.release()
            await asyncio.sleep(0.2)  # the lock free: the node has not committed since
            still = not writer.committing
            if then == "a commit":
                await writer.submit(_signal("003"))
            else:
                while not writer.committing:  # store_commit_timeout after the refusal
                    await asyncio.sleep(0.01)
            return before and cannot, str(refused.value), still, writer.committing
        finally:
            lock.release()
            await writer.stop()
            engine.dispose()
            lock.join()

    said, refused, still, committing = asyncio.run(scenario())
    assert "locked" in refused
    assert said, "the node said it could commit although the database refused a commit"
    assert still, "the node said it could commit again before a commit or the timeout"
    assert committing
    zones = [r["zone"] for r in db_rows(tmp_path, "SELECT zone FROM signal ORDER BY zone")]
    assert zones == (["001", "003"] if then == "a commit" else ["001"])
