"""Alarms, history and alarm types of the integrator API (read only).

- ``GET /api/v1/alarms?state=pending|in_process|on_hold&limit&cursor`` (alarms:read): the open
  alarms of the key's account range, by alarm id.
- ``GET /api/v1/alarms/{alarm_id}`` (alarms:read): one alarm with its events (signals, restorals,
  system events) and the operators' actions, as the console's alarm screen has them
  (``store.queries.alarm_detail``); an alarm outside the key's range is answered as a missing one.
- ``GET /api/v1/accounts/{account}/history`` (alarms:read): the account's history, newest first,
  with the query interface's XMHIST filters (``hours``, or ``start_date`` and ``stop_date`` with
  optional ``start_time`` and ``stop_time`` in the station's time zone; ``search_type=OPR``,
  ``service_only``, ``no_multiples``), read by XMHIST's own query, a page at a time.
- ``GET /api/v1/alarm-types`` and ``GET /api/v1/alarm-types/{code}`` (accounts:read): the alarm
  types in effect (``alarmhub alarmtype list``).

Field names are snake_case; moments are ISO 8601 UTC to the millisecond.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from alarmhub.api import scoped
from alarmhub.api.plumbing import Api, encode_cursor, etag_of, json_response, page, page_of
from alarmhub.api.problems import INPUT, ApiProblem, not_found
from alarmhub.api.scope import seen
from alarmhub.clock import now_us
from alarmhub.core.api_keys import ApiKey
from alarmhub.core.errors import QueryRefused
from alarmhub.core.ids import parse_id
from alarmhub.core.operations import OPEN_STATES
from alarmhub.core.router import RoutePath
from alarmhub.store import provisioning, queries
from alarmhub.xm import methods

ID_DIGITS = 18
HISTORY_PARAMS = {
    "hours": "HOURS", "start_date": "STARTDATE", "stop_date": "STOPDATE",
    "start_time": "STARTTIME", "stop_time": "STOPTIME", "search_type": "SEARCHTYPE",
}  # fmt: skip
"""The API's name of each XMHIST filter (the Y/N ones are booleans, below)."""
HISTORY_FLAGS = {"service_only": "SERVICEONLY", "no_multiples": "NOMULTIPLES"}
DEFAULT_HOURS = "24"
_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_TIME = re.compile(r"([0-9]{2}):([0-9]{2})")


def alarm_view(row: Mapping[str, Any]) -> dict[str, Any]:
    """An alarm as the API shows it."""
    return {
        "alarm_id": row["alarm_id"],
        "account": row["account_number"],
        "company_name": row.get("company_name") or "",
        "state": row["state"],
        "type": row["type"],
        "priority": row["priority"],
        "color": row["color"],
        "hist_text": row["hist_text"],
        "code": row["code"],
        "event_code": row["event_code"],
        "area": row["area"],
        "zone": row["zone"],
        "opr": row["opr"],
        "passcode_verified": row["passcode_verified"],
        "received_at": scoped.iso(row["received_us"]),
        "pending_at": scoped.iso(row["pending_us"]),
        "restored_at": scoped.iso(row["restore_us"]),
        "taken_at": scoped.iso(row["taken_us"]),
        "first_call_at": scoped.iso(row["first_call_us"]),
        "hold_until": scoped.iso(row["hold_until_us"]),
        "hold_reason": row["hold_reason"],
        "been_on_hold": bool(row["been_on_hold"]),
        "resolved_at": scoped.iso(row["resolved_us"]),
        "resolution": row["resolution"],
    }


def event_view(row: Mapping[str, Any]) -> dict[str, Any]:
    """A history event (a signal, a system event or an operator's action)."""
    return {
        "event_id": row["event_id"],
        "account": row["account_number"],
        "incident_number": row["incident_number"],
        "alarm_id": row["alarm_id"],
        "received_at": scoped.iso(row["received_us"]),
        "code": row["code"],
        "event_code": row["event_code"],
        "area": row["area"],
        "zone": row["zone"],
        "type": row["type"],
        "opr": row["opr"],
        "alarm_category": row["alarm_category"],
        "priority": row["priority"],
        "color": row["color"],
        "hist_text": row["hist_text"],
        "pr_checksum": row["pr_checksum"],
        "note": row["note"],
    }


class Alarms:
    """The endpoints of this module."""

    def __init__(self, api: Api) -> None:
        self.api = api

    def routes(self) -> list[BaseRoute]:
        api = self.api
        return [
            Route("/alarms", api.endpoint("alarms:read", self.alarms), methods=["GET"]),
            Route("/alarms/{alarm_id}", api.endpoint("alarms:read", self.alarm), methods=["GET"]),
            Route("/accounts/{account}/history", api.endpoint("alarms:read", self.history),
                  methods=["GET"]),
            Route("/alarm-types", api.endpoint("accounts:read", self.alarm_types),
                  methods=["GET"]),
            Route("/alarm-types/{code}", api.endpoint("accounts:read", self.alarm_type),
                  methods=["GET"]),
        ]  # fmt: skip

    # alarms -------------------------------------------------------------------------------------

    async def alarms(self, request: Request, key: ApiKey) -> Response:
        found = scoped.params(request, {"state", "limit", "cursor"})
        states = [str(s) for s in OPEN_STATES]
        if "state" in found:
            if found["state"] not in states:
                raise ApiProblem(INPUT, f"state must be one of {', '.join(states)}")
            states = [found["state"]]
        limit, after = page_of(request)
        after_id = _cursor_id(after)
        rows = await self.api.read(
            lambda c: queries.open_alarms_after(c, states, key.accounts, after_id, limit + 1)
        )
        return json_response(page([alarm_view(r) for r in rows], limit, "alarm_id"))

    async def alarm(self, request: Request, key: ApiKey) -> Response:
        scoped.params(request, set())
        text = request.path_params["alarm_id"]
        missing = not_found(f"no alarm {text[: ID_DIGITS + 2]!r}")
        alarm_id = parse_id(text)
        if alarm_id is None:
            raise missing

        def read(conn: Connection) -> dict[str, Any]:
            row = queries.alarm(conn, alarm_id)
            if row is None or not key.sees(row["account_number"]):
                raise missing
            found = queries.alarm_detail(conn, alarm_id, history_limit=0)
            account = found["account"] or {}
            shown = alarm_view({**found["alarm"], "company_name": account.get("company_name")})
            events = found["events"]
            actions = [e for e in events if e["pr_checksum"] == RoutePath.OPERATOR.value]
            signals = [e for e in events if e["pr_checksum"] != RoutePath.OPERATOR.value]
            shown["events"] = [event_view(e) for e in signals]
            shown["actions"] = [event_view(e) for e in actions]
            return shown

        return json_response(await self.api.read(read))

    # history ------------------------------------------------------------------------------------

    async def history(self, request: Request, key: ApiKey) -> Response:
        account = seen(key, request.path_params["account"])
        allowed = {*HISTORY_PARAMS, *HISTORY_FLAGS, "limit", "cursor"}
        found = scoped.params(request, allowed)
        limit, after = page_of(request)
        before = _history_cursor(after)
        now = now_us()
        query = _history_query(account, found, self.api, now)

        def read(conn: Connection) -> list[dict[str, Any]]:
            scoped.company(conn, account)
            return queries.account_history(
                conn,
                account,
                query.start_us,
                query.stop_us,
                limit=limit + 1,
                paths=methods.history_paths(query),
                exclude_types=methods.UNRESOLVED_TYPES if query.no_multiples else frozenset(),
                settled_only=query.no_multiples,
                before=before,
            )

        rows = await self.api.read(read)
        more = len(rows) > limit
        rows = rows[:limit]
        cursor = None
        if more and rows:
            cursor = encode_cursor(f"{rows[-1]['received_us']}.{rows[-1]['event_id']}")
        return json_response({"items": [event_view(r) for r in rows], "next_cursor": cursor})

    # alarm types --------------------------------------------------------------------------------

    async def alarm_types(self, request: Request, key: ApiKey) -> Response:
        scoped.params(request, {"limit", "cursor"})
        limit, after = page_of(request)
        rows = await asyncio.to_thread(provisioning.list_alarm_types, self.api.engine)
        chosen = [r for r in rows if r["code"] > after][: limit + 1]
        return json_response(page(chosen, limit, "code"))

    async def alarm_type(self, request: Request, key: ApiKey) -> Response:
        scoped.params(request, set())
        code = request.path_params["code"]
        rows = await asyncio.to_thread(provisioning.list_alarm_types, self.api.engine)
        found = [r for r in rows if r["code"] == code]
        if not found:
            raise not_found(f"no alarm type {code[:8]!r}")
        return json_response(found[0], etag=etag_of(found[0]))


def _cursor_id(after: str) -> int:
    if not after:
        return 0
    if not (after.isascii() and after.isdigit() and len(after) <= ID_DIGITS):
        raise ApiProblem(INPUT, "cursor is not one this API gave")
    return int(after)


def _history_cursor(after: str) -> tuple[int, int] | None:
    if not after:
        return None
    at, _, event_id = after.partition(".")
    if not all(p.isascii() and p.isdigit() and len(p) <= ID_DIGITS for p in (at, event_id)):
        raise ApiProblem(INPUT, "cursor is not one this API gave")
    return int(at), int(event_id)


def _history_query(
    account: str, found: Mapping[str, str], api: Api, now: int
) -> methods.HistoryQuery:
    """The XMHIST query of the request's filters (its dates ``YYYY-MM-DD``, times ``HH:MM``);
    no window given: the last 24 hours. Refusals name the API's parameter."""
    form = {"ACCOUNT": account}
    for name, field in HISTORY_PARAMS.items():
        value = found.get(name)
        if value is None:
            continue
        if name.endswith("_date"):
            value = _joined(_DATE, value, name, "YYYY-MM-DD")
        elif name.endswith("_time"):
            value = _joined(_TIME, value, name, "HH:MM")
        elif name == "search_type" and value != "OPR":
            raise ApiProblem(INPUT, "search_type must be OPR (operators' records too)")
        form[field] = value
    for name, field in HISTORY_FLAGS.items():
        form[field] = "Y" if scoped.flag(dict(found), name) else "N"
    if not {"hours", "start_date", "stop_date"} & set(found):
        form["HOURS"] = DEFAULT_HOURS
    try:
        return methods.parse_history_query(form, api.zone, now)
    except QueryRefused as refused:
        field = str(refused.body.get("message", "")).split(" ")[0]
        names = {f: n for n, f in {**HISTORY_PARAMS, **HISTORY_FLAGS}.items()}
        if field in names:
            raise ApiProblem(INPUT, f"{names[field]} is invalid") from None
        raise ApiProblem(
            INPUT, "give hours (a whole number above 0), or start_date and stop_date"
        ) from None


def _joined(pattern: re.Pattern[str], value: str, name: str, form: str) -> str:
    matched = pattern.fullmatch(value)
    if matched is None:
        raise ApiProblem(INPUT, f"{name} must be {form}")
    return "".join(matched.groups())


# the OpenAPI document -------------------------------------------------------------------------

_S, _NS, _I, _B = scoped.STRING, scoped.NULLABLE_STRING, scoped.INTEGER, scoped.BOOLEAN
ALARM = scoped.obj({
    "alarm_id": _I, "account": _S, "company_name": _S,
    "state": {"type": "string", "enum": ["pending", "in_process", "on_hold", "resolved", "storm"]},
    "type": _S, "priority": _S, "color": _S, "hist_text": _S, "code": _S, "event_code": _S,
    "area": _S, "zone": _S, "opr": _NS, "passcode_verified": _S, "received_at": _S,
    "pending_at": _S, "restored_at": _NS, "taken_at": _NS, "first_call_at": _NS,
    "hold_until": _NS, "hold_reason": _NS, "been_on_hold": _B, "resolved_at": _NS,
    "resolution": _NS,
})  # fmt: skip
EVENT = scoped.obj({
    "event_id": _I, "account": _S, "incident_number": _I,
    "alarm_id": {"type": "integer", "nullable": True}, "received_at": _S, "code": _S,
    "event_code": _S, "area": _S, "zone": _S, "type": _S, "opr": _NS, "alarm_category": _S,
    "priority": _S, "color": _S, "hist_text": _S, "pr_checksum": _S, "note": _NS,
})  # fmt: skip
DETAIL = {
    **ALARM,
    "properties": {
        **ALARM["properties"],
        "events": {"type": "array", "items": EVENT},
        "actions": {"type": "array", "items": EVENT},
    },
    "required": sorted([*ALARM["required"], "events", "actions"]),
}
ALARM_TYPE = scoped.obj({
    "code": _S, "type": _S, "restore_type": _S, "priority": _S, "color": _S, "category": _S,
    "restore_expected": _B, "hist_text": _S, "contact_list": _S, "overridden": _B,
})  # fmt: skip
_FLAG = {"type": "string", "enum": ["true", "false"]}
_HISTORY_PARAMS = [
    scoped.in_query("hours", _S, "the last HOURS hours (24 when no window is given)"),
    scoped.in_query("start_date", _S, "YYYY-MM-DD, the station's day (with stop_date)"),
    scoped.in_query("stop_date", _S, "YYYY-MM-DD, the station's day (with start_date)"),
    scoped.in_query("start_time", _S, "HH:MM on start_date (00:00)"),
    scoped.in_query("stop_time", _S, "HH:MM on stop_date (the end of the day)"),
    scoped.in_query("search_type", {"type": "string", "enum": ["OPR"]},
                    "OPR: the operators' records too"),
    scoped.in_query("service_only", _FLAG, "only the service system's own events"),
    scoped.in_query("no_multiples", _FLAG, "no system events, no events of open alarms"),
    *scoped.PAGE_PARAMS,
]  # fmt: skip
_NOT_FOUND = {"404": "API-NOTFOUND: no such account (or outside the key's range)"}
_INPUT = {"422": "API-INPUT: a bad query parameter"}
PATHS: dict[str, Any] = {
    "/api/v1/alarms": {"get": scoped.operation(
        "The open alarms of the key's range, by alarm id (alarms:read)",
        scoped.page_schema(ALARM), _INPUT,
        [scoped.in_query("state", {"type": "string", "enum": [str(s) for s in OPEN_STATES]},
                         "only the alarms in this state"), *scoped.PAGE_PARAMS],
    )},
    "/api/v1/alarms/{alarm_id}": {"get": scoped.operation(
        "An alarm with its events and the operators' actions (alarms:read)", DETAIL,
        {"404": "API-NOTFOUND: no such alarm (or outside the key's range)", **_INPUT},
        [scoped.in_path("alarm_id", "the alarm's id (its incident number)")],
    )},
    "/api/v1/accounts/{account}/history": {"get": scoped.operation(
        "The account's history, newest first, with the XMHIST filters (alarms:read)",
        scoped.page_schema(EVENT), {**_NOT_FOUND, **_INPUT},
        [scoped.ACCOUNT_PARAM, *_HISTORY_PARAMS],
    )},
    "/api/v1/alarm-types": {"get": scoped.operation(
        "The alarm types in effect, by event code (accounts:read)",
        scoped.page_schema(ALARM_TYPE), _INPUT, scoped.PAGE_PARAMS,
    )},
    "/api/v1/alarm-types/{code}": {"get": scoped.operation(
        "One alarm type (accounts:read)", ALARM_TYPE,
        {"404": "API-NOTFOUND: no such event code", **_INPUT},
        [scoped.in_path("code", "the Contact ID event code, three digits")],
    )},
}  # fmt: skip


def routes(api: Api) -> list[BaseRoute]:
    return Alarms(api).routes()
