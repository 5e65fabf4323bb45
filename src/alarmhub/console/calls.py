"""The alarm screen's work with an account's response data (decisions section 7): calls logged
with whom, which number and how they ended, and passcode checks.

A passcode check reads the hashes it compares with, runs the Argon2 checks outside any
transaction and in turn with every other password check of the node (``FairChecks``), then
records the answer through the writer: the database is never held while hashes are computed.
Wrong codes are limited (``core.response.PASSCODE_FAILURES_MAX``): per operator by a throttle
counted before the check, per alarm by its NOT VERIFIED records of the window, read and written
in the operator's turn so that every worker and node counts the same records.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from functools import partial
from typing import Any

from sqlalchemy import Connection
from starlette.requests import Request

from alarmhub.clock import now_us
from alarmhub.console import inputs
from alarmhub.console.plumbing import Body, Session
from alarmhub.console.plumbing import Checking as Plumbing
from alarmhub.core import response, units
from alarmhub.core.errors import ActionRefused, BadInput, SignInBusy
from alarmhub.core.ids import is_id
from alarmhub.store import handling, passcodes

CALL_FIELDS = {"text": str, "contact_id": int, "phone": str, "outcome": str}
PASSCODE_FIELDS = {"passcode": str, "contact_id": int}
OUTCOMES = ", ".join(o.value for o in response.CallOutcome)
LIMITED = "CONSOLE-PASSCODES"
log = logging.getLogger("alarmhub.console")


def call_of(fields: dict[str, Any]) -> tuple[str, handling.Call | None]:
    """The note and the call a body describes: ``{"text"}`` alone is a call in words; a
    ``contact_id`` or ``phone`` makes it a call to someone, which names its ``outcome``."""
    text = fields.get("text", "")
    if "contact_id" not in fields and "phone" not in fields:
        if "outcome" in fields:
            raise BadInput("a call's outcome goes with the contact_id or phone called")
        return inputs.required(fields, "text"), None
    outcome = inputs.required(fields, "outcome")
    try:
        kind = response.CallOutcome(outcome)
    except ValueError:
        raise BadInput(f"outcome must be one of {OUTCOMES}") from None
    contact_id = _contact_id(fields)
    call = handling.Call(kind, fields.get("phone", "").strip(), contact_id)
    return text, call


def _contact_id(fields: dict[str, Any]) -> int | None:
    """The body's ``contact_id``, when it has one that can be a row's (``core.ids``)."""
    contact_id = fields.get("contact_id")
    if contact_id is not None and not is_id(contact_id):
        raise BadInput("contact_id must be a contact's id, a whole number from 1")
    return contact_id


async def log_call(
    console: Plumbing, body: Body, request: Request, session: Session
) -> dict[str, Any]:
    alarm_id = inputs.alarm_id(request.path_params["alarm_id"])
    text, call = call_of(await body(request, CALL_FIELDS))
    await console.write(
        lambda c: handling.log_call(c, session.code, alarm_id, text, now_us(), call)
    )
    return {}


async def check_passcode(
    console: Plumbing, body: Body, request: Request, session: Session
) -> dict[str, Any]:
    """``{"verified", "duress"}``: the duress code answers verified, so that whoever gave it
    cannot tell; the station raises a DURESS alarm meanwhile. Wrong codes are limited per
    operator (``console.passcode_throttle``, counted before the check) and per alarm (its
    records of the window, read in the operator's turn): beyond either, 429 CONSOLE-PASSCODES."""
    alarm_id = inputs.alarm_id(request.path_params["alarm_id"])
    fields = await body(request, PASSCODE_FIELDS)
    given = inputs.required(fields, "passcode")
    contact_id = _contact_id(fields)
    code = session.code
    wait = console.passcode_throttle.attempt("", code, time.monotonic())
    if wait:
        log.warning("passcode check throttled", extra={"operator": code, "alarm_id": alarm_id})
        raise ActionRefused(LIMITED, f"too many wrong passcodes: wait {math.ceil(wait)} s", 429)
    try:
        async with console.checks.turn(f"passcode:{code}"):
            answer = await _check(console, code, alarm_id, contact_id, given)
    except SignInBusy:
        raise ActionRefused(
            "CONSOLE-BUSY", "the node is busy checking passwords: try again", 503
        ) from None
    if answer.verified:
        console.passcode_throttle.succeeded("", code)
    return {"verified": answer.verified, "duress": answer.duress}


async def _check(
    console: Plumbing, code: str, alarm_id: int, contact_id: int | None, given: str
) -> response.PasscodeAnswer:
    """In the operator's turn: the alarm's wrong codes of the window counted (refused at the
    limit), the Argon2 checks in a thread, and the answer recorded before the turn ends, so
    that the next check counts this one."""
    since = now_us() - units.minutes_us(response.PASSCODE_LOCK_MINUTES)

    def read(conn: Connection) -> tuple[passcodes.Hashes, int]:
        found = passcodes.hashes(conn, code, alarm_id, contact_id)
        return found, passcodes.failed_checks(conn, alarm_id, since)

    found, failures = await console.read(read)
    if response.passcode_locked(failures):
        log.warning(
            "passcode check refused",
            extra={"operator": code, "alarm_id": alarm_id, "failures": failures},
        )
        minutes = response.PASSCODE_LOCK_MINUTES
        raise ActionRefused(
            LIMITED, f"{failures} wrong passcodes on this alarm in {minutes} minutes: wait", 429
        )
    answer = response.PasscodeAnswer(verified=False, duress=False)
    if 0 < len(given) <= response.PASSCODE_MAX:  # longer than any passcode: not worth a hash
        answer = await asyncio.to_thread(
            response.check_passcode, given, found.passcodes, found.duress, passcodes.matches
        )
    await console.write(
        partial(passcodes.apply, code=code, alarm_id=alarm_id, answer=answer, now_us=now_us())
    )
    return answer
