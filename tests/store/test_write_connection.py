"""The writer process's one connection (``alarmhub.store.engine.WriteConnection``), on both
databases: durable transactions wait for the disk, the others do not, whichever came before;
and ``commit_without_fsync`` (an automation output's ACKs), which leaves its connection as it
was."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy import Connection, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

from alarmhub.store import sqlite
from alarmhub.store.engine import (
    CONNECTION_DEFAULTS,
    WriteConnection,
    commit_without_fsync,
    open_engine,
)

pytestmark = pytest.mark.backends("sqlite", "postgresql")


def waits_for_the_disk(conn: Connection) -> bool:
    if conn.dialect.name == "sqlite":  # FULL (2) syncs the log at every commit, NORMAL (1) not
        return int(conn.exec_driver_sql("PRAGMA synchronous").scalar_one()) == 2
    return conn.exec_driver_sql("SHOW synchronous_commit").scalar_one() == "on"


def test_each_transaction_is_as_durable_as_asked(engine: Engine) -> None:
    writer = WriteConnection(engine)
    try:
        for durable in (True, False, False, True, False, True, True):
            with writer.transaction(durable=durable) as conn:
                assert waits_for_the_disk(conn) is durable
    finally:
        writer.close()


def test_a_new_connection_after_a_failure_is_durable_again(engine: Engine) -> None:
    writer = WriteConnection(engine)
    try:
        with pytest.raises(RuntimeError), writer.transaction(durable=False):
            raise RuntimeError("a failed transaction closes the connection")
        with writer.transaction() as conn:
            assert waits_for_the_disk(conn)
        with writer.transaction(durable=False) as conn:
            assert not waits_for_the_disk(conn)
    finally:
        writer.close()


def test_a_commit_without_fsync_is_committed_and_the_connection_waits_again_after(
    engine: Engine,
) -> None:
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE acked (frame_id INTEGER)"))
    for frame_id in (1, 2):
        with commit_without_fsync(engine) as conn:
            assert not waits_for_the_disk(conn)
            conn.execute(text("INSERT INTO acked VALUES (:f)"), {"f": frame_id})
        with engine.connect() as conn:  # the pool's one connection, the same one
            assert waits_for_the_disk(conn)
    with pytest.raises(RuntimeError), commit_without_fsync(engine) as conn:
        conn.execute(text("INSERT INTO acked VALUES (3)"))
        raise RuntimeError("rolled back")
    with engine.connect() as conn:
        assert waits_for_the_disk(conn)
        assert conn.execute(text("SELECT frame_id FROM acked ORDER BY 1")).scalars().all() == [1, 2]


@pytest.mark.backends("sqlite")
def test_the_writers_sqlite_connection_keeps_statement_journals_in_memory(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'alarmhub.db'}"
    for writer, temp_store, cache_kib in (
        (True, 2, sqlite.WRITER_CACHE_MIB * 1024),
        (False, 0, 2000),
    ):
        engine = open_engine(url, writer=writer)
        try:
            with engine.connect() as conn:
                assert conn.exec_driver_sql("PRAGMA temp_store").scalar_one() == temp_store
                assert conn.exec_driver_sql("PRAGMA cache_size").scalar_one() == -cache_kib
        finally:
            engine.dispose()


def test_the_time_a_transaction_began_is_known_while_it_runs(engine: Engine) -> None:
    """What the writer's watchdog looks at (``store.watchdog``): set from the connect on, and
    cleared when the transaction ends, failed or not."""
    writer = WriteConnection(engine)
    try:
        assert writer.busy_since is None
        with writer.transaction() as conn:
            assert writer.busy_since is not None
            conn.execute(text("SELECT 1"))
        assert writer.busy_since is None
        with pytest.raises(RuntimeError), writer.transaction(durable=False):
            raise RuntimeError("failed")
        assert writer.busy_since is None
        # the server's process of the connection, which the watchdog asks the server after
        with writer.transaction() as conn:
            if conn.dialect.name == "postgresql":
                pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
                assert writer.backend_pid == pid
            else:
                assert writer.backend_pid is None
    finally:
        writer.close()


@pytest.mark.backends("postgresql")
def test_the_server_ends_a_session_left_idle_in_a_transaction(engine: Engine) -> None:
    """The writer's engine: a session whose client gave up on it (``store.watchdog``) is ended by
    the server, its locks released; and every connection has the keepalives of
    ``engine.CONNECTION_DEFAULTS``."""
    url = engine.url.render_as_string(hide_password=False)
    timed = open_engine(url, idle_in_transaction_seconds=0.2)
    try:
        with timed.connect() as conn:
            shown = conn.exec_driver_sql("SHOW idle_in_transaction_session_timeout").scalar_one()
            assert shown == "200ms"
            params = conn.connection.dbapi_connection.info.get_parameters()  # type: ignore[union-attr]
            assert params["tcp_user_timeout"] == CONNECTION_DEFAULTS["tcp_user_timeout"]
            assert params["keepalives_idle"] == CONNECTION_DEFAULTS["keepalives_idle"]
            conn.exec_driver_sql("SELECT 1")
            time.sleep(1.0)  # idle in the transaction SELECT began
            with pytest.raises(DBAPIError, match="idle-in-transaction"):
                conn.exec_driver_sql("SELECT 1")
    finally:
        timed.dispose()
