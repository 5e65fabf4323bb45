"""SIA DC-09 commands: receiver lines, account keys and account supervision."""

from __future__ import annotations

from pathlib import Path

import click

from alarmhub.cli.output import (
    CommandError,
    data_dir_option,
    emit,
    json_option,
    load_settings,
    open_store,
    provisioning_errors,
    secret_option,
    station_key,
    table,
    when,
)
from alarmhub.core.dc09 import line_name
from alarmhub.core.supervision import dc09_interval_s, dc09_state


@click.group("dc09")
def dc09_group() -> None:
    """SIA DC-09 receiver lines, account keys and supervision."""


@dc09_group.group("line")
def dc09_line() -> None:
    """Receiver lines: which dnis (and line mask) a DC-09 receiver and line report on."""


@dc09_line.command("add")
@click.option("--receiver", required=True, help="Receiver number (hex, as panels send R...).")
@click.option("--line", required=True, help="Line number (hex, as panels send L...).")
@click.option("--dnis", required=True, help="The dnis whose line mask the accounts go through.")
@data_dir_option
@json_option
@provisioning_errors
def dc09_line_add(
    receiver: str, line: str, dnis: str, data_dir: Path | None, as_json: bool
) -> None:
    """Map DC-09 receiver RECEIVER line LINE to DNIS."""
    from alarmhub.store import dc09

    row = dc09.add_line(open_store(data_dir), receiver, line, dnis)
    emit(
        as_json,
        row,
        lambda: click.echo(f"receiver {row['receiver']} line {row['line']} -> dnis {dnis}"),
    )


@dc09_line.command("remove")
@click.option("--receiver", required=True, help="Receiver number (hex).")
@click.option("--line", required=True, help="Line number (hex).")
@data_dir_option
@json_option
@provisioning_errors
def dc09_line_remove(receiver: str, line: str, data_dir: Path | None, as_json: bool) -> None:
    """Remove a receiver line's mapping (its accounts then raise UNKNOWN ACCOUNT)."""
    from alarmhub.store import dc09

    dc09.remove_line(open_store(data_dir), receiver, line)
    emit(
        as_json,
        {"receiver": receiver, "line": line, "removed": True},
        lambda: click.echo(f"receiver {receiver} line {line} removed"),
    )


@dc09_line.command("list")
@data_dir_option
@json_option
def dc09_line_list(data_dir: Path | None, as_json: bool) -> None:
    """List the receiver lines."""
    from alarmhub.store import dc09

    rows = dc09.list_lines(open_store(data_dir))
    emit(
        as_json,
        rows,
        lambda: table(
            rows, [("receiver", "RECEIVER"), ("line", "LINE"), ("dnis", "DNIS")], "no dc09 line"
        ),
    )


@dc09_group.group("key")
def dc09_key() -> None:
    """AES keys of DC-09 accounts (a keyed account's unencrypted messages are refused)."""


@dc09_key.command("set")
@click.argument("account", metavar="ACCOUNT")
@secret_option(
    "--key",
    "key_hex",
    envvar="ALARMHUB_DC09_KEY",
    what="AES key",
    help="AES key: 32, 48 or 64 hex digits",
    ask_when_missing=True,
    confirm=True,
)
@data_dir_option
@json_option
@provisioning_errors
def dc09_key_set(account: str, key_hex: str, data_dir: Path | None, as_json: bool) -> None:
    """Set ACCOUNT's AES key (stored encrypted with the station's secret key)."""
    from alarmhub.store import dc09

    dc09.set_key(open_store(data_dir), station_key(data_dir), account, key_hex)
    account = account.upper()
    bits = len(key_hex) * 4
    emit(
        as_json,
        {"account": account, "key_bits": bits},
        lambda: click.echo(f"DC-09 account {account}: AES-{bits} key set"),
    )


@dc09_key.command("remove")
@click.argument("account", metavar="ACCOUNT")
@data_dir_option
@json_option
@provisioning_errors
def dc09_key_remove(account: str, data_dir: Path | None, as_json: bool) -> None:
    """Take ACCOUNT's key away (it may then send unencrypted messages)."""
    from alarmhub.store import dc09

    dc09.set_key(open_store(data_dir), station_key(data_dir), account, None)
    emit(
        as_json,
        {"account": account.upper(), "key_bits": None},
        lambda: click.echo(f"DC-09 account {account.upper()}: key removed"),
    )


@dc09_group.group("account")
def dc09_account() -> None:
    """DC-09 accounts: last message and supervision."""


@dc09_account.command("list")
@data_dir_option
@json_option
def dc09_account_list(data_dir: Path | None, as_json: bool) -> None:
    """List DC-09 accounts: key, supervision interval, last message and state."""
    from alarmhub.store import dc09

    settings = load_settings(data_dir)
    rows = []
    for row in dc09.list_accounts(open_store(data_dir)):
        interval = dc09_interval_s(row["supervision_s"], settings.dc09_supervision_seconds)
        failed = row["failed_us"] is not None
        rows.append(
            {
                "account": row["account"],
                "encrypted": bool(row["keyed"]),
                "supervision_s": interval,
                "last_message": when(row["last_message_us"]),
                "last_message_us": row["last_message_us"],
                "line": line_name(row["receiver"], row["line"]) if row["receiver"] else None,
                "state": dc09_state(interval, row["last_message_us"], failed),
                "failed_since": when(row["failed_us"]),
                "alarm_id": row["alarm_id"],
            }
        )
    columns = [
        ("account", "ACCOUNT"),
        ("encrypted", "AES"),
        ("supervision_s", "INTERVAL S"),
        ("last_message", "LAST MESSAGE"),
        ("line", "LINE"),
        ("state", "STATE"),
        ("failed_since", "FAILED SINCE"),
    ]
    emit(as_json, rows, lambda: table(rows, columns, "no dc09 account"))


@dc09_account.command("interval")
@click.argument("account", metavar="ACCOUNT")
@click.argument("seconds", metavar="SECONDS|off|default")
@data_dir_option
@json_option
@provisioning_errors
def dc09_account_interval(account: str, seconds: str, data_dir: Path | None, as_json: bool) -> None:
    """Set ACCOUNT's supervision interval: SECONDS, off, or default (dc09_supervision_seconds)."""
    from alarmhub.store import dc09

    if seconds == "off":
        value: int | None = dc09.SUPERVISION_OFF
    elif seconds == "default":
        value = None
    elif seconds.isdigit() and int(seconds) > 0:
        value = int(seconds)
    else:
        raise CommandError(
            f"invalid interval {seconds!r}: a positive number of seconds, off or default"
        )
    dc09.set_supervision(open_store(data_dir), account, value)
    emit(
        as_json,
        {"account": account.upper(), "supervision_s": value},
        lambda: click.echo(f"DC-09 account {account.upper()}: supervision {seconds}"),
    )
