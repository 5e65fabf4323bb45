"""Schedules, holidays and on test through the integrator API, on both databases: a node in the
test's process, keys of several scopes and account ranges. A dealer's key sets, reads and clears
an account's open/close schedule (ETag, If-Match), the station's and the accounts' holidays; a
technician's key puts an account on test, a burglary of it stays out of pending, the report shows
it, the test is stopped. Every change is an audit record naming the key; every refusal has its
code (403 API-SCOPE, 404 API-NOTFOUND the same for an account outside the range as for a missing
one, 409 API-CONFLICT, 412 API-ETAG, 422 API-INPUT).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from alarmhub.core.alarm_types import TEST_END_NOT_RESTORED
from alarmhub.store import queries
from tests.support.api_station import ApiHub, api_hub, problem

pytestmark = pytest.mark.backends("sqlite", "postgresql")

KEYS = {
    "station": (("accounts:read", "accounts:write", "test:write"), ""),
    "dealer": (("accounts:read", "accounts:write"), "70000"),
    "reader": (("accounts:read",), ""),
    "tech": (("accounts:read", "test:write"), "70000"),
}
MISSING = "700000"  # in the dealer's range, not an account
OTHER = "700020"  # an account outside the dealer's range


@pytest.fixture(scope="module")
def hub(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiHub]:
    data_dir: Path = tmp_path_factory.mktemp("apisupervision")
    with api_hub(data_dir, KEYS) as hub:
        yield hub


def same_as_missing(hub: ApiHub, key: str, method: str, path: str, body: Any = None) -> None:
    """``path`` of OTHER is answered exactly as the same path of a missing account."""
    hidden = problem(hub.call(key, method, path.format(OTHER), body), 404, "API-NOTFOUND")
    missing = problem(hub.call(key, method, path.format(MISSING), body), 404, "API-NOTFOUND")
    assert hidden == {**missing, "detail": missing["detail"].replace(MISSING, OTHER)}


# schedules --------------------------------------------------------------------------------------

WEEKDAYS = {"days": "mon-fri", "open": "08:00", "close": "17:30", "grace": 15,
            "timezone": "Europe/London", "late_to_open": True}  # fmt: skip


def test_a_dealer_sets_reads_and_clears_a_schedule(hub: ApiHub) -> None:
    path = "/accounts/700001/schedule"
    problem(hub.call("dealer", "GET", path), 404, "API-NOTFOUND")
    answer = hub.call("dealer", "PUT", path, WEEKDAYS)
    assert answer.status_code == 200, answer.text
    shown, etag = answer.json(), answer.headers["etag"]
    assert (shown["account"], shown["timezone"], shown["grace_min"]) == (
        "700001", "Europe/London", 15,
    )  # fmt: skip
    assert shown["late_to_open"] is True
    assert [w["day"] for w in shown["windows"]] == ["mon", "tue", "wed", "thu", "fri"]
    assert {(w["open"], w["close"]) for w in shown["windows"]} == {("08:00", "17:30")}
    read = hub.call("reader", "GET", path)  # supervision may have checked it since: not equal
    assert read.headers["etag"] == etag
    assert (read.json()["windows"], read.json()["grace_min"]) == (shown["windows"], 15)
    saturday = {"days": "sat", "open": "09:00", "close": "12:00"}
    stale = hub.call("dealer", "PUT", path, saturday, headers={"If-Match": '"stale"'})
    problem(stale, 412, "API-ETAG")
    answer = hub.call("dealer", "PUT", path, saturday, headers={"If-Match": etag})
    assert answer.status_code == 200, answer.text
    assert answer.headers["etag"] != etag
    assert [w["day"] for w in answer.json()["windows"]][-1] == "sat"
    problem(hub.call("dealer", "DELETE", path, headers={"If-Match": etag}), 412, "API-ETAG")
    cleared = hub.ok("dealer", "DELETE", path, params={"day": "sat"})
    assert cleared["removed"] == "the windows of sat"
    assert "sat" not in {w["day"] for w in cleared["schedule"]["windows"]}
    gone = hub.ok("dealer", "DELETE", path)
    assert gone == {"removed": "the schedule", "schedule": None}
    problem(hub.call("dealer", "GET", path), 404, "API-NOTFOUND")
    problem(hub.call("dealer", "DELETE", path), 404, "API-NOTFOUND")
    assert hub.audit_texts("700001") == [
        "API dealer: PUT SCHEDULE", "API dealer: PUT SCHEDULE", "API dealer: DELETE SCHEDULE",
        "API dealer: DELETE SCHEDULE",
    ]  # fmt: skip


def test_a_temporary_schedule_and_an_area(hub: ApiHub) -> None:
    path = "/accounts/700002/schedule"
    body = {"area": "2", "from": "2027-12-24", "to": "2027-12-26", "closed": True}
    shown = hub.ok("dealer", "PUT", path, body)
    assert shown["area"] == "2"
    assert shown["temporary"] == [
        {"from": "2027-12-24", "to": "2027-12-26", "open": None, "close": None, "closed": True}
    ]
    problem(hub.call("dealer", "GET", path), 404, "API-NOTFOUND")  # the whole account's: none
    assert hub.ok("dealer", "GET", path, params={"area": "2"})["temporary"] == shown["temporary"]
    span = {"area": "2", "from": "2027-12-24", "to": "2027-12-26"}
    removed = hub.ok("dealer", "DELETE", path, params=span)
    assert removed["removed"] == "the temporary schedule 2027-12-24 to 2027-12-26"
    problem(hub.call("dealer", "DELETE", path, params=span), 404, "API-NOTFOUND")


@pytest.mark.parametrize(
    "body",
    [
        {"days": "mon", "open": "25:00", "close": "17:00"},
        {"days": "funday", "open": "08:00", "close": "17:00"},
        {"days": "mon", "open": "08:00"},
        {"open": "08:00", "close": "17:00"},
        {"grace": -1},
        {"grace": "15"},
        {"late_to_open": "yes"},
        {"timezone": "Mars/Olympus"},
        {"from": "2027-01-02", "to": "2027-01-01", "closed": True},
        {"area": "xyz"},
        {"colour": "red"},
        [],
        "schedule",
    ],
)
def test_a_schedule_the_rules_refuse(hub: ApiHub, body: Any) -> None:
    answer = hub.call("dealer", "PUT", "/accounts/700003/schedule", body)
    problem(answer, 422, "API-INPUT")
    problem(hub.call("dealer", "GET", "/accounts/700003/schedule"), 404, "API-NOTFOUND")


def test_schedule_scopes_and_ranges(hub: ApiHub) -> None:
    problem(hub.call("reader", "PUT", "/accounts/700004/schedule", WEEKDAYS), 403, "API-SCOPE")
    problem(hub.call("reader", "DELETE", "/accounts/700004/schedule"), 403, "API-SCOPE")
    problem(hub.call("tech", "PUT", "/accounts/700004/schedule", WEEKDAYS), 403, "API-SCOPE")
    hub.ok("station", "PUT", f"/accounts/{OTHER}/schedule", WEEKDAYS)
    same_as_missing(hub, "dealer", "GET", "/accounts/{}/schedule")
    same_as_missing(hub, "dealer", "PUT", "/accounts/{}/schedule", WEEKDAYS)
    same_as_missing(hub, "dealer", "DELETE", "/accounts/{}/schedule")
    assert hub.ok("station", "GET", f"/accounts/{OTHER}/schedule")["grace_min"] == 15


# holidays ---------------------------------------------------------------------------------------


def test_the_station_s_holidays(hub: ApiHub) -> None:
    path = "/holidays/2027-12-25"
    problem(hub.call("dealer", "PUT", path, {"name": "Christmas"}), 403, "API-SCOPE")
    answer = hub.call("station", "PUT", path, {"name": "Christmas Day"})
    assert answer.status_code == 200, answer.text
    holiday, etag = answer.json(), answer.headers["etag"]
    assert holiday == {"date": "2027-12-25", "account": "", "name": "Christmas Day"}
    assert hub.ok("dealer", "GET", path) == holiday  # a ranged key reads them
    listed = hub.ok("dealer", "GET", "/holidays")
    assert holiday in listed["items"] and listed["next_cursor"] is None
    problem(hub.call("station", "PUT", path, {"name": "X"}, headers={"If-Match": '"x"'}),
            412, "API-ETAG")  # fmt: skip
    renamed = hub.call("station", "PUT", path, {"name": "Xmas"}, headers={"If-Match": etag})
    assert renamed.json()["name"] == "Xmas" and renamed.headers["etag"] != etag
    problem(hub.call("dealer", "DELETE", path), 403, "API-SCOPE")
    assert hub.ok("station", "DELETE", path)["removed"] is True
    problem(hub.call("station", "GET", path), 404, "API-NOTFOUND")
    problem(hub.call("station", "DELETE", path), 404, "API-NOTFOUND")
    assert hub.audit_texts("")[-3:] == [
        "API station: PUT HOLIDAY 2027-12-25", "API station: PUT HOLIDAY 2027-12-25",
        "API station: DELETE HOLIDAY 2027-12-25",
    ]  # fmt: skip


def test_an_account_s_own_holidays(hub: ApiHub) -> None:
    path = "/accounts/700005/holidays"
    hub.ok("dealer", "PUT", f"{path}/2027-07-05", {"name": "Shop closed"})
    hub.ok("dealer", "PUT", f"{path}/2027-07-04", {})
    first = hub.ok("dealer", "GET", path, params={"limit": "1"})
    assert [h["date"] for h in first["items"]] == ["2027-07-04"]
    rest = hub.ok("dealer", "GET", path, params={"cursor": first["next_cursor"]})
    assert rest == {
        "items": [{"date": "2027-07-05", "account": "700005", "name": "Shop closed"}],
        "next_cursor": None,
    }
    assert hub.ok("reader", "GET", f"{path}/2027-07-04")["name"] == ""
    problem(hub.call("station", "GET", "/holidays/2027-07-04"), 404, "API-NOTFOUND")
    hub.ok("dealer", "DELETE", f"{path}/2027-07-04")
    problem(hub.call("dealer", "GET", f"{path}/2027-07-04"), 404, "API-NOTFOUND")
    assert hub.audit_texts("700005") == [
        "API dealer: PUT HOLIDAY 2027-07-05", "API dealer: PUT HOLIDAY 2027-07-04",
        "API dealer: DELETE HOLIDAY 2027-07-04",
    ]  # fmt: skip
    hub.ok("station", "PUT", f"/accounts/{OTHER}/holidays/2027-07-04", {"name": "Closed"})
    same_as_missing(hub, "dealer", "GET", "/accounts/{}/holidays")
    same_as_missing(hub, "dealer", "GET", "/accounts/{}/holidays/2027-07-04")
    same_as_missing(hub, "dealer", "PUT", "/accounts/{}/holidays/2027-07-04", {"name": "x"})
    same_as_missing(hub, "dealer", "DELETE", "/accounts/{}/holidays/2027-07-04")


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("PUT", "/holidays/2027-13-01", {"name": "x"}),
        ("GET", "/holidays/christmas", None),
        ("PUT", "/holidays/2027-12-25", {"name": "x" * 61}),
        ("PUT", "/holidays/2027-12-25", {"name": 25}),
        ("PUT", "/holidays/2027-12-25", {"date": "2027-12-26"}),
        ("PUT", "/accounts/700006/holidays/2027-12-25", ["x"]),
        ("GET", "/holidays", {"limit": "0"}),
    ],
)
def test_a_holiday_the_rules_refuse(hub: ApiHub, method: str, path: str, body: Any) -> None:
    if method == "GET":
        answer = hub.call("station", method, path, params=body)
    else:
        answer = hub.call("station", method, path, body)
    problem(answer, 422, "API-INPUT")


# on test ----------------------------------------------------------------------------------------


def pending_of(hub: ApiHub, account: str) -> list[dict[str, Any]]:
    with hub.engine.connect() as conn:
        return [a for a in queries.pending_alarms(conn) if a["account_number"] == account]


def test_a_technician_puts_an_account_on_test(hub: ApiHub) -> None:
    account, path = "700007", "/accounts/700007/test"
    problem(hub.call("tech", "GET", path), 404, "API-NOTFOUND")
    problem(hub.call("tech", "GET", f"{path}/report"), 404, "API-NOTFOUND")
    body = {"minutes": 30, "zones": ["1"], "types": ["BURG"], "reason": "new keypad"}
    test = hub.ok("tech", "POST", path, body)
    assert (test["account"], test["company_name"], test["by"]) == (
        account, "Subscriber 7", "tech",
    )  # fmt: skip
    assert (test["zones"], test["types"], test["reason"]) == (["001"], ["BURG"], "new keypad")
    assert test["minutes_left"] == 30 and test["ends"].endswith("Z")
    assert hub.ok("tech", "GET", path) == test
    incident = hub.post(account, "E130", zone="1")
    assert pending_of(hub, account) == []  # on test: history only
    report = hub.ok("tech", "GET", f"{path}/report")
    assert report["test"]["ended"] is None and report["test"]["by"] == "tech"
    (signal,) = report["signals"]
    assert (signal["incident_number"], signal["code"], signal["zone"]) == (incident, "E130", "001")
    assert signal["restored"] is False and signal["received"].endswith("Z")
    stopped = hub.ok("tech", "DELETE", path)
    assert stopped["test"]["ended"] is not None and stopped["test"]["ended_by"] == "tech"
    assert stopped["signals"] == report["signals"]
    problem(hub.call("tech", "GET", path), 404, "API-NOTFOUND")
    assert hub.ok("reader", "GET", f"{path}/report")["test"] == stopped["test"]
    problem(hub.call("tech", "DELETE", path), 409, "API-CONFLICT")
    assert hub.audit_texts(account) == ["API tech: POST TEST", "API tech: DELETE TEST"]
    # zone 1 was left open: the return raised TEST END NOT RESTORED
    assert [a["type"] for a in pending_of(hub, account)] == [TEST_END_NOT_RESTORED.type]


def test_who_asked_for_a_test_and_who_ended_it(hub: ApiHub) -> None:
    path = "/accounts/700008/test"
    test = hub.ok("station", "POST", path, {"minutes": 5, "by": "J Smith"})
    assert (test["by"], test["zones"], test["types"]) == ("J Smith", [], [])
    longer = hub.ok("station", "POST", path, {"minutes": 90})
    assert (longer["by"], longer["minutes_left"]) == ("station", 90)
    stopped = hub.ok("station", "DELETE", path, params={"by": "A Tech"})
    assert stopped["test"]["ended_by"] == "A Tech"


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"minutes": 0},
        {"minutes": 10081},
        {"minutes": "30"},
        {"minutes": True},
        {"minutes": 30, "zones": "1"},
        {"minutes": 30, "zones": [1]},
        {"minutes": 30, "zones": ["abc"]},
        {"minutes": 30, "types": ["burglary!"]},
        {"minutes": 30, "types": ["BRUG"]},  # not a TYPE of the station
        {"minutes": 30, "by": "x" * 41},
        {"minutes": 30, "reason": "x" * 201},
        {"minutes": 30, "colour": "red"},
        "test",
    ],
)
def test_a_test_the_rules_refuse(hub: ApiHub, body: Any) -> None:
    problem(hub.call("tech", "POST", "/accounts/700009/test", body), 422, "API-INPUT")
    problem(hub.call("tech", "GET", "/accounts/700009/test"), 404, "API-NOTFOUND")


def test_on_test_scopes_and_ranges(hub: ApiHub) -> None:
    body = {"minutes": 30}
    problem(hub.call("reader", "POST", "/accounts/700006/test", body), 403, "API-SCOPE")
    problem(hub.call("dealer", "POST", "/accounts/700006/test", body), 403, "API-SCOPE")
    problem(hub.call("reader", "DELETE", "/accounts/700006/test"), 403, "API-SCOPE")
    hub.ok("station", "POST", f"/accounts/{OTHER}/test", body)
    same_as_missing(hub, "tech", "GET", "/accounts/{}/test")
    same_as_missing(hub, "tech", "GET", "/accounts/{}/test/report")
    same_as_missing(hub, "tech", "POST", "/accounts/{}/test", body)
    same_as_missing(hub, "tech", "DELETE", "/accounts/{}/test")
    assert hub.ok("station", "GET", f"/accounts/{OTHER}/test")["by"] == "station"
    hub.ok("station", "DELETE", f"/accounts/{OTHER}/test")
