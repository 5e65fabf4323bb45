"""Reports from the command line: ``alarmhub report handling --from DATE --to DATE``, as a table,
JSON or CSV. Dates are days in the station's time zone (the ``timezone`` setting), both
included."""

from __future__ import annotations

import csv
import sys
from pathlib import Path
from typing import Any

import click

from alarmhub.cli.output import CommandError, data_dir_option, load_settings, open_store, table
from alarmhub.core.operations import duration

CSV_COLUMNS = (
    "section", "name", "detail", "count", "take_median_s", "take_p90_s", "resolve_median_s",
    "resolve_p90_s",
)  # fmt: skip
"""One CSV of every table: ``section`` says which (type, operator, dispatch, false_alarm)."""


@click.group("report")
def report_group() -> None:
    """Reports of the station's work."""


@report_group.command("handling")
@click.option("--from", "first", required=True, metavar="DATE", help="First day, YYYY-MM-DD.")
@click.option("--to", "last", required=True, metavar="DATE", help="Last day (included).")
@click.option("--top", type=click.IntRange(min=1, max=1000), default=20, show_default=True,
              help="Accounts listed by false alarms.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV (one row per table line).")
@data_dir_option
def handling(
    first: str, last: str, top: int, as_json: bool, as_csv: bool, data_dir: Path | None
) -> None:
    """Alarms handled per TYPE and per operator (median and p90 time to take and to resolve),
    dispatches by agency and AVS level, false alarms by account."""
    import json

    from alarmhub.core import reports
    from alarmhub.core.errors import BadInput
    from alarmhub.store import reports as store_reports

    if as_json and as_csv:
        raise click.UsageError("--json or --csv, not both")
    settings = load_settings(data_dir)
    try:
        start_us, stop_us = reports.day_window(first, last, settings.zone)
    except BadInput as exc:
        raise CommandError(exc.message) from None
    with open_store(data_dir).connect() as conn:
        report = store_reports.handling(conn, start_us, stop_us, top)
    report = {"from": first, "to": last, **report}
    if as_json:
        click.echo(json.dumps(report, indent=2))
    elif as_csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        writer.writerows([reports.csv_cell(c) for c in row] for row in csv_rows(report))
    else:
        _human(report)


def _times(line: dict[str, Any]) -> list[Any]:
    return [line["take"]["median_s"], line["take"]["p90_s"],
            line["resolve"]["median_s"], line["resolve"]["p90_s"]]  # fmt: skip


def csv_rows(report: dict[str, Any]) -> list[list[Any]]:
    """The report's tables as CSV rows of ``CSV_COLUMNS`` (empty where a column does not
    apply)."""
    rows: list[list[Any]] = []
    rows += [["type", t["type"], "", t["handled"], *_times(t)] for t in report["by_type"]]
    rows += [
        ["operator", o["opr"], o["name"], o["handled"], *_times(o)] for o in report["by_operator"]
    ]
    rows += [
        ["dispatch", d["agency"], f"AVS {d['avs']}", d["count"], "", "", "", ""]
        for d in report["dispatches"]
    ]
    rows += [
        ["false_alarm", f["account_number"], f["company_name"], f["count"], "", "", "", ""]
        for f in report["false_alarms"]
    ]
    return [["" if cell is None else cell for cell in row] for row in rows]


def _clock(seconds: float | None) -> str:
    return "-" if seconds is None else duration(round(seconds * 1_000_000))


def _human(report: dict[str, Any]) -> None:
    def lines(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            {**e, **{f"{kind}_{p}": _clock(e[kind][f"{p}_s"]) for kind in ("take", "resolve")
                     for p in ("median", "p90")}}
            for e in entries
        ]  # fmt: skip

    times = [("handled", "HANDLED"), ("take_median", "TAKE MEDIAN"), ("take_p90", "TAKE P90"),
             ("resolve_median", "RESOLVE MEDIAN"), ("resolve_p90", "RESOLVE P90")]  # fmt: skip
    click.echo(f"Handling report {report['from']} to {report['to']}: "
               f"{report['handled']} alarms resolved")  # fmt: skip
    click.echo()
    table(lines(report["by_type"]), [("type", "TYPE"), *times], "no alarm resolved")
    click.echo()
    table(lines(report["by_operator"]), [("opr", "OPR"), ("name", "NAME"), *times],
          "no alarm resolved")  # fmt: skip
    click.echo()
    table(report["dispatches"], [("agency", "AGENCY"), ("avs", "AVS"), ("count", "DISPATCHES")],
          "no dispatch")  # fmt: skip
    click.echo()
    table(report["false_alarms"], [("account_number", "ACCOUNT"), ("company_name", "NAME"),
                                   ("count", "FALSE ALARMS")], "no false alarm")  # fmt: skip
