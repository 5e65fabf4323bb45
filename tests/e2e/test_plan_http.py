"""Action plans through the console API (decisions section 8), on both databases: every refusal
with its code (OPS-VERIFY until enhanced call verification is met, not for an exempt TYPE, as
the station's ECV setting says; OPS-DISPATCH before OPS-STEPS; OPS-STEPS naming the steps;
OPS-STEP; a dispatch's fields checked), a station's plan for one account and one zone on the
alarm screen, and the audit trail of dispatches and steps in XMHIST with SEARCHTYPE=OPR.

The node runs in the test's process; the consoles are signed in before any alarm exists.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from alarmhub.core.account import Account
from alarmhub.core.plans import Step, StepKind
from alarmhub.core.response import Agency, AgencyKind, Contact, Phone
from alarmhub.store import contacts as contact_store
from alarmhub.store import operators, plans, provisioning, queries, response
from alarmhub.store.engine import open_engine
from tests.support.console_client import PASSWORD, Console
from tests.support.console_station import refused
from tests.support.database import database_url
from tests.support.node_hub import NodeHub, running
from tests.support.processes import cli, provision

pytestmark = pytest.mark.backends("sqlite", "postgresql")

DNIS, MASK = "P1", "70####"
HOME = "700001"  # premises phone, Ann and Bob on PRIMARY, the police and fire
OFFICE = "700002"  # as HOME; the station's burglary plans for it and for its zone 005
PREMISES = "555-0100"
API_USER, API_PASSWORD = "auditor", "auditor-secret-1"
DEADLINE_S = 20
BURGLARY, FIRE = "E130", "E110"
OPERATORS = ("OP1", "OP2")


class Hub(NodeHub):
    def taken(self, account: str, code: str, zone: str, by: str = "OP1") -> tuple[int, Console]:
        """A new alarm taken by operator ``by``, unless it went to the operator already working
        its account (one operator per site): its id and its operator's console."""
        alarm_id = self.post(account, code, zone)
        row = self.alarm(alarm_id)
        holder = row["opr"] if row["state"] == "in_process" else None
        console = self.consoles[holder or by]
        console.ok(f"/alarms/{alarm_id}/take")
        return alarm_id, console


@pytest.fixture(scope="module")
def hub(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    data_dir: Path = tmp_path_factory.mktemp("plans")
    token = provision(data_dir)
    cli(data_dir, "dnis", "add", DNIS, "--mask", MASK)
    cli(data_dir, "apiuser", "add", API_USER, "--password", API_PASSWORD)
    engine = open_engine(database_url(data_dir))
    for code in OPERATORS:
        operators.add_operator(engine, code, f"Operator {code}", "operator", PASSWORD)
    response.add_agency(engine, Agency("PD", AgencyKind.POLICE, "Police", "555-0911"))
    response.add_agency(engine, Agency("FD", AgencyKind.FIRE, "Fire", "555-0912"))
    for number in (HOME, OFFICE):
        provisioning.add_account(engine, Account(number, f"Subscriber {number}"))
        contact_store.add_contact(engine, Contact(number, "Ann Able", (Phone("555-0101"),)))
        contact_store.add_contact(engine, Contact(number, "Bob Baker", (Phone("555-0102"),)))
        agencies = {"police": "PD", "fire": "FD"}
        response.set_account_response(engine, number, agencies, phone=PREMISES)
    with running(Hub, data_dir, token, engine, DNIS, (API_USER, API_PASSWORD)) as hub:
        yield hub.sign_in_all(OPERATORS)


def plan_of(console: Console, alarm_id: int) -> dict[str, Any]:
    answer = console.get(f"/alarms/{alarm_id}")
    assert answer.status_code == 200, answer.text
    return dict(answer.json()["plan"])


def contact_ids(console: Console, alarm_id: int) -> list[int]:
    detail = console.get(f"/alarms/{alarm_id}").json()
    return [c["id"] for c in detail["response"]["call_list"]["contacts"]]


def call(console: Console, alarm_id: int, outcome: str = "no-answer", **who: Any) -> None:
    console.ok(f"/alarms/{alarm_id}/call", {"outcome": outcome, **who})


def dispatch(console: Console, alarm_id: int, agency: str = "police", avs: int = 1) -> Any:
    body = {"agency": agency, "avs": avs, "reference": "R-1"}
    return console.post(f"/alarms/{alarm_id}/dispatch", body)


def resolve(console: Console, alarm_id: int, resolution: str) -> Any:
    return console.post(f"/alarms/{alarm_id}/resolve", {"resolution": resolution})


@pytest.fixture
def ecv_settings(hub: Hub) -> Iterator[None]:
    """The station's ECV settings of BURG and FIRE back to the shipped rule afterwards."""
    try:
        yield
    finally:
        for alarm_type in ("BURG", "FIRE"):
            plans.set_ecv(hub.engine, alarm_type, None)


# enhanced call verification --------------------------------------------------------------------


def test_a_burglary_dispatch_needs_two_calls_to_two_different_numbers(hub: Hub) -> None:
    alarm_id, op1 = hub.taken(HOME, BURGLARY, "001")
    plan = plan_of(op1, alarm_id)
    assert plan["type"] == "BURG"
    assert plan["ecv"] == {"required": True, "met": False}
    message = refused(dispatch(op1, alarm_id), 409, "OPS-VERIFY")
    assert "two calls to two different numbers" in message
    call(op1, alarm_id, phone=PREMISES)
    call(op1, alarm_id, phone="(555) 0100")  # the same number written otherwise
    refused(dispatch(op1, alarm_id), 409, "OPS-VERIFY")
    assert plan_of(op1, alarm_id)["ecv"]["met"] is False
    ann = contact_ids(op1, alarm_id)[0]
    call(op1, alarm_id, "answered", contact_id=ann)
    assert plan_of(op1, alarm_id)["ecv"] == {"required": True, "met": True}
    answer = dispatch(op1, alarm_id, avs=2)
    assert answer.status_code == 200, answer.text
    assert answer.json()["dispatch"] == {
        "agency": "police",
        "agency_code": "PD",
        "avs": 2,
        "reference": "R-1",
    }
    (made,) = plan_of(op1, alarm_id)["dispatches"]
    assert (made["agency"], made["avs"], made["opr"]) == ("police", 2, "OP1")
    assert resolve(op1, alarm_id, "DISP").status_code == 200


def test_a_fire_dispatch_is_exempt(hub: Hub) -> None:
    alarm_id, op1 = hub.taken(HOME, FIRE, "002")
    plan = plan_of(op1, alarm_id)
    assert plan["type"] == "FIRE"
    assert plan["ecv"] == {"required": False, "met": False}
    assert [(s["kind"], s["required"]) for s in plan["steps"]] == [
        ("dispatch", True),
        ("call-list", False),
    ]
    assert dispatch(op1, alarm_id, "fire", 3).status_code == 200
    assert resolve(op1, alarm_id, "DISPF").status_code == 200


def test_the_station_s_ecv_setting_of_a_type_wins(hub: Hub, ecv_settings: None) -> None:
    plans.set_ecv(hub.engine, "FIRE", True)
    plans.set_ecv(hub.engine, "BURG", False)
    fire, op1 = hub.taken(HOME, FIRE, "003")
    assert plan_of(op1, fire)["ecv"]["required"] is True
    refused(dispatch(op1, fire, "fire"), 409, "OPS-VERIFY")
    burglary, op2 = hub.taken(OFFICE, BURGLARY, "003", by="OP2")
    assert plan_of(op2, burglary)["ecv"]["required"] is False
    assert dispatch(op2, burglary).status_code == 200
    call(op1, fire, phone=PREMISES)
    call(op1, fire, phone="555-0199")
    assert dispatch(op1, fire, "fire").status_code == 200
    assert resolve(op1, fire, "DISPF").status_code == 200
    for contact in contact_ids(op2, burglary):
        call(op2, burglary, contact_id=contact)  # the call list worked: all of it called
    assert resolve(op2, burglary, "DISP").status_code == 200


# the checks of a resolution --------------------------------------------------------------------


def test_a_resolution_is_checked_for_its_dispatch_before_the_plan_s_steps(hub: Hub) -> None:
    alarm_id, op1 = hub.taken(HOME, BURGLARY, "004")
    # nothing done: a dispatch code is refused for want of the dispatch, FA for the steps
    message = refused(resolve(op1, alarm_id, "DISP"), 409, "OPS-DISPATCH")
    assert message == "DISP means a dispatch: record a dispatch first"
    message = refused(resolve(op1, alarm_id, "FA"), 409, "OPS-STEPS")
    assert message == "required steps of the plan are not done: 2. call the call list"
    # the premises and Ann called without an answer: ECV met, the call list not yet worked
    ann, bob = contact_ids(op1, alarm_id)
    call(op1, alarm_id, phone=PREMISES)
    call(op1, alarm_id, contact_id=ann)
    assert dispatch(op1, alarm_id).status_code == 200
    refused(resolve(op1, alarm_id, "DISP"), 409, "OPS-STEPS")
    message = refused(resolve(op1, alarm_id, "DISPF"), 409, "OPS-DISPATCH")
    assert "a fire dispatch" in message
    call(op1, alarm_id, contact_id=bob)  # everyone on the list called
    assert resolve(op1, alarm_id, "DISP").status_code == 200
    with hub.engine.connect() as conn:
        row = queries.alarm(conn, alarm_id)
    assert row is not None and row["state"] == "resolved"


# a station's plans, acknowledged steps ---------------------------------------------------------


@pytest.fixture
def office_plans(hub: Hub) -> Iterator[None]:
    """The station's burglary plans for OFFICE and for its zone 005, reset afterwards."""
    account_plan = [
        Step(StepKind.CALL_LIST, required=True),
        Step(StepKind.INSTRUCTION, required=True, text="Check the gate code in notes"),
        Step(StepKind.DISPATCH, agency=AgencyKind.POLICE),
    ]
    zone_plan = [
        Step(StepKind.VIDEO, required=True, text="camera 2 covers the safe"),
        Step(StepKind.PASSCODE),
    ]
    plans.set_plan(hub.engine, "BURG", account_plan, account=OFFICE)
    plans.set_plan(hub.engine, "BURG", zone_plan, account=OFFICE, zone="5")
    try:
        yield
    finally:
        plans.reset_plan(hub.engine, "BURG", account=OFFICE, zone="5")
        plans.reset_plan(hub.engine, "BURG", account=OFFICE)


def test_a_station_plan_for_an_account_and_a_zone_wins_over_the_shipped_one(
    hub: Hub, office_plans: None
) -> None:
    zone_alarm, op1 = hub.taken(OFFICE, BURGLARY, "005")
    other_zone, op2 = hub.taken(OFFICE, BURGLARY, "006", by="OP2")
    shipped = hub.post(HOME, BURGLARY, "005")
    zone_plan = plan_of(op1, zone_alarm)
    assert (zone_plan["scope"], zone_plan["next"]) == ("zone", 1)
    assert [(s["kind"], s["title"], s["text"]) for s in zone_plan["steps"]] == [
        ("video", "review video", "camera 2 covers the safe"),
        ("passcode", "verify a passcode", ""),
    ]
    account_plan = plan_of(op2, other_zone)
    assert account_plan["scope"] == "account"
    assert [s["title"] for s in account_plan["steps"]] == [
        "call the call list",
        "Check the gate code in notes",
        "dispatch police",
    ]
    home_plan = plan_of(op1, shipped)
    assert home_plan["scope"] == "shipped"
    kinds = [s["kind"] for s in home_plan["steps"]]
    assert kinds == ["premises", "call-list", "dispatch", "notify"]

    message = refused(resolve(op2, other_zone, "FA"), 409, "OPS-STEPS")
    assert message == (
        "required steps of the plan are not done: 1. call the call list; "
        "2. Check the gate code in notes"
    )
    # a step done by doing it is not acknowledged with a note; a note does the instruction
    step = f"/alarms/{other_zone}/step"
    message = refused(op2.post(step, {"position": 1, "note": "done"}), 409, "OPS-STEP")
    assert "done by doing it" in message
    refused(op2.post(step, {"position": 9, "note": "done"}), 422, "OPS-STEP")
    refused(op2.post(step, {"position": 2}), 422, "CONSOLE-INPUT")
    op2.ok(step, {"position": 2, "note": "gate code 4411 given to the guard"})
    refused(op2.post(step, {"position": 2, "note": "again"}), 409, "OPS-STEP")
    stranger = next(c for c in hub.consoles.values() if c is not op2)
    refused(stranger.post(step, {"position": 2, "note": "not mine"}), 409, "OPS-NOTYOURS")
    states = [(s["position"], s["done"]) for s in plan_of(op2, other_zone)["steps"]]
    assert states == [(1, False), (2, True), (3, False)]
    message = refused(resolve(op2, other_zone, "FA"), 409, "OPS-STEPS")
    assert message.endswith("1. call the call list")
    call(op2, other_zone, "answered", contact_id=contact_ids(op2, other_zone)[0])
    assert resolve(op2, other_zone, "FA").status_code == 200

    op1.ok(f"/alarms/{zone_alarm}/step", {"position": 1, "note": "nobody on camera 2"})
    assert plan_of(op1, zone_alarm)["next"] == 2
    assert resolve(op1, zone_alarm, "FA").status_code == 200


# a dispatch's fields ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"agency": "army", "avs": 1}, "OPS-AGENCY"),
        ({"agency": "Police", "avs": 1}, "OPS-AGENCY"),
        ({"agency": "police", "avs": 5}, "OPS-AVS"),
        ({"agency": "police", "avs": -1}, "OPS-AVS"),
        ({"agency": "police", "avs": 1, "reference": "x" * 41}, "OPS-REFERENCE"),
        ({"agency": "police", "avs": "2"}, "CONSOLE-INPUT"),
        ({"agency": "police"}, "CONSOLE-INPUT"),
        ({"agency": "police", "avs": 1, "level": 2}, "CONSOLE-INPUT"),
    ],
)
def test_a_dispatch_that_makes_no_sense_is_refused_and_changes_nothing(
    hub: Hub, body: dict[str, Any], code: str
) -> None:
    alarm_id, op1 = hub.taken(HOME, FIRE, "007")
    refused(op1.post(f"/alarms/{alarm_id}/dispatch", body), 422, code)
    assert plan_of(op1, alarm_id)["dispatches"] == []
    assert dispatch(op1, alarm_id, "fire").status_code == 200
    assert resolve(op1, alarm_id, "DISPF").status_code == 200


# the audit trail -------------------------------------------------------------------------------


def test_xmhist_with_searchtype_opr_shows_every_dispatch_and_step_with_operator_and_time(
    hub: Hub, office_plans: None
) -> None:
    alarm_id, op2 = hub.taken(OFFICE, BURGLARY, "008", by="OP2")
    call(op2, alarm_id, "answered", contact_id=contact_ids(op2, alarm_id)[0])
    op2.ok(f"/alarms/{alarm_id}/step", {"position": 2, "note": "gate code checked"})
    call(op2, alarm_id, phone=PREMISES)
    body = {"agency": "police", "avs": 3, "reference": "5521"}
    op2.ok(f"/alarms/{alarm_id}/dispatch", body)
    assert resolve(op2, alarm_id, "DISP").status_code == 200

    events = hub.xm("XMHIST", ACCOUNT=OFFICE, HOURS="24", SEARCHTYPE="OPR", ARRAY="Y")["EVENT"]
    mine = [e for e in events if e["INCIDENT_NUMBER"] == str(alarm_id)]
    records = {e["TYPE"]: e for e in mine if e["PR_CHECKSUM"] == "OPERATOR"}
    assert records["DISP"]["HIST_TEXT"] == "OPR OP2 DISPATCHED POLICE AVS 3 REF 5521"
    assert records["STEP"]["HIST_TEXT"] == (
        "OPR OP2 DID STEP 2 CHECK THE GATE CODE IN NOTES: gate code checked"
    )
    for record in (records["DISP"], records["STEP"], records["RSLV"]):
        assert record["OPR"] == "OP2"
        assert record["HISTORY_EVENT_DATE"]
    plain = hub.xm("XMHIST", ACCOUNT=OFFICE, HOURS="24", ARRAY="Y")["EVENT"]
    assert not [e for e in plain if e["PR_CHECKSUM"] == "OPERATOR"]
