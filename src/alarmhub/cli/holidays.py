"""``alarmhub holiday``: the days premises stay closed, for open/close schedules: the station's
(every account) or one account's own. On a holiday an account has no window, so an opening is
unscheduled and nothing is late."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import click

from alarmhub.cli.output import (
    data_dir_option,
    emit,
    json_option,
    open_store,
    provisioning_errors,
    table,
)
from alarmhub.cli.schedule_options import parsed, write
from alarmhub.clock import now_us
from alarmhub.core import schedules as rules

COLUMNS = [("date", "DATE"), ("account_number", "ACCOUNT"), ("name", "NAME")]


@click.group("holiday")
def holiday_group() -> None:
    """Holidays of the open/close schedules: the station's, or an account's own closed days."""


@holiday_group.command("add")
@click.argument("day", metavar="DATE", callback=parsed(rules.parse_date))
@click.option(
    "--account",
    default="",
    metavar="ACCOUNT",
    help="The account's own closed day (default: the whole station's holiday).",
)
@click.option("--name", default="", help="What the holiday is (e.g. Christmas Day).")
@data_dir_option
@json_option
@provisioning_errors
def holiday_add(day: date, account: str, name: str, data_dir: Path | None, as_json: bool) -> None:
    """Add a holiday on DATE (YYYY-MM-DD); an existing one takes the new name."""
    from alarmhub.store import schedule_data

    write(data_dir, lambda c: schedule_data.add_holiday(c, day, account, name.strip(), now_us()))
    answer = {"date": day.isoformat(), "account_number": account, "name": name.strip()}
    whose = f"account {account}" if account else "the station"
    emit(as_json, answer, lambda: click.echo(f"holiday {day} added for {whose}"))


@holiday_group.command("list")
@click.option(
    "--account",
    default="",
    metavar="ACCOUNT",
    help="Only the station's holidays and this account's own.",
)
@data_dir_option
@json_option
def holiday_list(account: str, data_dir: Path | None, as_json: bool) -> None:
    """List the holidays, oldest first (account '' : the station's)."""
    from alarmhub.store import schedule_data

    with open_store(data_dir).connect() as conn:
        rows = schedule_data.list_holidays(conn, account)
    emit(as_json, rows, lambda: table(rows, COLUMNS, "no holidays"))


@holiday_group.command("remove")
@click.argument("day", metavar="DATE", callback=parsed(rules.parse_date))
@click.option(
    "--account",
    default="",
    metavar="ACCOUNT",
    help="The account's own closed day (default: the station's holiday).",
)
@data_dir_option
@json_option
@provisioning_errors
def holiday_remove(day: date, account: str, data_dir: Path | None, as_json: bool) -> None:
    """Remove the holiday on DATE (the station's, or --account's own)."""
    from alarmhub.store import schedule_data

    write(data_dir, lambda c: schedule_data.remove_holiday(c, day, account, now_us()))
    answer = {"date": day.isoformat(), "account_number": account, "removed": True}
    emit(as_json, answer, lambda: click.echo(f"holiday {day} removed"))
