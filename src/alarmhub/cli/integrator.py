"""An integrator's commands, clients of a running node: ``send`` a Contact ID signal,
``heartbeat`` a pair, ``query`` the monitoring query interface.

None of them opens the database: they import only the HTTP client, so that they start fast.
"""

from __future__ import annotations

import json
import sys
import time

import click

from alarmhub.cli.output import CommandError, F, json_option, secret_option
from alarmhub.clock import now_us
from alarmhub.core import units
from alarmhub.core.supervision import HEARTBEAT_INTERVAL_S
from alarmhub.core.tokens import split_pair
from alarmhub.settings import DEFAULT_URL


def _pair(value: str) -> tuple[str, str]:
    pair = split_pair(value)
    if pair is None:
        raise click.BadParameter(f"{value!r} is not SOURCE:DESTINATION")
    return pair


def client_options(func: F) -> F:
    func = secret_option(
        "--token",
        envvar="ALARMHUB_TOKEN",
        what="bearer token",
        help="Bearer token",
        ask_when_missing=True,
    )(func)
    return click.option(
        "--url",
        envvar="ALARMHUB_URL",
        default=DEFAULT_URL,
        show_default=True,
        help="Address of the signaling interface (env ALARMHUB_URL).",
    )(func)


@click.command()
@click.argument("pair", metavar="SOURCE:DESTINATION")
@click.option("--dnis", required=True)
@click.option("--panel", required=True)
@click.option("--code", required=True, help="Contact ID code, E or R and three digits: E130.")
@click.option("--area", help="Area 00-99 (default 00).")
@click.option("--zone", help="Zone or user 000-999 (default 000).")
@click.option("--idempotency-key", help="Key that makes a retry safe.")
@client_options
@json_option
def send(
    pair: str,
    dnis: str,
    panel: str,
    code: str,
    area: str | None,
    zone: str | None,
    idempotency_key: str | None,
    url: str,
    token: str,
    as_json: bool,
) -> None:
    """Send one Contact ID signal to DESTINATION (the receiver driver)."""
    import httpx

    from alarmhub.client import SignalClient

    source, destination = _pair(pair)
    try:
        with SignalClient(url, token) as client:
            answer = client.send(
                source,
                destination,
                dnis=dnis,
                panel=panel,
                code=code,
                area=area,
                zone=zone,
                idempotency_key=idempotency_key,
            )
    except httpx.HTTPError as exc:
        raise CommandError(f"cannot reach {url}: {exc}") from None
    if as_json:
        click.echo(json.dumps(answer.body))
    elif answer.ok:
        click.echo("signal accepted (stored durably)")
    else:
        click.echo(
            f"signal refused: {answer.body.get('error_code', answer.status_code)} "
            f"{answer.body.get('message', '')}",
            err=True,
        )
    if not answer.ok:
        sys.exit(1)


@click.command()
@click.argument("pair", metavar="SOURCE:DESTINATION")
@click.option(
    "--interval",
    type=click.FloatRange(min=1),
    default=HEARTBEAT_INTERVAL_S,
    show_default=True,
    help="Seconds between heartbeats.",
)
@click.option("--count", type=click.IntRange(min=1), help="Stop after this many (default: never).")
@client_options
def heartbeat(pair: str, interval: float, count: int | None, url: str, token: str) -> None:
    """Tell the receiver driver that SOURCE is alive, every 20 s until stopped.

    With --count, exits 1 when any of the heartbeats failed.
    """
    import httpx

    from alarmhub.client import SignalClient

    source, destination = _pair(pair)
    sent = failed = 0
    with SignalClient(url, token) as client:
        try:
            while count is None or sent < count:
                if sent:
                    time.sleep(interval)
                sent += 1
                stamp = time.strftime("%H:%M:%S", time.localtime(units.to_seconds(now_us())))
                try:
                    answer = client.heartbeat(source, destination)
                except httpx.HTTPError as exc:
                    click.echo(f"{stamp} heartbeat failed: cannot reach {url}: {exc}", err=True)
                    failed += 1
                    continue
                if answer.ok:
                    click.echo(f"{stamp} heartbeat accepted")
                elif answer.status_code == 401:
                    raise CommandError(
                        f"heartbeat refused: {answer.body.get('error_code')} "
                        f"{answer.body.get('message')}"
                    )
                else:
                    click.echo(f"{stamp} heartbeat answered {answer.status_code}", err=True)
                    failed += 1
        except KeyboardInterrupt:
            click.echo("stopped")
    if failed:
        sys.exit(1)


@click.command()
@click.argument("method", type=click.Choice(["XMHIST", "XMAPEND", "XMAINPRO"]))
@click.argument("fields", nargs=-1, metavar="[FIELD=VALUE]...")
@click.option("--url", envvar="ALARMHUB_URL", default=DEFAULT_URL, show_default=True)
@click.option("--appkey", envvar="ALARMHUB_APPKEY", default="alarmhub-cli", show_default=True)
@click.option("--username", envvar="ALARMHUB_USERNAME", required=True, help="The API user.")
@secret_option(
    "--password",
    envvar="ALARMHUB_PASSWORD",
    what="password",
    help="The API user's password",
    ask_when_missing=True,
)
@click.option(
    "--scheme", type=click.Choice(["sha1", "hmac-sha256"]), default="sha1", show_default=True
)
def query(
    method: str,
    fields: tuple[str, ...],
    url: str,
    appkey: str,
    username: str,
    password: str,
    scheme: str,
) -> None:
    """Call the query interface and print its JSON answer (exit 1 on an error answer).

    Example: alarmhub query XMHIST ACCOUNT=700042 HOURS=24 LIMITHIST=10
    """
    import httpx

    from alarmhub.client import QueryClient

    form: dict[str, str] = {}
    for item in fields:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"{item!r} is not FIELD=VALUE")
        form[name] = value
    try:
        with QueryClient(
            url, appkey=appkey, username=username, password=password, scheme=scheme
        ) as client:
            answer = client.query(method, **form)
    except httpx.HTTPError as exc:
        raise CommandError(f"cannot reach {url}: {exc}") from None
    click.echo(json.dumps(answer.body, indent=2))
    if answer.status_code != 200:
        sys.exit(1)
