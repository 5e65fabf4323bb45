"""``alarmhub test`` beside a real node (decisions §9): an account put on test receives a
burglary over the signaling interface (history only, nothing pends) and its restoral; ``test
list --json`` shows the test, ``test report --json`` both signals, restored; ``test stop`` ends
it; refusals are one ``error:`` line. And the automatic return: a one-minute test returns by
itself, raising TEST END NOT RESTORED for the zone it left open (a test whose start is put
:data:`STARTED_AGO_S` in the past, so that its minute, a whole one, is over that much sooner).

The commands run in this process (``cli``: the same click command, its own connection beside the
node's); one refusal, ``test stop`` of an account not on test, runs as a user runs it (a real
``python -m alarmhub`` process: its exit code and its one line on stderr).

Routing and supervision run in the node's writer process, so every check polls with a generous
deadline; no test asserts how long anything took.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

from alarmhub.clock import now_us
from alarmhub.core import units
from alarmhub.core.alarm_types import TEST_END_NOT_RESTORED
from alarmhub.core.on_test import RETURN_TYPE
from alarmhub.store import on_test, operations, queries
from alarmhub.store import schema as s
from alarmhub.store.engine import open_engine
from tests.support.database import database_url
from tests.support.processes import Station, as_dict, as_list, cli, cli_process, wait_for

pytestmark = pytest.mark.backends("sqlite", "postgresql")

DNIS = "C7"
ON_TEST = "710001"  # panel 1
RETURNING = "710002"  # panel 2
SUCCESS = {"status_code": 200, "status": "success"}
DEADLINE_S = 15.0
RETURN_DEADLINE_S = 100.0
"""A one-minute test returns within a second or two of its end: a generous deadline."""
STARTED_AGO_S = 45
"""The one-minute test's start, as the store records it, this long before the test starts it
(the time is the store's parameter, as every write's): the signal it takes comes in the rest of
its minute, well within DEADLINE_S."""


@pytest.fixture(scope="module")
def engine(station: Station) -> Iterator[Engine]:
    for args in (
        ("dnis", "add", DNIS, "--mask", "71####"),
        ("account", "add", ON_TEST, "--name", "Acme Widgets"),
        ("account", "add", RETURNING, "--name", "Beta Books"),
        ("zone", "set", RETURNING, "004", "--description", "Back door"),
    ):
        cli(station.data_dir, *args)
    engine = open_engine(database_url(station.data_dir))
    yield engine
    engine.dispose()


def run_json(station: Station, *args: str) -> Any:
    return json.loads(cli(station.data_dir, *args, "--json").stdout)


def post(station: Station, account: str, code: str, zone: str) -> None:
    body = {"dnis": DNIS, "panel": account[-4:], "code": code, "zone_or_user": zone, "area": "01"}
    answer = station.post(body)
    assert (answer.status_code, answer.json()) == (200, SUCCESS), answer.text


def routed(engine: Engine, account: str, code: str, zone: str) -> dict[str, Any] | None:
    """The history event of the account's signal ``code`` of ``zone``, once routed."""
    h = s.history.c
    with engine.connect() as conn:
        row = (
            conn.execute(
                select(s.history).where(h.account_number == account, h.code == code, h.zone == zone)
            )
            .mappings()
            .first()
        )
    return dict(row) if row else None


def pending_of(engine: Engine, account: str) -> list[dict[str, Any]]:
    with engine.connect() as conn:
        return [a for a in queries.pending_alarms(conn) if a["account_number"] == account]


def test_start_signal_list_report_and_stop(station: Station, engine: Engine) -> None:
    started = as_dict(
        run_json(station, "test", "start", ON_TEST, "--minutes", "30", "--zone", "3",
                 "--type", "burg", "--by", "J Smith", "--reason", "panel service")
    )  # fmt: skip
    assert (started["zones"], started["types"], started["minutes_left"]) == (["003"], ["BURG"], 30)

    post(station, ON_TEST, "E130", "003")
    burglary = wait_for(lambda: routed(engine, ON_TEST, "E130", "003"), "the burglary", DEADLINE_S)
    assert (burglary["pr_checksum"], burglary["alarm_category"]) == ("ONTEST", "S")
    assert pending_of(engine, ON_TEST) == []
    post(station, ON_TEST, "R130", "003")
    wait_for(lambda: routed(engine, ON_TEST, "R130", "003"), "the restoral", DEADLINE_S)

    (listed,) = [
        t for t in as_list(run_json(station, "test", "list")) if t["account_number"] == ON_TEST
    ]
    assert (listed["company_name"], listed["by"], listed["reason"]) == (
        "Acme Widgets", "J Smith", "panel service",
    )  # fmt: skip
    assert listed["started"].endswith("Z") and listed["ends"] > listed["started"]

    report = as_list(run_json(station, "test", "report", ON_TEST))
    assert [(r["code"], r["zone"], r["area"], r["restored"]) for r in report] == [
        ("E130", "003", "01", True),
        ("R130", "003", "01", True),
    ]
    assert report[0]["incident_number"] == burglary["incident_number"]
    assert report[0]["hist_text"] == "BURGLARY ZONE 003" and report[0]["received"].endswith("Z")

    stopped = as_list(run_json(station, "test", "stop", ON_TEST, "--by", "Ann"))
    assert len(stopped) == 2
    assert ON_TEST not in [t["account_number"] for t in as_list(run_json(station, "test", "list"))]
    again = cli_process(station.data_dir, "test", "stop", ON_TEST, check=False)
    assert again.returncode == 1
    assert again.stderr.strip() == f"error: account {ON_TEST} is not on test"
    post(station, ON_TEST, "E130", "005")  # back from test: it pends again
    wait_for(lambda: pending_of(engine, ON_TEST), "the burglary after the test pends", DEADLINE_S)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("start", "799999", "--minutes", "5", "--by", "x"), "error: no account '799999'"),
        (
            ("start", ON_TEST, "--minutes", "5", "--by", "x", "--type", "NOPE"),
            "error: no alarm TYPE NOPE at this station",
        ),
        (("report", "799999"), "error: no account '799999'"),
    ],
)
def test_refusals(station: Station, engine: Engine, args: tuple[str, ...], says: str) -> None:
    result = cli(station.data_dir, "test", *args, check=False)
    assert result.returncode == 1, result.stdout
    assert says in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.backends("sqlite")  # the database plays no part in it
@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("start", ON_TEST, "--minutes", "0", "--by", "x"), "'--minutes'"),
        (("start", ON_TEST, "--minutes", "5", "--by", "x", "--zone", "1000"), "--zone"),
        (("start", ON_TEST, "--minutes", "5", "--by", " "), "--by"),
        (("start", ON_TEST, "--minutes", "5"), "--by"),
    ],
)
def test_usage_refusals(station: Station, engine: Engine, args: tuple[str, ...], says: str) -> None:
    result = cli(station.data_dir, "test", *args, check=False)
    assert result.returncode == 2, result.stdout
    assert says in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.backends("sqlite")  # the return's SQL on both: store/test_on_test.py
def test_a_one_minute_test_returns_by_itself(station: Station, engine: Engine) -> None:
    started_us = now_us() - units.seconds_us(STARTED_AGO_S)
    start = functools.partial(on_test.start, account=RETURNING, minutes=1, by="J Smith",
                              now_us=started_us)  # fmt: skip
    test = operations.run(engine, functools.partial(operations.on_queues, start))  # as the CLI
    assert test["ends_us"] == started_us + units.minutes_us(1)
    post(station, RETURNING, "E130", "004")  # a zone opened and never restored
    wait_for(lambda: routed(engine, RETURNING, "E130", "004"), "the burglary", DEADLINE_S)
    assert pending_of(engine, RETURNING) == []

    alarms = wait_for(lambda: pending_of(engine, RETURNING), "the return", RETURN_DEADLINE_S)
    assert [(a["type"], a["hist_text"]) for a in alarms] == [
        (TEST_END_NOT_RESTORED.type, "TEST END NOT RESTORED ZONE 004 BACK DOOR")
    ]
    tests = as_list(run_json(station, "test", "list"))
    assert RETURNING not in [t["account_number"] for t in tests]
    with engine.connect() as conn:
        h = s.history.c
        returns = conn.execute(
            select(h.hist_text, h.pr_checksum).where(
                h.account_number == RETURNING, h.type == RETURN_TYPE
            )
        ).all()
    assert [tuple(r) for r in returns] == [("RETURN FROM TEST", "SYSTEM")]
    report = as_list(run_json(station, "test", "report", RETURNING))
    assert [(r["code"], r["restored"]) for r in report] == [("E130", False)]
