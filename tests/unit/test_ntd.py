"""NTD conversions: the three check values of the contract and the round trip."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from alarmhub.ntd import from_ntd, ntd_of, to_ntd

UTC = ZoneInfo("UTC")


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        (datetime(2024, 3, 25, 16, 45, 6), "738972.69799"),
        (datetime(2024, 3, 26, 0, 0, 2), "738973.00002"),
        (datetime(1970, 1, 1, 0, 0, 0), "719165.00000"),
    ],
)
def test_check_values(moment: datetime, expected: str) -> None:
    assert ntd_of(moment) == expected
    assert to_ntd(moment.replace(tzinfo=UTC).timestamp() * 1_000_000, UTC) == expected


def test_station_time_zone_is_used() -> None:
    new_york = ZoneInfo("America/New_York")
    unix_us = datetime(2024, 3, 25, 20, 45, 6, tzinfo=UTC).timestamp() * 1_000_000  # 16:45 EDT
    assert to_ntd(unix_us, new_york) == "738972.69799"
    assert to_ntd(unix_us, UTC) == "738972.86465"


@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin", "America/Los_Angeles"])
def test_round_trip_to_the_second(zone: str) -> None:
    tz = ZoneInfo(zone)
    for unix_s in (0, 86399, 1_711_385_106, 1_795_335_384):
        back = from_ntd(to_ntd(unix_s * 1_000_000, tz), tz)
        assert abs(back - unix_s * 1_000_000) <= 432_000  # half of 0.00001 day


@pytest.mark.parametrize("bad", ["", "abc", "738972.697991", "-1", "7389 72"])
def test_malformed_ntd_is_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        from_ntd(bad, UTC)
