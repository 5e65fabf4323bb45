"""Storm mode and the handling report through the console API, on both databases: a supervisor
switches storm mode on, a storm TYPE's alarm stays out of pending (the snapshot, XMAPEND) and is
on the storm list, with PR_CHECKSUM STORM in XMHIST, while another TYPE of the same account
pends; switching off answers the storm list, which is resolved in one batch; every refusal
with its code (operators 403 OPS-ROLE, bad TYPEs 422 OPS-STORM, input 422 CONSOLE-INPUT).

The node runs in the test's process; consoles sign in through the form and use the JSON API.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from alarmhub.core.account import Account
from alarmhub.store import operators, provisioning
from alarmhub.store.engine import open_engine
from tests.support.console_client import PASSWORD, queue_rows
from tests.support.console_station import refused
from tests.support.database import database_url
from tests.support.node_hub import NodeHub, running
from tests.support.processes import cli, provision

pytestmark = pytest.mark.backends("sqlite", "postgresql")

DNIS, MASK = "S1", "70####"
SHOP, FARM = "700002", "700003"
API_USER, API_PASSWORD = "integrator", "integrator-secret-1"
OPERATORS = {"OP1": "operator", "SUP": "supervisor"}
DEADLINE_S = 20


class Hub(NodeHub):
    def state(self, alarm_id: int) -> str:
        return str(self.alarm(alarm_id)["state"])


@pytest.fixture(scope="module")
def hub(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    data_dir: Path = tmp_path_factory.mktemp("storm")
    token = provision(data_dir)
    cli(data_dir, "dnis", "add", DNIS, "--mask", MASK)
    cli(data_dir, "apiuser", "add", API_USER, "--password", API_PASSWORD)
    engine = open_engine(database_url(data_dir))
    for number, name in ((SHOP, "Elm Shop"), (FARM, "Oak Farm")):
        provisioning.add_account(engine, Account(number, name))
    for code, role in OPERATORS.items():
        operators.add_operator(engine, code, f"Operator {code}", role, PASSWORD)
    env = {"ALARMHUB_TIMEZONE": "UTC"}
    api = (API_USER, API_PASSWORD)
    with running(Hub, data_dir, token, engine, DNIS, api, env) as hub:
        yield hub


def storm_rows(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return queue_rows({"fields": answer["fields"], "alarms": answer["alarms"]}, "alarms")


def test_operators_are_refused_every_storm_and_report_endpoint(hub: Hub) -> None:
    console = hub.console("OP1")
    refused(console.post("/storm", {"types": ["ACPWR"], "on": True}), 403, "OPS-ROLE")
    refused(console.post("/storm/resolve", {"all": True, "resolution": "RSTR"}), 403, "OPS-ROLE")
    refused(console.post("/storm/pend", {"alarm_ids": [1]}), 403, "OPS-ROLE")
    refused(console.get("/storm"), 403, "OPS-ROLE")
    refused(console.get("/reports/handling?from=2027-01-01&to=2027-01-02"), 403, "OPS-ROLE")
    supervisor = hub.console("SUP")
    body = {"types": ["ACPWR"], "on": True}
    refused(supervisor.post("/storm", body, csrf="wrong"), 403, "CONSOLE-CSRF")


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"types": "ACPWR", "on": True}, 422, "CONSOLE-INPUT"),
        ({"types": [1], "on": True}, 422, "CONSOLE-INPUT"),
        ({"types": ["ACPWR"]}, 422, "CONSOLE-INPUT"),
        ({"types": ["ACPWR"], "on": True, "extra": 1}, 422, "CONSOLE-INPUT"),
        ({"types": [], "on": True}, 422, "OPS-STORM"),
        ({"types": ["NOSUC"], "on": True}, 422, "OPS-STORM"),
        ({"types": ["DURES"], "on": True}, 422, "OPS-STORM"),
    ],
)
def test_a_switch_the_api_cannot_use_is_refused(
    hub: Hub, body: dict[str, Any], status: int, code: str
) -> None:
    refused(hub.console("SUP").post("/storm", body), status, code)


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"resolution": "RSTR"}, "OPS-STORM"),
        ({"all": True, "alarm_ids": [1], "resolution": "RSTR"}, "OPS-STORM"),
        ({"alarm_ids": ["1"], "resolution": "RSTR"}, "CONSOLE-INPUT"),
        ({"alarm_ids": [0], "resolution": "RSTR"}, "CONSOLE-INPUT"),
        ({"types": ["ACPWR"], "resolution": "RSTR"}, "CONSOLE-INPUT"),
        ({"all": True}, "CONSOLE-INPUT"),
        ({"all": True, "resolution": "NOPE"}, "OPS-RESOLUTION"),
    ],
)
def test_a_batch_the_api_cannot_use_is_refused(hub: Hub, body: dict[str, Any], code: str) -> None:
    refused(hub.console("SUP").post("/storm/resolve", body), 422, code)


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({}, 422, "OPS-STORM"),
        ({"alarm_ids": []}, 422, "OPS-STORM"),
        ({"alarm_ids": [True]}, 422, "CONSOLE-INPUT"),
        ({"alarm_ids": [1], "all": True}, 422, "CONSOLE-INPUT"),
        ({"alarm_ids": [999_999]}, 409, "OPS-STATE"),
    ],
)
def test_a_storm_alarm_the_api_cannot_send_to_pending_is_refused(
    hub: Hub, body: dict[str, Any], status: int, code: str
) -> None:
    refused(hub.console("SUP").post("/storm/pend", body), status, code)


def test_a_supervisor_sends_one_storm_alarm_to_pending(hub: Hub) -> None:
    supervisor = hub.console("SUP")
    supervisor.ok("/storm", {"types": ["ACPWR"], "on": True})
    power = hub.post(FARM, "E301", "0")
    assert hub.state(power) == "storm"
    assert supervisor.ok("/storm/pend", {"alarm_ids": [power]})["pending"] == 1
    assert hub.state(power) == "pending"
    assert power in [r["alarm_id"] for r in queue_rows(supervisor.snapshot(), "pending")]
    refused(supervisor.post("/storm/pend", {"alarm_ids": [power]}), 409, "OPS-STATE")
    supervisor.ok("/storm", {"types": ["ACPWR"], "on": False})
    audit = hub.xm("XMHIST", ACCOUNT=FARM, HOURS="24", ARRAY="Y", SEARCHTYPE="OPR")["EVENT"]
    (record,) = [e for e in audit if e["INCIDENT_NUMBER"] == str(power) and e["TYPE"] == "STMPD"]
    assert record["OPR"] == "SUP"
    supervisor.ok(f"/alarms/{power}/take")
    supervisor.ok(f"/alarms/{power}/resolve", {"resolution": "RSTR"})


def test_storm_mode_on_off_and_batch_resolution(hub: Hub) -> None:
    supervisor = hub.console("SUP")
    on = supervisor.ok("/storm", {"types": ["acpwr"], "on": True})
    assert on["changed"] == ["ACPWR"]
    assert [(t["type"], t["by"]) for t in on["types"]] == [("ACPWR", "SUP")]
    assert supervisor.snapshot()["storm"]["types"][0]["type"] == "ACPWR"

    power = hub.post(SHOP, "E301", "0")
    burglary = hub.post(SHOP, "E130", "5")
    farm_power = hub.post(FARM, "E301", "0")
    assert hub.state(power) == hub.state(farm_power) == "storm"
    assert hub.state(burglary) == "pending"
    snapshot = supervisor.snapshot()
    pending = [r["alarm_id"] for r in queue_rows(snapshot, "pending")]
    assert burglary in pending and power not in pending and farm_power not in pending
    assert snapshot["storm"]["storm_list"] == 2
    xmapend = hub.xm("XMAPEND", SOURCE="DATAENTRY")["XMAPEND"]
    assert str(power) not in [r["INCIDENT_NUMBER"] for r in xmapend]
    assert str(burglary) in [r["INCIDENT_NUMBER"] for r in xmapend]
    history = hub.xm("XMHIST", ACCOUNT=SHOP, HOURS="24", ARRAY="Y")["EVENT"]
    paths = {e["INCIDENT_NUMBER"]: e["PR_CHECKSUM"] for e in history}
    assert (paths[str(power)], paths[str(burglary)]) == ("STORM", "PENDING")

    listed = supervisor.get("/storm").json()
    assert listed["storm_list"] == listed["total"] == 2
    rows = storm_rows(listed)
    assert {r["alarm_id"] for r in rows} == {power, farm_power}
    assert {r["company_name"] for r in rows} == {"Elm Shop", "Oak Farm"}

    off = supervisor.ok("/storm", {"types": ["ACPWR"], "on": False})
    assert (off["changed"], off["types"]) == (["ACPWR"], [])
    assert {r["alarm_id"] for r in storm_rows(off["list"])} == {power, farm_power}
    later = hub.post(FARM, "E301", "0")
    assert hub.state(later) == "pending"

    dispatched = supervisor.post("/storm/resolve", {"all": True, "resolution": "DISPF"})
    refused(dispatched, 409, "OPS-DISPATCH")  # nobody handled them: none was dispatched
    done = supervisor.ok("/storm/resolve", {"alarm_ids": [power], "resolution": "RSTR"})
    assert done["resolved"] == 1
    assert hub.state(power) == "resolved"
    again = supervisor.post("/storm/resolve", {"alarm_ids": [power], "resolution": "RSTR"})
    refused(again, 409, "OPS-STATE")
    rest = supervisor.ok("/storm/resolve", {"all": True, "resolution": "FAE", "note": "storm"})
    assert rest["resolved"] == 1
    assert hub.state(farm_power) == "resolved"
    assert supervisor.get("/storm").json()["storm_list"] == 0

    audit = hub.xm("XMHIST", ACCOUNT=SHOP, HOURS="24", ARRAY="Y", SEARCHTYPE="OPR")["EVENT"]
    (record,) = [e for e in audit if e["INCIDENT_NUMBER"] == str(power) and e["TYPE"] == "RSLV"]
    assert (record["OPR"], record["PR_CHECKSUM"]) == ("SUP", "OPERATOR")


def test_the_handling_report_for_supervisors(hub: Hub) -> None:
    supervisor = hub.console("SUP")
    medical = hub.post(FARM, "E100", "7")  # no step of its plan is required
    supervisor.ok(f"/alarms/{medical}/take")
    supervisor.ok(f"/alarms/{medical}/resolve", {"resolution": "FA"})
    today = datetime.now(UTC).date()
    window = f"from={today - timedelta(days=1)}&to={today + timedelta(days=1)}"
    answer = supervisor.get(f"/reports/handling?{window}")
    assert answer.status_code == 200, answer.text
    report = answer.json()["report"]
    assert report["handled"] >= 1
    med = next(t for t in report["by_type"] if t["type"] == "MED")
    assert med["take"]["count"] >= 1 and med["take"]["median_s"] is not None
    assert any(o["opr"] == "SUP" for o in report["by_operator"])
    farm = next(f for f in report["false_alarms"] if f["account_number"] == FARM)
    assert farm["company_name"] == "Oak Farm" and farm["by_code"]["FA"] >= 1
    assert report["dispatches"] == []
    for query in ("from=2027-1-1&to=2027-01-02", "to=2027-01-02", "from=2027-01-03&to=2027-01-02"):
        refused(supervisor.get(f"/reports/handling?{query}"), 422, "CONSOLE-INPUT")
