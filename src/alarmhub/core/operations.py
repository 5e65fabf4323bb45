"""The alarm life cycle: operators, their receiving status, and the rules of every action on an
alarm (take, log a call, note, hold, take over, resolve; an account's alarms together are
``core.sites``). Pure rules, no I/O; the store's service layer (``store.handling`` and its
neighbours) applies them inside one transaction.

States: ``pending`` -> ``in_process`` (an operator took it, or was handed it) -> ``resolved``;
``in_process`` -> ``on_hold`` (reason and minutes) -> ``pending`` when the time is up, marked
BEEN_ON_HOLD; ``storm`` (a new alarm of a TYPE in storm mode, ``core.storm``) -> ``resolved``
by a supervisor's batch resolution. Every action is written to history as an OPERATOR record
(SEARCHTYPE=OPR).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from alarmhub.core import units
from alarmhub.core.errors import ActionRefused

NOTE_MAX = 2000
HOLD_MINUTES_MAX = 24 * 60
REASON_MAX = 200
RESOLUTION_TEXT_MAX = 60
PASSWORD_MIN = 8
_CODE = re.compile(r"^[A-Za-z0-9]{1,3}$")
_RESOLUTION = re.compile(r"^[A-Z0-9_-]{1,8}$")


class AlarmState(StrEnum):
    """Where an alarm is: the queues of the specification plus the two ends of its life."""

    PENDING = "pending"
    IN_PROCESS = "in_process"
    ON_HOLD = "on_hold"
    RESOLVED = "resolved"
    STORM = "storm"  # on the storm list: its TYPE was in storm mode when it was raised


OPEN_STATES = (AlarmState.PENDING, AlarmState.IN_PROCESS, AlarmState.ON_HOLD)
"""The states of the queues operators work."""
UNRESOLVED_STATES = (*OPEN_STATES, AlarmState.STORM)
"""Every state but resolved: a restoral links to such an alarm, and its events are unsettled."""


class Role(StrEnum):
    """What an operator may do: supervisors also take alarms from other operators; admins also
    manage operators and resolution codes."""

    OPERATOR = "operator"
    SUPERVISOR = "supervisor"
    ADMIN = "admin"


SUPERVISING_ROLES = frozenset({Role.SUPERVISOR, Role.ADMIN})


class Receiving(StrEnum):
    """An operator's receiving status, as XMAINPRO writes it in COMPANY_NAME."""

    RECEIVING = "Receiving Signals"
    NOT_RECEIVING = "Not Receiving"


RECEIVING_COLOR = {Receiving.RECEIVING: "70", Receiving.NOT_RECEIVING: "7C"}


class Action(StrEnum):
    """An operator action as the audit trail in history names it (its TYPE, at most 5)."""

    SIGN_ON = "SGNON"
    SIGN_OFF = "SGNOF"
    RECEIVING = "RECV"
    NOT_RECEIVING = "NRECV"
    TAKE = "TAKE"
    HANDED = "HAND"
    CALL = "CALL"
    NOTE = "NOTE"
    HOLD = "HOLD"
    HOLD_ENDED = "UNHLD"
    TAKE_OVER = "TKOVR"
    RESOLVE = "RSLV"
    PASSCODE = "PASS"
    STORM_ON = "STMON"
    STORM_OFF = "STMOF"
    STORM_RESOLVE = "STMRS"
    STORM_PEND = "STMPD"
    DISPATCH = "DISP"
    STEP = "STEP"
    MOVE = "MOVE"
    MANUAL_OPEN = "MOPEN"  # an operator opened a scheduled account by hand
    MANUAL_CLOSE = "MCLOS"


DEFAULT_RESOLUTIONS: dict[str, str] = {
    "FA": "FALSE ALARM - USER ERROR",
    "FAE": "FALSE ALARM - EQUIPMENT",
    "CNCL": "CANCELLED BY PASSCODE",
    "DISP": "AUTHORITIES DISPATCHED",
    "DISPF": "FIRE DEPARTMENT DISPATCHED",
    "DISPM": "MEDICAL DISPATCHED",
    "KEYH": "KEYHOLDER NOTIFIED",
    "NOCON": "NO CONTACT MADE",
    "TEST": "TEST SIGNAL - NO ACTION",
    "SVC": "SERVICE REQUEST OPENED",
    "RSTR": "RESTORED - NO ACTION NEEDED",
}
"""Shipped resolution codes; a station adds, changes and removes its own."""
FALSE_ALARM_CODES = ("FA", "FAE")
"""The resolutions that say an alarm was false (the handling report counts them by account)."""


def not_found(alarm_id: int) -> ActionRefused:
    return ActionRefused("OPS-NOTFOUND", f"alarm {alarm_id} does not exist", 404)


def not_pending(alarm_id: int, state: str, opr: str | None) -> ActionRefused:
    if state == AlarmState.IN_PROCESS and opr:
        return ActionRefused("OPS-TAKEN", f"alarm {alarm_id} is already taken by operator {opr}")
    return ActionRefused(
        "OPS-STATE", f"alarm {alarm_id} is not pending (it is {_state_text(state)})"
    )


def _state_text(state: str) -> str:
    return state.replace("_", " ")


@dataclass(frozen=True, slots=True)
class Operator:
    """An operator as the rules see them."""

    code: str
    name: str
    role: Role
    disabled: bool = False
    signed_on: bool = False
    receiving: bool = False


@dataclass(frozen=True, slots=True)
class AlarmHeld:
    """The part of an alarm the rules need."""

    alarm_id: int
    state: str
    opr: str | None


def operator_code_problem(code: str) -> str | None:
    if not _CODE.match(code):
        return f"invalid operator code {code!r}: use 1-3 letters or digits"
    return None


def password_problem(password: str) -> str | None:
    if len(password) < PASSWORD_MIN:
        return f"password too short: at least {PASSWORD_MIN} characters"
    return None


def resolution_code_problem(code: str, text: str) -> str | None:
    if not _RESOLUTION.match(code):
        return f"invalid resolution code {code!r}: use 1-8 capital letters, digits, '_' or '-'"
    if not text.strip() or len(text) > RESOLUTION_TEXT_MAX:
        return f"resolution text must be 1-{RESOLUTION_TEXT_MAX} characters"
    return None


def check_active(operator: Operator) -> None:
    if operator.disabled:
        raise ActionRefused("OPS-DISABLED", f"operator {operator.code} is disabled", 403)
    if not operator.signed_on:
        raise ActionRefused("OPS-SIGNON", f"operator {operator.code} is not signed on", 403)


def check_supervising(operator: Operator, what: str) -> None:
    """What only supervisors and admins do (storm mode, the reports): refused to operators."""
    if operator.role not in SUPERVISING_ROLES:
        raise ActionRefused("OPS-ROLE", f"only a supervisor can {what}", 403)


def check_take(operator: Operator, alarm: AlarmHeld | None, alarm_id: int) -> None:
    """Taking an alarm from pending: it must be there (two operators never get one alarm)."""
    check_active(operator)
    if alarm is None:
        raise not_found(alarm_id)
    if alarm.state != AlarmState.PENDING:
        raise not_pending(alarm_id, alarm.state, alarm.opr)


def check_holding(operator: Operator, alarm: AlarmHeld | None, alarm_id: int) -> AlarmHeld:
    """Working an alarm (call, note, hold, resolve) needs the operator to be handling it."""
    check_active(operator)
    if alarm is None:
        raise not_found(alarm_id)
    if alarm.state != AlarmState.IN_PROCESS or alarm.opr != operator.code:
        whose = f"operator {alarm.opr}" if alarm.opr else "no operator"
        raise ActionRefused(
            "OPS-NOTYOURS",
            f"alarm {alarm_id} is not in process with you (it is {_state_text(alarm.state)}, "
            f"{whose})",
        )
    return alarm


def check_take_over(operator: Operator, alarm: AlarmHeld | None, alarm_id: int) -> AlarmHeld:
    """A supervisor takes an in-process or held alarm from another operator."""
    check_active(operator)
    if operator.role not in SUPERVISING_ROLES:
        raise ActionRefused(
            "OPS-ROLE", "only a supervisor can take an alarm from another operator", 403
        )
    if alarm is None:
        raise not_found(alarm_id)
    if alarm.state not in (AlarmState.IN_PROCESS, AlarmState.ON_HOLD):
        raise ActionRefused(
            "OPS-STATE",
            f"alarm {alarm_id} is {_state_text(alarm.state)}: nothing to take over",
        )
    if alarm.opr == operator.code and alarm.state == AlarmState.IN_PROCESS:
        raise ActionRefused("OPS-STATE", f"alarm {alarm_id} is already in process with you")
    return alarm


def check_hold(minutes: int, reason: str) -> str:
    """The hold's reason, cleaned; refuses zero, negative or too long holds."""
    if not 1 <= minutes <= HOLD_MINUTES_MAX:
        raise ActionRefused(
            "OPS-HOLD", f"hold minutes must be 1 to {HOLD_MINUTES_MAX}, not {minutes}", 422
        )
    cleaned = " ".join(reason.split())
    if not cleaned:
        raise ActionRefused("OPS-HOLD", "a hold needs a reason", 422)
    if len(cleaned) > REASON_MAX:
        raise ActionRefused("OPS-HOLD", f"hold reason longer than {REASON_MAX} characters", 422)
    return cleaned


def check_note(text: str, what: str = "note") -> str:
    cleaned = text.strip()
    if not cleaned:
        raise ActionRefused("OPS-NOTE", f"the {what} is empty", 422)
    if len(cleaned) > NOTE_MAX:
        raise ActionRefused("OPS-NOTE", f"{what} longer than {NOTE_MAX} characters", 422)
    return cleaned


def check_resolution(code: str, codes: dict[str, str]) -> str:
    """The text of resolution ``code``; refuses codes the station does not have."""
    text = codes.get(code)
    if text is None:
        raise ActionRefused("OPS-RESOLUTION", f"unknown resolution code {code!r}", 422)
    return text


def hold_until(now_us: int, minutes: int) -> int:
    return now_us + units.minutes_us(minutes)


_SPOKEN = frozenset({Action.DISPATCH, Action.STEP})


def audit_text(action: Action, operator: str, detail: str = "") -> str:
    """HIST_TEXT of an operator record (the full note is kept beside it)."""
    words = {
        Action.SIGN_ON: "SIGNED ON",
        Action.SIGN_OFF: "SIGNED OFF",
        Action.RECEIVING: "RECEIVING SIGNALS",
        Action.NOT_RECEIVING: "NOT RECEIVING",
        Action.TAKE: "TOOK ALARM",
        Action.HANDED: "HANDED ALARM",
        Action.CALL: "CALL",
        Action.NOTE: "NOTE",
        Action.HOLD: "HOLD",
        Action.HOLD_ENDED: "HOLD ENDED, BACK TO PENDING",
        Action.TAKE_OVER: "TOOK OVER ALARM",
        Action.RESOLVE: "RESOLVED",
        Action.PASSCODE: "PASSCODE CHECK",
        Action.STORM_ON: "STORM MODE ON",
        Action.STORM_OFF: "STORM MODE OFF",
        Action.STORM_RESOLVE: "RESOLVED STORM LIST",
        Action.STORM_PEND: "SENT STORM ALARM TO PENDING",
        Action.DISPATCH: "DISPATCHED",
        Action.STEP: "DID STEP",
        Action.MOVE: "MOVED ALARM",
        Action.MANUAL_OPEN: "OPENED ACCOUNT",
        Action.MANUAL_CLOSE: "CLOSED ACCOUNT",
    }[action]
    text = f"OPR {operator} {words}"
    if detail:  # what a dispatch was follows as words of the sentence (decisions section 8)
        text = f"{text} {detail}" if action in _SPOKEN else f"{text}: {detail}"
    return text[:80]


def duration(microseconds: int) -> str:
    """``HH:MM:SS``, or ``DD HH:MM:SS`` from one day on (PEND_TIME and the OPR_ times)."""
    seconds = max(0, microseconds // units.US_PER_SECOND)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days:02d} {text}" if days else text


def handling_times(
    pending_us: int, taken_us: int | None, first_call_us: int | None, now_us: int
) -> dict[str, str]:
    """The timing fields of an in-process alarm (decisions section 3); a field that does not
    apply yet is absent. PEND_TIME runs from entering pending; OPR_RECEIVED from pending to
    taken; OPR_FIRST_CALL from taken to the first call; OPR_HANDLING since taken."""
    times = {"PEND_TIME": duration(now_us - pending_us)}
    if taken_us is not None:
        times["OPR_RECEIVED"] = duration(taken_us - pending_us)
        if first_call_us is not None:
            times["OPR_FIRST_CALL"] = duration(first_call_us - taken_us)
        times["OPR_HANDLING"] = duration(now_us - taken_us)
    return times
