"""Open/close schedules through the console API, on both databases: a supervisor sets, shows
and removes an account's schedule (``/console/api/schedules/{account}``) and the station's
holidays (``/console/api/holidays``); an operator records a manual open and close
(``POST /accounts/{account}/openclose``); the alarm screen of a LATE TO CLOSE shows the
account's schedule block (today's windows, the last opening and closing and by whom, its open
late alarm); every refusal with its code (403 OPS-ROLE, 422 and 404 OPS-SCHEDULE, 409
OPS-SCHEDULE, 404 OPS-ACCOUNT, 422 CONSOLE-INPUT, 403 CONSOLE-CSRF, 401 CONSOLE-SESSION), and
a refusal changes nothing.

The node runs in the test's process with the station in UTC; consoles sign in through the form.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from alarmhub.core.alarm_types import LATE_TO_CLOSE
from alarmhub.core.response import PanelUser
from alarmhub.core.schedules import DAYS
from alarmhub.store import queries, response
from tests.support.console_client import Console
from tests.support.console_station import DNIS, provision_console, refused
from tests.support.node_hub import NodeHub, running
from tests.support.processes import wait_for
from tests.support.schedules import STATION_ENV, closed_a_minute_ago

pytestmark = pytest.mark.backends("sqlite", "postgresql")

SHOP, FARM, MILL, LATE, BARE = "700002", "700003", "700004", "700005", "700006"
DEADLINE_S = 30


@pytest.fixture(scope="module")
def hub(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeHub]:
    data_dir: Path = tmp_path_factory.mktemp("schedcon")
    token, engine = provision_console(data_dir)
    with running(NodeHub, data_dir, token, engine, DNIS, env=STATION_ENV) as hub:
        yield hub.sign_in_all(("SUP", "OP1", "OP2"))


def delete(console: Console, path: str, params: dict[str, str] | None = None,
           csrf: str | None = None) -> httpx.Response:  # fmt: skip
    headers = {"X-CSRF-Token": console.csrf if csrf is None else csrf}
    return console.client.request(
        "DELETE", f"/console/api{path}", params=params or {}, headers=headers
    )


def schedule_of(console: Console, account: str) -> Any:
    answer = console.get(f"/schedules/{account}")
    assert answer.status_code == 200, answer.text
    return answer.json()["schedule"]


def test_a_supervisor_sets_shows_and_removes_a_schedule(hub: NodeHub) -> None:
    sup = hub.console("SUP")
    shown = sup.get(f"/schedules/{SHOP}").json()
    assert (shown["account_number"], shown["company_name"], shown["schedule"]) == (
        SHOP, "Subscriber 2", None,
    )  # fmt: skip

    body = {"days": "mon-fri", "open": "08:00", "close": "18:00", "grace": 15}
    schedule = sup.ok(f"/schedules/{SHOP}", body)["schedule"]
    assert [(w["day"], w["open"], w["close"]) for w in schedule["windows"]] == [
        (day, "08:00", "18:00") for day in DAYS[:5]
    ]
    assert (schedule["grace_min"], schedule["timezone"]) == (15, "UTC")
    assert (schedule["late_to_open"], schedule["late_to_close"], schedule["early_close"]) == (
        True, True, False,
    )  # fmt: skip
    again = sup.ok(f"/schedules/{SHOP}", {**body, "days": "fri-mon"})["schedule"]
    assert [w["day"] for w in again["windows"]] == ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]

    settings = {"timezone": "America/New_York", "late_to_open": False, "early_close": True,
                "early_grace": 5, "grace": 0}  # fmt: skip
    changed = sup.ok(f"/schedules/{SHOP}", settings)["schedule"]
    assert (changed["timezone"], changed["late_to_open"], changed["early_close"]) == (
        "America/New_York", False, True,
    )  # fmt: skip
    assert (changed["grace_min"], changed["early_grace_min"]) == (0, 5)
    assert len(changed["windows"]) == 7

    short = {"from": "2030-12-24", "to": "2030-12-24", "open": "08:00", "close": "12:00"}
    closed = {"from": "2030-12-27", "to": "2030-12-31", "closed": True}
    sup.ok(f"/schedules/{SHOP}", short)
    temporary = sup.ok(f"/schedules/{SHOP}", closed)["schedule"]["temporary"]
    assert temporary == [
        {"from": "2030-12-24", "to": "2030-12-24", "open": "08:00", "close": "12:00",
         "closed": False},
        {"from": "2030-12-27", "to": "2030-12-31", "open": None, "close": None, "closed": True},
    ]  # fmt: skip

    weekend = delete(sup, f"/schedules/{SHOP}", {"day": "sat-sun"})
    assert weekend.status_code == 200, weekend.text
    assert weekend.json()["removed"] == "the windows of sat,sun"
    assert [w["day"] for w in weekend.json()["schedule"]["windows"]] == list(DAYS[:5])
    ranged = delete(sup, f"/schedules/{SHOP}", {"from": "2030-12-27", "to": "2030-12-31"})
    assert [t["from"] for t in ranged.json()["schedule"]["temporary"]] == ["2030-12-24"]
    refused(delete(sup, f"/schedules/{SHOP}", {"from": "2030-12-27", "to": "2030-12-31"}),
            404, "OPS-SCHEDULE")  # fmt: skip

    whole = delete(sup, f"/schedules/{SHOP}")
    assert (whole.json()["removed"], whole.json()["schedule"]) == ("the schedule", None)
    assert schedule_of(sup, SHOP) is None
    assert "no schedule" in refused(delete(sup, f"/schedules/{SHOP}"), 404, "OPS-SCHEDULE")


def test_a_supervisor_adds_and_removes_holidays(hub: NodeHub) -> None:
    sup = hub.console("SUP")
    sup.ok(f"/schedules/{FARM}", {"days": "mon", "open": "09:00", "close": "17:00"})
    station = sup.ok("/holidays", {"date": "2030-12-25", "name": " Christmas Day "})
    assert {"date": "2030-12-25", "account_number": "", "name": "Christmas Day"} in station[
        "holidays"
    ]
    sup.ok("/holidays", {"date": "2030-12-26", "account": FARM, "name": "Stocktaking"})
    listed = sup.get("/holidays").json()["holidays"]
    assert [(h["date"], h["account_number"]) for h in listed if h["date"] >= "2030"] == [
        ("2030-12-25", ""), ("2030-12-26", FARM),
    ]  # fmt: skip
    shown = schedule_of(sup, FARM)["holidays"]
    assert [(h["date"], h["name"]) for h in shown if h["date"] >= "2030"] == [
        ("2030-12-25", "Christmas Day"), ("2030-12-26", "Stocktaking"),
    ]  # fmt: skip

    gone = delete(sup, "/holidays", {"date": "2030-12-26", "account": FARM})
    assert gone.status_code == 200, gone.text
    assert "2030-12-26" not in [h["date"] for h in gone.json()["holidays"]]
    refused(delete(sup, "/holidays", {"date": "2030-12-26", "account": FARM}), 404, "OPS-SCHEDULE")
    refused(delete(sup, "/holidays", {"date": "2030-12-25", "account": MILL}), 404, "OPS-SCHEDULE")
    assert delete(sup, "/holidays", {"date": "2030-12-25"}).status_code == 200
    assert [h for h in sup.get("/holidays").json()["holidays"] if h["date"] >= "2030"] == []


def test_the_alarm_screen_shows_the_schedule_and_operators_open_and_close(hub: NodeHub) -> None:
    sup, op = hub.console("SUP"), hub.console("OP1")
    response.set_user(hub.engine, PanelUser(LATE, "003", "Ursula User"))
    window, close = closed_a_minute_ago()
    days, opens, closes = window[1], window[3], window[5]
    body = {"days": days, "open": opens, "close": closes, "late_to_open": False}
    sup.ok(f"/schedules/{LATE}", body)

    def late() -> list[dict[str, Any]]:
        with hub.engine.connect() as conn:
            return [
                a
                for a in queries.pending_alarms(conn)
                if a["account_number"] == LATE and a["type"] == LATE_TO_CLOSE.type
            ]

    [alarm] = wait_for(late, "LATE TO CLOSE raised", DEADLINE_S)
    detail = op.get(f"/alarms/{alarm['alarm_id']}").json()
    block = detail["schedule"]
    today = datetime.now(UTC).date()
    assert (block["area"], block["timezone"], block["today"]["date"]) == ("", "UTC", str(today))
    opened_today = (close - timedelta(hours=1)).date() == today  # the window opens an hour before
    expected = [(opens, closes)] if opened_today else []
    assert [(w["open"], w["close"]) for w in block["today"]["windows"]] == expected
    assert (block["last_open"], block["last_close"]) == (None, None)
    assert block["alarms"] == {"lto": None, "ltc": alarm["alarm_id"]}

    hub.post(LATE, "R401", "3")  # the panel closes: user 003
    manual = op.ok(f"/accounts/{LATE}/openclose", {"opening": True})["openclose"]
    assert manual == {"account_number": LATE, "area": "", "opening": True, "opr": "OP1"}
    block = op.get(f"/alarms/{alarm['alarm_id']}").json()["schedule"]
    assert block["last_close"]["user"] == "003"
    assert block["last_close"]["user_name"] == "Ursula User"
    assert (block["last_close"]["opr"], block["last_open"]["opr"]) == (None, "OP1")
    assert block["last_open"]["user"] == ""
    op.ok(f"/accounts/{LATE}/openclose", {"opening": False, "area": ""})
    block = op.get(f"/alarms/{alarm['alarm_id']}").json()["schedule"]
    assert (block["last_close"]["opr"], block["last_close"]["user"]) == ("OP1", "")

    other = hub.post(BARE, "E130", "4")  # an account with no schedule
    assert op.get(f"/alarms/{other}").json()["schedule"] is None


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"days": "funday", "open": "08:00", "close": "18:00"}, 422, "OPS-SCHEDULE"),
        ({"days": "mon", "open": "25:00", "close": "18:00"}, 422, "OPS-SCHEDULE"),
        ({"days": "mon", "open": "08:00"}, 422, "OPS-SCHEDULE"),
        ({"days": "mon"}, 422, "OPS-SCHEDULE"),
        ({"open": "08:00", "close": "18:00"}, 422, "OPS-SCHEDULE"),
        ({"from": "2030-01-02", "to": "2030-01-01", "closed": True}, 422, "OPS-SCHEDULE"),
        ({"from": "2030-13-01", "to": "2030-12-01", "closed": True}, 422, "OPS-SCHEDULE"),
        ({"from": "2030-01-01", "closed": True}, 422, "OPS-SCHEDULE"),
        ({"closed": True}, 422, "OPS-SCHEDULE"),
        ({"grace": 1441}, 422, "OPS-SCHEDULE"),
        ({"early_grace": -1}, 422, "OPS-SCHEDULE"),
        ({"timezone": "Mars/Olympus_Mons"}, 422, "OPS-SCHEDULE"),
        ({"timezone": "../../etc/passwd"}, 422, "OPS-SCHEDULE"),
        ({"timezone": "x" * 200}, 422, "OPS-SCHEDULE"),
        ({"area": "ABC"}, 422, "OPS-SCHEDULE"),
        ({"grace": "15"}, 422, "CONSOLE-INPUT"),
        ({"late_to_open": "no"}, 422, "CONSOLE-INPUT"),
        ({"days": ["mon"]}, 422, "CONSOLE-INPUT"),
        ({"weekdays": "mon"}, 422, "CONSOLE-INPUT"),
    ],
)
def test_refused_schedule_changes_change_nothing(
    hub: NodeHub, body: dict[str, Any], status: int, code: str
) -> None:
    sup = hub.console("SUP")
    refused(sup.post(f"/schedules/{MILL}", body), status, code)
    assert schedule_of(sup, MILL) is None


def test_refusals_of_role_account_input_session_and_csrf(hub: NodeHub) -> None:
    sup, op = hub.console("SUP"), hub.console("OP2")
    window = {"days": "mon", "open": "08:00", "close": "18:00"}
    for answer in (
        op.get(f"/schedules/{MILL}"),
        op.post(f"/schedules/{MILL}", window),
        delete(op, f"/schedules/{MILL}"),
        op.get("/holidays"),
        op.post("/holidays", {"date": "2030-01-01"}),
        delete(op, "/holidays", {"date": "2030-01-01"}),
    ):
        refused(answer, 403, "OPS-ROLE")
    assert schedule_of(sup, MILL) is None

    assert "799999" in refused(sup.get("/schedules/799999"), 404, "OPS-ACCOUNT")
    refused(sup.post("/schedules/799999", window), 404, "OPS-ACCOUNT")
    refused(sup.post("/holidays", {"date": "2030-01-01", "account": "799999"}), 404, "OPS-ACCOUNT")
    refused(op.post("/accounts/799999/openclose", {"opening": True}), 404, "OPS-ACCOUNT")
    refused(sup.get(f"/schedules/{'9' * 20}"), 422, "CONSOLE-INPUT")
    refused(sup.get(f"/schedules/{MILL}?area=ABC"), 422, "OPS-SCHEDULE")
    refused(sup.get(f"/schedules/{MILL}?week=1"), 422, "CONSOLE-INPUT")
    refused(sup.post(f"/schedules/{MILL}", raw=b"[1, 2]"), 422, "CONSOLE-INPUT")
    refused(sup.post(f"/schedules/{MILL}", raw=b"{not json"), 422, "CONSOLE-INPUT")

    says = refused(op.post(f"/accounts/{MILL}/openclose", {"opening": True}), 409, "OPS-SCHEDULE")
    assert "no schedule" in says
    refused(op.post(f"/accounts/{MILL}/openclose", {"opening": "yes"}), 422, "CONSOLE-INPUT")
    refused(op.post(f"/accounts/{MILL}/openclose", {}), 422, "CONSOLE-INPUT")
    refused(op.post(f"/accounts/{MILL}/openclose", {"opening": True, "area": "1234"}), 422,
            "OPS-SCHEDULE")  # fmt: skip

    refused(delete(sup, f"/schedules/{MILL}", {"day": "mon"}), 404, "OPS-SCHEDULE")
    refused(delete(sup, f"/schedules/{MILL}", {"day": "noday"}), 422, "OPS-SCHEDULE")
    refused(delete(sup, f"/schedules/{MILL}", {"from": "2030-01-01"}), 422, "OPS-SCHEDULE")
    both = {"day": "mon", "from": "2030-01-01", "to": "2030-01-01"}
    refused(delete(sup, f"/schedules/{MILL}", both), 422, "OPS-SCHEDULE")
    refused(delete(sup, f"/schedules/{MILL}", {"when": "now"}), 422, "CONSOLE-INPUT")
    refused(delete(sup, f"/schedules/{MILL}", {"day": "m" * 100}), 422, "CONSOLE-INPUT")

    refused(sup.post("/holidays", {"date": "25/12/2030"}), 422, "OPS-SCHEDULE")
    refused(sup.post("/holidays", {"date": "2030-01-01", "name": "n" * 61}), 422, "OPS-SCHEDULE")
    refused(sup.post("/holidays", {"name": "no date"}), 422, "CONSOLE-INPUT")
    refused(sup.post("/holidays", {"date": 20300101}), 422, "CONSOLE-INPUT")
    refused(delete(sup, "/holidays"), 422, "CONSOLE-INPUT")
    refused(delete(sup, "/holidays", {"date": "tomorrow"}), 422, "OPS-SCHEDULE")
    assert [h for h in sup.get("/holidays").json()["holidays"] if h["date"] < "2031"] == []

    refused(sup.post(f"/schedules/{MILL}", window, csrf="wrong"), 403, "CONSOLE-CSRF")
    refused(delete(sup, "/holidays", {"date": "2030-01-01"}, csrf="wrong"), 403, "CONSOLE-CSRF")
    refused(op.post(f"/accounts/{MILL}/openclose", {"opening": True}, csrf="x"), 403,
            "CONSOLE-CSRF")  # fmt: skip
    stranger = Console(hub.station.url, hub.station.client._transport)
    try:
        refused(stranger.get(f"/schedules/{MILL}"), 401, "CONSOLE-SESSION")
        refused(stranger.post("/holidays", {"date": "2030-01-01"}), 401, "CONSOLE-SESSION")
    finally:
        stranger.close()
    assert schedule_of(sup, MILL) is None
