"""Provisioning commands: receiver drivers, bearer tokens, receiver lines (dnis), subscriber
accounts and the query interface's API users."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from alarmhub.cli.csv_import import account_import
from alarmhub.cli.output import (
    CommandError,
    data_dir_option,
    emit,
    json_option,
    open_store,
    provisioning_errors,
    secret_option,
    station_key,
    table,
    when,
)
from alarmhub.core.account import Account

# drivers -------------------------------------------------------------------------------------


@click.group()
def driver() -> None:
    """Receiver drivers that signals are queued to."""


@driver.command("add")
@click.argument("name")
@data_dir_option
@json_option
@provisioning_errors
def driver_add(name: str, data_dir: Path | None, as_json: bool) -> None:
    """Add a receiver driver NAME."""
    from alarmhub.store import provisioning

    row = provisioning.add_driver(open_store(data_dir), name)
    emit(as_json, {"name": row["name"]}, lambda: click.echo(f"driver {name} added"))


@driver.command("list")
@data_dir_option
@json_option
def driver_list(data_dir: Path | None, as_json: bool) -> None:
    """List receiver drivers."""
    from alarmhub.store import provisioning

    rows = provisioning.list_drivers(open_store(data_dir))
    shown = [{"name": r["name"], "created": when(r["created_us"])} for r in rows]
    emit(
        as_json,
        shown,
        lambda: table(shown, [("name", "DRIVER"), ("created", "CREATED")], "no drivers"),
    )


# tokens --------------------------------------------------------------------------------------


@click.group()
def token() -> None:
    """Bearer tokens of the signaling interface."""


@token.command("create")
@click.option("--name", required=True, help="A name for the token (shown in logs and lists).")
@click.option("--driver", "drivers", multiple=True, help="A driver it may queue signals to.")
@click.option(
    "--heartbeat", "pairs", multiple=True, metavar="SOURCE:DESTINATION", help="A pair it may beat."
)
@data_dir_option
@json_option
@provisioning_errors
def token_create(
    name: str,
    drivers: tuple[str, ...],
    pairs: tuple[str, ...],
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Create a token; it is printed once and stored only as a hash."""
    from alarmhub.store import provisioning

    secret = provisioning.create_token(open_store(data_dir), name, drivers, pairs)
    emit(
        as_json,
        {"name": name, "token": secret},
        lambda: click.echo(f"token {name} created; keep it now, it is not shown again:\n{secret}"),
    )


@token.command("list")
@data_dir_option
@json_option
def token_list(data_dir: Path | None, as_json: bool) -> None:
    """List tokens and what they grant (never the tokens themselves)."""
    from alarmhub.store import provisioning

    rows = provisioning.list_tokens(open_store(data_dir))
    shown = [
        {
            "name": r["name"],
            "drivers": r["drivers"],
            "heartbeat": r["heartbeat"],
            "created": when(r["created_us"]),
            "revoked": when(r["revoked_us"]),
        }
        for r in rows
    ]
    columns = [
        ("name", "TOKEN"),
        ("drivers", "DRIVERS"),
        ("heartbeat", "HEARTBEAT"),
        ("created", "CREATED"),
        ("revoked", "REVOKED"),
    ]
    emit(as_json, shown, lambda: table(shown, columns, "no tokens"))


@token.command("revoke")
@click.argument("name")
@data_dir_option
@json_option
@provisioning_errors
def token_revoke(name: str, data_dir: Path | None, as_json: bool) -> None:
    """Revoke token NAME (running servers refuse it within a second)."""
    from alarmhub.store import provisioning

    provisioning.revoke_token(open_store(data_dir), name)
    emit(as_json, {"name": name, "revoked": True}, lambda: click.echo(f"token {name} revoked"))


# dnis ----------------------------------------------------------------------------------------


@click.group("dnis")
def dnis_group() -> None:
    """Receiver lines (dnis) and their line masks."""


@dnis_group.command("add")
@click.argument("dnis")
@click.option("--mask", required=True, help="Line mask: '#' = panel digit (70####), else a prefix.")
@data_dir_option
@json_option
@provisioning_errors
def dnis_add(dnis: str, mask: str, data_dir: Path | None, as_json: bool) -> None:
    """Add receiver line DNIS with its line mask."""
    from alarmhub.store import provisioning

    provisioning.add_dnis(open_store(data_dir), dnis, mask)
    emit(
        as_json,
        {"dnis": dnis, "mask": mask},
        lambda: click.echo(f"dnis {dnis} added with mask {mask}"),
    )


@dnis_group.command("list")
@data_dir_option
@json_option
def dnis_list(data_dir: Path | None, as_json: bool) -> None:
    """List receiver lines."""
    from alarmhub.store import provisioning

    rows = [
        {"dnis": r["dnis"], "mask": r["line_mask"]}
        for r in provisioning.list_dnis(open_store(data_dir))
    ]
    emit(as_json, rows, lambda: table(rows, [("dnis", "DNIS"), ("mask", "MASK")], "no dnis"))


# accounts ------------------------------------------------------------------------------------


@click.group()
def account() -> None:
    """Subscriber accounts."""


account.add_command(account_import)


@account.command("add")
@click.argument("account_number", metavar="ACCOUNT")
@click.option("--name", required=True, help="Company or person responsible for the account.")
@click.option("--street", default="", help="Street address.")
@click.option("--city", default="", help="City.")
@click.option("--state", default="", help="State.")
@click.option(
    "--test-interval",
    type=click.FloatRange(min=0, min_open=True),
    metavar="HOURS",
    help="Expect a periodic test report (E602) this often; FAIL TO TEST when it is late.",
)
@data_dir_option
@json_option
@provisioning_errors
def account_add(
    account_number: str,
    name: str,
    street: str,
    city: str,
    state: str,
    test_interval: float | None,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Add subscriber ACCOUNT."""
    from alarmhub.store import provisioning

    engine = open_store(data_dir)
    row = provisioning.add_account(engine, Account(account_number, name, street, city, state))
    if test_interval is not None:
        provisioning.set_test_interval(engine, account_number, round(test_interval * 3600))
        row["test_interval_hours"] = test_interval
    emit(as_json, row, lambda: click.echo(f"account {account_number} added"))


@account.command("test-interval")
@click.argument("account_number", metavar="ACCOUNT")
@click.argument("hours", metavar="HOURS|off")
@data_dir_option
@json_option
@provisioning_errors
def account_test_interval(
    account_number: str, hours: str, data_dir: Path | None, as_json: bool
) -> None:
    """Expect a test report (E602) from ACCOUNT every HOURS (the clock starts now), or, with
    'off', stop expecting one. A late report raises a FAIL TO TEST alarm."""
    from alarmhub.store import provisioning

    if hours.lower() == "off":
        seconds = None
    else:
        try:
            seconds = round(float(hours) * 3600)
        except ValueError:
            raise CommandError(f"{hours!r} is not a number of hours or 'off'") from None
    provisioning.set_test_interval(open_store(data_dir), account_number, seconds)
    text = "off" if seconds is None else f"every {hours} h"
    emit(
        as_json,
        {"account_number": account_number, "test_interval_s": seconds},
        lambda: click.echo(f"account {account_number}: test report expected {text}"),
    )


@account.command("set")
@click.argument("account_number", metavar="ACCOUNT")
@click.option("--police", metavar="CODE", help="The police agency ('' for none).")
@click.option("--fire", metavar="CODE", help="The fire agency ('' for none).")
@click.option("--medical", metavar="CODE", help="The medical agency ('' for none).")
@click.option("--permit", help="The alarm permit number ('' for none).")
@click.option("--phone", help="The premises' phone number, the first call of a plan ('' for none).")
@secret_option(
    "--duress-code",
    envvar="ALARMHUB_DURESS_CODE",
    what="duress code",
    help="The code a subscriber under threat gives, 3-32 characters; kept only as a hash",
    ask_when_missing=False,
    confirm=True,
)
@click.option("--clear-duress-code", is_flag=True, help="Remove the account's duress code.")
@data_dir_option
@json_option
@provisioning_errors
def account_set(
    account_number: str,
    police: str | None,
    fire: str | None,
    medical: str | None,
    permit: str | None,
    phone: str | None,
    duress_code: str | None,
    clear_duress_code: bool,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Set ACCOUNT's response data: its agencies (codes from 'agency list'), its alarm permit,
    its premises phone and its duress code. What is not named stays as it was."""
    from alarmhub.store import response

    if duress_code is not None and clear_duress_code:
        raise CommandError("give --duress-code or --clear-duress-code, not both")
    shown = response.set_account_response(
        open_store(data_dir),
        account_number,
        {"police": police, "fire": fire, "medical": medical},
        permit,
        response.hash_passcode(duress_code) if duress_code is not None else None,
        clear_duress_code,
        phone,
    )
    emit(as_json, shown, lambda: click.echo(_response_text(account_number, shown)))


def _response_text(account_number: str, shown: dict[str, Any]) -> str:
    """What ``account set`` prints: the account's agencies (code: name, phone), permit,
    premises phone and whether it has a duress code, ``-`` for none."""
    from alarmhub.core.response import AgencyKind

    agencies = {agency["kind"]: agency for agency in shown["agencies"]}
    rows = [
        (
            kind.value,
            f"{found['code']}: " + ", ".join(filter(None, (found["name"], found["phone"])))
            if (found := agencies.get(kind.value))
            else "-",
        )
        for kind in AgencyKind
    ]
    rows += [
        ("permit", shown["permit"] or "-"),
        ("phone", shown["phone"] or "-"),
        ("duress code", "yes" if shown["has_duress_code"] else "no"),
    ]
    return "\n".join([f"account {account_number} set", *(f"  {k:<12} {v}" for k, v in rows)])


@account.command("remove")
@click.argument("account_number", metavar="ACCOUNT")
@data_dir_option
@json_option
@provisioning_errors
def account_remove(account_number: str, data_dir: Path | None, as_json: bool) -> None:
    """Remove ACCOUNT with its zones, users, contacts, call lists, schedules, holidays and
    action plans (its history stays). Refused while it has an open alarm."""
    from alarmhub.store import accounts

    accounts.remove_account(open_store(data_dir), account_number)
    emit(
        as_json,
        {"account_number": account_number, "removed": True},
        lambda: click.echo(f"account {account_number} removed"),
    )


@account.command("list")
@click.option("--limit", type=click.IntRange(min=1), help="Show at most this many.")
@data_dir_option
@json_option
def account_list(limit: int | None, data_dir: Path | None, as_json: bool) -> None:
    """List subscriber accounts."""
    from alarmhub.store import provisioning

    rows = [
        {k: r[k] for k in ("account_number", "company_name", "street", "city", "state")}
        for r in provisioning.list_accounts(open_store(data_dir), limit)
    ]
    columns = [
        ("account_number", "ACCOUNT"),
        ("company_name", "NAME"),
        ("street", "STREET"),
        ("city", "CITY"),
        ("state", "STATE"),
    ]
    emit(as_json, rows, lambda: table(rows, columns, "no accounts"))


# API users of the query interface ------------------------------------------------------------


@click.group()
def apiuser() -> None:
    """Users of the monitoring query interface (XMHIST, XMAPEND, XMAINPRO)."""


@apiuser.command("add")
@click.argument("username")
@secret_option(
    "--password",
    envvar="ALARMHUB_APIUSER_PASSWORD",
    what="password",
    help="The password; default: a random one, printed once",
    ask_when_missing=False,
    confirm=True,
)
@click.option("--hmac-only", is_flag=True, help="Accept only hmac-sha256 digests from this user.")
@data_dir_option
@json_option
@provisioning_errors
def apiuser_add(
    username: str, password: str | None, hmac_only: bool, data_dir: Path | None, as_json: bool
) -> None:
    """Add API user USERNAME; its password is stored encrypted with the station's key."""
    from alarmhub.store import provisioning

    engine = open_store(data_dir)
    secret = provisioning.add_api_user(engine, station_key(data_dir), username, password, hmac_only)
    shown = {"username": username, "password": secret}
    emit(
        as_json,
        shown,
        lambda: click.echo(
            f"API user {username} added"
            + (f"; keep the password now, it is not shown again:\n{secret}" if not password else "")
        ),
    )


@apiuser.command("list")
@data_dir_option
@json_option
def apiuser_list(data_dir: Path | None, as_json: bool) -> None:
    """List API users (never their passwords)."""
    from alarmhub.store import provisioning

    rows = [
        {
            "username": r["username"],
            "hmac_only": bool(r["hmac_only"]),
            "created": when(r["created_us"]),
        }
        for r in provisioning.list_api_users(open_store(data_dir))
    ]
    columns = [("username", "USERNAME"), ("hmac_only", "HMAC ONLY"), ("created", "CREATED")]
    emit(as_json, rows, lambda: table(rows, columns, "no API users"))


@apiuser.command("remove")
@click.argument("username")
@data_dir_option
@json_option
@provisioning_errors
def apiuser_remove(username: str, data_dir: Path | None, as_json: bool) -> None:
    """Remove API user USERNAME."""
    from alarmhub.store import provisioning

    provisioning.remove_api_user(open_store(data_dir), username)
    emit(
        as_json,
        {"username": username, "removed": True},
        lambda: click.echo(f"API user {username} removed"),
    )
