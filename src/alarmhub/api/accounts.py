"""Accounts of the integrator API: ``/api/v1/accounts`` (a page at a time, only the key's range)
and ``/api/v1/accounts/{account}`` (PUT creates or replaces, GET, DELETE), through the store
functions the ``account`` commands use. Zones, users, contacts and call lists are in
:mod:`alarmhub.api.response_data`.

An account is ``{"account", "name", "street", "city", "state", "phone", "agencies": {"police",
"fire", "medical"}, "permit", "test_interval", "has_duress_code"}``; ``test_interval`` is in
hours (``null``: no periodic test expected), ``duress_code`` is written, never read. A PUT may
carry what a GET answered: ``account`` (the path's) and ``has_duress_code`` are read only.
"""

from __future__ import annotations

import math
from typing import Any

from sqlalchemy import Connection
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from alarmhub.api import openapi_parts as oa
from alarmhub.api import response_data
from alarmhub.api.plumbing import Api, check_if_match, etag_of, json_response, page, page_of
from alarmhub.api.problems import INPUT, ApiProblem
from alarmhub.api.scope import binder, no_account, visible_account
from alarmhub.clock import now_us
from alarmhub.core.account import Account, account_number_problem
from alarmhub.core.api_keys import ApiKey
from alarmhub.core.response import AgencyKind
from alarmhub.store import accounts, api_audit, provisioning, response

READ, WRITE = "accounts:read", "accounts:write"
AGENCY_KINDS = tuple(kind.value for kind in AgencyKind)
ACCOUNT_MEMBERS: dict[str, type | tuple[type, ...]] = {
    "name": str, "street": str, "city": str, "state": str, "phone": str, "agencies": dict,
    "permit": str, "test_interval": (int, float, type(None)), "duress_code": (str, type(None)),
    "account": str, "has_duress_code": bool,  # read only: what a GET answered may be PUT back
}  # fmt: skip
SECONDS_PER_HOUR = 3600


def account_json(row: dict[str, Any]) -> dict[str, Any]:
    """An account row as the API shows it (never its duress code: only whether it has one)."""
    interval = row["test_interval_s"]
    return {
        "account": row["account_number"],
        "name": row["company_name"],
        "street": row["street"],
        "city": row["city"],
        "state": row["state"],
        "phone": row["phone"] or "",
        "agencies": {kind: row[kind] for kind in AGENCY_KINDS},
        "permit": row["permit"] or "",
        "test_interval": None if interval is None else interval / SECONDS_PER_HOUR,
        "has_duress_code": row["duress_hash"] is not None,
    }


def _agencies(given: dict[str, Any]) -> dict[str, str]:
    """Every kind's agency code of a PUT (``""``: none), refusing other members and types."""
    unknown = sorted(set(given) - set(AGENCY_KINDS))
    if unknown:
        raise ApiProblem(
            INPUT, f"unknown agency kind {unknown[0]!r}: use {', '.join(AGENCY_KINDS)}"
        )
    for kind, code in given.items():
        if code is not None and not isinstance(code, str):
            raise ApiProblem(INPUT, f"agencies.{kind} must be an agency code or null")
    return {kind: given.get(kind) or "" for kind in AGENCY_KINDS}


def _interval_s(hours: float | None) -> int | None:
    """The test interval of a PUT in seconds (the store judges its range)."""
    if hours is None:
        return None
    try:
        seconds = float(hours) * SECONDS_PER_HOUR
    except OverflowError:  # an integer beyond any float
        seconds = math.inf
    if not math.isfinite(seconds):
        raise ApiProblem(INPUT, "test_interval must be a number of hours")
    return round(seconds)


async def list_accounts(request: Request, key: ApiKey, api: Api) -> Response:
    limit, after = page_of(request)
    rows = await api.read(lambda c: accounts.accounts_after(c, key.accounts, after, limit + 1))
    return json_response(page([account_json(r) for r in rows], limit, "account"))


async def get_account(request: Request, key: ApiKey, api: Api) -> Response:
    number = request.path_params["account"]
    resource = account_json(await api.read(lambda c: visible_account(c, key, number)))
    return json_response(resource, etag=etag_of(resource))


async def put_account(request: Request, key: ApiKey, api: Api) -> Response:
    number = request.path_params["account"]
    if not key.sees(number):
        raise no_account(number)
    problem = account_number_problem(number)
    if problem:
        raise ApiProblem(INPUT, f"invalid account {number!r}: {problem}")
    body = await api.body(request, ACCOUNT_MEMBERS)
    if body.get("account", number) != number:
        raise ApiProblem(INPUT, "account must be the account of the path")
    if "name" not in body:
        raise ApiProblem(INPUT, "name is required")
    agencies = _agencies(body.get("agencies", {}))
    interval = _interval_s(body.get("test_interval"))
    duress = body.get("duress_code", "")  # absent: kept; null: cleared
    duress_hash = (
        await response.hash_passcode_in_thread(duress)
        if isinstance(duress, str) and "duress_code" in body
        else None
    )
    account = Account(
        number, body["name"], body.get("street", ""), body.get("city", ""), body.get("state", "")
    )

    def work(conn: Connection) -> tuple[bool, dict[str, Any]]:
        before = accounts.account_row(conn, number)
        check_if_match(request, etag_of(account_json(before)) if before else None)
        if before is None:
            provisioning.add_account_in(conn, account)
        else:
            accounts.replace_account_in(conn, account)
        response.set_account_response_in(
            conn, number, agencies, body.get("permit", ""), duress_hash,
            clear_duress="duress_code" in body and duress is None, phone=body.get("phone", ""),
        )  # fmt: skip
        if (before or {}).get("test_interval_s") != interval:  # a new interval restarts its clock
            provisioning.set_test_interval_in(conn, number, interval)
        api_audit.record(conn, key.name, "PUT ACCOUNT", number, now_us())
        return before is None, account_json(visible_account(conn, key, number))

    created, resource = await api.write(work)
    return json_response(resource, 201 if created else 200, etag_of(resource))


async def delete_account(request: Request, key: ApiKey, api: Api) -> Response:
    number = request.path_params["account"]

    def work(conn: Connection) -> None:
        check_if_match(request, etag_of(account_json(visible_account(conn, key, number))))
        accounts.remove_account_in(conn, number)
        api_audit.record(conn, key.name, "DELETE ACCOUNT", number, now_us())

    await api.write(work)
    return Response(status_code=204, headers={"Cache-Control": "no-store"})


def routes(api: Api) -> list[BaseRoute]:
    bound = binder(api)
    return [
        Route("/accounts", bound(READ, list_accounts), methods=["GET"]),
        Route("/accounts/{account}", bound(READ, get_account), methods=["GET"]),
        Route("/accounts/{account}", bound(WRITE, put_account), methods=["PUT"]),
        Route("/accounts/{account}", bound(WRITE, delete_account), methods=["DELETE"]),
        *response_data.routes(api),
    ]


# the OpenAPI path items ----------------------------------------------------------------------

_ACCOUNT_NUMBER = oa.path_parameter("account", "The account number")
_AGENCIES = oa.obj({kind: oa.NULLABLE_TEXT for kind in AGENCY_KINDS})
_INTERVAL = {"type": "number", "nullable": True, "description": "hours; null: none expected"}
ACCOUNT_SCHEMA = oa.obj(
    {
        "account": oa.TEXT, "name": oa.TEXT, "street": oa.TEXT, "city": oa.TEXT,
        "state": oa.TEXT, "phone": oa.TEXT, "agencies": _AGENCIES, "permit": oa.TEXT,
        "test_interval": _INTERVAL, "has_duress_code": {"type": "boolean"},
    },
    ("account", "name", "street", "city", "state", "phone", "agencies", "permit",
     "test_interval", "has_duress_code"),
)  # fmt: skip
ACCOUNT_BODY = oa.obj(
    {
        "name": oa.TEXT, "street": oa.TEXT, "city": oa.TEXT, "state": oa.TEXT,
        "phone": oa.TEXT, "agencies": _AGENCIES, "permit": oa.TEXT, "test_interval": _INTERVAL,
        "duress_code": {**oa.NULLABLE_TEXT, "description": "write-only; null clears it"},
    },
    ("name",),
)  # fmt: skip
PATHS: dict[str, Any] = {
    "/api/v1/accounts": {
        "get": oa.operation(
            "The accounts the key may see, by account number, a page at a time", READ,
            {200: oa.items_of(ACCOUNT_SCHEMA, paged=True)}, parameters=oa.PAGE_PARAMETERS,
            refusals=(),
        ),
    },
    "/api/v1/accounts/{account}": {
        "parameters": [_ACCOUNT_NUMBER],
        "get": oa.operation("An account", READ, {200: ACCOUNT_SCHEMA}),
        "put": oa.operation(
            "Create (201) or replace (200) an account", WRITE,
            {200: ACCOUNT_SCHEMA, 201: ACCOUNT_SCHEMA}, parameters=[oa.IF_MATCH],
            request=oa.body(ACCOUNT_BODY), refusals=(404, 412),
        ),
        "delete": oa.operation(
            "Remove an account and its response data (its history stays)", WRITE, {204: None},
            parameters=[oa.IF_MATCH], refusals=(404, 409, 412),
        ),
    },
    **response_data.PATHS,
}  # fmt: skip
