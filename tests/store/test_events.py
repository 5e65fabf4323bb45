"""The outbox of events, on SQLite and PostgreSQL: each kind is written by the change it reports
(routing, operators' actions, on test, supervision, the storm list), with the query interface's
values in its ``data``, in the order of the commits, and never by a change that was refused or
rolled back; old events are forgotten, and the forgotten counter says up to where.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from sqlalchemy import insert, select, update
from sqlalchemy.engine import Engine

from alarmhub.core import events as kinds
from alarmhub.core.errors import ActionRefused
from alarmhub.store import events, handling, on_test, storm
from alarmhub.store import schema as s
from alarmhub.store.engine import write_transaction
from alarmhub.store.routing import SignalRouting
from alarmhub.store.supervision import Supervision
from tests.support.store_station import MINUTE, SECOND, T0, act, alarm, route, station

pytestmark = pytest.mark.backends("sqlite", "postgresql")

ACCOUNT = "700012"
OTHER = "700013"
GRACE_S = 3600
DAY = 24 * 3600 * SECOND


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    with station(tmp_path, {ACCOUNT: "Acme Widgets", OTHER: "Beta Books"}) as engine:
        yield engine


def outbox(engine: Engine, after: int = 0) -> list[tuple[int, str, str, dict[str, Any]]]:
    """(event id, kind, account, body) of every event after ``after``, oldest first."""
    with engine.connect() as conn:
        return [
            (e.event_id, e.kind, e.account_number, orjson.loads(e.body))
            for e in events.after(conn, after, 10_000)
        ]


def kinds_of(engine: Engine, after: int = 0) -> list[tuple[str, Any]]:
    """(kind, alarm id or account) of the events after ``after``."""
    return [
        (kind, body["data"].get("alarm_id", body["data"].get("account")))
        for _, kind, _, body in outbox(engine, after)
    ]


def newest(engine: Engine) -> int:
    with engine.connect() as conn:
        return events.newest(conn)


def supervise(engine: Engine, at_us: int) -> None:
    with write_transaction(engine) as conn:
        Supervision(engine, GRACE_S).supervise(conn, at_us)


def refused(work: Any) -> ActionRefused:
    with pytest.raises(ActionRefused) as caught:
        work()
    return caught.value


def test_an_alarm_raised_taken_restored_and_resolved(engine: Engine) -> None:
    routing = SignalRouting(engine, 1000, 2)
    (burglary,) = route(engine, [(ACCOUNT, "E130", "004")], T0, routing)
    [(first, kind, account, body)] = outbox(engine)
    row = alarm(engine, burglary)
    assert (kind, account) == (kinds.ALARM_RAISED, ACCOUNT)
    assert body["type"] == kinds.ALARM_RAISED
    assert body["timestamp"] == "2027-01-15T08:00:00.000Z"
    assert body["data"] == {
        "account": ACCOUNT,
        "incident_number": burglary,
        "alarm_id": burglary,
        "type": row["type"],
        "hist_text": row["hist_text"],
        "priority": row["priority"],
        "state": "pending",
    }
    assert len(body["data"]["priority"]) == 1

    act(engine, lambda c: handling.sign_on(c, "001", T0, receiving=False), queues=True)
    act(engine, lambda c: handling.take(c, "001", burglary, T0 + SECOND), queues=True)
    route(engine, [(ACCOUNT, "R130", "004")], T0 + 2 * SECOND, routing)
    act(
        engine,
        lambda c: handling.resolve(c, "001", burglary, "FA", "set off by the owner", T0 + MINUTE),
        queues=True,
    )
    later = outbox(engine, first)
    assert [(k, b["data"]["alarm_id"]) for _, k, _, b in later] == [
        (kinds.ALARM_TAKEN, burglary),
        (kinds.ALARM_RESTORED, burglary),
        (kinds.ALARM_RESOLVED, burglary),
    ]
    taken, restored, resolved = (b["data"] for _, _, _, b in later)
    assert (taken["opr"], taken["how"]) == ("001", "taken")
    assert restored["state"] == "in_process"
    assert (resolved["opr"], resolved["resolution"]) == ("001", "FA")
    assert resolved["hist_text"] == row["hist_text"]
    ids = [first] + [event_id for event_id, *_ in later]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)


def test_a_refused_or_rolled_back_change_writes_no_event(engine: Engine) -> None:
    (burglary,) = route(engine, [(ACCOUNT, "E130", "004")])
    before = newest(engine)
    for code in ("001", "002"):
        act(engine, lambda c, code=code: handling.sign_on(c, code, T0, receiving=False))
    act(engine, lambda c: handling.take(c, "001", burglary, T0 + SECOND), queues=True)
    after_take = newest(engine)
    assert kinds_of(engine, before) == [(kinds.ALARM_TAKEN, burglary)]

    refused(lambda: act(engine, lambda c: handling.take(c, "002", burglary, T0), queues=True))
    refused(  # not a resolution code of the station
        lambda: act(
            engine, lambda c: handling.resolve(c, "001", burglary, "NOPE", "", T0), queues=True
        )
    )
    refused(lambda: act(engine, lambda c: on_test.stop(c, ACCOUNT, "", T0), queues=True))

    def resolve_then_fail(conn: Any) -> None:
        handling.resolve(conn, "001", burglary, "FA", "", T0 + MINUTE)
        raise RuntimeError("the transaction does not commit")

    with pytest.raises(RuntimeError):
        act(engine, resolve_then_fail, queues=True)
    assert newest(engine) == after_take, "no event of a change refused or rolled back"
    assert alarm(engine, burglary)["state"] == "in_process"


def test_an_alarm_handed_to_a_receiving_operator(engine: Engine) -> None:
    act(engine, lambda c: handling.sign_on(c, "001", T0, receiving=True), queues=True)
    (burglary,) = route(engine, [(ACCOUNT, "E130", "004")])
    assert kinds_of(engine) == [(kinds.ALARM_RAISED, burglary), (kinds.ALARM_TAKEN, burglary)]
    _, _, _, handed = outbox(engine)[-1]
    assert (handed["data"]["opr"], handed["data"]["how"]) == ("001", "handed")


def test_a_restoral_of_a_resolved_alarm_is_no_event(engine: Engine) -> None:
    (burglary,) = route(engine, [(ACCOUNT, "E130", "004")])
    act(engine, lambda c: handling.sign_on(c, "001", T0, receiving=False), queues=True)
    act(engine, lambda c: handling.take(c, "001", burglary, T0), queues=True)
    act(engine, lambda c: handling.resolve(c, "001", burglary, "FA", "", T0), queues=True)
    before = newest(engine)
    route(engine, [(ACCOUNT, "R130", "004")], T0 + SECOND)
    assert kinds_of(engine, before) == []


def test_an_alarm_and_its_restoral_in_one_batch(engine: Engine) -> None:
    burglary, _ = route(engine, [(ACCOUNT, "E130", "004"), (ACCOUNT, "R130", "004")])
    assert kinds_of(engine) == [
        (kinds.ALARM_RAISED, burglary),
        (kinds.ALARM_RESTORED, burglary),
    ]


def test_storm_list_raised_and_resolved_in_a_batch(engine: Engine) -> None:
    routing = SignalRouting(engine, 1000, 2)
    route(engine, [(ACCOUNT, "E602", "000")], T0, routing)  # routing loads its cache first
    act(engine, lambda c: storm.switch(c, "SUP", ["ACPWR"], True, T0), queues=True)
    first, second = route(engine, [(ACCOUNT, "E301", "001"), (OTHER, "E301", "001")], T0, routing)
    raised = outbox(engine)
    assert [(k, b["data"]["alarm_id"], b["data"]["state"]) for _, k, _, b in raised] == [
        (kinds.ALARM_RAISED, first, "storm"),
        (kinds.ALARM_RAISED, second, "storm"),
    ]
    assert [account for _, _, account, _ in raised] == [ACCOUNT, OTHER]
    before = newest(engine)
    act(engine, lambda c: storm.resolve(c, "SUP", None, "FAE", "", T0 + MINUTE), queues=True)
    resolved = outbox(engine, before)
    assert [(k, b["data"]["alarm_id"]) for _, k, _, b in resolved] == [
        (kinds.ALARM_RESOLVED, first),
        (kinds.ALARM_RESOLVED, second),
    ]
    assert {b["data"]["resolution"] for *_, b in resolved} == {"FAE"}


def test_on_test_started_stopped_and_returned_by_itself(engine: Engine) -> None:
    act(
        engine,
        lambda c: on_test.start(
            c, ACCOUNT, 60, "J Smith", T0, zones=["004"], types=["BURG"], reason="new panel"
        ),
        queues=True,
    )
    act(engine, lambda c: on_test.stop(c, ACCOUNT, "Tech", T0 + MINUTE), queues=True)
    started, stopped = outbox(engine)
    assert (started[1], started[2]) == (kinds.TEST_STARTED, ACCOUNT)
    assert started[3]["data"] == {
        "account": ACCOUNT,
        "zones": ["004"],
        "types": ["BURG"],
        "by": "J Smith",
        "reason": "new panel",
        "opr": None,
        "started": "2027-01-15T08:00:00.000Z",
        "ends": "2027-01-15T09:00:00.000Z",
    }
    assert stopped[1] == kinds.TEST_ENDED
    data = stopped[3]["data"]
    assert (data["ended_by"], data["automatic"], data["ended"]) == (
        "Tech",
        False,
        "2027-01-15T08:01:00.000Z",
    )

    act(engine, lambda c: on_test.start(c, OTHER, 30, "J Smith", T0), queues=True)
    before = newest(engine)
    supervise(engine, T0 + 31 * MINUTE)
    [(_, kind, account, body)] = outbox(engine, before)
    assert (kind, account, body["data"]["automatic"]) == (kinds.TEST_ENDED, OTHER, True)


def test_a_test_left_open_ends_before_the_alarms_it_raises(engine: Engine) -> None:
    routing = SignalRouting(engine, 1000, 2)
    act(engine, lambda c: on_test.start(c, ACCOUNT, 60, "J Smith", T0), queues=True)
    route(engine, [(ACCOUNT, "E130", "004")], T0 + SECOND, routing)  # on test: history only
    before = newest(engine)
    act(engine, lambda c: on_test.stop(c, ACCOUNT, "Tech", T0 + MINUTE), queues=True)
    assert [kind for kind, _ in kinds_of(engine, before)] == [
        kinds.TEST_ENDED,
        kinds.ALARM_RAISED,
    ]


def test_fail_to_test_failed_and_restored(engine: Engine) -> None:
    with write_transaction(engine) as conn:
        conn.execute(
            update(s.account)
            .where(s.account.c.account_number == ACCOUNT)
            .values(test_interval_s=60, last_test_us=T0 - (60 + GRACE_S + 1) * SECOND)
        )
    supervise(engine, T0)
    raised, failed = outbox(engine)
    alarm_id = raised[3]["data"]["alarm_id"]
    assert raised[1] == kinds.ALARM_RAISED
    assert (failed[1], failed[2]) == (kinds.SUPERVISION_FAILED, ACCOUNT)
    assert failed[3]["data"] == {
        "failure": "FAIL TO TEST",
        "type": "FTT",
        "account": ACCOUNT,
        "alarm_id": alarm_id,
    }
    supervise(engine, T0 + SECOND)
    assert newest(engine) == failed[0], "raised once"

    route(engine, [(ACCOUNT, "E602", "000")], T0 + 5 * SECOND)  # the periodic test report
    assert kinds_of(engine, failed[0]) == [
        (kinds.SUPERVISION_RESTORED, alarm_id),
        (kinds.ALARM_RESTORED, alarm_id),
    ]


def test_source_failure_failed_and_restored(engine: Engine) -> None:
    with write_transaction(engine) as conn:
        conn.execute(
            insert(s.heartbeat).values(
                source="site1", destination="rx1", last_seen_us=T0 - 2 * MINUTE, failed_us=T0
            )
        )
    supervise(engine, T0)
    with write_transaction(engine) as conn:
        conn.execute(update(s.heartbeat).values(failed_us=None, last_seen_us=T0 + 5 * SECOND))
    supervise(engine, T0 + 6 * SECOND)
    found = outbox(engine)
    assert [(kind, account) for _, kind, account, _ in found] == [
        (kinds.ALARM_RAISED, ""),
        (kinds.SUPERVISION_FAILED, ""),
        (kinds.ALARM_RESTORED, ""),
        (kinds.SUPERVISION_RESTORED, ""),
    ]
    failed = found[1][3]["data"]
    assert (failed["failure"], failed["source"], failed["destination"]) == (
        "SOURCE FAILURE",
        "site1",
        "rx1",
    )
    assert found[3][3]["data"]["alarm_id"] == failed["alarm_id"] == found[0][3]["data"]["alarm_id"]


def test_old_events_are_forgotten_and_the_counter_says_so(engine: Engine) -> None:
    route(engine, [(ACCOUNT, "E130", "001")], T0)
    route(engine, [(ACCOUNT, "E130", "002")], T0 + 3 * DAY)
    first, second = (event_id for event_id, *_ in outbox(engine))
    with engine.connect() as conn:
        assert events.forgotten_through(conn) == 0
    with write_transaction(engine) as conn:
        assert events.forget(conn, T0 + 7 * DAY - SECOND) == 0, "kept 7 days"
    with write_transaction(engine) as conn:
        assert events.forget(conn, T0 + 7 * DAY + SECOND) == 1
    assert [event_id for event_id, *_ in outbox(engine)] == [second]
    with engine.connect() as conn:
        assert events.forgotten_through(conn) == first
    with write_transaction(engine) as conn:  # never fewer than 24 hours, whatever is asked
        assert events.forget(conn, T0 + 3 * DAY + DAY - SECOND, keep_days=0.5) == 0
        assert events.forget(conn, T0 + 4 * DAY + SECOND, keep_days=0.5) == 1
    assert outbox(engine) == []
    (third,) = route(engine, [(ACCOUNT, "E130", "003")], T0 + 4 * DAY)
    (event_id, *_), *_ = outbox(engine)
    assert event_id > second, "an id is never given twice"
    with engine.connect() as conn:
        assert events.forgotten_through(conn) == second
        assert conn.execute(select(s.alarm.c.alarm_id).where(s.alarm.c.alarm_id == third)).first()
