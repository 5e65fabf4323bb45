"""Dispatching an agency for an alarm and acknowledging plan steps (decisions section 8), in the
caller's write transaction, by the operator who holds the alarm.

A dispatch records the agency (and the account's dispatch point of that kind), the AVS-01 level
the operator assigned, the agency's reference, who and when, as a DISP operator record such as
``OPR 001 DISPATCHED POLICE AVS 2 REF 5521``. Where the alarm's TYPE needs enhanced call
verification, the dispatch is refused (``OPS-VERIFY``) until two calls to two different numbers
are logged.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, insert, select

from alarmhub.core import operations as ops
from alarmhub.core import plans as rules
from alarmhub.core.errors import ActionRefused
from alarmhub.core.operations import Action
from alarmhub.core.response import AgencyKind
from alarmhub.store import handling, operator_audit, plans, provisioning, queries, schema

REFERENCE_MAX = 40
ACCOUNT = schema.account.c


def check(agency: str, avs: int, reference: str) -> str:
    """The reference of a dispatch whose fields make sense, cleaned; 422 otherwise."""
    if agency not in {a.value for a in AgencyKind}:
        raise ActionRefused("OPS-AGENCY", "agency must be police, fire or medical", 422)
    if avs not in rules.AVS_LEVELS:
        raise ActionRefused("OPS-AVS", "avs must be an AVS-01 level from 0 to 4", 422)
    cleaned = reference.strip()
    if len(cleaned) > REFERENCE_MAX or (cleaned and not cleaned.isprintable()):
        raise ActionRefused(
            "OPS-REFERENCE", f"reference: printable, at most {REFERENCE_MAX} characters", 422
        )
    return cleaned


def dispatch(
    conn: Connection,
    code: str,
    alarm_id: int,
    agency: str,
    avs: int,
    reference: str,
    now_us: int,
) -> dict[str, Any]:
    """Record the dispatch of ``agency`` for the alarm operator ``code`` holds."""
    reference = check(agency, avs, reference)
    _, row = handling.holding_alarm(conn, code, alarm_id)
    alarm_type = row["type"]
    if rules.ecv_required(alarm_type, plans.ecv_setting(conn, alarm_type)) and not rules.ecv_met(
        plans.calls_made(conn, alarm_id)
    ):
        raise ActionRefused(
            "OPS-VERIFY",
            f"a {alarm_type} dispatch needs enhanced call verification: log two calls to two "
            "different numbers first",
            409,
        )
    agency_code = conn.execute(
        select(schema.account.c[agency]).where(ACCOUNT.account_number == row["account_number"])
    ).scalar()
    record = {
        "alarm_id": alarm_id,
        "account_number": row["account_number"],
        "agency": agency,
        "agency_code": agency_code,
        "avs": avs,
        "reference": reference,
        "opr": code,
        "at_us": now_us,
    }
    conn.execute(insert(schema.dispatch).values(record))
    detail = f"{agency.upper()} AVS {avs}" + (f" REF {reference}" if reference else "")
    operator_audit.record(conn, code, Action.DISPATCH, now_us, row, detail)
    provisioning.bump_revision(conn, queries.QUEUE)
    return record


def acknowledge_step(
    conn: Connection, code: str, alarm_id: int, position: int, note: str, now_us: int
) -> None:
    """Mark a step done that only an acknowledgement shows (review video, an instruction)."""
    cleaned = ops.check_note(note)
    _, row = handling.holding_alarm(conn, code, alarm_id)
    step = plans.acknowledge(conn, row, position, cleaned)
    conn.execute(
        insert(schema.step_done).values(
            alarm_id=alarm_id, position=position, opr=code, at_us=now_us, note=cleaned
        )
    )
    detail = f"{position} {step.title().upper()}: {cleaned}"
    operator_audit.record(conn, code, Action.STEP, now_us, row, detail, note=cleaned)
    provisioning.bump_revision(conn, queries.QUEUE)
