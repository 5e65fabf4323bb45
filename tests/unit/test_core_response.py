"""An account's response data: numbers, call lists, HIST_TEXT with descriptions (decisions
section 7), CONTACT_LIST, and passcode checks with the duress code."""

from __future__ import annotations

import pytest

from alarmhub.core import response
from alarmhub.core.response import CallOutcome, PasscodeAnswer

ZONES = {("015", ""): "BACK DOOR", ("015", "02"): "WAREHOUSE DOOR", ("003", "01"): "KITCHEN"}
USERS = {"002": "JOHN SMITH"}


@pytest.mark.parametrize("value", ["0", "15", "015", "999"])
def test_zone_and_user_numbers_are_up_to_three_digits(value: str) -> None:
    assert response.number_problem(value) is None
    assert len(response.three_digits(value)) == 3


@pytest.mark.parametrize("value", ["", "1000", "0015", "1a", "-1", "١٢", " 15"])
def test_anything_else_is_refused_with_its_reason(value: str) -> None:
    assert response.number_problem(value, "user") == "user must be a number from 000 to 999"


def test_a_zone_description_names_the_zone_after_the_text() -> None:
    text = response.described("BURGLARY ZONE 015", "Z", "015", "01", ZONES, USERS)
    assert text == "BURGLARY ZONE 015 BACK DOOR"


def test_an_area_s_own_description_wins_over_the_one_for_every_area() -> None:
    text = response.described("BURGLARY ZONE 015", "Z", "015", "02", ZONES, USERS)
    assert text == "BURGLARY ZONE 015 WAREHOUSE DOOR"
    assert response.described("FIRE ZONE 003", "Z", "003", "02", ZONES, USERS) == "FIRE ZONE 003"


def test_a_user_s_name_follows_an_opening_or_closing() -> None:
    text = response.described("O/C BY USER 002", "U", "002", "01", ZONES, USERS)
    assert text == "O/C BY USER 002 JOHN SMITH"
    assert response.described("O/C BY USER 007", "U", "007", "01", ZONES, USERS) == (
        "O/C BY USER 007"
    )


def test_no_second_field_adds_nothing() -> None:
    assert response.described("AC LOSS", "N", "015", "", ZONES, USERS) == "AC LOSS"


def test_contact_list_is_the_type_s_list_when_the_account_has_it_non_empty() -> None:
    assert response.contact_list(None, {"PRIMARY": 2}) == "PRIMARY"
    assert response.contact_list("FIRE", {"PRIMARY": 2, "FIRE": 1}) == "FIRE"
    assert response.contact_list("FIRE", {"PRIMARY": 2, "FIRE": 0}) is None
    assert response.contact_list(None, {}) is None


def test_call_list_names_are_kept_upper_case_and_short() -> None:
    assert response.call_list_name(" openclose ") == "OPENCLOSE"
    assert response.call_list_problem("OPEN_CLOSE-2") is None
    for bad in ("", "A" * 17, "FIRE LIST", "FEUER✓"):
        assert response.call_list_problem(bad) is not None


def test_the_call_outcomes_are_those_of_the_console_api() -> None:
    assert [o.value for o in CallOutcome] == [
        "answered",
        "no-answer",
        "busy",
        "left-message",
        "wrong-number",
    ]


def _matches(hashed: str, given: str) -> bool:
    return hashed == f"hash:{given}"


def test_a_contact_s_passcode_is_verified_and_a_wrong_one_is_not() -> None:
    hashes = ["hash:1234", "hash:9876"]
    assert response.check_passcode("9876", hashes, "hash:0000", _matches) == PasscodeAnswer(
        verified=True, duress=False
    )
    assert response.check_passcode("5555", hashes, "hash:0000", _matches) == PasscodeAnswer(
        verified=False, duress=False
    )
    assert not response.check_passcode("", ["hash:"], None, _matches).verified


def test_the_duress_code_answers_verified_like_a_good_one() -> None:
    answer = response.check_passcode("0000", ["hash:1234"], "hash:0000", _matches)
    assert answer == PasscodeAnswer(verified=True, duress=True)


def test_calling_order_is_primary_then_the_other_lists_then_none() -> None:
    places = {
        "on no list": [],
        "night 1": [("NIGHT", 1)],
        "fire 1, night 2": [("NIGHT", 2), ("FIRE", 1)],
        "primary 2": [("PRIMARY", 2)],
        "fire 2, primary 1": [("FIRE", 2), ("PRIMARY", 1)],
        "fire 3": [("FIRE", 3)],
    }
    ranked = sorted(places, key=lambda name: response.calling_order(places[name]))
    assert ranked == [
        "fire 2, primary 1", "primary 2", "fire 1, night 2", "fire 3", "night 1", "on no list",
    ]  # fmt: skip
    assert sorted(["NIGHT", "PRIMARY", "FIRE"], key=response.call_list_rank) == [
        "PRIMARY", "FIRE", "NIGHT",
    ]  # fmt: skip


def test_an_alarm_is_locked_from_its_fifth_wrong_passcode() -> None:
    assert [response.passcode_locked(n) for n in range(7)] == [False] * 5 + [True] * 2
    assert response.PasscodeAnswer(verified=False, duress=False).record == response.NOT_VERIFIED
