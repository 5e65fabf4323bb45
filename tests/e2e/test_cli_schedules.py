"""``alarmhub schedule`` and ``alarmhub holiday`` with a real node: a schedule set a minute after
its close raises LATE TO CLOSE in pending; an E401 posted to /rx outside every window raises
UNSCHEDULED OPEN; ``schedule show --json``; holidays added, listed and removed; the schedule
import; bad input refused with one ``error:`` line (exit 2 for a usage error)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from alarmhub.core.alarm_types import LATE_TO_CLOSE, UNSCHEDULED_OPEN
from tests.support.processes import (
    Server,
    Station,
    as_dict,
    as_list,
    cli,
    cli_json,
    provision,
    wait_for,
)
from tests.support.schedules import STATION_ENV, closed_a_minute_ago

pytestmark = pytest.mark.backends("sqlite", "postgresql")

ACCOUNT = "700012"
DNIS = "D1"
DUE_WITHIN_S = 60  # decisions section 9: raised within 60 s of being due


def run(data_dir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return cli(data_dir, *args, env=STATION_ENV, check=check)


def run_json(data_dir: Path, *args: str) -> Any:
    import json

    return json.loads(run(data_dir, *args, "--json").stdout)


def fails(result: subprocess.CompletedProcess[str], code: int) -> str:
    assert result.returncode == code, result.stdout + result.stderr
    return result.stderr.strip().splitlines()[-1]


def provisioned(data_dir: Path) -> str:
    token = provision(data_dir)
    run(data_dir, "dnis", "add", DNIS, "--mask", "70####")
    run(data_dir, "account", "add", ACCOUNT, "--name", "Acme Widgets")
    return token


@pytest.fixture
def station(tmp_path: Path) -> Iterator[Station]:
    token = provisioned(tmp_path)
    server = Server(tmp_path, env=STATION_ENV).start()
    station = Station(server, token, tmp_path)
    try:
        yield station
    finally:
        station.close()
        server.stop()


def pending_of(data_dir: Path, kind: Any) -> list[dict[str, Any]]:
    return [a for a in as_list(cli_json(data_dir, "pending")) if a["type"] == kind.type]


def test_late_to_close_and_unscheduled_open_with_a_real_node(station: Station) -> None:
    data_dir = station.data_dir
    window, close = closed_a_minute_ago()
    answer = as_dict(run_json(data_dir, "schedule", "set", ACCOUNT, *window, "--no-late-to-open"))
    assert answer["windows"] == [
        {"day": window[1], "open": window[3], "close": close.strftime("%H:%M")}
    ]
    assert (answer["timezone"], answer["grace_min"]) == ("UTC", 0)
    assert (answer["late_to_open"], answer["late_to_close"], answer["early_close"]) == (
        False,
        True,
        False,
    )
    [late] = wait_for(
        lambda: pending_of(data_dir, LATE_TO_CLOSE), "late to close pending", DUE_WITHIN_S
    )
    assert late["hist_text"] == f"LATE TO CLOSE {close.strftime('%H:%M')}"
    assert late["account_number"] == ACCOUNT

    posted = station.post({"dnis": DNIS, "panel": "12", "code": "E401", "zone_or_user": "3"})
    assert posted.status_code == 200, posted.text
    [unscheduled] = wait_for(
        lambda: pending_of(data_dir, UNSCHEDULED_OPEN), "unscheduled open pending", DUE_WITHIN_S
    )
    assert unscheduled["hist_text"] == "UNSCHEDULED OPEN USER 003"

    shown = as_dict(run_json(data_dir, "schedule", "show", ACCOUNT))
    assert shown["last_open"]["user"] == "003" and shown["last_close"] is None
    assert shown["alarms"] == {"lto": None, "ltc": late["alarm_id"]}
    assert shown["account_number"] == ACCOUNT and shown["area"] == ""
    assert len(pending_of(data_dir, LATE_TO_CLOSE)) == 1  # raised once


def test_show_holidays_temporary_schedules_and_remove(tmp_path: Path) -> None:
    provisioned(tmp_path)
    run(tmp_path, "schedule", "set", ACCOUNT, "--day", "mon-fri", "--open", "08:00",
        "--close", "18:00", "--grace", "15", "--timezone", "America/New_York")  # fmt: skip
    run(tmp_path, "schedule", "set", ACCOUNT, "--day", "sat", "--open", "22:00", "--close", "02:00")
    run(tmp_path, "schedule", "set", ACCOUNT, "--from", "2099-12-24", "--to", "2099-12-24",
        "--open", "08:00", "--close", "12:00")  # fmt: skip
    run(tmp_path, "schedule", "set", ACCOUNT, "--from", "2099-12-27", "--to", "2099-12-31",
        "--closed")  # fmt: skip
    run(tmp_path, "holiday", "add", "2099-12-25", "--name", "Christmas Day")
    run(tmp_path, "holiday", "add", "2099-12-26", "--account", ACCOUNT, "--name", "Stocktake")
    shown = as_dict(run_json(tmp_path, "schedule", "show", ACCOUNT))
    assert shown["timezone"] == "America/New_York" and shown["grace_min"] == 15
    assert [(w["day"], w["open"], w["close"]) for w in shown["windows"]] == [
        *((d, "08:00", "18:00") for d in ("mon", "tue", "wed", "thu", "fri")),
        ("sat", "22:00", "02:00"),
    ]
    assert shown["temporary"] == [
        {"from": "2099-12-24", "to": "2099-12-24", "open": "08:00", "close": "12:00",
         "closed": False},
        {"from": "2099-12-27", "to": "2099-12-31", "open": None, "close": None, "closed": True},
    ]  # fmt: skip
    assert [(h["date"], h["account_number"], h["name"]) for h in shown["holidays"]] == [
        ("2099-12-25", "", "Christmas Day"),
        ("2099-12-26", ACCOUNT, "Stocktake"),
    ]
    assert set(shown["today"]) == {"date", "windows"}
    listed = as_list(run_json(tmp_path, "holiday", "list"))
    assert [h["date"] for h in listed] == ["2099-12-25", "2099-12-26"]
    run(tmp_path, "holiday", "remove", "2099-12-25")
    assert [h["date"] for h in as_list(run_json(tmp_path, "holiday", "list"))] == ["2099-12-26"]
    gone = fails(run(tmp_path, "holiday", "remove", "2099-12-25", check=False), 1)
    assert gone == "error: no holiday on 2099-12-25 of the station"

    run(tmp_path, "schedule", "remove", ACCOUNT, "--day", "sat-sun")
    run(tmp_path, "schedule", "remove", ACCOUNT, "--from", "2099-12-27", "--to", "2099-12-31")
    shown = as_dict(run_json(tmp_path, "schedule", "show", ACCOUNT))
    assert [w["day"] for w in shown["windows"]] == ["mon", "tue", "wed", "thu", "fri"]
    assert len(shown["temporary"]) == 1
    run(tmp_path, "schedule", "remove", ACCOUNT)
    missing = fails(run(tmp_path, "schedule", "show", ACCOUNT, check=False), 1)
    assert missing == f"error: account {ACCOUNT} has no schedule"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--day", "funday", "--open", "08:00", "--close", "18:00"], "mon..sun"),
        (["--day", "mon", "--open", "8am", "--close", "18:00"], "HH:MM"),
        (["--day", "mon", "--open", "08:00", "--close", "24:00"], "HH:MM"),
        (["--day", "mon", "--open", "08:00"], "--open and --close go together"),
        (["--timezone", "Mars/Olympus"], "not an IANA time zone"),
        (["--grace", "-5"], "grace"),
        (["--from", "2099-12-31", "--to", "2099-12-01", "--closed"], "is after --to"),
        (["--from", "2099-13-01", "--to", "2099-12-01", "--closed"], "YYYY-MM-DD"),
        (["--closed"], "--closed goes with --from and --to"),
        (["--area", "ABC"], "area"),
    ],
)
def test_bad_input_is_a_usage_error(tmp_path: Path, args: list[str], says: str) -> None:
    provisioned(tmp_path)
    result = run(tmp_path, "schedule", "set", ACCOUNT, *args, check=False)
    assert result.returncode == 2, result.stdout + result.stderr
    assert says in result.stderr
    assert "Traceback" not in result.stderr


def test_an_unknown_account_is_refused(tmp_path: Path) -> None:
    provisioned(tmp_path)
    result = run(tmp_path, "schedule", "set", "709999", "--day", "mon", "--open", "08:00",
                 "--close", "18:00", check=False)  # fmt: skip
    assert fails(result, 1) == "error: no account '709999'"


def test_import_keeps_the_good_rows_and_reports_the_bad(tmp_path: Path) -> None:
    provisioned(tmp_path)
    run(tmp_path, "account", "add", "700013", "--name", "Beta Books")
    file = tmp_path / "schedules.csv"
    file.write_text(
        "account_number,area,days,open,close,grace,timezone\n"
        f"{ACCOUNT},,mon-fri,08:00,18:00,10,Europe/London\n"
        f"{ACCOUNT},,sat,09:00,13:00,,\n"
        "700013,,mon,25:00,18:00,,\n"  # a bad time
        "709999,,mon,08:00,18:00,,\n"  # an unknown account
        "700013,,mon,07:00,15:00,,Nowhere/City\n"  # an unknown zone
        "700013,01,fri-mon,20:00,04:00,,\n",
        encoding="utf-8",
    )
    result = run(tmp_path, "schedule", "import", str(file), "--json", check=False)
    assert result.returncode == 1
    import json

    outcome = json.loads(result.stdout)
    assert (outcome["added"], outcome["updated"]) == (3, 0)
    assert [r["line"] for r in outcome["refused"]] == [4, 5, 6]
    assert "no account" in outcome["refused"][1]["error"]
    shown = as_dict(run_json(tmp_path, "schedule", "show", ACCOUNT))
    assert (shown["timezone"], shown["grace_min"], len(shown["windows"])) == (
        "Europe/London",
        10,
        6,
    )
    area = as_dict(run_json(tmp_path, "schedule", "show", "700013", "--area", "01"))
    assert [w["day"] for w in area["windows"]] == ["mon", "fri", "sat", "sun"]
    again = run(tmp_path, "schedule", "import", str(file), "--json", check=False)
    assert json.loads(again.stdout)["added"] == 0  # nothing new the second time
