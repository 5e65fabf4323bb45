"""On test in the store (``store.on_test``, routing's cache of the running tests, the automatic
return in supervision), on SQLite and PostgreSQL: a matching burglary goes to history only
(ALARM_CATEGORY S, path ONTEST) and nothing pends, another zone still pends, a restoral follows,
runaway does not count the signals on test, the periodic test timer is satisfied; the report
lists the test's signals; a return (stop or automatic) raises TEST END NOT RESTORED for a zone
left open, once however many supervisors run.

Signals are committed, then routed by one routing instance per test, as a node keeps one (its
cache must see each start and return).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from alarmhub.core.alarm_types import RUNAWAY, TEST_END_NOT_RESTORED
from alarmhub.core.errors import ActionRefused
from alarmhub.core.on_test import RETURN_TYPE, START_TYPE
from alarmhub.core.operations import AlarmState
from alarmhub.core.response import Zone
from alarmhub.core.router import RoutePath
from alarmhub.store import on_test, provisioning, queries, response
from alarmhub.store import schema as s
from alarmhub.store.engine import write_transaction
from alarmhub.store.routing import SignalRouting
from alarmhub.store.supervision import Supervision
from tests.support.store_station import MINUTE, SECOND, T0, act, route, station

ACCOUNT = "700012"
OTHER = "700013"
H = s.history.c
RUNAWAY_LIMIT = 3


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    with station(tmp_path, {ACCOUNT: "Acme Widgets", OTHER: "Beta Books"}, ()) as engine:
        response.set_zone(engine, Zone(ACCOUNT, "004", "Back door"))
        yield engine


class Station:
    """Signals committed and routed by one routing instance, as one node does."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.routing = SignalRouting(engine, RUNAWAY_LIMIT, 2)

    def signal(self, code: str, zone: str, at_us: int, account: str = ACCOUNT) -> int:
        """One signal, routed; its incident number."""
        (incident,) = route(self.engine, [(account, code, zone)], at_us, self.routing)
        return incident


def start(engine: Engine, account: str = ACCOUNT, at_us: int = T0, **options: Any) -> Any:
    options.setdefault("minutes", 60)
    options.setdefault("by", "J Smith")
    return act(engine, lambda c: on_test.start(c, account, now_us=at_us, **options), queues=True)


def event_of(engine: Engine, incident: int) -> dict[str, Any]:
    with engine.connect() as conn:
        (event,) = queries.history_of_incident(conn, incident)
    return event


def pending(engine: Engine) -> list[dict[str, Any]]:
    with engine.connect() as conn:
        return queries.pending_alarms(conn)


def history(engine: Engine, *types: str) -> list[dict[str, Any]]:
    with engine.connect() as conn:
        rows = conn.execute(select(s.history).where(H.type.in_(types)).order_by(H.event_id))
        return [dict(r) for r in rows.mappings()]


def supervise(engine: Engine, at_us: int, supervision: Supervision | None = None) -> None:
    with write_transaction(engine) as conn:
        (supervision or Supervision(engine, 60)).supervise(conn, at_us)


def refusal(work: Any) -> ActionRefused:
    with pytest.raises(ActionRefused) as caught:
        work()
    return caught.value


def test_a_burglary_on_test_goes_to_history_only_and_its_restoral_follows(engine: Engine) -> None:
    station = Station(engine)
    station.signal("E602", "000", T0 - MINUTE)  # routing loads its cache before the start
    shown = start(engine, minutes=60, zones=["3"], reason="service")
    assert (shown["zones"], shown["types"], shown["minutes_left"]) == (["003"], [], 60)
    assert shown["ends_us"] == T0 + 60 * MINUTE

    burglary = station.signal("E130", "003", T0 + SECOND)
    event = event_of(engine, burglary)
    assert (event["pr_checksum"], event["alarm_category"], event["type"]) == ("ONTEST", "S", "BURG")
    assert event["hist_text"] == "BURGLARY ZONE 003"
    assert pending(engine) == []
    with engine.connect() as conn:
        assert queries.alarm(conn, burglary) is None
        assert conn.execute(select(s.account.c.last_test_us).where(
            s.account.c.account_number == ACCOUNT)).scalar() == T0 + SECOND  # fmt: skip

    restoral = station.signal("R130", "003", T0 + 2 * SECOND)
    assert event_of(engine, restoral)["pr_checksum"] == RoutePath.ON_TEST.value
    with engine.connect() as conn:
        found = on_test.report(conn, ACCOUNT)
    assert [
        (x["incident_number"], x["code"], x["zone"], x["restored"]) for x in found["signals"]
    ] == [
        (burglary, "E130", "003", True),
        (restoral, "R130", "003", True),
    ]
    assert found["test"]["ended_us"] is None

    (record,) = history(engine, START_TYPE)
    assert record["hist_text"] == "ON TEST 60 MIN BY J SMITH ZONES 003: SERVICE"
    assert (record["account_number"], record["alarm_category"]) == (ACCOUNT, "S")


def test_a_zone_or_an_account_not_on_test_pends_as_always(engine: Engine) -> None:
    station = Station(engine)
    start(engine, zones=["003"], types=["burg"])
    other_zone = station.signal("E130", "005", T0 + SECOND)
    other_type = station.signal("E110", "003", T0 + SECOND)
    other_account = station.signal("E130", "003", T0 + SECOND, account=OTHER)
    assert sorted(a["alarm_id"] for a in pending(engine)) == [other_zone, other_type, other_account]
    assert event_of(engine, other_zone)["pr_checksum"] == RoutePath.PENDING.value


def test_a_restoral_on_test_restores_an_alarm_raised_before_the_test(engine: Engine) -> None:
    station = Station(engine)
    alarm = station.signal("E130", "003", T0 - MINUTE)
    start(engine)
    restoral = station.signal("R130", "003", T0 + SECOND)
    event = event_of(engine, restoral)
    assert (event["pr_checksum"], event["alarm_id"]) == ("ONTEST", alarm)
    with engine.connect() as conn:
        row = queries.alarm(conn, alarm)
    assert row is not None and row["restore_us"] == T0 + SECOND


def test_runaway_does_not_count_the_signals_on_test(engine: Engine) -> None:
    station = Station(engine)
    start(engine, zones=["001"])
    for n in range(10):
        station.signal("E130", "001", T0 + n * SECOND)
    raised = [station.signal("E130", f"{z:03d}", T0 + 20 * SECOND) for z in (2, 3)]
    # a node that starts now rebuilds its windows from history: still without them
    restarted = Station(engine)
    with engine.connect() as conn:
        restarted.routing.recall(conn, T0 + 21 * SECOND)
    raised.append(restarted.signal("E130", "004", T0 + 22 * SECOND))  # the limit's third
    assert sorted(a["alarm_id"] for a in pending(engine)) == raised
    assert history(engine, RUNAWAY.type) == []


def test_stop_raises_test_end_not_restored_for_the_zone_left_open(engine: Engine) -> None:
    station = Station(engine)
    start(engine)
    station.signal("E130", "003", T0 + SECOND)
    station.signal("R130", "003", T0 + 2 * SECOND)
    left = station.signal("E130", "004", T0 + 3 * SECOND)
    found = act(engine, lambda c: on_test.stop(c, ACCOUNT, "Ann", T0 + MINUTE), queues=True)
    assert [x["restored"] for x in found["signals"]] == [True, True, False]
    assert found["test"]["ended_us"] == T0 + MINUTE

    (alarm,) = pending(engine)
    assert (alarm["type"], alarm["account_number"]) == (TEST_END_NOT_RESTORED.type, ACCOUNT)
    assert alarm["hist_text"] == "TEST END NOT RESTORED ZONE 004 BACK DOOR"
    (record,) = history(engine, RETURN_TYPE)
    assert (record["hist_text"], record["pr_checksum"]) == ("RETURN FROM TEST BY ANN", "OPERATOR")
    assert left not in [a["alarm_id"] for a in pending(engine)]

    refused = refusal(
        lambda: act(engine, lambda c: on_test.stop(c, ACCOUNT, "", T0 + MINUTE), queues=True)
    )
    assert (refused.code, refused.status) == ("OPS-TEST", 409)
    # back from test, the account's signals pend again
    assert station.signal("E130", "003", T0 + 2 * MINUTE) in [
        a["alarm_id"] for a in pending(engine)
    ]


def test_the_automatic_return_comes_at_the_end_time_once(engine: Engine) -> None:
    station = Station(engine)
    start(engine, minutes=1)
    station.signal("E130", "004", T0 + SECOND)
    supervise(engine, T0 + 59 * SECOND)
    assert history(engine, RETURN_TYPE) == []
    with engine.connect() as conn:
        assert [t["account_number"] for t in on_test.running_tests(conn, T0)] == [ACCOUNT]

    nodes = [Supervision(engine, 60), Supervision(engine, 60)]
    errors: list[BaseException] = []

    def run(supervision: Supervision) -> None:
        try:
            for _ in range(2):
                supervise(engine, T0 + 61 * SECOND, supervision)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in nodes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    (record,) = history(engine, RETURN_TYPE)
    assert (record["hist_text"], record["pr_checksum"]) == ("RETURN FROM TEST", "SYSTEM")
    assert [a["hist_text"] for a in pending(engine)] == ["TEST END NOT RESTORED ZONE 004 BACK DOOR"]
    with engine.connect() as conn:
        assert on_test.running_tests(conn, T0 + 61 * SECOND) == []
        assert on_test.report(conn, ACCOUNT)["test"]["ended_us"] == T0 + 61 * SECOND
    assert station.signal("E130", "003", T0 + 62 * SECOND) in [
        a["alarm_id"] for a in pending(engine)
    ]


def test_a_second_start_changes_the_running_test(engine: Engine) -> None:
    start(engine, minutes=60, zones=["003"])
    shown = start(engine, at_us=T0 + MINUTE, minutes=30, zones=["005"], types=["FIRE"], by="Bo")
    assert (shown["zones"], shown["types"], shown["by"]) == (["005"], ["FIRE"], "Bo")
    assert (shown["started_us"], shown["ends_us"]) == (T0, T0 + 31 * MINUTE)
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(s.on_test)).scalar() == 1
    assert [r["hist_text"] for r in history(engine, START_TYPE)] == [
        "ON TEST 60 MIN BY J SMITH ZONES 003",
        "ON TEST 30 MIN BY BO ZONES 005 TYPES FIRE",
    ]


def test_a_test_names_only_alarm_types_the_station_has(engine: Engine) -> None:
    unknown = refusal(lambda: start(engine, types=["NOPE"]))
    assert (unknown.code, unknown.message, unknown.status) == (
        "OPS-TEST", "no alarm TYPE NOPE at this station", 422,
    )  # fmt: skip
    with engine.connect() as conn:
        assert on_test.running_tests(conn, T0) == []
    provisioning.set_alarm_type(engine, "130", type="INTRU")  # the station's own TYPE
    assert start(engine, types=["intru"])["types"] == ["INTRU"]


def test_refusals_change_nothing(engine: Engine) -> None:
    unknown = refusal(lambda: start(engine, account="799999"))
    assert (unknown.code, unknown.message) == ("OPS-ACCOUNT", "no account '799999'")
    for wrong in ({"minutes": 0}, {"minutes": 10081}, {"zones": ["1000"]}, {"types": ["B-1"]},
                  {"types": ["BURG", "NOPE"]}, {"by": " "}, {"reason": "x" * 201}):  # fmt: skip
        assert refusal(lambda w=wrong: start(engine, **w)).code == "OPS-TEST"
    never = refusal(lambda: act(engine, lambda c: on_test.report(c, ACCOUNT)))
    assert never.code == "OPS-TEST"
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(s.on_test)).scalar() == 0
    assert history(engine, START_TYPE) == []
    assert AlarmState.PENDING not in {a["state"] for a in pending(engine)}
