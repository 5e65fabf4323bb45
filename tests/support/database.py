"""The database each test runs on: SQLite (a file in the test's data directory) or a database of
its own on the PostgreSQL test server.

Which one is the test's *backend*, chosen per test module by the ``backend`` fixture of
``conftest.py``: store and crash tests run on both, the rest on SQLite unless marked
``@pytest.mark.backends("postgresql")``. The PostgreSQL server is ``ALARMHUB_TEST_DATABASE_URL``
(default: the local server). Every new database is copied from a migrated template (SQLite: a
file copy; PostgreSQL: ``CREATE DATABASE ... TEMPLATE``) instead of being migrated again.

Databases whose tests are done are dropped in the background, each on a connection of its own:
a ``DROP DATABASE`` waits for an immediate checkpoint of the whole server (among the suite's
writes, up to 17 s), and the next test's ``CREATE DATABASE`` does not wait for it.
"""

from __future__ import annotations

import os
import shutil
import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine
from sqlalchemy.pool import NullPool

from alarmhub.store.engine import driver_url, open_engine, upgrade

SQLITE = "sqlite"
POSTGRESQL = "postgresql"
TEST_DATABASE_URL = os.environ.get(
    "ALARMHUB_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)

_backend = SQLITE
_databases: dict[tuple[Path, str], str] = {}
_lock = threading.Lock()
_admin_lock = threading.Lock()
_dropping = ThreadPoolExecutor(max_workers=1, thread_name_prefix="drop-database")
_templates: dict[str, str] = {}


def use_backend(name: str) -> None:
    """Run the following tests of this process on ``name`` (``sqlite`` or ``postgresql``)."""
    global _backend
    _backend = name


def on_postgres() -> bool:
    return _backend == POSTGRESQL


_admin: list[psycopg.Connection[Any]] = []


def _on_test_server(statement: str) -> None:
    """Run one statement on the PostgreSQL test server, outside any transaction, on the one
    connection this process keeps for that."""
    with _admin_lock:
        if not _admin or _admin[0].closed:
            _admin[:] = [psycopg.connect(TEST_DATABASE_URL, autocommit=True, connect_timeout=10)]
        _admin[0].execute(statement.encode())


def _server_url(name: str) -> str:
    return f"{TEST_DATABASE_URL.rsplit('/', 1)[0]}/{name}"


def new_database(migrated: bool = False) -> str:
    """A new database on the PostgreSQL test server, empty or (``migrated``) copied from the
    migrated template; its URL."""
    name = f"ahtest_{uuid.uuid4().hex[:12]}"
    template = f' TEMPLATE "{_template(POSTGRESQL)}"' if migrated else ""
    _on_test_server(f'CREATE DATABASE "{name}"{template}')
    return _server_url(name)


def drop_database(url: str) -> None:
    """Drop a database once its tests are done, in the background (:func:`drop_all` waits)."""
    _dropping.submit(_drop_now, url)


def _drop_now(url: str) -> None:
    statement = f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)'
    with psycopg.connect(TEST_DATABASE_URL, autocommit=True, connect_timeout=10) as conn:
        conn.execute(statement.encode())


def _template(backend: str) -> str:
    """The migrated template of ``backend`` of this process, made on first use: a database name
    on the PostgreSQL server, or a SQLite file's path."""
    with _lock:
        if backend not in _templates:
            if backend == POSTGRESQL:
                name = f"ahtemplate_{uuid.uuid4().hex[:12]}"
                _on_test_server(f'CREATE DATABASE "{name}"')
                url = _server_url(name)
            else:
                directory = Path(os.environ.get("TMPDIR", "/tmp")) / f"ahtemplate-{os.getpid()}"
                directory.mkdir(exist_ok=True)
                name = str(directory / "template.db")
                url = f"sqlite:///{name}"
            engine = open_engine(url)
            try:
                upgrade(engine)
            finally:
                engine.dispose()
            _templates[backend] = name
        return _templates[backend]


def database_url(data_dir: Path, name: str = "alarmhub", migrated: bool = True) -> str:
    """The database of a test data directory, made migrated on first use unless ``migrated`` is
    false (or, on SQLite, the directory does not exist yet): the SQLite file ``NAME.db`` in it,
    or a database of its own on the PostgreSQL test server (the directory's own database,
    ``name`` ``alarmhub``, is written into its ``alarmhub.toml``)."""
    if not on_postgres():
        path = data_dir / (name + ".db")
        # a data directory that does not exist yet is left for alarmhub to make (and migrate)
        if migrated and data_dir.is_dir() and not path.exists():
            template = _template(SQLITE)
            with _lock:  # threads of one test (side-by-side commands) ask at once: one copies,
                # whole, under another name, so no caller ever opens a file half copied
                if not path.exists():
                    partial = path.with_name(f"{path.name}.{uuid.uuid4().hex}.partial")
                    shutil.copyfile(template, partial)
                    partial.chmod(0o600)
                    os.replace(partial, path)
        return f"sqlite:///{path}"
    key = (data_dir.resolve(), name)
    with _lock:
        known = _databases.get(key)
    if known is None:
        known = new_database(migrated)
        with _lock:
            _databases[key] = known
        if name == "alarmhub":
            data_dir.mkdir(parents=True, exist_ok=True)
            (data_dir / "alarmhub.toml").write_text(f'database_url = "{known}"\n')
    return known


def release() -> None:
    """Drop, in the background, the databases made since the last call: the tests and the
    servers that used them are done (called when a test module's fixtures are torn down)."""
    with _lock:
        urls = list(_databases.values())
        _databases.clear()
    for url in urls:
        drop_database(url)


def drop_all() -> None:
    """Drop every database this process made on the PostgreSQL server, templates last."""
    release()
    _dropping.shutdown(wait=True)
    if POSTGRESQL in _templates:
        _drop_now(_server_url(_templates.pop(POSTGRESQL)))
    with _admin_lock:
        for conn in _admin:
            conn.close()
        _admin.clear()
    if SQLITE in _templates:
        shutil.rmtree(Path(_templates.pop(SQLITE)).parent, ignore_errors=True)


class Record(tuple[Any, ...]):
    """A row read by ``db_rows``: by position or by column name, and ``dict(record)``."""

    _columns: dict[str, int]

    def __new__(cls, values: tuple[Any, ...], columns: dict[str, int]) -> Record:
        record = super().__new__(cls, values)
        record._columns = columns
        return record

    def __getitem__(self, key: Any) -> Any:  # type: ignore[override]
        if isinstance(key, str):
            return super().__getitem__(self._columns[key])
        return super().__getitem__(key)

    def keys(self) -> list[str]:
        return list(self._columns)


def db_rows(data_dir: Path, sql: str, *params: object, url: str | None = None) -> list[Record]:
    """Rows from the database of ``data_dir`` (SQLite opened read-only, or PostgreSQL), or from
    the PostgreSQL database at ``url`` (a fault test's cluster), for SQL written with ``?``
    placeholders."""
    options: dict[str, Any] = {}
    if url is not None or on_postgres():
        url, sql = url or database_url(data_dir), sql.replace("%", "%%").replace("?", "%s")
    else:
        url = f"sqlite:///file:{data_dir / 'alarmhub.db'}?mode=ro&uri=true"
        options = {"timeout": 10}  # seconds to wait while the node writes
    engine = create_engine(driver_url(url), poolclass=NullPool, connect_args=options)
    try:
        with engine.connect() as conn:
            result = conn.exec_driver_sql(sql, tuple(params))
            columns = {name: i for i, name in enumerate(result.keys())}
            return [Record(tuple(row), columns) for row in result.fetchall()]
    finally:
        engine.dispose()


def sqlite_only(why: str) -> pytest.MarkDecorator:
    """Skip a test on PostgreSQL, saying why the check does not apply there."""
    return pytest.mark.sqlite_only(why)


UNROUTED = (
    "SELECT count(*) FROM signal"
    " WHERE incident_number > (SELECT value FROM sequence WHERE name = 'routed')"
)
"""SQL: how many stored signals wait to be routed (for tests reading a node's database)."""


@contextmanager
def statements_run(engine: Engine, matching: Callable[[str], bool]) -> Iterator[list[str]]:
    """The SQL statements run on ``engine`` meanwhile (on the driver's cursor, as the store's
    prepared statements run too) that ``matching`` accepts, in a list that fills as they run."""
    seen: list[str] = []

    def listener(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if matching(statement):
            seen.append(statement)

    event.listen(engine, "before_cursor_execute", listener)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", listener)
