"""Engines and migrations: one function to open the database at a URL, ready for use."""

from __future__ import annotations

import asyncio
import importlib
import re
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import Connection, create_engine, inspect, text
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import InterfaceError, OperationalError

from alarmhub.core.errors import StoreUnavailable
from alarmhub.store import sqlite

T = TypeVar("T")

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATION_LOCK = 0x616C61726D6D6967  # the advisory lock key of schema upgrades
VERSION_TABLE = "alembic_version"
_REVISION = re.compile(r"""^revision(?:\s*:[^=\n]*)?\s*=\s*["']([^"']+)["']""", re.MULTILINE)
_DOWN_REVISION = re.compile(r"^down_revision(?:\s*:[^=\n]*)?\s*=(.*)$", re.MULTILINE)


def unavailable(exc: BaseException) -> bool:
    """True when ``exc`` says the database is away (unreachable, locked, its disk full), not
    that it refused what one statement wrote."""
    return isinstance(exc, OperationalError | InterfaceError | StoreUnavailable) or bool(
        getattr(exc, "connection_invalidated", False)
    )


CONNECTION_DEFAULTS: dict[str, str] = {
    "connect_timeout": "10",
    "keepalives": "1",
    "keepalives_idle": "10",
    "keepalives_interval": "5",
    "keepalives_count": "3",
    "tcp_user_timeout": "30000",
}
"""libpq parameters of every PostgreSQL connection a node opens (engines and the console's
LISTEN), unless its URL names them: a connection whose server went away without a word (a
network partition, a host that died) fails within about 30 s, whether idle (keepalives: 10 s,
then 3 probes 5 s apart) or with data unacknowledged (``tcp_user_timeout``, milliseconds),
rather than after the kernel's retransmissions (about 15 minutes); a connection attempt gives
up after 10 s. A peer whose kernel still acknowledges (a server that hangs, a middlebox that
lost its state) is beyond them: the writer's watchdog (``store.watchdog``) and the bound on
every other statement (``store.answering``) cover it."""


def open_engine(
    url: str,
    synchronous: bool = True,
    writer: bool = False,
    idle_in_transaction_seconds: float | None = None,
    answer_seconds: float | None = None,
) -> Engine:
    """An engine for ``url`` with the dialect's settings applied.

    ``synchronous=False`` is for work that can be derived again from what is durable (routing
    and supervision): its commits do not wait for the disk. A power loss may take the last of
    them back, whole, never in part; the next synchronous commit (every signal's) makes them
    durable too, as the log is written in order. The process dying loses none of them.
    ``writer``: the writer process's SQLite settings (``sqlite.configure``).
    ``idle_in_transaction_seconds``: on PostgreSQL, the server ends a session of this engine
    idle that long in a transaction (rolled back, its locks released): the writer's, whose
    client may have given up on a silent connection (``store.watchdog``).
    ``answer_seconds``: on PostgreSQL, a statement of this engine that the server has not
    answered within that time fails (``answering.AnsweringConnection``); the node's readers and
    other writes, so that a silent connection cannot hold a thread, nor a stop, for ever."""
    if url.startswith("sqlite"):
        sqlite.prepare_url(url)
        engine = create_engine(url, pool_size=8, max_overflow=8)
        sqlite.configure(engine, synchronous, writer)
        return engine
    settings = [] if synchronous else ["synchronous_commit=off"]
    if idle_in_transaction_seconds is not None:
        milliseconds = round(idle_in_transaction_seconds * 1000)
        settings.append(f"idle_in_transaction_session_timeout={milliseconds}")
    parsed = make_url(driver_url(url))
    connect_args = _connection_defaults(parsed)
    if settings:
        connect_args["options"] = " ".join(f"-c {setting}" for setting in settings)
    engine = create_engine(parsed, pool_pre_ping=True, connect_args=connect_args)
    if answer_seconds is not None:
        from alarmhub.store import answering

        answering.bound(engine, answer_seconds)
    return engine


def _connection_defaults(url: URL) -> dict[str, str]:
    """:data:`CONNECTION_DEFAULTS` but those ``url`` names itself."""
    return {k: v for k, v in CONNECTION_DEFAULTS.items() if k not in url.query}


def driver_url(url: str) -> str:
    """``postgresql://`` means psycopg 3 (SQLAlchemy's own default is the older psycopg2).

    A multi-host URL may name its servers either way libpq reads: in the query
    (``postgresql://u@/db?host=pg1:5432&host=pg2:5432``, the form SQLAlchemy reads) or in
    the authority, comma-separated (``postgresql://u@pg1:5432,pg2:5432/db``), which is
    rewritten into the query form here (SQLAlchemy would take ``5432,pg2:5432`` for a port)."""
    for plain in ("postgresql://", "postgres://"):
        if url.startswith(plain):
            url = "postgresql+psycopg://" + url[len(plain) :]
    if url.startswith("postgresql"):
        return _hosts_in_query(url)
    return url


def _hosts_in_query(url: str) -> str:
    """``scheme://user@h1:p1,h2:p2/db?q`` as ``scheme://user@/db?host=h1:p1&host=h2:p2&q``."""
    scheme, found, rest = url.partition("://")
    if not found:
        return url
    end = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    authority, tail = rest[:end], rest[end:]
    user, at, hosts = authority.rpartition("@")
    if "," not in hosts:
        return url
    path, _, query = tail.partition("?")
    named = "&".join(f"host={host}" for host in hosts.split(",") if host)
    return f"{scheme}://{user}{at}{path or '/'}?{named}{'&' + query if query else ''}"


def libpq_conninfo(url: str | URL) -> str:
    """The libpq connection string (``host=h1,h2 port=p1,p2 dbname=... ``) of a PostgreSQL URL,
    for a connection the node opens with psycopg itself rather than through an engine (the
    console's LISTEN): the parameters SQLAlchemy's psycopg dialect connects its engines with,
    multi-host URLs and their ``target_session_attrs`` included, so that every connection
    follows a failover alike. A password in it is quoted, never logged."""
    from psycopg.conninfo import make_conninfo

    parsed = make_url(driver_url(url)) if isinstance(url, str) else url
    parsed = parsed.set(drivername="postgresql+psycopg")
    _, params = parsed.get_dialect()().create_connect_args(parsed)
    params = {**_connection_defaults(parsed), **params}
    return make_conninfo(**{k: str(v) for k, v in params.items() if isinstance(v, str | int)})


async def read_in_thread(engine: Engine, work: Callable[[Connection], T]) -> T:
    """``work`` on a connection of ``engine``, in a thread (the event loop goes on meanwhile)."""

    def run() -> T:
        with engine.connect() as conn:
            return work(conn)

    return await asyncio.to_thread(run)


def dialect_insert(conn: Connection) -> Callable[[Any], Any]:
    """The ``insert`` of ``conn``'s dialect (SQLite's or PostgreSQL's), whose statements take
    ``ON CONFLICT``; the dialect's module imported at the first call (a command on SQLite never
    loads PostgreSQL's: about 50 ms of its start)."""
    module = importlib.import_module(f"sqlalchemy.dialects.{conn.dialect.name}")
    insert: Callable[[Any], Any] = module.insert
    return insert


def write_transaction(engine: Engine) -> AbstractContextManager[Connection]:
    """A transaction that will write: on SQLite it takes the write lock at its start."""
    return engine.execution_options(**{sqlite.WRITE_OPTION: True}).begin()


@contextmanager
def commit_without_fsync(engine: Engine) -> Iterator[Connection]:
    """A write transaction whose commit does not wait for the disk: SQLite ``synchronous=NORMAL``
    on its connection (WAL), PostgreSQL ``SET LOCAL synchronous_commit = off``. What it commits
    survives the death of the process; a power loss may take it back. For a record whose loss
    can only make work be done twice (a delivery's ACK: the frame is sent again)."""
    with engine.connect() as conn:
        conn.execution_options(**{sqlite.WRITE_OPTION: True})
        if engine.dialect.name == "sqlite":
            with sqlite.not_synchronous(conn), conn.begin():
                yield conn
        else:
            with conn.begin():
                conn.exec_driver_sql("SET LOCAL synchronous_commit = off")
                yield conn


class WriteConnection:
    """One connection kept open for a process that writes all the time (the writer process):
    each :meth:`transaction` skips the pool's check-out, reset and check-in, which cost more
    than a small transaction's own work. A transaction that fails closes the connection, so a
    broken one is replaced by a new one at the next transaction.

    Its transactions are durable (their commit waits for the disk) or not (``durable=False``:
    work derived from what is durable, as ``open_engine(synchronous=False)`` describes), on the
    one connection: on SQLite a connection's page cache is emptied whenever another connection
    committed since its last transaction, so two connections taking turns, one for each kind,
    each read every page they touched again (bench/README.md)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._sqlite = engine.dialect.name == "sqlite"
        self._conn: Connection | None = None
        # what the connection's commits are now; unknown for a new one (the pool may give back
        # one that a transaction that failed had left not durable)
        self._durable: bool | None = None
        self.busy_since: float | None = None
        """The monotonic time the transaction in progress began (its connect included), None
        between transactions: what the writer's watchdog looks at (``store.watchdog``)."""
        self.backend_pid: int | None = None
        """The server's process of the connection (PostgreSQL), as the watchdog asks after it."""

    @contextmanager
    def transaction(self, durable: bool = True) -> Iterator[Connection]:
        self.busy_since = time.monotonic()
        try:
            with self._transaction(durable) as conn:
                yield conn
        finally:
            self.busy_since = None

    @contextmanager
    def _transaction(self, durable: bool) -> Iterator[Connection]:
        if self._conn is None:
            self._conn = self.engine.connect().execution_options(**{sqlite.WRITE_OPTION: True})
            self._durable = None
            info = getattr(self._conn.connection.driver_connection, "info", None)
            self.backend_pid = getattr(info, "backend_pid", None)
        conn = self._conn
        try:
            if self._sqlite and durable != self._durable:
                sqlite.set_synchronous(conn, durable)  # outside a transaction, where it applies
                self._durable = durable
            with conn.begin():
                if not durable and not self._sqlite:
                    conn.exec_driver_sql("SET LOCAL synchronous_commit = off")
                yield conn
        except BaseException:
            self._conn = None
            conn.close()
            raise

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self.engine.dispose()


def alembic_config(url: str) -> Config:
    from alembic.config import Config

    config = Config()
    location = resources.files("alarmhub.store").joinpath("migrations")
    config.set_main_option("script_location", str(location))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(engine: Engine) -> None:
    """Bring the schema to the newest migration (a no-op when it is there already)."""
    from alembic import command

    config = alembic_config(engine.url.render_as_string(hide_password=False))
    with write_transaction(engine) as connection, unbounded(connection):
        if engine.dialect.name == "postgresql":  # nodes starting together migrate one by one
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


@contextmanager
def unbounded(connection: Connection) -> Iterator[None]:
    """No bound on how long the server takes to answer (``answer_seconds``) on ``connection``
    meanwhile: a migration may take its time."""
    driver = connection.connection.driver_connection
    bound = getattr(driver, "answer_seconds", None)
    if bound is None:
        yield
        return
    driver.answer_seconds = None  # type: ignore[union-attr]
    try:
        yield
    finally:
        driver.answer_seconds = bound  # type: ignore[union-attr]


def is_new(engine: Engine) -> bool:
    """True when the database has no alarmhub schema yet."""
    with engine.connect() as connection:
        return not inspect(connection).has_table("signal")


def upgrade_if_behind(engine: Engine) -> bool:
    """:func:`upgrade` unless the database is at the newest migration already, which is found
    without loading Alembic and the migrations (a command line's start-up would pay for
    them); True when it upgraded."""
    if at_head(engine):
        return False
    upgrade(engine)
    return True


def at_head(engine: Engine) -> bool:
    """True when the database's schema is at the newest migration."""
    head = head_revision()
    if head is None:
        return False
    with engine.connect() as connection:
        if not inspect(connection).has_table(VERSION_TABLE):
            return False
        current = connection.execute(text("SELECT version_num FROM alembic_version")).scalars()
        return list(current) == [head]


@cache
def head_revision() -> str | None:
    """The newest migration's revision, read from the text of the migration files; None when
    they do not name exactly one newest, or a file is not read as a migration."""
    revisions: set[str] = set()
    earlier: set[str] = set()
    versions = resources.files("alarmhub.store").joinpath("migrations").joinpath("versions")
    for item in versions.iterdir():
        if not item.name.endswith(".py") or item.name == "__init__.py":
            continue
        source = item.read_text(encoding="utf-8")
        revision, down = _REVISION.search(source), _DOWN_REVISION.search(source)
        if revision is None or down is None:
            return None
        revisions.add(revision[1])
        earlier.update(re.findall(r"""["']([^"']+)["']""", down[1]))
    heads = revisions - earlier
    return heads.pop() if len(heads) == 1 else None
