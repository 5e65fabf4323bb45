"""Statements run on the driver's cursor (``alarmhub.store.prepared``), on both databases: the
same rows and values as SQLAlchemy's own execution, IN lists of any length, values written in
the statement, type conversions both ways, errors as SQLAlchemy's, listeners told."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Connection,
    MetaData,
    String,
    Table,
    bindparam,
    event,
    insert,
    select,
    update,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from alarmhub.store.engine import write_transaction
from alarmhub.store.prepared import Prepared

pytestmark = pytest.mark.backends("sqlite", "postgresql")
METADATA = MetaData()
T = Table(
    "prepared_example",
    METADATA,
    Column("id", BigInteger, primary_key=True),
    Column("name", String(20), nullable=False),
    Column("kind", String(10), nullable=False),
    Column("flag", Boolean, nullable=False),
)
C = T.c
ROWS = [
    {"id": n, "name": f"n{n}", "kind": "odd" if n % 2 else "even", "flag": n % 3 == 0}
    for n in range(1, 21)
]
SELECTED = select(C.id, C.name, C.flag).order_by(C.id)
BY_IDS = Prepared(SELECTED.where(C.id.in_(bindparam("ids", expanding=True))))
ODD_BY_IDS = Prepared(SELECTED.where(C.id.in_(bindparam("ids", expanding=True)), C.kind == "odd"))
RENAME = Prepared(update(T).where(C.id == bindparam("at")).values(name=bindparam("to")))
FLAG = Prepared(
    update(T).where(C.id == bindparam("at")).values(flag=bindparam("on")).returning(C.id, C.flag)
)
ADD = Prepared(insert(T))


@pytest.fixture
def engine(engine: Engine) -> Iterator[Engine]:
    """The test's database with the example table, filled with ROWS."""
    METADATA.drop_all(engine)
    METADATA.create_all(engine)
    with write_transaction(engine) as conn:
        ADD.executemany(conn, ROWS)
    yield engine
    METADATA.drop_all(engine)


def by_sqlalchemy(conn: Connection, ids: list[int]) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in conn.execute(SELECTED.where(C.id.in_(ids)))]


@pytest.mark.parametrize("ids", [[1], [2, 3], [4, 5, 6, 7], [20, 1, 9]])
def test_rows_as_sqlalchemy_gives_them(engine: Engine, ids: list[int]) -> None:
    with engine.connect() as conn:
        assert BY_IDS.rows(conn, {"ids": ids}) == by_sqlalchemy(conn, ids)
        assert {type(row[2]) for row in BY_IDS.rows(conn, {"ids": ids})} == {bool}


def test_lists_of_other_lengths_and_values_written_in_the_statement(engine: Engine) -> None:
    with engine.connect() as conn:
        assert [r[0] for r in ODD_BY_IDS.rows(conn, {"ids": [1, 2, 3]})] == [1, 3]
        assert [r[0] for r in ODD_BY_IDS.rows(conn, {"ids": list(range(1, 21))})] == list(
            range(1, 21, 2)
        )
        assert ODD_BY_IDS.rows(conn, {"ids": [2]}) == []
        assert ODD_BY_IDS.mappings(conn, {"ids": [5]}) == [{"id": 5, "name": "n5", "flag": False}]
        assert ODD_BY_IDS.scalar(conn, {"ids": [7, 9]}) == 7
        assert ODD_BY_IDS.scalar(conn, {"ids": [8]}) is None


def test_writes_in_the_callers_transaction(engine: Engine) -> None:
    with write_transaction(engine) as conn:
        assert RENAME.execute(conn, {"at": 4, "to": "four"}) == 1
        assert RENAME.execute(conn, {"at": 99, "to": "none"}) == 0
        RENAME.executemany(conn, [{"at": 5, "to": "five"}, {"at": 6, "to": "six"}])
        assert FLAG.rows(conn, {"at": 4, "on": True}) == [(4, True)]
    with write_transaction(engine) as conn:
        RENAME.execute(conn, {"at": 7, "to": "seven"})
        conn.rollback()  # the caller's transaction: rolled back with it
    with engine.connect() as conn:
        names = dict(conn.execute(select(C.id, C.name).where(C.id.in_([4, 5, 6, 7]))).all())
        flag = conn.execute(select(C.flag).where(C.id == 4)).scalar_one()
    assert names == {4: "four", 5: "five", 6: "six", 7: "n7"}
    assert flag is True


def test_errors_are_sqlalchemys_and_listeners_see_the_statement(engine: Engine) -> None:
    seen: list[str] = []

    def listen(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    event.listen(engine, "before_cursor_execute", listen)
    try:
        with pytest.raises(IntegrityError), write_transaction(engine) as conn:
            ADD.execute(conn, ROWS[0])
    finally:
        event.remove(engine, "before_cursor_execute", listen)
    assert any(s.startswith("INSERT INTO prepared_example") for s in seen)
