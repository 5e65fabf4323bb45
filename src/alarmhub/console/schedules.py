"""The console's open/close schedules (decisions section 9): the schedule block of the alarm
screen, an operator's manual open or close, and the supervisors' Schedules view (an account's
schedule and the station's holidays). The rules are ``core.schedules`` and
``store.schedule_data``'s, the same as ``alarmhub schedule`` and ``alarmhub holiday``'s; every
change runs through the node's writer, after the incident lock.

- ``POST /console/api/accounts/{account}/openclose`` ``{"opening": true, "area": ""}`` (any
  operator): ``{"openclose": {"account_number", "area", "opening", "opr"}}``; refused ``409
  OPS-SCHEDULE`` for an account with no schedule, ``404 OPS-ACCOUNT`` for no account.
- Supervisors and admins only (else ``403 OPS-ROLE``):
  - ``GET /console/api/schedules/{account}?area=``: ``{"account_number", "company_name",
    "schedule"}``, the schedule as ``schedule show --json`` prints it, or null.
  - ``POST /console/api/schedules/{account}`` ``{"days", "open", "close", "from", "to",
    "closed", "grace", "timezone", "area", "late_to_open", "late_to_close", "early_close",
    "early_grace"}`` (``schedule set``'s options, each optional): the schedule after.
  - ``DELETE /console/api/schedules/{account}?day=DAYS`` (or ``from`` and ``to``, or neither:
    the whole schedule; ``area``): ``{"removed": "...", "schedule"}``.
  - ``GET /console/api/holidays``, ``POST /console/api/holidays`` ``{"date", "account",
    "name"}``, ``DELETE /console/api/holidays?date=YYYY-MM-DD&account=``: the holidays after.

Input the rules refuse (a day, time, date, zone, grace or area) answers ``422 OPS-SCHEDULE``;
what is not there to remove ``404 OPS-SCHEDULE``; an unknown account ``404 OPS-ACCOUNT``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import tzinfo
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import Connection, select
from starlette.requests import Request
from starlette.routing import BaseRoute, Route

from alarmhub.clock import now_us
from alarmhub.console import inputs
from alarmhub.console.plumbing import Body, Plumbing
from alarmhub.console.supervising import Api
from alarmhub.core import operations as ops
from alarmhub.core import schedules as rules
from alarmhub.core.account import account_number_problem
from alarmhub.core.errors import ActionRefused, BadInput, ProvisioningError, schedule_refused
from alarmhub.store import schedule_data, schema
from alarmhub.store import schedules as store

if TYPE_CHECKING:
    from alarmhub.console.routes import Session

T = TypeVar("T")
_parsed = schedule_data.parsed
_change = schedule_data.change_of
ACCOUNT = schema.account.c
USER = schema.account_user.c
SET_FIELDS = schedule_data.SET_FIELDS
MANUAL_FIELDS = {"opening": bool, "area": str}
HOLIDAY_FIELDS = {"date": str, "account": str, "name": str}
REMOVE_PARAMS = frozenset({"day", "from", "to", "area"})
MAX_PARAM_CHARS = 64


class Schedules:
    """The schedule endpoints, under ``/console/api``; local times in the station's ``zone``."""

    def __init__(self, console: Plumbing, body: Body, zone: tzinfo) -> None:
        self.console = console
        self.body = body
        self.zone = zone

    def routes(self, api: Api, prefix: str) -> list[BaseRoute]:
        one = f"{prefix}/schedules/{{account}}"
        return [
            Route(f"{prefix}/accounts/{{account}}/openclose", api(self.openclose, True),
                  methods=["POST"]),
            Route(one, api(self.show, False), methods=["GET"]),
            Route(one, api(self.set, True), methods=["POST"]),
            Route(one, api(self.remove, True), methods=["DELETE"]),
            Route(f"{prefix}/holidays", api(self.holidays, False), methods=["GET"]),
            Route(f"{prefix}/holidays", api(self.add_holiday, True), methods=["POST"]),
            Route(f"{prefix}/holidays", api(self.remove_holiday, True), methods=["DELETE"]),
        ]  # fmt: skip

    # any operator: a manual open or close -------------------------------------------------------

    async def openclose(self, request: Request, session: Session) -> dict[str, Any]:
        account = _account(request.path_params["account"])
        fields = await self.body(request, MANUAL_FIELDS)
        opening = inputs.required(fields, "opening")
        area = _parsed(rules.parse_area, fields.get("area", ""))

        def manual(conn: Connection) -> dict[str, Any]:
            _known(conn, account)
            try:
                return store.manual(conn, account, area, opening, session.code, now_us())
            except ProvisioningError as exc:
                raise schedule_refused(str(exc), 409) from None

        return {"openclose": await self.console.write(manual)}

    # supervisors: schedules ---------------------------------------------------------------------

    async def show(self, request: Request, session: Session) -> dict[str, Any]:
        ops.check_supervising(session.operator, "see schedules")
        account = _account(request.path_params["account"])
        area = _parsed(rules.parse_area, _params(request, {"area"}).get("area", ""))
        return await self.console.read(lambda c: self._shown(c, account, area))

    async def set(self, request: Request, session: Session) -> dict[str, Any]:
        ops.check_supervising(session.operator, "change schedules")
        account = _account(request.path_params["account"])
        change = _change(account, await self.body(request, SET_FIELDS))

        def write(conn: Connection) -> dict[str, Any]:
            _known(conn, account)
            _refusing(lambda: schedule_data.set_schedule(conn, change, now_us(), self.zone))
            return self._shown(conn, account, change.area)

        return await self.console.write(write)

    async def remove(self, request: Request, session: Session) -> dict[str, Any]:
        ops.check_supervising(session.operator, "change schedules")
        account = _account(request.path_params["account"])
        params = _params(request, REMOVE_PARAMS)
        area = _parsed(rules.parse_area, params.get("area", ""))
        days = _parsed(rules.parse_days, params["day"]) if "day" in params else []
        first = _parsed(rules.parse_date, params["from"]) if "from" in params else None
        last = _parsed(rules.parse_date, params["to"]) if "to" in params else None
        if days and first is not None:
            raise schedule_refused("day, or from and to: not both")
        if (first is None) != (last is None):
            raise schedule_refused("from and to go together")

        def write(conn: Connection) -> dict[str, Any]:
            _known(conn, account)
            removed = _refusing(
                lambda: schedule_data.remove_schedule(
                    conn, account, area, days, first, last, now_us()
                ),
                404,
            )
            return {"removed": removed, **self._shown(conn, account, area)}

        return await self.console.write(write)

    def _shown(self, conn: Connection, account: str, area: str) -> dict[str, Any]:
        name = _known(conn, account)
        found = conn.execute(
            select(schema.schedule.c.area).where(
                schema.schedule.c.account_number == account, schema.schedule.c.area == area
            )
        ).first()
        shown = None
        if found is not None:
            shown = schedule_data.show_schedule(conn, account, area, now_us(), self.zone)
        return {"account_number": account, "company_name": name, "schedule": shown}

    # supervisors: holidays ----------------------------------------------------------------------

    async def holidays(self, request: Request, session: Session) -> dict[str, Any]:
        ops.check_supervising(session.operator, "see the holidays")
        _params(request, set())
        return {"holidays": await self.console.read(schedule_data.list_holidays)}

    async def add_holiday(self, request: Request, session: Session) -> dict[str, Any]:
        ops.check_supervising(session.operator, "change the holidays")
        fields = await self.body(request, HOLIDAY_FIELDS)
        day = _parsed(rules.parse_date, inputs.required(fields, "date"))
        account = _holiday_account(fields.get("account", ""))
        name = fields.get("name", "").strip()

        def write(conn: Connection) -> list[dict[str, Any]]:
            if account:
                _known(conn, account)
            _refusing(lambda: schedule_data.add_holiday(conn, day, account, name, now_us()))
            return schedule_data.list_holidays(conn)

        return {"holidays": await self.console.write(write)}

    async def remove_holiday(self, request: Request, session: Session) -> dict[str, Any]:
        ops.check_supervising(session.operator, "change the holidays")
        params = _params(request, {"date", "account"})
        if "date" not in params:
            raise BadInput("missing query parameter 'date'")
        day = _parsed(rules.parse_date, params["date"])
        account = _holiday_account(params.get("account", ""))

        def write(conn: Connection) -> list[dict[str, Any]]:
            _refusing(lambda: schedule_data.remove_holiday(conn, day, account, now_us()), 404)
            return schedule_data.list_holidays(conn)

        return {"holidays": await self.console.write(write)}


# the alarm screen ----------------------------------------------------------------------------


def alarm_block(
    conn: Connection, account: str, area: str, now: int, zone: tzinfo
) -> dict[str, Any] | None:
    """The schedule block of an alarm's account: the schedule of the alarm's area when it has
    one, else the whole account's; today's windows, the last opening and closing (the panel
    user's name when the account's data knows it), its open late alarms. None: no schedule."""
    if not account:
        return None
    areas = set(
        conn.execute(
            select(schema.schedule.c.area).where(
                schema.schedule.c.account_number == account,
                schema.schedule.c.area.in_(["", area]),
            )
        ).scalars()
    )
    if not areas:
        return None
    chosen = area if area and area in areas else ""
    if chosen not in areas:
        return None
    shown = schedule_data.show_schedule(conn, account, chosen, now, zone)
    last = [e for e in (shown["last_open"], shown["last_close"]) if e and e["user"]]
    names: dict[str, str] = {}
    if last:
        numbers = {e["user"] for e in last} | {e["user"].zfill(3) for e in last}
        query = select(USER.user_number, USER.name).where(
            USER.account_number == account, USER.user_number.in_(sorted(numbers))
        )
        names = {str(user): str(name) for user, name in conn.execute(query)}
    for e in last:
        e["user_name"] = names.get(e["user"]) or names.get(e["user"].zfill(3)) or ""
    return {
        key: shown[key]
        for key in ("area", "timezone", "today", "last_open", "last_close", "alarms")
    }


# reading input -------------------------------------------------------------------------------


def _account(text: str) -> str:
    problem = account_number_problem(text)
    if problem:
        raise BadInput(problem)
    return text


def _holiday_account(text: str) -> str:
    return _account(text.strip()) if text.strip() else ""


def _known(conn: Connection, account: str) -> str:
    """The account's name; 404 OPS-ACCOUNT when there is no such account."""
    row = conn.execute(
        select(ACCOUNT.company_name).where(ACCOUNT.account_number == account)
    ).first()
    if row is None:
        raise ActionRefused("OPS-ACCOUNT", f"no account {account!r}", 404)
    return str(row[0] or "")


def _params(request: Request, allowed: set[str] | frozenset[str]) -> dict[str, str]:
    """The query parameters of a request: only those ``allowed``, each once and short."""
    params: dict[str, str] = {}
    for name, value in request.query_params.multi_items():
        if name not in allowed:
            known = ", ".join(sorted(allowed)) or "none"
            raise BadInput(f"unknown query parameter {name[:20]!r} (this action takes: {known})")
        if name in params:
            raise BadInput(f"query parameter {name!r} given twice")
        if len(value) > MAX_PARAM_CHARS:
            raise BadInput(f"query parameter {name!r} is longer than {MAX_PARAM_CHARS}")
        params[name] = value
    return params


def _refusing(work: Callable[[], T], status: int = 422) -> T:
    try:
        return work()
    except ProvisioningError as exc:
        raise schedule_refused(str(exc), status) from None
