"""On test's rules (``alarmhub.core.on_test``, decisions §9): what a test matches, what a request
may ask for, the history texts, which signals of a test were restored and the TESTN rule (the
zones a test leaves open). No database."""

from __future__ import annotations

import pytest

from alarmhub.core import on_test
from alarmhub.core.alarm_types import DEFAULTS
from alarmhub.core.errors import ActionRefused
from alarmhub.core.on_test import Test, TestSignal

MINUTE = 60_000_000
T0 = 1_800_000_000_000_000


def a_test(zones: tuple[str, ...] = (), types: tuple[str, ...] = ()) -> Test:
    return Test("700012", frozenset(zones), frozenset(types), T0, T0 + 60 * MINUTE)


@pytest.mark.parametrize(
    ("zones", "types", "zone", "alarm_type", "expected"),
    [
        ((), (), "001", "BURG", True),  # nothing named: the whole account
        (("003", "005"), (), "005", "FIRE", True),
        (("003", "005"), (), "004", "BURG", False),
        ((), ("BURG",), "009", "BURG", True),
        ((), ("BURG",), "009", "FIRE", False),
        (("003",), ("BURG",), "003", "BURG", True),  # both named: both must match
        (("003",), ("BURG",), "003", "FIRE", False),
        (("003",), ("BURG",), "004", "BURG", False),
    ],
)
def test_a_signal_is_on_test_when_its_zone_and_type_are(
    zones: tuple[str, ...], types: tuple[str, ...], zone: str, alarm_type: str, expected: bool
) -> None:
    assert on_test.matches(a_test(zones, types), zone, alarm_type) is expected


def test_a_test_covers_its_time_only() -> None:
    test = a_test()
    assert [test.covers(t) for t in (T0 - 1, T0, T0 + 60 * MINUTE - 1, T0 + 60 * MINUTE)] == [
        False,
        True,
        True,
        False,
    ]


def refusal(work: object, *args: object) -> ActionRefused:
    with pytest.raises(ActionRefused) as caught:
        work(*args)  # type: ignore[operator]
    assert caught.value.code == on_test.REFUSED
    return caught.value


def test_minutes_are_one_to_a_week() -> None:
    assert on_test.check_minutes(1) == 1
    assert on_test.check_minutes(10080) == 10080
    for wrong in (0, -5, 10081, True, "60", 1.5):
        refusal(on_test.check_minutes, wrong)
    assert "10080" in refusal(on_test.check_minutes, 20000).message


def test_zones_are_three_digits_each_once() -> None:
    assert on_test.check_zones(["5", " 003", "005", "999"]) == ("003", "005", "999")
    assert on_test.check_zones([]) == ()
    for wrong in ("1000", "", "a1", "-1", "٣", "1 2"):
        refusal(on_test.check_zones, [wrong])
    refusal(on_test.check_zones, [str(n) for n in range(on_test.ZONES_MAX + 1)])


def test_types_follow_the_type_pattern() -> None:
    assert on_test.check_types(["burg", "FIRE", "BURG"]) == ("BURG", "FIRE")
    for wrong in ("", "TOOLONG", "BU-RG"):
        refusal(on_test.check_types, [wrong])
    refusal(on_test.check_types, [f"T{n}" for n in range(on_test.TYPES_MAX + 1)])


def test_types_on_test_are_types_the_station_has() -> None:
    on_test.check_station_has(("BURG", "FIRE"), DEFAULTS.values())
    on_test.check_station_has((), DEFAULTS.values())
    unknown = refusal(on_test.check_station_has, ("BURG", "BRUG"), DEFAULTS.values())
    assert (unknown.message, unknown.status) == ("no alarm TYPE BRUG at this station", 422)
    renamed = [t for t in DEFAULTS.values() if t.type != "BURG"]  # a station that renamed BURG
    refusal(on_test.check_station_has, ("BURG",), renamed)


def test_by_is_required_and_reason_is_short() -> None:
    assert on_test.check_by("  J Smith ") == "J Smith"
    for wrong in ("", "   ", "x" * 41, "tab\there"):
        refusal(on_test.check_by, wrong)
    assert on_test.check_reason(" service ") == "service"
    assert on_test.check_reason("") == ""
    for wrong in ("x" * 201, "line\nbreak"):
        refusal(on_test.check_reason, wrong)


def test_the_history_texts() -> None:
    text = on_test.start_text(60, "J Smith", ("003", "005"), (), "service")
    assert text == "ON TEST 60 MIN BY J SMITH ZONES 003 005: SERVICE"
    assert on_test.start_text(5, "Bo", (), ("BURG",), "") == "ON TEST 5 MIN BY BO TYPES BURG"
    assert on_test.return_text(None) == "RETURN FROM TEST"
    assert on_test.return_text("Ann") == "RETURN FROM TEST BY ANN"
    assert on_test.not_restored_text("003", None) == "TEST END NOT RESTORED ZONE 003"
    assert on_test.not_restored_text("003", "Back door") == (
        "TEST END NOT RESTORED ZONE 003 BACK DOOR"
    )


def test_minutes_left_round_up_and_stop_at_zero() -> None:
    ends = T0 + 10 * MINUTE
    assert on_test.minutes_left(ends, T0) == 10
    assert on_test.minutes_left(ends, T0 + 1) == 10
    assert on_test.minutes_left(ends, T0 + 9 * MINUTE + 1) == 1
    assert on_test.minutes_left(ends, ends) == 0
    assert on_test.minutes_left(ends, ends + MINUTE) == 0


def signals(*rows: tuple[str, str]) -> list[TestSignal]:
    """(code, zone) pairs, area 01, one a second."""
    return [TestSignal(code, "01", zone, T0 + i) for i, (code, zone) in enumerate(rows)]


def expects_restore(code: str) -> bool:
    return DEFAULTS[code].restore_expected


def test_restored_says_which_events_a_later_restoral_closed() -> None:
    test = signals(("E130", "003"), ("E130", "004"), ("R130", "003"), ("E130", "003"))
    assert on_test.restored(test) == [True, False, True, False]
    # a restoral of another code, area or zone closes nothing
    other = [TestSignal("E130", "01", "003", T0), TestSignal("R130", "02", "003", T0 + 1)]
    assert on_test.restored(other) == [False, True]
    assert on_test.restored(signals(("R131", "003"), ("E131", "003"))) == [True, False]


def test_testn_names_the_zones_whose_last_event_has_no_later_restoral() -> None:
    test = signals(
        ("E130", "003"), ("R130", "003"),  # restored
        ("E130", "004"),  # left open
        ("R130", "005"), ("E130", "005"),  # the restoral came first: open
        ("E110", "006"), ("R110", "006"), ("E110", "006"),  # opened again after its restoral
    )  # fmt: skip
    assert on_test.left_open(test, expects_restore) == [("004", "01"), ("005", "01"), ("006", "01")]


def test_testn_ignores_alarm_types_that_expect_no_restore() -> None:
    assert not DEFAULTS["100"].restore_expected  # medical
    assert DEFAULTS["130"].restore_expected
    test = signals(("E100", "007"), ("E130", "008"))
    assert on_test.left_open(test, expects_restore) == [("008", "01")]
    assert on_test.left_open([], expects_restore) == []


def test_testn_names_a_zone_once_whatever_its_codes() -> None:
    test = signals(("E130", "003"), ("E131", "003"))
    assert on_test.left_open(test, expects_restore) == [("003", "01")]
