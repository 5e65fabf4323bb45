"""Reading the station's state: the pending and In Process queues, an account's history and the
stored signals."""

from __future__ import annotations

from pathlib import Path

import click

from alarmhub.cli.output import data_dir_option, emit, json_option, open_store, table, when
from alarmhub.clock import now_us
from alarmhub.core import units
from alarmhub.core.operations import duration, handling_times


def _age(us: int) -> str:
    return duration(now_us() - us)


@click.command()
@click.option("--limit", type=click.IntRange(min=1), help="Show at most this many.")
@data_dir_option
@json_option
def pending(limit: int | None, data_dir: Path | None, as_json: bool) -> None:
    """Show the pending queue: PRIORITY first, then oldest first."""
    from alarmhub.store import queries

    with open_store(data_dir).connect() as conn:
        rows = queries.pending_alarms(conn, limit)
    for row in rows:
        row["age"] = _age(row["pending_us"])
        row["restored"] = "yes" if row["restore_us"] else ""
    columns = [("alarm_id", "INCIDENT"), ("priority", "PRI"), ("type", "TYPE"),
               ("account_number", "ACCOUNT"), ("company_name", "NAME"), ("hist_text", "HIST_TEXT"),
               ("age", "PENDING"), ("restored", "RESTORED")]  # fmt: skip
    emit(as_json, rows, lambda: table(rows, columns, "no pending alarms"))


@click.command("in-process")
@data_dir_option
@json_option
def in_process(data_dir: Path | None, as_json: bool) -> None:
    """Show the In Process queue (alarms operators are handling) and operators' status."""
    from alarmhub.store import queries

    now = now_us()
    with open_store(data_dir).connect() as conn:
        rows = queries.in_process_alarms(conn)
        statuses = queries.operator_statuses(conn)
    for row in rows:
        row.update(handling_times(row["pending_us"], row["taken_us"], row["first_call_us"], now))
    columns = [("alarm_id", "INCIDENT"), ("priority", "PRI"), ("type", "TYPE"),
               ("account_number", "ACCOUNT"), ("opr", "OPR"), ("PEND_TIME", "PENDING"),
               ("OPR_HANDLING", "HANDLING"), ("hist_text", "HIST_TEXT")]  # fmt: skip

    def human() -> None:
        table(rows, columns, "no alarms in process")
        click.echo()
        table(statuses, [("code", "OPR"), ("name", "NAME"), ("status", "STATUS")],
              "no operator signed on")  # fmt: skip

    emit(as_json, {"in_process": rows, "operators": statuses}, human)


@click.command()
@click.argument("account_number", metavar="ACCOUNT")
@click.option("--hours", type=click.FloatRange(min=0, min_open=True), default=24.0,
              show_default=True, help="How far back.")  # fmt: skip
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True)
@data_dir_option
@json_option
def history(
    account_number: str, hours: float, limit: int, data_dir: Path | None, as_json: bool
) -> None:
    """Show an account's history, newest first ('' for the station's own events)."""
    from alarmhub.store import queries

    now = now_us()
    with open_store(data_dir).connect() as conn:
        rows = queries.account_history(
            conn, account_number, now - units.hours_us(hours), now, limit
        )
    for row in rows:
        row["received"] = when(row["received_us"])
    columns = [("received", "RECEIVED"), ("incident_number", "INCIDENT"), ("code", "CODE"),
               ("type", "TYPE"), ("hist_text", "HIST_TEXT"), ("pr_checksum", "PATH"),
               ("alarm_id", "ALARM")]  # fmt: skip
    emit(as_json, rows, lambda: table(rows, columns, "no history in that window"))


@click.group()
def signal() -> None:
    """Stored signals."""


@signal.command("list")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True)
@data_dir_option
@json_option
def signal_list(limit: int, data_dir: Path | None, as_json: bool) -> None:
    """Show the newest stored signals, newest first."""
    from alarmhub.store import queries

    with open_store(data_dir).connect() as conn:
        rows = queries.newest_signals(conn, limit)
    for row in rows:
        row["received"] = when(row["received_us"])
    columns = [
        ("incident_number", "INCIDENT"),
        ("received", "RECEIVED"),
        ("source", "SOURCE"),
        ("destination", "DRIVER"),
        ("dnis", "DNIS"),
        ("panel", "PANEL"),
        ("code", "CODE"),
        ("area", "AREA"),
        ("zone", "ZONE"),
        ("token_name", "TOKEN"),
    ]
    emit(as_json, rows, lambda: table(rows, columns, "no signals"))
