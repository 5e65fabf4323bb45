"""The notify channel over the store, on SQLite and PostgreSQL: with no gateway set a message
waits (queued, its error saying so, no attempt counted), never dropped; a gateway set meanwhile
is read at the next take and used (here one that is down: the attempt is counted and retried on
the shared schedule); a real SMTP server then takes the message, rendered as it was taken and
kept with its outcome."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import select
from sqlalchemy.engine import Engine

from alarmhub.core import delivery
from alarmhub.core import notifications as rules
from alarmhub.core.response import Contact, Phone
from alarmhub.outbound.notify import NotifyChannel
from alarmhub.store import contacts, lanes, notifications
from alarmhub.store import notification_sending as sending
from alarmhub.store import schema as s
from alarmhub.store.engine import write_transaction
from tests.support.processes import free_port
from tests.support.smtp_server import SmtpServer
from tests.support.store_station import SECOND, T0, route, station
from tests.support.webhook_receiver import closed_port

pytestmark = pytest.mark.backends("sqlite", "postgresql")

ACCOUNT = "700013"
KEY = Fernet(Fernet.generate_key())


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    with station(tmp_path, {ACCOUNT: "Acme Widgets"}, ()) as engine:
        contact = Contact(ACCOUNT, "Alice", (Phone("555-0100"),), "alice@example.com",
                          notify=("alarm",), notify_by=("email",))  # fmt: skip
        contacts.add_contact(engine, contact)
        yield engine


async def attempt(engine: Engine, channel: NotifyChannel, now: int) -> sending.Outcome:
    """Take the one message, send it, record how it went."""
    with engine.connect() as conn:
        chosen = lanes.choose(conn, rules.LANES, now, 10)
        chains, _ = channel.take(conn, now, chosen, 10, None)
    ((item,),) = chains
    tried = await channel.send(item)
    attempts = item.attempts + 1
    step = delivery.next_step(tried, attempts, lambda: 0.0)
    outcome = channel.outcome(item, attempts, tried, step, now)
    with write_transaction(engine) as conn:
        channel.record(conn, [outcome], now)
        channel.settle(conn, [item.lane_id])
    return outcome


def set_smtp(engine: Engine, port: int, at: int) -> None:
    with write_transaction(engine) as conn:
        notifications.set_smtp(conn, KEY, f"smtp://127.0.0.1:{port}", "alarms@example.com",
                               False, "", None, at)  # fmt: skip


def row(engine: Engine) -> tuple[str, int, str | None]:
    n = s.notification.c
    with engine.connect() as conn:
        found = conn.execute(select(n.state, n.attempts, n.last_error)).one()
    return (found.state, found.attempts, found.last_error)


def test_a_message_waits_for_its_gateway_then_goes_through_it(
    engine: Engine, tmp_path: Path
) -> None:
    asyncio.run(waits_then_goes(engine, tmp_path))


async def waits_then_goes(engine: Engine, tmp_path: Path) -> None:
    route(engine, [(ACCOUNT, "E130", "004")], T0)
    channel = NotifyChannel(KEY)
    waits = await attempt(engine, channel, T0)
    assert (waits.state, waits.error) == (rules.QUEUED, "no email gateway set")
    assert row(engine) == (rules.QUEUED, 0, "no email gateway set")
    set_smtp(engine, closed_port(), T0 + SECOND)  # read at the next take
    down = await attempt(engine, channel, T0 + 10 * SECOND)
    assert down.state == rules.QUEUED and down.attempts == 1
    assert row(engine)[:2] == (rules.QUEUED, 1) and "no email gateway" not in str(row(engine)[2])
    smtp = SmtpServer(tmp_path / "smtp", free_port()).start()
    try:
        set_smtp(engine, smtp.port, T0 + 20 * SECOND)
        assert (await attempt(engine, channel, T0 + 60 * SECOND)).state == rules.SENT
        await channel.close()
        (arrived,) = smtp.arrived()
    finally:
        smtp.stop()
    assert arrived.rcpt_tos == ["alice@example.com"]
    assert row(engine) == (rules.SENT, 2, None)
    with engine.connect() as conn:  # rendered as it was taken, and kept: the log shows it
        (logged,) = notifications.log(conn)
        kept = conn.execute(select(s.notification.c.body, s.notification.c.html)).one()
    assert logged["subject"].startswith(f"{ACCOUNT} BURGLARY")
    assert arrived.message["Subject"] == logged["subject"]
    assert "Acme Widgets" in kept.body and kept.html.startswith("<html>")
