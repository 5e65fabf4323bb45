"""Signal statistics: how many signals arrived per minute, found without reading all of them."""

from __future__ import annotations

from sqlalchemy import Connection, bindparam, func, select

from alarmhub.core import units
from alarmhub.store import schema

SIGNAL = schema.signal.c


def first_signal_since(conn: Connection, start_us: int) -> int | None:
    """The incident number of the first signal received at or after ``start_us``, found by
    bisecting incident numbers (stored in receive order) with primary-key lookups, so that
    counting recent signals reads only them, not the whole table. None when there is none."""
    low, high = conn.execute(
        select(func.min(SIGNAL.incident_number), func.max(SIGNAL.incident_number))
    ).one()
    if high is None:
        return None
    at = select(SIGNAL.received_us).where(SIGNAL.incident_number >= bindparam("n"))
    at = at.order_by(SIGNAL.incident_number).limit(1)
    if conn.execute(at, {"n": high}).scalar_one() < start_us:
        return None
    while low < high:  # the smallest number whose next stored signal is recent enough
        middle = (low + high) // 2
        if conn.execute(at, {"n": middle}).scalar_one() >= start_us:
            high = middle
        else:
            low = middle + 1
    return int(low)


def signals_per_minute(conn: Connection, now_us: int, minutes: int = 60) -> list[int]:
    """Signals received in each of the last ``minutes`` minutes, oldest first."""
    start = now_us - units.minutes_us(minutes)
    counts = [0] * minutes
    first = first_signal_since(conn, start)
    if first is None:
        return counts
    bucket = (SIGNAL.received_us - start) / units.US_PER_MINUTE
    rows = conn.execute(
        select(func.floor(bucket).label("m"), func.count())
        .where(
            SIGNAL.incident_number >= first,
            SIGNAL.received_us >= start,
            SIGNAL.received_us < now_us,
        )
        .group_by("m")
    ).all()
    for minute, count in rows:
        index = int(minute)
        if 0 <= index < minutes:
            counts[index] = int(count)
    return counts
