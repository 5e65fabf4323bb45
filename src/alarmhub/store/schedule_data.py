"""Open/close schedules as provisioning: set, show and remove an account's schedule (weekly
windows, temporary schedules, its settings), the station's and the accounts' holidays, and the
schedule import. Each change bumps the provisioning revision (routing reloads the scheduled
accounts) and has the schedules it touches judged again at the next supervision pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, date, datetime, tzinfo
from typing import Any, TypeVar

from sqlalchemy import Connection, delete, func, insert, select, update
from sqlalchemy.engine import Engine

from alarmhub.core import schedules as rules
from alarmhub.core import units
from alarmhub.core.errors import ProvisioningError, schedule_refused
from alarmhub.store import provisioning, schema
from alarmhub.store.engine import write_transaction
from alarmhub.store.schedules import (
    EVENT,
    HOLIDAY,
    SCHEDULE,
    WINDOW,
    holidays_of,
    load,
    zone_named,
)

ACCOUNT = schema.account.c
TIMEZONE_NAME_MAX = 64
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Settings:
    """What ``schedule set`` changes besides windows; None: leave as it is (a new schedule
    takes the default)."""

    grace_min: int | None = None
    timezone: str | None = None
    late_to_open: bool | None = None
    late_to_close: bool | None = None
    early_close: bool | None = None
    early_grace_min: int | None = None

    def problem(self) -> str | None:
        for minutes in (self.grace_min, self.early_grace_min):
            if minutes is not None and (problem := rules.grace_problem(minutes)):
                return problem
        return None


@dataclass(frozen=True, slots=True)
class Change:
    """One ``schedule set``: a window added to weekdays, or to a date range (a temporary
    schedule; ``window`` None there: closed on those dates), and settings."""

    account: str
    area: str = ""
    days: Sequence[int] = ()
    window: rules.Window | None = None
    first: date | None = None
    last: date | None = None
    settings: Settings = field(default_factory=Settings)

    def problem(self) -> str | None:
        if (self.first is None) != (self.last is None):
            return "--from and --to go together"
        if self.first is not None and self.last is not None:
            if self.first > self.last:
                return f"--from {self.first} is after --to {self.last}"
            if self.days:
                return "a temporary schedule (--from/--to) takes no --day"
        elif self.days and self.window is None:
            return "--day needs --open and --close"
        elif self.window is not None and not self.days:
            return "--open and --close need --day (or --from and --to)"
        return self.settings.problem()


# a change from the console's or the API's JSON fields -----------------------------------------

SET_FIELDS: dict[str, type] = {
    "days": str, "open": str, "close": str, "from": str, "to": str, "closed": bool,
    "grace": int, "timezone": str, "area": str, "late_to_open": bool, "late_to_close": bool,
    "early_close": bool, "early_grace": int,
}  # fmt: skip
"""The JSON members of a ``schedule set`` (its options, each optional) and their types."""


def parsed(parse: Callable[[str], T], text: str) -> T:
    """``text`` read by one of ``core.schedules``' parsers; what they refuse is 422."""
    try:
        return parse(text)
    except ValueError as exc:
        raise schedule_refused(str(exc)) from None


def change_of(account: str, fields: Mapping[str, Any]) -> Change:
    """A ``schedule set`` of JSON fields (:data:`SET_FIELDS`, types checked), checked as the
    command line checks its options; refused (422) as ``ActionRefused``."""
    days = parsed(rules.parse_days, fields["days"]) if "days" in fields else []
    opens = parsed(rules.parse_time, fields["open"]) if "open" in fields else None
    closes = parsed(rules.parse_time, fields["close"]) if "close" in fields else None
    first = parsed(rules.parse_date, fields["from"]) if "from" in fields else None
    last = parsed(rules.parse_date, fields["to"]) if "to" in fields else None
    closed = bool(fields.get("closed", False))
    if (opens is None) != (closes is None):
        raise schedule_refused("open and close go together")
    if closed and opens is not None:
        raise schedule_refused("closed takes no open and close")
    if closed and first is None:
        raise schedule_refused("closed goes with from and to")
    timezone = fields.get("timezone")
    if timezone is not None:
        timezone = timezone.strip()
        if len(timezone) > TIMEZONE_NAME_MAX:
            raise schedule_refused(f"a time zone name is at most {TIMEZONE_NAME_MAX} characters")
    window = rules.Window(opens, closes) if opens is not None and closes is not None else None
    change = Change(
        account=account,
        area=parsed(rules.parse_area, fields.get("area", "")),
        days=days,
        window=window,
        first=first,
        last=last,
        settings=Settings(
            fields.get("grace"),
            timezone,
            fields.get("late_to_open"),
            fields.get("late_to_close"),
            fields.get("early_close"),
            fields.get("early_grace"),
        ),
    )
    problem = change.problem()
    if problem:
        raise schedule_refused(problem.replace("--", ""))
    return change


def _account_known(conn: Connection, account: str) -> None:
    found = conn.execute(select(ACCOUNT.account_number).where(ACCOUNT.account_number == account))
    if found.first() is None:
        raise ProvisioningError(f"no account {account!r}")


def _schedule_row(conn: Connection, account: str, area: str) -> dict[str, Any] | None:
    row = (
        conn.execute(
            select(schema.schedule).where(SCHEDULE.account_number == account, SCHEDULE.area == area)
        )
        .mappings()
        .first()
    )
    return dict(row) if row is not None else None


def _recheck(row: dict[str, Any], zone: tzinfo, now_us: int) -> int:
    """The watermark from which a changed schedule is judged again: no later than the start of
    its local day (a schedule set after its due moment raises the alarm), now at the latest."""
    return min(int(row["checked_us"]), rules.start_of_day_us(now_us, zone))


def set_schedule(conn: Connection, change: Change, now_us: int, station: tzinfo) -> None:
    """Add a window or a temporary schedule and change settings; a new schedule is judged from
    the start of its local day. ProvisioningError says why a change cannot be made."""
    problem = change.problem()
    if problem:
        raise ProvisioningError(problem)
    _account_known(conn, change.account)
    s = change.settings
    if s.timezone is not None and s.timezone:
        zone_named(s.timezone, station)  # an unknown zone is refused before anything changes
    row = _schedule_row(conn, change.account, change.area)
    given = {f.name: getattr(s, f.name) for f in fields(s) if getattr(s, f.name) is not None}
    if "timezone" in given:
        given["timezone"] = given["timezone"] or None
    key = (SCHEDULE.account_number == change.account, SCHEDULE.area == change.area)
    if row is None:
        zone = zone_named(given.get("timezone"), station)
        conn.execute(
            insert(schema.schedule).values(
                account_number=change.account,
                area=change.area,
                checked_us=rules.start_of_day_us(now_us, zone),
                next_check_us=now_us,
                updated_us=now_us,
                **{"grace_min": rules.DEFAULT_GRACE_MIN, **given},
            )
        )
    else:
        zone = zone_named(given.get("timezone", row["timezone"]), station)
        conn.execute(
            update(schema.schedule)
            .where(*key)
            .values(
                checked_us=_recheck(row, zone, now_us),
                next_check_us=now_us,
                updated_us=now_us,
                **given,
            )
        )
    _add_windows(conn, change)
    provisioning.bump_revision(conn)


def _add_windows(conn: Connection, change: Change) -> None:
    where = (WINDOW.account_number == change.account, WINDOW.area == change.area)
    w = change.window
    if change.first is not None and change.last is not None:
        dates = (
            WINDOW.from_date == change.first.isoformat(),
            WINDOW.to_date == change.last.isoformat(),
        )
        if w is None:  # closed on those dates: the range's windows go
            conn.execute(delete(schema.schedule_window).where(*where, *dates))
        else:  # a window on those dates: the range is no longer closed
            conn.execute(
                delete(schema.schedule_window).where(*where, *dates, WINDOW.open_min.is_(None))
            )
        rows: list[dict[str, Any]] = [
            {"from_date": change.first.isoformat(), "to_date": change.last.isoformat()}
        ]
        same = [*where, *dates]
    else:
        if w is None:
            return
        rows = [{"day": day} for day in change.days]
        same = list(where)
    for values in rows:
        times = {"open_min": w.open_min if w else None, "close_min": w.close_min if w else None}
        match = [getattr(WINDOW, k) == v for k, v in values.items()]
        match += [
            getattr(WINDOW, k).is_(None) if v is None else getattr(WINDOW, k) == v
            for k, v in times.items()
        ]
        exists = conn.execute(select(WINDOW.window_id).where(*same, *match)).first()
        if exists is None:  # an identical window is not added twice
            conn.execute(
                insert(schema.schedule_window).values(
                    account_number=change.account, area=change.area, **values, **times
                )
            )


def remove_schedule(
    conn: Connection,
    account: str,
    area: str,
    days: Sequence[int],
    first: date | None,
    last: date | None,
    now_us: int,
) -> str:
    """Clear the windows of ``days``, or the temporary schedule ``first``..``last``, or (neither
    given) the whole schedule. What was removed, in words."""
    if _schedule_row(conn, account, area) is None:
        raise ProvisioningError(
            f"account {account} has no schedule" + (f" for area {area}" if area else "")
        )
    where = [WINDOW.account_number == account, WINDOW.area == area]
    if (first is None) != (last is None):
        raise ProvisioningError("--from and --to go together")
    if first is not None and last is not None:
        gone = conn.execute(
            delete(schema.schedule_window).where(
                *where, WINDOW.from_date == first.isoformat(), WINDOW.to_date == last.isoformat()
            )
        ).rowcount
        if not gone:
            raise ProvisioningError(f"no temporary schedule from {first} to {last}")
        what = f"the temporary schedule {first} to {last}"
    elif days:
        conn.execute(delete(schema.schedule_window).where(*where, WINDOW.day.in_(list(days))))
        what = "the windows of " + ",".join(rules.DAYS[d] for d in days)
    else:
        conn.execute(delete(schema.schedule_window).where(*where))
        conn.execute(
            delete(schema.schedule).where(SCHEDULE.account_number == account, SCHEDULE.area == area)
        )
        provisioning.bump_revision(conn)
        return "the schedule"
    conn.execute(
        update(schema.schedule)
        .where(SCHEDULE.account_number == account, SCHEDULE.area == area)
        .values(next_check_us=now_us, updated_us=now_us)
    )
    provisioning.bump_revision(conn)
    return what


# showing -------------------------------------------------------------------------------------


def iso(us: int | None) -> str | None:
    """A moment as ISO 8601 UTC, to the second."""
    if us is None:
        return None
    moment = datetime.fromtimestamp(units.to_seconds(us), UTC).replace(microsecond=0)
    return moment.isoformat().replace("+00:00", "Z")


def _last(conn: Connection, account: str, area: str, opening: bool) -> dict[str, Any] | None:
    where = [EVENT.account_number == account, EVENT.opening == opening]
    if area:
        where.append(EVENT.area == area)
    row = conn.execute(
        select(EVENT.at_us, EVENT.user_number, EVENT.opr)
        .where(*where)
        .order_by(EVENT.at_us.desc(), EVENT.event_id.desc())
        .limit(1)
    ).first()
    if row is None:
        return None
    return {"at": iso(row[0]), "user": row[1], "opr": row[2]}


def show_schedule(
    conn: Connection, account: str, area: str, now_us: int, station: tzinfo
) -> dict[str, Any]:
    """An account's schedule as ``schedule show --json`` prints it."""
    row = _schedule_row(conn, account, area)
    if row is None:
        _account_known(conn, account)
        raise ProvisioningError(
            f"account {account} has no schedule" + (f" for area {area}" if area else "")
        )
    schedule = load(conn, row, station)
    windows = [
        {"day": rules.DAYS[day], "open": rules.hhmm(w.open_min), "close": rules.hhmm(w.close_min)}
        for day in sorted(schedule.weekly)
        for w in sorted(set(schedule.weekly[day]), key=lambda w: (w.open_min, w.close_min))
    ]
    temporary = [
        {
            "from": t.first.isoformat(),
            "to": t.last.isoformat(),
            "open": rules.hhmm(t.window.open_min) if t.window else None,
            "close": rules.hhmm(t.window.close_min) if t.window else None,
            "closed": t.window is None,
        }
        for t in sorted(schedule.temporary, key=lambda t: (t.first, t.last))
    ]
    today = rules.local_date(now_us, schedule.zone)
    holidays = [
        {"date": d, "account_number": whose, "name": name}
        for d, (whose, name) in holidays_of(conn, account).items()
        if d >= today.isoformat()
    ]
    return {
        "account_number": account,
        "area": area,
        "timezone": str(schedule.zone),
        "grace_min": schedule.grace_min,
        "early_grace_min": schedule.early_grace_min,
        "late_to_open": schedule.late_to_open,
        "late_to_close": schedule.late_to_close,
        "early_close": schedule.early_close,
        "windows": windows,
        "temporary": temporary,
        "holidays": holidays,
        "today": {
            "date": today.isoformat(),
            "windows": [
                {
                    "open": rules.hhmm(w.window.open_min),
                    "close": rules.hhmm(w.window.close_min),
                    "open_utc": iso(w.open_us),
                    "close_utc": iso(w.close_us),
                }
                for w in rules.day_windows(schedule, today)
            ],
        },
        "last_open": _last(conn, account, area, True),
        "last_close": _last(conn, account, area, False),
        "alarms": {"lto": row["lto_alarm_id"], "ltc": row["ltc_alarm_id"]},
        "checked": iso(row["checked_us"]),
        "next_check": iso(row["next_check_us"]),
    }


# holidays ------------------------------------------------------------------------------------


def _recheck_all(conn: Connection, account: str, now_us: int) -> None:
    """Holidays changed: the schedules they touch (``''``: all) find their next check anew."""
    query = update(schema.schedule).values(next_check_us=now_us)
    if account:
        query = query.where(SCHEDULE.account_number == account)
    conn.execute(query)


def add_holiday(conn: Connection, day: date, account: str, name: str, now_us: int) -> None:
    problem = rules.holiday_name_problem(name)
    if problem:
        raise ProvisioningError(problem)
    if account:
        _account_known(conn, account)
    exists = conn.execute(
        select(HOLIDAY.date).where(
            HOLIDAY.date == day.isoformat(), HOLIDAY.account_number == account
        )
    ).first()
    if exists is not None:
        conn.execute(
            update(schema.holiday)
            .where(HOLIDAY.date == day.isoformat(), HOLIDAY.account_number == account)
            .values(name=name)
        )
    else:
        conn.execute(
            insert(schema.holiday).values(date=day.isoformat(), account_number=account, name=name)
        )
    _recheck_all(conn, account, now_us)


def list_holidays(conn: Connection, account: str = "") -> list[dict[str, Any]]:
    """The holidays, oldest first: all of them, or those of ``account`` and the station's."""
    query = select(HOLIDAY.date, HOLIDAY.account_number, HOLIDAY.name).order_by(
        HOLIDAY.date, HOLIDAY.account_number
    )
    if account:
        query = query.where(HOLIDAY.account_number.in_(["", account]))
    return [{"date": d, "account_number": a, "name": n} for d, a, n in conn.execute(query)]


def remove_holiday(conn: Connection, day: date, account: str, now_us: int) -> None:
    gone = conn.execute(
        delete(schema.holiday).where(
            HOLIDAY.date == day.isoformat(), HOLIDAY.account_number == account
        )
    ).rowcount
    if not gone:
        whose = f" of account {account}" if account else " of the station"
        raise ProvisioningError(f"no holiday on {day}{whose}")
    _recheck_all(conn, account, now_us)


# import --------------------------------------------------------------------------------------


def import_schedules(
    engine: Engine, lines: Sequence[tuple[int, Change]], now_us: int, station: tzinfo
) -> tuple[int, int, list[dict[str, Any]]]:
    """Schedule rows of an import file (checked, with their line numbers), in one transaction:
    a row that cannot be set (an unknown account) is refused by line, the others are kept.
    Rows added (a window new to its days), rows that changed an existing one, rows refused."""
    added = updated = 0
    refused: list[dict[str, Any]] = []
    with write_transaction(engine) as conn:
        for line, change in lines:
            before = _windows_count(conn, change.account, change.area)
            try:  # refused before it writes anything (the account, the zone)
                set_schedule(conn, change, now_us, station)
            except ProvisioningError as exc:
                refused.append({"line": line, "error": str(exc)})
                continue
            if _windows_count(conn, change.account, change.area) > before:
                added += 1
            else:
                updated += 1
    return added, updated, refused


def _windows_count(conn: Connection, account: str, area: str) -> int:
    return int(
        conn.execute(
            select(func.count()).where(WINDOW.account_number == account, WINDOW.area == area)
        ).scalar_one()
    )
