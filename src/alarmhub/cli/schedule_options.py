"""The options of ``alarmhub schedule`` and ``alarmhub holiday``: each checked where it is read
(a bad one a usage error, exit 2), and what their commands share (the station's time zone, a
write transaction)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from alarmhub.cli.output import load_settings, open_store
from alarmhub.core import schedules as rules

if TYPE_CHECKING:
    from sqlalchemy import Connection

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


def parsed(parse: Callable[[str], T]) -> Callable[[click.Context, click.Parameter, Any], Any]:
    def callback(_ctx: click.Context, _param: click.Parameter, value: str | None) -> T | None:
        if value is None:
            return None
        try:
            return parse(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None

    return callback


def check_zone(name: str) -> str:
    """An IANA zone name (``Europe/London``); '' for the station's."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    if not name:
        return ""
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"{name!r} is not an IANA time zone (e.g. America/New_York)") from None
    return name


def check_grace(text: str) -> int:
    minutes = int(text) if text.strip().isdigit() else -1
    problem = rules.grace_problem(minutes)
    if problem:
        raise ValueError(f"{text!r}: {problem}")
    return minutes


def area_option(func: F) -> F:
    return click.option(
        "--area", default="", callback=parsed(rules.parse_area), metavar="AREA",
        help="One area's schedule (default: the whole account).",
    )(func)  # fmt: skip


def range_options(func: F) -> F:
    func = click.option(
        "--to", "last", callback=parsed(rules.parse_date), metavar="DATE",
        help="Last date of a temporary schedule (YYYY-MM-DD).",
    )(func)  # fmt: skip
    return click.option(
        "--from", "first", callback=parsed(rules.parse_date), metavar="DATE",
        help="First date of a temporary schedule (YYYY-MM-DD).",
    )(func)  # fmt: skip


def station_zone(data_dir: Path | None) -> Any:
    return load_settings(data_dir).zone


def write(data_dir: Path | None, work: Callable[[Connection], T]) -> T:
    from functools import partial

    from alarmhub.store import operations

    return operations.run(open_store(data_dir), partial(operations.on_queues, work))
