"""What every command shares: its options, its errors, the data directory's settings, database
and secret key, and printing as text, tables or JSON.

Imports here stay light (no database, web or crypto library): a command pays only for what it
uses, which keeps ``alarmhub send`` quick to start.
"""

from __future__ import annotations

import functools
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from alarmhub.cli import station
from alarmhub.core import units
from alarmhub.core.errors import ActionRefused, ProvisioningError, SecretKeyError, SettingsError
from alarmhub.core.ids import MAX_ID, parse_id

if TYPE_CHECKING:
    from cryptography.fernet import Fernet
    from sqlalchemy.engine import Engine

    from alarmhub.settings import Settings

F = TypeVar("F", bound=Callable[..., Any])
PIPE_WIDTH = 1000
ASK = "-"  # a secret option's value that means: ask for it


class CommandError(click.ClickException):
    """A one-line error for the user; exits with status 1."""

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


class DatabaseId(click.ParamType[int, Any]):
    """A row's id on the command line (``core.ids``): anything else is an ``error:`` line
    and status 1, before the database is opened."""

    name = "id"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        found = parse_id(str(value))
        if found is None:
            what = "id" if param is None else param.human_readable_name
            if isinstance(param, click.Option):
                what = param.opts[0]
            raise CommandError(f"{what} must be a whole number from 1 to {MAX_ID}, not {value!r}")
        return found


DATABASE_ID = DatabaseId()


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


def load_settings(data_dir: Path | None, **overrides: Any) -> Settings:
    from alarmhub import settings as settings_module

    try:
        return settings_module.load(data_dir, **overrides)
    except SettingsError as exc:
        raise CommandError(str(exc)) from None


def open_store(data_dir: Path | None) -> Engine:
    """The database of the data directory, migrated to the current schema if it is not there.
    A missing station is made only by the commands that make one (:mod:`alarmhub.cli.station`);
    the others refuse it, making nothing."""
    from alarmhub.settings import masked_url
    from alarmhub.store import engine as store_engine

    settings = load_settings(data_dir)
    creates = station.running_command_creates()
    if not creates and station.database_file_missing(settings):
        raise CommandError(station.no_station(settings))
    try:
        engine = store_engine.open_engine(settings.database)
        missing = False
        if creates:
            store_engine.upgrade_if_behind(engine)
        elif not store_engine.at_head(engine):  # an older schema is upgraded; none is made
            missing = store_engine.is_new(engine)
            if not missing:
                store_engine.upgrade(engine)
    except Exception as exc:
        shown = masked_url(settings.database)
        raise CommandError(f"cannot open the database {shown!r}: {exc}") from None
    if missing:
        engine.dispose()
        raise CommandError(station.no_station(settings))
    return engine


def station_key(data_dir: Path | None) -> Fernet:
    """The station's secret key, which encrypts the secrets it stores."""
    from alarmhub import secret_key

    settings = load_settings(data_dir)
    try:
        return secret_key.load(settings.data_dir)
    except SecretKeyError as exc:
        raise CommandError(str(exc)) from None


def provisioning_errors(func: F) -> F:
    """Report a request the store or the rules refuse as a one-line error."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except click.ClickException:
            raise
        except Exception as exc:
            if isinstance(exc, ActionRefused | ProvisioningError):
                raise CommandError(str(exc)) from None
            raise

    return wrapper  # type: ignore[return-value]


def emit(as_json: bool, data: Any, human: Callable[[], None]) -> None:
    if as_json:
        click.echo(json.dumps(data, indent=2, default=str))
    else:
        human()


def table(rows: list[dict[str, Any]], columns: list[tuple[str, str]], empty: str) -> None:
    """``rows`` as a table of ``columns`` (key, title): each cell as plain text (no markup),
    its control characters escaped, so that no stored value can drive the terminal."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from alarmhub.logs import escape_unsafe

    if not rows:
        click.echo(empty)
        return
    t = Table(box=None, header_style="bold")
    for _, title in columns:
        t.add_column(title)
    for row in rows:
        t.add_row(*(Text(escape_unsafe(cell(row[key]))) for key, _ in columns))
    # On a terminal the table fits the window; piped to a file or a program, nothing is cut.
    Console(width=None if sys.stdout.isatty() else PIPE_WIDTH).print(t)


def cell(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(value) or "-"
    if value is None:
        return "-"
    return str(value)


def when(us: int | None) -> str | None:
    """A time in microseconds as local date and time, to the second."""
    if us is None:
        return None
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(units.to_seconds(us)))
