"""Keys of the integrator API from the command line: ``apikey create`` (the key is printed
once), ``list`` and ``revoke``. The same store functions the node authenticates with."""

from __future__ import annotations

from pathlib import Path

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
from alarmhub.core.api_keys import SCOPES

COLUMNS = [("name", "NAME"), ("scopes", "SCOPES"), ("accounts", "ACCOUNTS"),
           ("created", "CREATED"), ("last_used", "LAST USED"), ("revoked", "REVOKED")]  # fmt: skip


@click.group("apikey")
def apikey_group() -> None:
    """Keys of the integrator API (/api/v1): scoped, optionally limited to an account range."""


@apikey_group.command("create")
@click.option("--name", required=True, help="A name for the key (the audit trail shows it).")
@click.option(
    "--scope", "scopes", multiple=True, required=True, type=click.Choice(SCOPES),
    help="What the key may do (repeatable).",
)  # fmt: skip
@click.option(
    "--accounts", default="", metavar="PREFIX",
    help="Only the accounts whose number starts with PREFIX (a dealer's range).",
)  # fmt: skip
@data_dir_option
@json_option
@provisioning_errors
def apikey_create(
    name: str, scopes: tuple[str, ...], accounts: str, data_dir: Path | None, as_json: bool
) -> None:
    """Make an API key and print it, once: the station keeps only its hash."""
    from alarmhub.store import api_keys, operations

    engine = open_store(data_dir)
    key = operations.run(engine, lambda c: api_keys.create(c, name, scopes, accounts, now_us()))
    emit(
        as_json,
        {"name": name, "key": key},
        lambda: click.echo(f"API key {name}: {key}\n(shown once: keep it now)"),
    )


@apikey_group.command("list")
@data_dir_option
@json_option
def apikey_list(data_dir: Path | None, as_json: bool) -> None:
    """List the API keys (never the keys themselves), newest first, with each one's last use
    (to the minute: a key in use is written at most once a minute)."""
    from alarmhub.store import api_keys

    with open_store(data_dir).connect() as conn:
        keys = api_keys.listed(conn)
    shown = [
        {**k, "scopes": " ".join(k["scopes"]), "created": when(k["created_us"]),
         "last_used": when(k["last_used_us"]) or "never",
         "revoked": when(k["revoked_us"]) or ""}
        for k in keys
    ]  # fmt: skip
    emit(as_json, keys, lambda: table(shown, COLUMNS, "no API key"))


@apikey_group.command("revoke")
@click.argument("name")
@data_dir_option
@json_option
@provisioning_errors
def apikey_revoke(name: str, data_dir: Path | None, as_json: bool) -> None:
    """Revoke an API key: its next request is refused (401 API-AUTH)."""
    from alarmhub.store import api_keys, operations

    operations.run(open_store(data_dir), lambda c: api_keys.revoke(c, name, now_us()))
    emit(as_json, {"name": name, "revoked": True}, lambda: click.echo(f"API key {name} revoked"))
