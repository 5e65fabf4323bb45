"""A commit that does not complete within ``store_commit_timeout`` (decisions §14): its signal is
answered STORE-1 then, new signals are refused at once while it is outstanding, the node says it
cannot commit, and when the commit completes after all the signal is kept and the node commits
again. The commit is held up by another transaction holding the incident counter's lock (on
SQLite: the write lock), as a primary waiting for a standby that is gone holds it up."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from alarmhub.core.errors import StoreUnavailable
from alarmhub.core.signal import Signal, SignalFields
from alarmhub.settings import load
from alarmhub.store.commit import lock_incidents
from alarmhub.store.engine import open_engine, write_transaction
from alarmhub.store.writer import SignalWriter
from alarmhub.store.writer_process import WriterThread
from tests.support.database import database_url, db_rows

TIMEOUT_S = 0.5


def _signal(zone: str) -> Signal:
    return Signal("site1", "rx1", SignalFields("1234", "0042", "E130", "01", zone), "t", 1, None)


def test_an_overdue_commit_is_answered_store_1_and_its_signal_kept(tmp_path: Path) -> None:
    database_url(tmp_path)
    settings = load(tmp_path, store_commit_timeout=TIMEOUT_S)
    holding, release = threading.Event(), threading.Event()

    def hold_the_lock() -> None:
        engine = open_engine(settings.database)
        try:
            with write_transaction(engine) as conn:
                lock_incidents(conn)
                holding.set()
                release.wait(60)
        finally:
            engine.dispose()

    async def scenario() -> tuple[str, str, bool, bool, int]:
        engine = open_engine(settings.database)
        writer = SignalWriter(engine, settings, WriterThread.start)
        await writer.start()
        holder = threading.Thread(target=hold_the_lock, daemon=True)
        try:
            await writer.submit(_signal("001"))  # committed before the lock is held
            holder.start()
            await asyncio.to_thread(holding.wait, 30)
            with pytest.raises(StoreUnavailable) as overdue:
                await writer.submit(_signal("002"))
            with pytest.raises(StoreUnavailable) as refused:
                await writer.submit(_signal("003"))  # at once: a commit is outstanding
            cannot = not writer.committing
            release.set()
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
            release.set()
            await writer.stop()
            engine.dispose()
            holder.join(30)

    overdue, refused, cannot, committing_again, _ = asyncio.run(scenario())
    assert "not completed within 0.5 s" in overdue
    assert "a commit outstanding" in refused
    assert cannot, "the node said it could commit while a commit was overdue"
    assert committing_again
    zones = [r["zone"] for r in db_rows(tmp_path, "SELECT zone FROM signal ORDER BY zone")]
    assert zones == ["001", "002", "004"], "the overdue signal is kept; the refused one never sent"
