"""Open/close schedules in the store, on SQLite and PostgreSQL, through the real interfaces:
schedules set as the command line sets them, signals committed and routed as the node routes
them, and the supervision pass that judges them.

Shown: a late to close from a schedule whose close was a minute ago, raised by one pass and
exactly once over repeated passes and over two supervisions on two connections; restored by
the closing that follows; an unscheduled open from a routed E401 (also one routed after the
pass went past its time); catch-up after the watermark was left behind; an operator's manual
open; the scheduled accounts routing reads, reloaded when a schedule is set.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update
from sqlalchemy.engine import Engine

from alarmhub.core import schedules as rules
from alarmhub.core.account import Account
from alarmhub.core.alarm_types import LATE_TO_CLOSE, LATE_TO_OPEN, UNSCHEDULED_OPEN
from alarmhub.core.errors import ProvisioningError
from alarmhub.core.operations import Action
from alarmhub.core.signal import Signal, SignalFields
from alarmhub.store import operations, operators, provisioning, schedule_data, schedules
from alarmhub.store import schema as s
from alarmhub.store.commit import SignalInsert, commit_signals
from alarmhub.store.engine import open_engine, write_transaction
from alarmhub.store.routing import SignalRouting
from alarmhub.store.supervision import Supervision
from tests.support.database import database_url

SECOND = 1_000_000
MINUTE = 60 * SECOND
DNIS = "D1"
ACCOUNT = "700012"
H = s.history.c
A = s.alarm.c


def utc(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()) * SECOND


MONDAY_CLOSE = utc("2026-03-02 18:00")


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = open_engine(database_url(tmp_path, "a"))
    provisioning.add_dnis(engine, DNIS, "70####")
    provisioning.add_account(engine, Account(ACCOUNT, "Acme Widgets", "1 Main St", "Springfield"))
    operators.add_operator(engine, "001", "Ann", "operator", "correct horse")
    yield engine
    engine.dispose()


def set_schedule(engine: Engine, now: int, **settings: Any) -> None:
    change = schedule_data.Change(
        ACCOUNT,
        days=rules.parse_days("mon-fri"),
        window=rules.Window(8 * 60, 18 * 60),
        settings=schedule_data.Settings(**settings),
    )
    operations.run(engine, lambda c: schedule_data.set_schedule(c, change, now, UTC))


def supervise(engine: Engine, now: int, supervision: Supervision | None = None) -> None:
    with write_transaction(engine) as conn:
        (supervision or Supervision(engine, 3600, UTC)).supervise(conn, now)


def route(engine: Engine, routing: SignalRouting, code: str, user: str, at: int, now: int) -> int:
    signal = Signal("site", "rx", SignalFields(DNIS, "12", code, "01", user), "t", at)
    with write_transaction(engine) as conn:
        [stored] = commit_signals(conn, SignalInsert(engine), [signal], 3600 * SECOND)
    with write_transaction(engine) as conn:
        routing.route(conn, now)
    return stored.incident_number


def alarms(engine: Engine, kind: Any) -> list[dict[str, Any]]:
    query = select(s.alarm).where(A.type == kind.type).order_by(A.alarm_id)
    with engine.connect() as conn:
        return [dict(r) for r in conn.execute(query).mappings()]


def schedule_row(engine: Engine) -> dict[str, Any]:
    with engine.connect() as conn:
        row = conn.execute(select(s.schedule)).mappings().one()
    return dict(row)


def test_late_to_close_a_minute_after_the_close_is_raised_once_by_every_node(
    engine: Engine, tmp_path: Path
) -> None:
    now = MONDAY_CLOSE + MINUTE
    set_schedule(engine, now)
    assert schedule_row(engine)["checked_us"] == utc("2026-03-02 00:00")  # the local day
    first = Supervision(engine, 3600, UTC)
    other_engine = open_engine(database_url(tmp_path, "a"))  # another node's connection
    second = Supervision(other_engine, 3600, UTC)
    try:
        for n in range(3):  # both nodes run their passes
            supervise(engine, now + n * SECOND, first)
            supervise(other_engine, now + n * SECOND, second)
        # the whole day judged again by the other node (as after a late event or a set)
        with write_transaction(engine) as conn:
            conn.execute(
                update(s.schedule).values(checked_us=utc("2026-03-02 00:00"), next_check_us=now)
            )
        supervise(other_engine, now + 3 * SECOND, second)
    finally:
        other_engine.dispose()
    [late_close] = alarms(engine, LATE_TO_CLOSE)
    assert late_close["hist_text"] == "LATE TO CLOSE 18:00"
    assert (late_close["state"], late_close["pending_us"]) == ("pending", now)
    [late_open] = alarms(engine, LATE_TO_OPEN)  # nothing opened it at 08:00 either
    assert late_open["hist_text"] == "LATE TO OPEN 08:00"
    row = schedule_row(engine)
    assert row["ltc_alarm_id"] == late_close["alarm_id"]
    assert row["checked_us"] == now + 3 * SECOND
    assert row["next_check_us"] == utc("2026-03-03 08:00")


def test_only_the_supervision_leader_judges_schedules(engine: Engine) -> None:
    now = MONDAY_CLOSE + MINUTE
    set_schedule(engine, now)
    follower = Supervision(engine, 3600, UTC)
    with write_transaction(engine) as conn:
        follower.supervise(conn, now, leader=False)
    assert alarms(engine, LATE_TO_CLOSE) == []
    assert schedule_row(engine)["checked_us"] == utc("2026-03-02 00:00")  # left to the leader
    supervise(engine, now + SECOND, follower)  # the lead taken: judged at its next pass
    assert [a["hist_text"] for a in alarms(engine, LATE_TO_CLOSE)] == ["LATE TO CLOSE 18:00"]


def test_a_schedule_set_again_does_not_raise_its_alarms_again(engine: Engine) -> None:
    now = MONDAY_CLOSE + MINUTE
    set_schedule(engine, now, late_to_open=False)
    supervise(engine, now)
    set_schedule(engine, now + MINUTE, grace_min=0)  # the same window again, a setting
    supervise(engine, now + MINUTE)
    assert len(alarms(engine, LATE_TO_CLOSE)) == 1
    assert alarms(engine, LATE_TO_OPEN) == []
    with engine.connect() as conn:
        windows = conn.execute(select(s.schedule_window)).all()
    assert len(windows) == 5  # an identical window is not added twice


def test_the_closing_that_follows_restores_late_to_close(engine: Engine) -> None:
    now = MONDAY_CLOSE + MINUTE
    set_schedule(engine, now, late_to_open=False)
    routing = SignalRouting(engine, 1000, 2)
    supervise(engine, now)
    assert alarms(engine, LATE_TO_CLOSE)[0]["restore_us"] is None
    closing_at = MONDAY_CLOSE + 5 * MINUTE
    incident = route(engine, routing, "R401", "004", closing_at, closing_at)
    supervise(engine, closing_at + SECOND)
    [restored] = alarms(engine, LATE_TO_CLOSE)
    assert restored["restore_us"] == closing_at + SECOND
    with engine.connect() as conn:
        texts = conn.execute(
            select(H.hist_text).where(H.type == LATE_TO_CLOSE.type).order_by(H.event_id)
        ).scalars()
        assert list(texts) == ["LATE TO CLOSE 18:00", "LATE TO CLOSE RESTORE"]
        event = conn.execute(select(s.open_close)).mappings().one()
        closing = conn.execute(select(H.type).where(H.incident_number == incident)).scalar()
    assert (event["opening"], event["user_number"], event["incident_number"]) == (
        False,
        "004",
        incident,
    )
    assert closing == "CLOSE"  # the signal routed as it always was
    assert schedule_row(engine)["ltc_alarm_id"] is None


def test_a_routed_opening_outside_every_window_is_an_unscheduled_open(engine: Engine) -> None:
    evening = utc("2026-03-02 21:00")
    set_schedule(engine, evening - MINUTE, late_to_close=False, late_to_open=False)
    routing = SignalRouting(engine, 1000, 2)
    supervise(engine, evening - MINUTE)
    route(engine, routing, "E401", "003", evening, evening)
    assert schedule_row(engine)["next_check_us"] <= evening  # judged at the next pass
    supervise(engine, evening + SECOND)
    supervise(engine, evening + 2 * SECOND)
    [unscheduled] = alarms(engine, UNSCHEDULED_OPEN)
    assert unscheduled["hist_text"] == "UNSCHEDULED OPEN USER 003"
    # an opening in the window raises nothing
    morning = utc("2026-03-03 09:00")
    route(engine, routing, "E401", "003", morning, morning)
    supervise(engine, morning + SECOND)
    assert len(alarms(engine, UNSCHEDULED_OPEN)) == 1


def test_an_opening_routed_after_the_pass_went_past_its_time_is_still_judged(
    engine: Engine,
) -> None:
    evening = utc("2026-03-02 21:00")
    set_schedule(engine, evening - MINUTE, late_to_close=False, late_to_open=False)
    routing = SignalRouting(engine, 1000, 2)
    supervise(engine, evening + 2 * SECOND)  # the pass ran before the signal was routed
    route(engine, routing, "E401", "003", evening, evening + 3 * SECOND)
    supervise(engine, evening + 4 * SECOND)
    assert len(alarms(engine, UNSCHEDULED_OPEN)) == 1


def test_a_node_down_over_the_close_catches_up_once(engine: Engine) -> None:
    noon = utc("2026-03-02 12:00")
    set_schedule(engine, noon, late_to_open=False)
    supervise(engine, noon)
    assert schedule_row(engine)["next_check_us"] == MONDAY_CLOSE
    assert alarms(engine, LATE_TO_CLOSE) == []
    back = utc("2026-03-02 20:30")  # down from noon until 20:30: no pass at 18:00
    supervise(engine, back)
    supervise(engine, back + SECOND)
    [late_close] = alarms(engine, LATE_TO_CLOSE)
    assert late_close["pending_us"] == back


def test_an_operators_manual_open_is_recorded_and_judged(engine: Engine) -> None:
    evening = utc("2026-03-02 21:00")
    set_schedule(engine, evening - MINUTE, late_to_close=False, late_to_open=False)
    answer = operations.run(
        engine,
        lambda c: operations.on_queues(
            lambda c: schedules.manual(c, ACCOUNT, "", True, "001", evening), c
        ),
    )
    assert answer["opr"] == "001"
    supervise(engine, evening + SECOND)
    [unscheduled] = alarms(engine, UNSCHEDULED_OPEN)
    assert unscheduled["hist_text"] == "UNSCHEDULED OPEN BY OPERATOR 001"
    with engine.connect() as conn:
        audit = conn.execute(
            select(H.account_number, H.opr, H.hist_text).where(H.type == Action.MANUAL_OPEN.value)
        ).one()
    assert tuple(audit) == (ACCOUNT, "001", f"OPR 001 OPENED ACCOUNT: {ACCOUNT}")
    with pytest.raises(ProvisioningError, match="no schedule"):
        operations.run(engine, lambda c: schedules.manual(c, "700099", "", True, "001", evening))


def test_routing_reads_the_scheduled_accounts_from_its_cache(engine: Engine) -> None:
    routing = SignalRouting(engine, 1000, 2)
    at = utc("2026-03-02 21:00")
    route(engine, routing, "E401", "003", at, at)  # no schedule yet: not recorded
    set_schedule(engine, at)
    route(engine, routing, "E401", "003", at + SECOND, at + SECOND)
    with engine.connect() as conn:
        events = conn.execute(select(s.open_close.c.at_us)).scalars().all()
    assert events == [at + SECOND]
    assert routing.cache.scheduled == frozenset({ACCOUNT})
