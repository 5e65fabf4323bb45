"""``alarmhub schedule import``: schedule windows from a CSV file, a row at a time as ``schedule
set`` adds them, bad rows reported by line and skipped (the CSV reader of ``cli.csv_import``)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import click

from alarmhub.cli.output import data_dir_option, emit, json_option, open_store, provisioning_errors
from alarmhub.cli.schedule_options import check_grace, check_zone, station_zone
from alarmhub.clock import now_us
from alarmhub.core import schedules as rules

if TYPE_CHECKING:
    from alarmhub.store.schedule_data import Change


def _import_row(fields: Mapping[str, str]) -> Change:
    from alarmhub.store.schedule_data import Change, Settings

    grace = fields.get("grace", "")
    change = Change(
        account=fields["account_number"],
        area=rules.parse_area(fields.get("area", "")),
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


@click.command("import")
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

    zone = station_zone(data_dir)
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
