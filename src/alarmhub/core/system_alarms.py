"""The texts of the alarms the station raises itself (supervision failures, runaway, unknown
accounts, what a receiver hands over that is no signal). Each starts with its alarm type's
name, so an operator reads what happened before what it happened to; the raised alarm and its
restoral carry the same text."""

from __future__ import annotations

from alarmhub.core.alarm_types import (
    AUTOMATION_OUTPUT_FAILURE,
    COMMUNICATION_FAILURE,
    FAIL_TO_TEST,
    OUTPUT_CANNOT_SEND,
    RECEIVER_DATA,
    RECEIVER_EVENT,
    RECEIVER_LINK_FAILURE,
    RUNAWAY,
    SOURCE_FAILURE,
    UNKNOWN_ACCOUNT,
    cut_text,
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


def receiver_link_failure(name: str) -> str:
    """A link to a receiver's automation output went silent (no frame, no link test)."""
    return f"{RECEIVER_LINK_FAILURE.name} {name}"


def automation_output_failure(name: str) -> str:
    """An automation output could not deliver to the automation downstream."""
    return f"{AUTOMATION_OUTPUT_FAILURE.name} {name}"


def output_cannot_send(name: str, panel: str, code: str) -> str:
    """An automation output cannot carry what a panel reported (a panel its protocol has no
    room for): the output, the panel and the event code, none of it sent."""
    return cut_text(f"{output_cannot_send_of(name)}{panel} {code}")


def output_cannot_send_of(name: str) -> str:
    """How the text of the output ``name``'s OUTPUT CANNOT SEND alarms begins (an output's name
    holds no space)."""
    return f"{OUTPUT_CANNOT_SEND.name} {name} "


def receiver_event(link: str, text: str) -> str:
    """A receiver's own event (its trouble, its time update) as the receiver gave it."""
    return cut_text(f"{RECEIVER_EVENT.name} {link} {text}")


def receiver_data(link: str, text: str) -> str:
    """A frame of a receiver link that could not be read, its control bytes escaped."""
    return cut_text(f"{RECEIVER_DATA.name} {link} {text}")
