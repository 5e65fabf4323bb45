"""The open/close schedule rules (``core.schedules``) with an injected clock: windows across
midnight, daylight saving changes in the account's zone (America/New_York 2026-03-08 and
2026-11-01, Europe/London), holidays, temporary schedules, grace, and what late to open, late to
close, unscheduled open, early close and their restorals decide."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from alarmhub.core import schedules as rules
from alarmhub.core.alarm_types import EARLY_CLOSE, LATE_TO_CLOSE, LATE_TO_OPEN, UNSCHEDULED_OPEN
from alarmhub.core.schedules import OpenClose, Schedule, Temporary, Verb, Window

NEW_YORK = ZoneInfo("America/New_York")
LONDON = ZoneInfo("Europe/London")
MINUTE = 60 * 1_000_000
MON, TUE, WED, THU, FRI, SAT, SUN = range(7)
WORKDAY = Window(8 * 60, 18 * 60)
NIGHT = Window(22 * 60, 6 * 60)  # across midnight


def at(text: str, zone: ZoneInfo | None = NEW_YORK, fold: int = 0) -> int:
    """A local wall time as microseconds UTC (``2026-03-02 08:00``)."""
    moment = datetime.fromisoformat(text).replace(tzinfo=zone or UTC, fold=fold)
    return int(moment.timestamp()) * 1_000_000


def weekdays(window: Window, **kw: object) -> Schedule:
    return Schedule(
        zone=kw.pop("zone", NEW_YORK),  # type: ignore[arg-type]
        weekly={d: [window] for d in (MON, TUE, WED, THU, FRI)},
        **kw,  # type: ignore[arg-type]
    )


def verdicts(
    schedule: Schedule,
    after: int,
    now: int,
    events: Sequence[OpenClose] = (),
    lto_open: bool = False,
    ltc_open: bool = False,
) -> list[tuple[str, str, int, str]]:
    found = rules.judge(schedule, "", after, now, events, lto_open, ltc_open)
    return [(v.verb.value, v.kind.type, v.at_us, v.text) for v in found]


# parsing -------------------------------------------------------------------------------------


def test_days_single_ranges_wrapping_ranges_and_lists() -> None:
    assert rules.parse_days("mon") == [MON]
    assert rules.parse_days("mon-fri") == [MON, TUE, WED, THU, FRI]
    assert rules.parse_days("fri-mon") == [MON, FRI, SAT, SUN]
    assert rules.parse_days("Mon,wed,sat-sun") == [MON, WED, SAT, SUN]


@pytest.mark.parametrize("text", ["", "monday", "mon-", "mon-xyz", "1", "mon;tue"])
def test_bad_days_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"mon\.\.sun"):
        rules.parse_days(text)


def test_times_and_dates() -> None:
    assert rules.parse_time("08:00") == 480
    assert rules.parse_time("8:05") == 485
    assert rules.parse_time("23:59") == 1439
    for bad in ("24:00", "08:60", "0800", "8", "x"):
        with pytest.raises(ValueError, match="HH:MM"):
            rules.parse_time(bad)
    assert rules.parse_date("2026-12-25") == date(2026, 12, 25)
    for bad in ("2026-13-01", "25/12/2026", "2026-1-5"):
        with pytest.raises(ValueError, match="YYYY-MM-DD"):
            rules.parse_date(bad)


def test_the_open_close_codes_are_the_dc05_classes() -> None:
    assert rules.is_open_close("E401") and rules.is_open_close("R409")
    assert rules.is_open_close("E441") and rules.is_open_close("R442")
    assert rules.is_open_close("E450") and rules.is_open_close("R459")
    for code in ("E400", "E410", "E440", "E443", "E449", "E460", "P401", "E130"):
        assert not rules.is_open_close(code), code


# windows -------------------------------------------------------------------------------------


def test_a_window_across_midnight_belongs_to_the_day_it_opens() -> None:
    schedule = Schedule(zone=NEW_YORK, weekly={FRI: [NIGHT]})
    [friday] = rules.day_windows(schedule, date(2026, 3, 6))
    assert (friday.open_us, friday.close_us) == (at("2026-03-06 22:00"), at("2026-03-07 06:00"))
    assert rules.day_windows(schedule, date(2026, 3, 7)) == []  # Saturday has none of its own
    # a closing at 05:00 Saturday is within Friday's window; an opening at 23:00 is scheduled
    assert not rules.unscheduled(schedule, at("2026-03-06 23:00"))
    assert not rules.unscheduled(schedule, at("2026-03-07 05:59"))
    assert rules.unscheduled(schedule, at("2026-03-07 06:01"))


def test_spring_forward_moves_a_time_in_the_gap_forward_and_shortens_the_night() -> None:
    """2026-03-08 02:00 EST becomes 03:00 EDT in New York."""
    schedule = Schedule(zone=NEW_YORK, weekly={SAT: [NIGHT], SUN: [Window(150, 600)]})
    [night] = rules.day_windows(schedule, date(2026, 3, 7))
    assert night.open_us == at("2026-03-07 22:00")  # EST, UTC-5
    assert night.close_us == at("2026-03-08 06:00")  # EDT, UTC-4
    assert night.close_us - night.open_us == 7 * 60 * MINUTE  # an hour shorter
    [in_gap] = rules.day_windows(schedule, date(2026, 3, 8))
    assert datetime.fromtimestamp(in_gap.open_us / 1e6, NEW_YORK).strftime("%H:%M") == "03:30"


def test_fall_back_takes_the_first_of_an_ambiguous_time_and_lengthens_the_night() -> None:
    """2026-11-01 02:00 EDT becomes 01:00 EST: 01:30 happens twice."""
    schedule = Schedule(zone=NEW_YORK, weekly={SAT: [NIGHT], SUN: [Window(90, 600)]})
    [night] = rules.day_windows(schedule, date(2026, 10, 31))
    assert night.close_us - night.open_us == 9 * 60 * MINUTE  # an hour longer
    [ambiguous] = rules.day_windows(schedule, date(2026, 11, 1))
    assert ambiguous.open_us == at("2026-11-01 01:30", fold=0)
    assert ambiguous.open_us == at("2026-11-01 05:30", zone=None)  # EDT, UTC-4: the first


def test_late_to_close_follows_the_local_clock_across_a_dst_change_in_london() -> None:
    """Europe/London goes to BST on 2026-03-29: 18:00 local is 18:00 UTC on Friday the 27th and
    17:00 UTC on Monday the 30th."""
    schedule = weekdays(WORKDAY, zone=LONDON, late_to_open=False)
    friday = verdicts(schedule, at("2026-03-27 12:00", LONDON), at("2026-03-27 18:00", LONDON))
    assert friday == [("raise", "LTC", at("2026-03-27 18:00", None), "LATE TO CLOSE 18:00")]
    monday = verdicts(schedule, at("2026-03-30 12:00", LONDON), at("2026-03-30 18:00", LONDON))
    assert monday == [("raise", "LTC", at("2026-03-30 17:00", None), "LATE TO CLOSE 18:00")]


def test_holidays_and_temporary_schedules() -> None:
    christmas = date(2026, 12, 25)  # a Friday
    schedule = weekdays(
        WORKDAY,
        holidays=frozenset({christmas}),
        temporary=(
            Temporary(date(2026, 12, 24), date(2026, 12, 24), Window(8 * 60, 12 * 60)),
            Temporary(date(2026, 12, 24), date(2026, 12, 24), Window(13 * 60, 15 * 60)),
            Temporary(date(2026, 12, 28), date(2026, 12, 31), None),  # closed
            Temporary(date(2026, 12, 26), date(2026, 12, 26), Window(9 * 60, 11 * 60)),  # a Sat
        ),
    )
    assert rules.windows_of(schedule, christmas) == []
    assert rules.windows_of(schedule, date(2026, 12, 24)) == [
        Window(480, 720),
        Window(780, 900),
    ]
    assert rules.windows_of(schedule, date(2026, 12, 26)) == [Window(540, 660)]
    assert rules.windows_of(schedule, date(2026, 12, 29)) == []
    assert rules.windows_of(schedule, date(2027, 1, 4)) == [WORKDAY]  # the weekly windows again
    # a holiday wins over a temporary schedule covering it
    both = Schedule(
        zone=NEW_YORK,
        holidays=frozenset({christmas}),
        temporary=(Temporary(christmas, christmas, WORKDAY),),
    )
    assert rules.windows_of(both, christmas) == []


def test_on_a_holiday_nothing_is_late_and_any_opening_is_unscheduled() -> None:
    schedule = weekdays(WORKDAY, holidays=frozenset({date(2026, 12, 25)}))
    day = verdicts(schedule, at("2026-12-25 00:00"), at("2026-12-25 23:59"))
    assert day == []
    opening = OpenClose(at("2026-12-25 09:00"), True, "003")
    found = verdicts(schedule, at("2026-12-25 00:00"), at("2026-12-25 09:01"), [opening])
    assert found == [("raise", "UNOPN", opening.at_us, "UNSCHEDULED OPEN USER 003")]


# due moments and grace -----------------------------------------------------------------------


def test_due_moments_are_open_and_close_plus_grace_for_the_checks_that_are_on() -> None:
    schedule = weekdays(WORKDAY, grace_min=15)
    found = rules.dues(schedule, at("2026-03-02 00:00"), at("2026-03-02 23:59"))
    assert [(d.check.value, d.at_us) for d in found] == [
        ("LTO", at("2026-03-02 08:15")),
        ("LTC", at("2026-03-02 18:15")),
    ]
    only_close = weekdays(WORKDAY, late_to_open=False)
    assert rules.next_due(only_close, at("2026-03-02 09:00")) == at("2026-03-02 18:00")
    # after Friday's close the next is Monday's open
    assert rules.next_due(schedule, at("2026-03-06 18:30")) == at("2026-03-09 08:15")
    assert rules.next_due(Schedule(zone=NEW_YORK), at("2026-03-06 18:30")) is None


def test_grace_delays_late_to_close_and_widens_the_window_for_an_opening() -> None:
    schedule = weekdays(WORKDAY, grace_min=10, late_to_open=False)
    assert verdicts(schedule, at("2026-03-02 12:00"), at("2026-03-02 18:09")) == []
    assert [v[1] for v in verdicts(schedule, at("2026-03-02 12:00"), at("2026-03-02 18:10"))] == [
        "LTC"
    ]
    assert not rules.unscheduled(schedule, at("2026-03-02 07:50"))
    assert rules.unscheduled(schedule, at("2026-03-02 07:49"))


# late to open, late to close and their restorals -----------------------------------------------


def test_late_to_open_unless_the_last_event_by_then_is_an_opening() -> None:
    schedule = weekdays(WORKDAY, late_to_close=False, grace_min=10)
    start, due = at("2026-03-02 00:00"), at("2026-03-02 08:10")
    assert verdicts(schedule, start, due) == [("raise", "LTO", due, "LATE TO OPEN 08:00")]
    opened = [OpenClose(at("2026-03-02 07:55"), True, "001")]
    assert verdicts(schedule, start, due, opened) == []
    reclosed = [*opened, OpenClose(at("2026-03-02 07:58"), False, "001")]
    assert [v[1] for v in verdicts(schedule, start, due, reclosed)] == ["LTO"]
    at_due = [OpenClose(due, True, "001")]  # an event at the due moment counts before it
    assert verdicts(schedule, start, due, at_due) == []
    yesterday = [OpenClose(at("2026-03-01 09:00"), True, "001")]  # still open since Sunday
    assert verdicts(schedule, start, due, yesterday) == []


def test_late_to_close_is_judged_whether_or_not_the_account_opened() -> None:
    schedule = weekdays(WORKDAY, late_to_open=False)
    start, due = at("2026-03-02 00:00"), at("2026-03-02 18:00")
    assert [v[1] for v in verdicts(schedule, start, due)] == ["LTC"]  # no event all day
    closed = [OpenClose(at("2026-03-02 07:00"), False, "001")]  # before the window: not it
    assert [v[1] for v in verdicts(schedule, start, due, closed)] == ["LTC"]
    day = [OpenClose(at("2026-03-02 08:00"), True), OpenClose(at("2026-03-02 17:50"), False)]
    assert verdicts(schedule, start, due, day) == []
    reopened = [*day, OpenClose(at("2026-03-02 17:55"), True)]
    assert [v[1] for v in verdicts(schedule, start, due, reopened)] == ["LTC"]


def test_a_late_alarm_is_restored_by_the_closing_or_opening_that_follows() -> None:
    schedule = weekdays(WORKDAY)
    closing = OpenClose(at("2026-03-02 18:30"), False, "004")
    found = verdicts(schedule, at("2026-03-02 12:00"), at("2026-03-02 19:00"), [closing])
    assert found == [
        ("raise", "LTC", at("2026-03-02 18:00"), "LATE TO CLOSE 18:00"),
        ("restore", "LTC", closing.at_us, ""),
    ]
    # an alarm raised by an earlier pass (still open) is restored by the next opening
    opening = OpenClose(at("2026-03-03 08:20"), True, "004")
    later = verdicts(
        schedule, at("2026-03-03 08:00"), at("2026-03-03 08:30"), [opening], lto_open=True
    )
    assert later == [("restore", "LTO", opening.at_us, "")]
    # an opening does not restore a late to close, nor a closing a late to open
    early_open = OpenClose(at("2026-03-03 07:00"), True)
    none = verdicts(
        schedule, at("2026-03-03 06:00"), at("2026-03-03 07:30"), [early_open], ltc_open=True
    )
    assert all(v[0] != "restore" for v in none)


def test_unscheduled_open_and_early_close_are_raised_at_the_event() -> None:
    schedule = weekdays(WORKDAY, early_close=True, early_grace_min=30)
    night_open = OpenClose(at("2026-03-02 21:00"), True, "007")
    early = OpenClose(at("2026-03-02 17:00"), False, "", opr="001")
    on_time = OpenClose(at("2026-03-02 17:45"), False, "002")
    found = rules.judge(
        schedule, "02", at("2026-03-02 16:00"), at("2026-03-02 21:00"),
        [early, on_time, night_open], False, False,
    )  # fmt: skip
    raised = [(v.verb, v.kind, v.at_us, v.text) for v in found]
    assert raised == [
        (Verb.RAISE, EARLY_CLOSE, early.at_us, "EARLY CLOSE BY OPERATOR 001 AREA 02"),
        (Verb.RAISE, UNSCHEDULED_OPEN, night_open.at_us, "UNSCHEDULED OPEN USER 007 AREA 02"),
    ]
    off = weekdays(WORKDAY)  # early close is off by default
    assert rules.early(off, early.at_us) is None


def test_due_moments_older_than_a_day_are_skipped() -> None:
    schedule = weekdays(WORKDAY, late_to_open=False)
    after, now = at("2026-03-02 12:00"), at("2026-03-05 12:00")  # down Monday noon to Thursday
    found = verdicts(schedule, after, now)
    assert [v[2] for v in found] == [at("2026-03-04 18:00")]  # Wednesday's only
    assert rules.skipped_dues(schedule, after, now) == 2  # Monday's and Tuesday's
    assert LATE_TO_OPEN.name in rules.late_text(LATE_TO_OPEN, _window(), "")
    assert rules.late_text(LATE_TO_CLOSE, _window(), "3") == "LATE TO CLOSE 18:00 AREA 3"


def _window() -> rules.DayWindow:
    return rules.DayWindow(date(2026, 3, 2), WORKDAY, 0, 0)


def test_start_of_day_is_local() -> None:
    now = at("2026-03-02 01:30")  # 06:30 UTC
    assert rules.start_of_day_us(now, NEW_YORK) == at("2026-03-02 00:00")
    assert rules.start_of_day_us(now, UTC) == at("2026-03-02 00:00", None)
    assert rules.local_date(now - 2 * 60 * MINUTE, NEW_YORK) == date(2026, 3, 1)
    assert timedelta(microseconds=rules.LOOK_BACK_US) == timedelta(days=1)


@pytest.mark.parametrize("name", ["Boxing\x00Day", "\x1b[2J", "a\x7f", "b\x85", "c\x9b", "d\n"])
def test_a_holiday_name_with_a_control_character_is_refused(name: str) -> None:
    assert rules.holiday_name_problem(name) == "a holiday's name must not hold control characters"


def test_a_holiday_name_is_at_most_60_characters_of_text() -> None:
    assert rules.holiday_name_problem("Noël – Christmas Day") is None
    assert rules.holiday_name_problem("x" * 61) == "a holiday's name is at most 60 characters"
