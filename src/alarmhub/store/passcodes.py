"""Passcode checks on an alarm (decisions section 7), in two steps around the Argon2 work,
which runs outside any transaction: what to compare with (the hashes of the account's passcodes
and duress code, for the operator who holds the alarm), then what the answer changes.

A verified passcode sets the alarm's PASSCODE_VERIFIED to ``Y``. The duress code answers
verified too, leaves PASSCODE_VERIFIED as it was, and raises a DURESS alarm on the account, first
in pending and never handed to the operator who made the check. Each check is an operator record
(PASS) that says how it ended, never what was said.
"""

from __future__ import annotations

from dataclasses import dataclass

from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from sqlalchemy import Connection, func, select, update

from alarmhub.core.alarm_types import DURESS
from alarmhub.core.operations import Action
from alarmhub.core.response import NOT_VERIFIED, PasscodeAnswer
from alarmhub.core.router import Router
from alarmhub.core.sites import Arriving
from alarmhub.store import alarm_response, handling, operator_audit, provisioning, queries, schema
from alarmhub.store.operators import HASHER
from alarmhub.store.provisioning_cache import ProvisioningCache
from alarmhub.store.repository import Inserts, SqlRepository

ALARM = schema.alarm.c
HISTORY = schema.history.c


@dataclass(frozen=True, slots=True)
class Hashes:
    """What a passcode given for an alarm is compared with."""

    account_number: str
    passcodes: list[str]
    duress: str | None


def hashes(conn: Connection, code: str, alarm_id: int, contact_id: int | None = None) -> Hashes:
    """The hashes of the account of the alarm operator ``code`` holds (refused otherwise): the
    passcodes of its contacts (of one, when named) and its duress code."""
    _, row = handling.holding_alarm(conn, code, alarm_id)
    account = row["account_number"]
    passcodes, duress = alarm_response.passcode_hashes(conn, account, contact_id)
    return Hashes(account, passcodes, duress)


def failed_checks(conn: Connection, alarm_id: int, since_us: int) -> int:
    """The wrong codes given for the alarm since ``since_us``: its PASS records that say
    NOT VERIFIED (an index range of the alarm's incident)."""
    query = select(func.count()).where(
        HISTORY.incident_number == alarm_id,
        HISTORY.type == Action.PASSCODE.value,
        HISTORY.note == NOT_VERIFIED,
        HISTORY.received_us >= since_us,
    )
    return int(conn.execute(query).scalar_one())


def matches(passcode_hash: str, given: str) -> bool:
    """Whether ``given`` is the code of ``passcode_hash`` (a damaged hash matches none)."""
    try:
        return bool(HASHER.verify(passcode_hash, given))
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def apply(
    conn: Connection, code: str, alarm_id: int, answer: PasscodeAnswer, now_us: int
) -> int | None:
    """Record a check's answer on the alarm; the DURESS alarm it raised, if any."""
    _, row = handling.holding_alarm(conn, code, alarm_id)  # still theirs after the hashing
    operator_audit.record(conn, code, Action.PASSCODE, now_us, row, answer.record)
    raised = None
    if answer.duress:
        repo = SqlRepository(conn, ProvisioningCache(), Inserts(conn.engine))
        raised = Router.raise_alarm(repo, DURESS, row["account_number"], DURESS.name, now_us)
        repo.flush()
        conn.execute(update(schema.alarm).where(ALARM.alarm_id == raised).values(not_for_opr=code))
        handling.hand_out(conn, now_us, arriving=[Arriving(raised, row["account_number"], code)])
    elif answer.verified:
        conn.execute(
            update(schema.alarm).where(ALARM.alarm_id == alarm_id).values(passcode_verified="Y")
        )
    provisioning.bump_revision(conn, queries.QUEUE)
    return raised
