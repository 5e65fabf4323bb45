"""Which commands may make a new station, and what the others say when there is none
(decisions.md section 15).

``serve``, ``db upgrade`` and the commands that provision (every ``add``, ``set``, ``create``
and ``import`` command) make the data directory and its database when they are missing. Every
other command that opens the station needs one: those that only read (``pending``,
``history``, ``in-process``, ``signal list``, every ``list``, ``show``, ``status`` and
``report`` command, ``webhook deliveries``) and those that change what is there (``remove``,
``revoke``, ``reset``, ``storm on``, ...). On a missing station they print ``error: no station
at PATH (start one with alarmhub serve, or pass --data-dir)``, exit 1 and make nothing. The
commands that talk to a node over HTTP (``send``, ``heartbeat``, ``query``) never open it.

A SQLite station is missing when its database file is: the data directory is missing, or holds
no database file (or an empty one). A database without alarmhub's schema, SQLite or PostgreSQL
(``ALARMHUB_DATABASE_URL``), is not a station either: such a command never creates the schema.

Imports stay light, as in :mod:`alarmhub.cli.output`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from alarmhub import files

if TYPE_CHECKING:
    from alarmhub.settings import Settings

CREATING_COMMANDS = frozenset({"serve", "db upgrade"})
PROVISIONING_VERBS = frozenset({"add", "set", "create", "import"})


def command_path(ctx: click.Context) -> str:
    """The command of ``ctx`` as typed after ``alarmhub``: ``pending``, ``dc09 line list``."""
    names: list[str] = []
    while ctx.parent is not None:
        names.append(ctx.info_name or "")
        ctx = ctx.parent
    return " ".join(reversed(names))


def creates(path: str) -> bool:
    """Whether command ``path`` makes a station that is missing."""
    return path in CREATING_COMMANDS or path.rpartition(" ")[2] in PROVISIONING_VERBS


def running_command_creates() -> bool:
    """Whether the command running now makes a missing station (outside a command: no)."""
    ctx = click.get_current_context(silent=True)
    return ctx is not None and creates(command_path(ctx))


def where(settings: Settings) -> str:
    """The station as a user recognises it: the data directory, else the database URL given
    (its password hidden)."""
    from alarmhub.settings import masked_url

    if settings.database_url:
        return masked_url(settings.database_url)
    return files.shown(settings.data_dir)


def no_station(settings: Settings) -> str:
    return f"no station at {where(settings)} (start one with alarmhub serve, or pass --data-dir)"


def database_file_missing(settings: Settings) -> bool:
    """Whether the station's SQLite database file is missing or empty (PostgreSQL: False, its
    schema tells)."""
    from alarmhub.store import sqlite

    path = sqlite.database_file(settings.database)
    if path is None:
        return False
    try:
        return path.stat().st_size == 0
    except (FileNotFoundError, NotADirectoryError):
        return True
