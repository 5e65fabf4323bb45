"""Supervision's last-seen rows written in bulk (``alarmhub.store.last_seen``), on both
databases: the newest time wins, a failure keeps its first time while the entry stays down and
is cleared once it is up, columns for new rows only are not changed, and new entries are added."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

from alarmhub.store import schema
from alarmhub.store.engine import open_engine, upgrade, write_transaction
from alarmhub.store.last_seen import write_seen
from tests.support.database import database_url

pytestmark = pytest.mark.backends("sqlite", "postgresql")
T = schema.dc09_account


@pytest.fixture
def engine(tmp_path: Path, backend: str) -> Iterator[Engine]:
    engine = open_engine(database_url(tmp_path, "last-seen"))
    upgrade(engine)
    yield engine
    engine.dispose()


def write(engine: Engine, *rows: dict[str, Any]) -> None:
    with write_transaction(engine) as conn:
        write_seen(conn, T, ("account",), "last_message_us", rows, insert_only=("created_us",))


def seen(account: str, at: int, failed_us: int | None = None, line: str = "L1") -> dict[str, Any]:
    return {
        "account": account,
        "last_message_us": at,
        "receiver": "R1",
        "line": line,
        "failed_us": failed_us,
        "created_us": at,
    }


def rows(engine: Engine) -> dict[str, tuple[Any, ...]]:
    query = select(T.c.account, T.c.last_message_us, T.c.line, T.c.failed_us, T.c.created_us)
    with engine.connect() as conn:
        return {r[0]: tuple(r[1:]) for r in conn.execute(query)}


def test_the_newest_time_wins_and_a_failure_keeps_its_first_time(engine: Engine) -> None:
    write(engine, seen("1001", 100), seen("1002", 100))
    write(engine, seen("1001", 50, line="L2"), seen("1002", 200, failed_us=300))
    assert rows(engine) == {"1001": (100, "L2", None, 100), "1002": (200, "L1", 300, 100)}
    write(engine, seen("1002", 250, failed_us=400), seen("1003", 10))  # still down; a new one
    assert rows(engine)["1002"] == (250, "L1", 300, 100)
    assert rows(engine)["1003"] == (10, "L1", None, 10)
    write(engine, seen("1002", 500))  # up again
    assert rows(engine)["1002"] == (500, "L1", None, 100)
