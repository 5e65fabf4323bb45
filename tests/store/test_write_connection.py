"""The writer process's one connection (``alarmhub.store.engine.WriteConnection``), on both
databases: durable transactions wait for the disk, the others do not, whichever came before."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Connection
from sqlalchemy.engine import Engine

from alarmhub.store import sqlite
from alarmhub.store.engine import WriteConnection, open_engine

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
