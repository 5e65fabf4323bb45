"""The supervisors' endpoints of the console: storm mode (which alarm TYPEs are in it, switching
it, the storm list and its batch resolution) and the handling report.

Every endpoint goes through the console's ``api`` wrapper (session 401, CSRF 403 on changes, the
error envelope) and is refused to anyone but a supervisor or an admin (403 ``OPS-ROLE``). Changes
run through the node's writer, after the incident lock, as every action on the queues; the rules
are ``core.storm`` and ``store.storm``'s, the same as the command line's.

- ``GET /console/api/storm``: ``{"types": [{"type", "since_us", "by", "alarms"}], "storm_list":
  N, "fields": [...], "alarms": [[...], ...], "total": N}`` (the storm list as queue rows).
- ``POST /console/api/storm`` ``{"types": ["ACPWR"], "on": true}``: the status after, the TYPEs
  that ``changed`` and, switching off, their storm list (``list``: ``alarms`` and ``total``).
- ``POST /console/api/storm/resolve`` ``{"alarm_ids": [...]}`` or ``{"all": true, "types": [...]}``
  with ``"resolution"`` and an optional ``"note"``: ``{"resolved": N}``.
- ``POST /console/api/storm/pend`` ``{"alarm_ids": [...]}``: those alarms of the storm list go to
  pending after all: ``{"pending": N}``.
- ``GET /console/api/reports/handling?from=YYYY-MM-DD&to=YYYY-MM-DD``: the handling report of
  those days (both included) in the station's time zone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, tzinfo
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from alarmhub.clock import now_us
from alarmhub.console import inputs, views
from alarmhub.console.plumbing import Body, Plumbing
from alarmhub.core import operations as ops
from alarmhub.core import reports as report_rules
from alarmhub.core import storm as rules
from alarmhub.core.errors import BadInput
from alarmhub.store import reports, storm

if TYPE_CHECKING:
    from alarmhub.console.routes import Handler, Session

Api = Callable[["Handler", bool], Callable[[Request], Awaitable[Response]]]
SWITCH_FIELDS = {"types": list, "on": bool}
RESOLVE_FIELDS = {"alarm_ids": list, "all": bool, "types": list, "resolution": str, "note": str}
PEND_FIELDS = {"alarm_ids": list}


class Supervising:
    """Storm mode and the handling report, under ``/console/api``."""

    def __init__(self, console: Plumbing, body: Body, zone: tzinfo | None) -> None:
        self.console = console
        self.body = body
        self.zone = zone if zone is not None else _local_zone()

    def routes(self, api: Api, prefix: str) -> list[BaseRoute]:
        return [
            Route(f"{prefix}/storm", api(self.storm_status, False), methods=["GET"]),
            Route(f"{prefix}/storm", api(self.storm_switch, True), methods=["POST"]),
            Route(f"{prefix}/storm/resolve", api(self.storm_resolve, True), methods=["POST"]),
            Route(f"{prefix}/storm/pend", api(self.storm_pend, True), methods=["POST"]),
            Route(f"{prefix}/reports/handling", api(self.handling_report, False), methods=["GET"]),
        ]

    async def storm_status(self, request: Request, session: Session) -> dict[str, Any]:
        ops.check_supervising(session.operator, "see the storm list")

        def read(conn: Connection) -> dict[str, Any]:
            return {**storm.status(conn), **_storm_list(storm.storm_list(conn))}

        return await self.console.read(read)

    async def storm_switch(self, request: Request, session: Session) -> dict[str, Any]:
        ops.check_supervising(session.operator, "switch storm mode")
        fields = await self.body(request, SWITCH_FIELDS)
        types = _strings(inputs.required(fields, "types"), "types")
        on = inputs.required(fields, "on")
        answer = await self.console.write(
            lambda c: storm.switch(c, session.code, types, on, now_us())
        )
        if "list" in answer:
            answer["list"] = _storm_list(answer["list"])
        return answer

    async def storm_resolve(self, request: Request, session: Session) -> dict[str, Any]:
        ops.check_supervising(session.operator, "resolve the storm list")
        fields = await self.body(request, RESOLVE_FIELDS)
        named = _alarm_ids(fields.get("alarm_ids"))
        types = _strings(fields.get("types", []), "types")
        if types and not fields.get("all"):
            raise BadInput("types go with all")
        chosen = rules.check_batch(named, bool(fields.get("all")))
        resolution = inputs.required(fields, "resolution")
        note = fields.get("note", "")
        resolved = await self.console.write(
            lambda c: storm.resolve(c, session.code, chosen, resolution, note, now_us(), types)
        )
        return {"resolved": resolved}

    async def storm_pend(self, request: Request, session: Session) -> dict[str, Any]:
        ops.check_supervising(session.operator, "send storm alarms to pending")
        named = rules.check_batch(
            _alarm_ids((await self.body(request, PEND_FIELDS)).get("alarm_ids")), False
        )
        assert named is not None  # check_batch asks for alarms when not all
        sent = await self.console.write(lambda c: storm.pend(c, session.code, named, now_us()))
        return {"pending": sent}

    async def handling_report(self, request: Request, session: Session) -> dict[str, Any]:
        ops.check_supervising(session.operator, "see the reports")
        first = request.query_params.get("from", "")
        last = request.query_params.get("to", "")
        start_us, stop_us = report_rules.day_window(first, last, self.zone)
        found = await self.console.read(lambda c: reports.handling(c, start_us, stop_us))
        return {"report": {"from": first, "to": last, **found}}


def _local_zone() -> tzinfo:
    local = datetime.now().astimezone().tzinfo
    assert local is not None
    return local


def _alarm_ids(value: Any) -> list[int] | None:
    if value is not None and not all(
        isinstance(i, int) and not isinstance(i, bool) and 0 < i <= inputs.MAX_ALARM_ID
        for i in value
    ):
        raise BadInput("alarm_ids must be positive whole numbers")
    return None if value is None else list(value)


def _strings(value: list[Any], name: str) -> list[str]:
    if not all(isinstance(v, str) for v in value):
        raise BadInput(f"{name} must be an array of strings")
    return value


def _storm_list(found: dict[str, Any]) -> dict[str, Any]:
    """The storm list as the page reads queues: the fields once, each alarm a row."""
    return {
        "fields": views.QUEUE_FIELDS,
        "alarms": views.queue(found["alarms"]),
        "total": found["total"],
    }
