"""The sender's side of the notifications' queue, on SQLite and PostgreSQL: each lane (a contact's
channel) hands out its first queued message only, so a recipient's messages go in order; a
message waiting for its retry holds back its own lane alone; a failure for good lets the next
go; a lane claimed by one node is not handed to another; a failed message can be resent; in a
storm a recipient gets at most the rate a minute, then one digest of every message left, each
of them marked with it (recorded again, as the writer may be when its answer is lost: still one).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

from alarmhub.core import digest
from alarmhub.core import notifications as rules
from alarmhub.core.errors import ProvisioningError
from alarmhub.core.response import Contact, Phone
from alarmhub.store import contacts, notifications
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


def taken(
    engine: Engine, now_us: int, claim: tuple[str, int] | None = None
) -> list[sending.Claimed]:
    """The sends taken now (one a lane), settling the idle lanes."""
    with write_transaction(engine) as conn:
        chosen = sending.due_lanes(conn, now_us, 100, claim=claim)
        chains, idle = sending.take(conn, now_us, chosen, 100)
        sending.settle(conn, idle, now_us=now_us)
    assert all(len(chain) == 1 for chain in chains)
    return sorted((chain[0] for chain in chains), key=lambda m: (m.to, m.delivery_id))


def take(
    engine: Engine, now_us: int, claim: tuple[str, int] | None = None
) -> list[tuple[str, int]]:
    """(recipient, id) of the messages taken now, settling the idle lanes."""
    return [(m.to, m.delivery_id) for m in taken(engine, now_us, claim)]


def sent(notification_id: int) -> sending.Outcome:
    return sending.Outcome(notification_id, rules.SENT, 1)


def done(engine: Engine, now_us: int, *outcomes: sending.Outcome) -> None:
    with write_transaction(engine) as conn:
        sending.record(conn, outcomes, now_us)
        lane = s.delivery_lane.c
        ids = conn.execute(select(lane.lane_id).where(lane.channel == rules.LANES)).scalars()
        sending.settle(conn, list(ids), now_us=now_us)


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
    done(engine, T0 + 2 * SECOND, sent(alice),
         sending.Outcome(bob, rules.QUEUED, 1, "connection refused", T0 + 12 * SECOND))  # fmt: skip
    # Alice's second message goes; Bob's waits behind his first, which waits for its retry
    second = take(engine, T0 + 3 * SECOND)
    assert [to for to, _ in second] == ["alice@example.com"]
    assert second[0][1] > alice
    done(engine, T0 + 4 * SECOND, sent(second[0][1]))
    assert take(engine, T0 + 12 * SECOND) == [("bob@example.com", bob)]
    done(engine, T0 + 13 * SECOND, sending.Outcome(bob, rules.FAILED, 2, "550 no such user"))
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
    done(engine, T0 + SECOND, sending.Outcome(message, rules.FAILED, 1, "x\r\nInjected: y"))
    assert states(engine)[0] == ("failed", 1, "x Injected: y")
    with write_transaction(engine) as conn:
        with pytest.raises(ProvisioningError, match="queued already"):
            sending.resend(conn, message + 1, T0)
        sending.resend(conn, message, T0 + 2 * SECOND)
    assert states(engine)[0] == ("queued", 0, None)
    assert (to, message) in take(engine, T0 + 2 * SECOND)


def test_a_storm_is_sent_at_most_the_rate_a_minute_then_as_one_digest(engine: Engine) -> None:
    storm = digest.RATE + 4
    for n in range(storm):
        route(engine, [(ACCOUNT, "E130", f"{n + 1:03d}")], T0 + n * SECOND)
    now = T0 + storm * SECOND
    singles = []
    for _ in range(digest.RATE - 1):  # Alice's first ones go one by one
        alice = [m for m in taken(engine, now) if m.to == "alice@example.com"]
        assert len(alice) == 1 and not alice[0].collapsed
        singles.append(alice[0].delivery_id)
        done(engine, now, sent(alice[0].delivery_id))
        now += SECOND
    # the window's last send: the digest of the rest
    (message,) = [m for m in taken(engine, now) if m.to == "alice@example.com"]
    left = storm - len(singles)
    assert len(message.collapsed) == left and message.collapsed[0] == message.delivery_id
    assert f"{ACCOUNT}: {left} events from " in message.subject
    for zone in range(digest.RATE + 1, storm + 1):
        assert f"Zone {zone:03d}" in message.body or f"{zone:03d}" in message.body
    outcome = sending.Outcome(message.delivery_id, rules.SENT, 1, sent=message)
    done(engine, now, outcome)
    # recorded again as the writer is handed it (a frame's fields), its answer lost: no change
    assert sending.Outcome.from_wire(orjson.loads(orjson.dumps(outcome))) == outcome
    done(engine, now + SECOND, sending.Outcome.from_wire(orjson.loads(orjson.dumps(outcome))))
    with engine.connect() as conn:
        log = notifications.log(conn, ACCOUNT)
    alice_log = [r for r in log if r["to"] == "alice@example.com"]
    (made,) = [r for r in alice_log if r["kind"] == digest.KIND]
    assert made["state"] == rules.SENT
    carried = [r for r in alice_log if r["digest_id"] == made["id"]]
    assert sorted(r["id"] for r in carried) == sorted(message.collapsed)
    assert all(r["state"] == rules.SENT for r in carried)
    assert all(r["state"] == rules.SENT and r["digest_id"] is None
               for r in alice_log if r["id"] in singles)  # fmt: skip
    # every one of her events is accounted for: sent alone or within the digest
    assert len(singles) + len(carried) == storm
    # her window is full: a new message waits till a minute after her first send
    route(engine, [(ACCOUNT, "E130", "099")], now + SECOND)
    assert "alice@example.com" not in {to for to, _ in take(engine, now + 2 * SECOND)}
    reopens = T0 + storm * SECOND + digest.WINDOW_SECONDS * SECOND + SECOND
    assert "alice@example.com" in {to for to, _ in take(engine, reopens)}
    with write_transaction(engine) as conn:  # resent, a carried message goes on its own
        sending.resend(conn, message.collapsed[-1], reopens)
        again = notifications.log(conn, ACCOUNT)
    assert next(r for r in again if r["id"] == message.collapsed[-1])["digest_id"] is None


def test_a_digest_that_fails_for_now_is_made_again_with_what_came_since(engine: Engine) -> None:
    for n in range(digest.RATE + 2):
        route(engine, [(ACCOUNT, "E130", f"{n + 1:03d}")], T0)
    now = T0 + SECOND
    with write_transaction(engine) as conn:  # sends in the window: it allows one more
        for _ in range(digest.RATE - 1):
            conn.execute(s.notification.insert().values(
                contact_id=1, account_number=ACCOUNT, kind="alarm", channel="email",
                recipient="alice@example.com", body="", state=rules.SENT, attempts=1,
                due_us=T0, queued_us=T0, sent_us=T0 - 30 * SECOND))  # fmt: skip
    (first,) = [m for m in taken(engine, now) if m.to == "alice@example.com"]
    assert len(first.collapsed) == digest.RATE + 2
    done(engine, now, sending.Outcome(first.delivery_id, rules.QUEUED, 1, "451 later",
                                      now + 2 * SECOND, sent=first))  # fmt: skip
    route(engine, [(ACCOUNT, "E130", "099")], now + SECOND)
    (again,) = [m for m in taken(engine, now + 3 * SECOND) if m.to == "alice@example.com"]
    assert again.delivery_id == first.delivery_id and again.attempts == 1
    assert len(again.collapsed) == digest.RATE + 3


def test_a_message_queued_for_a_contact_removed_since_is_still_sent(engine: Engine) -> None:
    route(engine, [(ACCOUNT, "E130", "004")], T0)
    with engine.connect() as conn:
        (alice,) = conn.execute(
            select(s.contact.c.contact_id).where(s.contact.c.name == "Alice")
        ).scalars()
    contacts.remove_contact(engine, ACCOUNT, alice)
    sent_to = take(engine, T0 + SECOND)
    assert [to for to, _ in sent_to] == ["alice@example.com", "bob@example.com"]
    done(engine, T0 + 2 * SECOND, *(sent(n) for _, n in sent_to))
    assert [state for state, _, _ in states(engine)] == ["sent", "sent"]
    route(engine, [(ACCOUNT, "E130", "005")], T0 + 3 * SECOND)  # nothing queued for her now
    assert [to for to, _ in take(engine, T0 + 4 * SECOND)] == ["bob@example.com"]
