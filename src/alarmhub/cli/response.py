"""Response data commands (decisions section 7): what an account's zones are, who its panel
users are, and the station's police, fire and medical dispatch points. Contacts and their call
lists are in :mod:`alarmhub.cli.contacts`; an account's agencies, permit and duress code are
set with ``account set``."""

from __future__ import annotations

from pathlib import Path

import click

from alarmhub.cli.csv_import import import_command
from alarmhub.cli.output import (
    data_dir_option,
    emit,
    json_option,
    open_store,
    provisioning_errors,
    table,
)
from alarmhub.core import response as rules

EVERY_AREA = "all"
"""How a table shows the area of a zone description that applies in every area."""

# zones ---------------------------------------------------------------------------------------


@click.group("zone")
def zone_group() -> None:
    """Zones of an account's panel: what each is, shown with its alarms."""


zone_group.add_command(import_command("zone"))


@zone_group.command("set")
@click.argument("account_number", metavar="ACCOUNT")
@click.argument("zone")
@click.option("--description", required=True, help="What the zone is, e.g. BACK DOOR.")
@click.option("--area", default="", metavar="AA", help="Only in this area (default: every area).")
@click.option("--equipment", default="", help="The device in the zone, e.g. PIR or contact.")
@data_dir_option
@json_option
@provisioning_errors
def zone_set(
    account_number: str,
    zone: str,
    description: str,
    area: str,
    equipment: str,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Add or change ZONE (000-999) of ACCOUNT. A description set without --area applies to
    the zone in every area; one set for an area wins there."""
    from alarmhub.store import response

    row = response.set_zone(
        open_store(data_dir), rules.Zone(account_number, zone, description, area, equipment)
    )
    shown = {k: row[k] for k in ("zone", "area", "description", "equipment")}
    where = f" area {row['area']}" if row["area"] else ""
    emit(
        as_json,
        shown,
        lambda: click.echo(f"account {account_number} zone {row['zone']}{where} set"),
    )


@zone_group.command("list")
@click.argument("account_number", metavar="ACCOUNT")
@data_dir_option
@json_option
@provisioning_errors
def zone_list(account_number: str, data_dir: Path | None, as_json: bool) -> None:
    """List the zones of ACCOUNT."""
    from alarmhub.store import response

    rows = response.list_zones(open_store(data_dir), account_number)
    shown = [{**r, "area": r["area"] or EVERY_AREA} for r in rows]
    columns = [
        ("zone", "ZONE"),
        ("area", "AREA"),
        ("description", "DESCRIPTION"),
        ("equipment", "EQUIPMENT"),
    ]
    emit(as_json, rows, lambda: table(shown, columns, f"account {account_number} has no zones"))


@zone_group.command("remove")
@click.argument("account_number", metavar="ACCOUNT")
@click.argument("zone")
@click.option(
    "--area", default="", metavar="AA", help="The area's own entry (default: every area)."
)
@data_dir_option
@json_option
@provisioning_errors
def zone_remove(
    account_number: str, zone: str, area: str, data_dir: Path | None, as_json: bool
) -> None:
    """Remove ZONE of ACCOUNT (the entry for every area, or with --area that area's)."""
    from alarmhub.store import response

    response.remove_zone(open_store(data_dir), account_number, zone, area)
    shown = {
        "account_number": account_number,
        "zone": rules.three_digits(zone),
        "area": rules.two_digits(area),
        "removed": True,
    }
    emit(as_json, shown, lambda: click.echo(f"account {account_number} zone {zone} removed"))


# panel users ---------------------------------------------------------------------------------


@click.group("user")
def user_group() -> None:
    """Users of an account's panel: who opened or closed it."""


user_group.add_command(import_command("user"))


@user_group.command("set")
@click.argument("account_number", metavar="ACCOUNT")
@click.argument("user")
@click.option("--name", required=True, help="Who the user is, e.g. JOHN SMITH.")
@data_dir_option
@json_option
@provisioning_errors
def user_set(
    account_number: str, user: str, name: str, data_dir: Path | None, as_json: bool
) -> None:
    """Add or change panel USER (000-999) of ACCOUNT."""
    from alarmhub.store import response

    row = response.set_user(open_store(data_dir), rules.PanelUser(account_number, user, name))
    shown = {"user": row["user_number"], "name": row["name"]}
    emit(
        as_json,
        shown,
        lambda: click.echo(f"account {account_number} user {row['user_number']} set"),
    )


@user_group.command("list")
@click.argument("account_number", metavar="ACCOUNT")
@data_dir_option
@json_option
@provisioning_errors
def user_list(account_number: str, data_dir: Path | None, as_json: bool) -> None:
    """List the panel users of ACCOUNT."""
    from alarmhub.store import response

    rows = response.list_users(open_store(data_dir), account_number)
    columns = [("user", "USER"), ("name", "NAME")]
    emit(as_json, rows, lambda: table(rows, columns, f"account {account_number} has no users"))


@user_group.command("remove")
@click.argument("account_number", metavar="ACCOUNT")
@click.argument("user")
@data_dir_option
@json_option
@provisioning_errors
def user_remove(account_number: str, user: str, data_dir: Path | None, as_json: bool) -> None:
    """Remove panel USER of ACCOUNT."""
    from alarmhub.store import response

    response.remove_user(open_store(data_dir), account_number, user)
    shown = {"account_number": account_number, "user": rules.three_digits(user), "removed": True}
    emit(as_json, shown, lambda: click.echo(f"account {account_number} user {user} removed"))


# agencies ------------------------------------------------------------------------------------


@click.group("agency")
def agency_group() -> None:
    """Police, fire and medical dispatch points, assigned to accounts with 'account set'."""


@agency_group.command("add")
@click.argument("code")
@click.option(
    "--kind",
    required=True,
    type=click.Choice([k.value for k in rules.AgencyKind]),
    help="What it dispatches.",
)
@click.option("--name", required=True, help="Its name, e.g. SPRINGFIELD PD.")
@click.option("--phone", default="", help="The number operators call.")
@data_dir_option
@json_option
@provisioning_errors
def agency_add(
    code: str, kind: str, name: str, phone: str, data_dir: Path | None, as_json: bool
) -> None:
    """Add agency CODE (1-16 letters, digits, '-' or '_'), or change the one with that code."""
    from alarmhub.store import response

    row = response.add_agency(
        open_store(data_dir), rules.Agency(code, rules.AgencyKind(kind), name, phone)
    )
    emit(as_json, row, lambda: click.echo(f"{kind} agency {code} set"))


@agency_group.command("list")
@data_dir_option
@json_option
def agency_list(data_dir: Path | None, as_json: bool) -> None:
    """List the agencies."""
    from alarmhub.store import response

    rows = response.list_agencies(open_store(data_dir))
    columns = [("code", "CODE"), ("kind", "KIND"), ("name", "NAME"), ("phone", "PHONE")]
    emit(as_json, rows, lambda: table(rows, columns, "no agencies"))
