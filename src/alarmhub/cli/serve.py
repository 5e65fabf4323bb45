"""Running a node: ``serve``, the demo setup it can provision, and the database schema."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

import click

from alarmhub import files
from alarmhub.cli.output import (
    data_dir_option,
    emit,
    json_option,
    load_settings,
    open_store,
    provisioning_errors,
    station_key,
)
from alarmhub.node import node_lock
from alarmhub.settings import DEFAULT_LISTEN

if TYPE_CHECKING:
    from alarmhub.settings import Settings


def _address(value: str | None) -> tuple[str, int] | None:
    from alarmhub.node.server import parse_address

    if value is None:
        return None
    try:
        return parse_address(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@click.command()
@click.option(
    "--listen", default=DEFAULT_LISTEN, show_default=True, help="HOST:PORT for both interfaces."
)
@click.option("--rx-listen", help="HOST:PORT for the signaling interface alone.")
@click.option("--rest-listen", help="HOST:PORT for the query interface and console alone.")
@data_dir_option
@click.option(
    "--demo", "with_demo", is_flag=True, help="Provision the demo setup if the database is new."
)
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]))
@click.option("--log-format", type=click.Choice(["keyvalue", "json"]))
@click.option(
    "--dc09-listen",
    "dc09_listen",
    multiple=True,
    help="HOST:PORT for SIA DC-09 panels, TCP and UDP (may be given more than once).",
)
@click.option(
    "--metrics-listen",
    help="HOST:PORT serving /metrics alone (then no other listener serves it).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    help="Worker processes serving every listener, in front of one writer process "
    "[default: the number of cores, at most 8].",
)
@click.option(
    "--store-commit-timeout",
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds a signal's commit may take before it is answered 503 STORE-1 (a DC-09 "
    "frame: no answer; a receiver frame: NAK) [default: 10].",
)
def serve(
    listen: str,
    rx_listen: str | None,
    rest_listen: str | None,
    data_dir: Path | None,
    with_demo: bool,
    log_level: str | None,
    log_format: str | None,
    dc09_listen: tuple[str, ...],
    metrics_listen: str | None,
    workers: int | None,
    store_commit_timeout: float | None,
) -> None:
    """Run the node: signaling interface, query interface, health and metrics."""
    from alarmhub import demo, logs
    from alarmhub.node.server import Listener
    from alarmhub.node.server import serve as run_server

    settings = load_settings(
        data_dir,
        log_level=log_level,
        log_format=log_format,
        workers=workers,
        store_commit_timeout=store_commit_timeout,
    )
    logs.configure(settings.log_level, settings.log_format)
    default = _address(listen)
    rx = _address(rx_listen) or default
    rest = _address(rest_listen) or default
    assert rx is not None and rest is not None
    if rx == rest:
        listeners = [Listener(*rx, ("rx", "rest"))]
    else:
        listeners = [Listener(*rx, ("rx",)), Listener(*rest, ("rest",))]
    rx_listener = next(listener for listener in listeners if "rx" in listener.parts)
    dc09 = [address for address in map(_address, dc09_listen) if address is not None]
    metrics = _address(metrics_listen)

    def ready() -> None:
        for listener in listeners:
            url = listener.url()
            if "rx" in listener.parts:
                click.echo(f"signaling  {url}/rx/<source>:<destination>/contact_id  (and /hb)")
            shown = "" if metrics else f"    metrics {url}/metrics"
            click.echo(f"health     {url}/healthz{shown}")
            if "rest" in listener.parts:
                click.echo(f"console    {url}/console    queries {url}/rest/rest.php")
        if metrics:
            click.echo(f"metrics    {Listener(*metrics, ()).url()}/metrics")
        for host, port in dc09:
            click.echo(f"SIA DC-09  {host}:{port}  (TCP and UDP)")
        if with_demo:
            text = demo.banner(settings.data_dir, rx_listener.url())
            if text:
                click.echo(text, nl=False)
        if settings.workers > 1:
            click.echo(f"workers    {settings.workers}")
        click.echo("alarmhub is running; stop it with Ctrl-C (or SIGTERM).")

    _prepare_data_dir(settings)
    with node_lock.held(settings, [listener.url() for listener in listeners]):
        if with_demo:
            _provision_demo(settings)
        run_server(settings, listeners, on_ready=ready, dc09_listen=dc09, metrics_listen=metrics)


def _prepare_data_dir(settings: Settings) -> None:
    """Create the data directory 0700 (warn when an existing one is open to others) and refuse
    to start with a secret key that is not the station's alone."""
    loose = files.private_directory(settings.data_dir)
    if loose is not None:
        logging.getLogger("alarmhub.files").warning(
            "data directory open to group or others",
            extra={
                "path": str(settings.data_dir),
                "mode": f"{loose:04o}",
                "fix": f"chmod 700 {settings.data_dir}",
            },
        )
    station_key(settings.data_dir)


def _provision_demo(settings: Settings) -> None:
    from alarmhub import demo
    from alarmhub.store import engine as store_engine

    engine = store_engine.open_engine(settings.database)
    try:
        new = store_engine.is_new(engine)
        store_engine.upgrade(engine)
        if new:
            demo.provision(engine, settings.data_dir)
    finally:
        engine.dispose()


@click.group("demo")
def demo_group() -> None:
    """The demo setup that 'serve --demo' provisions on a new database."""


@demo_group.command("remove")
@data_dir_option
@json_option
@provisioning_errors
def demo_remove(data_dir: Path | None, as_json: bool) -> None:
    """Remove every demo credential before real use: revoke the token demo-token, disable
    operator D1 (with a new random password), delete DEMO-CREDENTIALS.txt."""
    from alarmhub import demo

    settings = load_settings(data_dir)
    done = demo.remove(open_store(data_dir), settings.data_dir)
    lines = [
        f"token {demo.TOKEN_NAME} revoked" if done["token_revoked"] else None,
        f"operator {demo.OPERATOR} disabled" if done["operator_disabled"] else None,
        f"{demo.CREDENTIALS_FILE} deleted" if done["credentials_deleted"] else None,
    ]
    shown = "; ".join(line for line in lines if line)
    text = f"demo removed: {shown}" if shown else "no demo credential left to remove"
    emit(as_json, done, lambda: click.echo(text))


@click.group()
def db() -> None:
    """Database schema."""


@db.command("upgrade")
@data_dir_option
def db_upgrade(data_dir: Path | None) -> None:
    """Create or migrate the schema to the newest version."""
    open_store(data_dir).dispose()
    click.echo("database is at the newest schema")
