"""Webhook deliveries in the store, on SQLite and PostgreSQL: made in the transaction that
publishes each event (by routing's bulk insert and by an operator's action alike), only for the
webhooks that want the event and exist when it is published, never for a change rolled back;
handed out as chains in event order for each account, claimed by one node at a time on a shared
database; forgotten with their events.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import select, update
from sqlalchemy.engine import Connection, Engine

from alarmhub.core import events as kinds
from alarmhub.core import webhooks as rules
from alarmhub.store import events, handling, lanes
from alarmhub.store import schema as s
from alarmhub.store import webhooks as store
from alarmhub.store.engine import write_transaction
from alarmhub.store.routing import SignalRouting
from tests.support.database import statements_run
from tests.support.store_station import SECOND, T0, act, route, station

pytestmark = pytest.mark.backends("sqlite", "postgresql")

ACCOUNT = "700012"
OTHER = "700013"
KEY = Fernet(Fernet.generate_key())
LEASE = 60 * SECOND


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    with station(tmp_path, {ACCOUNT: "Acme Widgets", OTHER: "Beta Books"}) as engine:
        yield engine


def add(engine: Engine, *event_kinds: str, accounts: str = "") -> int:
    with write_transaction(engine) as conn:
        webhook_id, _ = store.add(conn, KEY, "http://127.0.0.1:9/hook", event_kinds, accounts, T0)
    return webhook_id


def publish(engine: Engine, account: str, kind: str = kinds.ALARM_RAISED, at_us: int = T0) -> int:
    """One event published as the station's actions do (under the counter's lock); its id."""

    def work(conn: Connection) -> int:
        events.publish(conn, kind, account, {"account": account}, at_us)
        return events.newest(conn)

    return act(engine, work, queues=True)


def made(engine: Engine) -> list[tuple[int, int, str, str]]:
    """(webhook id, event id, account, state) of every delivery, oldest first."""
    d = s.webhook_delivery.c
    with engine.connect() as conn:
        rows = conn.execute(
            select(d.webhook_id, d.event_id, d.account_number, d.state).order_by(d.delivery_id)
        )
        return [tuple(r) for r in rows]  # type: ignore[misc]


def take(
    engine: Engine,
    now_us: int,
    limit: int = 100,
    *,
    held: Collection[int] = (),
    claim: tuple[str, int] | None = None,
) -> list[list[int]]:
    """The event ids of what the worker takes (the due lanes, claimed with ``claim``, then
    their first deliveries), chain by chain."""
    with write_transaction(engine) as conn:
        chosen = store.due_lanes(conn, now_us, limit, held=held, claim=claim)
    with engine.connect() as conn:
        chains = store.take(conn, KEY, now_us, chosen, limit).chains
    return [[c.event_id for c in chain] for chain in chains]


def ended(engine: Engine, *outcomes: store.Outcome) -> None:
    """Attempts recorded and their lanes settled, as the worker does once a chain ends."""
    d = s.webhook_delivery.c
    with write_transaction(engine) as conn:
        store.record(conn, outcomes, T0)
        keys = conn.execute(
            select(d.webhook_id, d.account_number).where(
                d.delivery_id.in_([o.delivery_id for o in outcomes])
            )
        )
        store.settle(conn, lanes.ids(conn, store.CHANNEL, keys))


def test_deliveries_made_with_the_event_for_the_webhooks_that_want_it(engine: Engine) -> None:
    before = publish(engine, ACCOUNT)  # no webhook yet: none is made later either
    raised = add(engine, kinds.ALARM_RAISED)
    ours = add(engine, kinds.ALARM_RAISED, kinds.ALARM_TAKEN, accounts="700013")
    removed = add(engine, kinds.ALARM_RAISED)
    with write_transaction(engine) as conn:
        store.remove(conn, removed, T0)
    first = publish(engine, ACCOUNT)
    second = publish(engine, OTHER)
    taken = publish(engine, OTHER, kinds.ALARM_TAKEN)
    publish(engine, ACCOUNT, kinds.ALARM_RESOLVED)  # nobody's
    assert before < first
    assert made(engine) == [
        (raised, first, ACCOUNT, "pending"),
        (raised, second, OTHER, "pending"),
        (ours, second, OTHER, "pending"),
        (ours, taken, OTHER, "pending"),
    ]


def test_routing_and_operators_make_deliveries_and_a_rollback_makes_none(engine: Engine) -> None:
    routing = SignalRouting(engine, 1000, 2)  # its cache of the webhooks: none yet
    route(engine, [(OTHER, "E130", "004")], T0, routing)
    hook = add(engine, *kinds.KINDS)
    with engine.connect() as conn:
        before = events.newest(conn)
    (burglary,) = route(engine, [(ACCOUNT, "E130", "004")], T0, routing)
    act(engine, lambda c: handling.sign_on(c, "001", T0, receiving=False), queues=True)
    act(engine, lambda c: handling.take(c, "001", burglary, T0 + SECOND), queues=True)

    def rolled_back(conn: Connection) -> None:
        events.publish(conn, kinds.ALARM_RAISED, OTHER, {"account": OTHER}, T0)
        raise RuntimeError("refused after the event was written")

    with pytest.raises(RuntimeError), write_transaction(engine) as conn:
        rolled_back(conn)
    with engine.connect() as conn:
        published = [(e.event_id, e.kind) for e in events.after(conn, before, 100)]
    assert [k for _, k in published] == [kinds.ALARM_RAISED, kinds.ALARM_TAKEN]
    assert made(engine) == [(hook, e, ACCOUNT, "pending") for e, _ in published]


def test_chains_in_event_order_waiting_behind_a_retry(engine: Engine) -> None:
    add(engine, kinds.ALARM_RAISED)
    a1, b1, a2, b2, a3 = (publish(engine, acc) for acc in (ACCOUNT, OTHER, ACCOUNT, OTHER, ACCOUNT))
    assert sorted(take(engine, T0)) == [[a1, a2, a3], [b1, b2]]
    assert take(engine, T0, limit=3) == [[a1, a2, a3]]
    first = delivery_of(engine, a1)
    # a1 failed: retried in 8 s
    ended(engine, store.Outcome(first, rules.PENDING, 1, 500, "answered HTTP 500", T0 + 8 * SECOND))
    assert take(engine, T0 + SECOND) == [[b1, b2]]
    assert take(engine, T0 + 9 * SECOND) == [[b1, b2], [a1, a2, a3]]
    held = lane_of(engine, OTHER)  # this node sends b's lane
    assert take(engine, T0 + 9 * SECOND, held=held) == [[a1, a2, a3]]
    ended(engine, store.Outcome(first, rules.DELIVERED, 2, 204, None, None))
    assert sorted(take(engine, T0 + 9 * SECOND)) == [[b1, b2], [a2, a3]]


def test_a_claim_holds_a_lane_for_one_node_until_settled_or_its_lease_ends(engine: Engine) -> None:
    add(engine, kinds.ALARM_RAISED)
    a1, a2 = publish(engine, ACCOUNT), publish(engine, ACCOUNT)
    b1 = publish(engine, OTHER)
    assert take(engine, T0, limit=1, claim=("n1", LEASE)) == [[a1]]
    assert take(engine, T0, claim=("n2", LEASE)) == [[b1]]  # the other node: what is left
    assert take(engine, T0, claim=("n2", LEASE)) == []
    ended(engine, store.Outcome(delivery_of(engine, a1), rules.DELIVERED, 1, 204, None, None))
    assert take(engine, T0, claim=("n2", LEASE)) == [[a2]]  # a's lane settled: free
    with write_transaction(engine) as conn:
        store.release(conn, "n1")  # not n1's any more: left alone
    assert take(engine, T0, claim=("n1", LEASE)) == []
    assert sorted(take(engine, T0 + LEASE + 1, claim=("n1", LEASE))) == [
        [a2],
        [b1],
    ]  # leases ran out


def test_a_failing_accounts_backlog_holds_back_no_other_and_is_not_read(engine: Engine) -> None:
    """Issue 35, 1 and 12: one account's 10,000 deliveries waiting for a retry; the others' are
    taken at once, and a turn reads the lanes that are due and their first deliveries, never
    the backlog: no statement on the deliveries when nothing else is due, two (a lane's first
    deliveries, and their bodies) when one other account's event is."""
    add(engine, kinds.TEST_STARTED)
    at = [(kinds.TEST_STARTED, ACCOUNT, {"account": ACCOUNT}, T0)] * 10_000
    act(engine, lambda c: events.publish_rows(c, [events.row(*e) for e in at]), queues=True)
    first = take(engine, T0, limit=10)
    assert len(first) == 1 and len(first[0]) == 10
    retry = T0 + 8 * SECOND
    ended(engine, store.Outcome(delivery_of(engine, first[0][0]), rules.PENDING, 1, 500,
                                "answered HTTP 500", retry))  # fmt: skip
    other = publish(engine, OTHER, kinds.TEST_STARTED)
    held = lane_of(engine, OTHER)
    with statements_run(engine, lambda sql: "webhook_delivery" in sql) as read:
        assert take(engine, T0 + 2 * SECOND, held=held) == []
    assert read == []
    with statements_run(engine, lambda sql: "webhook_delivery" in sql) as read:
        assert take(engine, T0 + SECOND) == [[other]]
    assert len(read) == 2
    # at its retry the failing account goes on from its first delivery, in order
    assert take(engine, retry, limit=5, held=held) == [first[0][:5]]


def test_deliveries_are_forgotten_with_their_events(engine: Engine) -> None:
    add(engine, kinds.ALARM_RAISED)
    old = publish(engine, ACCOUNT, at_us=T0)
    new = publish(engine, ACCOUNT, at_us=T0 + 6 * 24 * 3600 * SECOND)
    with write_transaction(engine) as conn:
        assert events.forget(conn, T0 + 7 * 24 * 3600 * SECOND + SECOND) == 1
    assert [e for _, e, _, _ in made(engine)] == [new]
    assert old < new
    assert lane_due(engine) == [T0 + 6 * 24 * 3600 * SECOND]  # due with what is left
    with write_transaction(engine) as conn:
        assert events.forget(conn, T0 + 14 * 24 * 3600 * SECOND) == 1
    assert lane_due(engine) == [None]  # nothing pending: never read


def lane_due(engine: Engine) -> list[int | None]:
    with engine.connect() as conn:
        return list(conn.execute(select(s.delivery_lane.c.due_us)).scalars())


def lane_of(engine: Engine, account: str) -> list[int]:
    """The lane of the (first) webhook and ``account``."""
    with engine.connect() as conn:
        hook = conn.execute(select(s.webhook.c.webhook_id)).scalars().first()
        assert hook is not None
        return lanes.ids(conn, store.CHANNEL, [(hook, account)])


def delivery_of(engine: Engine, event_id: int) -> int:
    d = s.webhook_delivery.c
    with engine.connect() as conn:
        return int(conn.execute(select(d.delivery_id).where(d.event_id == event_id)).scalar_one())


def test_a_removed_webhook_is_handed_nothing(engine: Engine) -> None:
    hook = add(engine, kinds.ALARM_RAISED)
    publish(engine, ACCOUNT)
    with write_transaction(engine) as conn:
        store.remove(conn, hook, T0)
        conn.execute(update(s.webhook_delivery).values(state=rules.PENDING))  # even if pending
    assert take(engine, T0) == []
