"""``alarmhub schedule``: an account's open/close schedule (decisions section 9): weekly windows
added to days, temporary schedules for a date range, its grace, time zone and checks; showing
and removing it; an operator's manual open and close; the schedule import (CSV,
``cli.schedule_import``)."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import click

from alarmhub.cli.output import (
    data_dir_option,
    emit,
    json_option,
    open_store,
    provisioning_errors,
    table,
)
from alarmhub.cli.schedule_import import schedule_import
from alarmhub.cli.schedule_options import (
    area_option,
    check_grace,
    check_zone,
    parsed,
    range_options,
    station_zone,
    write,
)
from alarmhub.clock import now_us
from alarmhub.core import schedules as rules


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

    zone = station_zone(data_dir)
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
    callback=parsed(rules.parse_days),
    metavar="DAYS",
    help="mon..sun, a range (mon-fri, fri-mon) or a comma list (mon,wed,sat-sun).",
)
@click.option(
    "--open",
    "opens",
    callback=parsed(rules.parse_time),
    metavar="HH:MM",
    help="Opening time, 24-hour, in the account's time zone.",
)
@click.option(
    "--close",
    "closes",
    callback=parsed(rules.parse_time),
    metavar="HH:MM",
    help="Closing time; at or before the opening: the next day.",
)
@range_options
@click.option("--closed", is_flag=True, help="With --from/--to: closed on those dates.")
@click.option(
    "--grace",
    callback=parsed(check_grace),
    metavar="MINUTES",
    help="Minutes after the open (close) before late to open (close); default 0.",
)
@click.option(
    "--timezone",
    callback=parsed(check_zone),
    metavar="ZONE",
    help="IANA time zone of the account (e.g. Europe/London); '' the station's.",
)
@click.option("--late-to-open/--no-late-to-open", default=None, help="Check late to open (on).")
@click.option("--late-to-close/--no-late-to-close", default=None, help="Check late to close (on).")
@click.option("--early-close/--no-early-close", default=None, help="Check early close (off).")
@click.option(
    "--early-grace",
    callback=parsed(check_grace),
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
    zone = station_zone(data_dir)
    write(data_dir, lambda c: schedule_data.set_schedule(c, change, now_us(), zone))
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
    callback=parsed(rules.parse_days),
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
    removed = write(
        data_dir,
        lambda c: schedule_data.remove_schedule(
            c, account, area, days or (), first, last, now_us()
        ),
    )
    answer = {"account_number": account, "area": area, "removed": removed}
    emit(as_json, answer, lambda: click.echo(f"removed {removed} of {account}"))


def _manual(opening: bool) -> click.Command:
    word, done = ("open", "opened") if opening else ("close", "closed")

    @click.command(word, help=f"Record an operator's manual {word} of ACCOUNT (with a schedule).")
    @click.argument("account")
    @click.option("--by", "by", required=True, metavar="OPR", help="The operator (code).")
    @area_option
    @data_dir_option
    @json_option
    @provisioning_errors
    def command(account: str, by: str, area: str, data_dir: Path | None, as_json: bool) -> None:
        from alarmhub.store import schedules

        answer = write(
            data_dir, lambda c: schedules.manual(c, account, area, opening, by, now_us())
        )
        emit(as_json, answer, lambda: click.echo(f"{account} {done} by operator {by}"))

    return command


schedule_group.add_command(_manual(True))
schedule_group.add_command(_manual(False))
schedule_group.add_command(schedule_import)
