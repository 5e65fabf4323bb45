"""The console's notifications through its JSON API, on both databases: whom the notify step
offers (the call list's reachable contacts when nobody subscribes to the alarm's kind), the step
done by the operator holding the alarm (messages queued, the step done, whom and by what channel
in its note), refused to another operator and for bad input; the failed messages with their
count and the resend; a request without a session 401, a change without the CSRF header 403.

The failed messages' lanes are held by a node that is not the test's (``store.lanes.claim``), so
no sender in the test's process ever takes them: their states are those the test recorded.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from alarmhub.clock import now_us
from alarmhub.core import notifications as rules
from alarmhub.core import units
from alarmhub.core.account import Account
from alarmhub.core.response import Contact, Phone, PhoneKind
from alarmhub.store import contacts as contact_store
from alarmhub.store import lanes, notification_sending, operators, provisioning, schema
from alarmhub.store import notifications as store
from alarmhub.store.engine import open_engine, write_transaction
from tests.support.console_client import PASSWORD, SUCCESS, Console
from tests.support.console_station import refused
from tests.support.database import database_url
from tests.support.node_hub import NodeHub, running
from tests.support.processes import cli, provision

pytestmark = pytest.mark.backends("sqlite", "postgresql")

DNIS, MASK, HOME = "P1", "70####", "700001"
OPERATORS = ("OP1", "OP2")
C = schema.contact.c
NOTIFY_STEP = 4  # the shipped burglary plan: premises, call list, police, notify


@pytest.fixture(scope="module")
def hub(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeHub]:
    data_dir: Path = tmp_path_factory.mktemp("notify")
    token = provision(data_dir)
    cli(data_dir, "dnis", "add", DNIS, "--mask", MASK)
    engine = open_engine(database_url(data_dir))
    for code in OPERATORS:
        operators.add_operator(engine, code, f"Operator {code}", "operator", PASSWORD)
    provisioning.add_account(engine, Account(HOME, "Acme Widgets"))
    ann = Contact(HOME, "Ann Able", (Phone("555-0101", PhoneKind.HOME),), email="ann@example.com")
    bob = Contact(HOME, "Bob Baker", (Phone("+15550102"),), notify=("trouble",), notify_by=("sms",))
    for contact in (ann, bob):
        contact_store.add_contact(engine, contact)
    with running(NodeHub, data_dir, token, engine, DNIS) as hub:
        yield hub.sign_in_all(OPERATORS)


def test_the_notify_step_from_the_alarm_screen(hub: NodeHub) -> None:
    alarm_id = hub.post(HOME, "E130", "004")
    op1, op2 = hub.console("OP1"), hub.console("OP2")
    op1.ok(f"/alarms/{alarm_id}/take")
    offered = op1.get(f"/alarms/{alarm_id}/notify")
    assert offered.status_code == 200, offered.text
    assert {k: offered.json()[k] for k in SUCCESS} == SUCCESS
    choices = offered.json()["choices"]
    assert (choices["kind"], choices["channels"]) == ("alarm", ["email", "sms"])
    people = {c["name"]: c for c in choices["contacts"]}
    assert [(people[n]["chosen"], people[n]["channels"]) for n in ("Ann Able", "Bob Baker")] == [
        (True, ["email"]),
        (True, ["sms"]),
    ]  # nobody subscribes to alarms: the call list, by what reaches each
    assert offered.json()["messages"] == []

    path = f"/alarms/{alarm_id}/notify"
    ann, bob = people["Ann Able"]["id"], people["Bob Baker"]["id"]
    body = {"position": NOTIFY_STEP, "recipients": [{"contact": ann, "channels": ["email"]}]}
    refused(op2.post(path, body), 409, "OPS-NOTYOURS")
    refused(op1.post(path, body, csrf="wrong"), 403, "CONSOLE-CSRF")
    refused(op1.post(path, {**body, "recipients": [ann]}), 422, "CONSOLE-INPUT")
    refused(op1.post(path, {**body, "cc": []}), 422, "CONSOLE-INPUT")
    sms_to_ann = {**body, "recipients": [{"contact": ann, "channels": ["sms"]}]}
    assert refused(op1.post(path, sms_to_ann), 422, "OPS-NOTIFY") == "Ann Able has no mobile phone"

    both = [{"contact": ann, "channels": ["email"]}, {"contact": bob, "channels": ["sms"]}]
    done = op1.ok(path, {**body, "recipients": both})
    assert done["note"] == "MESSAGED Ann Able BY EMAIL; Bob Baker BY SMS"
    sent = [(m["name"], m["channel"], m["to"]) for m in done["messages"]]
    assert sent == [("Bob Baker", "sms", "+15550102"), ("Ann Able", "email", "ann@example.com")]
    assert all(m["state"] in rules.STATES and m["kind"] == "alarm" for m in done["messages"])
    listed = op2.get(path).json()["messages"]  # any operator sees them
    assert [m["id"] for m in listed] == [m["id"] for m in done["messages"]]
    step = op1.get(f"/alarms/{alarm_id}").json()["plan"]["steps"][NOTIFY_STEP - 1]
    assert (step["kind"], step["done"]) == ("notify", True)
    refused(op1.post(path, body), 409, "OPS-STEP")


def test_failed_messages_are_listed_and_resent(hub: NodeHub) -> None:
    console = hub.console("OP2")
    start = console.get("/notifications/failed")
    assert start.status_code == 200, start.text
    assert (start.json()["messages"], start.json()["failed"]) == ([], 0)
    now = now_us()
    with write_transaction(hub.engine) as conn:
        bob = conn.execute(select(C.contact_id).where(C.name == "Bob Baker")).scalar_one()
        told = store.Told(rules.TROUBLE, HOME, "AC POWER LOSS", now)
        recipient = (bob, frozenset({rules.TROUBLE}), [(rules.SMS, "+15550102")])
        assert store.send(conn, [told], {HOME: [recipient]}, now_us=now) == 1
        lane_ids = lanes.ids(conn, rules.LANES, [(bob, rules.SMS)])
        lanes.claim(conn, lane_ids, "node-b", now + units.hours_us(1))  # never sent from here
        message = store.log(conn, HOME)[0]  # the newest
        failure = notification_sending.Outcome(message["id"], "failed", 1, "gateway said 400")
        notification_sending.record(conn, [failure], now)
    body = console.get("/notifications/failed").json()
    assert body["failed"] == 1 and body["server_us"] >= now
    (shown,) = body["messages"]
    assert (shown["id"], shown["name"], shown["channel"], shown["to"], shown["state"]) == (
        message["id"], "Bob Baker", "sms", "+15550102", "failed",
    )  # fmt: skip
    assert (shown["attempts"], shown["last_error"], shown["account"]) == (
        1, "gateway said 400", HOME,
    )  # fmt: skip

    path = f"/notifications/{message['id']}/resend"
    refused(console.post(path, csrf="wrong"), 403, "CONSOLE-CSRF")
    assert console.ok(path)["failed"] == 0
    refused(console.post(path), 409, "OPS-MESSAGE")  # queued already
    refused(console.post("/notifications/999999999/resend"), 404, "OPS-MESSAGE")
    refused(console.post("/notifications/x1/resend"), 422, "CONSOLE-INPUT")
    assert console.get("/notifications/failed").json()["failed"] == 0


def test_the_notifications_need_a_session(hub: NodeHub) -> None:
    stranger = Console(hub.station.url, hub.station.client._transport)
    try:
        for path in ("/notifications/failed", "/alarms/1/notify"):
            refused(stranger.get(path), 401, "CONSOLE-SESSION")
    finally:
        stranger.close()
