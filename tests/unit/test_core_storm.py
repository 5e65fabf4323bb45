"""Storm mode's rules (``alarmhub.core.storm``): where a new alarm goes, which TYPEs storm mode
can hold, who may switch it, what a batch resolution names. No database."""

from __future__ import annotations

import pytest

from alarmhub.core import storm
from alarmhub.core.alarm_types import (
    AUTOMATION_OUTPUT_FAILURE,
    DEFAULTS,
    DURESS,
    FAIL_TO_TEST,
    OUTPUT_CANNOT_SEND,
    RECEIVER_DATA,
    RECEIVER_EVENT,
    RECEIVER_LINK_FAILURE,
    UNKNOWN_ACCOUNT,
)
from alarmhub.core.errors import ActionRefused
from alarmhub.core.operations import AlarmState, Operator, Role, check_supervising

STORMING = frozenset({"ACPWR", "COMM"})


@pytest.mark.parametrize(
    ("alarm_type", "state"),
    [
        ("ACPWR", AlarmState.STORM),
        ("COMM", AlarmState.STORM),
        ("BURG", AlarmState.PENDING),  # another TYPE pends, of whichever account
        ("TRBL", AlarmState.PENDING),
    ],
)
def test_a_new_alarm_goes_to_the_storm_list_only_while_its_type_is_in_storm_mode(
    alarm_type: str, state: AlarmState
) -> None:
    assert storm.new_alarm_state(alarm_type, STORMING) is state
    assert storm.new_alarm_state(alarm_type, frozenset()) is AlarmState.PENDING


@pytest.mark.parametrize(
    "alarm_type", [DURESS.type, UNKNOWN_ACCOUNT.type, RECEIVER_EVENT.type, RECEIVER_DATA.type]
)
def test_duress_unknown_accounts_and_receiver_frames_always_pend(alarm_type: str) -> None:
    assert storm.new_alarm_state(alarm_type, frozenset({alarm_type})) is AlarmState.PENDING


def test_stormable_types_are_those_that_raise_alarms() -> None:
    allowed = storm.stormable(DEFAULTS.values())
    assert {"ACPWR", "COMM", "TRBL", "BURG", FAIL_TO_TEST.type} <= allowed
    assert RECEIVER_LINK_FAILURE.type in allowed  # the station's own supervision alarms
    assert {AUTOMATION_OUTPUT_FAILURE.type, OUTPUT_CANNOT_SEND.type} <= allowed
    assert not {RECEIVER_EVENT.type, RECEIVER_DATA.type} & allowed  # what a receiver handed over
    assert "OPEN" not in allowed  # system-handled: never an alarm
    assert not allowed & storm.NEVER_STORMED


def test_check_types_cleans_and_sorts() -> None:
    allowed = storm.stormable(DEFAULTS.values())
    assert storm.check_types(["comm", " ACPWR", "COMM"], allowed) == ("ACPWR", "COMM")


@pytest.mark.parametrize(
    ("given", "words"),
    [
        ([], "at least one"),
        (["AC-PW"], "invalid alarm TYPE"),
        (["TOOLONG"], "invalid alarm TYPE"),
        (["DURES"], "always pends"),
        (["UNKN"], "always pends"),
        (["OPEN"], "no alarm TYPE OPEN"),
        (["NOSUCH"[:5]], "no alarm TYPE NOSUC"),
        ([f"T{i}" for i in range(storm.TYPES_MAX + 1)], "at most"),
    ],
)
def test_check_types_refuses(given: list[str], words: str) -> None:
    with pytest.raises(ActionRefused) as refused:
        storm.check_types(given, storm.stormable(DEFAULTS.values()))
    assert refused.value.code == "OPS-STORM"
    assert refused.value.status == 422
    assert words in refused.value.message


@pytest.mark.parametrize("role", [Role.SUPERVISOR, Role.ADMIN])
def test_supervisors_and_admins_may_switch(role: Role) -> None:
    check_supervising(Operator("001", "Ann", role), "switch storm mode")


def test_an_operator_may_not_switch() -> None:
    with pytest.raises(ActionRefused) as refused:
        check_supervising(Operator("002", "Bob", Role.OPERATOR), "switch storm mode")
    assert (refused.value.code, refused.value.status) == ("OPS-ROLE", 403)
    assert "supervisor" in refused.value.message


def test_check_batch() -> None:
    assert storm.check_batch([5, 3, 5], False) == (3, 5)
    assert storm.check_batch(None, True) is None
    assert storm.check_batch([], True) is None


@pytest.mark.parametrize(
    ("ids", "everything", "words"),
    [
        ([1], True, "not both"),
        (None, False, "name the alarms"),
        ([], False, "name the alarms"),
        (list(range(storm.BATCH_MAX + 1)), False, "at most"),
    ],
)
def test_check_batch_refuses(ids: list[int] | None, everything: bool, words: str) -> None:
    with pytest.raises(ActionRefused) as refused:
        storm.check_batch(ids, everything)
    assert refused.value.code == "OPS-STORM"
    assert words in refused.value.message
