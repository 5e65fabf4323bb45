"""``alarmhub storm`` and ``alarmhub report handling`` on both databases: storm mode switched on
and off with ``--json`` (the storm list in the answer to ``off``), its status and list, the
batch resolution, their refusals as one ``error:`` line; the handling report as JSON, CSV and
tables over alarms with known times."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from alarmhub.store import handling, operations, operators, queries
from alarmhub.store.engine import open_engine
from tests.support.database import database_url
from tests.support.processes import as_dict, cli, cli_json
from tests.support.store_station import route as route_signals

pytestmark = pytest.mark.backends("sqlite", "postgresql")

SECOND = 1_000_000
T0 = 1_800_000_000 * SECOND  # 2027-01-15 08:00 UTC
DNIS = "D1"
ACCOUNT = "700012"
UTC = {"ALARMHUB_TIMEZONE": "UTC"}


def fails(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode != 0, result.stdout
    lines = result.stderr.strip().splitlines()
    assert lines, result.stderr
    return lines[-1]


@pytest.fixture
def station(tmp_path: Path) -> tuple[Path, Engine]:
    data_dir = tmp_path
    cli(data_dir, "dnis", "add", DNIS, "--mask", "70####")
    cli(data_dir, "account", "add", ACCOUNT, "--name", "Acme Widgets")
    engine = open_engine(database_url(data_dir))
    operators.add_operator(engine, "001", "Ann", "operator", "correct horse")
    operators.add_operator(engine, "SUP", "Sue", "supervisor", "correct horse")
    return data_dir, engine


def route(engine: Engine, *codes: str, at_us: int = T0) -> list[int]:
    return route_signals(
        engine, [(ACCOUNT, code, f"{i + 1:03d}") for i, code in enumerate(codes)], at_us
    )


def state(engine: Engine, alarm_id: int) -> str:
    with engine.connect() as conn:
        row = queries.alarm(conn, alarm_id)
    assert row is not None
    return str(row["state"])


def test_storm_on_status_list_off_and_resolve(station: tuple[Path, Engine]) -> None:
    data_dir, engine = station
    on = as_dict(cli_json(data_dir, "storm", "on", "ACPWR", "comm", "--by", "SUP"))
    assert on["changed"] == ["ACPWR", "COMM"]
    assert [(t["type"], t["by"]) for t in on["types"]] == [("ACPWR", "SUP"), ("COMM", "SUP")]
    power, burglary, second = route(engine, "E301", "E130", "E301")
    assert (state(engine, power), state(engine, burglary)) == ("storm", "pending")

    status = as_dict(cli_json(data_dir, "storm", "status"))
    assert status["storm_list"] == 2
    assert {t["type"]: t["alarms"] for t in status["types"]} == {"ACPWR": 2, "COMM": 0}
    listed = as_dict(cli_json(data_dir, "storm", "list", "acpwr"))
    assert [a["alarm_id"] for a in listed["alarms"]] == [power, second]
    table = cli(data_dir, "storm", "list").stdout
    assert "ACPWR" in table and "Acme Widgets" in table
    assert "ACPWR" in cli(data_dir, "storm", "status").stdout

    sent = cli(data_dir, "storm", "pend", str(second), "--by", "SUP").stdout
    assert sent.strip() == "1 alarms sent to pending"
    assert state(engine, second) == "pending"
    second = route(engine, "E301")[0]  # the storm list keeps two

    off = as_dict(cli_json(data_dir, "storm", "off", "ACPWR", "--by", "SUP"))
    assert off["changed"] == ["ACPWR"]
    assert [a["alarm_id"] for a in off["list"]["alarms"]] == [power, second]
    assert [t["type"] for t in off["types"]] == ["COMM"]

    one = as_dict(
        cli_json(data_dir, "storm", "resolve", str(power), "--resolution", "RSTR", "--by", "SUP")
    )
    assert one == {"resolved": 1}
    assert state(engine, power) == "resolved"
    line = fails(cli(data_dir, "storm", "resolve", str(power), "--resolution", "RSTR", check=False))
    assert line.startswith("error: ") and "not on the storm list" in line
    text = cli(data_dir, "storm", "resolve", "--all", "--resolution", "FAE").stdout
    assert text.strip() == "1 alarms resolved"
    assert state(engine, second) == "resolved"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["storm", "on", "NOSUC"], "no alarm TYPE NOSUC"),
        (["storm", "on", "DURES"], "always pends"),
        (["storm", "on", "ACPWR", "--by", "001"], "only a supervisor"),
        (["storm", "on", "ACPWR", "--by", "ZZZ"], "does not exist"),
        (["storm", "resolve", "--resolution", "RSTR"], "name the alarms"),
        (["storm", "pend", "999999", "--by", "SUP"], "not on the storm list"),
        (["storm", "pend", "1", "--by", "001"], "only a supervisor"),
        (["storm", "resolve", "--all", "--resolution", "NOPE"], "unknown resolution"),
        (["report", "handling", "--from", "2027-1-15", "--to", "2027-01-15"], "YYYY-MM-DD"),
        (["report", "handling", "--from", "2027-01-16", "--to", "2027-01-15"], "before it starts"),
    ],
)
def test_refusals_are_one_error_line(
    station: tuple[Path, Engine], args: list[str], words: str
) -> None:
    data_dir, _ = station
    line = fails(cli(data_dir, *args, check=False))
    assert line.startswith("error: ") and words in line, line


def act(engine: Engine, work: Any) -> Any:
    return operations.run(engine, lambda c: operations.on_queues(work, c))


def test_report_handling_as_json_csv_and_tables(station: tuple[Path, Engine]) -> None:
    data_dir, engine = station
    first, second = route(engine, "E100", "E100")  # medical: no step of its plan is required
    act(engine, lambda c: handling.sign_on(c, "001", T0, receiving=False))
    for alarm_id, take_s, resolve_s, code in ((first, 10, 60, "FA"), (second, 30, 120, "KEYH")):
        act(engine, lambda c, a=alarm_id, t=take_s: handling.take(c, "001", a, T0 + t * SECOND))
        act(
            engine,
            lambda c, a=alarm_id, r=resolve_s, k=code: handling.resolve(
                c, "001", a, k, "", T0 + r * SECOND
            ),
        )
    window = ["--from", "2027-01-15", "--to", "2027-01-15"]
    report = as_dict(
        json.loads(cli(data_dir, "report", "handling", *window, "--json", env=UTC).stdout)
    )
    assert (report["from"], report["to"], report["handled"]) == ("2027-01-15", "2027-01-15", 2)
    (medical,) = report["by_type"]
    assert medical["take"] == {"count": 2, "median_s": 20.0, "p90_s": 28.0}
    assert medical["resolve"] == {"count": 2, "median_s": 90.0, "p90_s": 114.0}
    assert [(o["opr"], o["name"], o["handled"]) for o in report["by_operator"]] == [
        ("001", "Ann", 2)
    ]
    assert [(f["account_number"], f["count"]) for f in report["false_alarms"]] == [(ACCOUNT, 1)]
    assert report["dispatches"] == []

    rows = list(csv.DictReader(io.StringIO(cli(data_dir, "report", "handling", *window, "--csv",
                                                env=UTC).stdout)))  # fmt: skip
    assert [(r["section"], r["name"], r["count"]) for r in rows] == [
        ("type", "MED", "2"),
        ("operator", "001", "2"),
        ("false_alarm", ACCOUNT, "1"),
    ]
    assert (rows[0]["take_median_s"], rows[0]["resolve_p90_s"]) == ("20.0", "114.0")

    text = cli(data_dir, "report", "handling", *window, env=UTC).stdout
    assert "2 alarms resolved" in text and "00:00:20" in text and "Acme Widgets" in text
    elsewhere = cli(data_dir, "report", "handling", "--from", "2027-01-16", "--to", "2027-01-16",
                    "--json", env=UTC).stdout  # fmt: skip
    assert json.loads(elsewhere)["handled"] == 0
    # the station's time zone decides the day: 08:00 UTC is still the 14th in Honolulu (UTC-10)
    honolulu = {"ALARMHUB_TIMEZONE": "Pacific/Honolulu"}
    fourteenth = json.loads(cli(data_dir, "report", "handling", "--from", "2027-01-14",
                                "--to", "2027-01-14", "--json", env=honolulu).stdout)  # fmt: skip
    assert fourteenth["handled"] == 2
