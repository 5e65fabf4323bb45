"""On test through the console API, on both databases: an operator puts an account on test
(``POST /console/api/accounts/{account}/test``), the test is in ``GET /tests`` and in the live
feed's snapshot with the operator recorded, a matching burglary stays out of pending (history
only, PR_CHECKSUM ONTEST in XMHIST), ``DELETE`` ends the test and a zone left open raises TEST END
NOT RESTORED; every refusal with its code (422 OPS-TEST, 404 OPS-ACCOUNT, 409 OPS-TEST, 422
CONSOLE-INPUT, 403 CONSOLE-CSRF, 401 CONSOLE-SESSION).

The node runs in the test's process; consoles sign in through the form and use the JSON API.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from alarmhub.core.account import Account
from alarmhub.core.alarm_types import TEST_END_NOT_RESTORED
from alarmhub.store import operators, provisioning, queries
from alarmhub.store.engine import open_engine
from tests.support.console_client import PASSWORD, Console, queue_rows
from tests.support.console_station import refused
from tests.support.database import database_url
from tests.support.node_hub import NodeHub, running
from tests.support.processes import cli, provision, wait_for

pytestmark = pytest.mark.backends("sqlite", "postgresql")

DNIS, MASK = "T1", "70####"
SHOP, FARM, MILL = "700002", "700003", "700004"
API_USER, API_PASSWORD = "integrator", "integrator-secret-1"
DEADLINE_S = 20


class Hub(NodeHub):
    def pending_of(self, account: str) -> list[dict[str, Any]]:
        with self.engine.connect() as conn:
            return [a for a in queries.pending_alarms(conn) if a["account_number"] == account]

    def xmhist(self, account: str, **fields: str) -> list[dict[str, Any]]:
        answer = self.xm("XMHIST", ACCOUNT=account, HOURS="24", ARRAY="Y", **fields)
        return list(answer["EVENT"])


@pytest.fixture(scope="module")
def hub(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    data_dir: Path = tmp_path_factory.mktemp("ontest")
    token = provision(data_dir)
    cli(data_dir, "dnis", "add", DNIS, "--mask", MASK)
    cli(data_dir, "apiuser", "add", API_USER, "--password", API_PASSWORD)
    engine = open_engine(database_url(data_dir))
    for number, name in ((SHOP, "Elm Shop"), (FARM, "Oak Farm"), (MILL, "Ash Mill")):
        provisioning.add_account(engine, Account(number, name))
    operators.add_operator(engine, "OP1", "Olive Operator", "operator", PASSWORD)
    api = (API_USER, API_PASSWORD)
    with running(Hub, data_dir, token, engine, DNIS, api, {"ALARMHUB_TIMEZONE": "UTC"}) as hub:
        yield hub


def delete(console: Console, account: str, body: object = None, csrf: str | None = None) -> Any:
    headers = {"X-CSRF-Token": console.csrf if csrf is None else csrf}
    if body is not None:
        headers["Content-Type"] = "application/json"
    return console.client.request(
        "DELETE",
        f"/console/api/accounts/{account}/test",
        headers=headers,
        content=None if body is None else httpx.Request("POST", "/", json=body).content,
    )


def test_an_operator_puts_an_account_on_test_and_ends_it(hub: Hub) -> None:
    console = hub.console("OP1")
    body = {"minutes": 30, "zones": ["3", "4"], "types": ["burg"], "by": "J Smith",
            "reason": "panel service"}  # fmt: skip
    test = console.ok(f"/accounts/{SHOP}/test", body)["test"]
    assert (test["account_number"], test["company_name"]) == (SHOP, "Elm Shop")
    assert (test["zones"], test["types"], test["opr"]) == (["003", "004"], ["BURG"], "OP1")
    assert test["minutes_left"] == 30

    listed = console.get("/tests").json()["tests"]
    assert [(t["account_number"], t["by"]) for t in listed] == [(SHOP, "J Smith")]
    wait_for(lambda: console.snapshot()["on_test"], "the test in the snapshot", DEADLINE_S)

    burglary = hub.post(SHOP, "E130", "003")
    left_open = hub.post(SHOP, "E130", "004")
    assert hub.pending_of(SHOP) == []
    assert burglary not in [a["alarm_id"] for a in queue_rows(console.snapshot(), "pending")]
    events = {e["INCIDENT_NUMBER"]: e for e in hub.xmhist(SHOP)}
    assert (events[str(burglary)]["PR_CHECKSUM"], events[str(burglary)]["ALARM_CATEGORY"]) == (
        "ONTEST", "S",
    )  # fmt: skip
    other_zone = hub.post(SHOP, "E130", "005")  # not on test: pends
    assert [a["alarm_id"] for a in hub.pending_of(SHOP)] == [other_zone]

    ended = delete(console, SHOP)
    assert ended.status_code == 200, ended.text
    answer = ended.json()
    assert [(x["incident_number"], x["restored"]) for x in answer["signals"]] == [
        (burglary, False),
        (left_open, False),
    ]
    raised = [a for a in hub.pending_of(SHOP) if a["type"] == TEST_END_NOT_RESTORED.type]
    assert sorted(a["hist_text"] for a in raised) == [
        "TEST END NOT RESTORED ZONE 003",
        "TEST END NOT RESTORED ZONE 004",
    ]
    assert "TSTOF" not in [e["TYPE"] for e in hub.xmhist(SHOP)]  # an operator's record:
    audit = hub.xmhist(SHOP, SEARCHTYPE="OPR")  # XMHIST shows it with SEARCHTYPE=OPR
    records = [(e["TYPE"], e["HIST_TEXT"], e["OPR"], e["ALARM_CATEGORY"]) for e in audit]
    assert ("TSTOF", "RETURN FROM TEST BY OP1", "OP1", "S") in records
    assert ("TSTON", "ON TEST 30 MIN BY J SMITH ZONES 003 004 TYPES BURG: PANEL SERVICE", "OP1",
            "S") in records  # fmt: skip
    assert console.get("/tests").json()["tests"] == []
    refused(delete(console, SHOP), 409, "OPS-TEST")


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"minutes": 0, "by": "x"}, 422, "OPS-TEST"),
        ({"minutes": 10081, "by": "x"}, 422, "OPS-TEST"),
        ({"minutes": 5, "by": "x", "zones": ["1000"]}, 422, "OPS-TEST"),
        ({"minutes": 5, "by": "x", "types": ["BU-RG"]}, 422, "OPS-TEST"),
        ({"minutes": 5, "by": "x", "types": ["NOPE"]}, 422, "OPS-TEST"),
        ({"minutes": 5, "by": "   "}, 422, "OPS-TEST"),
        ({"minutes": 5, "by": "x", "reason": "r" * 201}, 422, "OPS-TEST"),
        ({"minutes": "5", "by": "x"}, 422, "CONSOLE-INPUT"),
        ({"minutes": True, "by": "x"}, 422, "CONSOLE-INPUT"),
        ({"by": "x"}, 422, "CONSOLE-INPUT"),
        ({"minutes": 5}, 422, "CONSOLE-INPUT"),
        ({"minutes": 5, "by": "x", "zones": [3]}, 422, "CONSOLE-INPUT"),
        ({"minutes": 5, "by": "x", "zones": "003"}, 422, "CONSOLE-INPUT"),
        ({"minutes": 5, "by": "x", "until": "never"}, 422, "CONSOLE-INPUT"),
    ],
)
def test_refused_requests_change_nothing(
    hub: Hub, body: dict[str, Any], status: int, code: str
) -> None:
    console = hub.console("OP1")
    refused(console.post(f"/accounts/{FARM}/test", body), status, code)
    assert FARM not in [t["account_number"] for t in console.get("/tests").json()["tests"]]


def test_refusals_of_account_session_and_csrf(hub: Hub) -> None:
    console = hub.console("OP1")
    good = {"minutes": 5, "by": "x"}
    assert "799999" in refused(console.post("/accounts/799999/test", good), 404, "OPS-ACCOUNT")
    refused(console.post(f"/accounts/{'9' * 20}/test", good), 422, "CONSOLE-INPUT")
    refused(console.post(f"/accounts/{MILL}/test", good, csrf="wrong"), 403, "CONSOLE-CSRF")
    refused(delete(console, MILL, csrf="wrong"), 403, "CONSOLE-CSRF")
    refused(delete(console, MILL), 409, "OPS-TEST")
    refused(delete(console, MILL, {"by": 5}), 422, "CONSOLE-INPUT")
    stranger = Console(hub.station.url, hub.station.client._transport)
    try:
        refused(stranger.get("/tests"), 401, "CONSOLE-SESSION")
        refused(stranger.post(f"/accounts/{MILL}/test", good), 401, "CONSOLE-SESSION")
    finally:
        stranger.close()
    assert console.get("/tests").json()["tests"] == []
