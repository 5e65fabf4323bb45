"""Hostile input against webhook delivery (issue 35, items 1 and 12): one account's backlog,
waiting for its retries, must hold back no other account's deliveries; a real node
(``alarmhub serve``, its webhook process) and a real receiver that answers 500 to one account
only, on SQLite and on PostgreSQL.

Each test here failed on the code before this work; see each docstring for what was wrong.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

from alarmhub.clock import now_us
from alarmhub.core import delivery as rules
from alarmhub.core import events
from alarmhub.store import events as outbox
from alarmhub.store import operations
from alarmhub.store import schema as s
from alarmhub.store.commit import lock_incidents
from alarmhub.store.engine import open_engine
from tests.support.database import database_url
from tests.support.processes import Server, as_dict, cli, wait_for
from tests.support.webhook_receiver import ALLOW_PRIVATE, Receiver, account_of

pytestmark = pytest.mark.backends("sqlite", "postgresql")

FAILING, OTHERS = "700001", ("700002", "700003")
BACKLOG = 2100  # more than the 2,000 a turn read of a webhook before
DELIVERY_DEADLINE_S = 30  # promptly: the failing account's first retry alone is due in 2 s


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    tmp_path.mkdir(exist_ok=True)
    e = open_engine(database_url(tmp_path))
    yield e
    e.dispose()


def publish(engine: Engine, account: str, count: int = 1) -> list[int]:
    """``count`` account.test_started events for ``account``, in one transaction as the
    station's changes write them (under the incident counter's lock); their ids."""

    def work(conn: Any) -> list[int]:
        lock_incidents(conn)
        at = now_us()
        rows = [outbox.row(events.TEST_STARTED, account, {"account": account}, at)] * count
        outbox.publish_rows(conn, rows)
        ids = select(s.event.c.event_id).order_by(s.event.c.event_id.desc()).limit(count)
        return sorted(conn.execute(ids).scalars())

    return operations.run(engine, work)


def test_one_accounts_failing_backlog_holds_back_no_other_account(
    tmp_path: Path, engine: Engine
) -> None:
    """Item 1: a receiver that answers 500 for one account; 2,100 events of that account, then
    one each for two others. Before, each turn read the webhook's oldest 2,000 pending
    deliveries, all the failing account's, waiting for a retry: the two others stayed pending
    with 0 attempts for the ~32 h of the retry schedule. Now they are delivered at once, while
    the failing account keeps its order (its first event is retried, the rest wait behind it)
    and its retry schedule (the second attempt no sooner than the first delay)."""
    receiver = Receiver(failing_accounts=frozenset({FAILING})).start()
    node = Server(tmp_path, env=dict(ALLOW_PRIVATE)).start()
    try:
        adding = ["webhook", "add", receiver.url, "--event", events.TEST_STARTED, "--json"]
        added = as_dict(json.loads(cli(tmp_path, *adding, env=ALLOW_PRIVATE).stdout))
        backlog = publish(engine, FAILING, BACKLOG)
        others = [publish(engine, account)[0] for account in OTHERS]
        wanted = {events.event_id_text(e) for e in others}
        wait_for(lambda: set(receiver.delivered_ids()) >= wanted, "the other accounts' events",
                 DELIVERY_DEADLINE_S)  # fmt: skip
        failing = wait_for(
            lambda: len(tried := [a for a in receiver.attempts
                                  if account_of(a.body) == FAILING]) >= 2 and tried,
            "the failing account's first retry", DELIVERY_DEADLINE_S,
        )  # fmt: skip
    finally:
        node.stop()
        receiver.stop()
    first = events.event_id_text(backlog[0])
    assert [a.headers["webhook-id"] for a in failing] == [first] * len(failing)
    assert failing[1].at - failing[0].at >= rules.RETRY_SECONDS[0] - 0.5  # clocks: ms apart
    assert sorted(json.loads(a.body)["data"]["account"] for a in receiver.delivered) == [*OTHERS]
    with engine.connect() as conn:
        d = s.webhook_delivery.c
        rows = conn.execute(select(d.event_id, d.attempts).where(d.webhook_id == int(added["id"])))
        attempts = {event_id: n for event_id, n in rows}
    assert attempts[backlog[0]] == len(failing)
    assert all(attempts[e] == 0 for e in backlog[1:])  # waiting behind the first, in order
