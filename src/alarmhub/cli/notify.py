"""Notification commands (decisions section 13): the gateways (``notify smtp``, ``notify sms``;
their passwords only from the environment, encrypted with the station's key, never shown),
``notify status``, the station's templates (``notify template show|set|reset``) and the log of
messages (``notify log``). Who is notified of what is set on contacts (``contact add|update
--notify KIND --notify-by CHANNEL``)."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import TextIO

import click

from alarmhub.cli.output import (
    CommandError,
    data_dir_option,
    emit,
    json_option,
    open_store,
    provisioning_errors,
    station_key,
    table,
    when,
)
from alarmhub.clock import now_us
from alarmhub.core.notifications import CHANNELS, KINDS, SMS_FORMATS, TWILIO, default_sender

SMTP_USER, SMTP_PASSWORD = "ALARMHUB_SMTP_USER", "ALARMHUB_SMTP_PASSWORD"
SMS_USER, SMS_PASSWORD = "ALARMHUB_SMS_USER", "ALARMHUB_SMS_PASSWORD"
STATUS_COLUMNS = [("channel", "CHANNEL"), ("url", "URL"), ("from", "FROM"), ("mode", "MODE"),
                  ("user", "USER"), ("password", "PASSWORD"), ("queued", "QUEUED"),
                  ("failed", "FAILED")]  # fmt: skip
LOG_COLUMNS = [("id", "ID"), ("queued", "QUEUED"), ("account", "ACCOUNT"), ("kind", "KIND"),
               ("channel", "CHANNEL"), ("to", "TO"), ("state", "STATE"),
               ("attempts", "ATTEMPTS"), ("digest_id", "DIGEST"),
               ("last_error", "LAST ERROR")]  # fmt: skip


@click.group("notify")
def notify_group() -> None:
    """Messages to subscribers by e-mail and SMS: gateways, templates, the log."""


def _env(name: str) -> str:
    return os.environ.get(name, "")


@notify_group.command("smtp")
@click.option(
    "--url", required=True, metavar="smtp://HOST:PORT",
    help="The SMTP server: smtp://HOST:PORT, or smtps://HOST:PORT for implicit TLS.",
)  # fmt: skip
@click.option("--from", "sender", default="", metavar="ADDRESS",
              help="The sender's address (From) of every e-mail (default: alarmhub@ this "
                   "machine's name).")  # fmt: skip
@click.option("--starttls", is_flag=True, help="Upgrade the connection with STARTTLS.")
@click.option(
    "--user", default=None, metavar="NAME",
    help=f"The user to log in as (env {SMTP_USER}); the password comes only from {SMTP_PASSWORD}.",
)  # fmt: skip
@data_dir_option
@json_option
@provisioning_errors
def notify_smtp(
    url: str, sender: str, starttls: bool, user: str | None, data_dir: Path | None, as_json: bool
) -> None:
    """Send e-mail through an SMTP server. Its password is read from the environment
    (ALARMHUB_SMTP_PASSWORD), never from the command line, and kept encrypted."""
    from alarmhub.store import notifications as store
    from alarmhub.store import operations

    user = user if user is not None else _env(SMTP_USER)
    password = _env(SMTP_PASSWORD)
    if user and not password:
        raise CommandError(f"logging in as {user!r} needs the password in {SMTP_PASSWORD}")
    if password and not user:
        raise CommandError(f"{SMTP_PASSWORD} is set: give the user (--user or {SMTP_USER})")
    sender = sender or default_sender(socket.getfqdn())
    engine = open_store(data_dir)  # refuses a missing station before its key is made
    key = station_key(data_dir)
    operations.run(engine, lambda c: store.set_smtp(
        c, key, url, sender, starttls, user, password or None, now_us()))  # fmt: skip
    emit(as_json, {"channel": "email", "url": url, "set": True},
         lambda: click.echo(f"e-mail goes through {url}"))  # fmt: skip


@notify_group.command("sms")
@click.option("--url", required=True, metavar="URL",
              help="The HTTP gateway's URL messages are POSTed to.")  # fmt: skip
@click.option(
    "--format", "fmt", type=click.Choice(SMS_FORMATS), default=TWILIO, show_default=True,
    help="twilio: the form fields To, From, Body; json: {\"to\", \"from\", \"text\"}.",
)  # fmt: skip
@click.option("--from", "sender", default="", metavar="NUMBER",
              help="The sender's number (From) of every SMS.")  # fmt: skip
@data_dir_option
@json_option
@provisioning_errors
def notify_sms(url: str, fmt: str, sender: str, data_dir: Path | None, as_json: bool) -> None:
    """Send SMS through an HTTP gateway, with HTTP basic authentication from the environment
    (ALARMHUB_SMS_USER, ALARMHUB_SMS_PASSWORD), kept encrypted."""
    from alarmhub.store import notifications as store
    from alarmhub.store import operations

    user, password = _env(SMS_USER), _env(SMS_PASSWORD)
    if bool(user) != bool(password):
        raise CommandError(f"give both {SMS_USER} and {SMS_PASSWORD}, or neither")
    engine = open_store(data_dir)  # refuses a missing station before its key is made
    key = station_key(data_dir)
    operations.run(engine, lambda c: store.set_sms(
        c, key, url, fmt, sender, user, password or None, now_us()))  # fmt: skip
    emit(as_json, {"channel": "sms", "url": url, "set": True},
         lambda: click.echo(f"SMS go through {url} ({fmt})"))  # fmt: skip


@notify_group.command("status")
@data_dir_option
@json_option
def notify_status(data_dir: Path | None, as_json: bool) -> None:
    """Show the gateways (never a password: only whether there is one) and the messages of
    each channel queued and failed."""
    from alarmhub.store import notifications as store

    with open_store(data_dir).connect() as conn:
        rows = store.gateways(conn)
    shown = [
        {**r, "url": r.get("url") or "(not set)",
         "mode": r.get("tls") or r.get("format") or "",
         "password": "set" if r.get("has_password") else ""}
        for r in rows
    ]  # fmt: skip
    emit(as_json, rows, lambda: table(shown, STATUS_COLUMNS, "no gateway"))


@notify_group.group("template")
def template_group() -> None:
    """The station's messages per kind and channel; placeholders $account $text $name $zone
    $time (a line whose placeholders are all empty is left out)."""


KIND = click.argument("kind", metavar="KIND", type=click.Choice(KINDS))
CHANNEL = click.argument("channel", metavar="CHANNEL", type=click.Choice(CHANNELS))


def _template_shown(kind: str, channel: str, subject: str, body: str, own: bool) -> None:
    whose = "the station's" if own else "default"
    click.echo(f"{kind} {channel} ({whose})")
    if channel == "email":
        click.echo(f"subject: {subject}")
    click.echo("body:")
    click.echo(body)


@template_group.command("show")
@KIND
@CHANNEL
@data_dir_option
@json_option
@provisioning_errors
def template_show(kind: str, channel: str, data_dir: Path | None, as_json: bool) -> None:
    """Show the template of KIND's messages by CHANNEL."""
    from alarmhub.store import notifications as store

    with open_store(data_dir).connect() as conn:
        found, own = store.template(conn, kind, channel)
    emit(as_json, {"kind": kind, "channel": channel, "subject": found.subject,
                   "body": found.body, "default": not own},
         lambda: _template_shown(kind, channel, found.subject, found.body, own))  # fmt: skip


@template_group.command("set")
@KIND
@CHANNEL
@click.option("--subject", default=None, help="The e-mail's subject template (one line).")
@click.option("--body", default=None, help="The message's body template.")
@click.option(
    "--body-file", type=click.File("r", encoding="utf-8"), default=None,
    help="Read the body template from this file ('-': standard input).",
)  # fmt: skip
@data_dir_option
@json_option
@provisioning_errors
def template_set(
    kind: str,
    channel: str,
    subject: str | None,
    body: str | None,
    body_file: TextIO | None,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Change the template of KIND's messages by CHANNEL (what is not given stays); an unknown
    placeholder is refused."""
    from alarmhub.store import notifications as store
    from alarmhub.store import operations

    if body is not None and body_file is not None:
        raise CommandError("give --body or --body-file, not both")
    if body_file is not None:
        body = body_file.read()
    if subject is None and body is None:
        raise CommandError("give --subject, --body or --body-file")
    found = operations.run(open_store(data_dir), lambda c: store.set_template(
        c, kind, channel, subject, body, now_us()))  # fmt: skip
    emit(as_json, {"kind": kind, "channel": channel, "subject": found.subject,
                   "body": found.body, "default": False},
         lambda: click.echo(f"template {kind} {channel} set"))  # fmt: skip


@template_group.command("reset")
@KIND
@CHANNEL
@data_dir_option
@json_option
@provisioning_errors
def template_reset(kind: str, channel: str, data_dir: Path | None, as_json: bool) -> None:
    """Go back to the default template of KIND's messages by CHANNEL."""
    from alarmhub.store import notifications as store
    from alarmhub.store import operations

    found = operations.run(open_store(data_dir), lambda c: store.reset_template(c, kind, channel))
    emit(as_json, {"kind": kind, "channel": channel, "subject": found.subject,
                   "body": found.body, "default": True},
         lambda: click.echo(f"template {kind} {channel} is the default again"))  # fmt: skip


@notify_group.command("log")
@click.option("--account", default=None, metavar="ACCOUNT", help="Only this account's messages.")
@click.option("--limit", type=click.IntRange(1, 10_000), default=100, show_default=True,
              help="At most this many messages.")  # fmt: skip
@data_dir_option
@json_option
def notify_log(account: str | None, limit: int, data_dir: Path | None, as_json: bool) -> None:
    """List the messages, newest first: to whom, by which channel, their state (queued, sent,
    failed) and attempts."""
    from alarmhub.cli.schedule_options import station_zone
    from alarmhub.store import notifications as store

    with open_store(data_dir).connect() as conn:
        rows = store.log(conn, account, limit, station_zone(data_dir))
    shown = [{**r, "queued": when(r["queued_us"]), "last_error": r["last_error"] or ""}
             for r in rows]  # fmt: skip
    emit(as_json, rows, lambda: table(shown, LOG_COLUMNS, "no message"))
