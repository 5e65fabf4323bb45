"""The handling report's arithmetic (``alarmhub.core.reports``): percentiles, spreads of
handling times and a report's window of days in the station's time zone. No database."""

from __future__ import annotations

import statistics
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from alarmhub.core import reports
from alarmhub.core.errors import BadInput

SECOND = 1_000_000


def test_percentile_of_nothing_is_none() -> None:
    assert reports.percentile([], 0.5) is None


def test_percentile_of_one_value_is_that_value() -> None:
    assert reports.percentile([7], 0.5) == 7
    assert reports.percentile([7], 0.9) == 7


def test_median_of_an_even_count_is_the_mean_of_the_middle_two() -> None:
    assert reports.percentile([1, 2, 3, 10], 0.5) == 2.5


def test_p90_interpolates_between_ranks() -> None:
    values = list(range(1, 11))  # 1..10: rank 8.1 of 0..9
    assert reports.percentile(values, 0.9) == pytest.approx(9.1)
    assert reports.percentile(values, 0.0) == 1
    assert reports.percentile(values, 1.0) == 10


@pytest.mark.parametrize("count", [2, 3, 7, 10, 101])
def test_percentiles_agree_with_the_standard_library(count: int) -> None:
    values = sorted((i * 7919) % 1000 for i in range(count))
    deciles = statistics.quantiles(values, n=10, method="inclusive")
    assert reports.percentile(values, 0.9) == pytest.approx(deciles[8])
    assert reports.percentile(values, 0.5) == pytest.approx(statistics.median(values))


def test_percentile_refuses_a_fraction_outside_0_to_1() -> None:
    with pytest.raises(ValueError):
        reports.percentile([1], 1.5)


def test_spread_is_in_seconds_to_a_tenth() -> None:
    spread = reports.spread([30 * SECOND, 10 * SECOND, 20 * SECOND, 40 * SECOND])
    assert spread == reports.Spread(4, 25.0, 37.0)
    assert spread.as_dict() == {"count": 4, "median_s": 25.0, "p90_s": 37.0}
    assert reports.spread([]) == reports.Spread(0, None, None)
    assert reports.spread([1_234_567]).median_s == 1.2


def _us(moment: datetime) -> int:
    return round(moment.timestamp() * SECOND)


def test_day_window_runs_from_midnight_to_the_midnight_after_the_last_day() -> None:
    zone = ZoneInfo("America/New_York")
    start, stop = reports.day_window("2026-03-07", "2026-03-08", zone)
    assert start == _us(datetime(2026, 3, 7, 5, tzinfo=UTC))  # EST, UTC-5
    assert stop == _us(datetime(2026, 3, 9, 4, tzinfo=UTC))  # EDT after the change, UTC-4
    one_day = reports.day_window("2026-03-07", "2026-03-07", zone)
    assert one_day == (start, _us(datetime(2026, 3, 8, 5, tzinfo=UTC)))


@pytest.mark.parametrize(
    ("first", "last", "words"),
    [
        ("2026-3-7", "2026-03-08", "YYYY-MM-DD"),
        ("2026-03-07", "tomorrow", "YYYY-MM-DD"),
        ("2026-02-30", "2026-03-08", "YYYY-MM-DD"),
        ("2026-03-08", "2026-03-07", "before it starts"),
        ("2025-01-01", "2026-01-02", "at most"),
    ],
)
def test_day_window_refuses(first: str, last: str, words: str) -> None:
    with pytest.raises(BadInput) as refused:
        reports.day_window(first, last, ZoneInfo("UTC"))
    assert words in refused.value.message


@pytest.mark.parametrize("cell", ["=1+1", "+1", "-2", "@SUM(A1)", "\tx", "\rx"])
def test_a_csv_cell_a_spreadsheet_would_run_gets_a_quote(cell: str) -> None:
    assert reports.csv_cell(cell) == "'" + cell


@pytest.mark.parametrize("cell", ["Oak School", "", "a=b", -2, 3.5, None])
def test_other_csv_cells_stay_as_they_are(cell: object) -> None:
    assert reports.csv_cell(cell) == cell
