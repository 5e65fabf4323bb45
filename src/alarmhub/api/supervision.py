"""Open/close schedules, holidays and on test through the integrator API (decisions sections 9
and 10): the rules and store functions of ``alarmhub schedule``, ``alarmhub holiday`` and
``alarmhub test`` (``store.schedule_data``, ``store.on_test``), each change in one transaction of
the node's writer with an audit record naming the key.

- ``GET|PUT|DELETE /api/v1/accounts/{account}/schedule`` (accounts:read, accounts:write): the
  schedule as ``schedule show --json`` prints it (ETag); PUT is one ``schedule set`` (a window on
  days, a temporary schedule, settings); DELETE clears days' windows, a temporary schedule or
  (neither named) the whole schedule.
- ``GET /api/v1/holidays``, ``GET|PUT|DELETE /api/v1/holidays/{date}``: the station's holidays
  (a key with an account range may only read them); ``GET /api/v1/accounts/{account}/holidays``
  and ``GET|PUT|DELETE .../holidays/{date}``: the account's own closed days.
- ``GET|POST|DELETE /api/v1/accounts/{account}/test`` (accounts:read; test:write to start and
  stop) and ``GET .../test/report``: on test, its report as ``test report --json`` prints its
  signals.

An account is ``account`` in every answer, as in those of accounts, alarms and events (the
store and the command line's JSON call it ``account_number``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from typing import Any, TypeVar

from sqlalchemy import Connection, select
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from alarmhub.api import scoped
from alarmhub.api.plumbing import Api, check_if_match, etag_of, json_response, page, page_of
from alarmhub.api.problems import INPUT, SCOPE, ApiProblem, not_found
from alarmhub.api.scope import seen
from alarmhub.clock import now_us
from alarmhub.core import on_test as test_rules
from alarmhub.core import schedules as rules
from alarmhub.core.api_keys import ApiKey
from alarmhub.core.errors import ProvisioningError
from alarmhub.core.units import iso_utc
from alarmhub.store import api_audit, on_test, schedule_data, schema

T = TypeVar("T")
READ, WRITE, TEST = "accounts:read", "accounts:write", "test:write"
SCHEDULE = schema.schedule.c
HOLIDAY = schema.holiday.c
REMOVE_PARAMS = frozenset({"area", "day", "from", "to"})
SETTINGS = ("area", "timezone", "grace_min", "early_grace_min", "late_to_open",
            "late_to_close", "early_close", "windows", "temporary")  # fmt: skip
"""What a schedule's ETag is made of: what a change sets, not what supervision moves."""
HOLIDAY_FIELDS = {"name": str}
START_FIELDS = {"minutes": int, "zones": list, "types": list, "by": str, "reason": str}


class Supervision:
    """The endpoints of this module."""

    def __init__(self, api: Api) -> None:
        self.api = api

    def routes(self) -> list[BaseRoute]:
        e = self.api.endpoint
        account = "/accounts/{account}"
        return [
            Route(f"{account}/schedule", e(READ, self.schedule), methods=["GET"]),
            Route(f"{account}/schedule", e(WRITE, self.set_schedule), methods=["PUT"]),
            Route(f"{account}/schedule", e(WRITE, self.remove_schedule), methods=["DELETE"]),
            Route("/holidays", e(READ, self.holidays), methods=["GET"]),
            Route("/holidays/{date}", e(READ, self.holiday), methods=["GET"]),
            Route("/holidays/{date}", e(WRITE, self.put_holiday), methods=["PUT"]),
            Route("/holidays/{date}", e(WRITE, self.delete_holiday), methods=["DELETE"]),
            Route(f"{account}/holidays", e(READ, self.holidays), methods=["GET"]),
            Route(f"{account}/holidays/{{date}}", e(READ, self.holiday), methods=["GET"]),
            Route(f"{account}/holidays/{{date}}", e(WRITE, self.put_holiday), methods=["PUT"]),
            Route(f"{account}/holidays/{{date}}", e(WRITE, self.delete_holiday),
                  methods=["DELETE"]),
            Route(f"{account}/test", e(READ, self.test), methods=["GET"]),
            Route(f"{account}/test", e(TEST, self.start_test), methods=["POST"]),
            Route(f"{account}/test", e(TEST, self.stop_test), methods=["DELETE"]),
            Route(f"{account}/test/report", e(READ, self.report), methods=["GET"]),
        ]  # fmt: skip

    # schedules ----------------------------------------------------------------------------------

    async def schedule(self, request: Request, key: ApiKey) -> Response:
        account = seen(key, request.path_params["account"])
        area = schedule_data.parsed(
            rules.parse_area, scoped.params(request, {"area"}).get("area", "")
        )

        def read(conn: Connection) -> dict[str, Any]:
            shown = self._schedule(conn, account, area)
            if shown is None:
                raise not_found(f"account {account} has no schedule" + _of_area(area))
            return shown

        shown = await self.api.read(read)
        return json_response(shown, etag=_schedule_etag(shown))

    async def set_schedule(self, request: Request, key: ApiKey) -> Response:
        account = seen(key, request.path_params["account"])
        scoped.params(request, set())
        change = schedule_data.change_of(
            account, await self.api.body(request, schedule_data.SET_FIELDS)
        )

        def write(conn: Connection) -> dict[str, Any]:
            check_if_match(request, _schedule_etag(self._schedule(conn, account, change.area)))
            now = now_us()
            _refusing(lambda: schedule_data.set_schedule(conn, change, now, self.api.zone))
            api_audit.record(conn, key.name, "PUT SCHEDULE" + _of_area(change.area), account, now)
            shown = self._schedule(conn, account, change.area)
            assert shown is not None
            return shown

        shown = await self.api.write(write)
        return json_response(shown, etag=_schedule_etag(shown))

    async def remove_schedule(self, request: Request, key: ApiKey) -> Response:
        account = seen(key, request.path_params["account"])
        found = scoped.params(request, REMOVE_PARAMS)
        area = schedule_data.parsed(rules.parse_area, found.get("area", ""))
        days = schedule_data.parsed(rules.parse_days, found["day"]) if "day" in found else []
        first = _date(found["from"]) if "from" in found else None
        last = _date(found["to"]) if "to" in found else None
        if days and first is not None:
            raise ApiProblem(INPUT, "day, or from and to: not both")
        if (first is None) != (last is None):
            raise ApiProblem(INPUT, "from and to go together")

        def write(conn: Connection) -> dict[str, Any]:
            before = self._schedule(conn, account, area)
            if before is None:
                raise not_found(f"account {account} has no schedule" + _of_area(area))
            check_if_match(request, _schedule_etag(before))
            now = now_us()
            removed = _refusing(
                lambda: schedule_data.remove_schedule(conn, account, area, days, first, last, now),
                404,
            )
            api_audit.record(conn, key.name, "DELETE SCHEDULE" + _of_area(area), account, now)
            return {"removed": removed, "schedule": self._schedule(conn, account, area)}

        return json_response(await self.api.write(write))

    def _schedule(self, conn: Connection, account: str, area: str) -> dict[str, Any] | None:
        """The schedule as ``schedule show --json`` prints it; None when the account has none
        (the 404 when there is no such account)."""
        scoped.company(conn, account)
        found = conn.execute(
            select(SCHEDULE.area).where(SCHEDULE.account_number == account, SCHEDULE.area == area)
        ).first()
        if found is None:
            return None
        shown = schedule_data.show_schedule(conn, account, area, now_us(), self.api.zone)
        return {**_named(shown), "holidays": [_named(h) for h in shown["holidays"]]}

    # holidays -----------------------------------------------------------------------------------

    async def holidays(self, request: Request, key: ApiKey) -> Response:
        account = _holiday_account(request, key)
        scoped.params(request, {"limit", "cursor"})
        limit, after = page_of(request)

        def read(conn: Connection) -> list[dict[str, Any]]:
            if account:
                scoped.company(conn, account)
            rows = schedule_data.list_holidays(conn, account)
            return [_named(r) for r in rows if r["account_number"] == account and r["date"] > after]

        rows = await self.api.read(read)
        return json_response(page(rows[: limit + 1], limit, "date"))

    async def holiday(self, request: Request, key: ApiKey) -> Response:
        account = _holiday_account(request, key)
        day = _date(request.path_params["date"])
        scoped.params(request, set())
        shown = await self.api.read(lambda conn: _holiday(conn, account, day))
        if shown is None:
            raise not_found(_no_holiday(account, day))
        return json_response(shown, etag=etag_of(shown))

    async def put_holiday(self, request: Request, key: ApiKey) -> Response:
        account = _holiday_account(request, key, changing=True)
        day = _date(request.path_params["date"])
        scoped.params(request, set())
        name = str((await self.api.body(request, HOLIDAY_FIELDS)).get("name", "")).strip()

        def write(conn: Connection) -> dict[str, Any]:
            current = _holiday(conn, account, day)
            check_if_match(request, None if current is None else etag_of(current))
            now = now_us()
            _refusing(lambda: schedule_data.add_holiday(conn, day, account, name, now))
            api_audit.record(conn, key.name, f"PUT HOLIDAY {day}", account, now)
            shown = _holiday(conn, account, day)
            assert shown is not None
            return shown

        shown = await self.api.write(write)
        return json_response(shown, etag=etag_of(shown))

    async def delete_holiday(self, request: Request, key: ApiKey) -> Response:
        account = _holiday_account(request, key, changing=True)
        day = _date(request.path_params["date"])
        scoped.params(request, set())

        def write(conn: Connection) -> dict[str, Any]:
            current = _holiday(conn, account, day)
            if current is None:
                raise not_found(_no_holiday(account, day))
            check_if_match(request, etag_of(current))
            now = now_us()
            schedule_data.remove_holiday(conn, day, account, now)
            api_audit.record(conn, key.name, f"DELETE HOLIDAY {day}", account, now)
            return {**current, "removed": True}

        return json_response(await self.api.write(write))

    # on test ------------------------------------------------------------------------------------

    async def test(self, request: Request, key: ApiKey) -> Response:
        account = seen(key, request.path_params["account"])
        scoped.params(request, set())

        def read(conn: Connection) -> dict[str, Any]:
            scoped.company(conn, account)
            running = [
                t for t in on_test.running_tests(conn, now_us()) if t["account_number"] == account
            ]
            if not running:
                raise not_found(f"account {account} is not on test")
            return _named(test_rules.test_view(running[0]))

        return json_response(await self.api.read(read))

    async def start_test(self, request: Request, key: ApiKey) -> Response:
        account = seen(key, request.path_params["account"])
        scoped.params(request, set())
        fields = await self.api.body(request, START_FIELDS)
        if "minutes" not in fields:
            raise ApiProblem(INPUT, "minutes is required")
        zones = scoped.strings(fields.get("zones", []), "zones")
        types = scoped.strings(fields.get("types", []), "types")
        by = fields.get("by", "").strip() or key.name[: test_rules.BY_MAX]

        def write(conn: Connection) -> dict[str, Any]:
            scoped.company(conn, account)
            now = now_us()
            test = on_test.start(
                conn, account, fields["minutes"], by, now, zones, types, fields.get("reason", "")
            )
            api_audit.record(conn, key.name, "POST TEST", account, now)
            return test

        return json_response(_named(test_rules.test_view(await self.api.write(write))))

    async def stop_test(self, request: Request, key: ApiKey) -> Response:
        account = seen(key, request.path_params["account"])
        by = scoped.params(request, {"by"}).get("by", "").strip() or key.name[: test_rules.BY_MAX]

        def write(conn: Connection) -> dict[str, Any]:
            scoped.company(conn, account)
            now = now_us()
            found = on_test.stop(conn, account, by, now)
            api_audit.record(conn, key.name, "DELETE TEST", account, now)
            return found

        return json_response(_report_view(await self.api.write(write)))

    async def report(self, request: Request, key: ApiKey) -> Response:
        account = seen(key, request.path_params["account"])
        scoped.params(request, set())

        def read(conn: Connection) -> dict[str, Any]:
            scoped.company(conn, account)
            return on_test.report(conn, account)

        return json_response(_report_view(await self.api.read(read)))


# pieces ---------------------------------------------------------------------------------------


def _of_area(area: str) -> str:
    return f" for area {area}" if area else ""


def _schedule_etag(shown: dict[str, Any] | None) -> str | None:
    return None if shown is None else etag_of({k: shown[k] for k in SETTINGS})


def _date(text: str) -> date:
    return schedule_data.parsed(rules.parse_date, text[:32])


def _holiday_account(request: Request, key: ApiKey, changing: bool = False) -> str:
    """The account of a holiday's path ('' for the station's); a key with an account range
    may read the station's holidays but not change them."""
    if "account" in request.path_params:
        return seen(key, request.path_params["account"])
    if changing and key.accounts:
        raise ApiProblem(
            SCOPE, "a key limited to an account range may not change the station's holidays"
        )
    return ""


def _holiday(conn: Connection, account: str, day: date) -> dict[str, Any] | None:
    if account:
        scoped.company(conn, account)
    row = conn.execute(
        select(HOLIDAY.date, HOLIDAY.account_number, HOLIDAY.name).where(
            HOLIDAY.date == day.isoformat(), HOLIDAY.account_number == account
        )
    ).first()
    return None if row is None else {"date": row[0], "account": row[1], "name": row[2]}


def _no_holiday(account: str, day: date) -> str:
    return f"no holiday on {day}" + (f" of account {account}" if account else " of the station")


def _named(shown: dict[str, Any]) -> dict[str, Any]:
    """``shown`` with the store's ``account_number`` as the API names it: ``account``."""
    return {("account" if k == "account_number" else k): v for k, v in shown.items()}


def _refusing(work: Callable[[], T], status: int = 422) -> T:
    """``work``; what the schedule rules refuse (ProvisioningError) as 422 API-INPUT, or 404."""
    try:
        return work()
    except ProvisioningError as exc:
        if status == 404:
            raise not_found(str(exc)) from None
        raise ApiProblem(INPUT, str(exc)) from None


def _report_view(found: dict[str, Any]) -> dict[str, Any]:
    """A test and its signals (each as ``test report --json`` prints it)."""
    test = found["test"]
    shown = {k: v for k, v in test.items() if not k.endswith("_us")}
    shown.update(
        started=iso_utc(test["started_us"]),
        ends=iso_utc(test["ends_us"]),
        ended=iso_utc(test["ended_us"]) if test["ended_us"] else None,
    )
    return {
        "test": _named(shown),
        "signals": [test_rules.signal_view(s) for s in found["signals"]],
    }


# the OpenAPI document -------------------------------------------------------------------------

_S, _NS, _I, _B = scoped.STRING, scoped.NULLABLE_STRING, scoped.INTEGER, scoped.BOOLEAN
_OBJECTS = {"type": "array", "items": {"type": "object"}}
_NULLABLE_OBJECT = {"type": "object", "nullable": True}
SCHEDULE_SCHEMA = scoped.obj({
    "account": _S, "area": _S, "timezone": _S, "grace_min": _I, "early_grace_min": _I,
    "late_to_open": _B, "late_to_close": _B, "early_close": _B, "windows": _OBJECTS,
    "temporary": _OBJECTS, "holidays": _OBJECTS, "today": {"type": "object"},
    "last_open": _NULLABLE_OBJECT, "last_close": _NULLABLE_OBJECT, "alarms": {"type": "object"},
    "checked": _NS, "next_check": _NS,
})  # fmt: skip
_TYPES = {int: _I, bool: _B, str: _S}
SET_BODY = {
    **scoped.obj({k: _TYPES[t] for k, t in schedule_data.SET_FIELDS.items()}, required=False),
    "additionalProperties": False,
}
HOLIDAY_SCHEMA = scoped.obj({"date": _S, "account": _S, "name": _S})
HOLIDAY_BODY = {**scoped.obj({"name": _S}, required=False), "additionalProperties": False}
TEST_SCHEMA = scoped.obj({
    "account": _S, "company_name": _S, "zones": scoped.STRINGS,
    "types": scoped.STRINGS, "by": _S, "reason": _S, "started": _S, "ends": _S,
    "minutes_left": _I,
})  # fmt: skip
TEST_BODY = {
    **scoped.obj({"minutes": {"type": "integer", "minimum": 1,
                              "maximum": test_rules.MINUTES_MAX},
                  "zones": scoped.STRINGS, "types": scoped.STRINGS, "by": _S, "reason": _S},
                 required=False),
    "required": ["minutes"],
    "additionalProperties": False,
}  # fmt: skip
REPORT_SCHEMA = scoped.obj({
    "test": scoped.obj({
        "account": _S, "zones": scoped.STRINGS, "types": scoped.STRINGS, "by": _S,
        "reason": _S, "opr": _NS, "ended_by": _NS, "started": _S, "ends": _S, "ended": _NS,
    }),
    "signals": {"type": "array", "items": scoped.obj({
        "incident_number": _I, "code": _S, "area": _S, "zone": _S, "type": _S,
        "hist_text": _S, "restored": _B, "received": _S,
    })},
})  # fmt: skip
_ACCOUNT, _DATE = scoped.ACCOUNT_PARAM, scoped.in_path("date", "YYYY-MM-DD")
_AREA = scoped.in_query("area", _S, "one area's schedule (none: the whole account's)")
_MISSING = "API-NOTFOUND: no such account (or outside the key's range)"
_INPUT = "API-INPUT: a bad member or parameter, or one the rules refuse"
_ETAG = "API-ETAG: If-Match names another version"


def _holiday_paths(prefix: str, params: list[dict[str, Any]], whose: str) -> dict[str, Any]:
    missing = f"API-NOTFOUND: no such holiday{'' if not params else ' or account'}"
    one = [*params, _DATE]
    return {
        f"/api/v1{prefix}/holidays": {"get": scoped.operation(
            f"{whose} holidays, by date (accounts:read)", scoped.page_schema(HOLIDAY_SCHEMA),
            {"404": _MISSING, "422": _INPUT} if params else {"422": _INPUT},
            [*params, *scoped.PAGE_PARAMS],
        )},
        f"/api/v1{prefix}/holidays/{{date}}": {
            "get": scoped.operation(f"One of {whose.lower()} holidays (accounts:read)",
                                    HOLIDAY_SCHEMA, {"404": missing, "422": _INPUT}, one),
            "put": scoped.operation(
                f"Add or rename one of {whose.lower()} holidays (accounts:write)",
                HOLIDAY_SCHEMA, {"404": missing, "412": _ETAG, "422": _INPUT}, one, HOLIDAY_BODY,
            ),
            "delete": scoped.operation(
                f"Remove one of {whose.lower()} holidays (accounts:write)",
                {**HOLIDAY_SCHEMA, "properties": {**HOLIDAY_SCHEMA["properties"], "removed": _B}},
                {"404": missing, "412": _ETAG, "422": _INPUT}, one,
            ),
        },
    }  # fmt: skip


PATHS: dict[str, Any] = {
    "/api/v1/accounts/{account}/schedule": {
        "get": scoped.operation(
            "The account's open/close schedule (accounts:read)", SCHEDULE_SCHEMA,
            {"404": f"{_MISSING}, or no schedule", "422": _INPUT}, [_ACCOUNT, _AREA],
        ),
        "put": scoped.operation(
            "Set a window on days, a temporary schedule or settings (accounts:write)",
            SCHEDULE_SCHEMA, {"404": _MISSING, "412": _ETAG, "422": _INPUT}, [_ACCOUNT], SET_BODY,
        ),
        "delete": scoped.operation(
            "Clear days' windows, a temporary schedule or the schedule (accounts:write)",
            scoped.obj({"removed": _S, "schedule": {**SCHEDULE_SCHEMA, "nullable": True}}),
            {"404": f"{_MISSING}, or nothing to remove", "412": _ETAG, "422": _INPUT},
            [_ACCOUNT, _AREA, scoped.in_query("day", _S, "days: mon-fri, sat, ..."),
             scoped.in_query("from", _S, "first date of a temporary schedule"),
             scoped.in_query("to", _S, "last date of a temporary schedule")],
        ),
    },
    **_holiday_paths("", [], "The station's"),
    **_holiday_paths("/accounts/{account}", [_ACCOUNT], "The account's own"),
    "/api/v1/accounts/{account}/test": {
        "get": scoped.operation("The account's running test (accounts:read)", TEST_SCHEMA,
                                {"404": f"{_MISSING}, or not on test", "422": _INPUT},
                                [_ACCOUNT]),
        "post": scoped.operation(
            "Put the account on test, or change its test (test:write)", TEST_SCHEMA,
            {"404": _MISSING, "422": _INPUT}, [_ACCOUNT], TEST_BODY,
        ),
        "delete": scoped.operation(
            "End the account's test now (test:write): its report", REPORT_SCHEMA,
            {"404": _MISSING, "409": "API-CONFLICT: the account is not on test", "422": _INPUT},
            [_ACCOUNT, scoped.in_query("by", _S, "who ended it (the key's name)")],
        ),
    },
    "/api/v1/accounts/{account}/test/report": {"get": scoped.operation(
        "The account's last or current test and its signals (accounts:read)", REPORT_SCHEMA,
        {"404": f"{_MISSING}, or never on test", "422": _INPUT}, [_ACCOUNT],
    )},
}  # fmt: skip


def routes(api: Api) -> list[BaseRoute]:
    return Supervision(api).routes()
