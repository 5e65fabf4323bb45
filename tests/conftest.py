"""Fixtures of the suite; the helpers they use live in ``tests/support``.

Each test module runs on one or both databases (its *backend*, see ``tests.support.database``):
``tests/store`` and ``tests/crash`` on SQLite and on PostgreSQL, ``tests/unit`` and ``tests/e2e``
on SQLite, and a module or test marked ``@pytest.mark.backends(...)`` on the ones it names.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy.engine import Engine

from alarmhub.store.engine import open_engine
from tests.support import database
from tests.support.database import POSTGRESQL, SQLITE, database_url
from tests.support.hashing import hashing_once
from tests.support.in_process import InProcessStation, in_process_node
from tests.support.processes import ROOT, Server, Station, provision
from tests.support.tls import one_tls_context

BOTH = (SQLITE, POSTGRESQL)
DEFAULT_BACKENDS = {"store": BOTH, "crash": BOTH}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "backends(*names): the databases a test runs on (sqlite, postgresql)"
    )
    config.addinivalue_line("markers", "sqlite_only(why): skipped on PostgreSQL, saying why")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Start the long tests first, so that no worker is left with one at the end of the run:
    ``make test`` hands each worker a whole module at a time (``--dist loadscope``), in this
    order (``--no-loadscope-reorder``), so a module holding a long test is among the first."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


CRASH = "tests/crash/"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """With ``--dist loadscope`` (``make test``): a worker is handed a whole module at a time, and
    every crash module at once, so that they run one after another: each loads the machine
    as much as it can before its kill, and two at once on two cores starved each other's
    nodes (servers not healthy in time, fewer signals before the kill)."""
    if config.getoption("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModulesAndCrashTests(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return CRASH if nodeid.startswith(CRASH) else nodeid.split("::", 1)[0]

    return ModulesAndCrashTests(config, log)


def _backends(metafunc: pytest.Metafunc) -> tuple[str, ...]:
    marker = metafunc.definition.get_closest_marker("backends")
    if marker is not None:
        return tuple(marker.args)
    area = Path(str(metafunc.definition.path)).relative_to(ROOT / "tests").parts[0]
    return DEFAULT_BACKENDS.get(area, (SQLITE,))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames and _backends(metafunc) != (SQLITE,):
        metafunc.parametrize("backend", _backends(metafunc), indirect=True, scope="module")


_reachable: dict[str, str | None] = {}


def _postgres_unreachable() -> str | None:
    """Why the PostgreSQL test server cannot be used, or None when it answers."""
    if "why" not in _reachable:
        try:
            with psycopg.connect(database.TEST_DATABASE_URL, connect_timeout=5) as conn:
                conn.execute("SELECT 1")
            _reachable["why"] = None
        except psycopg.Error as exc:
            _reachable["why"] = str(exc).strip().splitlines()[0] if str(exc).strip() else "error"
    return _reachable["why"]


@pytest.fixture(scope="module", autouse=True)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """The database of the tests of this module (a module's fixtures depend on it): SQLite
    unless the module's tests are parametrized over backends."""
    name = getattr(request, "param", SQLITE)
    if name == POSTGRESQL and (why := _postgres_unreachable()):
        pytest.skip(f"no PostgreSQL server answered at ALARMHUB_TEST_DATABASE_URL: {why}")
    database.use_backend(name)
    yield str(name)
    database.release()


@pytest.fixture(autouse=True)
def _sqlite_only(request: pytest.FixtureRequest, backend: str) -> None:
    marker = request.node.get_closest_marker("sqlite_only")
    if marker is not None and backend == POSTGRESQL:
        pytest.skip(f"SQLite only: {marker.args[0]}")


@pytest.fixture(scope="session", autouse=True)
def _hash_each_password_once() -> Iterator[None]:
    """Stations made in this process hash each password once (``tests.support.hashing``)."""
    with hashing_once():
        yield


@pytest.fixture(scope="session", autouse=True)
def _one_tls_context() -> Iterator[None]:
    """The HTTP clients made in this process share one TLS context (``tests.support.tls``)."""
    with one_tls_context():
        yield


@pytest.fixture(scope="session", autouse=True)
def _drop_test_databases() -> Iterator[None]:
    yield
    database.drop_all()


@pytest.fixture(scope="module")
def served_station(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Station]:
    """A provisioned station (``provision``) on a real ``alarmhub serve`` process."""
    data_dir = tmp_path_factory.mktemp("station")
    token = provision(data_dir)
    server = Server(data_dir).start()
    station = Station(server, token, data_dir)
    try:
        yield station
    finally:
        station.close()
        server.stop()


@pytest.fixture(scope="module")
def station(served_station: Station) -> Station:
    """The module's station: on a real process unless the module takes
    ``in_process_station`` instead."""
    return served_station


@pytest.fixture(scope="module")
def in_process_station(
    backend: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[InProcessStation]:
    """A provisioned station (``provision``) whose node runs in this process."""
    data_dir = tmp_path_factory.mktemp("station")
    token = provision(data_dir)
    with in_process_node(data_dir) as node:
        yield InProcessStation(node, token, data_dir)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    """A migrated database of the test's own, for tests that run store code in-process."""
    engine = open_engine(database_url(tmp_path, "inprocess"))
    yield engine
    engine.dispose()
