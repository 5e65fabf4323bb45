"""The writer records what the delivery process hands it (store/recording.py, through
outbound/writer_records.py), on SQLite, where the node's writer holds the one write lock: a
writer listening on the node's Unix socket records each outcome and settles its lane, and its
answer names what committed; a request it cannot read is answered so, and it goes on committing
signals; many outcomes go in several requests; with the writer gone a request fails
(``NotRecorded``), and the next one reaches the writer started again at the same address.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import select
from sqlalchemy.engine import Connection, Engine

from alarmhub.core import events as kinds
from alarmhub.core import webhooks as rules
from alarmhub.core.signal import Signal, SignalFields
from alarmhub.outbound import writer_records
from alarmhub.outbound.delivery import Recorded
from alarmhub.outbound.writer_records import NotRecorded, WriterRecords
from alarmhub.store import events
from alarmhub.store import schema as s
from alarmhub.store import webhooks as store
from alarmhub.store.engine import write_transaction
from tests.support.store_station import DNIS, T0, act, station
from tests.support.writer_beside import writer_address, writer_beside

pytestmark = pytest.mark.backends("sqlite")

ACCOUNT = "700012"
KEY = Fernet(Fernet.generate_key())


def deliveries(engine: Engine, count: int) -> tuple[list[store.Claimed], int]:
    """``count`` webhook deliveries of one account, taken as the worker takes them; their lane."""
    with write_transaction(engine) as conn:
        store.add(conn, KEY, "http://127.0.0.1:9/hook", (kinds.ALARM_RAISED,), "", T0)

    def publish(conn: Connection) -> None:
        events.publish(conn, kinds.ALARM_RAISED, ACCOUNT, {"account": ACCOUNT}, T0)

    for _ in range(count):
        act(engine, publish, queues=True)
    with engine.connect() as conn:
        chosen = store.due_lanes(conn, T0, 10)
        [chain] = store.take(conn, KEY, T0, chosen, 10).chains
    return chain, chosen[0].lane_id


def states(engine: Engine) -> list[tuple[str, int]]:
    d = s.webhook_delivery.c
    with engine.connect() as conn:
        rows = conn.execute(select(d.state, d.attempts).order_by(d.delivery_id)).all()
    return [(r.state, r.attempts) for r in rows]


def sent(item: store.Claimed) -> tuple[int, store.Outcome]:
    return item.delivery_id, store.Outcome(item.delivery_id, rules.DELIVERED, 1, 200, None, None)


def signal(zone: str) -> Signal:
    return Signal("site", "rx", SignalFields(DNIS, ACCOUNT[2:], "E130", "01", zone), "t", T0)


@pytest.fixture
def address() -> Iterator[str]:
    with writer_address() as path:
        yield path


def test_the_writer_records_what_it_is_handed_and_names_what_committed(
    tmp_path: Path, address: str
) -> None:
    with station(tmp_path, {ACCOUNT: "Acme Widgets"}) as engine:
        (first, second), lane_id = deliveries(engine, 2)

        async def scenario() -> tuple[Recorded, str]:
            records = WriterRecords(address, 10.0)
            async with writer_beside(engine, tmp_path, address) as writer:
                done = Recorded()
                await records.record(store.CHANNEL, [sent(first)], [lane_id], done)
                with pytest.raises(NotRecorded) as refused:
                    await records.record("pigeon post", [sent(second)], [], Recorded())
                await writer.submit(signal("001"))  # the writer goes on
                await records.close()
            return done, str(refused.value)

        done, refused = asyncio.run(scenario())
        assert done.outcomes == {first.delivery_id} and done.lanes == {lane_id}
        assert "pigeon post" in refused
        # the first delivered, the second pending (and the signal's alarm's, routed since)
        assert states(engine) == [(rules.DELIVERED, 1), (rules.PENDING, 0), (rules.PENDING, 0)]


def test_with_the_writer_gone_a_request_fails_and_the_next_reaches_its_successor(
    tmp_path: Path, address: str
) -> None:
    with station(tmp_path, {ACCOUNT: "Acme Widgets"}) as engine:
        (first, second), lane_id = deliveries(engine, 2)

        async def scenario() -> tuple[str, Recorded]:
            records = WriterRecords(address, 10.0)
            async with writer_beside(engine, tmp_path, address):
                await records.record(store.CHANNEL, [sent(first)], [], Recorded())
            # its loop ended, its socket with it
            with pytest.raises(NotRecorded) as gone:
                await records.record(store.CHANNEL, [sent(second)], [lane_id], Recorded())
            done = Recorded()
            async with writer_beside(engine, tmp_path, address):  # started again
                await records.record(store.CHANNEL, [sent(second)], [lane_id], done)
                await records.close()
            return str(gone.value), done

        gone, done = asyncio.run(scenario())
        assert "closed" in gone or "not reachable" in gone, gone
        assert done.outcomes == {second.delivery_id} and done.lanes == {lane_id}
        assert states(engine) == [(rules.DELIVERED, 1), (rules.DELIVERED, 1)]


def test_many_outcomes_go_in_several_requests_each_recorded_once(
    tmp_path: Path, address: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer_records, "REQUEST_OUTCOMES", 2)
    requests: list[tuple[int, int]] = []  # (outcomes, lanes) of each request sent
    request = WriterRecords._request

    async def counted(self: WriterRecords, channel: str, ended: Any, lane_ids: Any,
                      done: Recorded) -> None:  # fmt: skip
        requests.append((len(ended), len(lane_ids)))
        await request(self, channel, ended, lane_ids, done)

    monkeypatch.setattr(WriterRecords, "_request", counted)
    with station(tmp_path, {ACCOUNT: "Acme Widgets"}) as engine:
        chain, lane_id = deliveries(engine, 5)

        async def scenario() -> Recorded:
            records = WriterRecords(address, 10.0)
            done = Recorded()
            async with writer_beside(engine, tmp_path, address):
                await records.record(store.CHANNEL, [sent(item) for item in chain], [lane_id], done)
                await records.close()
            return done

        done = asyncio.run(scenario())
        assert done.outcomes == {item.delivery_id for item in chain}
        assert done.lanes == {lane_id}
        assert states(engine) == [(rules.DELIVERED, 1)] * 5
        assert requests == [(2, 0), (2, 0), (1, 0), (0, 1)]
