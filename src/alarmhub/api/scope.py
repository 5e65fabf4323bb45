"""The account a request names, as its key may see it: an account outside the key's range is
answered exactly as one that does not exist (decisions section 10)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import Connection
from starlette.requests import Request
from starlette.responses import Response

from alarmhub.api.plumbing import Api
from alarmhub.api.problems import ApiProblem, not_found
from alarmhub.core.account import account_number_problem
from alarmhub.core.api_keys import ApiKey
from alarmhub.store import accounts


def no_account(number: str) -> ApiProblem:
    """The one answer for an account that does not exist and one the key may not see."""
    return not_found(f"no account {number!r}")


def seen(key: ApiKey, account: str) -> str:
    """``account`` when it can be an account number the key may see, else the 404: checked
    before anything of the request costs (a body's passcode hashed, a query run)."""
    if account_number_problem(account) or not key.sees(account):
        raise no_account(account)
    return account


def visible_account(conn: Connection, key: ApiKey, number: str) -> dict[str, Any]:
    """The account's row, or 404 API-NOTFOUND when it does not exist or the key may not see it."""
    row = accounts.account_row(conn, seen(key, number))
    if row is None:
        raise no_account(number)
    return row


Handler = Callable[[Request, ApiKey, Api], Awaitable[Response]]
Endpoint = Callable[[Request], Awaitable[Response]]


def binder(api: Api) -> Callable[[str, Handler], Endpoint]:
    """``bound(scope, handler)``: ``handler(request, key, api)`` behind :meth:`Api.endpoint`."""

    def bound(scope: str, handler: Handler) -> Endpoint:
        async def call(request: Request, key: ApiKey) -> Response:
            return await handler(request, key, api)

        return api.endpoint(scope, call)

    return bound
