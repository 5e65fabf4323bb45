"""What one group commit does: store a batch of signals in one transaction.

Shared by the writer process (which runs it) and the tests (which call it directly).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import Connection, Table, bindparam, delete, insert, select, update
from sqlalchemy.engine import Engine

from alarmhub.core import idempotency
from alarmhub.core.idempotency import Key, Remembered
from alarmhub.core.signal import Signal, SignalFields, digest
from alarmhub.store import schema
from alarmhub.store.prepared import Prepared, driver_execute

if TYPE_CHECKING:
    from alarmhub.store.retry_keys import Staged

T = TypeVar("T")
IDEMPOTENCY = schema.idempotency.c

KEY_COLUMNS = ("token_name", "idempotency_key", "incident_number", "created_us", "digest")
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
    "idempotency_key",
)


@dataclass(frozen=True, slots=True)
class Stored:
    """The outcome of one submitted signal: stored under ``incident_number``, or already stored
    under it (``duplicate``: a retry), or refused because its Idempotency-Key was used for a
    different signal (``conflict``: nothing stored, no incident number)."""

    incident_number: int
    duplicate: bool = False
    conflict: bool = False


CONFLICT = Stored(0, conflict=True)


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


def fixed_shape(values: Sequence[T]) -> list[T]:
    """``values`` (at least one) padded with its last value to a power of two, for an ``IN``
    list: its statement then has one of a few shapes, each prepared once and kept in the
    connection's statement cache, as :class:`RowInsert`'s batches are, where one statement per
    length would be parsed again and again (a value repeated in ``IN`` changes nothing)."""
    size = 1 << (len(values) - 1).bit_length()
    return [*values, *[values[-1]] * (size - len(values))]


class RowInsert:
    """An INSERT of many rows into ``table``, compiled once for the engine's dialect, with no
    per-row work in SQLAlchemy. Rows are tuples in the order of ``columns``, which must be the
    table's own order (checked).

    On SQLite a batch is a few multi-row ``VALUES`` statements whose sizes are powers of two
    (37 rows: 32, 4 and 1), so a connection uses at most ten statements per table, prepared
    once and kept in its statement cache; one statement per batch size would overflow that
    cache when batch sizes vary, and be parsed again (bench/README.md has the figures). On
    PostgreSQL a batch is one ``INSERT ... SELECT * FROM unnest(...)`` with an array per
    column: a short statement prepared once, where the driver's ``executemany`` binds and runs
    every row on its own and a long ``VALUES`` list is parsed again on every batch (either took
    half the writer's time)."""

    MAX_PARAMETERS = 30_000  # under SQLite's 32,766 bind parameters
    MAX_ROWS = 512  # rows in one statement at most

    def __init__(self, engine: Engine, table: Table, columns: Sequence[str]) -> None:
        compiled = insert(table).compile(dialect=engine.dialect, column_keys=list(columns))
        self._positional = bool(compiled.positional)
        order = tuple(compiled.positiontup or ()) if self._positional else tuple(compiled.binds)
        if order != tuple(columns):
            raise RuntimeError(f"{table.name}: the columns must be given in table order")
        head, sep, group = str(compiled).partition(" VALUES ")
        if self._positional:
            self._head = head + sep
            self._group = group.strip()
            self._statements: dict[int, str] = {}
            most = min(self.MAX_ROWS, self.MAX_PARAMETERS // len(columns))
            self._most_rows = 1 << (most.bit_length() - 1)  # the largest power of two in it
        else:
            arrays = ", ".join(
                f"%s::{table.c[name].type.compile(dialect=engine.dialect)}[]" for name in columns
            )
            self._unnest = f"{head} SELECT * FROM unnest({arrays})"  # noqa: S608 (schema names)

    def _statement(self, rows: int) -> str:
        sql = self._statements.get(rows)
        if sql is None:
            sql = self._statements[rows] = self._head + ", ".join([self._group] * rows)
        return sql

    def execute(self, conn: Connection, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        if not self._positional:
            columns = tuple(list(column) for column in zip(*rows, strict=True))
            driver_execute(conn, self._unnest, columns).close()
            return
        start, total = 0, len(rows)
        while start < total:
            size = min(self._most_rows, 1 << ((total - start).bit_length() - 1))
            chunk = rows[start : start + size]
            sql = self._statement(size)
            driver_execute(conn, sql, tuple(chain.from_iterable(chunk))).close()
            start += size


class SignalInsert(RowInsert):
    """The signal INSERT: each batch numbered from a first incident number."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine, schema.signal, SIGNAL_COLUMNS)
        self.keys = RowInsert(engine, schema.idempotency, KEY_COLUMNS)  # the remembered keys

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
                sig.idempotency_key,
            )
            for number, sig in enumerate(batch, first_number)
        ]

    def store(self, conn: Connection, first_number: int, batch: Sequence[Signal]) -> None:
        """Insert ``batch`` with incident numbers from ``first_number`` on."""
        self.execute(conn, self.rows(first_number, batch))


INCIDENT = "incident"
ROUTED = "routed"  # the watermark of routing: every signal numbered up to it is routed
UNROUTED = schema.signal.c.incident_number > (
    select(schema.sequence.c.value).where(schema.sequence.c.name == ROUTED).scalar_subquery()
)
"""The condition of a stored signal not routed yet: numbered above the watermark."""
_ADVANCE = Prepared(
    update(schema.sequence)
    .where(schema.sequence.c.name == INCIDENT)
    .values(value=schema.sequence.c.value + bindparam("count"))
    .returning(schema.sequence.c.value)
)
_LAST_INCIDENT = select(schema.sequence.c.value).where(schema.sequence.c.name == INCIDENT)
_LOCK_INCIDENTS = Prepared(_LAST_INCIDENT.with_for_update())


def lock_incidents(conn: Connection) -> int:
    """Take the incident counter's row lock for the rest of the caller's write transaction; the
    last incident number given out.

    Every transaction that numbers incidents takes this lock first (advancing the counter takes
    it too), so on a database shared by several nodes their stores, routings and supervision
    checks run one after the other, each seeing what the one before committed. That is what
    keeps routing in incident-number order, and each signal routed once, across nodes. On
    SQLite the write transaction already holds the database lock and this is a plain read."""
    return int(_LOCK_INCIDENTS.scalar(conn))


def allocate_incidents(conn: Connection, count: int) -> int:
    """Reserve ``count`` incident numbers in the caller's write transaction; the first one."""
    return int(_ADVANCE.scalar(conn, {"count": count})) - count + 1


def store_plain(conn: Connection, statement: SignalInsert, batch: Sequence[Signal]) -> list[Stored]:
    """Store a batch without Idempotency-Keys in the caller's transaction: one counter advance,
    a few multi-row INSERTs (see :class:`RowInsert`)."""
    first = allocate_incidents(conn, len(batch))
    statement.store(conn, first, batch)
    return [Stored(first + offset) for offset in range(len(batch))]


KEY_CHUNK = 500
_REMEMBERED = select(
    IDEMPOTENCY.idempotency_key,
    IDEMPOTENCY.incident_number,
    IDEMPOTENCY.created_us,
    IDEMPOTENCY.digest,
).where(
    IDEMPOTENCY.token_name == bindparam("token_name"),
    IDEMPOTENCY.idempotency_key.in_(bindparam("keys", expanding=True)),
)


def _remembered(conn: Connection, keys: Iterable[Key]) -> dict[Key, Remembered]:
    """What the store remembers of each key, looked up in bulk."""
    by_token: dict[str, list[str]] = {}
    for token_name, key in keys:
        by_token.setdefault(token_name, []).append(key)
    found: dict[Key, Remembered] = {}
    for token_name, names in by_token.items():
        for start in range(0, len(names), KEY_CHUNK):
            chunk = fixed_shape(names[start : start + KEY_CHUNK])
            rows = conn.execute(_REMEMBERED, {"token_name": token_name, "keys": chunk})
            for key, number, created, said in rows:
                found[(token_name, key)] = Remembered(number, created, said)
    return found


def _forget(conn: Connection, keys: Sequence[Key]) -> None:
    for token_name, key in keys:
        conn.execute(
            delete(schema.idempotency).where(
                IDEMPOTENCY.token_name == token_name, IDEMPOTENCY.idempotency_key == key
            )
        )


def commit_signals(
    conn: Connection,
    statement: SignalInsert,
    batch: Sequence[Signal],
    idempotency_window_us: int,
    windows_us: Mapping[str, int] | None = None,
    memory: Staged | None = None,
) -> list[Stored]:
    """Store a batch in the caller's transaction, its Idempotency-Keys decided by
    :func:`alarmhub.core.idempotency.plan`: a retry gets its first commit's incident number
    (``duplicate``), a different signal under a known key :data:`CONFLICT`, and neither is
    stored again. ``windows_us`` gives the token names whose keys have a window of their own
    (the DC-09 receiver's retry window); ``memory``, when given, remembers the keys it covers
    instead of the table (:mod:`alarmhub.store.retry_keys`: the caller applies it once the
    transaction is committed)."""
    lock_incidents(conn)  # another node's commit cannot remember the same key meanwhile
    keys: list[Key | None] = [
        None if sig.idempotency_key is None else (sig.token_name, sig.idempotency_key)
        for sig in batch
    ]
    digests = {i: digest(batch[i]) for i, key in enumerate(keys) if key is not None}
    keyed = {key for key in keys if key is not None}
    in_memory = {key for key in keyed if memory.covers(key)} if memory is not None else set()
    remembered = _remembered(conn, keyed - in_memory)
    if memory is not None:
        remembered.update(memory.remembered(in_memory))
    decided = idempotency.plan(
        keys,
        [sig.received_us for sig in batch],
        digests,
        remembered,
        idempotency_window_us,
        windows_us or {},
    )
    _forget(conn, [key for key in decided.forget if key not in in_memory])
    if memory is not None:
        memory.forget(key for key in decided.forget if key in in_memory)
    outcome: dict[int, Stored] = {i: CONFLICT for i in decided.conflicts}
    outcome.update((i, Stored(number, duplicate=True)) for i, number in decided.retries.items())
    if decided.fresh:
        first = allocate_incidents(conn, len(decided.fresh))
        number = {i: first + offset for offset, i in enumerate(decided.fresh)}
        outcome.update((i, Stored(n)) for i, n in number.items())
        statement.store(conn, first, [batch[i] for i in decided.fresh])
        statement.keys.execute(
            conn,
            [
                (key[0], key[1], number[i], batch[i].received_us, digests[i])
                for key, i in decided.remember.items()
                if key not in in_memory
            ],
        )
        if memory is not None:
            for key, i in decided.remember.items():
                if key in in_memory:
                    memory.remember(key, Remembered(number[i], batch[i].received_us, digests[i]))
        outcome.update(
            (i, Stored(number[earlier], duplicate=True)) for i, earlier in decided.repeats.items()
        )
    return [outcome[i] for i in range(len(batch))]


def forget_keys(
    conn: Connection, now_us: int, window_us: int, windows_us: Mapping[str, int]
) -> int:
    """Forget the keys whose window has passed: ``windows_us`` of the token names that have one
    of their own (DC-09 retries), ``window_us`` for every token's; how many. Each token's old
    keys are found by (token, time), without reading its other keys."""
    names = set(conn.execute(select(schema.token.c.name)).scalars()) | set(windows_us)
    forgotten = 0
    for name in sorted(names):
        before_us = now_us - windows_us.get(name, window_us)
        result = conn.execute(
            delete(schema.idempotency).where(
                IDEMPOTENCY.token_name == name, IDEMPOTENCY.created_us < before_us
            )
        )
        forgotten += int(result.rowcount or 0)
    return forgotten
