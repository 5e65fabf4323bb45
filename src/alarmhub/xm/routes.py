"""HTTP route of the query interface: ``POST /rest/rest.php?dataSource=methods&*view=xmsubmit``
with multipart (or URL-encoded) form fields; ``*setMethod`` picks the method.

The body is capped at ``rest_max_body_bytes`` (413 before any parsing, decisions section 6)."""

from __future__ import annotations

import asyncio
import logging
from datetime import tzinfo
from typing import Any

import orjson
from sqlalchemy.engine import Engine
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Message

from alarmhub import metrics
from alarmhub.clock import now_us
from alarmhub.core.errors import QueryRefused
from alarmhub.node.listener_limits import read_limited
from alarmhub.xm import errors
from alarmhub.xm.auth import QueryAuth, Refused
from alarmhub.xm.methods import method_table

log = logging.getLogger("alarmhub.xm")
JSON = "application/json"
PATH = "/rest/rest.php"
QUERY = {"dataSource": "methods", "*view": "xmsubmit"}
MAX_FIELDS = 64


def answer(body: dict[str, Any], status: int = 200) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type=JSON)


REFUSED_401 = metrics.QUERIES_REFUSED.labels("401")
REFUSED_413 = metrics.QUERIES_REFUSED.labels("413")


def refused(request: Request, why: Refused) -> Response:
    """The one 401 body for every authentication failure; the reason goes to the log only."""
    username = request.headers.get("x-svc-username")
    log.info("query refused", extra={"reason": why.reason, "username": username})
    REFUSED_401.inc()
    return answer(errors.AUTHENTICATION_FAILED, 401)


def too_large(request: Request, limit: int) -> Response:
    """413 for a body over the limit; the connection is closed rather than the rest read."""
    username = request.headers.get("x-svc-username")
    log.info("query refused", extra={"reason": f"body over {limit} bytes", "username": username})
    REFUSED_413.inc()
    response = answer(errors.TOO_LARGE, 413)
    response.headers["connection"] = "close"
    return response


def declared_too_large(request: Request, limit: int) -> bool:
    """Whether the request's Content-Length announces more than ``limit`` bytes."""
    declared = request.headers.get("content-length")
    return declared is not None and (not declared.isdigit() or int(declared) > limit)


async def read_form(request: Request, body: bytes) -> list[tuple[str, str]]:
    """The form fields of a body already read (multipart or URL-encoded)."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    form = await Request(request.scope, receive).form(max_files=0, max_fields=MAX_FIELDS)
    return [(k, v) for k, v in form.multi_items() if isinstance(v, str)]


def routes(
    auth: QueryAuth, engine: Engine, zone: tzinfo, limit: int, max_records: int
) -> list[Route]:
    """The query route: requests checked by ``auth``, methods read from ``engine``, times in
    ``zone``, bodies up to ``limit`` bytes, at most ``max_records`` history records an answer."""
    methods = method_table(max_records)

    async def rest(request: Request) -> Response:
        """Limits first, then the headers; the body is read (bounded) only once they pass,
        except for hmac-sha256, whose digest signs the form; the nonce is claimed before the
        query runs."""
        if declared_too_large(request, limit):
            return too_large(request, limit)
        presented = await auth.examine(request.headers)
        if isinstance(presented, Refused):
            return refused(request, presented)
        if not presented.form_signed and not await auth.claim(request.headers):
            return refused(request, Refused("replayed nonce"))
        body = await read_limited(request, limit)
        if body is None:
            return too_large(request, limit)
        try:
            fields = await read_form(request, body)
        except Exception as exc:  # a body that is not a form
            log.info("query refused", extra={"reason": f"unreadable form: {exc!r}"})
            return answer(errors.field_invalid("*setMethod"), 400)
        if presented.form_signed:
            verified = auth.signed(presented, fields)
            if isinstance(verified, Refused):
                return refused(request, verified)
            if not await auth.claim(request.headers):
                return refused(request, Refused("replayed nonce"))
        log.debug("query answered", extra={"username": presented.user.username})
        return await prepare(request, dict(fields))

    async def prepare(request: Request, values: dict[str, str]) -> Response:
        for name, expected in QUERY.items():
            if request.query_params.get(name) != expected:
                return answer(errors.field_invalid(name), 400)
        method_name = values.get("*setMethod", "")
        method = methods.get(method_name)
        if method is None:
            return answer(errors.invalid_method(method_name), 400)
        metrics.QUERIES.labels(method_name).inc()

        def run() -> dict[str, Any]:
            with engine.connect() as conn:
                return method(conn, values, zone, now_us())

        try:
            return answer(await asyncio.to_thread(run))
        except QueryRefused as exc:
            return answer(exc.body, exc.status)

    return [Route(PATH, rest, methods=["POST"])]
