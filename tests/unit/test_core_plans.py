"""Action plans and the checks of alarm handling (decisions section 8): which plan an alarm
has, when each step is done, enhanced call verification and its exemptions, and why a
resolution is refused."""

from __future__ import annotations

import pytest

from alarmhub.core import plans
from alarmhub.core.plans import CallMade, Done, Plan, Scope, Step, StepKind
from alarmhub.core.response import CallOutcome

ANSWERED, NO_ANSWER = CallOutcome.ANSWERED, CallOutcome.NO_ANSWER
CALL_LIST = Step(StepKind.CALL_LIST, required=True)
VIDEO = Step(StepKind.VIDEO)


def test_the_shipped_plans_are_those_a_station_recognises() -> None:
    burglary = plans.plan_for("BURG", "1234", "015", {})
    assert burglary.scope is Scope.SHIPPED
    assert [(s.kind, s.agency, s.required) for s in burglary.steps] == [
        (StepKind.PREMISES, "", False),
        (StepKind.CALL_LIST, "", True),
        (StepKind.DISPATCH, "police", False),
        (StepKind.NOTIFY, "", False),
    ]
    fire = plans.plan_for("FIRE", "1234", "001", {}).steps
    assert (fire[0].kind, fire[0].agency, fire[0].required) == (StepKind.DISPATCH, "fire", True)
    for at_once in ("PANIC", "DURES"):
        steps = plans.plan_for(at_once, "1234", "001", {}).steps
        assert steps[0] == Step(StepKind.DISPATCH, required=True, agency="police")
        assert StepKind.PREMISES not in {s.kind for s in steps}
    for quiet in ("TRBL", "SUPV", "ACPWR"):
        assert [s.kind for s in plans.plan_for(quiet, "1", "1", {}).steps] == [StepKind.CALL_LIST]


def test_the_narrowest_plan_of_the_station_wins() -> None:
    station = {
        ("BURG", "", ""): (VIDEO,),
        ("BURG", "1234", ""): (CALL_LIST,),
        ("BURG", "1234", "015"): (Step(StepKind.INSTRUCTION, text="Gate code in notes"),),
    }
    assert plans.plan_for("BURG", "1234", "015", station).scope is Scope.ZONE
    assert plans.plan_for("BURG", "1234", "016", station) == Plan(
        "BURG", (CALL_LIST,), Scope.ACCOUNT
    )
    assert plans.plan_for("BURG", "9999", "015", station) == Plan("BURG", (VIDEO,), Scope.STATION)
    assert plans.plan_for("FIRE", "1234", "015", station).scope is Scope.SHIPPED


@pytest.mark.parametrize(
    ("step", "problem"),
    [
        (Step(StepKind.DISPATCH), "names its agency"),
        (Step(StepKind.DISPATCH, agency="navy"), "names its agency"),
        (Step(StepKind.CALL_LIST, agency="police"), "only a dispatch step"),
        (Step(StepKind.INSTRUCTION, text="  "), "says what to do"),
        (Step(StepKind.VIDEO, text="x" * 201), "at most 200"),
    ],
)
def test_a_step_that_cannot_be_done_is_refused(step: Step, problem: str) -> None:
    assert problem in (plans.step_problem(step) or "")


def burglary_states(done: Done) -> list[plans.StepState]:
    return plans.progress(plans.plan_for("BURG", "1", "1", {}), done)


def test_each_step_is_done_by_what_the_operator_did() -> None:
    nothing = burglary_states(Done(premises_phone="(815) 555-0100", call_list=(7, 8)))
    assert [s.done for s in nothing] == [False, False, False, False]
    assert [s.applies for s in nothing] == [True, True, True, False]  # no dispatch to notify of
    assert plans.next_step(nothing) == 1
    done = Done(
        calls=(
            CallMade("815-555-0100", NO_ANSWER, 10),  # the premises, however it is written
            CallMade("555-0107", NO_ANSWER, 20, contact_id=7),
            CallMade("555-0108", ANSWERED, 30, contact_id=8),
            CallMade("555-0107", ANSWERED, 50, contact_id=7),
        ),
        dispatches=(("police", 40),),
        premises_phone="(815) 555-0100",
        call_list=(7, 8),
    )
    states = burglary_states(done)
    assert [s.done for s in states] == [True, True, True, True]
    assert plans.next_step(states) is None


def test_a_call_list_is_worked_when_someone_answers_or_everyone_was_called() -> None:
    one_answer = Done(calls=(CallMade("1", ANSWERED, 1, contact_id=8),), call_list=(7, 8))
    assert plans._call_list_worked(one_answer)
    partly = Done(calls=(CallMade("1", NO_ANSWER, 1, contact_id=7),), call_list=(7, 8))
    assert not plans._call_list_worked(partly)
    everyone = Done(
        calls=(CallMade("1", NO_ANSWER, 1, contact_id=7), CallMade("2", NO_ANSWER, 2, 8)),
        call_list=(7, 8),
    )
    assert plans._call_list_worked(everyone)


def test_notifying_counts_only_calls_after_the_dispatch() -> None:
    before = Done(
        calls=(CallMade("1", ANSWERED, 5, contact_id=7),),
        dispatches=(("police", 10),),
        call_list=(7,),
    )
    assert [s.done for s in burglary_states(before)][3] is False


def test_notifying_is_done_by_messages_sent_from_the_alarm_screen() -> None:
    messaged = burglary_states(Done(acknowledged=frozenset({4})))  # no dispatch, no call list
    assert (messaged[3].done, messaged[3].applies) == (True, True)
    assert burglary_states(Done(acknowledged=frozenset({3})))[3].done is False


def test_a_step_the_account_cannot_do_is_not_held_against_a_resolution() -> None:
    states = burglary_states(Done())  # no premises phone, no call list
    assert plans.undone_required(states) == []
    assert plans.resolution_problem("FA", (), states) is None


def test_acknowledged_steps_are_done_by_their_acknowledgement_only() -> None:
    plan = Plan("BURG", (VIDEO, Step(StepKind.INSTRUCTION, required=True, text="Gate")), Scope.ZONE)
    states = plans.progress(plan, Done(acknowledged=frozenset({1})))
    assert [s.done for s in states] == [True, False]
    assert plans.resolution_problem("FA", (), states) == (
        "OPS-STEPS",
        "required steps of the plan are not done: 2. Gate",
    )


def test_enhanced_call_verification_needs_two_calls_to_two_numbers() -> None:
    assert not plans.ecv_met([CallMade("555-0101", NO_ANSWER, 1)])
    same_twice = [CallMade("555-0101", NO_ANSWER, 1), CallMade("(555) 0101", ANSWERED, 2)]
    assert not plans.ecv_met(same_twice)
    assert plans.ecv_met([CallMade("555-0101", NO_ANSWER, 1), CallMade("555-0102", NO_ANSWER, 2)])


@pytest.mark.parametrize(
    ("alarm_type", "setting", "required"),
    [
        ("BURG", None, True),
        ("ALARM", None, True),
        ("FIRE", None, False),
        ("MED", None, False),
        ("PANIC", None, False),
        ("DURES", None, False),
        ("FIRE", True, True),
        ("BURG", False, False),
    ],
)
def test_ecv_exemptions_and_the_station_s_setting(
    alarm_type: str, setting: bool | None, required: bool
) -> None:
    assert plans.ecv_required(alarm_type, setting) is required


def test_a_dispatch_resolution_needs_its_dispatch_before_the_steps_are_looked_at() -> None:
    states = plans.progress(
        plans.plan_for("FIRE", "1", "1", {}), Done(call_list=(7,))
    )  # the fire dispatch is required and undone
    assert plans.resolution_problem("DISPF", (("police", 1),), states) == (
        "OPS-DISPATCH",
        "DISPF means a dispatch: record a fire dispatch first",
    )
    assert plans.resolution_problem("DISP", (), states)[0] == "OPS-DISPATCH"  # type: ignore[index]
    code, message = plans.resolution_problem("FA", (), states) or ("", "")
    assert (code, message) == (
        "OPS-STEPS",
        "required steps of the plan are not done: 1. dispatch fire",
    )
    done = plans.progress(plans.plan_for("FIRE", "1", "1", {}), Done(dispatches=(("fire", 1),)))
    assert plans.resolution_problem("DISPF", (("fire", 1),), done) is None
    assert plans.dispatch_needed("DISPX") == "" and plans.dispatch_needed("FA") is None


def test_every_avs_level_has_its_meaning() -> None:
    assert sorted(plans.AVS_LEVELS) == [0, 1, 2, 3, 4]
