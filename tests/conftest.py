"""Shared fixtures: real server processes on free ports, the CLI as a subprocess, and the
database of each test's data directory.

The suite runs on SQLite (a file in each data directory) unless ``ALARMHUB_TEST_DATABASE_URL``
names a PostgreSQL server (``postgresql://user@host:port/database``): then every data directory
gets a new database of its own on that server, named in the directory's ``alarmhub.toml`` so
that every command and node started on it uses it, and dropped at the end of the run.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from sqlalchemy import Connection, create_engine, text
from sqlalchemy.engine import Engine
from sqlalchemy.pool import NullPool

from alarmhub.store import operations
from alarmhub.store.engine import driver_url, open_engine, upgrade

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
T = TypeVar("T")
TEST_DATABASE_URL = os.environ.get("ALARMHUB_TEST_DATABASE_URL", "")
ON_POSTGRES = TEST_DATABASE_URL.startswith("postgres")


def sqlite_only(why: str) -> pytest.MarkDecorator:
    """Skip in the PostgreSQL suite, saying why the check does not apply there."""
    return pytest.mark.skipif(ON_POSTGRES, reason=f"SQLite only: {why}")


_databases: dict[tuple[Path, str], str] = {}
_databases_lock = threading.Lock()


def _on_test_server(statement: str) -> None:
    """Run one statement on the PostgreSQL test server, outside any transaction."""
    engine = open_engine(TEST_DATABASE_URL).execution_options(isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(text(statement))
    finally:
        engine.dispose()


def new_database() -> str:
    """A new, empty database on the PostgreSQL test server; its URL."""
    name = f"ahtest_{uuid.uuid4().hex[:12]}"
    _on_test_server(f'CREATE DATABASE "{name}"')
    return f"{TEST_DATABASE_URL.rsplit('/', 1)[0]}/{name}"


def drop_database(url: str) -> None:
    _on_test_server(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)')


def database_url(data_dir: Path, name: str = "alarmhub") -> str:
    """The database of a test data directory: the SQLite file ``NAME.db`` in it, or in the
    PostgreSQL suite a new database made on first use (the directory's own database, ``name``
    ``alarmhub``, is written into its ``alarmhub.toml``)."""
    if not ON_POSTGRES:
        return f"sqlite:///{data_dir / (name + '.db')}"
    key = (data_dir.resolve(), name)
    with _databases_lock:
        if key not in _databases:
            _databases[key] = new_database()
            if name == "alarmhub":
                data_dir.mkdir(parents=True, exist_ok=True)
                (data_dir / "alarmhub.toml").write_text(f'database_url = "{_databases[key]}"\n')
        return _databases[key]


@pytest.fixture(scope="session", autouse=True)
def _drop_test_databases() -> Iterator[None]:
    yield
    for url in _databases.values():
        drop_database(url)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cli(
    data_dir: Path,
    *args: str,
    check: bool = True,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``alarmhub ARGS...`` against ``data_dir`` as a user would."""
    if "ALARMHUB_DATABASE_URL" not in (env or {}):
        database_url(data_dir)
    full_env = {**os.environ, "ALARMHUB_DATA_DIR": str(data_dir), **(env or {})}
    result = subprocess.run(
        [sys.executable, "-m", "alarmhub", *args],
        capture_output=True,
        text=True,
        env=full_env,
        input=stdin,
        timeout=60,
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"alarmhub {' '.join(args)} exited {result.returncode}:\n{result.stdout}{result.stderr}"
        )
    return result


def cli_json(data_dir: Path, *args: str) -> object:
    return json.loads(cli(data_dir, *args, "--json").stdout)


@dataclass
class Server:
    """An ``alarmhub serve`` process on a free port."""

    data_dir: Path
    port: int = field(default_factory=free_port)
    extra_args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> Server:
        self.log_path = self.data_dir / f"server-{self.port}.log"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if "ALARMHUB_DATABASE_URL" not in self.env:
            database_url(self.data_dir)
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "alarmhub",
                "serve",
                "--listen",
                f"127.0.0.1:{self.port}",
                "--data-dir",
                str(self.data_dir),
                *self.extra_args,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **self.env},
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"server exited {self.process.returncode}:\n{self.log()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"server did not become healthy:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path else ""

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(sig)
        code = self.process.wait(timeout=timeout)
        return code

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)


@dataclass
class Station:
    """A provisioned data directory with a running server and a token for driver ``rx1``."""

    server: Server
    token: str
    data_dir: Path

    @property
    def url(self) -> str:
        return self.server.url

    def post(
        self,
        body: object,
        pair: str = "site1:rx1",
        token: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        all_headers = {"Authorization": f"Bearer {token or self.token}", **(headers or {})}
        if isinstance(body, bytes | str):
            return httpx.post(
                f"{self.url}/rx/{pair}/contact_id", content=body, headers=all_headers, timeout=10
            )
        return httpx.post(
            f"{self.url}/rx/{pair}/contact_id", json=body, headers=all_headers, timeout=10
        )


def provision(data_dir: Path) -> str:
    """Drivers rx1 and rx2, a token for rx1 that may beat site1:rx1; returns the token."""
    cli(data_dir, "driver", "add", "rx1")
    cli(data_dir, "driver", "add", "rx2")
    created = cli_json(
        data_dir,
        "token",
        "create",
        "--name",
        "main",
        "--driver",
        "rx1",
        "--heartbeat",
        "site1:rx1",
    )
    assert isinstance(created, dict)
    return str(created["token"])


@pytest.fixture(scope="module")
def station(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Station]:
    data_dir = tmp_path_factory.mktemp("station")
    token = provision(data_dir)
    server = Server(data_dir).start()
    try:
        yield Station(server, token, data_dir)
    finally:
        server.stop()


def wait_for(
    condition: Callable[[], T | None], what: str, seconds: float = 10.0, every: float = 0.05
) -> T:
    """Poll ``condition`` until it returns something truthy, and return that; fail only when it
    never does within ``seconds`` (a generous deadline, never a timing assertion)."""
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"never happened within {seconds} s: {what}"
        time.sleep(every)


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


def db_rows(data_dir: Path, sql: str, *params: object) -> list[Record]:
    """Rows from the database of ``data_dir`` (SQLite opened read-only, or PostgreSQL), for
    SQL written with ``?`` placeholders."""
    if ON_POSTGRES:
        url, sql = database_url(data_dir), sql.replace("%", "%%").replace("?", "%s")
        options: dict[str, Any] = {}
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


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    """A migrated database of the test's own, for tests that run store code in-process."""
    engine = open_engine(database_url(tmp_path, "inprocess"))
    upgrade(engine)
    yield engine
    engine.dispose()


class Runner:
    """What in-process code needs of the node's writer: a write transaction off the loop."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def run(self, work: Callable[[Connection], Any]) -> Any:
        return await asyncio.to_thread(operations.run, self.engine, work)
