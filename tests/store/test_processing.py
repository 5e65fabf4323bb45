"""Alarm processing in the store (``alarmhub.store.routing``, ``alarmhub.store.supervision``) on
a real SQLite database: routing committed signals into pending alarms and history, exactly once,
and the supervision checks (fail to test, source failure). Reads go through
``alarmhub.store.queries``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, insert, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from alarmhub.clock import now_us
from alarmhub.core.account import Account
from alarmhub.core.signal import Signal, SignalFields
from alarmhub.store import provisioning, queries
from alarmhub.store import schema as s
from alarmhub.store.commit import (
    ROUTED,
    SignalInsert,
    commit_signals,
    forget_keys,
    store_plain,
)
from alarmhub.store.engine import open_engine, upgrade, write_transaction
from alarmhub.store.routing import SignalRouting
from alarmhub.store.supervision import Supervision
from tests.support.database import database_url, sqlite_only, statements_run

SECOND = 1_000_000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE
WINDOW_US = 24 * HOUR
GRACE_S = 3600
DNIS = "D1"
ACCOUNT = "700012"  # mask 70#### and panel 12
OTHER = "700013"  # panel 13


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = open_engine(database_url(tmp_path, "a"))
    upgrade(engine)
    provisioning.add_dnis(engine, DNIS, "70####")
    provisioning.add_account(engine, Account(ACCOUNT, "Acme Widgets"))
    provisioning.add_account(engine, Account(OTHER, "Other Co"))
    yield engine
    engine.dispose()


@pytest.fixture
def t0() -> int:
    return now_us()


def processor(engine: Engine) -> SignalRouting:
    return SignalRouting(engine, 10, 2)


def sig(
    code: str,
    at_us: int,
    *,
    panel: str = "12",
    zone: str = "015",
    area: str = "01",
    dnis: str = DNIS,
) -> Signal:
    return Signal("site1", "rx1", SignalFields(dnis, panel, code, area, zone), "main", at_us)


def store(engine: Engine, *signals: Signal) -> list[int]:
    """Commit ``signals`` as the writer does (one transaction); their incident numbers."""
    with write_transaction(engine) as conn:
        stored = commit_signals(conn, SignalInsert(engine), signals, WINDOW_US)
    return [x.incident_number for x in stored]


def route(engine: Engine, proc: SignalRouting, now: int, limit: int | None = None) -> int:
    with write_transaction(engine) as conn:
        if limit is None:
            return proc.route(conn, now)
        return proc.route(conn, now, limit)


def supervise(engine: Engine, now: int) -> int:
    with write_transaction(engine) as conn:
        return Supervision(engine, GRACE_S).supervise(conn, now)


def pending(engine: Engine) -> list[dict[str, object]]:
    with engine.connect() as conn:
        return queries.pending_alarms(conn)


def of_incident(engine: Engine, number: int) -> list[dict[str, object]]:
    with engine.connect() as conn:
        return queries.history_of_incident(conn, number)


def history(engine: Engine, account: str, start: int, stop: int) -> list[dict[str, object]]:
    with engine.connect() as conn:
        return queries.account_history(conn, account, start, stop)


def alarm(engine: Engine, alarm_id: int) -> dict[str, object]:
    with engine.connect() as conn:
        found = queries.alarm(conn, alarm_id)
    assert found is not None, f"no alarm {alarm_id}"
    return found


# routing -------------------------------------------------------------------------------------


def test_signals_are_routed_in_incident_order_exactly_once(engine: Engine, t0: int) -> None:
    numbers = store(
        engine,
        sig("E130", t0, zone="001"),
        sig("E401", t0, zone="002"),
        sig("R130", t0, zone="001"),
        sig("E110", t0, zone="004", panel="99"),  # an unknown account
        sig("E602", t0, zone="000"),
    )
    assert numbers == sorted(numbers)
    proc = processor(engine)
    with engine.connect() as conn:
        assert queries.unrouted_count(conn) == 5
    assert route(engine, proc, t0 + 10) == 5
    assert route(engine, proc, t0 + 20) == 0, "a second call routes nothing"

    with engine.connect() as conn:
        assert queries.unrouted_count(conn) == 0
        watermark = conn.execute(
            select(s.sequence.c.value).where(s.sequence.c.name == ROUTED)
        ).scalar_one()
        rows = conn.execute(
            select(s.history.c.incident_number, s.history.c.pr_checksum).order_by(
                s.history.c.event_id
            )
        ).all()
    assert watermark == numbers[-1], "the watermark past the last signal routed"
    assert [n for n, _ in rows] == numbers, "one history event each, in incident order"
    assert [p for _, p in rows] == ["PENDING", "HISTORY", "RESTORE", "UNKNOWN", "HISTORY"]
    for number in numbers:
        assert len(of_incident(engine, number)) == 1


def test_route_limit_takes_the_oldest_first(engine: Engine, t0: int) -> None:
    numbers = store(engine, *(sig("E130", t0 + n, zone=f"{n:03d}") for n in range(5)))
    proc = processor(engine)
    assert route(engine, proc, t0, limit=2) == 2
    assert [len(of_incident(engine, n)) for n in numbers] == [1, 1, 0, 0, 0]
    with engine.connect() as conn:
        assert queries.unrouted_count(conn) == 3
    assert route(engine, proc, t0) == 3
    assert [len(of_incident(engine, n)) for n in numbers] == [1] * 5


def test_plain_commit_signals_are_routed(engine: Engine, t0: int) -> None:
    with write_transaction(engine) as conn:
        batch = [sig("E110", t0, zone="009"), sig("R110", t0 + 1, zone="009")]
        stored = store_plain(conn, SignalInsert(engine), batch)
    fire, restore = (x.incident_number for x in stored)
    assert route(engine, processor(engine), t0) == 2
    assert [e["pr_checksum"] for e in of_incident(engine, restore)] == ["RESTORE"]
    assert of_incident(engine, restore)[0]["alarm_id"] == fire


@pytest.mark.parametrize("count", [1, 37, 1000])
def test_a_batch_of_any_size_is_stored_whole_and_in_order(
    engine: Engine, t0: int, count: int
) -> None:
    """A batch goes in as a few statements of standard sizes (1000: 512, 256, 128, 64, 32
    and 8 rows); every signal is stored once, numbered in the batch's order."""
    batch = [sig("E130", t0 + i, panel=f"{i + 1:04d}") for i in range(count)]
    statement = SignalInsert(engine)
    with write_transaction(engine) as conn:
        stored = store_plain(conn, statement, batch)
    numbers = [x.incident_number for x in stored]
    assert numbers == list(range(numbers[0], numbers[0] + count))
    with engine.connect() as conn:
        rows = conn.execute(
            select(s.signal.c.incident_number, s.signal.c.panel).order_by(
                s.signal.c.incident_number
            )
        ).all()
    assert [tuple(r) for r in rows] == [(n, f"{i + 1:04d}") for i, n in enumerate(numbers)]


def test_alarm_and_restore_in_one_batch_link(engine: Engine, t0: int) -> None:
    burglary, restore = store(engine, sig("E130", t0), sig("R130", t0 + 3 * SECOND))
    assert route(engine, processor(engine), t0 + 4 * SECOND) == 2
    [alarm_event] = of_incident(engine, burglary)
    [restore_event] = of_incident(engine, restore)
    assert (alarm_event["pr_checksum"], alarm_event["alarm_id"]) == ("PENDING", burglary)
    assert (restore_event["pr_checksum"], restore_event["alarm_id"]) == ("RESTORE", burglary)
    assert restore_event["hist_text"] == "BURGLARY RESTORE ZONE 015"
    stored = alarm(engine, burglary)
    assert stored["restore_us"] == t0 + 3 * SECOND
    assert stored["state"] == "pending", "a restore does not take the alarm off the queue"


def test_restore_in_a_later_batch_links_to_the_stored_alarm(engine: Engine, t0: int) -> None:
    proc = processor(engine)
    [burglary] = store(engine, sig("E130", t0))
    [other_zone] = store(engine, sig("E130", t0, zone="016"))
    route(engine, proc, t0)
    assert alarm(engine, burglary)["restore_us"] is None
    [restore] = store(engine, sig("R130", t0 + MINUTE))
    [again] = store(engine, sig("R130", t0 + 2 * MINUTE))
    route(engine, SignalRouting(engine, 10, 2), t0 + 2 * MINUTE)
    assert of_incident(engine, restore)[0]["alarm_id"] == burglary
    assert alarm(engine, burglary)["restore_us"] == t0 + MINUTE
    assert of_incident(engine, again)[0]["alarm_id"] is None, "an alarm is restored once"
    assert alarm(engine, other_zone)["restore_us"] is None


def test_only_restorals_of_operator_handled_types_look_up_alarms(engine: Engine, t0: int) -> None:
    """A closing (R401) or a test report restores nothing: a batch of them looks up no alarm to
    restore; a burglary restoral does."""
    with statements_run(
        engine, lambda sql: "FROM alarm" in sql and "restore_us IS NULL" in sql
    ) as lookups:
        store(engine, sig("E401", t0), sig("R401", t0 + 1), sig("E602", t0 + 2))
        route(engine, processor(engine), t0 + SECOND)
        assert lookups == []
        store(engine, sig("R130", t0 + 3))
        route(engine, processor(engine), t0 + SECOND)
        assert len(lookups) == 1


def test_restorals_of_one_batch_restore_the_newest_open_alarm_each(engine: Engine, t0: int) -> None:
    """The alarms a batch's restorals may restore are looked up at once; each restoral still
    takes the newest alarm not yet restored, those raised in the same batch included."""
    first, second = store(engine, sig("E130", t0), sig("E130", t0 + 1))
    route(engine, processor(engine), t0)
    restore_a, third, restore_b, restore_c, restore_d = store(
        engine,
        sig("R130", t0 + MINUTE),
        sig("E130", t0 + MINUTE + 1),
        sig("R130", t0 + MINUTE + 2),
        sig("R130", t0 + MINUTE + 3),
        sig("R130", t0 + MINUTE + 4),
    )
    route(engine, processor(engine), t0 + 2 * MINUTE)
    linked = [of_incident(engine, n)[0]["alarm_id"] for n in (restore_a, restore_b, restore_c)]
    assert linked == [second, third, first]
    assert of_incident(engine, restore_d)[0]["alarm_id"] is None, "none is left to restore"
    assert [alarm(engine, n)["restore_us"] for n in (first, second, third)] == [
        t0 + MINUTE + 3,
        t0 + MINUTE,
        t0 + MINUTE + 2,
    ]


def test_unknown_account_alarm_in_the_queue(engine: Engine, t0: int) -> None:
    unknown_dnis, unfitting, unknown_account = store(
        engine,
        sig("E130", t0, dnis="D9"),
        sig("E130", t0, panel="12345"),
        sig("E130", t0, panel="77", area="02", zone="003"),
    )
    route(engine, processor(engine), t0)
    queue = {a["alarm_id"]: a for a in pending(engine)}
    assert set(queue) == {unknown_dnis, unfitting, unknown_account}
    for alarm_row in queue.values():
        assert alarm_row["type"] == "UNKN"
        assert str(alarm_row["hist_text"]).startswith("UNKNOWN ACCOUNT")
        assert alarm_row["path"] == "UNKNOWN"
        assert alarm_row["company_name"] is None
    assert (queue[unknown_dnis]["account_number"], queue[unknown_dnis]["dnis"]) == ("", "D9")
    assert queue[unfitting]["panel"] == "12345"
    row = queue[unknown_account]
    assert (row["account_number"], row["panel"], row["code"], row["area"], row["zone"]) == (
        "700077",
        "77",
        "E130",
        "02",
        "003",
    )
    assert (row["source"], row["destination"]) == ("site1", "rx1")


# the pending queue and history ---------------------------------------------------------------


def test_pending_queue_orders_by_priority_before_time(engine: Engine, t0: int) -> None:
    proc = processor(engine)
    [burglary] = store(engine, sig("E130", t0))
    route(engine, proc, t0)
    [fire] = store(engine, sig("E110", t0 + SECOND, panel="13"))
    route(engine, proc, t0 + SECOND)
    [trouble] = store(engine, sig("E300", t0 + 2 * SECOND))
    route(engine, proc, t0 + 2 * SECOND)
    [opening] = store(engine, sig("E401", t0 + 3 * SECOND))  # history only
    route(engine, proc, t0 + 3 * SECOND)
    queue = pending(engine)
    assert [a["alarm_id"] for a in queue] == [fire, burglary, trouble]
    assert opening not in [a["alarm_id"] for a in queue]
    assert [a["priority"] for a in queue] == ["A", "C", "G"]
    assert [a["company_name"] for a in queue] == ["Other Co", "Acme Widgets", "Acme Widgets"]
    assert queue[0]["pending_us"] == t0 + SECOND
    with engine.connect() as conn:
        assert [a["alarm_id"] for a in queries.pending_alarms(conn, limit=2)] == [fire, burglary]
        assert queries.count_pending(conn) == 3


def test_pending_queue_same_priority_oldest_first(engine: Engine, t0: int) -> None:
    proc = processor(engine)
    [first] = store(engine, sig("E130", t0, zone="001"))
    route(engine, proc, t0)
    [second, third] = store(engine, sig("E131", t0, zone="002"), sig("E130", t0, zone="003"))
    route(engine, proc, t0 + SECOND)
    # pending time decides, not the incident number: an older entry into pending sorts first
    with write_transaction(engine) as conn:
        conn.execute(
            update(s.alarm).where(s.alarm.c.alarm_id == third).values(pending_us=t0 - SECOND)
        )
    assert [a["alarm_id"] for a in pending(engine)] == [third, first, second]


def test_account_history_newest_first_in_the_window(engine: Engine, t0: int) -> None:
    numbers = store(engine, *(sig("E401", t0 + n * SECOND, zone=f"{n:03d}") for n in range(5)))
    [other] = store(engine, sig("E401", t0 + 2 * SECOND, panel="13"))
    route(engine, processor(engine), t0 + 10 * SECOND)
    window = history(engine, ACCOUNT, t0 + SECOND, t0 + 3 * SECOND)
    assert [e["incident_number"] for e in window] == [numbers[3], numbers[2], numbers[1]]
    assert other not in [e["incident_number"] for e in window]
    with engine.connect() as conn:
        limited = queries.account_history(conn, ACCOUNT, t0, t0 + 10 * SECOND, limit=2)
        everything = queries.account_history(conn, ACCOUNT, t0, t0 + 10 * SECOND)
        restores = queries.account_history(
            conn, ACCOUNT, t0, t0 + 10 * SECOND, paths=frozenset({"RESTORE"})
        )
    assert [e["incident_number"] for e in limited] == [numbers[4], numbers[3]]
    assert [e["incident_number"] for e in everything] == numbers[::-1]
    assert restores == []
    event = everything[0]
    assert (event["type"], event["hist_text"], event["alarm_category"]) == (
        "OPEN",
        "O/C BY USER 004",
        "S",
    )
    assert (event["second_zone_is"], event["code"], event["event_code"], event["zone"]) == (
        "U",
        "E401",
        "401",
        "004",
    )


def test_alarm_type_override_applies_after_revision_bump(engine: Engine, t0: int) -> None:
    proc = processor(engine)
    [before] = store(engine, sig("E130", t0))
    route(engine, proc, t0)
    assert (alarm(engine, before)["type"], alarm(engine, before)["priority"]) == ("BURG", "C")
    with write_transaction(engine) as conn:
        conn.execute(
            insert(s.alarm_type).values(
                code="130",
                type="INTR",
                restore_type="INTRR",
                priority="B",
                color="4E",
                category="O",
                restore_expected=True,
                hist_text="INTRUDER {zone} AREA {area}",
                updated_us=t0,
            )
        )
        provisioning.bump_revision(conn)
    [after, restored] = store(engine, sig("E130", t0, zone="020"), sig("R130", t0, zone="020"))
    route(engine, proc, t0)
    overridden = alarm(engine, after)
    assert (overridden["type"], overridden["priority"], overridden["color"]) == ("INTR", "B", "4E")
    assert overridden["hist_text"] == "INTRUDER 020 AREA 01"
    assert of_incident(engine, restored)[0]["type"] == "INTRR"
    assert alarm(engine, before)["type"] == "BURG", "what was routed stays as it was"


def test_alarm_type_override_to_system_handled(engine: Engine, t0: int) -> None:
    proc = processor(engine)
    with write_transaction(engine) as conn:
        conn.execute(
            insert(s.alarm_type).values(
                code="300",
                type="TRBL",
                restore_type="TRBL",
                priority="z",
                color="07",
                category="S",
                restore_expected=False,
                hist_text="{event}",
                updated_us=t0,
            )
        )
        provisioning.bump_revision(conn)
    [trouble] = store(engine, sig("E300", t0))
    route(engine, proc, t0)
    assert [e["pr_checksum"] for e in of_incident(engine, trouble)] == ["HISTORY"]
    assert pending(engine) == []


# supervision ---------------------------------------------------------------------------------


def set_test_interval(engine: Engine, account: str, interval_s: int, last_test_us: int) -> None:
    with write_transaction(engine) as conn:
        conn.execute(
            update(s.account)
            .where(s.account.c.account_number == account)
            .values(test_interval_s=interval_s, last_test_us=last_test_us)
        )


def account_row(engine: Engine, account: str) -> dict[str, object]:
    with engine.connect() as conn:
        row = conn.execute(
            select(s.account).where(s.account.c.account_number == account)
        ).mappings()
        return dict(row.one())


def test_fail_to_test_raised_once_and_ended_by_a_test_report(engine: Engine, t0: int) -> None:
    set_test_interval(engine, ACCOUNT, 60, t0 - (60 + GRACE_S + 1) * SECOND)
    set_test_interval(engine, OTHER, 60, t0 - 60 * SECOND)  # within interval + grace
    proc = processor(engine)
    assert supervise(engine, t0) == 1
    assert supervise(engine, t0 + SECOND) == 0
    assert supervise(engine, t0 + 2 * SECOND) == 0, "a new writer neither"
    queue = pending(engine)
    assert len(queue) == 1
    ftt = queue[0]
    assert (ftt["type"], ftt["hist_text"], ftt["account_number"], ftt["path"]) == (
        "FTT",
        "FAIL TO TEST",
        ACCOUNT,
        "SYSTEM",
    )
    alarm_id = int(str(ftt["alarm_id"]))
    assert account_row(engine, ACCOUNT)["test_alarm_id"] == alarm_id
    assert [e["pr_checksum"] for e in of_incident(engine, alarm_id)] == ["SYSTEM"]

    [report] = store(engine, sig("E602", t0 + 5 * SECOND, zone="000"))
    route(engine, proc, t0 + 6 * SECOND)
    assert [e["pr_checksum"] for e in of_incident(engine, report)] == ["HISTORY"]
    events = history(engine, ACCOUNT, t0, t0 + 10 * SECOND)
    restorals = [
        e for e in events if e["alarm_id"] == alarm_id and e["incident_number"] != alarm_id
    ]
    assert len(restorals) == 1
    assert (restorals[0]["hist_text"], restorals[0]["pr_checksum"]) == (
        "FAIL TO TEST RESTORE",
        "SYSTEM",
    )
    assert alarm(engine, alarm_id)["restore_us"] == t0 + 6 * SECOND
    account = account_row(engine, ACCOUNT)
    assert account["test_alarm_id"] is None
    assert account["last_test_us"] == t0 + 5 * SECOND
    assert supervise(engine, t0 + 7 * SECOND) == 0, "the test report reset the clock"
    later = t0 + 5 * SECOND + (60 + GRACE_S + 1) * SECOND
    supervise(engine, later)
    again = account_row(engine, ACCOUNT)["test_alarm_id"]
    assert again is not None, "the next missed test raises again"
    assert again != alarm_id


def test_a_fail_to_test_raised_beside_routing_is_ended_by_the_next_test_report(
    engine: Engine, t0: int
) -> None:
    """In the writer, supervision shares what routing remembers of the accounts: an account
    routing met before its FAIL TO TEST was raised is known to have it, and its next test
    report ends it."""
    set_test_interval(engine, ACCOUNT, 60, t0 - (60 + GRACE_S + 1) * SECOND)
    proc = processor(engine)
    store(engine, sig("E401", t0 - 10 * SECOND, zone="001"))
    route(engine, proc, t0 - 9 * SECOND)  # routing has met the account: no FAIL TO TEST yet
    with write_transaction(engine) as conn:
        assert Supervision(engine, GRACE_S, cache=proc.cache).supervise(conn, t0) == 1
    alarm_id = account_row(engine, ACCOUNT)["test_alarm_id"]
    assert alarm_id is not None
    store(engine, sig("E602", t0 + 5 * SECOND, zone="000"))
    route(engine, proc, t0 + 6 * SECOND)
    assert alarm(engine, int(alarm_id))["restore_us"] == t0 + 6 * SECOND
    assert account_row(engine, ACCOUNT)["test_alarm_id"] is None


def test_test_reports_of_one_batch_restore_once_and_keep_the_newest_time(
    engine: Engine, t0: int
) -> None:
    set_test_interval(engine, ACCOUNT, 60, t0 - (60 + GRACE_S + 1) * SECOND)
    set_test_interval(engine, OTHER, 60, t0 - 30 * SECOND)
    proc = processor(engine)
    assert supervise(engine, t0) == 1
    [ftt] = pending(engine)
    alarm_id = int(str(ftt["alarm_id"]))
    store(
        engine,
        sig("E602", t0 + 9 * SECOND, zone="000"),
        sig("E602", t0 + 5 * SECOND, zone="000"),  # older, arriving later: the clock stays
        sig("E602", t0 + 7 * SECOND, zone="000", panel="13"),  # the other account
    )
    route(engine, proc, t0 + 10 * SECOND)  # one batch, one transaction
    restorals = [
        e
        for e in history(engine, ACCOUNT, t0, t0 + 20 * SECOND)
        if e["alarm_id"] == alarm_id and e["hist_text"] == "FAIL TO TEST RESTORE"
    ]
    assert len(restorals) == 1
    assert account_row(engine, ACCOUNT)["last_test_us"] == t0 + 9 * SECOND
    assert account_row(engine, ACCOUNT)["test_alarm_id"] is None
    assert account_row(engine, OTHER)["last_test_us"] == t0 + 7 * SECOND


def test_fail_to_test_counts_from_creation_without_a_test(engine: Engine, t0: int) -> None:
    with write_transaction(engine) as conn:
        conn.execute(
            update(s.account)
            .where(s.account.c.account_number == ACCOUNT)
            .values(test_interval_s=60, last_test_us=None, created_us=t0)
        )
    assert supervise(engine, t0 + (60 + GRACE_S) * SECOND) == 0
    assert supervise(engine, t0 + (60 + GRACE_S) * SECOND + 1) == 1
    assert [a["type"] for a in pending(engine)] == ["FTT"]


def heartbeat_row(engine: Engine) -> dict[str, object]:
    with engine.connect() as conn:
        return dict(conn.execute(select(s.heartbeat)).mappings().one())


def test_source_failure_alarm_and_restoral(engine: Engine, t0: int) -> None:
    with write_transaction(engine) as conn:
        conn.execute(
            insert(s.heartbeat).values(
                source="site1", destination="rx1", last_seen_us=t0 - 2 * MINUTE, failed_us=t0
            )
        )
    assert supervise(engine, t0) == 1
    assert supervise(engine, t0 + SECOND) == 0
    [srcfl] = pending(engine)
    assert srcfl["type"] == "SRCFL"
    assert srcfl["hist_text"] == "SOURCE FAILURE site1:rx1"
    alarm_id = srcfl["alarm_id"]
    assert heartbeat_row(engine)["alarm_id"] == alarm_id

    with write_transaction(engine) as conn:
        conn.execute(update(s.heartbeat).values(failed_us=None, last_seen_us=t0 + 5 * SECOND))
    assert supervise(engine, t0 + 6 * SECOND) == 1
    assert supervise(engine, t0 + 7 * SECOND) == 0
    assert heartbeat_row(engine)["alarm_id"] is None
    events = history(engine, "", t0, t0 + 10 * SECOND)
    assert [(e["hist_text"], e["alarm_id"], e["pr_checksum"]) for e in events] == [
        ("SOURCE FAILURE site1:rx1 RESTORE", alarm_id, "SYSTEM"),
        ("SOURCE FAILURE site1:rx1", alarm_id, "SYSTEM"),
    ]
    assert events[0]["incident_number"] != alarm_id
    assert alarm(engine, int(str(alarm_id)))["restore_us"] == t0 + 6 * SECOND

    # a second failure is a second alarm
    with write_transaction(engine) as conn:
        conn.execute(update(s.heartbeat).values(failed_us=t0 + 9 * SECOND))
    assert supervise(engine, t0 + 9 * SECOND) == 1
    assert [a["type"] for a in pending(engine)] == ["SRCFL", "SRCFL"]


def test_system_incident_numbers_do_not_collide_with_signals(engine: Engine, t0: int) -> None:
    set_test_interval(engine, ACCOUNT, 60, t0 - 2 * (60 + GRACE_S) * SECOND)
    first = store(engine, sig("E130", t0))
    proc = processor(engine)
    supervise(engine, t0)
    second = store(engine, sig("E130", t0, zone="002"))
    route(engine, proc, t0)
    with engine.connect() as conn:
        numbers = conn.execute(select(s.history.c.incident_number)).scalars().all()
        signal_numbers = conn.execute(select(s.signal.c.incident_number)).scalars().all()
    assert len(numbers) == len(set(numbers)) == 3
    assert sorted(signal_numbers) == first + second
    assert second[0] > first[0] + 1, "the FAIL TO TEST alarm took the number in between"


# runaway across a restart --------------------------------------------------------------------


@pytest.mark.parametrize(
    "recall",
    [
        True,
        pytest.param(
            False,
            marks=sqlite_only(
                "the control needs a runaway window that starts empty; on PostgreSQL each "
                "routing turn counts what every node routed since its last turn"
            ),
        ),
    ],
)
def test_recall_rebuilds_runaway_windows(engine: Engine, t0: int, recall: bool) -> None:
    store(engine, *(sig("E130", t0 + n * SECOND, zone=f"{n:03d}") for n in range(10)))
    assert route(engine, processor(engine), t0 + 10 * SECOND) == 10

    restarted = processor(engine)  # a new writer process: its runaway windows start empty
    if recall:
        with write_transaction(engine) as conn:
            restarted.recall(conn, t0 + 11 * SECOND)
    [eleventh] = store(engine, sig("E130", t0 + 11 * SECOND, zone="011"))
    route(engine, restarted, t0 + 11 * SECOND)
    runaways = [a for a in pending(engine) if a["type"] == "RUNAW"]
    [event] = of_incident(engine, eleventh)
    if recall:
        assert len(runaways) == 1
        assert runaways[0]["hist_text"] == "RUNAWAY 10 SIGS IN 2 MIN"
        assert runaways[0]["account_number"] == ACCOUNT
        assert event["pr_checksum"] == "RUNAWAY"
        with engine.connect() as conn:
            assert queries.alarm(conn, eleventh) is None
    else:  # the control: without recall the window is empty and the signal routes normally
        assert runaways == []
        assert event["pr_checksum"] == "PENDING"


def test_recall_does_not_raise_a_second_runaway(engine: Engine, t0: int) -> None:
    store(engine, *(sig("E130", t0 + n * SECOND, zone=f"{n:03d}") for n in range(12)))
    route(engine, processor(engine), t0 + 12 * SECOND)
    restarted = processor(engine)
    with write_transaction(engine) as conn:
        restarted.recall(conn, t0 + 13 * SECOND)
    [later] = store(engine, sig("E130", t0 + 13 * SECOND))
    route(engine, restarted, t0 + 13 * SECOND)
    assert of_incident(engine, later)[0]["pr_checksum"] == "RUNAWAY"
    with engine.connect() as conn:
        runaways = conn.execute(
            select(func.count()).select_from(s.alarm).where(s.alarm.c.type == "RUNAW")
        ).scalar_one()
    assert runaways == 1


# a routing transaction that does not commit --------------------------------------------------


def block_alarm_id(engine: Engine, alarm_id: int, t0: int) -> None:
    """Store an alarm row with ``alarm_id``: routing a signal of that incident number then
    fails on the alarm's primary key, a real error from the database."""
    row = {
        "alarm_id": alarm_id, "state": "closed", "account_number": "X", "type": "X",
        "priority": "z", "color": "07", "hist_text": "X", "path": "SYSTEM", "code": "",
        "event_code": "", "area": "", "zone": "", "source": "", "destination": "", "dnis": "",
        "panel": "", "received_us": t0, "pending_us": t0, "passcode_verified": "N",
    }  # fmt: skip
    with write_transaction(engine) as conn:
        conn.execute(insert(s.alarm).values(row))


def unblock_alarm_id(engine: Engine, alarm_id: int) -> None:
    with write_transaction(engine) as conn:
        conn.execute(s.alarm.delete().where(s.alarm.c.alarm_id == alarm_id))


def test_failed_routing_is_retried_without_counting_twice(engine: Engine, t0: int) -> None:
    """Routing that fails (here on a constraint) rolls back; the writer retries. The retry must
    route as if the failed attempt never happened: the runaway windows must not have counted
    the signals of the failed attempt (six burglaries counted twice would be twelve, a runaway,
    and two real burglaries would go to history only)."""
    numbers = store(engine, *(sig("E130", t0 + n * SECOND, zone=f"{n:03d}") for n in range(6)))
    block_alarm_id(engine, numbers[-1], t0)
    proc = processor(engine)
    with pytest.raises(IntegrityError), write_transaction(engine) as conn:
        proc.route(conn, t0 + 6 * SECOND)
    with engine.connect() as conn:
        assert queries.unrouted_count(conn) == 6, "the failed attempt changed nothing"
    unblock_alarm_id(engine, numbers[-1])
    with write_transaction(engine) as conn:
        proc.recover(conn, t0 + 7 * SECOND)  # what the writer does after a failed attempt
        assert proc.route(conn, t0 + 7 * SECOND) == 6
    assert [of_incident(engine, n)[0]["pr_checksum"] for n in numbers] == ["PENDING"] * 6
    assert [a["type"] for a in pending(engine)] == ["BURG"] * 6


def test_an_older_test_report_does_not_move_the_clock_back(engine: Engine, t0: int) -> None:
    set_test_interval(engine, ACCOUNT, 3600, t0)
    [newer, older] = store(
        engine, sig("E602", t0 + 50 * SECOND, zone="000"), sig("E602", t0 + 10 * SECOND, zone="000")
    )
    proc = processor(engine)
    route(engine, proc, t0 + 60 * SECOND)
    assert [e["pr_checksum"] for e in of_incident(engine, older)] == ["HISTORY"]
    assert account_row(engine, ACCOUNT)["last_test_us"] == t0 + 50 * SECOND
    assert newer < older


def test_routing_engine_commits_without_fsync_and_signals_with(tmp_path: Path) -> None:
    """Signals are committed with synchronous=FULL; routing's derived work with NORMAL (in WAL
    mode: written at commit, made durable by the next fsynced commit). On PostgreSQL:
    synchronous_commit on, and off for routing."""
    url = database_url(tmp_path, "b")
    for synchronous in (True, False):
        engine = open_engine(url, synchronous=synchronous)
        with engine.connect() as conn:
            if engine.dialect.name == "postgresql":
                expected = "on" if synchronous else "off"
                assert conn.exec_driver_sql("SHOW synchronous_commit").scalar() == expected
            else:
                assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == (
                    2 if synchronous else 1
                )
                assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        engine.dispose()


def test_keys_are_forgotten_when_their_window_passes(engine: Engine, t0: int) -> None:
    """A token's Idempotency-Keys last ``idempotency_hours``; a token name with a window of its
    own (the DC-09 retry window) keeps its keys that long; newer keys stay."""
    provisioning.create_token(engine, "main")

    def keyed(token: str, key: str, at_us: int) -> Signal:
        return Signal(
            "site1", "rx1", SignalFields(DNIS, "12", "E130", "01", "015"), token, at_us, key
        )

    dc09_window = 300 * SECOND
    with write_transaction(engine) as conn:
        commit_signals(
            conn,
            SignalInsert(engine),
            [
                keyed("main", "old", t0 - WINDOW_US - SECOND),
                keyed("main", "new", t0 - WINDOW_US + SECOND),
                keyed("dc09", "old", t0 - dc09_window - SECOND),
                keyed("dc09", "new", t0 - dc09_window + SECOND),
            ],
            WINDOW_US,
            {"dc09": dc09_window},
        )
    with write_transaction(engine) as conn:
        assert forget_keys(conn, t0, WINDOW_US, {"dc09": dc09_window}) == 2
    with engine.connect() as conn:
        c = s.idempotency.c
        kept = {tuple(row) for row in conn.execute(select(c.token_name, c.idempotency_key))}
    assert kept == {("main", "new"), ("dc09", "new")}


def test_what_routing_remembers_of_accounts_follows_their_changes(engine: Engine, t0: int) -> None:
    """One router, as the writer keeps it: a FAIL TO TEST alarm raised by the supervision
    beside it after routing met the account, an account added after routing met its number,
    and a zone described after routing met the account, are each seen by the next batch."""
    from alarmhub.core.response import Zone
    from alarmhub.store import response

    set_test_interval(engine, ACCOUNT, 60, t0 - (60 + GRACE_S + 1) * SECOND)
    proc = processor(engine)
    checks = Supervision(engine, GRACE_S, cache=proc.cache)  # as the writer pairs them
    first, _ = store(engine, sig("E130", t0, panel="14"), sig("E130", t0))
    route(engine, proc, t0)
    assert of_incident(engine, first)[0]["pr_checksum"] == "UNKNOWN"
    with write_transaction(engine) as conn:
        assert checks.supervise(conn, t0 + SECOND) == 1
    [ftt] = [a for a in pending(engine) if a["type"] == "FTT"]
    [report] = store(engine, sig("E602", t0 + 2 * SECOND, zone="000"))
    route(engine, proc, t0 + 3 * SECOND)
    assert alarm(engine, int(str(ftt["alarm_id"])))["restore_us"] == t0 + 3 * SECOND
    assert [e["pr_checksum"] for e in of_incident(engine, report)] == ["HISTORY"]

    provisioning.add_account(engine, Account("700014", "Late Co"))
    response.set_zone(engine, Zone(ACCOUNT, "015", "BACK DOOR"))
    late, burglary = store(
        engine, sig("E130", t0 + 4 * SECOND, panel="14"), sig("E130", t0 + 4 * SECOND)
    )
    route(engine, proc, t0 + 5 * SECOND)
    assert of_incident(engine, late)[0]["pr_checksum"] == "PENDING"
    assert "BACK DOOR" in str(of_incident(engine, burglary)[0]["hist_text"])


def test_a_lines_unknown_account_alarm_is_joined_across_batches_until_it_is_closed(
    engine: Engine, t0: int
) -> None:
    from alarmhub.core.dc09 import DESTINATION

    def stranger(at_us: int) -> Signal:
        fields = SignalFields(DNIS, "99", "E130", "01", "001")  # panel 99: no account
        return Signal("R1L1", DESTINATION, fields, "main", at_us)

    proc = processor(engine)
    [first] = store(engine, stranger(t0))
    route(engine, proc, t0)
    [second] = store(engine, stranger(t0 + 1))  # another batch: the one alarm, from memory
    route(engine, proc, t0 + 1)
    assert [a["alarm_id"] for a in pending(engine)] == [first]
    assert of_incident(engine, second)[0]["alarm_id"] == first
    with write_transaction(engine) as conn:  # an operator closed it
        conn.execute(update(s.alarm).where(s.alarm.c.alarm_id == first).values(state="resolved"))
    [third] = store(engine, stranger(t0 + 2))
    route(engine, proc, t0 + 2)
    assert [a["alarm_id"] for a in pending(engine)] == [third]


def test_signals_joining_an_open_alarm_give_it_their_most_urgent_priority(
    engine: Engine, t0: int
) -> None:
    from alarmhub.core.dc09 import DESTINATION

    def stranger(code: str, at_us: int) -> Signal:
        return Signal("R1L2", DESTINATION, SignalFields(DNIS, "98", code, "01", "001"), "m", at_us)

    proc = processor(engine)
    [first] = store(engine, stranger("E602", t0))  # a test report from a panel no one knows
    route(engine, proc, t0)
    before = str(alarm(engine, first)["priority"])
    # one batch: a less urgent signal, a fire, and another less urgent one join the alarm
    joined = store(
        engine, stranger("E602", t0 + 1), stranger("E110", t0 + 2), stranger("E602", t0 + 3)
    )
    route(engine, proc, t0 + 3)
    fire = str(of_incident(engine, joined[1])[0]["priority"])
    assert fire < before, "the fire is more urgent than the unknown test report"
    assert [of_incident(engine, n)[0]["alarm_id"] for n in joined] == [first] * 3
    assert alarm(engine, first)["priority"] == fire
