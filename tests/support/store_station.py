"""A station's database for the store tests, without a node: the line ``D1`` masked ``70####``,
accounts and operators (``station``); signals committed and routed as a node does
(``route``); an operator's action in its own write transaction (``act``); an alarm's row."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Connection
from sqlalchemy.engine import Engine

from alarmhub.core.account import Account
from alarmhub.core.signal import Signal, SignalFields
from alarmhub.store import operations, operators, provisioning, queries
from alarmhub.store.commit import SignalInsert, commit_signals
from alarmhub.store.engine import open_engine, upgrade, write_transaction
from alarmhub.store.routing import SignalRouting
from tests.support.database import database_url

T = TypeVar("T")
SECOND = 1_000_000
MINUTE = 60 * SECOND
T0 = 1_800_000_000 * SECOND  # 2027-01-15 08:00 UTC
DNIS = "D1"
PASSWORD = "correct horse"
OPERATORS = (("001", "Ann", "operator"), ("002", "Bob", "operator"), ("SUP", "Sue", "supervisor"))
RETENTION_US = 3600 * SECOND


@contextmanager
def station(
    tmp_path: Path, accounts: Mapping[str, str], staff: Sequence[tuple[str, str, str]] = OPERATORS
) -> Iterator[Engine]:
    """A migrated database with the line, ``accounts`` (number: name) and ``staff`` (code,
    name, role; every one with PASSWORD); disposed when the block ends."""
    engine = open_engine(database_url(tmp_path, "a"))
    upgrade(engine)
    provisioning.add_dnis(engine, DNIS, "70####")
    for number, name in accounts.items():
        provisioning.add_account(engine, Account(number, name, "1 Main St", "Springfield"))
    for code, name, role in staff:
        operators.add_operator(engine, code, name, role, PASSWORD)
    try:
        yield engine
    finally:
        engine.dispose()


def route(
    engine: Engine,
    signals: Sequence[tuple[str, str, str]],
    at_us: int = T0,
    routing: SignalRouting | None = None,
) -> list[int]:
    """Commit ``(account, code, zone)`` signals (area 01) and route them in one batch, by
    ``routing`` (one node's) or a new one; their incident numbers (the alarm ids of those that
    raise one)."""
    batch = [
        Signal("site", "rx", SignalFields(DNIS, account[2:], code, "01", zone), "t", at_us)
        for account, code, zone in signals
    ]
    with write_transaction(engine) as conn:
        stored = commit_signals(conn, SignalInsert(engine), batch, RETENTION_US)
    with write_transaction(engine) as conn:
        (routing or SignalRouting(engine, 1000, 2)).route(conn, at_us)
    return [x.incident_number for x in stored]


def act(engine: Engine, work: Callable[[Connection], T], queues: bool = False) -> T:
    """One action in its own write transaction, as the node runs it; with ``queues``, after the
    incident counter's lock, as actions on the alarm queues take it."""
    if queues:
        return operations.run(engine, lambda c: operations.on_queues(work, c))
    return operations.run(engine, work)


def alarm(engine: Engine, alarm_id: int) -> dict[str, Any]:
    with engine.connect() as conn:
        row = queries.alarm(conn, alarm_id)
    assert row is not None
    return row
