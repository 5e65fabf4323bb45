"""The one delivery worker (:mod:`alarmhub.outbound.delivery`) on SQLite (its outcomes recorded by
a node's writer beside it) and PostgreSQL, with a channel whose sends answer as a script says
(the webhooks' store underneath): a permanent failure ends its delivery at once and the lane
goes on; a failure to retry holds back the rest of its lane, in order, until its retry goes;
other lanes are not held. A recording that fails is handed over again, and nothing is sent
twice."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import select
from sqlalchemy.engine import Connection, Engine

from alarmhub.clock import now_us
from alarmhub.core import delivery
from alarmhub.core import events as kinds
from alarmhub.outbound.delivery import DeliveryWorker
from alarmhub.outbound.webhooks import WebhookChannel
from alarmhub.outbound.writer_records import WriterRecords
from alarmhub.store import events, recording
from alarmhub.store import schema as s
from alarmhub.store import webhooks as store
from alarmhub.store.engine import write_transaction
from tests.support.store_station import act, station
from tests.support.writer_beside import writer_address, writer_beside

pytestmark = pytest.mark.backends("sqlite", "postgresql")

SHOP, BANK = "700021", "700022"
KEY = Fernet(Fernet.generate_key())
DEADLINE_SECONDS = 30.0  # generous: a condition that never holds fails the test, not a slow one
RUN_SECONDS = 120.0  # a run that hangs (a wait nothing ends) fails, with where it waited


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    with station(tmp_path, {SHOP: "Corner Shop", BANK: "First Bank"}) as engine:
        yield engine


class Scripted(WebhookChannel):
    """The webhook channel whose sends answer from a script (by event id; then sent)."""

    def __init__(self, script: dict[int, list[delivery.Attempt]]) -> None:
        super().__init__(KEY)
        self.script = script
        self.sent: list[int] = []  # event ids, in the order attempted

    async def send(self, item: store.Claimed) -> delivery.Attempt:
        self.sent.append(item.event_id)
        answers = self.script.get(item.event_id, [])
        return answers.pop(0) if answers else delivery.sent(200)


States = dict[int, tuple[str, int, int | None, str | None]]


def publish(engine: Engine, account: str) -> int:
    def work(conn: Connection) -> int:
        events.publish(conn, kinds.ALARM_RAISED, account, {"account": account}, now_us())
        return events.newest(conn)

    return act(engine, work, queues=True)


def states(engine: Engine) -> States:
    """(state, attempts, last status, last error) of each delivery, by event id."""
    d = s.webhook_delivery.c
    with engine.connect() as conn:
        rows = conn.execute(
            select(d.event_id, d.state, d.attempts, d.last_status, d.last_error)
        ).all()
    return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}


async def until(engine: Engine, holds: Callable[[States], bool], what: str) -> States:
    """The deliveries' states once ``holds(states)`` is true (polled; failing only when it never
    is within DEADLINE_SECONDS)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_SECONDS
    while True:
        found = await asyncio.to_thread(states, engine)
        if holds(found):
            return found
        assert loop.time() < deadline, f"never happened: {what}; states {found}"
        await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def delivering(engine: Engine, channel: Scripted, tmp_path: Path) -> AsyncIterator[None]:
    """A worker delivering ``channel``'s deliveries; on SQLite with the node's writer beside it,
    which records their outcomes."""
    async with contextlib.AsyncExitStack() as stack:
        recorder = None
        if engine.dialect.name == "sqlite":
            address = stack.enter_context(writer_address())
            await stack.enter_async_context(writer_beside(engine, tmp_path, address))
            recorder = WriterRecords(address, 10.0)
            stack.push_async_callback(recorder.close)
        worker = DeliveryWorker(engine, channel, poll_seconds=0.05, recorder=recorder)
        await worker.start()
        stack.push_async_callback(worker.stop)
        yield


def test_permanent_failures_end_at_once_and_retries_hold_their_lane_in_order(
    engine: Engine, tmp_path: Path
) -> None:
    with write_transaction(engine) as conn:
        store.add(conn, KEY, "http://127.0.0.1:9/hook", [kinds.ALARM_RAISED], "", now_us())
    shop_first, bank_first = publish(engine, SHOP), publish(engine, BANK)
    shop_second, bank_second = publish(engine, SHOP), publish(engine, BANK)
    channel = Scripted(
        {
            shop_first: [delivery.failed("answered HTTP 410", 410)],
            bank_first: [delivery.retry("answered HTTP 503", 503)],
        }
    )

    async def run() -> None:
        async with delivering(engine, channel, tmp_path):
            held = await until(
                engine,
                lambda f: f[shop_second][0] == "delivered" and f[bank_first][1] == 1,
                "the shop's lane done, the bank's first delivery waiting for its retry",
            )
            assert held[shop_first] == ("failed", 1, 410, "answered HTTP 410")
            assert held[bank_first] == ("pending", 1, 503, "answered HTTP 503")
            assert held[bank_second][:2] == ("pending", 0)  # held back behind it
            await until(
                engine,
                lambda f: f[bank_second][0] == "delivered",
                "the bank's retry, then its second delivery",
            )

    asyncio.run(asyncio.wait_for(run(), RUN_SECONDS))
    assert [e for e in channel.sent if e in (bank_first, bank_second)] == [
        bank_first,
        bank_first,
        bank_second,
    ]
    assert channel.sent.count(shop_first) == 1  # failed for good: never tried again
    final = states(engine)
    assert final[bank_first] == ("delivered", 2, 200, None)
    assert final[shop_second][:2] == ("delivered", 1)


class FailingOnce:
    """The webhooks' recording as the writer does it, failing once, at its ``fail_at``-th
    step."""

    def __init__(self, fail_at: int) -> None:
        self.fail_at = fail_at
        self.steps = 0

    def __call__(self, conn: Connection, outcomes: Sequence[store.Outcome], now: int) -> None:
        self.steps += 1
        if self.steps == self.fail_at:
            raise RuntimeError("the disk said no")
        store.record(conn, outcomes, now)


@pytest.mark.backends("sqlite")
def test_a_recording_that_fails_is_handed_over_again_and_nothing_is_sent_twice(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer's recording fails once: what that transaction held is rolled back and handed
    over again at a later turn, and every delivery is sent once and recorded as delivered."""
    failing = FailingOnce(fail_at=3)
    webhooks_store = recording.STORES[store.CHANNEL]
    monkeypatch.setitem(
        recording.STORES,
        store.CHANNEL,
        recording.Store(webhooks_store.decode, failing, webhooks_store.settle),
    )
    with write_transaction(engine) as conn:
        store.add(conn, KEY, "http://127.0.0.1:9/hook", [kinds.ALARM_RAISED], "", now_us())
    published = [publish(engine, account) for _ in range(6) for account in (SHOP, BANK)]
    channel = Scripted({})

    async def run() -> None:
        async with delivering(engine, channel, tmp_path):
            await until(
                engine,
                lambda f: all(f[e][0] == "delivered" for e in published),
                "every delivery recorded as delivered",
            )

    asyncio.run(asyncio.wait_for(run(), RUN_SECONDS))
    assert sorted(channel.sent) == sorted(published)  # each sent once
    assert failing.steps > len(published)  # the failed step, and what it rolled back, again
    assert {states(engine)[e][:2] for e in published} == {("delivered", 1)}
