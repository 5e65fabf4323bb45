"""Open/close supervision in the store: the openings and closings of scheduled accounts
recorded (from routing, or an operator's manual open/close), and the schedule checks the
supervision pass runs, raising and restoring LATE TO OPEN, LATE TO CLOSE, UNSCHEDULED OPEN and
EARLY CLOSE by the rules of ``core.schedules``.

Exactly once on several nodes: each check runs in the supervision transaction, which holds the
incident counter's lock, and moves the schedule's watermark (``checked_us``) in that same
transaction; before raising an alarm for a moment ``d`` it looks for one already in history (the
same account, TYPE and text, received at or after ``d``), so judging a moment again (a schedule
set anew, an event routed late) never doubles an alarm. A node that was down catches up from
the watermark when it comes back (at most a day back).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import date, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import Connection, func, insert, select, update

from alarmhub.core import schedules as rules
from alarmhub.core.alarm_types import LATE_TO_CLOSE, LATE_TO_OPEN, SystemAlarm, cut_text
from alarmhub.core.errors import ProvisioningError
from alarmhub.core.operations import Action, audit_text
from alarmhub.core.router import Repository, RoutePath, Router
from alarmhub.store import schema
from alarmhub.store.commit import allocate_incidents

SCHEDULE = schema.schedule.c
WINDOW = schema.schedule_window.c
HOLIDAY = schema.holiday.c
EVENT = schema.open_close.c
HISTORY = schema.history.c

log = logging.getLogger("alarmhub.schedules")

ALARM_COLUMN = {LATE_TO_OPEN.type: "lto_alarm_id", LATE_TO_CLOSE.type: "ltc_alarm_id"}
"""Where a schedule keeps its late alarm still open, by TYPE."""


def zone_named(name: str | None, station: tzinfo) -> tzinfo:
    """The zone an account's schedule runs in: its own (IANA name), else the station's."""
    if not name:
        return station
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ProvisioningError(f"time zone {name!r} is not an IANA zone name") from None


def holidays_of(conn: Connection, account: str) -> dict[str, tuple[str, str]]:
    """The holidays that close ``account``: its own and the station's, by ISO date, with
    (whose: '' the station's, name)."""
    rows = conn.execute(
        select(HOLIDAY.date, HOLIDAY.account_number, HOLIDAY.name)
        .where(HOLIDAY.account_number.in_(["", account]))
        .order_by(HOLIDAY.date, HOLIDAY.account_number)
    )
    return {d: (whose, name) for d, whose, name in rows}


def load(conn: Connection, row: Mapping[str, Any], station: tzinfo) -> rules.Schedule:
    """The rules' view of a schedule row: its windows, temporary schedules and holidays."""
    account, area = row["account_number"], row["area"]
    weekly: dict[int, list[rules.Window]] = {}
    temporary: list[rules.Temporary] = []
    for day, first, last, opens, closes in conn.execute(
        select(WINDOW.day, WINDOW.from_date, WINDOW.to_date, WINDOW.open_min, WINDOW.close_min)
        .where(WINDOW.account_number == account, WINDOW.area == area)
        .order_by(WINDOW.window_id)
    ):
        window = rules.Window(opens, closes) if opens is not None and closes is not None else None
        if first is not None:
            temporary.append(
                rules.Temporary(date.fromisoformat(first), date.fromisoformat(last), window)
            )
        elif day is not None and window is not None:
            weekly.setdefault(day, []).append(window)
    return rules.Schedule(
        zone=zone_named(row["timezone"], station),
        weekly=weekly,
        temporary=tuple(temporary),
        holidays=frozenset(date.fromisoformat(d) for d in holidays_of(conn, account)),
        grace_min=row["grace_min"],
        early_grace_min=row["early_grace_min"],
        late_to_open=bool(row["late_to_open"]),
        late_to_close=bool(row["late_to_close"]),
        early_close=bool(row["early_close"]),
    )


def scheduled_accounts(conn: Connection) -> frozenset[str]:
    """The accounts with a schedule (of the whole account or of an area)."""
    return frozenset(conn.execute(select(SCHEDULE.account_number).distinct()).scalars())


# openings and closings -----------------------------------------------------------------------


def record(
    conn: Connection,
    account: str,
    area: str,
    user: str,
    opening: bool,
    at_us: int,
    incident_number: int | None = None,
    opr: str | None = None,
) -> None:
    """An opening or closing of a scheduled account: stored, and its schedules judged again
    from just before it at the next supervision pass (within a second)."""
    conn.execute(
        insert(schema.open_close).values(
            account_number=account,
            area=area,
            opening=opening,
            user_number=user,
            opr=opr,
            incident_number=incident_number,
            at_us=at_us,
        )
    )
    # an event routed after the pass that went past its time is still judged (its checks are
    # idempotent: the alarms already raised are found in history)
    conn.execute(
        update(schema.schedule)
        .where(SCHEDULE.account_number == account, SCHEDULE.area.in_(["", area]))
        .values(
            checked_us=_least(conn, SCHEDULE.checked_us, at_us - 1),
            next_check_us=at_us,
        )
    )


def _least(conn: Connection, column: Any, value: int) -> Any:
    """The smaller of a column and a value (SQLite spells it min, PostgreSQL least)."""
    return (func.min if conn.dialect.name == "sqlite" else func.least)(column, value)


def manual(
    conn: Connection, account: str, area: str, opening: bool, opr: str, now_us: int
) -> dict[str, Any]:
    """An operator's manual open or close of ``account`` (of one area): recorded as the panel's
    would be, with an OPERATOR record in history. Refused for an account with no schedule."""
    from alarmhub.store.operators import load_operator

    operator = load_operator(conn, opr)
    found = conn.execute(
        select(func.count()).where(
            SCHEDULE.account_number == account, SCHEDULE.area.in_(["", area])
        )
    ).scalar_one()
    if not found:
        raise ProvisioningError(f"account {account} has no schedule")
    record(conn, account, area, "", opening, now_us, None, operator.code)
    action = Action.MANUAL_OPEN if opening else Action.MANUAL_CLOSE
    detail = f"{account} AREA {area}" if area else account
    conn.execute(
        insert(schema.history).values(
            account_number=account,
            incident_number=allocate_incidents(conn, 1),
            received_us=now_us,
            code="",
            event_code="",
            area=area,
            zone="",
            type=action.value,
            opr=operator.code,
            alarm_category="O",
            priority="z",
            hist_text=audit_text(action, operator.code, detail),
            am_notify="N",
            pr_checksum=RoutePath.OPERATOR.value,
            second_zone_is="N",
            color="",
            video="N",
            alarm_id=None,
            source="",
            destination="",
            dnis="",
            panel="",
            note=None,
        )
    )
    return {"account_number": account, "area": area, "opening": opening, "opr": operator.code}


# the checks ----------------------------------------------------------------------------------


def _events(
    conn: Connection, account: str, area: str, since_us: int, until_us: int
) -> list[rules.OpenClose]:
    """The openings and closings of a schedule from ``since_us`` to ``until_us``, and the last
    one before ``since_us``."""
    where = [EVENT.account_number == account]
    if area:
        where.append(EVENT.area == area)
    columns = (EVENT.at_us, EVENT.opening, EVENT.user_number, EVENT.opr)
    before = conn.execute(
        select(*columns)
        .where(*where, EVENT.at_us < since_us)
        .order_by(EVENT.at_us.desc(), EVENT.event_id.desc())
        .limit(1)
    ).all()
    after = conn.execute(
        select(*columns)
        .where(*where, EVENT.at_us >= since_us, EVENT.at_us <= until_us)
        .order_by(EVENT.at_us, EVENT.event_id)
    ).all()
    return [
        rules.OpenClose(at, bool(opening), user, opr)
        for at, opening, user, opr in [*before, *after]
    ]


def _raised_before(
    conn: Connection, account: str, kind: SystemAlarm, text: str, at_us: int
) -> bool:
    """Whether ``account`` already has the alarm ``kind`` with ``text``, raised at or after
    ``at_us`` (a moment judged again)."""
    found = conn.execute(
        select(HISTORY.event_id)
        .where(
            HISTORY.account_number == account,
            HISTORY.received_us >= at_us,
            HISTORY.type == kind.type,
            HISTORY.pr_checksum == RoutePath.SYSTEM.value,
            HISTORY.hist_text == cut_text(text),
        )
        .limit(1)
    ).first()
    return found is not None


def check(conn: Connection, repo: Repository, now_us: int, station: tzinfo) -> int:
    """Judge every schedule whose next check is due: raise and restore its alarms, move its
    watermark to ``now_us``. How many alarms were raised or restored."""
    rows = conn.execute(
        select(schema.schedule).where(
            SCHEDULE.next_check_us.is_not(None), SCHEDULE.next_check_us <= now_us
        )
    ).mappings()
    changed = 0
    for row in [dict(r) for r in rows]:
        try:
            changed += _check_one(conn, repo, row, now_us, station)
        except ProvisioningError as exc:  # a zone this machine does not know (any more)
            log.error(
                "schedule not checked", extra={"account": row["account_number"], "error": str(exc)}
            )
            _move(conn, row, now_us, None, {})
    return changed


def _check_one(
    conn: Connection, repo: Repository, row: dict[str, Any], now_us: int, station: tzinfo
) -> int:
    account, area = row["account_number"], row["area"]
    schedule = load(conn, row, station)
    after = row["checked_us"]
    skipped = rules.skipped_dues(schedule, after, now_us)
    if skipped:
        log.warning(
            "schedule checks skipped: more than a day old",
            extra={"account": account, "area": area, "skipped": skipped},
        )
    events = _events(conn, account, area, rules.earliest_needed(schedule, after, now_us), now_us)
    open_ids = {kind: row[column] for kind, column in ALARM_COLUMN.items()}
    verdicts = rules.judge(
        schedule,
        area,
        after,
        now_us,
        events,
        lto_open=open_ids[LATE_TO_OPEN.type] is not None,
        ltc_open=open_ids[LATE_TO_CLOSE.type] is not None,
    )
    changed = 0
    for verdict in verdicts:
        kind = verdict.kind
        if verdict.verb is rules.Verb.RESTORE:
            alarm_id = open_ids.get(kind.type)
            if alarm_id is None:
                continue
            text = rules.restore_text(kind, area)
            Router.restore_alarm(repo, kind, alarm_id, account, text, now_us)
            open_ids[kind.type] = None
            changed += 1
            continue
        if _raised_before(conn, account, kind, verdict.text, verdict.at_us):
            continue
        alarm_id = Router.raise_alarm(repo, kind, account, verdict.text, now_us)
        if kind.type in open_ids:
            open_ids[kind.type] = alarm_id
        log.warning(
            "schedule alarm",
            extra={"account": account, "text": verdict.text, "incident_number": alarm_id},
        )
        changed += 1
    _move(conn, row, now_us, rules.next_due(schedule, now_us), open_ids)
    return changed


def _move(
    conn: Connection,
    row: Mapping[str, Any],
    now_us: int,
    next_us: int | None,
    open_ids: Mapping[str, int | None],
) -> None:
    """The schedule judged up to ``now_us``: its watermark, next check and open late alarms."""
    values: dict[str, Any] = {"checked_us": now_us, "next_check_us": next_us}
    for kind, column in ALARM_COLUMN.items():
        if kind in open_ids:
            values[column] = open_ids[kind]
    conn.execute(
        update(schema.schedule)
        .where(
            SCHEDULE.account_number == row["account_number"],
            SCHEDULE.area == row["area"],
        )
        .values(**values)
    )
