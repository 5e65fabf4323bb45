"""What one group commit does: store a batch of signals in one transaction.

Shared by the writer process (which runs it) and the tests (which call it directly).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

from sqlalchemy import Connection, Table, bindparam, delete, insert, select, update
from sqlalchemy.engine import Engine

from alarmhub.core.signal import Signal, SignalFields
from alarmhub.store import schema as s
from alarmhub.store.engine import begin_write_sql

SIGNAL_COLUMNS = (
    "incident_number",
    "source",
    "destination",
    "dnis",
    "panel",
    "code",
    "area",
    "zone",
    "token_name",
    "received_us",
)


@dataclass(frozen=True, slots=True)
class Stored:
    """The outcome of one submitted signal."""

    incident_number: int
    duplicate: bool = False


def to_wire(sig: Signal) -> list[Any]:
    """A signal as a flat JSON array, the form it travels in to the writer process."""
    f = sig.fields
    return [
        sig.source, sig.destination, f.dnis, f.panel, f.code, f.area, f.zone,
        sig.token_name, sig.received_us, sig.idempotency_key,
    ]  # fmt: skip


def from_wire(row: Sequence[Any]) -> Signal:
    source, destination, dnis, panel, code, area, zone, token_name, received_us, key = row
    return Signal(
        source,
        destination,
        SignalFields(dnis, panel, code, area, zone),
        token_name,
        received_us,
        key,
    )


class RowInsert:
    """An INSERT into ``table`` compiled once for the engine's dialect and widened to one
    multi-row ``VALUES`` statement per batch size: many rows cost one statement, with no
    per-row work in SQLAlchemy. Rows are tuples in the order of ``columns``, which must be the
    table's own order (checked)."""

    MAX_PARAMETERS = 30_000  # under SQLite's 32,766 and PostgreSQL's 65,535 bind parameters

    def __init__(self, engine: Engine, table: Table, columns: Sequence[str]) -> None:
        compiled = insert(table).compile(dialect=engine.dialect, column_keys=list(columns))
        if tuple(compiled.positiontup or ()) != tuple(columns):
            raise RuntimeError(
                f"{table.name}: columns in table order and positional parameters expected"
            )
        head, sep, group = str(compiled).partition(" VALUES ")
        self._head = head + sep
        self._group = group.strip()
        self._statements: dict[int, str] = {}
        self.chunk = min(500, self.MAX_PARAMETERS // len(columns))

    def statement(self, rows: int) -> str:
        sql = self._statements.get(rows)
        if sql is None:
            sql = self._statements[rows] = self._head + ", ".join([self._group] * rows)
        return sql

    def statements(self, rows: Sequence[Sequence[Any]]) -> Iterator[tuple[str, tuple[Any, ...]]]:
        """The statements and their flat parameters that insert ``rows``."""
        for start in range(0, len(rows), self.chunk):
            chunk = rows[start : start + self.chunk]
            yield self.statement(len(chunk)), tuple(chain.from_iterable(chunk))

    def execute(self, conn: Connection, rows: Sequence[Sequence[Any]]) -> None:
        for sql, values in self.statements(rows):
            conn.exec_driver_sql(sql, values)


class SignalInsert(RowInsert):
    """The signal INSERT: each batch numbered from a first incident number."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine, s.signal, SIGNAL_COLUMNS)

    def rows(self, first_number: int, batch: Sequence[Signal]) -> list[tuple[Any, ...]]:
        return [
            (
                number,
                sig.source,
                sig.destination,
                sig.fields.dnis,
                sig.fields.panel,
                sig.fields.code,
                sig.fields.area,
                sig.fields.zone,
                sig.token_name,
                sig.received_us,
            )
            for number, sig in enumerate(batch, first_number)
        ]

    def store(self, conn: Connection, first_number: int, batch: Sequence[Signal]) -> None:
        """Insert ``batch`` with incident numbers from ``first_number`` on."""
        self.execute(conn, self.rows(first_number, batch))

    def chunks(
        self, first_number: int, batch: Sequence[Signal]
    ) -> Iterator[tuple[str, tuple[Any, ...]]]:
        """The statements and parameters that insert ``batch`` from ``first_number`` on."""
        return self.statements(self.rows(first_number, batch))


INCIDENT = "incident"
_ADVANCE = (
    update(s.sequence)
    .where(s.sequence.c.name == INCIDENT)
    .values(value=s.sequence.c.value + bindparam("count"))
)
_LAST_INCIDENT = select(s.sequence.c.value).where(s.sequence.c.name == INCIDENT)


def allocate_incidents(conn: Connection, count: int) -> int:
    """Reserve ``count`` incident numbers in the caller's write transaction; the first one."""
    conn.execute(_ADVANCE, {"count": count})
    return int(conn.execute(_LAST_INCIDENT).scalar_one()) - count + 1


class PlainCommit:
    """The fast path for a batch without Idempotency-Keys: begin, number, insert and commit on
    one driver connection, with statements compiled once. It skips SQLAlchemy's per-transaction
    machinery, which measured as a fifth of the writer's time per commit."""

    def __init__(self, engine: Engine, statement: SignalInsert) -> None:
        self._engine = engine
        self._statement = statement
        self._begin = begin_write_sql(engine)
        advance = _ADVANCE.compile(dialect=engine.dialect)
        if advance.positiontup is None:
            raise RuntimeError(f"{engine.dialect.name}: positional parameters expected")
        self._advance = str(advance)
        self._advance_order = list(advance.positiontup)
        self._advance_defaults = dict(advance.params)
        self._last_incident = str(
            _LAST_INCIDENT.compile(dialect=engine.dialect, compile_kwargs={"literal_binds": True})
        )
        self._connection: Any = None

    def __call__(self, batch: Sequence[Signal]) -> list[Stored]:
        if self._connection is None:
            self._connection = self._engine.raw_connection()
        connection = self._connection
        cursor = connection.cursor()
        try:
            cursor.execute(self._begin)
            params = {**self._advance_defaults, "count": len(batch)}
            cursor.execute(self._advance, tuple(params[name] for name in self._advance_order))
            cursor.execute(self._last_incident)
            first = int(cursor.fetchone()[0]) - len(batch) + 1
            for sql, values in self._statement.chunks(first, batch):
                cursor.execute(sql, values)
            connection.commit()
        except BaseException:
            self._connection = None
            try:
                connection.rollback()
            finally:
                connection.invalidate()
            raise
        finally:
            cursor.close()
        return [Stored(first + offset) for offset in range(len(batch))]

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def commit_signals(
    conn: Connection, statement: SignalInsert, batch: Sequence[Signal], idempotency_window_us: int
) -> list[Stored]:
    """Store a batch in the caller's transaction. A retry with a known Idempotency-Key (same
    token, within the window) is not stored again: it gets its first commit's incident number."""
    outcome: list[Stored | None] = [None] * len(batch)
    fresh: list[int] = []
    first_of_key: dict[tuple[str, str], int] = {}
    repeats: list[tuple[int, int]] = []
    for i, sig in enumerate(batch):
        if sig.idempotency_key is None:
            fresh.append(i)
            continue
        key = (sig.token_name, sig.idempotency_key)
        if key in first_of_key:
            repeats.append((i, first_of_key[key]))
            continue
        where = (s.idempotency.c.token_name == key[0]) & (s.idempotency.c.idempotency_key == key[1])
        row = conn.execute(
            select(s.idempotency.c.incident_number, s.idempotency.c.created_us).where(where)
        ).first()
        if row is not None and sig.received_us - row.created_us <= idempotency_window_us:
            outcome[i] = Stored(row.incident_number, duplicate=True)
            continue
        if row is not None:
            conn.execute(delete(s.idempotency).where(where))
        first_of_key[key] = i
        fresh.append(i)
    if fresh:
        first = allocate_incidents(conn, len(fresh))
        fresh_position = {i: offset for offset, i in enumerate(fresh)}
        for i, offset in fresh_position.items():
            outcome[i] = Stored(first + offset)
        statement.store(conn, first, [batch[i] for i in fresh])
        keyed = [
            {
                "token_name": key[0],
                "idempotency_key": key[1],
                "incident_number": first + fresh_position[i],
                "created_us": batch[i].received_us,
            }
            for key, i in first_of_key.items()
        ]
        if keyed:
            conn.execute(insert(s.idempotency), keyed)
    for i, first_index in repeats:
        earlier = outcome[first_index]
        assert earlier is not None
        outcome[i] = Stored(earlier.incident_number, duplicate=True)
    return [o for o in outcome if o is not None]
