"""Storm mode: the rules. During a weather event a supervisor switches storm mode on for alarm
TYPEs (AC power loss, communication failure...); while a TYPE is in storm mode a new alarm of that
TYPE goes to history and to the storm list (state ``storm``) instead of pending, and nobody is
handed it. Alarms of other TYPEs, of the same account too, pend as always. Switching storm mode
off offers the storm list for batch resolution. Pure rules, no I/O: the store keeps the TYPEs in
storm mode (``store.storm``) and routing applies :func:`new_alarm_state` to every alarm it raises.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from alarmhub.core.alarm_types import (
    AUTOMATION_OUTPUT_FAILURE,
    COMMUNICATION_FAILURE,
    DURESS,
    FAIL_TO_TEST,
    OPERATOR_HANDLED,
    OUTPUT_CANNOT_SEND,
    RECEIVER_DATA,
    RECEIVER_EVENT,
    RECEIVER_LINK_FAILURE,
    RUNAWAY,
    SOURCE_FAILURE,
    TYPE_PATTERN,
    UNKNOWN_ACCOUNT,
    AlarmType,
)
from alarmhub.core.errors import ActionRefused
from alarmhub.core.operations import AlarmState

NEVER_STORMED = frozenset(
    {DURESS.type, UNKNOWN_ACCOUNT.type, RECEIVER_EVENT.type, RECEIVER_DATA.type}
)
"""TYPEs that always pend: a duress code given (section 7), a signal of an account the
station does not know (its data must be fixed; its alarm joins others on the receiver line),
and what a receiver hands over that is no signal (its own events, frames that could not be
read: nothing a receiver hands over is dropped, section 11)."""
SYSTEM_TYPES = frozenset(
    kind.type
    for kind in (
        RUNAWAY,
        SOURCE_FAILURE,
        FAIL_TO_TEST,
        COMMUNICATION_FAILURE,
        RECEIVER_LINK_FAILURE,
        AUTOMATION_OUTPUT_FAILURE,
        OUTPUT_CANNOT_SEND,
    )
)
"""The system's own alarms that storm mode may hold back (by TYPE, as any other alarm)."""
TYPES_MAX = 20
"""At most this many TYPEs in one request."""
BATCH_MAX = 1000
"""At most this many alarms named in one batch resolution (``all`` has no limit)."""


def new_alarm_state(alarm_type: str, storm_types: frozenset[str]) -> AlarmState:
    """Where a new alarm of ``alarm_type`` goes: the storm list while its TYPE is in storm mode
    (``storm_types``), pending otherwise."""
    if alarm_type in storm_types and alarm_type not in NEVER_STORMED:
        return AlarmState.STORM
    return AlarmState.PENDING


def stormable(alarm_types: Iterable[AlarmType]) -> frozenset[str]:
    """The TYPEs storm mode can apply to: those of operator-handled alarm types (a
    system-handled event never raises an alarm) and of the system's own alarms, less the
    TYPEs that always pend."""
    raising = {t.type for t in alarm_types if t.category == OPERATOR_HANDLED}
    return frozenset((raising | SYSTEM_TYPES) - NEVER_STORMED)


def check_types(given: Sequence[str], allowed: frozenset[str]) -> tuple[str, ...]:
    """The TYPEs a request names, upper-cased, each once, sorted; refuses none, too many, a
    malformed one and one storm mode cannot apply to (naming the TYPEs that always pend)."""
    if not given:
        raise ActionRefused("OPS-STORM", "name at least one alarm TYPE", 422)
    if len(given) > TYPES_MAX:
        raise ActionRefused("OPS-STORM", f"at most {TYPES_MAX} alarm TYPEs at once", 422)
    types = sorted({t.strip().upper() for t in given})
    for name in types:
        if not TYPE_PATTERN.fullmatch(name):
            raise ActionRefused(
                "OPS-STORM", f"invalid alarm TYPE {name[:20]!r}: 1-5 letters or digits", 422
            )
        if name in NEVER_STORMED:
            raise ActionRefused(
                "OPS-STORM", f"alarm TYPE {name} always pends: storm mode cannot hold it", 422
            )
        if name not in allowed:
            raise ActionRefused(
                "OPS-STORM", f"no alarm TYPE {name} raises alarms at this station", 422
            )
    return tuple(types)


def check_batch(alarm_ids: Sequence[int] | None, everything: bool) -> tuple[int, ...] | None:
    """What a batch resolution resolves: the alarms named (each once), or None for the whole
    storm list (``everything``). Exactly one of the two must be given."""
    if everything:
        if alarm_ids:
            raise ActionRefused("OPS-STORM", "name alarms or ask for all, not both", 422)
        return None
    if not alarm_ids:
        raise ActionRefused("OPS-STORM", "name the alarms, or ask for all", 422)
    if len(alarm_ids) > BATCH_MAX:
        raise ActionRefused(
            "OPS-STORM", f"at most {BATCH_MAX} alarms named at once (or ask for all)", 422
        )
    return tuple(sorted(set(alarm_ids)))
