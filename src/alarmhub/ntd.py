"""NTD time: the service's decimal day number, ``toordinal(date) + 2 + seconds_of_day / 86400``
with exactly 5 decimals, in the station's time zone; both directions.

    >>> from zoneinfo import ZoneInfo
    >>> to_ntd(datetime(2024, 3, 25, 16, 45, 6, tzinfo=UTC).timestamp() * 1e6, ZoneInfo("UTC"))
    '738972.69799'
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, tzinfo
from decimal import Decimal

from alarmhub.core import units

ORDINAL_OFFSET = 2
SECONDS_PER_DAY = 86400
DAY_US = units.US_PER_DAY
NTD_PATTERN = re.compile(r"\d{1,7}(\.\d{1,5})?")


def ntd_of(moment: datetime) -> str:
    """The NTD of an aware or naive local ``moment`` (naive: already in the station's zone).

    Integer arithmetic, rounding half up: exact where floating point would round ``.5`` cases
    either way.
    """
    micros = units.seconds_us(moment.hour * 3600 + moment.minute * 60 + moment.second)
    micros += moment.microsecond
    fraction = (micros * 100_000 * 2 + DAY_US) // (2 * DAY_US)  # round(micros / DAY_US, 5)
    days = moment.toordinal() + ORDINAL_OFFSET + fraction // 100_000
    return f"{days}.{fraction % 100_000:05d}"


def to_ntd(unix_us: float, zone: tzinfo) -> str:
    """The NTD of a UNIX time in microseconds, in the station's time zone ``zone``."""
    return ntd_of(datetime.fromtimestamp(units.to_seconds(unix_us), UTC).astimezone(zone))


def from_ntd(ntd: str, zone: tzinfo) -> int:
    """The UNIX time in microseconds of an NTD in the station's time zone (to the second, as
    5 decimals of a day allow: 0.864 s)."""
    if not NTD_PATTERN.fullmatch(ntd):
        raise ValueError(f"{ntd!r} is not an NTD value")
    value = Decimal(ntd)
    days = int(value)
    seconds = round((value - days) * SECONDS_PER_DAY)
    local = datetime.fromordinal(days - ORDINAL_OFFSET) + timedelta(seconds=seconds)
    return units.seconds_us(local.replace(tzinfo=zone).timestamp())
