"""The handling report (``store.reports``) on SQLite and PostgreSQL, over a seeded set of alarms
with known times: handled per TYPE and per operator with median and p90 times to take and to
resolve, dispatches by agency and AVS level, false alarms by account; only what was resolved in
the window counts.

The alarms are raised by routing signals and taken and resolved through ``store.handling`` at
chosen times; the dispatches are rows of their table.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import insert
from sqlalchemy.engine import Engine

from alarmhub.core import reports as rules
from alarmhub.store import dispatch, handling, reports, storm
from alarmhub.store import schema as s
from alarmhub.store.engine import write_transaction
from alarmhub.store.routing import SignalRouting
from tests.support.store_station import SECOND, T0, route, station
from tests.support.store_station import act as act_on

DAY = 86_400 * SECOND
ACME = "700012"
BETA = "700013"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    with station(tmp_path, {ACME: "Acme Widgets", BETA: "Beta Books"}) as engine:
        yield engine


def act(engine: Engine, work: Any) -> Any:
    return act_on(engine, work, queues=True)


def raised(engine: Engine, routing: SignalRouting, code: str, panel: str, zone: str) -> int:
    (alarm_id,) = route(engine, [(f"70{panel}", code, zone)], T0, routing)  # pending from T0
    return alarm_id


def handled(
    engine: Engine,
    alarm_id: int,
    opr: str,
    take_s: int,
    resolve_s: int,
    resolution: str,
    dispatched: tuple[str, int, int] | None = None,
) -> None:
    """Taken and resolved at those seconds after T0; dispatched first (agency, AVS level,
    seconds after T0) when asked."""
    act(engine, lambda c: handling.take(c, opr, alarm_id, T0 + take_s * SECOND))
    if dispatched is not None:
        agency, avs, at_s = dispatched
        act(
            engine,
            lambda c: dispatch.dispatch(c, opr, alarm_id, agency, avs, "R1", T0 + at_s * SECOND),
        )
    act(
        engine,
        lambda c: handling.resolve(c, opr, alarm_id, resolution, "", T0 + resolve_s * SECOND),
    )


@pytest.fixture
def seeded(engine: Engine) -> Engine:
    """Resolved on 2027-01-15 (UTC): three medical alarms of Acme by 001 (taken after 10, 20,
    30 s, resolved after 100, 200, 300 s: FA, FA, DISPM after a medical dispatch at AVS 3), a
    fire of Beta by 002 (5 s, 50 s, FAE, after the fire dispatch its plan requires, AVS 0), an
    AC power loss of Beta from the storm list by SUP (600 s). Resolved the next day: a medical
    alarm of Beta (FA). Still pending: a burglary of Acme. More dispatches (rows of their
    table): police AVS 2 twice that day, police AVS 4 the next."""
    routing = SignalRouting(engine, 1000, 2)
    for code in ("001", "002"):
        act(engine, lambda c, code=code: handling.sign_on(c, code, T0, receiving=False))
    medical = [raised(engine, routing, "E100", "12", f"{z:03d}") for z in (1, 2, 3)]
    handled(engine, medical[0], "001", 10, 100, "FA")
    handled(engine, medical[1], "001", 20, 200, "FA")
    handled(engine, medical[2], "001", 30, 300, "DISPM", ("medical", 3, 250))
    fire = raised(engine, routing, "E110", "13", "004")
    handled(engine, fire, "002", 5, 50, "FAE", ("fire", 0, 30))
    act(engine, lambda c: storm.switch(c, "SUP", ["ACPWR"], True, T0))
    power = raised(engine, routing, "E301", "13", "000")
    act(engine, lambda c: storm.resolve(c, "SUP", [power], "RSTR", "", T0 + 600 * SECOND))
    next_day = raised(engine, routing, "E100", "13", "005")
    act(engine, lambda c: handling.sign_on(c, "002", T0, receiving=False))
    handled(engine, next_day, "002", 60, DAY // SECOND, "FA")
    raised(engine, routing, "E130", "12", "006")
    with write_transaction(engine) as conn:
        rows = [("police", 2, T0 + 150 * SECOND), ("police", 2, T0 + 250 * SECOND),
                ("police", 4, T0 + DAY)]  # fmt: skip
        for agency, avs, at_us in rows:
            conn.execute(
                insert(s.dispatch).values(
                    alarm_id=medical[0],
                    account_number=ACME,
                    agency=agency,
                    avs=avs,
                    reference="5521",
                    opr="001",
                    at_us=at_us,
                )
            )
    return engine


def report(engine: Engine, first: str = "2027-01-15", last: str = "2027-01-15") -> Any:
    start, stop = rules.day_window(first, last, ZoneInfo("UTC"))
    with engine.connect() as conn:
        return reports.handling(conn, start, stop)


def spread(count: int, median: float | None, p90: float | None) -> dict[str, Any]:
    return {"count": count, "median_s": median, "p90_s": p90}


def test_handled_per_type_and_per_operator_with_median_and_p90(seeded: Engine) -> None:
    got = report(seeded)
    assert got["handled"] == 5
    by_type = {t["type"]: t for t in got["by_type"]}
    assert list(by_type) == ["ACPWR", "FIRE", "MED"]
    assert by_type["MED"]["handled"] == 3
    assert by_type["MED"]["take"] == spread(3, 20.0, 28.0)
    assert by_type["MED"]["resolve"] == spread(3, 200.0, 280.0)
    assert by_type["FIRE"]["take"] == spread(1, 5.0, 5.0)
    assert by_type["FIRE"]["resolve"] == spread(1, 50.0, 50.0)
    assert by_type["ACPWR"]["take"] == spread(0, None, None)  # never taken: the storm list
    assert by_type["ACPWR"]["resolve"] == spread(1, 600.0, 600.0)
    by_operator = {o["opr"]: o for o in got["by_operator"]}
    assert [(o["opr"], o["name"], o["handled"]) for o in got["by_operator"]] == [
        ("001", "Ann", 3),
        ("002", "Bob", 1),
        ("SUP", "Sue", 1),
    ]
    assert by_operator["001"]["take"] == by_type["MED"]["take"]
    assert got["take"] == spread(4, 15.0, 27.0)  # 5, 10, 20, 30


def test_dispatches_by_agency_and_avs_level(seeded: Engine) -> None:
    assert report(seeded)["dispatches"] == [
        {"agency": "fire", "avs": 0, "count": 1},
        {"agency": "medical", "avs": 3, "count": 1},
        {"agency": "police", "avs": 2, "count": 2},
    ]


def test_false_alarms_by_account_most_first(seeded: Engine) -> None:
    got = report(seeded)
    assert got["false_alarms"] == [
        {"account_number": ACME, "company_name": "Acme Widgets", "count": 2,
         "by_code": {"FA": 2, "FAE": 0}},
        {"account_number": BETA, "company_name": "Beta Books", "count": 1,
         "by_code": {"FA": 0, "FAE": 1}},
    ]  # fmt: skip
    assert got["false_alarms_total"] == 3


def test_the_window_counts_what_was_resolved_in_it(seeded: Engine) -> None:
    two_days = report(seeded, "2027-01-15", "2027-01-16")
    assert two_days["handled"] == 6
    assert two_days["false_alarms"][0]["count"] == 2
    assert {(f["account_number"], f["count"]) for f in two_days["false_alarms"]} == {
        (ACME, 2),
        (BETA, 2),
    }
    assert {"agency": "police", "avs": 4, "count": 1} in two_days["dispatches"]
    empty = report(seeded, "2027-01-14", "2027-01-14")
    assert empty["handled"] == 0
    assert empty["by_type"] == empty["by_operator"] == empty["dispatches"] == []
    assert empty["take"] == spread(0, None, None)
