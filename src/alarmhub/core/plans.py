"""Action plans and the checks of alarm handling (decisions section 8), as pure rules.

An alarm's plan is the ordered list of steps its TYPE calls for: the station's plan for one zone
of the account, else for the account, else for every account, else the shipped one. A step is
done by what the operator did (a call logged to the premises, the call list worked, a passcode
verified, an agency dispatched, the call list notified after the dispatch: called, or sent a
message from the alarm screen; a step acknowledged with a note), never by a tick alone. A
resolution is refused while a required step is undone; a resolution whose code means dispatch
needs a recorded dispatch (checked first); a dispatch that needs enhanced call verification
(ECV) needs two logged calls to two different numbers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from alarmhub.core.response import AgencyKind, CallOutcome

AVS_LEVELS: dict[int, str] = {
    0: "Level 0 - no call verification attempted",
    1: "Level 1 - call verification attempted, no one reached or no evidence of an emergency",
    2: "Level 2 - verified by a person or an observation that an emergency may be taking place",
    3: "Level 3 - verified threat to life or property",
    4: "Level 4 - verified threat to life (weapon or violence)",
}
"""The AVS-01 alarm validation scores an operator assigns to a dispatch, with their meaning."""

STEP_TEXT_MAX = 200
ECV_EXEMPT = frozenset({"FIRE", "MED", "PERS", "PANIC", "DURES", "CO", "GAS"})
"""TYPEs whose dispatch needs no enhanced call verification unless the station says so: fire,
medical, panic, hold-up (PANIC) and duress, and the gases a fire service answers."""


class StepKind(StrEnum):
    PREMISES = "premises"  # call the premises (the account's phone)
    CALL_LIST = "call-list"  # call the alarm type's call list
    PASSCODE = "passcode"  # verify a passcode
    DISPATCH = "dispatch"  # dispatch an agency (``agency``)
    NOTIFY = "notify"  # call someone of the call list after the dispatch
    VIDEO = "video"  # review video (acknowledged with a note)
    INSTRUCTION = "instruction"  # a free instruction (``text``; acknowledged with a note)


ACKNOWLEDGED = frozenset({StepKind.VIDEO, StepKind.INSTRUCTION})
"""Steps done by acknowledging them with a note: nothing else the operator does shows them."""


@dataclass(frozen=True, slots=True)
class Step:
    kind: StepKind
    required: bool = False
    agency: str = ""  # DISPATCH: police, fire or medical
    text: str = ""  # INSTRUCTION: what to do; any other: a note shown with the step

    def title(self) -> str:
        """The step as the console and the refusals name it."""
        words = {
            StepKind.PREMISES: "call the premises",
            StepKind.CALL_LIST: "call the call list",
            StepKind.PASSCODE: "verify a passcode",
            StepKind.DISPATCH: f"dispatch {self.agency}",
            StepKind.NOTIFY: "notify the call list of the dispatch",
            StepKind.VIDEO: "review video",
            StepKind.INSTRUCTION: self.text,
        }
        return words[self.kind]


def step_problem(step: Step) -> str | None:
    """Why ``step`` cannot be in a plan, or None when it can."""
    if step.kind is StepKind.DISPATCH:
        if step.agency not in {a.value for a in AgencyKind}:
            return "a dispatch step names its agency: police, fire or medical"
    elif step.agency:
        return f"only a dispatch step names an agency, not a {step.kind.value} step"
    if step.kind is StepKind.INSTRUCTION and not step.text.strip():
        return "an instruction step says what to do"
    if len(step.text) > STEP_TEXT_MAX or (step.text and not step.text.isprintable()):
        return f"a step's text is printable and at most {STEP_TEXT_MAX} characters"
    return None


def _steps(*steps: Step) -> tuple[Step, ...]:
    return steps


_POLICE_AT_ONCE = _steps(
    Step(StepKind.DISPATCH, required=True, agency=AgencyKind.POLICE),
    Step(StepKind.NOTIFY),
)
_CALL_LIST = _steps(Step(StepKind.CALL_LIST))
SHIPPED: dict[str, tuple[Step, ...]] = {
    "BURG": _steps(
        Step(StepKind.PREMISES),
        Step(StepKind.CALL_LIST, required=True),
        Step(StepKind.DISPATCH, agency=AgencyKind.POLICE),
        Step(StepKind.NOTIFY),
    ),
    "FIRE": _steps(
        Step(StepKind.DISPATCH, required=True, agency=AgencyKind.FIRE),
        Step(StepKind.CALL_LIST),
    ),
    "MED": _steps(Step(StepKind.DISPATCH, agency=AgencyKind.MEDICAL), Step(StepKind.CALL_LIST)),
    "PANIC": _POLICE_AT_ONCE,  # panic and hold-up
    "DURES": _POLICE_AT_ONCE,
    "TRBL": _CALL_LIST,
    "SUPV": _CALL_LIST,
}
"""The shipped plans by TYPE; any other TYPE has ``GENERIC``."""
GENERIC: tuple[Step, ...] = _CALL_LIST


class Scope(StrEnum):
    """Where an alarm's plan comes from, the narrowest first."""

    ZONE = "zone"
    ACCOUNT = "account"
    STATION = "station"
    SHIPPED = "shipped"


@dataclass(frozen=True, slots=True)
class Plan:
    alarm_type: str
    steps: tuple[Step, ...]
    scope: Scope


PlanKey = tuple[str, str, str]
"""(TYPE, account number or '', zone or '') of a station's plan."""


def plan_for(
    alarm_type: str, account: str, zone: str, station: Mapping[PlanKey, tuple[Step, ...]]
) -> Plan:
    """The plan of an alarm: the station's for its zone, its account, every account, else the
    shipped one."""
    keys: list[tuple[PlanKey, Scope]] = []
    if account and zone:
        keys.append(((alarm_type, account, zone), Scope.ZONE))
    if account:
        keys.append(((alarm_type, account, ""), Scope.ACCOUNT))
    keys.append(((alarm_type, "", ""), Scope.STATION))
    for key, scope in keys:
        steps = station.get(key)
        if steps is not None:
            return Plan(alarm_type, steps, scope)
    return Plan(alarm_type, SHIPPED.get(alarm_type, GENERIC), Scope.SHIPPED)


# what has been done ----------------------------------------------------------------------------


def digits(phone: str) -> str:
    """A phone number as compared: its digits only (``(815) 555-0101`` is ``8155550101``)."""
    return "".join(c for c in phone if c.isdigit())


@dataclass(frozen=True, slots=True)
class CallMade:
    phone: str
    outcome: CallOutcome
    at_us: int
    contact_id: int | None = None


@dataclass(frozen=True, slots=True)
class Done:
    """What has been done for an alarm, as its steps are judged by."""

    calls: Sequence[CallMade] = ()
    dispatches: Sequence[tuple[str, int]] = ()  # (agency, at_us)
    passcode_verified: bool = False
    acknowledged: frozenset[int] = frozenset()  # positions of acknowledged steps (from 1)
    premises_phone: str = ""
    call_list: Sequence[int] = ()  # contact ids of the alarm type's call list


@dataclass(frozen=True, slots=True)
class StepState:
    position: int  # from 1
    step: Step
    done: bool
    applies: bool  # False: nothing the account has lets it be done (no premises phone...)

    @property
    def pending(self) -> bool:
        return self.applies and not self.done


def _call_list_worked(done: Done) -> bool:
    """Someone of the list answered, or everyone on it was called."""
    on_list = set(done.call_list)
    called = {c.contact_id for c in done.calls if c.contact_id in on_list}
    answered = any(
        c.contact_id in on_list and c.outcome is CallOutcome.ANSWERED for c in done.calls
    )
    return answered or (bool(on_list) and called >= on_list)


def _is_done(position: int, step: Step, done: Done) -> tuple[bool, bool]:
    """(done, applies) of one step."""
    kind = step.kind
    if kind is StepKind.PREMISES:
        premises = digits(done.premises_phone)
        return any(digits(c.phone) == premises for c in done.calls), bool(premises)
    if kind is StepKind.CALL_LIST:
        return _call_list_worked(done), bool(done.call_list)
    if kind is StepKind.PASSCODE:
        return done.passcode_verified, True
    if kind is StepKind.DISPATCH:
        return any(agency == step.agency for agency, _ in done.dispatches), True
    if kind is StepKind.NOTIFY:
        if position in done.acknowledged:
            return True, True  # the call list messaged from the alarm screen
        if not done.dispatches:
            return False, False  # nothing to notify of
        first = min(at for _, at in done.dispatches)
        on_list = set(done.call_list)
        return any(c.contact_id in on_list and c.at_us >= first for c in done.calls), bool(on_list)
    return position in done.acknowledged, True


def progress(plan: Plan, done: Done) -> list[StepState]:
    """Each step of the plan, done or not, and whether it can be done at all."""
    states = []
    for position, step in enumerate(plan.steps, start=1):
        finished, applies = _is_done(position, step, done)
        states.append(StepState(position, step, finished, applies))
    return states


def next_step(states: Sequence[StepState]) -> int | None:
    """The position of the first step still to do, or None."""
    return next((s.position for s in states if s.pending), None)


def undone_required(states: Sequence[StepState]) -> list[StepState]:
    """The required steps still to do (a step that cannot apply is not held against anyone)."""
    return [s for s in states if s.step.required and s.pending]


# the checks ------------------------------------------------------------------------------------


def ecv_required(alarm_type: str, station_setting: bool | None) -> bool:
    """Whether a dispatch for an alarm of ``alarm_type`` needs enhanced call verification: the
    station's setting for the TYPE, else every TYPE but the exempt ones."""
    if station_setting is not None:
        return station_setting
    return alarm_type not in ECV_EXEMPT


def ecv_met(calls: Iterable[CallMade]) -> bool:
    """Two calls logged to two different numbers (any outcome: each was an attempt)."""
    return len({digits(c.phone) for c in calls if digits(c.phone)}) >= 2


DISPATCH_CODES = {"DISPF": AgencyKind.FIRE.value, "DISPM": AgencyKind.MEDICAL.value}
"""Resolution codes that mean one agency's dispatch; any other code starting ``DISP`` means a
dispatch of any agency."""


def dispatch_needed(resolution: str) -> str | None:
    """Which dispatch a resolution code means: an agency, ``""`` for any, None for none."""
    if resolution in DISPATCH_CODES:
        return DISPATCH_CODES[resolution]
    return "" if resolution.startswith("DISP") else None


def resolution_problem(
    resolution: str, dispatches: Sequence[tuple[str, int]], states: Sequence[StepState]
) -> tuple[str, str] | None:
    """Why an alarm cannot be resolved with ``resolution`` yet, as (error code, message), or
    None: a dispatch the code means is checked before the plan's required steps."""
    needed = dispatch_needed(resolution)
    if needed is not None and not any(needed in ("", agency) for agency, _ in dispatches):
        what = f"a {needed} dispatch" if needed else "a dispatch"
        return "OPS-DISPATCH", f"{resolution} means a dispatch: record {what} first"
    missing = undone_required(states)
    if missing:
        named = "; ".join(f"{s.position}. {s.step.title()}" for s in missing)
        return "OPS-STEPS", f"required steps of the plan are not done: {named}"
    return None
