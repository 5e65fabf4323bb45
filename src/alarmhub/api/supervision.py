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
        account = scoped.seen(key, request.path_params["account"])
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
        account = scoped.seen(key, request.path_params["account"])
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
        account = scoped.seen(key, request.path_params["account"])
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
        return schedule_data.show_schedule(conn, account, area, now_us(), self.api.zone)

    # holidays -----------------------------------------------------------------------------------

    async def holidays(self, request: Request, key: ApiKey) -> Response:
        account = _holiday_account(request, key)
        scoped.params(request, {"limit", "cursor"})
        limit, after = page_of(request)

        def read(conn: Connection) -> list[dict[str, Any]]:
            if account:
                scoped.company(conn, account)
            rows = schedule_data.list_holidays(conn, account)
            return [r for r in rows if r["account_number"] == account and r["date"] > after]

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
        account = scoped.seen(key, request.path_params["account"])
        scoped.params(request, set())

        def read(conn: Connection) -> dict[str, Any]:
            scoped.company(conn, account)
            running = [
                t for t in on_test.running_tests(conn, now_us()) if t["account_number"] == account
            ]
            if not running:
                raise not_found(f"account {account} is not on test")
            return test_rules.test_view(running[0])

        return json_response(await self.api.read(read))

    async def start_test(self, request: Request, key: ApiKey) -> Response:
        account = scoped.seen(key, request.path_params["account"])
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

        return json_response(test_rules.test_view(await self.api.write(write)))

    async def stop_test(self, request: Request, key: ApiKey) -> Response:
        account = scoped.seen(key, request.path_params["account"])
        by = scoped.params(request, {"by"}).get("by", "").strip() or key.name[: test_rules.BY_MAX]

        def write(conn: Connection) -> dict[str, Any]:
            scoped.company(conn, account)
            now = now_us()
            found = on_test.stop(conn, account, by, now)
            api_audit.record(conn, key.name, "DELETE TEST", account, now)
            return found

        return json_response(_report_view(await self.api.write(write)))

    async def report(self, request: Request, key: ApiKey) -> Response:
        account = scoped.seen(key, request.path_params["account"])
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
        return scoped.seen(key, request.path_params["account"])
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
    return None if row is None else {"date": row[0], "account_number": row[1], "name": row[2]}


def _no_holiday(account: str, day: date) -> str:
    return f"no holiday on {day}" + (f" of account {account}" if account else " of the station")


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
    return {"test": shown, "signals": [test_rules.signal_view(s) for s in found["signals"]]}


def routes(api: Api) -> list[BaseRoute]:
    return Supervision(api).routes()
