"""On test from the command line (decisions §9): put an account on test for some minutes, end
the test early, list the accounts on test and report the signals of an account's test. The same
store functions as the console's on-test panel; times print as ISO 8601 in UTC."""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
)
from alarmhub.clock import now_us
from alarmhub.core import on_test as rules
from alarmhub.core.errors import ActionRefused
from alarmhub.core.units import iso_utc

if TYPE_CHECKING:
    from sqlalchemy import Connection

T = TypeVar("T")
LIST_COLUMNS = [("account_number", "ACCOUNT"), ("company_name", "NAME"), ("zones", "ZONES"),
                ("types", "TYPES"), ("by", "BY"), ("ends", "RETURNS"),
                ("minutes_left", "MIN LEFT"), ("reason", "REASON")]  # fmt: skip
REPORT_COLUMNS = [("received", "RECEIVED"), ("incident_number", "INCIDENT"), ("code", "CODE"),
                  ("zone", "ZONE"), ("area", "AREA"), ("hist_text", "HIST_TEXT"),
                  ("restored", "RESTORED")]  # fmt: skip


def _write(data_dir: Path | None, work: Callable[[Connection], T]) -> T:
    from functools import partial

    from alarmhub.store import operations

    return operations.run(open_store(data_dir), partial(operations.on_queues, work))


def _checked(check: Callable[[Any], T], value: Any, option: str) -> T:
    """A value the on-test rules accept, else a usage error (exit 2) naming the option."""
    try:
        return check(value)
    except ActionRefused as exc:
        raise click.BadParameter(exc.message, param_hint=option) from None


def _show_tests(tests: Sequence[dict[str, Any]]) -> None:
    table(list(tests), LIST_COLUMNS, "no account is on test")


@click.group("test")
def test_group() -> None:
    """On test: an account's matching signals go to history only while a technician works."""


@test_group.command("start")
@click.argument("account")
@click.option("--minutes", required=True, type=click.IntRange(1, rules.MINUTES_MAX),
              help=f"How long the test lasts, 1-{rules.MINUTES_MAX} minutes (up to a week); the "
              "account returns from test by itself at the end.")  # fmt: skip
@click.option("--zone", "zones", multiple=True, metavar="ZONE",
              help="Only this zone is on test, 000-999 (repeatable; none: every "
              "zone).")  # fmt: skip
@click.option("--type", "types", multiple=True, metavar="TYPE",
              help="Only alarms of this TYPE are on test, e.g. BURG, one the station's alarm "
              "types give (see 'alarmtype list'; repeatable; none: every TYPE).")  # fmt: skip
@click.option("--by", required=True, metavar="WHO",
              help="Who asked for the test (e.g. the technician), "
              f"1-{rules.BY_MAX} characters.")  # fmt: skip
@click.option("--reason", default="", help=f"Why, at most {rules.REASON_MAX} characters.")
@data_dir_option
@json_option
@provisioning_errors
def test_start(
    account: str,
    minutes: int,
    zones: tuple[str, ...],
    types: tuple[str, ...],
    by: str,
    reason: str,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Put ACCOUNT on test (an account already on test gets the new end, zones and TYPEs)."""
    from alarmhub.store import on_test

    zone_list = _checked(rules.check_zones, zones, "--zone")
    type_list = _checked(rules.check_types, types, "--type")
    who = _checked(rules.check_by, by, "--by")
    why = _checked(rules.check_reason, reason, "--reason")
    test = _write(
        data_dir,
        lambda c: on_test.start(c, account, minutes, who, now_us(), zone_list, type_list, why),
    )
    shown = rules.test_view(test)
    emit(as_json, shown, lambda: click.echo(f"{account} on test until {shown['ends']}"))


@test_group.command("stop")
@click.argument("account")
@click.option("--by", default="", metavar="WHO",
              help="Who ended the test, for the history record (optional).")  # fmt: skip
@data_dir_option
@json_option
@provisioning_errors
def test_stop(account: str, by: str, data_dir: Path | None, as_json: bool) -> None:
    """End ACCOUNT's test now: a return from test like the automatic one (a zone left open
    raises TEST END NOT RESTORED). Prints the test's report."""
    from alarmhub.store import on_test

    who = _checked(rules.check_by, by, "--by") if by.strip() else ""
    found = _write(data_dir, lambda c: on_test.stop(c, account, who, now_us()))
    signals = [rules.signal_view(s) for s in found["signals"]]

    def human() -> None:
        click.echo(f"{account} returned from test")
        table(signals, REPORT_COLUMNS, "no signal during the test")

    emit(as_json, signals, human)


@test_group.command("list")
@data_dir_option
@json_option
def test_list(data_dir: Path | None, as_json: bool) -> None:
    """List the accounts on test and when each returns, the soonest first."""
    from alarmhub.store import on_test

    with open_store(data_dir).connect() as conn:
        tests = [rules.test_view(t) for t in on_test.running_tests(conn, now_us())]
    emit(as_json, tests, lambda: _show_tests(tests))


@test_group.command("report")
@click.argument("account")
@data_dir_option
@json_option
@provisioning_errors
def test_report(account: str, data_dir: Path | None, as_json: bool) -> None:
    """The signals of ACCOUNT's last or current test, oldest first, each with whether it was
    restored during the test."""
    from alarmhub.store import on_test

    with open_store(data_dir).connect() as conn:
        found = on_test.report(conn, account)
    signals = [rules.signal_view(s) for s in found["signals"]]

    def human() -> None:
        test = found["test"]
        returned = iso_utc(test["ended_us"]) if test["ended_us"] else "still on test"
        click.echo(f"{account} on test {iso_utc(test['started_us'])} by {test['by']}: {returned}")
        table(signals, REPORT_COLUMNS, "no signal during the test")

    emit(as_json, signals, human)
