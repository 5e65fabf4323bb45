"""Pieces of the OpenAPI path items of the integrator API: problem details, the answers every
endpoint may give, JSON bodies and path parameters, so each resource module states only what is
its own."""

from __future__ import annotations

from typing import Any

from alarmhub.api.openapi import PROBLEM, SECURITY
from alarmhub.api.plumbing import LIMIT_MAX

TEXT: dict[str, Any] = {"type": "string"}
NULLABLE_TEXT: dict[str, Any] = {"type": "string", "nullable": True}
PATH_TEXT = "^[!-.0-~]+$"  # printable ASCII but a space or '/'
ETAG_HEADER = {"ETag": {"description": "The version of the resource", "schema": TEXT}}
IF_MATCH = {
    "name": "If-Match",
    "in": "header",
    "required": False,
    "description": "Change only if the resource is still at this ETag (412 API-ETAG if not).",
    "schema": TEXT,
}
PAGE_PARAMETERS = [
    {"name": "limit", "in": "query", "required": False,
     "schema": {"type": "integer", "minimum": 1, "maximum": LIMIT_MAX, "default": 100}},
    {"name": "cursor", "in": "query", "required": False, "schema": TEXT,
     "description": "next_cursor of the previous page"},
]  # fmt: skip


def path_parameter(name: str, description: str, integer: bool = False) -> dict[str, Any]:
    schema = {"type": "integer"} if integer else {"type": "string", "pattern": PATH_TEXT}
    return {"name": name, "in": "path", "required": True, "description": description,
            "schema": schema}  # fmt: skip


def body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": schema}}}


def obj(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    shape: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        shape["required"] = list(required)
    return {**shape, "additionalProperties": False}


def items_of(item: dict[str, Any], paged: bool = False) -> dict[str, Any]:
    properties: dict[str, Any] = {"items": {"type": "array", "items": item}}
    if paged:
        properties["next_cursor"] = NULLABLE_TEXT
    return obj(properties, tuple(properties))


def operation(
    summary: str,
    scope: str,
    answers: dict[int, dict[str, Any] | None],
    *,
    parameters: list[dict[str, Any]] | None = None,
    request: dict[str, Any] | None = None,
    refusals: tuple[int, ...] = (404,),
) -> dict[str, Any]:
    """One operation: its answers (a schema, or None for an empty one; with an ETag when
    ``If-Match`` applies), and the refusals it may give besides 401, 403, 422 and 503."""
    responses: dict[str, Any] = {}
    for status, schema in answers.items():
        answer: dict[str, Any] = {"description": "done"}
        if schema is not None:
            answer["content"] = {"application/json": {"schema": schema}}
            answer["headers"] = ETAG_HEADER
        responses[str(status)] = answer
    problem = {"application/problem+json": {"schema": PROBLEM}}
    for status in sorted({401, 403, 422, 503, *refusals, *((413,) if request else ())}):
        responses[str(status)] = {"description": "refused", "content": problem}
    item: dict[str, Any] = {
        "summary": summary,
        "description": f"Scope: {scope}." if scope else "Any key.",
        "security": SECURITY,
        "responses": responses,
    }
    if parameters:
        item["parameters"] = parameters
    if request is not None:
        item["requestBody"] = request
    return item
