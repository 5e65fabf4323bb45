"""What a node (or worker) reads of the others' supervision each second
(``alarmhub.node.supervised``), on both databases: the leader reads every entry first, then only the
entries it suspects (failed or overdue by its memory) unless entries were added; the others
read only the failed entries, and take an entry no longer failed there as restored."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import Connection, insert, update
from sqlalchemy.engine import Engine

from alarmhub.clock import now_us
from alarmhub.node.heartbeats import HeartbeatSupervisor
from alarmhub.store import dc09, schema
from alarmhub.store.engine import write_transaction

pytestmark = pytest.mark.backends("sqlite", "postgresql")
PAIRS = 40
FAILED = {("site3", "rx1"), ("site7", "rx1")}


@dataclass
class Lead:
    held: bool
    shared: bool = True


class Writer:
    """The part of the node's writer that supervision uses: its engine, and a write."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def run(self, work: Callable[[Connection], Any]) -> Any:
        with write_transaction(self.engine) as conn:
            return work(conn)


@pytest.fixture
def engine(engine: Engine) -> Engine:
    """The test's database with PAIRS heartbeat pairs, the FAILED ones failed."""
    now = now_us()
    rows = [
        {
            "source": f"site{n}",
            "destination": "rx1",
            "last_seen_us": now,
            "failed_us": now if (f"site{n}", "rx1") in FAILED else None,
        }
        for n in range(PAIRS)
    ]
    with write_transaction(engine) as conn:
        conn.execute(insert(schema.heartbeat), rows)
    return engine


def supervisor(engine: Engine, leading: bool) -> HeartbeatSupervisor:
    return HeartbeatSupervisor(Writer(engine), Lead(leading), 60, 5.0)  # type: ignore[arg-type]


def failed(book: HeartbeatSupervisor) -> set[tuple[str, str]]:
    return {key for key, state in book.pairs.items() if state.failed}


def test_the_leader_reads_every_entry(engine: Engine) -> None:
    leader = supervisor(engine, leading=True)
    asyncio.run(leader.check_once())
    assert len(leader.pairs) == PAIRS
    assert failed(leader) == FAILED


def reading(book: HeartbeatSupervisor) -> list[int]:
    """The rows of each read of ``book`` from now on (the list grows with each)."""
    reads: list[int] = []
    stored = book.stored

    def counted(*args: Any, **kwargs: Any) -> Any:
        rows = stored(*args, **kwargs)
        reads.append(len(rows))
        return rows

    book.stored = counted  # type: ignore[method-assign]
    return reads


def test_then_the_leader_reads_its_suspects_and_new_entries(engine: Engine) -> None:
    leader = supervisor(engine, leading=True)
    reads = reading(leader)
    asyncio.run(leader.check_once())
    assert reads == [PAIRS]
    asyncio.run(leader.check_once())
    assert reads == [PAIRS, len(FAILED)]  # nothing overdue: the failed entries alone
    # pair 9 beat at another node; this one's memory says it is overdue: it reads it and
    # does not fail it
    now = now_us()
    t = schema.heartbeat.c
    with write_transaction(engine) as conn:
        conn.execute(update(schema.heartbeat).where(t.source == "site9").values(last_seen_us=now))
        conn.execute(update(schema.heartbeat).where(t.source == "site3").values(failed_us=None))
    leader.pairs[("site9", "rx1")].last_seen_us = now - 3_600_000_000
    asyncio.run(leader.check_once())
    assert reads[-1] == len(FAILED) + 1
    assert leader.pairs[("site9", "rx1")].last_seen_us == now
    assert failed(leader) == {("site7", "rx1")}  # pair 3 restored elsewhere
    # pair 5 turns overdue here within the next check interval: read too
    with write_transaction(engine) as conn:
        conn.execute(update(schema.heartbeat).where(t.source == "site5").values(last_seen_us=now))
    leader.pairs[("site5", "rx1")].last_seen_us = now_us() - 59_500_000  # 60 s timeout
    asyncio.run(leader.check_once())
    assert leader.pairs[("site5", "rx1")].last_seen_us == now
    # pair 8 is overdue everywhere: failed
    leader.pairs[("site8", "rx1")].last_seen_us = now - 3_600_000_000
    with write_transaction(engine) as conn:
        conn.execute(
            update(schema.heartbeat)
            .where(t.source == "site8")
            .values(last_seen_us=now - 3_600_000_000)
        )
    asyncio.run(leader.check_once())
    assert failed(leader) == {("site7", "rx1"), ("site8", "rx1")}
    # a pair added at another node: read with all the others
    with write_transaction(engine) as conn:
        conn.execute(
            insert(schema.heartbeat).values(source="new", destination="rx1", last_seen_us=now)
        )
    asyncio.run(leader.check_once())
    assert reads[-1] == PAIRS + 1
    assert ("new", "rx1") in leader.pairs


def test_the_others_read_the_failed_entries_only(engine: Engine) -> None:
    other = supervisor(engine, leading=False)
    asyncio.run(other.check_once())
    assert set(other.pairs) == FAILED
    assert failed(other) == FAILED
    # one restored by another node: no longer failed here either
    t = schema.heartbeat.c
    with write_transaction(engine) as conn:
        conn.execute(update(schema.heartbeat).where(t.source == "site3").values(failed_us=None))
    asyncio.run(other.check_once())
    assert failed(other) == {("site7", "rx1")}


def test_a_failed_dc09_account_read_alone(engine: Engine) -> None:
    now = now_us()
    accounts = [
        {"account": name, "last_message_us": now, "failed_us": failed_us, "created_us": now}
        for name, failed_us in (("1111", None), ("2222", now), ("3333", None))
    ]
    with write_transaction(engine) as conn:
        conn.execute(insert(schema.dc09_account), accounts)
    with engine.connect() as conn:
        assert [r.account for r in dc09.reported(conn, failed_only=True)] == ["2222"]
        assert sorted(r.account for r in dc09.reported(conn)) == ["1111", "2222", "3333"]
        assert sorted(r.account for r in dc09.reported(conn, accounts=["3333", "2222"])) == [
            "2222",
            "3333",
        ]
        assert dc09.count_reported(conn) == 3
