"""One operator per site: the rules of an account's alarms that belong together (decisions
section 8). Pure rules, no I/O; ``store.handling`` and ``store.sites`` apply them.

- **Who gets a new alarm.** An alarm that enters pending (raised by a signal or by supervision,
  or back from a hold) on an account that has an alarm in process with an operator is handed to
  that operator, busy or not. When several operators have one of the account's alarms in
  process, the one who took theirs first gets it. The operator named in the alarm's
  ``not_for_opr`` (the one whose passcode check raised a DURESS alarm) never gets it: another
  operator working the account may, else it waits in pending like any alarm. Alarms with no
  account (a source failure, an unknown account) belong to no site.
- **Siblings.** An alarm's siblings are the other open alarms (pending, in process, on hold) of
  its account. Resolving siblings together resolves each with the same code and note, each
  checked as its own resolution; a pending sibling is taken by the operator first.
- **Moving a site.** A supervisor moves every in-process or held alarm of an account to another
  operator, who must be signed on and not disabled; held alarms stay on hold.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from alarmhub.core.errors import ActionRefused
from alarmhub.core.operations import SUPERVISING_ROLES, AlarmState, Operator, check_active

SIBLINGS_MAX = 50
"""How many siblings one resolution takes with it."""

MOVED_STATES = (AlarmState.IN_PROCESS, AlarmState.ON_HOLD)


@dataclass(frozen=True, slots=True)
class Working:
    """An alarm of an account in process with an operator."""

    account_number: str
    opr: str
    taken_us: int
    alarm_id: int


@dataclass(frozen=True, slots=True)
class Arriving:
    """An alarm entering pending: its account, and the operator it must never go to."""

    alarm_id: int
    account_number: str
    not_for_opr: str | None = None


@dataclass(frozen=True, slots=True)
class SiteAlarm:
    """What the sibling and move rules need of one of an account's alarms."""

    alarm_id: int
    account_number: str
    state: str
    opr: str | None


def site_operator(arriving: Arriving, working: Iterable[Working]) -> str | None:
    """The operator ``arriving`` goes to: the one who took the account's alarm first, among
    those who have one in process (not the alarm's ``not_for_opr``); None when nobody does."""
    if not arriving.account_number:
        return None
    candidates = [
        w
        for w in working
        if w.account_number == arriving.account_number and w.opr != arriving.not_for_opr
    ]
    if not candidates:
        return None
    return min(candidates, key=lambda w: (w.taken_us, w.alarm_id)).opr


def site_operators(arriving: Sequence[Arriving], working: Sequence[Working]) -> dict[int, str]:
    """``alarm_id -> operator`` for each arriving alarm that goes to its site's operator."""
    by_account: dict[str, list[Working]] = {}
    for w in working:
        by_account.setdefault(w.account_number, []).append(w)
    chosen: dict[int, str] = {}
    for alarm in arriving:
        opr = site_operator(alarm, by_account.get(alarm.account_number, ()))
        if opr is not None:
            chosen[alarm.alarm_id] = opr
    return chosen


def siblings_to_take(
    alarm: SiteAlarm, wanted: Sequence[int], found: Mapping[int, SiteAlarm]
) -> list[int]:
    """Check the siblings to resolve with ``alarm`` (``found``: those that exist, by id); the
    pending ones, which the operator takes first. Each must be an open alarm of the same
    account; whether each may be resolved is the resolution's own check, alarm by alarm."""
    if len(wanted) > SIBLINGS_MAX:
        raise ActionRefused(
            "OPS-SIBLING", f"at most {SIBLINGS_MAX} siblings resolve with one alarm", 422
        )
    if wanted and not alarm.account_number:
        raise ActionRefused("OPS-SIBLING", "an alarm without an account has no siblings")
    to_take = []
    for alarm_id in wanted:
        sibling = found.get(alarm_id)
        if sibling is None:
            raise ActionRefused("OPS-NOTFOUND", f"sibling alarm {alarm_id} does not exist", 404)
        if alarm_id == alarm.alarm_id or sibling.account_number != alarm.account_number:
            raise ActionRefused(
                "OPS-SIBLING",
                f"alarm {alarm_id} is not a sibling of alarm {alarm.alarm_id}: "
                f"siblings are the other open alarms of account {alarm.account_number}",
            )
        if sibling.state == AlarmState.RESOLVED:
            raise ActionRefused("OPS-STATE", f"sibling alarm {alarm_id} is already resolved")
        if sibling.state == AlarmState.PENDING:
            to_take.append(alarm_id)
    return to_take


def unique_ids(ids: Iterable[int]) -> list[int]:
    """The ids in their first order, each once."""
    return list(dict.fromkeys(ids))


def check_move(
    mover: Operator, target: Operator, account: str, alarms: Sequence[SiteAlarm]
) -> list[SiteAlarm]:
    """A supervisor moves an account's alarms to ``target``: the alarms that move (those in
    process or on hold with someone else)."""
    check_active(mover)
    if mover.role not in SUPERVISING_ROLES:
        raise ActionRefused("OPS-ROLE", "only a supervisor can move an account's alarms", 403)
    if target.disabled or not target.signed_on:
        why = "disabled" if target.disabled else "not signed on"
        raise ActionRefused(
            "OPS-TARGET", f"operator {target.code} is {why}: alarms go to a signed-on operator"
        )
    moving = [a for a in alarms if a.state in MOVED_STATES and a.opr != target.code]
    if not moving:
        raise ActionRefused(
            "OPS-STATE",
            f"account {account} has no alarm in process or on hold with another operator",
        )
    return moving
