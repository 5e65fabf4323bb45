"""A connection gone silent (``alarmhub.store.answering``): nothing answered, nothing closed,
the packets still acknowledged (``tests.support.tcp_proxy``'s ``silence``). A statement of an
engine given ``answer_seconds`` fails rather than wait for ever, and the engine's next
connection works; a schema upgrade runs without the bound, which is back after it. And how the
writer's watchdog tells a silent session from one the server works on
(``store.watchdog.server_working_on``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError

from alarmhub.store import answering
from alarmhub.store.engine import open_engine, unbounded
from alarmhub.store.watchdog import server_working_on
from tests.support.database import drop_database, new_database
from tests.support.tcp_proxy import TcpProxy

pytestmark = pytest.mark.backends("postgresql")
ANSWER_S = 1.0
HANG_S = 60  # a statement not ended by then waits for ever: the bound did not act


@pytest.fixture
def behind_proxy() -> Iterator[tuple[TcpProxy, Engine]]:
    direct = new_database()
    parts = urlsplit(direct)
    try:
        with TcpProxy((parts.hostname or "127.0.0.1", parts.port or 5432)) as proxy:
            url = parts._replace(netloc=f"{parts.username}@127.0.0.1:{proxy.port}").geturl()
            engine = open_engine(url, answer_seconds=ANSWER_S)
            try:
                yield proxy, engine
            finally:
                engine.dispose()
    finally:
        drop_database(direct)


@pytest.mark.skipif(not answering.WAIT_BOUNDED, reason="this psycopg's wait takes no timeout")
def test_a_statement_on_a_silent_connection_fails_and_the_next_connection_works(
    behind_proxy: tuple[TcpProxy, Engine],
) -> None:
    proxy, engine = behind_proxy
    with engine.connect() as conn:
        assert conn.execute(text("SELECT 1")).scalar_one() == 1
        proxy.silence()
        outcome: list[BaseException | int] = []

        def query() -> None:
            try:
                outcome.append(conn.execute(text("SELECT 2")).scalar_one())
            except BaseException as exc:
                outcome.append(exc)

        thread = threading.Thread(target=query, daemon=True)
        thread.start()
        thread.join(HANG_S)
        assert outcome, f"the statement still waits after {HANG_S} s"
        assert isinstance(outcome[0], OperationalError)
        assert "no answer from the database" in str(outcome[0])
    with engine.connect() as conn:  # the silent one was closed: a new one, forwarded
        assert conn.execute(text("SELECT 3")).scalar_one() == 3


def test_an_upgrade_runs_unbounded_and_the_bound_is_back_after(
    behind_proxy: tuple[TcpProxy, Engine],
) -> None:
    _, engine = behind_proxy
    with engine.connect() as conn:
        driver = conn.connection.driver_connection
        bound = ANSWER_S if answering.WAIT_BOUNDED else None
        assert getattr(driver, "answer_seconds", None) == bound
        with unbounded(conn):
            assert getattr(driver, "answer_seconds", None) is None
        assert getattr(driver, "answer_seconds", None) == bound


def test_the_server_tells_a_session_it_works_on_from_one_that_waits_for_its_client(
    behind_proxy: tuple[TcpProxy, Engine],
) -> None:
    """``watchdog.server_working_on``: a statement waiting for a lock (as a commit waits for a
    synchronous standby) is worked on; a session idle in its transaction, or gone, is not."""
    _, engine = behind_proxy
    url = engine.url.render_as_string(hide_password=False)
    with engine.connect() as holder, engine.connect() as waiter:
        holder.execute(text("CREATE TABLE counter (n INTEGER)"))
        holder.execute(text("INSERT INTO counter VALUES (1)"))
        holder.commit()
        holder.execute(text("SELECT n FROM counter FOR UPDATE"))  # held, idle in transaction
        holder_pid = holder.connection.driver_connection.info.backend_pid  # type: ignore[union-attr]
        waiter_pid = waiter.connection.driver_connection.info.backend_pid  # type: ignore[union-attr]
        blocked = threading.Thread(
            target=lambda: waiter.execute(text("SELECT n FROM counter FOR UPDATE")), daemon=True
        )
        blocked.start()
        deadline = time.monotonic() + 30
        while not server_working_on(url, waiter_pid, 5) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server_working_on(url, waiter_pid, 5)
        assert not server_working_on(url, holder_pid, 5)
        holder.rollback()  # the lock released: the waiter goes on
        blocked.join(30)
        assert not blocked.is_alive()
        waiter.rollback()
    assert not server_working_on(url, 1 << 30, 5)  # no such session
    assert not server_working_on(url, None, 5)
