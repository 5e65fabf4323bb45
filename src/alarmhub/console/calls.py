"""The alarm screen's work with an account's response data (decisions section 7): calls logged
with whom, which number and how they ended, and passcode checks.

A passcode check reads the hashes it compares with, runs the Argon2 checks outside any
transaction and in turn with every other password check of the node (``FairChecks``), then
records the answer through the writer: the database is never held while hashes are computed.
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

from starlette.requests import Request

from alarmhub.clock import now_us
from alarmhub.console import inputs
from alarmhub.console.plumbing import Body, Session
from alarmhub.console.plumbing import Checking as Plumbing
from alarmhub.core import response
from alarmhub.core.errors import ActionRefused, BadInput, SignInBusy
from alarmhub.store import handling, passcodes

CALL_FIELDS = {"text": str, "contact_id": int, "phone": str, "outcome": str}
PASSCODE_FIELDS = {"passcode": str, "contact_id": int}
OUTCOMES = ", ".join(o.value for o in response.CallOutcome)


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
    call = handling.Call(kind, fields.get("phone", "").strip(), fields.get("contact_id"))
    return text, call


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
    cannot tell; the station raises a DURESS alarm meanwhile."""
    alarm_id = inputs.alarm_id(request.path_params["alarm_id"])
    fields = await body(request, PASSCODE_FIELDS)
    given = inputs.required(fields, "passcode")
    contact_id = fields.get("contact_id")
    code = session.code
    found = await console.read(lambda c: passcodes.hashes(c, code, alarm_id, contact_id))
    answer = response.PasscodeAnswer(verified=False, duress=False)
    if 0 < len(given) <= response.PASSCODE_MAX:  # longer than any passcode: not worth a hash
        try:
            async with console.checks.turn(f"passcode:{code}"):
                answer = await asyncio.to_thread(
                    response.check_passcode,
                    given,
                    found.passcodes,
                    found.duress,
                    passcodes.matches,
                )
        except SignInBusy:
            raise ActionRefused(
                "CONSOLE-BUSY", "the node is busy checking passwords: try again", 503
            ) from None
    await console.write(
        partial(passcodes.apply, code=code, alarm_id=alarm_id, answer=answer, now_us=now_us())
    )
    return {"verified": answer.verified, "duress": answer.duress}
