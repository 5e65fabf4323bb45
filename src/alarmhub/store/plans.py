"""Action plans in the store (decisions section 8): the station's plans by TYPE, for every
account, one account or one zone; its enhanced call verification setting per TYPE; what has been
done for an alarm (calls, dispatches, the passcode, acknowledged steps) and so where its plan
stands; and the checks a resolution must pass.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, delete, insert, select
from sqlalchemy.engine import Engine

from alarmhub.clock import now_us
from alarmhub.core import plans, response
from alarmhub.core.alarm_types import TYPE_PATTERN
from alarmhub.core.errors import ActionRefused, ProvisioningError
from alarmhub.core.plans import CallMade, Done, Plan, PlanKey, Step, StepKind, StepState
from alarmhub.core.response import CallOutcome
from alarmhub.store import alarm_response, schema
from alarmhub.store.engine import write_transaction
from alarmhub.store.provisioning import bump_revision

PLAN = schema.plan_step.c
HANDLING = schema.type_handling.c
DISPATCH = schema.dispatch.c
STEP_DONE = schema.step_done.c
ACCOUNT = schema.account.c
PLANS = "plans"
"""The revision every change of plans bumps."""


# the station's plans ---------------------------------------------------------------------------


def station_plans(conn: Connection, alarm_type: str) -> dict[PlanKey, tuple[Step, ...]]:
    """Every plan the station set for ``alarm_type``, by (TYPE, account, zone)."""
    found: dict[PlanKey, list[Step]] = {}
    for row in conn.execute(
        select(schema.plan_step)
        .where(PLAN.alarm_type == alarm_type)
        .order_by(PLAN.account_number, PLAN.zone, PLAN.position)
    ).mappings():
        key = (row["alarm_type"], row["account_number"], row["zone"])
        found.setdefault(key, []).append(
            Step(StepKind(row["kind"]), bool(row["required"]), row["agency"], row["text"])
        )
    return {key: tuple(steps) for key, steps in found.items()}


def _scope_of(conn: Connection, alarm_type: str, account: str, zone: str) -> tuple[str, str]:
    """The checked (TYPE, account, zone) of a plan: a zone only within an account."""
    if not TYPE_PATTERN.fullmatch(alarm_type):
        raise ProvisioningError("TYPE is 1-5 upper-case letters or digits (BURG, FIRE...)")
    if zone and not account:
        raise ProvisioningError("a zone's plan is one account's: name the account too")
    if zone:
        problem = response.number_problem(zone)
        if problem:
            raise ProvisioningError(problem)
        zone = response.three_digits(zone)
    if account and not alarm_response_known(conn, account):
        raise ProvisioningError(f"no account {account!r}")
    return account, zone


def alarm_response_known(conn: Connection, account: str) -> bool:
    found = conn.execute(select(ACCOUNT.account_number).where(ACCOUNT.account_number == account))
    return found.first() is not None


def set_plan(
    engine: Engine, alarm_type: str, steps: list[Step], account: str = "", zone: str = ""
) -> dict[str, Any]:
    """Set the plan of ``alarm_type`` for every account, one account or one of its zones."""
    if not steps:
        raise ProvisioningError("a plan has at least one step (reset it to use the wider one)")
    for position, step in enumerate(steps, start=1):
        problem = plans.step_problem(step)
        if problem:
            raise ProvisioningError(f"step {position}: {problem}")
    with write_transaction(engine) as conn:
        account, zone = _scope_of(conn, alarm_type, account, zone)
        conn.execute(delete(schema.plan_step).where(*_key(alarm_type, account, zone)))
        conn.execute(
            insert(schema.plan_step),
            [
                {
                    "alarm_type": alarm_type,
                    "account_number": account,
                    "zone": zone,
                    "position": position,
                    "kind": step.kind.value,
                    "agency": step.agency,
                    "required": step.required,
                    "text": step.text.strip(),
                }
                for position, step in enumerate(steps, start=1)
            ],
        )
        bump_revision(conn, PLANS)
        return _shown(conn, alarm_type, account, zone)


def _key(alarm_type: str, account: str, zone: str) -> tuple[Any, ...]:
    return (PLAN.alarm_type == alarm_type, PLAN.account_number == account, PLAN.zone == zone)


def reset_plan(engine: Engine, alarm_type: str, account: str = "", zone: str = "") -> None:
    """Drop the station's plan of that scope: the wider one applies again."""
    with write_transaction(engine) as conn:
        account, zone = _scope_of(conn, alarm_type, account, zone)
        if not conn.execute(
            delete(schema.plan_step).where(*_key(alarm_type, account, zone))
        ).rowcount:
            raise ProvisioningError(f"{alarm_type} has no plan of its own there")
        bump_revision(conn, PLANS)


def show_plan(engine: Engine, alarm_type: str, account: str = "", zone: str = "") -> dict[str, Any]:
    """The plan an alarm of ``alarm_type`` (of that account and zone) follows, and where it
    comes from."""
    with engine.connect() as conn:
        account, zone = _scope_of(conn, alarm_type, account, zone)
        return _shown(conn, alarm_type, account, zone)


def _shown(conn: Connection, alarm_type: str, account: str, zone: str) -> dict[str, Any]:
    plan = plans.plan_for(alarm_type, account, zone, station_plans(conn, alarm_type))
    setting = ecv_setting(conn, alarm_type)
    return {
        "type": alarm_type,
        "account": account,
        "zone": zone,
        "scope": plan.scope.value,
        "steps": [step_view(position, s) for position, s in enumerate(plan.steps, start=1)],
        "ecv": plans.ecv_required(alarm_type, setting),
        "ecv_set_by_station": setting is not None,
    }


def step_view(position: int, step: Step) -> dict[str, Any]:
    return {
        "position": position,
        "kind": step.kind.value,
        "agency": step.agency,
        "required": step.required,
        "text": step.text,
        "title": step.title(),
    }


def ecv_setting(conn: Connection, alarm_type: str) -> bool | None:
    value = conn.execute(select(HANDLING.ecv).where(HANDLING.alarm_type == alarm_type)).scalar()
    return None if value is None else bool(value)


def set_ecv(engine: Engine, alarm_type: str, required: bool | None) -> None:
    """Require enhanced call verification before a dispatch for ``alarm_type`` (True), exempt
    it (False), or go back to the shipped rule (None)."""
    from alarmhub.store.response import upsert

    if not TYPE_PATTERN.fullmatch(alarm_type):
        raise ProvisioningError("TYPE is 1-5 upper-case letters or digits (BURG, FIRE...)")
    with write_transaction(engine) as conn:
        row = {"alarm_type": alarm_type, "ecv": required, "updated_us": now_us()}
        upsert(conn, schema.type_handling, [row], ["alarm_type"])
        bump_revision(conn, PLANS)


# an alarm's plan -------------------------------------------------------------------------------


def dispatches(conn: Connection, alarm_id: int) -> list[dict[str, Any]]:
    rows = conn.execute(
        select(
            DISPATCH.agency,
            DISPATCH.agency_code,
            DISPATCH.avs,
            DISPATCH.reference,
            DISPATCH.opr,
            DISPATCH.at_us,
        )
        .where(DISPATCH.alarm_id == alarm_id)
        .order_by(DISPATCH.at_us)
    ).mappings()
    return [alarm_response.plain(r) for r in rows]


def calls_made(conn: Connection, alarm_id: int) -> list[CallMade]:
    return [
        CallMade(c["phone"], CallOutcome(c["outcome"]), int(c["at_us"]), c["contact_id"])
        for c in alarm_response.calls(conn, alarm_id)
    ]


def done_for(conn: Connection, row: dict[str, Any]) -> Done:
    """What has been done for the alarm ``row``."""
    alarm_id, account = int(row["alarm_id"]), row["account_number"]
    list_name = alarm_response.type_call_list(conn, row["event_code"])
    premises = conn.execute(select(ACCOUNT.phone).where(ACCOUNT.account_number == account)).scalar()
    acknowledged = conn.execute(
        select(STEP_DONE.position).where(STEP_DONE.alarm_id == alarm_id)
    ).scalars()
    return Done(
        calls=calls_made(conn, alarm_id),
        dispatches=[(d["agency"], int(d["at_us"])) for d in dispatches(conn, alarm_id)],
        passcode_verified=row["passcode_verified"] == "Y",
        acknowledged=frozenset(int(p) for p in acknowledged),
        premises_phone=premises or "",
        call_list=[c["id"] for c in alarm_response.call_list(conn, account, list_name)],
    )


def alarm_plan(conn: Connection, row: dict[str, Any]) -> tuple[Plan, list[StepState], Done]:
    """The plan of the alarm ``row``, where each of its steps stands, and what was done."""
    alarm_type = row["type"]
    plan = plans.plan_for(
        alarm_type, row["account_number"], row["zone"], station_plans(conn, alarm_type)
    )
    done = done_for(conn, row)
    return plan, plans.progress(plan, done), done


def plan_view(conn: Connection, row: dict[str, Any]) -> dict[str, Any]:
    """The alarm screen's plan: its steps and where each stands, the next one, whether a
    dispatch needs ECV and whether it is met, the dispatches made, the AVS-01 levels."""
    plan, states, done = alarm_plan(conn, row)
    return {
        "type": plan.alarm_type,
        "scope": plan.scope.value,
        "steps": [
            {**step_view(s.position, s.step), "done": s.done, "applies": s.applies} for s in states
        ],
        "next": plans.next_step(states),
        "ecv": {
            "required": plans.ecv_required(plan.alarm_type, ecv_setting(conn, plan.alarm_type)),
            "met": plans.ecv_met(done.calls),
        },
        "dispatches": dispatches(conn, int(row["alarm_id"])),
        "avs_levels": [{"level": k, "text": v} for k, v in plans.AVS_LEVELS.items()],
    }


def check_resolution(conn: Connection, row: dict[str, Any], resolution: str) -> None:
    """Refuse (409) a resolution of the alarm ``row`` that its dispatch or plan forbids."""
    _, states, done = alarm_plan(conn, row)
    problem = plans.resolution_problem(resolution, done.dispatches, states)
    if problem is not None:
        raise ActionRefused(problem[0], problem[1], 409)


def acknowledge(conn: Connection, row: dict[str, Any], position: int, note: str) -> Step:
    """Check that step ``position`` of the alarm's plan is one done by acknowledging it (review
    video, an instruction) and not yet done; the step. The caller records it."""
    plan, states, _ = alarm_plan(conn, row)
    if not 1 <= position <= len(plan.steps):
        raise ActionRefused("OPS-STEP", f"the plan has no step {position}", 422)
    state = states[position - 1]
    if state.step.kind not in plans.ACKNOWLEDGED:
        raise ActionRefused(
            "OPS-STEP",
            f"step {position} ({state.step.title()}) is done by doing it, not by a note",
            409,
        )
    if state.done:
        raise ActionRefused("OPS-STEP", f"step {position} is already done", 409)
    return state.step
