"""Alarms, history and alarm types through the integrator API, on both databases: a node in the
test's process gets signals (alarms), an operator takes one (an operator's action), and keys of
several scopes and account ranges read them: the open alarms a page at a time, one alarm with
its events and actions, an account's history with the XMHIST filters, the alarm types; every
refusal with its code (401 API-AUTH, 403 API-SCOPE, 404 API-NOTFOUND with the same body for an
account or alarm outside the key's range as for a missing one, 422 API-INPUT).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from alarmhub.core.alarm_types import DEFAULTS
from tests.support.api_station import ApiHub, api_hub, problem

pytestmark = pytest.mark.backends("sqlite", "postgresql")

KEYS = {
    "station": (("accounts:read", "alarms:read"), ""),
    "dealer": (("accounts:read", "alarms:read"), "70000"),
    "reader": (("accounts:read",), ""),
    "watcher": (("alarms:read",), ""),
    "dealer2": (("accounts:write",), "70000"),
}
API_USER = ("integrator", "integrator-secret-1")
MISSING = "700000"  # in the dealer's range, not an account


@pytest.fixture(scope="module")
def hub(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiHub]:
    data_dir: Path = tmp_path_factory.mktemp("apialarms")
    with api_hub(data_dir, KEYS, api_user=API_USER) as hub:
        hub.console("OP1")  # signed in before any alarm, not receiving: alarms stay pending
        yield hub


def pages(hub: ApiHub, key: str, path: str, **params: str) -> list[dict[str, Any]]:
    """Every item of a paginated list, following ``next_cursor``."""
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        sent = {**params, **({"cursor": cursor} if cursor else {})}
        answer = hub.ok(key, "GET", path, params=sent)
        assert set(answer) == {"items", "next_cursor"}
        items += answer["items"]
        cursor = answer["next_cursor"]
        if cursor is None:
            return items


def test_open_alarms_of_the_key_s_range(hub: ApiHub) -> None:
    mine = hub.post("700001", "E130", zone="3")
    other = hub.post("700012", "E130", zone="3")
    listed = {a["alarm_id"]: a for a in hub.ok("station", "GET", "/alarms")["items"]}
    assert {mine, other} <= set(listed)
    alarm = listed[mine]
    assert (alarm["account"], alarm["state"], alarm["type"], alarm["opr"]) == (
        "700001", "pending", "BURG", None,
    )  # fmt: skip
    assert alarm["company_name"] == "Subscriber 1"
    assert alarm["priority"] == hub.alarm(mine)["priority"]
    assert alarm["hist_text"] == hub.alarm(mine)["hist_text"]
    received = datetime.fromisoformat(alarm["received_at"])
    assert alarm["received_at"].endswith("Z") and received.tzinfo == UTC
    dealer = {a["alarm_id"] for a in hub.ok("dealer", "GET", "/alarms")["items"]}
    assert mine in dealer and other not in dealer
    assert all(a["account"].startswith("70000") for a in pages(hub, "dealer", "/alarms"))
    in_process = hub.ok("station", "GET", "/alarms", params={"state": "in_process"})["items"]
    assert mine not in {a["alarm_id"] for a in in_process}


def test_one_alarm_with_its_events_and_the_operators_actions(hub: ApiHub) -> None:
    alarm_id = hub.post("700002", "E130", zone="4")
    hub.console("OP1").ok(f"/alarms/{alarm_id}/take")
    shown = hub.ok("dealer", "GET", f"/alarms/{alarm_id}")
    assert (shown["alarm_id"], shown["account"], shown["state"], shown["opr"]) == (
        alarm_id, "700002", "in_process", "OP1",
    )  # fmt: skip
    assert shown["taken_at"] is not None and shown["resolved_at"] is None
    (signal,) = [e for e in shown["events"] if e["incident_number"] == alarm_id]
    assert (signal["code"], signal["zone"], signal["pr_checksum"]) == ("E130", "004", "PENDING")
    assert shown["actions"] and all(a["pr_checksum"] == "OPERATOR" for a in shown["actions"])
    assert {a["opr"] for a in shown["actions"]} == {"OP1"}
    taken = hub.ok("station", "GET", "/alarms", params={"state": "in_process"})["items"]
    assert alarm_id in {a["alarm_id"] for a in taken}


def test_an_alarm_outside_the_range_is_answered_as_a_missing_one(hub: ApiHub) -> None:
    other = hub.post("700013", "E130", zone="5")
    hub.ok("station", "GET", f"/alarms/{other}")
    hidden = problem(hub.call("dealer", "GET", f"/alarms/{other}"), 404, "API-NOTFOUND")
    missing = problem(hub.call("dealer", "GET", "/alarms/999999999"), 404, "API-NOTFOUND")
    assert hidden == {**missing, "detail": missing["detail"].replace("999999999", str(other))}
    problem(hub.call("station", "GET", "/alarms/abc"), 404, "API-NOTFOUND")
    problem(hub.call("station", "GET", "/alarms/" + "9" * 40), 404, "API-NOTFOUND")


def test_the_open_alarms_a_page_at_a_time(hub: ApiHub) -> None:
    raised = [hub.post("700005", "E130", zone=str(zone)) for zone in (1, 2, 3)]
    every = pages(hub, "station", "/alarms", limit="1")
    ids = [a["alarm_id"] for a in every]
    assert ids == sorted(set(ids))
    assert [i for i in ids if i in raised] == raised
    whole = hub.ok("station", "GET", "/alarms", params={"limit": "1000"})
    assert whole["next_cursor"] is None
    assert [a["alarm_id"] for a in whole["items"]] == ids


@pytest.mark.parametrize(
    "params",
    [
        {"limit": "0"},
        {"limit": "1001"},
        {"limit": "x"},
        {"cursor": "eA"},  # "x"
        {"cursor": "bm90IGFuIGlk"},  # "not an id"
        {"state": "resolved"},
        {"colour": "red"},
    ],
)
def test_a_bad_list_request_is_refused(hub: ApiHub, params: dict[str, str]) -> None:
    problem(hub.call("station", "GET", "/alarms", params=params), 422, "API-INPUT")


def test_keys_and_scopes(hub: ApiHub) -> None:
    problem(hub.call(None, "GET", "/alarms"), 401, "API-AUTH")
    wrong = {"Authorization": "Bearer ahk_" + "x" * 43}
    problem(hub.station.client.get("/api/v1/alarms", headers=wrong), 401, "API-AUTH")
    problem(hub.call("reader", "GET", "/alarms"), 403, "API-SCOPE")
    problem(hub.call("reader", "GET", "/alarms/1"), 403, "API-SCOPE")
    problem(hub.call("reader", "GET", "/accounts/700001/history"), 403, "API-SCOPE")
    problem(hub.call("watcher", "GET", "/alarm-types"), 403, "API-SCOPE")
    problem(hub.call("watcher", "GET", "/alarm-types/130"), 403, "API-SCOPE")


# history ----------------------------------------------------------------------------------------


def test_history_with_the_xmhist_filters(hub: ApiHub) -> None:
    account = "700006"
    alarm_id = hub.post(account, "E130", zone="1")
    hub.console("OP1").ok(f"/alarms/{alarm_id}/take")
    path = f"/accounts/{account}/history"
    plain = pages(hub, "dealer", path)
    assert [e["incident_number"] for e in plain] == [alarm_id]
    (event,) = plain
    assert (event["account"], event["code"], event["type"], event["pr_checksum"]) == (
        account, "E130", "BURG", "PENDING",
    )  # fmt: skip
    with_opr = pages(hub, "dealer", path, search_type="OPR")
    assert {e["pr_checksum"] for e in with_opr} == {"PENDING", "OPERATOR"}
    times = [(e["received_at"], e["event_id"]) for e in with_opr]
    assert times == sorted(times, reverse=True)  # newest first
    assert pages(hub, "dealer", path, search_type="OPR", limit="1") == with_opr
    assert pages(hub, "dealer", path, service_only="true") == []
    assert pages(hub, "dealer", path, no_multiples="true") == []  # its alarm is still open
    today = datetime.now(UTC).date().isoformat()
    dated = pages(hub, "dealer", path, start_date=today, stop_date=today, search_type="OPR")
    assert dated == with_opr
    timed = {"start_date": today, "stop_date": today, "start_time": "00:00", "stop_time": "00:00"}
    assert pages(hub, "dealer", path, **timed) == []
    old = {"start_date": "2001-01-01", "stop_date": "2001-01-31"}
    assert pages(hub, "dealer", path, **old) == []
    assert pages(hub, "dealer", path, hours="1", search_type="OPR") == with_opr


def test_the_api_s_audit_records_are_operator_records(hub: ApiHub) -> None:
    account = "700007"
    hub.ok("dealer2", "PUT", f"/accounts/{account}/zones/5", {"description": "BACK DOOR"}, 201)
    assert hub.audit_texts(account) == ["API dealer2: PUT ZONE 005"]
    path = f"/accounts/{account}/history"
    assert pages(hub, "dealer", path) == []
    (record,) = pages(hub, "dealer", path, search_type="OPR")
    assert (record["type"], record["pr_checksum"], record["hist_text"]) == (
        "API", "API", "API dealer2: PUT ZONE 005",
    )  # fmt: skip
    xmhist = {"ACCOUNT": account, "HOURS": "24", "ARRAY": "Y"}
    assert hub.xm("XMHIST", **xmhist)["EVENT"] == []
    (event,) = hub.xm("XMHIST", **xmhist, SEARCHTYPE="OPR")["EVENT"]
    assert (event["TYPE"], event["PR_CHECKSUM"], event["HIST_TEXT"]) == (
        "API", "API", "API dealer2: PUT ZONE 005",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"hours": "0"}, "hours"),
        ({"hours": "x"}, "hours"),
        ({"start_date": "2026-01-01"}, "start_date"),
        ({"start_date": "2026/01/01", "stop_date": "2026-01-02"}, "start_date"),
        ({"start_date": "2026-02-30", "stop_date": "2026-03-01"}, "start_date"),
        ({"start_date": "2026-01-01", "stop_date": "2026-01-02", "start_time": "25:00"},
         "start_time"),
        ({"start_date": "2026-01-01", "stop_date": "2026-01-02", "stop_time": "1200"},
         "stop_time"),
        ({"search_type": "ALL"}, "search_type"),
        ({"service_only": "Y"}, "service_only"),
        ({"no_multiples": "yes"}, "no_multiples"),
        ({"cursor": "MTIz"}, "cursor"),  # "123": not received_us.event_id
        ({"account": "700001"}, "account"),
    ],
)  # fmt: skip
def test_a_bad_history_filter_is_refused(hub: ApiHub, params: dict[str, str], named: str) -> None:
    answer = hub.call("station", "GET", "/accounts/700001/history", params=params)
    body = problem(answer, 422, "API-INPUT")
    assert named in body["detail"] or "hours" in body["detail"], body


def test_history_outside_the_range_is_answered_as_a_missing_account(hub: ApiHub) -> None:
    hub.post("700014", "E130", zone="1")
    assert pages(hub, "station", "/accounts/700014/history")
    hidden = problem(hub.call("dealer", "GET", "/accounts/700014/history"), 404, "API-NOTFOUND")
    missing = problem(hub.call("dealer", "GET", f"/accounts/{MISSING}/history"), 404,
                      "API-NOTFOUND")  # fmt: skip
    assert hidden == {**missing, "detail": missing["detail"].replace(MISSING, "700014")}
    problem(hub.call("station", "GET", "/accounts/%20/history"), 404, "API-NOTFOUND")


# alarm types ------------------------------------------------------------------------------------


def test_the_alarm_types(hub: ApiHub) -> None:
    every = pages(hub, "reader", "/alarm-types", limit="50")
    codes = [t["code"] for t in every]
    assert codes == sorted(DEFAULTS) and len(codes) > 50
    answer = hub.call("dealer", "GET", "/alarm-types/130")
    assert answer.status_code == 200 and answer.headers["etag"].startswith('"')
    burglary = answer.json()
    assert (burglary["type"], burglary["overridden"]) == ("BURG", False)
    assert burglary == next(t for t in every if t["code"] == "130")
    problem(hub.call("reader", "GET", "/alarm-types/13x"), 404, "API-NOTFOUND")
    problem(hub.call("reader", "GET", "/alarm-types", params={"limit": "0"}), 422, "API-INPUT")
