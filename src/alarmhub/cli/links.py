"""What the commands of receiver links (``receiver``) and automation outputs (``output``)
share: a transaction on the station's database, a whole number and a HOST:PORT as given on
the command line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from alarmhub.cli.output import CommandError, open_store

if TYPE_CHECKING:
    from sqlalchemy import Connection

T = TypeVar("T")


def write(data_dir: Path | None, work: Callable[[Connection], T]) -> T:
    """``work`` in a write transaction of the station's database."""
    from alarmhub.store.engine import write_transaction

    with write_transaction(open_store(data_dir)) as conn:
        return work(conn)


def read(data_dir: Path | None, work: Callable[[Connection], T]) -> T:
    """``work`` on a connection to the station's database."""
    with open_store(data_dir).connect() as conn:
        return work(conn)


def whole(value: str | None, option: str, default: int) -> int:
    """A whole number given on the command line (``default`` when not given)."""
    if value is None:
        return default
    if not (value.isascii() and value.isdigit() and len(value) <= 9):
        raise CommandError(f"{option} must be a whole number, not {value!r}")
    return int(value)


def host_port(value: str, option: str) -> str:
    """HOST:PORT as ``alarmhub serve`` reads it, written back in one form (``[v6]:PORT``)."""
    from alarmhub.node.server import parse_address

    try:
        host, port = parse_address(value)
    except ValueError as exc:
        raise CommandError(f"{option}: {exc}") from None
    if port == 0:
        raise CommandError(f"{option}: {value!r} needs a port from 1 to 65535")
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
