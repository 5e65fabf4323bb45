"""HTTP route of the query interface: ``POST /rest/rest.php?dataSource=methods&*view=xmsubmit``
with multipart (or URL-encoded) form fields; ``*setMethod`` picks the method."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from alarmhub.clock import now_us
from alarmhub.xm import errors
from alarmhub.xm.auth import Refused
from alarmhub.xm.methods import METHODS, XmError

if TYPE_CHECKING:
    from alarmhub.app import Runtime

log = logging.getLogger("alarmhub.xm")
JSON = "application/json"
PATH = "/rest/rest.php"
QUERY = {"dataSource": "methods", "*view": "xmsubmit"}
MAX_FIELDS = 64


def answer(body: dict[str, Any], status: int = 200) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type=JSON)


def refused(request: Request, why: Refused) -> Response:
    """The one 401 body for every authentication failure; the reason goes to the log only."""
    username = request.headers.get("x-svc-username")
    log.info("query refused", extra={"reason": why.reason, "username": username})
    return answer(errors.AUTHENTICATION_FAILED, 401)


def routes(runtime: Runtime) -> list[Route]:
    auth = runtime.query_auth
    engine = runtime.engine
    zone = runtime.settings.zone

    async def rest(request: Request) -> Response:
        try:
            form = await request.form(max_files=0, max_fields=MAX_FIELDS)
        except Exception as exc:  # a body that is not a form
            log.info("query refused", extra={"reason": f"unreadable form: {exc!r}"})
            return answer(errors.field_invalid("*setMethod"), 400)
        fields = [(k, v) for k, v in form.multi_items() if isinstance(v, str)]
        verified = await auth.verify(request.headers, fields)
        if isinstance(verified, Refused):
            return refused(request, verified)
        # the nonce is recorded while the answer is prepared; nothing is sent before it is
        claimed, prepared = await asyncio.gather(
            auth.claim(request.headers), prepare(request, dict(fields))
        )
        if not claimed:
            return refused(request, Refused("replayed nonce"))
        log.debug("query answered", extra={"username": verified.username})
        return prepared

    async def prepare(request: Request, values: dict[str, str]) -> Response:
        for name, expected in QUERY.items():
            if request.query_params.get(name) != expected:
                return answer(errors.field_invalid(name), 400)
        method_name = values.get("*setMethod", "")
        method = METHODS.get(method_name)
        if method is None:
            return answer(errors.invalid_method(method_name), 400)

        def run() -> dict[str, Any]:
            with engine.connect() as conn:
                return method(conn, values, zone, now_us())

        try:
            return answer(await asyncio.to_thread(run))
        except XmError as exc:
            return answer(exc.body, exc.status)

    return [Route(PATH, rest, methods=["POST"])]
