"""The integrator API's errors: RFC 9457 problem details with a stable ``code`` (decisions
section 10), one exception for every refusal and one place that renders it."""

from __future__ import annotations

from http import HTTPStatus

import orjson
from starlette.responses import Response

MEDIA_TYPE = "application/problem+json"
AUTH, SCOPE, NOT_FOUND, ETAG, INPUT = (
    "API-AUTH",
    "API-SCOPE",
    "API-NOTFOUND",
    "API-ETAG",
    "API-INPUT",
)
CONFLICT, STORE = "API-CONFLICT", "API-STORE"
STREAMS = "API-STREAMS"
STATUS = {AUTH: 401, SCOPE: 403, NOT_FOUND: 404, ETAG: 412, INPUT: 422, CONFLICT: 409, STORE: 503}
STATUS[STREAMS] = 429  # 503 when the listener's budget is full (listener_limits.StreamBudget)


class ApiProblem(Exception):
    """A refused request: its code (and so its status) and a sentence for people."""

    def __init__(self, code: str, detail: str, status: int | None = None) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.status = status or STATUS[code]


def not_found(what: str = "no such resource") -> ApiProblem:
    """The answer for what does not exist and for what the key may not see: the same one."""
    return ApiProblem(NOT_FOUND, what)


def problem_response(problem: ApiProblem) -> Response:
    body = {
        "type": "about:blank",
        "title": HTTPStatus(problem.status).phrase,
        "status": problem.status,
        "detail": problem.detail,
        "code": problem.code,
    }
    headers = {"Cache-Control": "no-store"}
    if problem.code == AUTH:
        headers["WWW-Authenticate"] = 'Bearer realm="alarmhub"'
    return Response(orjson.dumps(body), problem.status, headers, MEDIA_TYPE)
