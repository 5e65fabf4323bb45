"""An account's response data at work (decisions section 7), on both databases: HIST_TEXT with
the zone's description or the user's name in the console, XMHIST and XMAPEND; XMAPEND's
CONTACT_LIST; an operator working the call list (calls with outcomes, the next contact);
passcode checks and the duress code through the console API, with hashes only at rest.

The node runs in the test's process; the query interface is called with requests signed by
the published recipe, the console through its sign-in form and JSON API.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import String, func, select

from alarmhub.core.account import Account
from alarmhub.core.response import Agency, AgencyKind, Contact, PanelUser, Phone, Zone
from alarmhub.store import contacts as contact_store
from alarmhub.store import operators, provisioning, queries, response
from alarmhub.store import schema as s
from alarmhub.store.engine import open_engine
from tests.support.console_client import PASSWORD, Console
from tests.support.database import database_url
from tests.support.node_hub import NodeHub, running
from tests.support.processes import cli, provision

pytestmark = pytest.mark.backends("sqlite", "postgresql")

DNIS, MASK = "R1", "70####"
SCHOOL = "700001"  # zones, users, contacts on PRIMARY and FIRE, agencies, a duress code
SHOP = "700002"  # one contact on PRIMARY only
BARE = "700003"  # no response data at all
API_USER, API_PASSWORD = "integrator", "integrator-secret-1"
PASSCODE, DURESS_CODE = "bluebird", "redfox"
DEADLINE_S = 20
Row = dict[str, Any]
OPERATORS = {"OP1": "operator", "OP2": "operator", "SUP": "supervisor"}


@dataclass
class Hub(NodeHub):
    contacts: dict[str, int] = field(default_factory=dict)

    def pending_record(self, incident: int) -> dict[str, str]:
        records = self.xm("XMAPEND", SOURCE="DATAENTRY")["XMAPEND"]
        found = [r for r in records if r["INCIDENT_NUMBER"] == str(incident)]
        assert len(found) == 1, records
        return dict(found[0])


@pytest.fixture(scope="module")
def hub(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    data_dir: Path = tmp_path_factory.mktemp("response")
    token = provision(data_dir)
    cli(data_dir, "dnis", "add", DNIS, "--mask", MASK)
    cli(data_dir, "apiuser", "add", API_USER, "--password", API_PASSWORD)
    engine = open_engine(database_url(data_dir))
    for number, name in ((SCHOOL, "Oak School"), (SHOP, "Elm Shop"), (BARE, "Bare Barn")):
        provisioning.add_account(engine, Account(number, name))
    for code, role in OPERATORS.items():
        operators.add_operator(engine, code, f"Operator {code}", role, PASSWORD)
    response.set_zone(engine, Zone(SCHOOL, "15", "BACK DOOR"))
    response.set_zone(engine, Zone(SCHOOL, "15", "GYM DOOR", area="2"))
    response.set_zone(engine, Zone(SCHOOL, "4", "KITCHEN SMOKE"))
    response.set_user(engine, PanelUser(SCHOOL, "2", "JOHN SMITH"))
    fire = contact_store.placement("FIRE")
    contacts = {
        "ann": contact_store.add_contact(
            engine,
            Contact(SCHOOL, "Ann Able", (Phone("555-0101"),), relation="owner"),
            [contact_store.placement("PRIMARY"), fire],
            response.hash_passcode(PASSCODE),
        ),
        "bob": contact_store.add_contact(
            engine, Contact(SCHOOL, "Bob Baker", (Phone("555-0102"), Phone("555-0103")))
        ),
        "cy": contact_store.add_contact(engine, Contact(SHOP, "Cy Clerk", (Phone("555-0201"),))),
    }
    response.add_agency(engine, Agency("OAKPD", AgencyKind.POLICE, "Oak Police", "555-0911"))
    response.set_account_response(
        engine,
        SCHOOL,
        {"police": "OAKPD"},
        permit="BA-2291",
        duress_hash=response.hash_passcode(DURESS_CODE),
    )
    provisioning.set_alarm_type(engine, "110", contact_list="FIRE")
    with running(Hub, data_dir, token, engine, DNIS, (API_USER, API_PASSWORD)) as hub:
        hub.contacts = contacts
        yield hub.sign_in_all(OPERATORS)


# HIST_TEXT and CONTACT_LIST ------------------------------------------------------------------


def test_a_zone_description_is_in_hist_text_everywhere(hub: Hub) -> None:
    incident = hub.post(SCHOOL, "E130", "15")
    expected = "BURGLARY ZONE 015 BACK DOOR"
    assert hub.alarm(incident)["hist_text"] == expected
    assert hub.pending_record(incident)["HIST_TEXT"] == expected
    history = hub.xm("XMHIST", ACCOUNT=SCHOOL, HOURS="24", ARRAY="Y")["EVENT"]
    assert [e["HIST_TEXT"] for e in history if e["INCIDENT_NUMBER"] == str(incident)] == [expected]
    console = hub.console("SUP")
    detail = console.get(f"/alarms/{incident}").json()
    assert detail["alarm"]["hist_text"] == expected
    assert detail["response"]["zone"] == {"description": "BACK DOOR", "equipment": ""}


def test_an_area_s_own_description_wins(hub: Hub) -> None:
    incident = hub.post(SCHOOL, "E130", "15", area="02")
    assert hub.alarm(incident)["hist_text"] == "BURGLARY ZONE 015 GYM DOOR"


def test_a_user_s_name_follows_an_opening_and_no_data_changes_nothing(hub: Hub) -> None:
    opening = hub.post(SCHOOL, "R401", "2")
    plain = hub.post(BARE, "E130", "15")
    history = hub.xm("XMHIST", ACCOUNT=SCHOOL, HOURS="24", ARRAY="Y")["EVENT"]
    (event,) = [e for e in history if e["INCIDENT_NUMBER"] == str(opening)]
    assert event["HIST_TEXT"].endswith("USER 002 JOHN SMITH")
    assert event["SECOND_ZONE_IS"] == "U"
    assert hub.alarm(plain)["hist_text"] == "BURGLARY ZONE 015"


def test_contact_list_names_the_call_list_of_the_alarm_type_when_the_account_has_it(
    hub: Hub,
) -> None:
    burglary = hub.post(SCHOOL, "E130", "16")
    fire = hub.post(SCHOOL, "E110", "4")
    shop_fire = hub.post(SHOP, "E110", "1")
    bare = hub.post(BARE, "E130", "1")
    assert hub.pending_record(burglary)["CONTACT_LIST"] == "PRIMARY"
    assert hub.pending_record(fire)["CONTACT_LIST"] == "FIRE"
    assert hub.pending_record(fire)["HIST_TEXT"].endswith("KITCHEN SMOKE")
    assert "CONTACT_LIST" not in hub.pending_record(shop_fire)  # the shop has no FIRE list
    assert "CONTACT_LIST" not in hub.pending_record(bare)


def test_contact_list_follows_a_change_of_the_account_s_lists(hub: Hub) -> None:
    incident = hub.post(SHOP, "E130", "2")
    assert hub.pending_record(incident)["CONTACT_LIST"] == "PRIMARY"
    contact_store.update_contact(hub.engine, SHOP, hub.contacts["cy"], {}, off_lists=["PRIMARY"])
    assert "CONTACT_LIST" not in hub.pending_record(incident)
    contact_store.update_contact(
        hub.engine, SHOP, hub.contacts["cy"], {}, [contact_store.placement("PRIMARY")]
    )
    assert hub.pending_record(incident)["CONTACT_LIST"] == "PRIMARY"


# working the call list -------------------------------------------------------------------------


def resolve(hub: Hub, console: Console, incident: int, resolution: str = "FA") -> None:
    """Resolve an alarm once its plan lets it be: a burglary of an account with a call list
    needs its call list worked, here by an answered call to the list's first contact; a fire
    alarm, the fire dispatch."""
    detail = console.get(f"/alarms/{incident}").json()
    contacts = detail["response"]["call_list"]["contacts"]
    if contacts:
        call = {"contact_id": contacts[0]["id"], "outcome": "answered"}
        console.ok(f"/alarms/{incident}/call", call)
    for step in detail["plan"]["steps"]:  # a fire alarm's fire dispatch (no ECV owed)
        if step["kind"] == "dispatch" and step["required"] and not step["done"]:
            console.ok(f"/alarms/{incident}/dispatch", {"agency": step["agency"], "avs": 1})
    console.ok(f"/alarms/{incident}/resolve", {"resolution": resolution})


def take(console: Console, incident: int) -> dict[str, Any]:
    console.ok(f"/alarms/{incident}/take")
    answer = console.get(f"/alarms/{incident}")
    assert answer.status_code == 200, answer.text
    return dict(answer.json()["response"])


def test_an_operator_works_the_call_list_in_order(hub: Hub) -> None:
    incident = hub.post(SCHOOL, "E130", "17")
    console = hub.console("OP2")
    screen = take(console, incident)
    call_list = screen["call_list"]
    assert call_list["name"] == "PRIMARY"
    assert [c["name"] for c in call_list["contacts"]] == ["Ann Able", "Bob Baker"]
    ann, bob = hub.contacts["ann"], hub.contacts["bob"]
    assert call_list["next"] == ann
    assert screen["agencies"] == [
        {"code": "OAKPD", "kind": "police", "name": "Oak Police", "phone": "555-0911"}
    ]
    assert screen["permit"] == "BA-2291"
    assert "passcode_hash" not in str(screen) and "argon2" not in str(screen)

    console.ok(f"/alarms/{incident}/call", {"contact_id": ann, "outcome": "no-answer"})
    screen = console.get(f"/alarms/{incident}").json()["response"]
    assert screen["call_list"]["next"] == bob
    (tried,) = screen["call_list"]["contacts"][0]["calls"]
    assert (tried["phone"], tried["outcome"], tried["opr"]) == ("555-0101", "no-answer", "OP2")

    body = {"contact_id": bob, "phone": "555-0103", "outcome": "answered", "text": "on my way"}
    console.ok(f"/alarms/{incident}/call", body)
    detail = console.get(f"/alarms/{incident}").json()
    assert detail["response"]["call_list"]["next"] is None
    texts = [e["hist_text"] for e in detail["events"] if e["type"] == "CALL"]
    assert texts == [
        "OPR OP2 CALL: ANN ABLE 555-0101 NO ANSWER",
        "OPR OP2 CALL: BOB BAKER 555-0103 ANSWERED: on my way",
    ]
    assert detail["alarm"]["times"]["OPR_FIRST_CALL"]
    console.ok(f"/alarms/{incident}/call", {"text": "called the keyholder's office"})
    resolve(hub, console, incident, "FA")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"contact_id": 1}, "missing field 'outcome'"),
        ({"phone": "555-0101", "outcome": "hung-up"}, "outcome must be one of"),
        ({"outcome": "busy"}, "goes with the contact_id or phone"),
        ({"phone": "call me", "outcome": "busy"}, "may hold only digits"),
        ({"contact_id": 999999, "outcome": "busy"}, "no contact 999999"),
        ({"contact_id": "1", "outcome": "busy"}, "must be a whole number"),
    ],
)
def test_a_call_that_cannot_be_logged_is_refused_and_changes_nothing(
    hub: Hub, body: dict[str, Any], message: str
) -> None:
    incident = hub.post(SCHOOL, "E130", "18")
    console = hub.console("OP1")
    take(console, incident)
    answer = console.post(f"/alarms/{incident}/call", body)
    assert answer.status_code == 422, answer.text
    assert message in answer.json()["message"]
    assert console.get(f"/alarms/{incident}").json()["response"]["calls"] == []
    resolve(hub, console, incident, "FA")


# passcodes and the duress code -----------------------------------------------------------------


def check(console: Console, incident: int, passcode: str, **more: Any) -> dict[str, Any]:
    data = console.ok(f"/alarms/{incident}/passcode", {"passcode": passcode, **more})
    return {k: data[k] for k in ("verified", "duress")}


def test_a_wrong_passcode_is_not_verified_and_a_right_one_sets_passcode_verified(
    hub: Hub,
) -> None:
    incident = hub.post(SCHOOL, "E130", "19")
    console = hub.console("OP1")
    take(console, incident)
    assert check(console, incident, "bluebirds") == {"verified": False, "duress": False}
    assert check(console, incident, "x" * 5000) == {"verified": False, "duress": False}
    assert hub.alarm(incident)["passcode_verified"] == "N"
    bob = hub.contacts["bob"]  # Bob has no passcode: Ann's is not his
    assert check(console, incident, PASSCODE, contact_id=bob)["verified"] is False
    assert check(console, incident, PASSCODE) == {"verified": True, "duress": False}
    assert hub.alarm(incident)["passcode_verified"] == "Y"
    detail = console.get(f"/alarms/{incident}").json()
    assert detail["alarm"]["passcode_verified"] == "Y"
    records = [e["hist_text"] for e in detail["events"] if e["type"] == "PASS"]
    assert records[-1] == "OPR OP1 PASSCODE CHECK: VERIFIED"
    assert records.count("OPR OP1 PASSCODE CHECK: NOT VERIFIED") == 3
    resolve(hub, console, incident, "CNCL")


def test_only_the_operator_holding_the_alarm_checks_a_passcode(hub: Hub) -> None:
    incident = hub.post(SCHOOL, "E130", "20")
    holder = hub.console("OP1")
    take(holder, incident)
    other = hub.console("OP2")
    answer = other.post(f"/alarms/{incident}/passcode", {"passcode": PASSCODE})
    assert answer.status_code in (403, 409), answer.text
    assert hub.alarm(incident)["passcode_verified"] == "N"
    resolve(hub, holder, incident, "FA")


def test_the_duress_code_answers_verified_and_raises_a_duress_alarm_for_someone_else(
    hub: Hub,
) -> None:
    incident = hub.post(SCHOOL, "E130", "21")
    op1 = hub.console("OP1")
    take(op1, incident)
    assert check(op1, incident, DURESS_CODE) == {"verified": True, "duress": True}
    assert hub.alarm(incident)["passcode_verified"] == "N"  # as it was
    with hub.engine.connect() as conn:
        pending = queries.pending_alarms(conn)
    duress = pending[0]
    assert (duress["type"], duress["priority"], duress["hist_text"]) == (
        "DURES",
        "!",
        "DURESS CODE GIVEN",
    )
    assert duress["account_number"] == SCHOOL
    record = hub.pending_record(duress["alarm_id"])
    assert (record["TYPE"], record["PRIORITY"]) == ("DURES", "!")

    refused = op1.post(f"/alarms/{duress['alarm_id']}/take")
    assert refused.status_code == 409, refused.text
    assert refused.json()["error_code"] == "OPS-NOT-YOURS"
    resolve(hub, op1, incident, "CNCL")
    taken = op1.ok("/take-next")["alarm"]
    assert taken is None or taken["alarm_id"] != duress["alarm_id"]
    if taken is not None:
        resolve(hub, op1, taken["alarm_id"], "FA")
    sup = hub.console("SUP")
    sup.ok(f"/alarms/{duress['alarm_id']}/take")
    assert hub.alarm(duress["alarm_id"])["opr"] == "SUP"
    refused = sup.post(f"/alarms/{duress['alarm_id']}/resolve", {"resolution": "DISP"})
    assert refused.json()["error_code"] == "OPS-DISPATCH", refused.text  # police first
    police = {"agency": "police", "avs": 3, "reference": "D-1"}  # duress: no ECV owed
    sup.ok(f"/alarms/{duress['alarm_id']}/dispatch", police)
    sup.ok(f"/alarms/{duress['alarm_id']}/resolve", {"resolution": "DISP"})


def test_the_database_never_holds_a_passcode(hub: Hub) -> None:
    with hub.engine.connect() as conn:
        hashes = conn.execute(
            select(s.contact.c.passcode_hash).where(s.contact.c.passcode_hash.is_not(None))
        ).scalars()
        assert all(h.startswith("$argon2") for h in hashes)
        for table in s.metadata.sorted_tables:
            for column in table.columns:
                if not isinstance(column.type, String):
                    continue
                for secret in (PASSCODE, DURESS_CODE):
                    found = conn.execute(
                        select(func.count()).where(column.contains(secret))
                    ).scalar()
                    assert found == 0, (table.name, column.name)
    assert PASSCODE not in hub.station.log() and DURESS_CODE not in hub.station.log()
