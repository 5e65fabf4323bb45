"""The console's work with an account's alarms together (one operator per site, decisions
section 8): resolving an alarm with its siblings, and a supervisor moving an account's alarms to
another operator. The rules are ``core.sites``; the work is ``store.sites``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.requests import Request

from alarmhub.clock import now_us
from alarmhub.console import inputs
from alarmhub.console.plumbing import Body, Session
from alarmhub.console.plumbing import Writes as Plumbing
from alarmhub.core.account import account_number_problem
from alarmhub.core.errors import BadInput
from alarmhub.core.sites import SIBLINGS_MAX
from alarmhub.store import sites

RESOLVE_FIELDS = {"resolution": str, "note": str, "siblings": list}
MOVE_FIELDS = {"to": str}


def sibling_ids(fields: Mapping[str, Any]) -> list[int]:
    """The ``siblings`` of a resolve body: alarm ids (none when absent)."""
    given = fields.get("siblings", [])
    if len(given) > SIBLINGS_MAX:
        raise BadInput(f"at most {SIBLINGS_MAX} siblings resolve with one alarm")
    ids = []
    for item in given:
        if not isinstance(item, int) or isinstance(item, bool):
            raise BadInput("siblings must be alarm ids (whole numbers)")
        ids.append(inputs.alarm_id(str(item)))
    return ids


async def resolve(
    console: Plumbing, body: Body, request: Request, session: Session
) -> dict[str, Any]:
    """Resolve the alarm, and its ``siblings`` with it (all or none); ``{"resolved": [ids]}``."""
    alarm_id = inputs.alarm_id(request.path_params["alarm_id"])
    fields = await body(request, RESOLVE_FIELDS)
    resolution = inputs.required(fields, "resolution")
    note = fields.get("note", "")
    together = sibling_ids(fields)
    resolved = await console.write(
        lambda c: sites.resolve_together(
            c, session.code, alarm_id, together, resolution, note, now_us()
        )
    )
    return {"resolved": resolved}


async def move(console: Plumbing, body: Body, request: Request, session: Session) -> dict[str, Any]:
    """A supervisor moves the account's in-process and held alarms to operator ``to``;
    ``{"moved": [ids]}``."""
    account: str = request.path_params["account"]
    problem = account_number_problem(account)
    if problem:
        raise BadInput(problem)
    to = inputs.required(await body(request, MOVE_FIELDS), "to").strip()
    if not to:
        raise BadInput("name the operator the alarms go to")
    code = session.code
    moved = await console.write(lambda c: sites.move_account(c, code, account, to, now_us()))
    return {"moved": moved}
