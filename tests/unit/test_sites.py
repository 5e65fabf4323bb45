"""The rules of one operator per site (``core.sites``), without a database: who gets a new
alarm of an account being worked, the DURESS exception, accounts that do not interfere, which
siblings resolve together, and who may move an account's alarms where."""

from __future__ import annotations

import pytest

from alarmhub.core.errors import ActionRefused
from alarmhub.core.operations import Operator, Role
from alarmhub.core.sites import (
    SIBLINGS_MAX,
    Arriving,
    SiteAlarm,
    Working,
    check_move,
    siblings_to_take,
    site_operator,
    site_operators,
    unique_ids,
)

SCHOOL, SHOP = "700001", "700002"


def refusal(code: str, call: object, *args: object) -> ActionRefused:
    with pytest.raises(ActionRefused) as caught:
        call(*args)  # type: ignore[operator]
    assert caught.value.code == code, caught.value.message
    return caught.value


# who gets a new alarm ------------------------------------------------------------------------


def test_a_new_alarm_goes_to_the_operator_working_its_account() -> None:
    working = [Working(SCHOOL, "OP1", 100, 1)]
    assert site_operator(Arriving(2, SCHOOL), working) == "OP1"


def test_an_account_nobody_works_has_no_site_operator() -> None:
    assert site_operator(Arriving(2, SHOP), [Working(SCHOOL, "OP1", 100, 1)]) is None
    assert site_operator(Arriving(2, SHOP), []) is None


def test_alarms_without_an_account_belong_to_no_site() -> None:
    assert site_operator(Arriving(2, ""), [Working("", "OP1", 100, 1)]) is None


def test_of_several_operators_working_an_account_the_first_to_take_one_gets_it() -> None:
    working = [
        Working(SCHOOL, "OP2", 300, 5),
        Working(SCHOOL, "OP1", 100, 7),
        Working(SCHOOL, "OP3", 100, 9),
    ]
    assert site_operator(Arriving(10, SCHOOL), working) == "OP1"  # the earliest, then the lower id


def test_a_duress_alarm_never_goes_to_the_operator_of_the_passcode_check() -> None:
    duress = Arriving(3, SCHOOL, not_for_opr="OP1")
    assert site_operator(duress, [Working(SCHOOL, "OP1", 100, 1)]) is None
    both = [Working(SCHOOL, "OP1", 100, 1), Working(SCHOOL, "OP2", 200, 2)]
    assert site_operator(duress, both) == "OP2"


def test_a_batch_hands_each_alarm_to_its_own_site_s_operator() -> None:
    arriving = [Arriving(10, SCHOOL), Arriving(11, SHOP), Arriving(12, "700003"), Arriving(13, "")]
    working = [Working(SCHOOL, "OP1", 100, 1), Working(SHOP, "OP2", 50, 2)]
    assert site_operators(arriving, working) == {10: "OP1", 11: "OP2"}


# siblings ------------------------------------------------------------------------------------


def alarm(alarm_id: int, state: str = "in_process", account: str = SCHOOL) -> SiteAlarm:
    return SiteAlarm(alarm_id, account, state, "OP1" if state != "pending" else None)


def test_pending_siblings_are_taken_first_others_are_resolved_as_they_are() -> None:
    found = {2: alarm(2, "pending"), 3: alarm(3), 4: alarm(4, "on_hold")}
    assert siblings_to_take(alarm(1), [2, 3, 4], found) == [2]


def test_a_sibling_must_exist_be_open_and_be_of_the_same_account() -> None:
    found = {2: alarm(2, account=SHOP), 3: alarm(3, "resolved"), 1: alarm(1)}
    assert (
        "does not exist" in refusal("OPS-NOTFOUND", siblings_to_take, alarm(1), [9], found).message
    )
    refusal("OPS-SIBLING", siblings_to_take, alarm(1), [2], found)
    refusal("OPS-STATE", siblings_to_take, alarm(1), [3], found)
    refusal("OPS-SIBLING", siblings_to_take, alarm(1), [1], found)  # not its own sibling


def test_an_alarm_without_an_account_has_no_siblings() -> None:
    lone = alarm(1, account="")
    refusal("OPS-SIBLING", siblings_to_take, lone, [2], {2: alarm(2, account="")})
    assert siblings_to_take(lone, [], {}) == []


def test_siblings_are_bounded_and_counted_once() -> None:
    many = list(range(2, SIBLINGS_MAX + 3))
    refusal("OPS-SIBLING", siblings_to_take, alarm(1), many, {i: alarm(i) for i in many})
    assert unique_ids([3, 2, 3, 2]) == [3, 2]


# moving an account's alarms ------------------------------------------------------------------


def op(
    code: str, role: Role = Role.OPERATOR, signed_on: bool = True, disabled: bool = False
) -> Operator:
    return Operator(code, code, role, disabled=disabled, signed_on=signed_on, receiving=True)


SUP = op("SUP", Role.SUPERVISOR)


def test_a_supervisor_moves_the_in_process_and_held_alarms_of_others() -> None:
    alarms = [
        SiteAlarm(1, SCHOOL, "in_process", "OP1"),
        SiteAlarm(2, SCHOOL, "on_hold", "OP1"),
        SiteAlarm(3, SCHOOL, "in_process", "OP2"),  # already the target's
    ]
    moving = check_move(SUP, op("OP2"), SCHOOL, alarms)
    assert [a.alarm_id for a in moving] == [1, 2]
    assert [a.alarm_id for a in check_move(op("ADM", Role.ADMIN), op("OP2"), SCHOOL, alarms)] == [
        1,
        2,
    ]


def test_only_a_signed_on_supervisor_moves_and_only_to_a_signed_on_operator() -> None:
    alarms = [SiteAlarm(1, SCHOOL, "in_process", "OP1")]
    refusal("OPS-ROLE", check_move, op("OP3"), op("OP2"), SCHOOL, alarms)
    refusal(
        "OPS-SIGNON",
        check_move,
        op("SUP", Role.SUPERVISOR, signed_on=False),
        op("OP2"),
        SCHOOL,
        alarms,
    )
    assert (
        "not signed on"
        in refusal(
            "OPS-TARGET", check_move, SUP, op("OP2", signed_on=False), SCHOOL, alarms
        ).message
    )
    assert (
        "disabled"
        in refusal("OPS-TARGET", check_move, SUP, op("OP2", disabled=True), SCHOOL, alarms).message
    )


def test_moving_nothing_is_refused() -> None:
    refusal("OPS-STATE", check_move, SUP, op("OP2"), SCHOOL, [])
    mine = [SiteAlarm(1, SCHOOL, "in_process", "OP2")]
    refusal("OPS-STATE", check_move, SUP, op("OP2"), SCHOOL, mine)
