"""Storm mode from the command line: switch it on or off for alarm TYPEs, see which TYPEs are in
storm mode and the storm list, and resolve the storm list in one go. The same store functions
as the console's; ``--by`` names the supervisor the audit trail records."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from alarmhub.cli.output import (
    data_dir_option,
    emit,
    json_option,
    open_store,
    provisioning_errors,
    table,
    when,
)
from alarmhub.clock import now_us

if TYPE_CHECKING:
    from sqlalchemy import Connection

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])
LIST_COLUMNS = [("alarm_id", "INCIDENT"), ("type", "TYPE"), ("account_number", "ACCOUNT"),
                ("company_name", "NAME"), ("hist_text", "HIST_TEXT"), ("raised", "RAISED"),
                ("restored", "RESTORED")]  # fmt: skip


def _by_option(func: F) -> F:
    return click.option(
        "--by", "by", default="", metavar="OPR",
        help="The supervisor asking (operator code), for the audit trail.",
    )(func)  # fmt: skip


def _write(data_dir: Path | None, work: Callable[[Connection], T]) -> T:
    from functools import partial

    from alarmhub.store import operations

    return operations.run(open_store(data_dir), partial(operations.on_queues, work))


def _shown(alarms: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for row in alarms:
        row["raised"] = when(row["pending_us"])
        row["restored"] = "yes" if row["restore_us"] else ""
    return alarms


def _show_status(answer: dict[str, Any]) -> None:
    rows = [{**t, "since": when(t["since_us"])} for t in answer["types"]]
    columns = [("type", "TYPE"), ("since", "SINCE"), ("by", "BY"), ("alarms", "STORM LIST")]
    table(rows, columns, "no alarm TYPE in storm mode")
    click.echo(f"{answer['storm_list']} alarms on the storm list")


@click.group("storm")
def storm_group() -> None:
    """Storm mode: new alarms of the TYPEs in storm mode go to the storm list, not pending."""


@storm_group.command("on")
@click.argument("types", nargs=-1, required=True, metavar="TYPE...")
@_by_option
@data_dir_option
@json_option
@provisioning_errors
def storm_on(types: tuple[str, ...], by: str, data_dir: Path | None, as_json: bool) -> None:
    """Switch storm mode on for alarm TYPEs (e.g. ACPWR COMM)."""
    from alarmhub.store import storm

    answer = _write(data_dir, lambda c: storm.switch(c, by, types, True, now_us()))
    emit(as_json, answer, lambda: _show_status(answer))


@storm_group.command("off")
@click.argument("types", nargs=-1, required=True, metavar="TYPE...")
@_by_option
@data_dir_option
@json_option
@provisioning_errors
def storm_off(types: tuple[str, ...], by: str, data_dir: Path | None, as_json: bool) -> None:
    """Switch storm mode off for alarm TYPEs; shows their storm list, for batch resolution."""
    from alarmhub.store import storm

    answer = _write(data_dir, lambda c: storm.switch(c, by, types, False, now_us()))
    _shown(answer["list"]["alarms"])

    def human() -> None:
        _show_status(answer)
        click.echo()
        table(answer["list"]["alarms"], LIST_COLUMNS, "nothing on their storm list")

    emit(as_json, answer, human)


@storm_group.command("status")
@data_dir_option
@json_option
def storm_status(data_dir: Path | None, as_json: bool) -> None:
    """Show the alarm TYPEs in storm mode and how many alarms the storm list holds."""
    from alarmhub.store import storm

    with open_store(data_dir).connect() as conn:
        answer = storm.status(conn)
    emit(as_json, answer, lambda: _show_status(answer))


@storm_group.command("list")
@click.argument("types", nargs=-1, metavar="[TYPE...]")
@data_dir_option
@json_option
def storm_list(types: tuple[str, ...], data_dir: Path | None, as_json: bool) -> None:
    """Show the storm list (of some TYPEs only), PRIORITY first, then oldest."""
    from alarmhub.store import storm

    with open_store(data_dir).connect() as conn:
        answer = storm.storm_list(conn, [t.upper() for t in types])
    _shown(answer["alarms"])

    def human() -> None:
        table(answer["alarms"], LIST_COLUMNS, "the storm list is empty")
        if answer["total"] > len(answer["alarms"]):
            click.echo(f"... {answer['total']} in all")

    emit(as_json, answer, human)


@storm_group.command("resolve")
@click.argument("alarm_ids", nargs=-1, type=click.IntRange(min=1), metavar="[ALARM_ID...]")
@click.option("--all", "everything", is_flag=True, help="Resolve the whole storm list.")
@click.option("--type", "types", multiple=True, metavar="TYPE",
              help="With --all: only alarms of this TYPE (repeatable).")  # fmt: skip
@click.option("--resolution", required=True, metavar="CODE", help="Resolution code, e.g. RSTR.")
@click.option("--note", default="", help="A note recorded with each resolution.")
@_by_option
@data_dir_option
@json_option
@provisioning_errors
def storm_resolve(
    alarm_ids: tuple[int, ...],
    everything: bool,
    types: tuple[str, ...],
    resolution: str,
    note: str,
    by: str,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Resolve alarms of the storm list in one transaction: those named, or --all."""
    from alarmhub.core import storm as rules
    from alarmhub.store import storm

    if types and not everything:
        raise click.UsageError("--type goes with --all")
    chosen = rules.check_batch(alarm_ids, everything)
    resolved = _write(
        data_dir, lambda c: storm.resolve(c, by, chosen, resolution, note, now_us(), types)
    )
    emit(as_json, {"resolved": resolved}, lambda: click.echo(f"{resolved} alarms resolved"))


@storm_group.command("pend")
@click.argument(
    "alarm_ids", nargs=-1, required=True, type=click.IntRange(min=1), metavar="ALARM_ID..."
)
@_by_option
@data_dir_option
@json_option
@provisioning_errors
def storm_pend(alarm_ids: tuple[int, ...], by: str, data_dir: Path | None, as_json: bool) -> None:
    """Send alarms of the storm list to pending after all (one that needs an operator)."""
    from alarmhub.core import storm as rules
    from alarmhub.store import storm

    named = rules.check_batch(alarm_ids, False) or ()
    sent = _write(data_dir, lambda c: storm.pend(c, by, named, now_us()))
    emit(as_json, {"pending": sent}, lambda: click.echo(f"{sent} alarms sent to pending"))
