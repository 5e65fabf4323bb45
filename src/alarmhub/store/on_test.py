"""On test in the store: putting an account on test, ending the test (``test stop``, or by itself
at its end time from supervision), the running tests and the report of a test, each applied in
the caller's write transaction with the rules of ``core.on_test``.

Routing reads the running tests from its provisioning cache, so every start, change and return
bumps the provisioning revision (routing reloads them with its next batch) and the queue revision
(the consoles' on-test panel follows). Each is a system-handled history event of the account
(ALARM_CATEGORY S): TSTON ``ON TEST 60 MIN BY ...`` and TSTOF ``RETURN FROM TEST [BY ...]``, with
the path OPERATOR when a person did it (the console's operator in OPR) and SYSTEM for the
automatic return. A return raises TEST END NOT RESTORED for each zone the test left open. A
start and a return are also events of the outbox (``account.test_started``,
``account.test_ended``), in the same transaction.

A test is returned once however many nodes supervise: the return is a conditional UPDATE
(``WHERE ended_us IS NULL``) whose row count says who does it, in the transaction that raises its
alarms.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, insert, select, update

from alarmhub.core import events, response
from alarmhub.core import on_test as rules
from alarmhub.core.alarm_types import (
    ALARM_TEXT_MAX,
    SYSTEM_HANDLED,
    TEST_END_NOT_RESTORED,
    cut_text,
    merged,
)
from alarmhub.core.errors import ActionRefused
from alarmhub.core.router import RoutePath, Router
from alarmhub.store import events as outbox
from alarmhub.store import handling, provisioning, queries, schema
from alarmhub.store.commit import allocate_incidents
from alarmhub.store.provisioning_cache import ProvisioningCache
from alarmhub.store.repository import Inserts, SqlRepository

TEST = schema.on_test.c
ACCOUNT = schema.account.c
HISTORY = schema.history.c
SYSTEM_COLOR = "07"
SYSTEM_PRIORITY = "z"
"""The COLOR and PRIORITY of the station's system-handled records (alarm_types.tsv)."""
REPORT_MAX = 5000
"""At most this many signals in the report of one test."""


def no_account(number: str) -> ActionRefused:
    return ActionRefused("OPS-ACCOUNT", f"no account {number!r}", 404)


def _company(conn: Connection, number: str) -> str:
    """The account's name; refused when the account does not exist."""
    found = conn.execute(
        select(ACCOUNT.company_name).where(ACCOUNT.account_number == number)
    ).first()
    if found is None:
        raise no_account(number)
    return str(found.company_name or "")


def _running(conn: Connection, account: str) -> dict[str, Any] | None:
    row = (
        conn.execute(
            select(schema.on_test)
            .where(TEST.account_number == account, TEST.ended_us.is_(None))
            .order_by(TEST.test_id.desc())
            .limit(1)
        )
        .mappings()
        .first()
    )
    return dict(row) if row else None


def _record(
    conn: Connection,
    account: str,
    kind: str,
    text: str,
    path: RoutePath,
    opr: str | None,
    now_us: int,
) -> None:
    """The history event of a start or a return: system-handled, of the account."""
    conn.execute(
        insert(schema.history).values(
            account_number=account, incident_number=allocate_incidents(conn, 1),
            received_us=now_us, code="", event_code="", area="", zone="", type=kind,
            opr=opr or None, alarm_category=SYSTEM_HANDLED, priority=SYSTEM_PRIORITY,
            hist_text=cut_text(text), am_notify="N", pr_checksum=path.value,
            second_zone_is="N", color=SYSTEM_COLOR, video="N", alarm_id=None, source="",
            destination="", dnis="", panel="", note=text if len(text) > ALARM_TEXT_MAX else None,
        )
    )  # fmt: skip


def _changed(conn: Connection) -> None:
    provisioning.bump_revision(conn)
    provisioning.bump_revision(conn, queries.QUEUE)


def start(
    conn: Connection,
    account: str,
    minutes: int,
    by: str,
    now_us: int,
    zones: Sequence[str] = (),
    types: Sequence[str] = (),
    reason: str = "",
    opr: str | None = None,
) -> dict[str, Any]:
    """Put ``account`` on test for ``minutes`` (of ``zones`` and ``types`` only, when named),
    asked for by ``by``; ``opr`` is the console's operator (None: the command line). An account
    already on test keeps its test, with the new end, zones, TYPEs, by and reason. Refused: an
    unknown account, a value the rules refuse, a TYPE the station's alarm types do not give.
    The test as :func:`running_tests` shows it."""
    minutes = rules.check_minutes(minutes)
    by = rules.check_by(by)
    zone_list = rules.check_zones(zones)
    type_list = rules.check_types(types)
    reason = rules.check_reason(reason)
    _company(conn, account)
    rules.check_station_has(type_list, merged(provisioning.alarm_type_overrides(conn)).values())
    values = {
        "zones": rules.joined(zone_list),
        "types": rules.joined(type_list),
        "by": by,
        "reason": reason,
        "opr": opr or None,
        "ends_us": rules.ends_us(now_us, minutes),
    }
    running = _running(conn, account)
    if running is not None and running["ends_us"] <= now_us:  # due: supervision is behind
        _return(conn, running, now_us, None, None)
        running = None
    if running is not None:
        conn.execute(
            update(schema.on_test).where(TEST.test_id == running["test_id"]).values(**values)
        )
    else:
        conn.execute(
            insert(schema.on_test).values(account_number=account, started_us=now_us, **values)
        )
    text = rules.start_text(minutes, by, zone_list, type_list, reason)
    _record(conn, account, rules.START_TYPE, text, RoutePath.OPERATOR, opr, now_us)
    test = _running(conn, account)
    assert test is not None
    outbox.publish(conn, events.TEST_STARTED, account, events.test_data(test), now_us)
    _changed(conn)
    (shown,) = [t for t in running_tests(conn, now_us) if t["account_number"] == account]
    return shown


def stop(
    conn: Connection, account: str, by: str, now_us: int, opr: str | None = None
) -> dict[str, Any]:
    """End the account's test now (``test stop``): a return from test like the automatic one,
    by ``by`` (may be empty). Refused when the account is not on test. The test's report."""
    _company(conn, account)
    who = rules.check_by(by) if by.strip() else ""
    running = _running(conn, account)
    if running is None:
        raise rules.refused(f"account {account} is not on test", 409)
    _return(conn, running, now_us, who, opr)
    return report(conn, account)


def return_due(conn: Connection, repo: SqlRepository, now_us: int) -> int:
    """The automatic return from test of every test whose end time has come (supervision, in its
    transaction, with its repository); how many returned."""
    due = conn.execute(
        select(schema.on_test).where(TEST.ended_us.is_(None), TEST.ends_us <= now_us)
    ).mappings()
    returned = 0
    for row in [dict(r) for r in due]:
        returned += _return(conn, row, now_us, None, None, repo)
    return returned


def _return(
    conn: Connection,
    row: dict[str, Any],
    now_us: int,
    by: str | None,
    opr: str | None,
    repo: SqlRepository | None = None,
) -> int:
    """Return one test (1), unless another transaction did (0): the TSTOF record, then TEST END
    NOT RESTORED for each zone left open. Without ``repo`` (a person's stop) the alarms are
    raised through one of its own and handed out here."""
    ended = conn.execute(
        update(schema.on_test)
        .where(TEST.test_id == row["test_id"], TEST.ended_us.is_(None))
        .values(ended_us=now_us, ended_by=by or None)
    ).rowcount
    if ended != 1:
        return 0
    account = row["account_number"]
    path = RoutePath.OPERATOR if by is not None else RoutePath.SYSTEM
    _record(conn, account, rules.RETURN_TYPE, rules.return_text(by), path, opr, now_us)
    own = repo is None
    if repo is None:
        cache = ProvisioningCache()
        cache.refresh(conn)
        repo = SqlRepository(conn, cache, Inserts(conn.engine))
    data = events.test_data(
        row, ended=events.timestamp(now_us), ended_by=by or None, automatic=by is None
    )
    repo.publish(events.TEST_ENDED, account, data, now_us)  # before the alarms it raises
    signals = [_test_signal(s) for s in _signals(conn, account, row["started_us"], now_us)]
    for zone, area in rules.left_open(signals, lambda code: repo.alarm_type(code).restore_expected):
        zones, _ = repo.descriptions(account, zone)
        text = rules.not_restored_text(zone, response.zone_description(zones, zone, area))
        Router.raise_alarm(repo, TEST_END_NOT_RESTORED, account, text, now_us)
    if own:
        raised = repo.flush()
        if raised:
            handling.hand_out(conn, now_us, arriving=raised)
    _changed(conn)
    return 1


# what is shown ------------------------------------------------------------------------------


def running_tests(conn: Connection, now_us: int) -> list[dict[str, Any]]:
    """The running tests, the soonest to return first: account, name, zones and TYPEs (lists),
    by, reason, the console operator, started and ends (µs) and whole minutes left."""
    rows = conn.execute(
        select(schema.on_test, ACCOUNT.company_name)
        .select_from(
            schema.on_test.outerjoin(schema.account, ACCOUNT.account_number == TEST.account_number)
        )
        .where(TEST.ended_us.is_(None))
        .order_by(TEST.ends_us, TEST.account_number)
    ).mappings()
    return [
        {
            "account_number": r["account_number"],
            "company_name": r["company_name"] or "",
            "zones": list(rules.split(r["zones"])),
            "types": list(rules.split(r["types"])),
            "by": r["by"],
            "reason": r["reason"],
            "opr": r["opr"],
            "started_us": r["started_us"],
            "ends_us": r["ends_us"],
            "minutes_left": rules.minutes_left(r["ends_us"], now_us),
        }
        for r in rows
    ]


def _signals(conn: Connection, account: str, start_us: int, stop_us: int | None) -> list[Any]:
    where = [
        HISTORY.account_number == account,
        HISTORY.pr_checksum == RoutePath.ON_TEST.value,
        HISTORY.received_us >= start_us,
    ]
    if stop_us is not None:
        where.append(HISTORY.received_us <= stop_us)
    return list(
        conn.execute(
            select(
                HISTORY.code,
                HISTORY.area,
                HISTORY.zone,
                HISTORY.received_us,
                HISTORY.type,
                HISTORY.hist_text,
                HISTORY.incident_number,
            )
            .where(*where)
            .order_by(HISTORY.received_us, HISTORY.incident_number)
            .limit(REPORT_MAX)
        )
    )


def _test_signal(row: Any) -> rules.TestSignal:
    return rules.TestSignal(row.code, row.area, row.zone, row.received_us)


def report(conn: Connection, account: str) -> dict[str, Any]:
    """The account's last or current test and its signals, oldest first, each with whether it
    was restored within the test. Refused when the account was never on test."""
    _company(conn, account)
    test = (
        conn.execute(
            select(schema.on_test)
            .where(TEST.account_number == account)
            .order_by(TEST.started_us.desc(), TEST.test_id.desc())
            .limit(1)
        )
        .mappings()
        .first()
    )
    if test is None:
        raise rules.refused(f"account {account} has never been on test", 404)
    rows = _signals(conn, account, test["started_us"], test["ended_us"])
    restored = rules.restored([_test_signal(r) for r in rows])
    signals = [
        {
            "incident_number": r.incident_number,
            "code": r.code,
            "area": r.area,
            "zone": r.zone,
            "type": r.type,
            "hist_text": r.hist_text,
            "received_us": r.received_us,
            "restored": done,
        }
        for r, done in zip(rows, restored, strict=True)
    ]
    shown = {k: test[k] for k in ("by", "reason", "opr", "started_us", "ends_us", "ended_us")}
    shown.update(
        account_number=account,
        zones=list(rules.split(test["zones"])),
        types=list(rules.split(test["types"])),
        ended_by=test["ended_by"],
    )
    return {"test": shown, "signals": signals}
