"""The console's station setup: operators, the resolution codes they close alarms with, and the
alarm types that say how each Contact ID event is handled."""

from __future__ import annotations

import secrets
from pathlib import Path

import click

from alarmhub.cli.output import (
    data_dir_option,
    emit,
    json_option,
    open_store,
    provisioning_errors,
    secret_option,
    table,
    when,
)
from alarmhub.clock import now_us
from alarmhub.core.operations import Receiving, Role
from alarmhub.core.response import DEFAULT_CALL_LIST, call_list_name

# operators ----------------------------------------------------------------------------------


@click.group("operator")
def operator_group() -> None:
    """Operators of the console: OPR codes, roles, passwords."""


@operator_group.command("add")
@click.argument("code")
@click.option("--name", required=True, help="The operator's name.")
@click.option(
    "--role",
    type=click.Choice([r.value for r in Role]),
    default=Role.OPERATOR.value,
    show_default=True,
    help="supervisor: may also take alarms from others; admin: may also manage the station.",
)
@secret_option(
    "--password",
    envvar="ALARMHUB_OPERATOR_PASSWORD",
    what="password",
    help="Console password, at least 8 characters; default: a random one, printed once",
    ask_when_missing=False,
    confirm=True,
)
@data_dir_option
@json_option
@provisioning_errors
def operator_add(
    code: str, name: str, role: str, password: str | None, data_dir: Path | None, as_json: bool
) -> None:
    """Add operator CODE (the OPR value, 1-3 letters or digits); the password is stored as an
    argon2 hash."""
    from alarmhub.store import operators

    secret = password or secrets.token_urlsafe(12)
    added = operators.add_operator(open_store(data_dir), code, name, role, secret)
    emit(
        as_json,
        {**added, "password": secret},
        lambda: click.echo(
            f"operator {code} ({role}) added"
            + (f"; keep the password now, it is not shown again:\n{secret}" if not password else "")
        ),
    )


@operator_group.command("list")
@data_dir_option
@json_option
def operator_list(data_dir: Path | None, as_json: bool) -> None:
    """List operators with their status (never their passwords)."""
    from alarmhub.store import operators

    with open_store(data_dir).connect() as conn:
        rows = operators.list_operators(conn)
    for row in rows:
        row["disabled"] = bool(row["disabled"])
        row["receiving"] = bool(row["receiving"])
        row["has_password"] = bool(row["has_password"])
        row["status"] = (
            "disabled"
            if row["disabled"]
            else "signed off"
            if row["signed_on_us"] is None
            else (Receiving.RECEIVING if row["receiving"] else Receiving.NOT_RECEIVING).value
        )
        row["created"] = when(row["created_us"])
    columns = [("code", "OPR"), ("name", "NAME"), ("role", "ROLE"), ("status", "STATUS"),
               ("in_process", "IN PROCESS"), ("created", "CREATED")]  # fmt: skip
    emit(as_json, rows, lambda: table(rows, columns, "no operators"))


def _operator_switch(code: str, disabled: bool, data_dir: Path | None, as_json: bool) -> None:
    from alarmhub.store import operator_access

    operator_access.set_disabled(open_store(data_dir), code, disabled, now_us())
    word = "disabled" if disabled else "enabled"
    emit(
        as_json, {"code": code, "disabled": disabled}, lambda: click.echo(f"operator {code} {word}")
    )


@operator_group.command("disable")
@click.argument("code")
@data_dir_option
@json_option
@provisioning_errors
def operator_disable(code: str, data_dir: Path | None, as_json: bool) -> None:
    """Disable operator CODE: signed off at once, sessions ended, alarms back to pending."""
    _operator_switch(code, True, data_dir, as_json)


@operator_group.command("enable")
@click.argument("code")
@data_dir_option
@json_option
@provisioning_errors
def operator_enable(code: str, data_dir: Path | None, as_json: bool) -> None:
    """Enable operator CODE again."""
    _operator_switch(code, False, data_dir, as_json)


@operator_group.command("password")
@click.argument("code")
@secret_option("--password", envvar="ALARMHUB_OPERATOR_PASSWORD", what="new password",
               help="The new password", ask_when_missing=True, confirm=True)  # fmt: skip
@data_dir_option
@json_option
@provisioning_errors
def operator_password(code: str, password: str, data_dir: Path | None, as_json: bool) -> None:
    """Set operator CODE's console password; their console sessions end (signed off)."""
    from alarmhub.store import operator_access

    operator_access.set_password(open_store(data_dir), code, password)
    emit(as_json, {"code": code, "password_set": True},
         lambda: click.echo(f"password of operator {code} set"))  # fmt: skip


# resolution codes ---------------------------------------------------------------------------


@click.group()
def resolution() -> None:
    """Resolution codes operators close alarms with (shipped defaults plus the station's)."""


@resolution.command("list")
@data_dir_option
@json_option
def resolution_list(data_dir: Path | None, as_json: bool) -> None:
    """List the station's resolution codes."""
    from alarmhub.store import resolutions

    with open_store(data_dir).connect() as conn:
        codes = resolutions.resolution_codes(conn)
    rows = [{"code": code, "text": text} for code, text in codes.items()]
    emit(as_json, rows, lambda: table(rows, [("code", "CODE"), ("text", "TEXT")], "none"))


@resolution.command("set")
@click.argument("code")
@click.argument("text")
@data_dir_option
@json_option
@provisioning_errors
def resolution_set(code: str, text: str, data_dir: Path | None, as_json: bool) -> None:
    """Add resolution CODE, or change its TEXT."""
    from alarmhub.store import resolutions

    resolutions.set_resolution(open_store(data_dir), code, text, now_us())
    emit(as_json, {"code": code, "text": text}, lambda: click.echo(f"resolution {code} set"))


@resolution.command("remove")
@click.argument("code")
@data_dir_option
@json_option
@provisioning_errors
def resolution_remove(code: str, data_dir: Path | None, as_json: bool) -> None:
    """Remove resolution CODE from the list operators choose from."""
    from alarmhub.store import resolutions

    resolutions.set_resolution(open_store(data_dir), code, None, now_us())
    emit(as_json, {"code": code, "removed": True}, lambda: click.echo(f"resolution {code} removed"))


@resolution.command("reset")
@click.argument("code")
@data_dir_option
@json_option
@provisioning_errors
def resolution_reset(code: str, data_dir: Path | None, as_json: bool) -> None:
    """Undo the station's change to CODE: the shipped text again (or gone, if the station
    added it)."""
    from alarmhub.store import resolutions

    resolutions.reset_resolution(open_store(data_dir), code)
    emit(as_json, {"code": code, "reset": True}, lambda: click.echo(f"resolution {code} reset"))


# alarm types ---------------------------------------------------------------------------------


@click.group()
def alarmtype() -> None:
    """Alarm types: how each Contact ID event is handled (defaults plus station overrides)."""


ALARM_TYPE_COLUMNS = [
    ("code", "CODE"),
    ("type", "TYPE"),
    ("restore_type", "RESTORE"),
    ("priority", "PRI"),
    ("color", "COLOR"),
    ("category", "CAT"),
    ("restore_expected", "EXPECT RESTORE"),
    ("hist_text", "HIST_TEXT"),
    ("contact_list", "CONTACT LIST"),
    ("overridden", "OVERRIDE"),
]


@alarmtype.command("list")
@click.option("--code", "codes", multiple=True, help="Only these event codes.")
@click.option("--overridden", is_flag=True, help="Only the station's overrides.")
@data_dir_option
@json_option
def alarmtype_list(
    codes: tuple[str, ...], overridden: bool, data_dir: Path | None, as_json: bool
) -> None:
    """List alarm types: TYPE, PRIORITY, COLOR, category (O pending, S history only)."""
    from alarmhub.store import provisioning

    rows = provisioning.list_alarm_types(open_store(data_dir))
    rows = [
        r for r in rows if (not codes or r["code"] in codes) and (not overridden or r["overridden"])
    ]
    shown = [{**r, "contact_list": r["contact_list"] or DEFAULT_CALL_LIST} for r in rows]
    emit(as_json, rows, lambda: table(shown, ALARM_TYPE_COLUMNS, "no alarm types"))


@alarmtype.command("set")
@click.argument("code")
@click.option("--type", "type_", help="Short alarm code, 1-5 upper-case letters or digits.")
@click.option("--restore-type", help="TYPE when the code arrives as a restore.")
@click.option("--priority", help="One character; '!' first, then A-Z, then a-z.")
@click.option("--color", help="Two hex digits, background then foreground (4F: white on red).")
@click.option("--category", type=click.Choice(["O", "S"]), help="O pending, S history only.")
@click.option("--restore-expected/--no-restore-expected", default=None)
@click.option("--text", "hist_text", help="HIST_TEXT template with {event}, {zone}, {area}.")
@click.option(
    "--contact-list",
    metavar="NAME",
    help=f"The call list operators work for its alarms ('' for {DEFAULT_CALL_LIST}).",
)
@data_dir_option
@json_option
@provisioning_errors
def alarmtype_set(
    code: str,
    type_: str | None,
    restore_type: str | None,
    priority: str | None,
    color: str | None,
    category: str | None,
    restore_expected: bool | None,
    hist_text: str | None,
    contact_list: str | None,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Override the alarm type of event CODE (e.g. 130); unnamed fields keep their value."""
    from alarmhub.store import provisioning

    row = provisioning.set_alarm_type(
        open_store(data_dir),
        code,
        type=type_,
        restore_type=restore_type,
        priority=priority,
        color=color.upper() if color else None,
        category=category,
        restore_expected=restore_expected,
        hist_text=hist_text,
        contact_list=call_list_name(contact_list) if contact_list is not None else None,
    )
    emit(as_json, row, lambda: click.echo(f"alarm type {code} set"))


@alarmtype.command("reset")
@click.argument("code")
@data_dir_option
@json_option
@provisioning_errors
def alarmtype_reset(code: str, data_dir: Path | None, as_json: bool) -> None:
    """Drop the station's override of CODE: the shipped default applies again."""
    from alarmhub.store import provisioning

    provisioning.reset_alarm_type(open_store(data_dir), code)
    emit(as_json, {"code": code, "reset": True}, lambda: click.echo(f"alarm type {code} reset"))
