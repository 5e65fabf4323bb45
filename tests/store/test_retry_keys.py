"""The DC-09 retry keys in the writer's memory (``alarmhub.store.retry_keys``) on a real
database: a retry answered from memory with the table untouched, a conflict refused, nothing
remembered from a transaction that did not commit, the keys read back from the signals after a
restart, and forgotten when their window has passed."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from alarmhub.clock import now_us
from alarmhub.core.dc09 import TOKEN_NAME
from alarmhub.core.signal import Signal, SignalFields
from alarmhub.store import schema as s
from alarmhub.store.commit import SignalInsert, Stored, commit_signals
from alarmhub.store.engine import open_engine, upgrade, write_transaction
from alarmhub.store.retry_keys import RetryKeys
from tests.support.database import database_url

SECOND = 1_000_000
WINDOW_US = 300 * SECOND
WINDOWS = {TOKEN_NAME: WINDOW_US}
DAY_US = 86_400 * SECOND


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = open_engine(database_url(tmp_path, "retry-keys"))
    upgrade(engine)
    yield engine
    engine.dispose()


def event(key: str, at_us: int, code: str = "E130", token: str = TOKEN_NAME) -> Signal:
    fields = SignalFields("D1", "12", code, "01", "001")
    return Signal("R1L1", "dc09", fields, token, at_us, key)


def commit(engine: Engine, keys: RetryKeys, batch: Sequence[Signal]) -> list[Stored]:
    """As the writer does: one transaction, the memory changed once it is committed."""
    staged = keys.staged()
    with write_transaction(engine) as conn:
        stored = commit_signals(conn, SignalInsert(engine), batch, DAY_US, WINDOWS, staged)
    staged.apply()
    return stored


def rows(engine: Engine, table: s.Table) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


def test_a_retry_is_answered_from_memory_and_the_table_is_not_written(engine: Engine) -> None:
    keys, t0 = RetryKeys(WINDOWS), now_us()
    [first] = commit(engine, keys, [event("1234/R1L1/0007/0/ab", t0)])
    [again, other] = commit(
        engine, keys, [event("1234/R1L1/0007/0/ab", t0 + SECOND), event("1234/R1L1/0008/0/cd", t0)]
    )
    assert again == Stored(first.incident_number, duplicate=True)
    assert not other.duplicate and other.incident_number == first.incident_number + 1
    [conflict] = commit(engine, keys, [event("1234/R1L1/0007/0/ab", t0, code="E110")])
    assert conflict.conflict
    assert rows(engine, s.idempotency) == 0  # remembered in memory and on the signal rows
    assert rows(engine, s.signal) == 2
    assert len(keys) == 2


def test_keys_of_other_tokens_stay_in_the_table(engine: Engine) -> None:
    keys, t0 = RetryKeys(WINDOWS), now_us()
    [first] = commit(engine, keys, [event("order-1", t0, token="main")])
    [again] = commit(engine, keys, [event("order-1", t0, token="main")])
    assert again == Stored(first.incident_number, duplicate=True)
    assert rows(engine, s.idempotency) == 1 and len(keys) == 0


def test_a_transaction_that_did_not_commit_leaves_nothing_remembered(engine: Engine) -> None:
    keys, t0 = RetryKeys(WINDOWS), now_us()
    staged = keys.staged()
    with pytest.raises(RuntimeError), write_transaction(engine) as conn:
        commit_signals(conn, SignalInsert(engine), [event("k/0/x", t0)], DAY_US, WINDOWS, staged)
        raise RuntimeError("the commit failed")
    assert len(keys) == 0  # never applied
    [stored] = commit(engine, keys, [event("k/0/x", t0)])
    assert not stored.duplicate and rows(engine, s.signal) == 1


def test_the_keys_of_the_window_are_read_back_after_a_restart(engine: Engine) -> None:
    keys, t0 = RetryKeys(WINDOWS), now_us()
    [old] = commit(engine, keys, [event("old", t0 - WINDOW_US - 120 * SECOND)])
    [recent] = commit(engine, keys, [event("recent", t0 - 10 * SECOND)])
    commit(engine, keys, [event("plain", t0, token="main")])
    restarted = RetryKeys(WINDOWS)
    with engine.connect() as conn:
        assert restarted.recall(conn, t0) == 1  # the old key's window has passed
    [again] = commit(engine, restarted, [event("recent", t0 + SECOND)])
    assert again == Stored(recent.incident_number, duplicate=True)
    [new] = commit(engine, restarted, [event("old", t0)])
    assert not new.duplicate and new.incident_number != old.incident_number


def test_keys_are_forgotten_when_their_window_has_passed(engine: Engine) -> None:
    keys, t0 = RetryKeys(WINDOWS), now_us()
    commit(engine, keys, [event("a", t0), event("b", t0 + 10 * SECOND)])
    assert keys.expire(t0 + WINDOW_US) == 0
    assert keys.expire(t0 + WINDOW_US + 5 * SECOND) == 1
    assert len(keys) == 1
    [b_again] = commit(engine, keys, [event("b", t0 + 20 * SECOND)])
    assert b_again.duplicate
    [a_new] = commit(engine, keys, [event("a", t0 + WINDOW_US + 6 * SECOND)])
    assert not a_new.duplicate
