"""The sender's side of the notifications' queue, on SQLite and PostgreSQL: each lane (a contact's
channel) hands out its first queued message only, so a recipient's messages go in order; a
message waiting for its retry holds back its own lane alone; a failure for good lets the next
go; a lane claimed by one node is not handed to another; a failed message can be resent.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

from alarmhub.core import notifications as rules
from alarmhub.core.errors import ProvisioningError
from alarmhub.core.response import Contact, Phone
from alarmhub.store import contacts
from alarmhub.store import notification_sending as sending
from alarmhub.store import schema as s
from alarmhub.store.engine import write_transaction
from tests.support.store_station import SECOND, T0, route, station

pytestmark = pytest.mark.backends("sqlite", "postgresql")

ACCOUNT = "700012"
LEASE = 60 * SECOND


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    with station(tmp_path, {ACCOUNT: "Acme Widgets"}, ()) as engine:
        for name in ("Alice", "Bob"):
            contact = Contact(ACCOUNT, name, (Phone("555-0100"),), f"{name.lower()}@example.com",
                              notify=("alarm",), notify_by=("email",))  # fmt: skip
            contacts.add_contact(engine, contact)
        yield engine


def take(
    engine: Engine, now_us: int, claim: tuple[str, int] | None = None
) -> list[tuple[str, int]]:
    """(recipient, id) of the messages taken now, settling the idle lanes."""
    with write_transaction(engine) as conn:
        chosen = sending.due_lanes(conn, now_us, 100, claim=claim)
        taken = sending.take(conn, now_us, chosen)
        sending.settle(conn, taken.idle)
    return sorted((m.to, m.notification_id) for m in taken.messages)


def done(engine: Engine, now_us: int, *outcomes: sending.Outcome) -> None:
    with write_transaction(engine) as conn:
        sending.record(conn, outcomes, now_us)
        lane = s.delivery_lane.c
        ids = conn.execute(select(lane.lane_id).where(lane.channel == rules.LANES)).scalars()
        sending.settle(conn, list(ids))


def states(engine: Engine) -> list[tuple[str, int, str | None]]:
    n = s.notification.c
    with engine.connect() as conn:
        rows = conn.execute(
            select(n.state, n.attempts, n.last_error).order_by(n.notification_id)
        ).all()
    return [tuple(r) for r in rows]  # type: ignore[misc]


def test_each_recipient_gets_its_messages_in_order_one_at_a_time(engine: Engine) -> None:
    route(engine, [(ACCOUNT, "E130", "004")], T0)
    route(engine, [(ACCOUNT, "E130", "005")], T0 + SECOND)
    first = take(engine, T0 + SECOND)
    assert [to for to, _ in first] == ["alice@example.com", "bob@example.com"]
    alice, bob = (n for _, n in first)
    done(engine, T0 + 2 * SECOND, sending.Outcome(alice, sent=True),
         sending.Outcome(bob, sent=False, error="connection refused",
                         next_attempt_us=T0 + 12 * SECOND))  # fmt: skip
    # Alice's second message goes; Bob's waits behind his first, which waits for its retry
    second = take(engine, T0 + 3 * SECOND)
    assert [to for to, _ in second] == ["alice@example.com"]
    assert second[0][1] > alice
    done(engine, T0 + 4 * SECOND, sending.Outcome(second[0][1], sent=True))
    assert take(engine, T0 + 12 * SECOND) == [("bob@example.com", bob)]
    done(engine, T0 + 13 * SECOND, sending.Outcome(bob, sent=False, error="550 no such user"))
    # failed for good: his next message goes
    assert [to for to, _ in take(engine, T0 + 14 * SECOND)] == ["bob@example.com"]
    assert ("failed", 2, "550 no such user") in states(engine)
    assert ("sent", 1, None) in states(engine)


def test_a_lane_claimed_by_one_node_is_not_handed_to_another(engine: Engine) -> None:
    route(engine, [(ACCOUNT, "E130", "004")], T0)
    mine = take(engine, T0, claim=("node-a", LEASE))
    assert len(mine) == 2
    assert take(engine, T0 + SECOND, claim=("node-b", LEASE)) == []
    with write_transaction(engine) as conn:
        sending.release(conn, "node-a")
    assert take(engine, T0 + 2 * SECOND, claim=("node-b", LEASE)) == mine


def test_a_failed_message_is_resent_from_its_first_attempt(engine: Engine) -> None:
    route(engine, [(ACCOUNT, "E130", "004")], T0)
    (to, message), _ = take(engine, T0)
    done(engine, T0 + SECOND, sending.Outcome(message, sent=False, error="x\r\nInjected: y"))
    assert states(engine)[0] == ("failed", 1, "x Injected: y")
    with write_transaction(engine) as conn:
        with pytest.raises(ProvisioningError, match="queued already"):
            sending.resend(conn, message + 1, T0)
        sending.resend(conn, message, T0 + 2 * SECOND)
    assert states(engine)[0] == ("queued", 0, None)
    assert (to, message) in take(engine, T0 + 2 * SECOND)
