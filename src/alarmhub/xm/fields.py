"""How the query interface writes values: account padding, dates, times, durations, NTD.

Every field name and format of the XM answers lives here and in ``methods.py``.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo

from alarmhub.core import units
from alarmhub.core.operations import duration as duration
from alarmhub.ntd import ntd_of as ntd_of
from alarmhub.ntd import to_ntd

ACCOUNT_WIDTH = 9


def account(number: str) -> str:
    """ACCOUNT_NUMBER: right-justified, space-padded to 9 characters."""
    return number.rjust(ACCOUNT_WIDTH)


def local(unix_us: int, zone: tzinfo) -> datetime:
    return datetime.fromtimestamp(units.to_seconds(unix_us), UTC).astimezone(zone)


def history_date(moment: datetime) -> str:
    """HISTORY_EVENT_DATE of a local time: ``MM/DD/YY HH:MM:SS`` (written out: ``strftime``
    costs more, paid for every record of an XMHIST answer)."""
    m = moment
    return (
        f"{m.month:02d}/{m.day:02d}/{m.year % 100:02d} {m.hour:02d}:{m.minute:02d}:{m.second:02d}"
    )


def pend_date(unix_us: int, zone: tzinfo) -> str:
    """PEND_DATE: ``MM/DD/YYYY``."""
    return local(unix_us, zone).strftime("%m/%d/%Y")


def clock(unix_us: int, zone: tzinfo) -> str:
    """A time of day: ``HH:MM:SS``."""
    return local(unix_us, zone).strftime("%H:%M:%S")


def ntd(unix_us: int, zone: tzinfo) -> str:
    return to_ntd(unix_us, zone)
