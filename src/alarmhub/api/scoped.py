"""What the alarm, history, schedule and on-test resources share: the account a key may see
(an account outside the key's range is answered as one that does not exist, with the same
body), the query parameters a request may carry, and moments as ISO 8601 UTC."""

from __future__ import annotations

from collections.abc import Set
from typing import Any

from sqlalchemy import Connection, select
from starlette.requests import Request

from alarmhub.api.openapi import REFUSALS, SECURITY, problem
from alarmhub.api.problems import INPUT, ApiProblem
from alarmhub.api.scope import no_account
from alarmhub.core.events import timestamp
from alarmhub.store import schema

ACCOUNT = schema.account.c
PARAM_MAX_CHARS = 64


def company(conn: Connection, account: str) -> str:
    """The account's name; the 404 when there is no such account."""
    row = conn.execute(
        select(ACCOUNT.company_name).where(ACCOUNT.account_number == account)
    ).first()
    if row is None:
        raise no_account(account)
    return str(row[0] or "")


def params(request: Request, allowed: Set[str]) -> dict[str, str]:
    """The request's query parameters: only those ``allowed``, each once and short; anything
    else is 422 API-INPUT."""
    found: dict[str, str] = {}
    for name, value in request.query_params.multi_items():
        if name not in allowed:
            known = ", ".join(sorted(allowed)) or "none"
            raise ApiProblem(INPUT, f"unknown query parameter {name[:20]!r} (known: {known})")
        if name in found:
            raise ApiProblem(INPUT, f"query parameter {name!r} given twice")
        if len(value) > PARAM_MAX_CHARS:
            raise ApiProblem(INPUT, f"query parameter {name!r} is longer than {PARAM_MAX_CHARS}")
        found[name] = value
    return found


def flag(found: dict[str, str], name: str) -> bool:
    """A boolean query parameter: ``true`` or ``false`` (absent: false)."""
    value = found.get(name, "false")
    if value not in ("true", "false"):
        raise ApiProblem(INPUT, f"{name} must be true or false")
    return value == "true"


def iso(us: int | None) -> str | None:
    """A moment as ISO 8601 UTC to the millisecond (None stays None)."""
    return None if us is None else timestamp(int(us))


def strings(value: Any, name: str) -> list[str]:
    """A JSON member that must be an array of strings."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ApiProblem(INPUT, f"{name} must be an array of strings")
    return value


# the OpenAPI document (each module's PATHS) ---------------------------------------------------

STRING: dict[str, Any] = {"type": "string"}
NULLABLE_STRING: dict[str, Any] = {"type": "string", "nullable": True}
INTEGER: dict[str, Any] = {"type": "integer"}
BOOLEAN: dict[str, Any] = {"type": "boolean"}
STRINGS: dict[str, Any] = {"type": "array", "items": STRING}


def obj(properties: dict[str, Any], required: bool = True) -> dict[str, Any]:
    """An object schema of ``properties`` (all of them required, unless told)."""
    shown: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        shown["required"] = sorted(properties)
    return shown


def page_schema(item: dict[str, Any]) -> dict[str, Any]:
    return obj({"items": {"type": "array", "items": item}, "next_cursor": NULLABLE_STRING})


def in_query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema,
            "description": description}  # fmt: skip


def in_path(name: str, description: str) -> dict[str, Any]:
    """A path parameter: printable ASCII (the station's identifiers are)."""
    schema = {"type": "string", "pattern": "^[!-~]+$", "maxLength": PARAM_MAX_CHARS}
    return {"name": name, "in": "path", "required": True, "schema": schema,
            "description": description}  # fmt: skip


PAGE_PARAMS = [
    in_query("limit", {"type": "integer", "minimum": 1, "maximum": 1000}, "items a page, 100"),
    in_query("cursor", STRING, "the next_cursor of the page before"),
]
ACCOUNT_PARAM = in_path("account", "the account number")


def operation(
    summary: str,
    answer: dict[str, Any],
    refusals: dict[str, str],
    parameters: list[dict[str, Any]] | None = None,
    body: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An operation of the API: its 200 answer (JSON of ``answer``), its refusals by status
    (401 and 403 for every one) and its parameters and JSON body."""
    done: dict[str, Any] = {
        "summary": summary,
        "security": SECURITY,
        "responses": {
            "200": {"description": "done", "content": {"application/json": {"schema": answer}}},
            **REFUSALS,
            **{status: problem(why) for status, why in refusals.items()},
        },
    }
    if parameters:
        done["parameters"] = parameters
    if body is not None:
        done["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": body}},
        }
        done["responses"]["413"] = problem("API-INPUT: the body is too large")
    return done
