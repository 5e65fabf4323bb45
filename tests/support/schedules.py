"""Open/close windows relative to the wall clock, in UTC (the test stations run with
``ALARMHUB_TIMEZONE=UTC``), as ``schedule set`` options: for tests with real nodes, whose
clock cannot be injected."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from alarmhub.core.schedules import DAYS

STATION_ENV = {"ALARMHUB_TIMEZONE": "UTC"}


def window_options(close: datetime, hours_open: int = 1) -> list[str]:
    """``--day D --open HH:MM --close HH:MM`` of a window closing at ``close`` (UTC, to the
    minute), open ``hours_open`` hours before; the day is the one it opens on."""
    opens = close - timedelta(hours=hours_open)
    return [
        "--day", DAYS[opens.weekday()],
        "--open", opens.strftime("%H:%M"),
        "--close", close.strftime("%H:%M"),
    ]  # fmt: skip


def closed_a_minute_ago() -> tuple[list[str], datetime]:
    """A window whose close was a minute ago (its due moment, with no grace, passed).

    A schedule set now is judged from the start of the station's day: in the day's first two
    minutes a close a minute ago would be yesterday's, never judged, so those minutes are waited
    out."""
    now = datetime.now(UTC)
    judged_from = now.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(minutes=2)
    if now < judged_from:
        time.sleep((judged_from - now).total_seconds())
    close = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=1)
    return window_options(close), close


def closing_soon(at_least_s: float = 10.0) -> tuple[list[str], datetime]:
    """A window closing at the next whole minute at least ``at_least_s`` seconds away."""
    now = datetime.now(UTC)
    close = (now + timedelta(seconds=at_least_s + 60)).replace(second=0, microsecond=0)
    return window_options(close), close
