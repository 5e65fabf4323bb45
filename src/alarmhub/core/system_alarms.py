"""The texts of the alarms the station raises itself: an account's periodic test is late, a
heartbeat pair or a DC-09 account stopped reporting, a sender runs away, a signal names an
unknown account. Each starts with its alarm type's name, so an operator reads what happened
before what it happened to; the raised alarm and its restoral carry the same text."""

from __future__ import annotations

from alarmhub.core.alarm_types import (
    COMMUNICATION_FAILURE,
    FAIL_TO_TEST,
    RUNAWAY,
    SOURCE_FAILURE,
    UNKNOWN_ACCOUNT,
)
from alarmhub.core.dc09 import line_name


def fail_to_test() -> str:
    """An account's periodic test report is overdue (the account is the alarm's own)."""
    return FAIL_TO_TEST.name


def source_failure(source: str, destination: str) -> str:
    """A heartbeat pair stopped beating."""
    return f"{SOURCE_FAILURE.name} {source}:{destination}"


def communication_failure(dc09_account: str, receiver: int | str, line: int | str) -> str:
    """A supervised DC-09 account stopped reporting on a receiver line."""
    return f"{COMMUNICATION_FAILURE.name} DC09 #{dc09_account} {line_name(receiver, line)}"


def runaway(rule: str) -> str:
    """A sender exceeded the runaway rule, described by ``rule``."""
    return f"{RUNAWAY.name} {rule}"


def unknown_account(signal_text: str) -> str:
    """A signal for an account that is not provisioned, with what the signal says."""
    return f"{UNKNOWN_ACCOUNT.name} {signal_text}"
