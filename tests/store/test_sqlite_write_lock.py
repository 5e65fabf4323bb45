"""The writer process's wait for SQLite's write lock (``store.sqlite._begin_writing``): while
another process's connection holds it, the writer tries again every fraction of a millisecond
instead of SQLite's busy handler's steps of 1, 2, 5, 10... ms, begins once the lock is free, and
gives up with the driver's error after the busy timeout."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from alarmhub.store import sqlite
from alarmhub.store.engine import open_engine, write_transaction

pytestmark = pytest.mark.backends("sqlite")


def _hold_lock(path: Path, released: threading.Event, holding: threading.Event) -> None:
    """Another process's transaction: the write lock held until ``released``."""
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        other.execute("BEGIN IMMEDIATE")
        holding.set()
        released.wait(30)
        other.execute("COMMIT")
    finally:
        other.close()


def test_the_writer_begins_once_the_lock_is_free_trying_again_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "w.db"
    writer = open_engine(f"sqlite:///{path}", writer=True)
    try:
        with write_transaction(writer) as conn:
            conn.execute(text("CREATE TABLE t (n INTEGER)"))
        released, holding = threading.Event(), threading.Event()
        holder = threading.Thread(target=_hold_lock, args=(path, released, holding))
        holder.start()
        assert holding.wait(10)
        tries: list[str] = []
        real = sqlite.driver_execute

        def counted(connection: object, sql: str, parameters: object, many: bool = False) -> object:
            if sql == sqlite.BEGIN_WRITE:
                tries.append(sql)
                if len(tries) == 5:
                    released.set()  # the other transaction ends while the writer waits
            return real(connection, sql, parameters, many)

        monkeypatch.setattr(sqlite, "driver_execute", counted)
        try:
            with write_transaction(writer) as conn:
                conn.execute(text("INSERT INTO t VALUES (1)"))
        finally:
            monkeypatch.undo()
            released.set()
            holder.join(10)
        assert len(tries) >= 5  # refused four times at least while held, then begun
        with writer.connect() as conn:
            assert conn.execute(text("SELECT n FROM t")).scalars().all() == [1]
    finally:
        writer.dispose()


def test_the_writer_gives_up_after_the_busy_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite, "BUSY_TIMEOUT_MS", 50)
    path = tmp_path / "w.db"
    writer = open_engine(f"sqlite:///{path}", writer=True)
    released, holding = threading.Event(), threading.Event()
    holder = threading.Thread(target=_hold_lock, args=(path, released, holding))
    try:
        with write_transaction(writer) as conn:
            conn.execute(text("CREATE TABLE t (n INTEGER)"))
        holder.start()
        assert holding.wait(10)
        with pytest.raises(OperationalError, match="locked"), write_transaction(writer) as conn:
            conn.execute(text("INSERT INTO t VALUES (1)"))
    finally:
        released.set()
        holder.join(10)
        writer.dispose()
