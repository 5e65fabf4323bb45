"""The console's on-test panel (decisions §9): the accounts on test and when each returns, putting
an account on test and ending a test early. Any signed-in operator may; the operator is recorded
(OPR of the history record, ``opr`` of the test). The rules are ``core.on_test`` and
``store.on_test``'s, the same as ``alarmhub test``'s.

- ``GET /console/api/tests``: ``{"tests": [{"account_number", "company_name", "zones", "types",
  "by", "reason", "opr", "started_us", "ends_us", "minutes_left"}], "server_us"}``, the soonest
  to return first.
- ``POST /console/api/accounts/{account}/test`` ``{"minutes": 60, "zones": ["003"], "types":
  ["BURG"], "by": "J Smith", "reason": "..."}`` (zones, types and reason optional): ``{"test":
  {...}}``; refused ``422 OPS-TEST`` (the message says what is wrong), ``404 OPS-ACCOUNT``.
- ``DELETE /console/api/accounts/{account}/test`` (optional body ``{"by": "..."}``, the
  operator's code when absent): a return from test like the automatic one; ``{"test": {...},
  "signals": [...]}`` (the test's report); refused ``409 OPS-TEST`` when the account is not on
  test.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.routing import BaseRoute, Route

from alarmhub.clock import now_us
from alarmhub.console import inputs
from alarmhub.console.plumbing import Body, Plumbing
from alarmhub.console.supervising import Api
from alarmhub.core.account import account_number_problem
from alarmhub.core.errors import BadInput
from alarmhub.store import on_test

if TYPE_CHECKING:
    from alarmhub.console.routes import Session

START_FIELDS = {"minutes": int, "zones": list, "types": list, "by": str, "reason": str}
STOP_FIELDS = {"by": str}


class OnTestPanel:
    """The on-test endpoints, under ``/console/api``."""

    def __init__(self, console: Plumbing, body: Body) -> None:
        self.console = console
        self.body = body

    def routes(self, api: Api, prefix: str) -> list[BaseRoute]:
        account = f"{prefix}/accounts/{{account}}/test"
        return [
            Route(f"{prefix}/tests", api(self.tests, False), methods=["GET"]),
            Route(account, api(self.start_test, True), methods=["POST"]),
            Route(account, api(self.stop_test, True), methods=["DELETE"]),
        ]

    async def tests(self, request: Request, session: Session) -> dict[str, Any]:
        now = now_us()
        running = await self.console.read(lambda c: on_test.running_tests(c, now))
        return {"tests": running, "server_us": now}

    async def start_test(self, request: Request, session: Session) -> dict[str, Any]:
        account = _account(request)
        fields = await self.body(request, START_FIELDS)
        minutes = inputs.required(fields, "minutes")
        by = inputs.required(fields, "by")
        zones = _strings(fields.get("zones", []), "zones")
        types = _strings(fields.get("types", []), "types")
        reason = fields.get("reason", "")
        code = session.code
        test = await self.console.write(
            lambda c: on_test.start(
                c, account, minutes, by, now_us(), zones, types, reason, opr=code
            )
        )
        return {"test": test}

    async def stop_test(self, request: Request, session: Session) -> dict[str, Any]:
        account = _account(request)
        fields = await self.body(request, STOP_FIELDS)
        code = session.code
        by = fields.get("by", "").strip() or code
        return await self.console.write(lambda c: on_test.stop(c, account, by, now_us(), opr=code))


def _account(request: Request) -> str:
    account: str = request.path_params["account"]
    problem = account_number_problem(account)
    if problem:
        raise BadInput(problem)
    return account


def _strings(value: list[Any], name: str) -> list[str]:
    if not all(isinstance(v, str) for v in value):
        raise BadInput(f"{name} must be an array of strings")
    return value
