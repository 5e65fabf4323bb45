"""The alarm screen's actions on an alarm's plan (decisions section 8): dispatching an agency
(with the AVS-01 level the operator assigns and the agency's reference; refused ``OPS-VERIFY``
while enhanced call verification is owed) and acknowledging a step that only a note shows done
(review video, an instruction)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from alarmhub.clock import now_us
from alarmhub.console import inputs
from alarmhub.console.plumbing import Body, Session, Writes
from alarmhub.store import dispatch

DISPATCH_FIELDS = {"agency": str, "avs": int, "reference": str}
STEP_FIELDS = {"position": int, "note": str}


async def dispatch_agency(
    console: Writes, body: Body, request: Request, session: Session
) -> dict[str, Any]:
    alarm_id = inputs.alarm_id(request.path_params["alarm_id"])
    fields = await body(request, DISPATCH_FIELDS)
    agency = inputs.required(fields, "agency")
    avs = inputs.required(fields, "avs")
    reference = fields.get("reference", "")
    record = await console.write(
        lambda c: dispatch.dispatch(c, session.code, alarm_id, agency, avs, reference, now_us())
    )
    return {"dispatch": {k: record[k] for k in ("agency", "agency_code", "avs", "reference")}}


async def acknowledge_step(
    console: Writes, body: Body, request: Request, session: Session
) -> dict[str, Any]:
    alarm_id = inputs.alarm_id(request.path_params["alarm_id"])
    fields = await body(request, STEP_FIELDS)
    position = inputs.required(fields, "position")
    note = inputs.required(fields, "note")
    await console.write(
        lambda c: dispatch.acknowledge_step(c, session.code, alarm_id, position, note, now_us())
    )
    return {}
