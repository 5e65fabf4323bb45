"""The arithmetic of the handling report: a report's window of whole days in the station's time
zone, and the median and 90th percentile of handling times. Pure, no I/O: ``store.reports``
reads the alarms and dispatches of the window and summarises them with these.

Percentiles interpolate linearly between the two nearest ranks (the "inclusive" definition of
spreadsheets' PERCENTILE and of ``statistics.quantiles(method="inclusive")``): the median of an
even count is the mean of the two middle values, and a percentile of one value is that value.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo
from typing import Any

from alarmhub.core import units
from alarmhub.core.errors import BadInput

DAYS_MAX = 366
"""A report covers at most this many days."""


def percentile(ordered: Sequence[int], fraction: float) -> float | None:
    """The ``fraction`` (0 to 1) percentile of ``ordered`` (ascending); None when empty."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"fraction {fraction} is not between 0 and 1")
    if not ordered:
        return None
    rank = (len(ordered) - 1) * fraction
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(frozen=True, slots=True)
class Spread:
    """How long something took over many alarms: how many, median and 90th percentile, in
    seconds (None when there were none)."""

    count: int
    median_s: float | None
    p90_s: float | None

    def as_dict(self) -> dict[str, int | float | None]:
        return {"count": self.count, "median_s": self.median_s, "p90_s": self.p90_s}


def spread(durations_us: Iterable[int]) -> Spread:
    """The spread of durations in microseconds, in seconds to a tenth."""
    ordered = sorted(durations_us)
    return Spread(
        len(ordered), _seconds(percentile(ordered, 0.5)), _seconds(percentile(ordered, 0.9))
    )


def _seconds(us: float | None) -> float | None:
    return None if us is None else round(us / units.US_PER_SECOND, 1)


def parse_day(text: str, what: str) -> date:
    """A date given as ``YYYY-MM-DD``."""
    try:
        if len(text) != 10:
            raise ValueError
        return date.fromisoformat(text)
    except ValueError:
        raise BadInput(f"{what} must be a date YYYY-MM-DD, not {text[:20]!r}") from None


def day_window(first: str, last: str, zone: tzinfo) -> tuple[int, int]:
    """The window ``[start_us, stop_us)`` of the days ``first`` to ``last`` (both included,
    ``YYYY-MM-DD``) in the station's time zone ``zone``: from the first day's midnight to the
    midnight after the last day."""
    start_day = parse_day(first, "from")
    last_day = parse_day(last, "to")
    if last_day < start_day:
        raise BadInput(f"the report ends ({last}) before it starts ({first})")
    if (last_day - start_day).days + 1 > DAYS_MAX:
        raise BadInput(f"a report covers at most {DAYS_MAX} days")
    return _midnight(start_day, zone), _midnight(last_day + timedelta(days=1), zone)


def _midnight(day: date, zone: tzinfo) -> int:
    moment = datetime(day.year, day.month, day.day, tzinfo=zone)
    return round(moment.timestamp() * units.US_PER_SECOND)


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""What a spreadsheet takes a cell for a formula by (OWASP's CSV injection list)."""


def csv_cell(value: Any) -> Any:
    """A value as a CSV export writes it: text that a spreadsheet would run as a formula
    (an account's name ``=HYPERLINK(...)``) gets a leading ``'``, so that it shows as text."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value
