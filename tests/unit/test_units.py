"""The time units of ``core.units``: every duration in microseconds."""

from __future__ import annotations

from alarmhub.core import units


def test_conversions() -> None:
    assert units.seconds_us(1) == 1_000_000
    assert units.seconds_us(0.25) == 250_000
    assert units.minutes_us(15) == 900_000_000
    assert units.hours_us(12) == 43_200_000_000
    assert units.US_PER_DAY == 86_400_000_000
    assert units.to_seconds(1_500_000) == 1.5
