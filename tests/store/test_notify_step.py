"""The plan step ``notify`` done by messaging contacts from the alarm screen, in the store, on
both databases (decisions sections 8 and 13): whom it offers and chooses by default (the
subscribers of the alarm's kind, else the call list's reachable contacts), the messages queued
in the step's transaction (rendered as every message, each in its lane) with the step recorded
done naming whom and by what channel, the refusals that change nothing, an alarm's messages, and
the failed messages with their resend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from alarmhub.core import notifications as rules
from alarmhub.core.account import Account
from alarmhub.core.errors import ActionRefused
from alarmhub.core.response import Contact, Phone, PhoneKind
from alarmhub.core.signal import Signal, SignalFields
from alarmhub.store import contacts as contact_store
from alarmhub.store import (
    handling,
    lanes,
    notification_sending,
    notify_operator,
    operations,
    operators,
    plans,
    provisioning,
    queries,
)
from alarmhub.store import notification_rendering as rendering
from alarmhub.store import schema as s
from alarmhub.store.commit import SignalInsert, commit_signals
from alarmhub.store.engine import open_engine, write_transaction
from alarmhub.store.routing import SignalRouting
from tests.support.database import database_url

pytestmark = pytest.mark.backends("sqlite", "postgresql")

SECOND = 1_000_000
T0 = 1_800_000_000 * SECOND
DNIS, ACCOUNT, OTHER = "D1", "700012", "700013"
BURGLARY, AC_LOSS = "E130", "E301"
NOTIFY_STEP = 4  # the shipped burglary plan: premises, call list, police, notify
N = s.notification.c


class People:
    ann = bob = cara = stranger = 0


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = open_engine(database_url(tmp_path, "notify"))
    provisioning.add_dnis(engine, DNIS, "70####")
    provisioning.add_account(engine, Account(ACCOUNT, "Acme Widgets"))
    provisioning.add_account(engine, Account(OTHER, "Beta Books"))
    mobile = (Phone("+15550102", PhoneKind.MOBILE),)
    People.ann = contact_store.add_contact(
        engine,
        Contact(ACCOUNT, "Ann Able", (Phone("555-0101", PhoneKind.HOME),), email="ann@example.com"),
    )
    People.bob = contact_store.add_contact(
        engine, Contact(ACCOUNT, "Bob Baker", mobile, notify=("alarm",), notify_by=("sms",))
    )
    People.cara = contact_store.add_contact(
        engine, Contact(ACCOUNT, "Cara", (Phone("555-0103", PhoneKind.HOME),))
    )
    People.stranger = contact_store.add_contact(
        engine, Contact(OTHER, "Dan", (), email="dan@example.com")
    )
    for code in ("001", "002"):
        operators.add_operator(engine, code, f"Op {code}", "operator", "correct horse")
        with write_transaction(engine) as conn:
            handling.sign_on(conn, code, T0, receiving=False)
    yield engine
    engine.dispose()


def taken(engine: Engine, code: str) -> int:
    """An alarm of ``code`` on zone 004 of ACCOUNT, taken by operator 001."""
    signal = Signal("site", "rx", SignalFields(DNIS, "12", code, "01", "004"), "t", T0)
    with write_transaction(engine) as conn:
        (stored,) = commit_signals(conn, SignalInsert(engine), [signal], 3600 * SECOND)
    with write_transaction(engine) as conn:
        SignalRouting(engine, 1000, 2).route(conn, T0)
        row = queries.alarm(conn, stored.incident_number)
    if row is None or row["opr"] != "001":
        operations.run(engine, lambda c: handling.take(c, "001", stored.incident_number, T0))
    return stored.incident_number


def choices(engine: Engine, alarm_id: int) -> dict[str, Any]:
    with engine.connect() as conn:
        row = queries.alarm(conn, alarm_id)
        assert row is not None
        return notify_operator.choices(conn, row)


def notify(alarm_id: int, recipients: Any, code: str = "001", position: int = NOTIFY_STEP) -> Any:
    return lambda c: notify_operator.notify(c, code, alarm_id, position, recipients, T0 + SECOND)


def refused(engine: Engine, work: Any) -> ActionRefused:
    with pytest.raises(ActionRefused) as caught:
        operations.run(engine, work)
    return caught.value


def shown(engine: Engine, alarm_id: int) -> list[tuple[str, str, str, str]]:
    with engine.connect() as conn:
        found = notify_operator.for_alarm(conn, ACCOUNT, alarm_id)
    return [(m["name"], m["channel"], m["to"], m["state"]) for m in found]


def test_the_step_messages_whom_the_operator_picks_and_is_recorded_done(engine: Engine) -> None:
    alarm_id = taken(engine, BURGLARY)
    # Bob subscribes to alarms: routing messaged him already, and he is the default
    assert shown(engine, alarm_id) == [("Bob Baker", "sms", "+15550102", "queued")]
    offered = choices(engine, alarm_id)
    assert offered["kind"] == rules.ALARM
    assert [
        (c["name"], c["chosen"], c["channels"], c["subscribed"]) for c in offered["contacts"]
    ] == [
        ("Ann Able", False, [], False),
        ("Bob Baker", True, ["sms"], True),
    ]  # fmt: skip  (Cara has neither an e-mail address nor a mobile)

    note = operations.run(
        engine,
        notify(alarm_id, [(People.ann, ["email"]), (People.bob, ["sms"]), (People.ann, ["email"])]),
    )  # Ann named twice: messaged once
    assert note == "MESSAGED Ann Able BY EMAIL; Bob Baker BY SMS"
    bob = ("Bob Baker", "sms", "+15550102", "queued")
    ann = ("Ann Able", "email", "ann@example.com", "queued")
    assert shown(engine, alarm_id) == [bob, ann, bob]  # newest first
    with engine.connect() as conn:
        queued = conn.execute(select(s.notification).where(N.channel == "email")).one()
        email = dict(queued._mapping)  # unrendered: rendered as the sender takes it
        sent = rendering.render_rows(conn, [queued])[queued.notification_id]
        shown_subjects = {m["subject"] for m in notify_operator.for_alarm(conn, ACCOUNT, alarm_id)
                          if m["channel"] == "email"}  # fmt: skip
        row = queries.alarm(conn, alarm_id)
        assert row is not None
        plan = plans.plan_view(conn, row)
        history = conn.execute(
            select(s.history.c.hist_text).where(s.history.c.hist_text.like("%NOTIFY%"))
        ).scalars().all()  # fmt: skip
        lane_ids = lanes.ids(conn, rules.LANES, [(People.ann, "email")])
    assert (email["subject"], email["body"], email["hist_text"]) == ("", "", row["hist_text"])
    assert sent.subject == f"{ACCOUNT} {row['hist_text']}" and shown_subjects == {sent.subject}
    assert "Acme Widgets" in sent.body and email["incident_number"] == alarm_id
    assert (email["queued_us"], email["kind"]) == (T0 + SECOND, rules.ALARM)
    assert len(lane_ids) == 1  # its lane is fed: the sender finds it
    step = plan["steps"][NOTIFY_STEP - 1]
    assert (step["kind"], step["done"]) == ("notify", True)
    assert len(history) == 1 and "BOB BAKER BY SMS" in history[0].upper()

    again = refused(engine, notify(alarm_id, [(People.ann, ["email"])]))
    assert (again.code, again.status) == ("OPS-STEP", 409)


def test_refusals_change_nothing(engine: Engine) -> None:
    alarm_id = taken(engine, BURGLARY)

    def count() -> int:
        with engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(s.notification)).scalar_one())

    before = count()
    cases = [
        (notify(alarm_id, [(People.ann, ["email"])], code="002"), "OPS-NOTYOURS"),
        (notify(alarm_id, [(People.ann, ["email"])], position=1), "OPS-STEP"),
        (notify(alarm_id, [(People.stranger, ["email"])]), "OPS-CONTACT"),
        (notify(alarm_id, [(People.ann, ["email"]), (People.ann, ["sms"])]), "OPS-NOTIFY"),
        (notify(alarm_id, [(People.bob, ["fax"])]), "OPS-NOTIFY"),
        (notify(alarm_id, []), "OPS-NOTIFY"),
    ]
    codes = [refused(engine, work).code for work, _ in cases]
    assert codes == [want for _, want in cases]
    assert count() == before


def test_without_subscribers_the_call_list_is_chosen(engine: Engine) -> None:
    alarm_id = taken(engine, AC_LOSS)  # a trouble: Bob subscribes to alarms only
    offered = choices(engine, alarm_id)
    assert offered["kind"] == rules.TROUBLE
    assert [(c["name"], c["channels"]) for c in offered["contacts"] if c["chosen"]] == [
        ("Ann Able", ["email"]), ("Bob Baker", ["sms"]),
    ]  # fmt: skip


def test_a_failed_message_is_listed_and_resent(engine: Engine) -> None:
    alarm_id = taken(engine, BURGLARY)
    with engine.connect() as conn:
        (bob,) = notify_operator.for_alarm(conn, ACCOUNT, alarm_id)
    failure = notification_sending.Outcome(bob["id"], "failed", 1, "SMS gateway said 400")
    with write_transaction(engine) as conn:
        notification_sending.record(conn, [failure], T0)
    with engine.connect() as conn:
        listed, count = notify_operator.failed(conn)
    assert count == 1
    assert [(m["id"], m["name"], m["state"], m["attempts"], m["last_error"]) for m in listed] == [
        (bob["id"], "Bob Baker", "failed", 1, "SMS gateway said 400"),
    ]  # fmt: skip
    with write_transaction(engine) as conn:
        notification_sending.resend(conn, bob["id"], T0 + SECOND)
    with engine.connect() as conn:
        assert notify_operator.failed(conn) == ([], 0)
    assert shown(engine, alarm_id) == [("Bob Baker", "sms", "+15550102", "queued")]
