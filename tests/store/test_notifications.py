"""Notifications in the store, on SQLite and PostgreSQL: routing, supervision and a test's start
and end queue a message to exactly the contacts subscribed to its kind, by each channel they
chose, each in its lane, unrendered there (no name, description nor template is read on the
signal path) and rendered as the sender takes it (the account's name and time zone, else the
station's, the zone's description, the station's templates); signals on test notify nobody;
nothing is read or written when nobody subscribes; the log lists the messages newest first; a
gateway's secret is encrypted and never shown; a station's templates are checked, used and
reset.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import select
from sqlalchemy.engine import Engine

from alarmhub import secret_key
from alarmhub.core import events as kinds
from alarmhub.core import notifications as rules
from alarmhub.core import schedules as schedule_rules
from alarmhub.core.errors import ProvisioningError
from alarmhub.core.response import Contact, Phone, PhoneKind, Zone
from alarmhub.store import contacts, events, on_test, operations, response, schedule_data
from alarmhub.store import notification_rendering as rendering
from alarmhub.store import notifications as store
from alarmhub.store import schema as s
from alarmhub.store.engine import write_transaction
from alarmhub.store.routing import SignalRouting
from alarmhub.store.supervision import Supervision
from tests.support.database import statements_run
from tests.support.store_station import MINUTE, SECOND, T0, act, route, station

pytestmark = pytest.mark.backends("sqlite", "postgresql")

ACCOUNT = "700012"
OTHER = "700013"
KEY = Fernet(Fernet.generate_key())
N = s.notification.c


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    with station(tmp_path, {ACCOUNT: "Acme Widgets", OTHER: "Beta Books"}, ()) as engine:
        response.set_zone(engine, Zone(ACCOUNT, "004", "Back door"))
        yield engine


def subscribe(
    engine: Engine, name: str, notify: tuple[str, ...], by: tuple[str, ...], account: str = ACCOUNT
) -> int:
    contact = Contact(
        account, name, (Phone("+15550100" + str(len(name)), PhoneKind.MOBILE),),
        email=f"{name.lower()}@example.com", notify=notify, notify_by=by,
    )  # fmt: skip
    return contacts.add_contact(engine, contact)


def stored(engine: Engine) -> list[dict[str, Any]]:
    """Every message as it is stored."""
    with engine.connect() as conn:
        rows = conn.execute(select(s.notification).order_by(N.notification_id)).mappings()
        return [dict(r) for r in rows]


def messages(engine: Engine, station: tzinfo = UTC) -> list[dict[str, Any]]:
    """Every message as the sender renders it when it takes it (the station's zone given)."""
    with engine.connect() as conn:
        rows = conn.execute(select(s.notification).order_by(N.notification_id)).all()
        made = rendering.render_rows(conn, rows, station)
    return [
        dict(r._mapping) | {"subject": m.subject, "body": m.body, "html": m.html}
        for r in rows
        for m in [made[r.notification_id]]
    ]


def who(engine: Engine) -> set[tuple[int, str, str]]:
    """(contact, channel, kind) of every message."""
    return {(m["contact_id"], m["channel"], m["kind"]) for m in messages(engine)}


def test_each_kind_reaches_exactly_its_subscribers_by_their_channels(engine: Engine) -> None:
    alarm = subscribe(engine, "Alice", ("alarm",), ("email", "sms"))
    trouble = subscribe(engine, "Bob", ("trouble",), ("email",))
    openclose = subscribe(engine, "Carol", ("openclose",), ("sms",))
    test = subscribe(engine, "Dave", ("test",), ("email",))
    subscribe(engine, "Eve", (), ())  # subscribes to nothing
    other = subscribe(engine, "Frank", ("alarm",), ("email",), account=OTHER)
    routing = SignalRouting(engine, 1000, 2)
    route(engine, [(ACCOUNT, "E130", "004")], T0, routing)
    assert who(engine) == {(alarm, "email", "alarm"), (alarm, "sms", "alarm")}
    route(engine, [(ACCOUNT, "E302", "000"), (ACCOUNT, "E401", "003")], T0 + SECOND, routing)
    route(engine, [(ACCOUNT, "R401", "003")], T0 + 2 * SECOND, routing)
    route(engine, [(OTHER, "E130", "001")], T0 + 3 * SECOND, routing)
    act(engine, lambda c: on_test.start(c, ACCOUNT, now_us=T0 + 4 * SECOND, minutes=60,
                                        by="J Smith"), queues=True)  # fmt: skip
    act(engine, lambda c: on_test.stop(c, ACCOUNT, "J Smith", T0 + 5 * SECOND), queues=True)
    assert sorted(
        (m["contact_id"], m["channel"], m["kind"], m["account_number"]) for m in messages(engine)
    ) == sorted([
        (alarm, "email", "alarm", ACCOUNT), (alarm, "sms", "alarm", ACCOUNT),
        (trouble, "email", "trouble", ACCOUNT),
        (openclose, "sms", "openclose", ACCOUNT), (openclose, "sms", "openclose", ACCOUNT),
        (test, "email", "test", ACCOUNT), (test, "email", "test", ACCOUNT),
        (other, "email", "alarm", OTHER),
    ])  # fmt: skip
    assert {m["state"] for m in messages(engine)} == {rules.QUEUED}


def test_the_message_is_rendered_with_the_accounts_data(engine: Engine) -> None:
    alarm = subscribe(engine, "Alice", ("alarm",), ("email", "sms"))
    (incident,) = route(engine, [(ACCOUNT, "E130", "004")], T0)
    email, sms = messages(engine)
    assert (email["recipient"], sms["recipient"]) == ("alice@example.com", "+155501005")
    assert email["subject"].startswith(f"{ACCOUNT} BURGLARY")
    assert "Acme Widgets" in email["body"]
    assert "Zone: 004 Back door" in email["body"]
    assert "Time: 2027-01-15 08:00:00 UTC" in email["body"]
    assert "Acme Widgets" in email["html"] and email["html"].startswith("<html>")
    assert sms["body"].startswith(f"{ACCOUNT} BURGLARY") and sms["html"] == ""
    assert email["incident_number"] == incident and email["event_id"] is not None
    assert (email["contact_id"], email["due_us"], email["attempts"]) == (alarm, T0, 0)
    queued = stored(engine)  # unrendered: what it is rendered from
    assert [(m["subject"], m["body"], m["html"]) for m in queued] == [("", "", "")] * 2
    assert {(m["hist_text"][:8], m["zone"], m["at_us"]) for m in queued} == {
        ("BURGLARY", "004", T0)
    }


def test_queueing_reads_no_name_description_nor_template(engine: Engine) -> None:
    subscribe(engine, "Alice", ("alarm", "openclose"), ("email", "sms"))
    routing = SignalRouting(engine, 1000, 2)
    route(engine, [(ACCOUNT, "E130", "004")], T0, routing)  # the cache is loaded
    read = ("notify_template", "account_zone", "company_name", "FROM schedule")
    with statements_run(engine, lambda sql: any(t in sql for t in read)) as statements:
        route(engine, [(ACCOUNT, "E130", "005"), (ACCOUNT, "E401", "003")], T0 + SECOND, routing)
    assert statements == []
    assert len(stored(engine)) == 6


def test_routing_reads_the_subscribers_again_only_once_the_response_data_changed(
    engine: Engine,
) -> None:
    subscribe(engine, "Alice", ("alarm",), ("email",))
    routing = SignalRouting(engine, 1000, 2)
    route(engine, [(ACCOUNT, "E130", "004")], T0, routing)  # the account's contacts are read
    with statements_run(engine, lambda sql: "FROM contact" in sql) as statements:
        route(engine, [(ACCOUNT, "E130", "005")], T0 + SECOND, routing)
    assert statements == []
    subscribe(engine, "Bob", ("alarm",), ("email",))  # the response data changes
    route(engine, [(ACCOUNT, "E130", "006")], T0 + 2 * SECOND, routing)
    assert [(m["recipient"], m["zone"]) for m in stored(engine)] == [
        ("alice@example.com", "004"),
        ("alice@example.com", "005"),
        ("alice@example.com", "006"),
        ("bob@example.com", "006"),
    ]


def test_each_message_feeds_its_recipients_lane(engine: Engine) -> None:
    alice = subscribe(engine, "Alice", ("alarm",), ("email", "sms"))
    route(engine, [(ACCOUNT, "E130", "004"), (ACCOUNT, "E130", "005")], T0)
    lane = s.delivery_lane.c
    with engine.connect() as conn:
        rows = conn.execute(
            select(lane.target_id, lane.lane_key, lane.due_us)
            .where(lane.channel == rules.LANES)
            .order_by(lane.lane_key)
        ).all()
    assert [tuple(r) for r in rows] == [(alice, "email", T0), (alice, "sms", T0)]


def test_signals_on_test_notify_nobody(engine: Engine) -> None:
    subscribe(engine, "Alice", ("alarm", "openclose"), ("email",))
    routing = SignalRouting(engine, 1000, 2)
    act(engine, lambda c: on_test.start(c, ACCOUNT, now_us=T0, minutes=60, by="J Smith"),
        queues=True)  # fmt: skip
    route(engine, [(ACCOUNT, "E130", "004"), (ACCOUNT, "E401", "003")], T0 + SECOND, routing)
    assert messages(engine) == []


def test_nothing_is_read_or_written_when_nobody_subscribes(engine: Engine) -> None:
    subscribe(engine, "Eve", (), ())
    routing = SignalRouting(engine, 1000, 2)
    route(engine, [(ACCOUNT, "E130", "004")], T0, routing)  # the cache is loaded
    with statements_run(
        engine, lambda sql: "notification" in sql or "FROM contact" in sql
    ) as statements:
        route(engine, [(ACCOUNT, "E130", "004"), (ACCOUNT, "E401", "003")], T0 + SECOND, routing)
        # an operator's action publishes events that never notify: nothing is looked up
        data = {"account": ACCOUNT, "alarm_id": 1, "type": "BURG", "state": "in_process"}
        act(engine, lambda c: events.publish(c, kinds.ALARM_TAKEN, ACCOUNT, data, T0), queues=True)
    assert statements == []
    assert messages(engine) == []


def test_a_new_subscription_is_seen_by_routing_at_once(engine: Engine) -> None:
    routing = SignalRouting(engine, 1000, 2)
    route(engine, [(ACCOUNT, "E130", "004")], T0, routing)
    alice = subscribe(engine, "Alice", ("alarm",), ("email",))
    route(engine, [(ACCOUNT, "E130", "005")], T0 + SECOND, routing)
    assert who(engine) == {(alice, "email", "alarm")}


def test_a_schedule_alarm_is_told_in_the_accounts_time_zone(engine: Engine) -> None:
    carol = subscribe(engine, "Carol", ("schedule",), ("email",))
    evening = int(datetime(2026, 3, 3, 2, 0, tzinfo=UTC).timestamp()) * SECOND  # Monday 21:00 EST
    change = schedule_data.Change(
        ACCOUNT, days=schedule_rules.parse_days("mon-fri"),
        window=schedule_rules.Window(8 * 60, 18 * 60),
        settings=schedule_data.Settings(late_to_close=False, late_to_open=False,
                                        timezone="America/New_York"),
    )  # fmt: skip
    operations.run(engine, lambda c: schedule_data.set_schedule(c, change, evening - MINUTE, UTC))
    supervision = Supervision(engine, 3600, UTC)
    routing = SignalRouting(engine, 1000, 2)
    for at in (evening - MINUTE, evening + SECOND, evening + 2 * SECOND):
        if at == evening + SECOND:
            route(engine, [(ACCOUNT, "E401", "003")], evening, routing)
        with write_transaction(engine) as conn:
            supervision.supervise(conn, at)
    [message] = [m for m in messages(engine) if m["kind"] == "schedule"]
    assert message["contact_id"] == carol
    assert "UNSCHEDULED OPEN" in message["subject"]
    assert "Time: 2026-03-02 21:00:01 EST" in message["body"]


def test_the_log_is_newest_first_and_filters_an_account(engine: Engine) -> None:
    subscribe(engine, "Alice", ("alarm",), ("email",))
    subscribe(engine, "Frank", ("alarm",), ("sms",), account=OTHER)
    route(engine, [(ACCOUNT, "E130", "004")], T0)
    route(engine, [(OTHER, "E130", "001")], T0 + SECOND)
    with engine.connect() as conn:
        everything = store.log(conn)
        mine = store.log(conn, ACCOUNT)
    assert [(m["account"], m["channel"]) for m in everything] == [
        (OTHER, "sms"),
        (ACCOUNT, "email"),
    ]
    assert [m["to"] for m in mine] == ["alice@example.com"]
    assert {"channel", "to", "account", "state", "attempts"} <= set(mine[0])


def test_a_gateways_secret_is_encrypted_and_never_shown(engine: Engine) -> None:
    with write_transaction(engine) as conn:
        store.set_smtp(conn, KEY, "smtp://mail.example.com:587", "alarms@example.com", True,
                       "station", "hunter2-secret", T0)  # fmt: skip
        store.set_sms(conn, KEY, "https://sms.example.com/send", "json", "+15550000", "acct",
                      "sms-token-secret", T0)  # fmt: skip
    with engine.connect() as conn:
        shown = store.gateways(conn)
        stored = conn.execute(select(s.notify_gateway)).mappings().all()
        email = store.gateway(conn, KEY, "email")
    assert "hunter2-secret" not in repr(shown) and "sms-token-secret" not in repr(shown)
    assert "hunter2-secret" not in repr(stored) and "sms-token-secret" not in repr(stored)
    assert [g["has_password"] for g in shown] == [True, True]
    assert shown[0]["tls"] == "starttls" and shown[1]["format"] == "json"
    assert email is not None and email.password == "hunter2-secret"
    secret = next(r["secret_encrypted"] for r in stored if r["channel"] == "sms")
    assert secret_key.decrypt(KEY, secret) == "sms-token-secret"


@pytest.mark.parametrize(
    ("url", "starttls"),
    [("http://mail.example.com", False), ("smtp://user:pw@mail.example.com", False),
     ("smtps://mail.example.com:465", True), ("smtp://mail.example.com:99999", False)],
)  # fmt: skip
def test_a_wrong_smtp_gateway_is_refused(engine: Engine, url: str, starttls: bool) -> None:
    with write_transaction(engine) as conn, pytest.raises(ProvisioningError):
        store.set_smtp(conn, KEY, url, "", starttls, "", None, T0)


def test_a_stations_template_is_checked_used_and_reset(engine: Engine) -> None:
    subscribe(engine, "Alice", ("alarm",), ("sms",))
    with write_transaction(engine) as conn:
        with pytest.raises(ProvisioningError, match="unknown placeholder"):
            store.set_template(conn, "alarm", "sms", None, "$account $password", T0)
        store.set_template(conn, "alarm", "sms", None, "ALARM $account: $text ($name)", T0)
    route(engine, [(ACCOUNT, "E130", "004")], T0)
    [message] = messages(engine)
    assert (
        message["body"].startswith(f"ALARM {ACCOUNT}: BURGLARY")
        and "(Acme Widgets)" in message["body"]
    )
    with write_transaction(engine) as conn:
        assert store.template(conn, "alarm", "sms")[1] is True
        assert store.reset_template(conn, "alarm", "sms") == rules.DEFAULTS["alarm", "sms"]
        assert store.template(conn, "alarm", "sms") == (rules.DEFAULTS["alarm", "sms"], False)
    [message] = messages(engine)  # rendered as it is sent: with the templates then
    assert not message["body"].startswith("ALARM")


def test_a_test_start_is_told_in_the_stations_time_zone_where_the_account_has_none(
    engine: Engine,
) -> None:
    subscribe(engine, "Tina", ("test",), ("email",))
    berlin = ZoneInfo("Europe/Berlin")
    act(engine, lambda c: on_test.start(c, ACCOUNT, 60, "J Smith", T0), queues=True)
    (message,) = messages(engine, berlin)  # rendered by the sender, in the station's zone
    assert message["body"].endswith("Time: 2027-01-15 09:00:00 CET")
