"""Statements of the writer's hot path, run on the driver's cursor.

SQLAlchemy's execution of a statement (an execution context, its events, the parameters
processed again and a result object wrapped around the cursor) cost more than the database's
own work for the small statements that routing runs a few of for every slice of signals: a
fifth of the writer process's time (bench/README.md). A :class:`Prepared` statement is a Core
statement compiled once per dialect, and once per length of each ``IN`` list (which
:func:`~alarmhub.store.commit.fixed_shape` keeps to a few powers of two), into the driver's SQL
and the order of its parameters; each execution then costs a cursor's ``execute``.

It runs inside the caller's :class:`~sqlalchemy.Connection` and its transaction, on the same
driver connection. Errors of the driver are raised as SQLAlchemy's own
(:class:`sqlalchemy.exc.DBAPIError` and its kinds), as a statement run by SQLAlchemy would
raise them, so that callers tell a database that is away from a refused statement alike. Types
that convert values on their way in or out (booleans on SQLite, for instance) are converted
as SQLAlchemy would."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler

Params = Mapping[str, Any]
Shape = tuple[int, ...]  # the length of each list-valued parameter, in name order


class _Form:
    """One statement as the driver takes it: its SQL, and how to turn the caller's parameters
    (with lists of the lengths it was compiled for) into the driver's."""

    def __init__(self, compiled: SQLCompiler, params: Params) -> None:
        state = compiled.construct_expanded_state(dict(params))
        self.sql: str = state.statement
        names: Sequence[str] = (
            (state.positiontup or ()) if compiled.positional else list(state.parameters)
        )
        processors = state.processors
        self._getters = [
            _getter(name, params, state.parameters[name], processors.get(name)) for name in names
        ]
        self._names = None if compiled.positional else list(names)

    def parameters(self, params: Params) -> Sequence[Any] | dict[str, Any]:
        values = [get(params) for get in self._getters]
        return values if self._names is None else dict(zip(self._names, values, strict=True))


def _getter(
    name: str, params: Params, constant: Any, process: Callable[[Any], Any] | None
) -> Callable[[Params], Any]:
    """Reads one driver parameter: the caller's ``name``, or ``list_3`` (the third value of the
    caller's list ``list``), or else a value written in the statement (``constant``, as the
    driver takes it)."""
    key, index = name, None
    if name not in params:
        key, _, number = name.rpartition("_")
        if key not in params or not isinstance(params[key], list | tuple):
            value = process(constant) if process else constant
            return lambda p: value
        index = int(number) - 1
    if index is None:
        return (lambda p: process(p[key])) if process else (lambda p: p[key])
    return (lambda p: process(p[key][index])) if process else (lambda p: p[key][index])


class Prepared:
    """A Core statement run on the driver's cursor of the caller's connection (see the
    module's note). List-valued parameters feed ``IN`` lists (``bindparam(expanding=True)``);
    every other parameter is a single value."""

    def __init__(self, statement: ClauseElement) -> None:
        self.statement = statement
        self._compiled: dict[str, SQLCompiler] = {}
        self._forms: dict[tuple[str, Shape], _Form] = {}
        self._converters: dict[str, list[Callable[[Any], Any] | None] | None] = {}

    def _form(self, dialect: Dialect, params: Params) -> _Form:
        shape = tuple(len(v) for v in params.values() if isinstance(v, list | tuple))
        form = self._forms.get((dialect.name, shape))
        if form is None:
            compiled = self._compiled.get(dialect.name)
            if compiled is None:
                made = self.statement.compile(dialect=dialect)
                assert isinstance(made, SQLCompiler)
                compiled = self._compiled[dialect.name] = made
            form = self._forms[(dialect.name, shape)] = _Form(compiled, params)
        return form

    def _run(self, conn: Connection, params: Params, many: Sequence[Params] = ()) -> Any:
        form = self._form(conn.dialect, many[0] if many else params)
        if many:
            return driver_execute(conn, form.sql, [form.parameters(p) for p in many], many=True)
        return driver_execute(conn, form.sql, form.parameters(params))

    def execute(self, conn: Connection, params: Params | None = None) -> int:
        """Run it (a write); the rows it changed."""
        cursor = self._run(conn, params or {})
        count = int(cursor.rowcount)
        cursor.close()
        return count

    def executemany(self, conn: Connection, many: Sequence[Params]) -> None:
        """Run it once for each parameter set of ``many`` (all with lists of the same lengths)."""
        if many:
            self._run(conn, many[0], many).close()

    def rows(self, conn: Connection, params: Params | None = None) -> list[tuple[Any, ...]]:
        """Its rows, as tuples, their values as SQLAlchemy would give them."""
        cursor = self._run(conn, params or {})
        try:
            fetched = cursor.fetchall()
        finally:
            cursor.close()
        converters = self._result_converters(conn.dialect)
        if converters is None:
            return [tuple(row) for row in fetched]
        return [
            tuple(
                value if c is None else c(value) for c, value in zip(converters, row, strict=True)
            )
            for row in fetched
        ]

    def mappings(self, conn: Connection, params: Params | None = None) -> list[dict[str, Any]]:
        """Its rows as dictionaries by column name."""
        keys = list(self.statement.exported_columns.keys())  # type: ignore[attr-defined]
        return [dict(zip(keys, row, strict=True)) for row in self.rows(conn, params)]

    def scalar(self, conn: Connection, params: Params | None = None) -> Any:
        """The first column of the first row; None when there is no row."""
        found = self.rows(conn, params)
        return found[0][0] if found else None

    def _result_converters(self, dialect: Dialect) -> list[Callable[[Any], Any] | None] | None:
        """Each selected column's conversion of the driver's value (None: taken as it is);
        None when no column has one."""
        if dialect.name not in self._converters:
            columns: Iterable[Any] = self.statement.exported_columns  # type: ignore[attr-defined]
            converters = [
                c.type.dialect_impl(dialect).result_processor(dialect, None) for c in columns
            ]
            self._converters[dialect.name] = converters if any(converters) else None
        return self._converters[dialect.name]


def driver_execute(conn: Connection, sql: str, parameters: Any, many: bool = False) -> Any:
    """Run ``sql`` (the driver's own) on a new cursor of the connection; the cursor. The
    driver's errors are raised as SQLAlchemy's; listeners of the engine's
    ``before_cursor_execute`` event see the statement as they see SQLAlchemy's own."""
    dialect = conn.dialect
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    listeners = conn.dispatch.before_cursor_execute
    if listeners:
        listeners(conn, cursor, sql, parameters, None, many)
    try:
        if many:
            cursor.executemany(sql, parameters)
        else:
            cursor.execute(sql, parameters)
    except dialect.loaded_dbapi.Error as exc:
        cursor.close()
        raise DBAPIError.instance(
            sql, parameters, exc, dialect.loaded_dbapi.Error, dialect=dialect
        ) from exc
    return cursor
