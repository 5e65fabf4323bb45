"""``alarmhub schedule``: an account's open/close schedule (decisions section 9): weekly windows
added to days, temporary schedules for a date range, its grace, time zone and checks; showing
and removing it; an operator's manual open and close; the schedule import (CSV)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from alarmhub.cli.output import (
    data_dir_option,
    emit,
    json_option,
    load_settings,
    open_store,
    provisioning_errors,
    table,
)
from alarmhub.clock import now_us
from alarmhub.core import schedules as rules

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from alarmhub.store.schedule_data import Change

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])
IMPORT_COLUMNS = "account_number,area,days,open,close,grace,timezone"


# options: each checked where it is read, a bad one a usage error (exit 2) --------------------


def _parsed(parse: Callable[[str], T]) -> Callable[[click.Context, click.Parameter, Any], Any]:
    def callback(_ctx: click.Context, _param: click.Parameter, value: str | None) -> T | None:
        if value is None:
            return None
        try:
            return parse(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None

    return callback


def check_zone(name: str) -> str:
    """An IANA zone name (``Europe/London``); '' for the station's."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    if not name:
        return ""
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"{name!r} is not an IANA time zone (e.g. America/New_York)") from None
    return name


def check_area(text: str) -> str:
    area = text.strip()
    if area and (len(area) > 2 or not (area.isascii() and area.isalnum())):
        raise ValueError(f"area {text!r}: up to 2 letters or digits")
    return area


def check_grace(text: str) -> int:
    minutes = int(text) if text.strip().isdigit() else -1
    problem = rules.grace_problem(minutes)
    if problem:
        raise ValueError(f"{text!r}: {problem}")
    return minutes


def area_option(func: F) -> F:
    return click.option(
        "--area", default="", callback=_parsed(check_area), metavar="AREA",
        help="One area's schedule (default: the whole account).",
    )(func)  # fmt: skip


def range_options(func: F) -> F:
    func = click.option(
        "--to", "last", callback=_parsed(rules.parse_date), metavar="DATE",
        help="Last date of a temporary schedule (YYYY-MM-DD).",
    )(func)  # fmt: skip
    return click.option(
        "--from", "first", callback=_parsed(rules.parse_date), metavar="DATE",
        help="First date of a temporary schedule (YYYY-MM-DD).",
    )(func)  # fmt: skip


def _station_zone(data_dir: Path | None) -> Any:
    return load_settings(data_dir).zone


def _write(data_dir: Path | None, work: Callable[[Connection], T]) -> T:
    from functools import partial

    from alarmhub.store import operations

    return operations.run(open_store(data_dir), partial(operations.on_queues, work))


def _show(answer: dict[str, Any]) -> None:
    where = f"{answer['account_number']}" + (f" area {answer['area']}" if answer["area"] else "")
    checks = [
        name
        for name, on in (
            ("late to open", answer["late_to_open"]),
            ("late to close", answer["late_to_close"]),
            (f"early close (grace {answer['early_grace_min']} min)", answer["early_close"]),
        )
        if on
    ]
    click.echo(
        f"schedule of {where}: time zone {answer['timezone']}, grace {answer['grace_min']} min, "
        f"checks: {', '.join(checks) or 'none'}"
    )
    table(
        answer["windows"],
        [("day", "DAY"), ("open", "OPEN"), ("close", "CLOSE")],
        "no weekly windows",
    )
    for t in answer["temporary"]:
        hours = "closed" if t["closed"] else f"{t['open']}-{t['close']}"
        click.echo(f"temporary {t['from']} to {t['to']}: {hours}")
    for h in answer["holidays"]:
        whose = "account" if h["account_number"] else "station"
        click.echo(f"holiday {h['date']} ({whose}) {h['name']}")
    today = answer["today"]
    hours = ", ".join(f"{w['open']}-{w['close']}" for w in today["windows"]) or "closed"
    click.echo(f"today {today['date']}: {hours}")
    for key, label in (("last_open", "last opening"), ("last_close", "last closing")):
        event = answer[key]
        if event:
            who = f"operator {event['opr']}" if event["opr"] else f"user {event['user'] or '-'}"
            click.echo(f"{label}: {event['at']} by {who}")
    alarms = answer["alarms"]
    for kind, label in (("lto", "LATE TO OPEN"), ("ltc", "LATE TO CLOSE")):
        if alarms[kind] is not None:
            click.echo(f"open alarm {label}: incident {alarms[kind]}")
    click.echo(f"next check: {answer['next_check'] or 'none due'}")


def _shown(data_dir: Path | None, account: str, area: str) -> dict[str, Any]:
    from alarmhub.store import schedule_data

    zone = _station_zone(data_dir)
    with open_store(data_dir).connect() as conn:
        return schedule_data.show_schedule(conn, account, area, now_us(), zone)


@click.group("schedule")
def schedule_group() -> None:
    """Open/close schedules: when an account opens and closes, and the alarms when it does not
    (LATE TO OPEN, LATE TO CLOSE, UNSCHEDULED OPEN, EARLY CLOSE). See docs/schedules.md."""


@schedule_group.command("set")
@click.argument("account")
@click.option(
    "--day",
    "days",
    callback=_parsed(rules.parse_days),
    metavar="DAYS",
    help="mon..sun, a range (mon-fri, fri-mon) or a comma list (mon,wed,sat-sun).",
)
@click.option(
    "--open",
    "opens",
    callback=_parsed(rules.parse_time),
    metavar="HH:MM",
    help="Opening time, 24-hour, in the account's time zone.",
)
@click.option(
    "--close",
    "closes",
    callback=_parsed(rules.parse_time),
    metavar="HH:MM",
    help="Closing time; at or before the opening: the next day.",
)
@range_options
@click.option("--closed", is_flag=True, help="With --from/--to: closed on those dates.")
@click.option(
    "--grace",
    callback=_parsed(check_grace),
    metavar="MINUTES",
    help="Minutes after the open (close) before late to open (close); default 0.",
)
@click.option(
    "--timezone",
    callback=_parsed(check_zone),
    metavar="ZONE",
    help="IANA time zone of the account (e.g. Europe/London); '' the station's.",
)
@click.option("--late-to-open/--no-late-to-open", default=None, help="Check late to open (on).")
@click.option("--late-to-close/--no-late-to-close", default=None, help="Check late to close (on).")
@click.option("--early-close/--no-early-close", default=None, help="Check early close (off).")
@click.option(
    "--early-grace",
    callback=_parsed(check_grace),
    metavar="MINUTES",
    help="How long before the close a closing is still on time (default 0).",
)
@area_option
@data_dir_option
@json_option
@provisioning_errors
def schedule_set(
    account: str,
    days: list[int] | None,
    opens: int | None,
    closes: int | None,
    first: date | None,
    last: date | None,
    closed: bool,
    grace: int | None,
    timezone: str | None,
    late_to_open: bool | None,
    late_to_close: bool | None,
    early_close: bool | None,
    early_grace: int | None,
    area: str,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Add an open/close window to DAYS (or a temporary schedule to a date range) of ACCOUNT,
    or change its settings; prints the schedule.

    \b
    Examples:
      alarmhub schedule set 700042 --day mon-fri --open 08:00 --close 18:00 --grace 15
      alarmhub schedule set 700042 --day sat --open 22:00 --close 06:00
      alarmhub schedule set 700042 --from 2026-12-24 --to 2026-12-24 --open 08:00 --close 12:00
      alarmhub schedule set 700042 --from 2026-12-27 --to 2026-12-31 --closed
      alarmhub schedule set 700042 --timezone America/New_York --no-late-to-open
    """
    from alarmhub.store import schedule_data

    if (opens is None) != (closes is None):
        raise click.UsageError("--open and --close go together")
    if closed and opens is not None:
        raise click.UsageError("--closed takes no --open/--close")
    if closed and first is None:
        raise click.UsageError("--closed goes with --from and --to")
    window = rules.Window(opens, closes) if opens is not None and closes is not None else None
    change = schedule_data.Change(
        account=account,
        area=area,
        days=days or (),
        window=window,
        first=first,
        last=last,
        settings=schedule_data.Settings(
            grace, timezone, late_to_open, late_to_close, early_close, early_grace
        ),
    )
    problem = change.problem()
    if problem:
        raise click.UsageError(problem)
    zone = _station_zone(data_dir)
    _write(data_dir, lambda c: schedule_data.set_schedule(c, change, now_us(), zone))
    answer = _shown(data_dir, account, area)
    emit(as_json, answer, lambda: _show(answer))


@schedule_group.command("show")
@click.argument("account")
@area_option
@data_dir_option
@json_option
@provisioning_errors
def schedule_show(account: str, area: str, data_dir: Path | None, as_json: bool) -> None:
    """Show ACCOUNT's schedule: windows, temporary schedules, holidays, today's windows (with
    UTC times), the last opening and closing, its open late alarms and next check."""
    answer = _shown(data_dir, account, area)
    emit(as_json, answer, lambda: _show(answer))


@schedule_group.command("remove")
@click.argument("account")
@click.option(
    "--day",
    "days",
    callback=_parsed(rules.parse_days),
    metavar="DAYS",
    help="Clear the windows of these days only.",
)
@range_options
@area_option
@data_dir_option
@json_option
@provisioning_errors
def schedule_remove(
    account: str,
    days: list[int] | None,
    first: date | None,
    last: date | None,
    area: str,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Clear the windows of DAYS, or the temporary schedule --from/--to, of ACCOUNT; with
    neither, remove its whole schedule."""
    from alarmhub.store import schedule_data

    if days and first is not None:
        raise click.UsageError("--day or --from/--to, not both")
    if (first is None) != (last is None):
        raise click.UsageError("--from and --to go together")
    removed = _write(
        data_dir,
        lambda c: schedule_data.remove_schedule(
            c, account, area, days or (), first, last, now_us()
        ),
    )
    answer = {"account_number": account, "area": area, "removed": removed}
    emit(as_json, answer, lambda: click.echo(f"removed {removed} of {account}"))


def _manual(opening: bool) -> click.Command:
    word = "open" if opening else "close"

    @click.command(word, help=f"Record an operator's manual {word} of ACCOUNT (with a schedule).")
    @click.argument("account")
    @click.option("--by", "by", required=True, metavar="OPR", help="The operator (code).")
    @area_option
    @data_dir_option
    @json_option
    @provisioning_errors
    def command(account: str, by: str, area: str, data_dir: Path | None, as_json: bool) -> None:
        from alarmhub.store import schedules

        answer = _write(
            data_dir, lambda c: schedules.manual(c, account, area, opening, by, now_us())
        )
        emit(as_json, answer, lambda: click.echo(f"{account} {word}d by operator {by}"))

    return command


schedule_group.add_command(_manual(True))
schedule_group.add_command(_manual(False))


# the import ----------------------------------------------------------------------------------


def _import_row(fields: Mapping[str, str]) -> Change:
    from alarmhub.store.schedule_data import Change, Settings

    grace = fields.get("grace", "")
    change = Change(
        account=fields["account_number"],
        area=check_area(fields.get("area", "")),
        days=rules.parse_days(fields["days"]),
        window=rules.Window(rules.parse_time(fields["open"]), rules.parse_time(fields["close"])),
        settings=Settings(
            grace_min=check_grace(grace) if grace else None,
            timezone=check_zone(fields["timezone"]) if fields.get("timezone") else None,
        ),
    )
    problem = change.problem()
    if problem:
        raise ValueError(problem)
    return change


@schedule_group.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@data_dir_option
@json_option
@provisioning_errors
def schedule_import(file: Path, data_dir: Path | None, as_json: bool) -> None:
    """Add schedule windows from a CSV FILE.

    \b
    Columns (header row; names in any case; those in [ ] may be left out):
      account_number,[area],days,open,close,[grace],[timezone]

    Each row adds a window to its days as 'schedule set' does (an empty grace or timezone
    leaves the schedule's as it is). Bad rows are reported by line (the header is line 1) and
    skipped; good rows are kept. Exits 1 when any row was refused. Importing a file again adds
    nothing.
    """
    from alarmhub.cli.csv_import import Column, CsvFormat, import_with
    from alarmhub.store import schedule_data

    zone = _station_zone(data_dir)
    fmt = CsvFormat(
        "schedule",
        "schedule windows",
        (
            Column("account_number", True, ("account",)),
            Column("area"),
            Column("days", True, ("day",)),
            Column("open", True),
            Column("close", True),
            Column("grace"),
            Column("timezone"),
        ),
        _import_row,
        lambda engine, lines: schedule_data.import_schedules(engine, lines, now_us(), zone),
    )
    result = import_with(open_store(data_dir), fmt, file)

    def human() -> None:
        for bad in result["refused"]:
            click.echo(f"{file}:{bad['line']}: {bad['error']}", err=True)
        click.echo(
            f"windows added {result['added']}, unchanged or updated {result['updated']}, "
            f"rows refused {len(result['refused'])}"
        )

    emit(as_json, result, human)
    if result["refused"]:
        sys.exit(1)
