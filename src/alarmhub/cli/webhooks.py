"""Webhooks from the command line: ``webhook add`` (the signing secret is printed once),
``list``, ``remove``, ``deliveries`` and ``replay``. The same store functions the node's
webhook worker uses."""

from __future__ import annotations

import socket
from pathlib import Path
from urllib.parse import urlsplit

import click

from alarmhub.cli.output import (
    DATABASE_ID,
    data_dir_option,
    emit,
    json_option,
    load_settings,
    open_store,
    provisioning_errors,
    station_key,
    table,
    when,
)
from alarmhub.clock import now_us
from alarmhub.core import webhooks as rules
from alarmhub.core.errors import ProvisioningError
from alarmhub.core.events import KINDS

COLUMNS = [("webhook_id", "ID"), ("url", "URL"), ("events", "EVENTS"), ("accounts", "ACCOUNTS"),
           ("created", "CREATED")]  # fmt: skip
DELIVERY_COLUMNS = [("delivery_id", "DELIVERY"), ("webhook_id", "WEBHOOK"), ("event_id", "EVENT"),
                    ("kind", "KIND"), ("account_number", "ACCOUNT"), ("state", "STATE"),
                    ("attempts", "ATTEMPTS"), ("last", "LAST"), ("next", "NEXT ATTEMPT"),
                    ("delivered", "DELIVERED")]  # fmt: skip


@click.group("webhook")
def webhook_group() -> None:
    """Webhooks: the station tells integrators' URLs of events (Standard Webhooks, signed)."""


@webhook_group.command("add")
@click.argument("url")
@click.option(
    "--event", "kinds", multiple=True, required=True, type=click.Choice(KINDS),
    help="An event kind to send (repeatable).",
)  # fmt: skip
@click.option(
    "--accounts", default="", metavar="PREFIX",
    help="Only the events of accounts whose number starts with PREFIX.",
)  # fmt: skip
@data_dir_option
@json_option
@provisioning_errors
def webhook_add(
    url: str, kinds: tuple[str, ...], accounts: str, data_dir: Path | None, as_json: bool
) -> None:
    """Add a webhook and print its signing secret, once. It hears of events from now on.
    The URL's host must be public (every address it resolves to), unless the setting
    webhook_allow_private (ALARMHUB_WEBHOOK_ALLOW_PRIVATE=1) allows private ones."""
    from alarmhub.store import operations
    from alarmhub.store import webhooks as store

    engine = open_store(data_dir)
    if not load_settings(data_dir).webhook_allow_private:
        _check_target(url)
    key = station_key(data_dir)
    webhook_id, secret = operations.run(
        engine, lambda c: store.add(c, key, url, kinds, accounts, now_us())
    )
    emit(
        as_json,
        {"id": webhook_id, "secret": secret},
        lambda: click.echo(
            f"webhook {webhook_id}: signing secret {secret}\n(shown once: keep it now)"
        ),
    )


def _check_target(url: str) -> None:
    """ProvisioningError unless every address ``url``'s host resolves to is public."""
    problem = rules.url_problem(url)
    if problem:
        raise ProvisioningError(problem)
    host = urlsplit(url).hostname or ""
    try:
        found = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise ProvisioningError(f"the URL's host {host!r} does not resolve") from None
    problem = rules.resolved_problem(str(sockaddr[0]) for *_, sockaddr in found)
    if problem:
        raise ProvisioningError(problem)


@webhook_group.command("list")
@data_dir_option
@json_option
def webhook_list(data_dir: Path | None, as_json: bool) -> None:
    """List the webhooks (never their secrets, nor a user or password of a URL)."""
    from alarmhub.store import webhooks as store

    with open_store(data_dir).connect() as conn:
        hooks = [{**h, "url": rules.shown_url(h["url"])} for h in store.listed(conn)]
    shown = [{**h, "events": " ".join(h["events"]), "created": when(h["created_us"])}
             for h in hooks]  # fmt: skip
    emit(as_json, hooks, lambda: table(shown, COLUMNS, "no webhook"))


@webhook_group.command("remove")
@click.argument("webhook_id", metavar="ID", type=DATABASE_ID)
@data_dir_option
@json_option
@provisioning_errors
def webhook_remove(webhook_id: int, data_dir: Path | None, as_json: bool) -> None:
    """Remove a webhook: nothing more is sent to it (its pending deliveries become failed)."""
    from alarmhub.store import operations
    from alarmhub.store import webhooks as store

    operations.run(open_store(data_dir), lambda c: store.remove(c, webhook_id, now_us()))
    emit(as_json, {"id": webhook_id, "removed": True},
         lambda: click.echo(f"webhook {webhook_id} removed"))  # fmt: skip


@webhook_group.command("deliveries")
@click.option("--failed", is_flag=True, help="Only the failed ones (they can be replayed).")
@click.option(
    "--webhook", "webhook_id", type=DATABASE_ID, metavar="ID", help="Only this webhook's."
)
@click.option("--limit", type=click.IntRange(1, 10_000), default=100, show_default=True)
@data_dir_option
@json_option
def webhook_deliveries(
    failed: bool, webhook_id: int | None, limit: int, data_dir: Path | None, as_json: bool
) -> None:
    """List deliveries of events to webhooks, newest first."""
    from alarmhub.store import webhooks as store

    with open_store(data_dir).connect() as conn:
        rows = store.deliveries(conn, failed, webhook_id, limit)
    shown = [
        {**r, "last": r["last_error"] or (r["last_status"] or ""),
         "next": when(r["next_attempt_us"]) if r["state"] == "pending" else "",
         "delivered": when(r["delivered_us"]) or ""}
        for r in rows
    ]  # fmt: skip
    emit(as_json, rows, lambda: table(shown, DELIVERY_COLUMNS, "no delivery"))


@webhook_group.command("replay")
@click.argument("delivery_id", metavar="DELIVERY", type=DATABASE_ID)
@data_dir_option
@json_option
@provisioning_errors
def webhook_replay(delivery_id: int, data_dir: Path | None, as_json: bool) -> None:
    """Send a failed (or delivered) delivery again, now, with the event's same webhook-id."""
    from alarmhub.store import operations
    from alarmhub.store import webhooks as store

    operations.run(open_store(data_dir), lambda c: store.replay(c, delivery_id, now_us()))
    emit(as_json, {"delivery": delivery_id, "replayed": True},
         lambda: click.echo(f"delivery {delivery_id} will be sent again"))  # fmt: skip
