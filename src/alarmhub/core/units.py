"""Time units: alarmhub keeps every moment and duration in integer microseconds since the UNIX
epoch (``clock.now_us``); these name the conversions so that no module spells ``1_000_000``."""

from __future__ import annotations

from datetime import UTC, datetime

US_PER_SECOND = 1_000_000
US_PER_MINUTE = 60 * US_PER_SECOND
US_PER_HOUR = 60 * US_PER_MINUTE
US_PER_DAY = 24 * US_PER_HOUR


def seconds_us(seconds: float) -> int:
    """``seconds`` in microseconds."""
    return int(seconds * US_PER_SECOND)


def minutes_us(minutes: float) -> int:
    return int(minutes * US_PER_MINUTE)


def hours_us(hours: float) -> int:
    return int(hours * US_PER_HOUR)


def to_seconds(us: float) -> float:
    """Microseconds as (fractional) seconds, for ``datetime.fromtimestamp`` and ``time``."""
    return us / US_PER_SECOND


def iso_utc(us: int) -> str:
    """A moment as ISO 8601 in UTC, to the second: ``2026-11-23T14:05:00Z``."""
    return datetime.fromtimestamp(to_seconds(us), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
