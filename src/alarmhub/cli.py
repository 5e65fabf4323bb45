"""The command line: ``alarmhub serve`` and the provisioning and integrator commands.

Thin by design: every command calls the same store and client functions as the HTTP layers.
"""

from __future__ import annotations

import csv
import functools
import json
import logging
import secrets
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import click
from sqlalchemy import desc, select
from sqlalchemy.engine import Engine

from alarmhub import __version__, demo, files, logs
from alarmhub import settings as settings_module
from alarmhub.client import HEARTBEAT_SECONDS, SignalClient
from alarmhub.clock import now_us
from alarmhub.core.account import Account, account_problem
from alarmhub.core.operations import Receiving, Refusal, Role, duration, handling_times
from alarmhub.core.tokens import split_pair
from alarmhub.store import engine as store_engine
from alarmhub.store import operations, provisioning, queries
from alarmhub.store import schema as s

F = TypeVar("F", bound=Callable[..., Any])
IMPORT_CHUNK = 1000
PIPE_WIDTH = 1000


class CommandError(click.ClickException):
    """A one-line error for the user; exits with status 1."""

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


def data_dir_option(func: F) -> F:
    return click.option(
        "--data-dir",
        type=click.Path(file_okay=False, path_type=Path),
        envvar="ALARMHUB_DATA_DIR",
        default=None,
        help="Data directory (default ./var; env ALARMHUB_DATA_DIR).",
    )(func)


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")(
        func
    )


ASK = "-"  # a secret option's value that means: ask for it


def read_secret(what: str, confirm: bool) -> str:
    """A secret from the terminal (not echoed; typed twice when ``confirm``) or, when standard
    input is not a terminal, its first line. Never from the command line."""
    if sys.stdin.isatty():
        prompt = what[0].upper() + what[1:]
        value: str = click.prompt(prompt, hide_input=True, confirmation_prompt=confirm, err=True)
    else:
        value = sys.stdin.readline().rstrip("\r\n")
    if not value:
        raise CommandError(f"no {what} given")
    return value


def secret_option(
    *decls: str, envvar: str, what: str, help: str, ask_when_missing: bool, confirm: bool = False
) -> Callable[[F], F]:
    """An option holding a secret. Besides the command line (visible to every user of the
    machine while the command runs, and kept in shell history) it comes from ``envvar``, or,
    given as ``-`` (or missing, when ``ask_when_missing``), from the terminal or standard
    input."""

    def callback(ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
        if ctx.resilient_parsing:
            return value
        if value == ASK or (value is None and ask_when_missing):
            return read_secret(what, confirm)
        return value

    asked = "missing or" if ask_when_missing else "given as"
    return click.option(
        *decls,
        envvar=envvar,
        callback=callback,
        help=f"{help} (env {envvar}; {asked} '-': asked on the terminal, or read from the first "
        "line of standard input).",
    )


def load_settings(data_dir: Path | None, **overrides: Any) -> settings_module.Settings:
    try:
        return settings_module.load(data_dir, **overrides)
    except settings_module.SettingsError as exc:
        raise CommandError(str(exc)) from None


def open_store(data_dir: Path | None) -> Engine:
    """The database of the data directory, migrated to the current schema."""
    settings = load_settings(data_dir)
    try:
        engine = store_engine.open_engine(settings.database)
        store_engine.upgrade(engine)
    except Exception as exc:
        raise CommandError(f"cannot open the database {settings.database!r}: {exc}") from None
    return engine


def provisioning_errors(func: F) -> F:
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (provisioning.ProvisioningError, Refusal) as exc:
            raise CommandError(str(exc)) from None

    return wrapper  # type: ignore[return-value]


def emit(as_json: bool, data: Any, human: Callable[[], None]) -> None:
    if as_json:
        click.echo(json.dumps(data, indent=2, default=str))
    else:
        human()


def table(rows: list[dict[str, Any]], columns: list[tuple[str, str]], empty: str) -> None:
    from rich.console import Console
    from rich.table import Table

    if not rows:
        click.echo(empty)
        return
    t = Table(box=None, header_style="bold")
    for _, title in columns:
        t.add_column(title)
    for row in rows:
        t.add_row(*(_cell(row[key]) for key, _ in columns))
    # On a terminal the table fits the window; piped to a file or a program, nothing is cut.
    Console(width=None if sys.stdout.isatty() else PIPE_WIDTH).print(t)


def _cell(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(value) or "-"
    if value is None:
        return "-"
    return str(value)


def _when(us: int | None) -> str | None:
    if us is None:
        return None
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(us / 1_000_000))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="alarmhub")
def main() -> None:
    """alarmhub: alarm signaling and monitoring for central stations."""
    files.restrict_umask()


# serve ---------------------------------------------------------------------------------------


def _address(value: str | None) -> tuple[str, int] | None:
    from alarmhub.server import parse_address

    if value is None:
        return None
    try:
        return parse_address(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@main.command()
@click.option(
    "--listen", default="127.0.0.1:8080", show_default=True, help="HOST:PORT for both interfaces."
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
) -> None:
    """Run the node: signaling interface, query interface, health and metrics."""
    from alarmhub.server import Listener
    from alarmhub.server import serve as run_server

    settings = load_settings(data_dir, log_level=log_level, log_format=log_format)
    logs.configure(settings.log_level, settings.log_format)
    default = _address(listen)
    rx = _address(rx_listen) or default
    rest = _address(rest_listen) or default
    assert rx is not None and rest is not None
    if rx == rest:
        listeners = [Listener(*rx, ("rx", "rest"))]
    else:
        listeners = [Listener(*rx, ("rx",)), Listener(*rest, ("rest",))]
    dc09 = [address for address in map(_address, dc09_listen) if address is not None]
    metrics = _address(metrics_listen)
    _prepare_data_dir(settings)
    if with_demo:
        _provision_demo(settings)

    def ready(_: object) -> None:
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
            text = demo.saved_credentials(settings.data_dir)
            if text:
                click.echo(text, nl=False)
        click.echo("alarmhub is running; stop it with Ctrl-C (or SIGTERM).")

    run_server(settings, listeners, on_ready=ready, dc09_listen=dc09, metrics_listen=metrics)


def _prepare_data_dir(settings: settings_module.Settings) -> None:
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
    _station_key(settings.data_dir)


def _provision_demo(settings: settings_module.Settings) -> None:
    engine = store_engine.open_engine(settings.database)
    try:
        new = store_engine.is_new(engine)
        store_engine.upgrade(engine)
        if new:
            demo.provision(engine, settings.data_dir)
    finally:
        engine.dispose()


@main.group("demo")
def demo_group() -> None:
    """The demo setup that 'serve --demo' provisions on a new database."""


@demo_group.command("remove")
@data_dir_option
@json_option
@provisioning_errors
def demo_remove(data_dir: Path | None, as_json: bool) -> None:
    """Remove every demo credential before real use: revoke the token demo-token, disable
    operator D1 (with a new random password), delete DEMO-CREDENTIALS.txt."""
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


# db ------------------------------------------------------------------------------------------


@main.group()
def db() -> None:
    """Database schema."""


@db.command("upgrade")
@data_dir_option
def db_upgrade(data_dir: Path | None) -> None:
    """Create or migrate the schema to the newest version."""
    open_store(data_dir).dispose()
    click.echo("database is at the newest schema")


# drivers -------------------------------------------------------------------------------------


@main.group()
def driver() -> None:
    """Receiver drivers that signals are queued to."""


@driver.command("add")
@click.argument("name")
@data_dir_option
@json_option
@provisioning_errors
def driver_add(name: str, data_dir: Path | None, as_json: bool) -> None:
    """Add a receiver driver NAME."""
    row = provisioning.add_driver(open_store(data_dir), name)
    emit(as_json, {"name": row["name"]}, lambda: click.echo(f"driver {name} added"))


@driver.command("list")
@data_dir_option
@json_option
def driver_list(data_dir: Path | None, as_json: bool) -> None:
    """List receiver drivers."""
    rows = provisioning.list_drivers(open_store(data_dir))
    shown = [{"name": r["name"], "created": _when(r["created_us"])} for r in rows]
    emit(
        as_json,
        shown,
        lambda: table(shown, [("name", "DRIVER"), ("created", "CREATED")], "no drivers"),
    )


# tokens --------------------------------------------------------------------------------------


@main.group()
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
    rows = provisioning.list_tokens(open_store(data_dir))
    shown = [
        {
            "name": r["name"],
            "drivers": r["drivers"],
            "heartbeat": r["heartbeat"],
            "created": _when(r["created_us"]),
            "revoked": _when(r["revoked_us"]),
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
    provisioning.revoke_token(open_store(data_dir), name)
    emit(as_json, {"name": name, "revoked": True}, lambda: click.echo(f"token {name} revoked"))


# dnis ----------------------------------------------------------------------------------------


@main.group("dnis")
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
    rows = [
        {"dnis": r["dnis"], "mask": r["line_mask"]}
        for r in provisioning.list_dnis(open_store(data_dir))
    ]
    emit(as_json, rows, lambda: table(rows, [("dnis", "DNIS"), ("mask", "MASK")], "no dnis"))


# accounts ------------------------------------------------------------------------------------


@main.group()
def account() -> None:
    """Subscriber accounts."""


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


CSV_COLUMNS = {
    "account": "account_number",
    "account_number": "account_number",
    "name": "company_name",
    "company_name": "company_name",
    "street": "street",
    "city": "city",
    "state": "state",
}


def _csv_accounts(path: Path, refused: list[dict[str, Any]]) -> Iterator[tuple[int, Account]]:
    """Valid accounts of a CSV file with their line numbers; bad rows go to ``refused``."""
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        header = [h.strip().lower() for h in reader.fieldnames or []]
        unknown = [h for h in header if h not in CSV_COLUMNS]
        if unknown or not {"account_number", "company_name"} <= {CSV_COLUMNS[h] for h in header}:
            raise CommandError(
                f"{path}: the header must name the columns account,name[,street,city,state]"
                + (f" (unknown: {', '.join(unknown)})" if unknown else "")
            )
        reader.fieldnames = [CSV_COLUMNS[h] for h in header]
        for row in reader:
            line = reader.line_num
            if None in row:
                refused.append({"line": line, "error": "more fields than the header names"})
                continue
            values = {k: (v or "").strip() for k, v in row.items()}
            acct = Account(**values)
            problem = account_problem(acct)
            if problem:
                refused.append({"line": line, "error": problem})
                continue
            yield line, acct


@account.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@data_dir_option
@json_option
def account_import(file: Path, data_dir: Path | None, as_json: bool) -> None:
    """Add or update accounts from a CSV FILE with columns account,name[,street,city,state].

    Bad rows are reported by line and skipped; good rows are kept. Exits 1 when any row was bad.
    """
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    engine = open_store(data_dir)
    total_lines = max(sum(1 for _ in file.open("rb")) - 1, 0)
    refused: list[dict[str, Any]] = []
    added = updated = 0
    chunk: list[Account] = []
    with Progress(
        TextColumn("importing"),
        BarColumn(),
        MofNCompleteColumn(),
        transient=True,
        disable=as_json or not sys.stderr.isatty(),
        console=Console(stderr=True),
    ) as progress:
        task = progress.add_task("import", total=total_lines)
        last = 1
        for line, acct in _csv_accounts(file, refused):
            chunk.append(acct)
            progress.update(task, completed=line - 1)
            last = line
            if len(chunk) >= IMPORT_CHUNK:
                count = provisioning.upsert_accounts(engine, chunk)
                added, updated, chunk = added + count.added, updated + count.updated, []
        if chunk:
            count = provisioning.upsert_accounts(engine, chunk)
            added, updated = added + count.added, updated + count.updated
        progress.update(task, completed=max(last - 1, total_lines))
    result = {"added": added, "updated": updated, "refused": refused}

    def human() -> None:
        for bad in refused:
            click.echo(f"{file}:{bad['line']}: {bad['error']}", err=True)
        click.echo(f"accounts added {added}, updated {updated}, rows refused {len(refused)}")

    emit(as_json, result, human)
    if refused:
        sys.exit(1)


@account.command("list")
@click.option("--limit", type=click.IntRange(min=1), help="Show at most this many.")
@data_dir_option
@json_option
def account_list(limit: int | None, data_dir: Path | None, as_json: bool) -> None:
    """List subscriber accounts."""
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


def _station_key(data_dir: Path | None) -> Any:
    from alarmhub import secret_key

    settings = load_settings(data_dir)
    try:
        return secret_key.load(settings.data_dir)
    except secret_key.SecretKeyError as exc:
        raise CommandError(str(exc)) from None


@main.group()
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
    engine = open_store(data_dir)
    secret = provisioning.add_api_user(
        engine, _station_key(data_dir), username, password, hmac_only
    )
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
    rows = [
        {
            "username": r["username"],
            "hmac_only": bool(r["hmac_only"]),
            "created": _when(r["created_us"]),
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
    provisioning.remove_api_user(open_store(data_dir), username)
    emit(
        as_json,
        {"username": username, "removed": True},
        lambda: click.echo(f"API user {username} removed"),
    )


# operators ----------------------------------------------------------------------------------


@main.group("operator")
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
    secret = password or secrets.token_urlsafe(12)
    added = operations.add_operator(open_store(data_dir), code, name, role, secret)
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
    with open_store(data_dir).connect() as conn:
        rows = operations.list_operators(conn)
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
        row["created"] = _when(row["created_us"])
    columns = [("code", "OPR"), ("name", "NAME"), ("role", "ROLE"), ("status", "STATUS"),
               ("in_process", "IN PROCESS"), ("created", "CREATED")]  # fmt: skip
    emit(as_json, rows, lambda: table(rows, columns, "no operators"))


def _operator_switch(code: str, disabled: bool, data_dir: Path | None, as_json: bool) -> None:
    operations.set_disabled(open_store(data_dir), code, disabled, now_us())
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
    operations.set_password(open_store(data_dir), code, password)
    emit(as_json, {"code": code, "password_set": True},
         lambda: click.echo(f"password of operator {code} set"))  # fmt: skip


# resolution codes ---------------------------------------------------------------------------


@main.group()
def resolution() -> None:
    """Resolution codes operators close alarms with (shipped defaults plus the station's)."""


@resolution.command("list")
@data_dir_option
@json_option
def resolution_list(data_dir: Path | None, as_json: bool) -> None:
    """List the station's resolution codes."""
    with open_store(data_dir).connect() as conn:
        codes = operations.resolution_codes(conn)
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
    operations.set_resolution(open_store(data_dir), code, text, now_us())
    emit(as_json, {"code": code, "text": text}, lambda: click.echo(f"resolution {code} set"))


@resolution.command("remove")
@click.argument("code")
@data_dir_option
@json_option
@provisioning_errors
def resolution_remove(code: str, data_dir: Path | None, as_json: bool) -> None:
    """Remove resolution CODE from the list operators choose from."""
    operations.set_resolution(open_store(data_dir), code, None, now_us())
    emit(as_json, {"code": code, "removed": True}, lambda: click.echo(f"resolution {code} removed"))


@resolution.command("reset")
@click.argument("code")
@data_dir_option
@json_option
@provisioning_errors
def resolution_reset(code: str, data_dir: Path | None, as_json: bool) -> None:
    """Undo the station's change to CODE: the shipped text again (or gone, if the station
    added it)."""
    operations.reset_resolution(open_store(data_dir), code)
    emit(as_json, {"code": code, "reset": True}, lambda: click.echo(f"resolution {code} reset"))


# alarm types ---------------------------------------------------------------------------------


@main.group()
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
    rows = provisioning.list_alarm_types(open_store(data_dir))
    rows = [
        r for r in rows if (not codes or r["code"] in codes) and (not overridden or r["overridden"])
    ]
    emit(as_json, rows, lambda: table(rows, ALARM_TYPE_COLUMNS, "no alarm types"))


@alarmtype.command("set")
@click.argument("code")
@click.option("--type", "type_", help="Short alarm code, 1-5 upper-case letters or digits.")
@click.option("--restore-type", help="TYPE when the code arrives as a restore.")
@click.option("--priority", help="One character; '!' first, then A-Z, then a-z.")
@click.option("--color", help="Two hex digits, background then foreground (4F: white on red).")
@click.option("--category", type=click.Choice(["O", "S"]), help="O pending, S history only.")
@click.option("--restore-expected/--no-restore-expected", default=None)
@click.option("--text", "hist_text", help="HIST_TEXT template with {event}, {zone}, {area}.")
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
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Override the alarm type of event CODE (e.g. 130); unnamed fields keep their value."""
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
    )
    emit(as_json, row, lambda: click.echo(f"alarm type {code} set"))


@alarmtype.command("reset")
@click.argument("code")
@data_dir_option
@json_option
@provisioning_errors
def alarmtype_reset(code: str, data_dir: Path | None, as_json: bool) -> None:
    """Drop the station's override of CODE: the shipped default applies again."""
    provisioning.reset_alarm_type(open_store(data_dir), code)
    emit(as_json, {"code": code, "reset": True}, lambda: click.echo(f"alarm type {code} reset"))


# queues and history --------------------------------------------------------------------------


def _age(us: int) -> str:
    return duration(now_us() - us)


@main.command()
@click.option("--limit", type=click.IntRange(min=1), help="Show at most this many.")
@data_dir_option
@json_option
def pending(limit: int | None, data_dir: Path | None, as_json: bool) -> None:
    """Show the pending queue: PRIORITY first, then oldest first."""
    with open_store(data_dir).connect() as conn:
        rows = queries.pending_alarms(conn, limit)
    for row in rows:
        row["age"] = _age(row["pending_us"])
        row["restored"] = "yes" if row["restore_us"] else ""
    columns = [("alarm_id", "INCIDENT"), ("priority", "PRI"), ("type", "TYPE"),
               ("account_number", "ACCOUNT"), ("company_name", "NAME"), ("hist_text", "HIST_TEXT"),
               ("age", "PENDING"), ("restored", "RESTORED")]  # fmt: skip
    emit(as_json, rows, lambda: table(rows, columns, "no pending alarms"))


@main.command("in-process")
@data_dir_option
@json_option
def in_process(data_dir: Path | None, as_json: bool) -> None:
    """Show the In Process queue (alarms operators are handling) and operators' status."""
    now = now_us()
    with open_store(data_dir).connect() as conn:
        rows = queries.in_process_alarms(conn)
        statuses = operations.operator_statuses(conn)
    for row in rows:
        row.update(handling_times(row["pending_us"], row["taken_us"], row["first_call_us"], now))
    columns = [("alarm_id", "INCIDENT"), ("priority", "PRI"), ("type", "TYPE"),
               ("account_number", "ACCOUNT"), ("opr", "OPR"), ("PEND_TIME", "PENDING"),
               ("OPR_HANDLING", "HANDLING"), ("hist_text", "HIST_TEXT")]  # fmt: skip

    def human() -> None:
        table(rows, columns, "no alarms in process")
        click.echo()
        table(statuses, [("code", "OPR"), ("name", "NAME"), ("status", "STATUS")],
              "no operator signed on")  # fmt: skip

    emit(as_json, {"in_process": rows, "operators": statuses}, human)


@main.command()
@click.argument("account_number", metavar="ACCOUNT")
@click.option("--hours", type=click.FloatRange(min=0, min_open=True), default=24.0,
              show_default=True, help="How far back.")  # fmt: skip
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True)
@data_dir_option
@json_option
def history(
    account_number: str, hours: float, limit: int, data_dir: Path | None, as_json: bool
) -> None:
    """Show an account's history, newest first ('' for the station's own events)."""
    now = int(time.time() * 1_000_000)
    with open_store(data_dir).connect() as conn:
        rows = queries.account_history(
            conn, account_number, now - int(hours * 3600 * 1_000_000), now, limit
        )
    for row in rows:
        row["received"] = _when(row["received_us"])
    columns = [("received", "RECEIVED"), ("incident_number", "INCIDENT"), ("code", "CODE"),
               ("type", "TYPE"), ("hist_text", "HIST_TEXT"), ("pr_checksum", "PATH"),
               ("alarm_id", "ALARM")]  # fmt: skip
    emit(as_json, rows, lambda: table(rows, columns, "no history in that window"))


# signals -------------------------------------------------------------------------------------


@main.group()
def signal() -> None:
    """Stored signals."""


@signal.command("list")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True)
@data_dir_option
@json_option
def signal_list(limit: int, data_dir: Path | None, as_json: bool) -> None:
    """Show the newest stored signals, newest first."""
    with open_store(data_dir).connect() as conn:
        rows = [
            dict(r)
            for r in conn.execute(
                select(s.signal).order_by(desc(s.signal.c.incident_number)).limit(limit)
            ).mappings()
        ]
    for row in rows:
        row["received"] = _when(row["received_us"])
    columns = [
        ("incident_number", "INCIDENT"),
        ("received", "RECEIVED"),
        ("source", "SOURCE"),
        ("destination", "DRIVER"),
        ("dnis", "DNIS"),
        ("panel", "PANEL"),
        ("code", "CODE"),
        ("area", "AREA"),
        ("zone", "ZONE"),
        ("token_name", "TOKEN"),
    ]
    emit(as_json, rows, lambda: table(rows, columns, "no signals"))


# integrators ---------------------------------------------------------------------------------


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
        default="http://127.0.0.1:8080",
        show_default=True,
        help="Address of the signaling interface (env ALARMHUB_URL).",
    )(func)


@main.command()
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


@main.command()
@click.argument("pair", metavar="SOURCE:DESTINATION")
@click.option(
    "--interval",
    type=click.FloatRange(min=1),
    default=HEARTBEAT_SECONDS,
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

    source, destination = _pair(pair)
    sent = failed = 0
    with SignalClient(url, token) as client:
        try:
            while count is None or sent < count:
                if sent:
                    time.sleep(interval)
                sent += 1
                stamp = time.strftime("%H:%M:%S")
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


@main.command()
@click.argument("method", type=click.Choice(["XMHIST", "XMAPEND", "XMAINPRO"]))
@click.argument("fields", nargs=-1, metavar="[FIELD=VALUE]...")
@click.option("--url", envvar="ALARMHUB_URL", default="http://127.0.0.1:8080", show_default=True)
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


# SIA DC-09 -----------------------------------------------------------------------------------


@main.group("dc09")
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

    dc09.set_key(open_store(data_dir), _station_key(data_dir), account, key_hex)
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

    dc09.set_key(open_store(data_dir), _station_key(data_dir), account, None)
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
        interval = row["supervision_s"]
        effective = settings.dc09_supervision_seconds if interval is None else interval
        if row["last_message_us"] is None:
            state = "never reported"
        elif effective == 0:
            state = "not supervised"
        else:
            state = "communication failure" if row["failed_us"] is not None else "reporting"
        rows.append(
            {
                "account": row["account"],
                "encrypted": bool(row["keyed"]),
                "supervision_s": effective,
                "last_message": _when(row["last_message_us"]),
                "last_message_us": row["last_message_us"],
                "line": f"R{row['receiver']}L{row['line']}" if row["receiver"] else None,
                "state": state,
                "failed_since": _when(row["failed_us"]),
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
