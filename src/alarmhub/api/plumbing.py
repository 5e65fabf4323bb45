"""What every endpoint of the integrator API shares: the key (authenticated before anything of
the request is read), the scope it needs, the body (limited, a JSON object), reads on a
connection and writes through the node's writer, ETags and cursor pagination.

An endpoint is ``async def handler(request, key) -> Response``, wrapped by :meth:`Api.endpoint`
with the scope it needs; every refusal is an :class:`~alarmhub.api.problems.ApiProblem`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, tzinfo
from functools import partial
from typing import Any, TypeVar

import orjson
from sqlalchemy import Connection
from sqlalchemy.engine import Engine
from starlette.requests import Request
from starlette.responses import Response

from alarmhub.api.problems import AUTH, ETAG, INPUT, SCOPE, STORE, ApiProblem, problem_response
from alarmhub.clock import now_us
from alarmhub.core.api_keys import ApiKey
from alarmhub.core.errors import ActionRefused, ProvisioningError, StoreUnavailable
from alarmhub.store import api_keys
from alarmhub.store.engine import read_in_thread

T = TypeVar("T")
Handler = Callable[[Request, ApiKey], Awaitable[Response]]
Write = Callable[[Callable[[Connection], T]], Awaitable[T]]
log = logging.getLogger("alarmhub.api")
MEDIA_TYPE = "application/json"
LIMIT_DEFAULT, LIMIT_MAX = 100, 1000
CURSOR_PATTERN = re.compile(r"[A-Za-z0-9_-]{0,200}")


def json_response(body: Any, status: int = 200, etag: str | None = None) -> Response:
    headers = {"Cache-Control": "no-store"}
    if etag is not None:
        headers["ETag"] = etag
    return Response(orjson.dumps(body), status, headers, MEDIA_TYPE)


def etag_of(resource: Any) -> str:
    """A strong ETag of a resource's JSON form (its members in a fixed order)."""
    digest = hashlib.sha256(orjson.dumps(resource, option=orjson.OPT_SORT_KEYS)).hexdigest()
    return f'"{digest[:32]}"'


def check_if_match(request: Request, current: str | None) -> None:
    """412 API-ETAG when the request's If-Match names another version (or any version of a
    resource that does not exist); no If-Match: the change goes ahead."""
    wanted = request.headers.get("if-match")
    if wanted is None:
        return
    tags = {t.strip() for t in wanted.split(",")}
    if current is None or not ("*" in tags or current in tags or f"W/{current}" in tags):
        raise ApiProblem(ETAG, "the resource changed since you read it (If-Match does not match)")


def encode_cursor(last: str) -> str:
    return base64.urlsafe_b64encode(last.encode()).decode().rstrip("=")


def page_of(request: Request) -> tuple[int, str]:
    """``limit`` (1..1000, 100 by default) and where the page starts (after this key)."""
    params = request.query_params
    try:
        limit = int(params.get("limit", LIMIT_DEFAULT))
    except ValueError:
        raise ApiProblem(INPUT, "limit must be a whole number") from None
    if not 1 <= limit <= LIMIT_MAX:
        raise ApiProblem(INPUT, f"limit must be 1-{LIMIT_MAX}")
    cursor = params.get("cursor", "")
    if not CURSOR_PATTERN.fullmatch(cursor):
        raise ApiProblem(INPUT, "cursor is not one this API gave")
    try:
        after = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise ApiProblem(INPUT, "cursor is not one this API gave") from None
    return limit, after


def page(items: list[dict[str, Any]], limit: int, key: str) -> dict[str, Any]:
    """``{"items", "next_cursor"}`` from up to ``limit + 1`` items read (the extra one says
    there is a next page); ``key`` names the member the cursor follows."""
    more = len(items) > limit
    items = items[:limit]
    cursor = encode_cursor(str(items[-1][key])) if more and items else None
    return {"items": items, "next_cursor": cursor}


class Api:
    """The node's dependencies the endpoints use, and the wrapper every endpoint goes through."""

    def __init__(
        self, engine: Engine, write: Write[Any], max_body_bytes: int, zone: tzinfo = UTC
    ) -> None:
        self.engine = engine
        self._write = write
        self.max_body_bytes = max_body_bytes
        self.zone = zone  # the station's: its local days (schedules, history's dates)
        self.uses = api_keys.Uses()  # keys' last use, written at most once a minute each

    async def read(self, work: Callable[[Connection], T]) -> T:
        return await read_in_thread(self.engine, work)

    async def write(self, work: Callable[[Connection], T]) -> T:
        """``work`` in one write transaction of the node's writer (after the incident lock,
        as every change the station audits)."""
        result: T = await self._write(work)
        return result

    async def body(
        self, request: Request, members: Mapping[str, type | tuple[type, ...]]
    ) -> dict[str, Any]:
        """The request's JSON object, read up to the limit, with only ``members`` (each of its
        type; any may be absent)."""
        too_large = ApiProblem(INPUT, f"the body must be at most {self.max_body_bytes} bytes", 413)
        declared = request.headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_body_bytes):
            raise too_large
        raw = bytearray()
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > self.max_body_bytes:
                raise too_large
        try:
            value = orjson.loads(bytes(raw))
        except orjson.JSONDecodeError:
            raise ApiProblem(INPUT, "the body must be a JSON object") from None
        if not isinstance(value, dict):
            raise ApiProblem(INPUT, "the body must be a JSON object")
        unknown = sorted(set(value) - set(members))
        if unknown:
            raise ApiProblem(INPUT, f"unknown member {unknown[0]!r}")
        for name, kind in members.items():
            if name in value and (
                not isinstance(value[name], kind)
                or (isinstance(value[name], bool) and bool not in _types(kind))
            ):
                raise ApiProblem(INPUT, f"{name} has the wrong type")
        return value

    def endpoint(self, scope: str, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        """``handler`` behind the key check (401 API-AUTH, before the body is read) and the
        scope check (403 API-SCOPE); every refusal rendered as problem details."""

        async def wrapped(request: Request) -> Response:
            try:
                key = await self._key(request)
                if not key.may(scope):
                    raise ApiProblem(SCOPE, f"this key does not have the scope {scope}")
                return await handler(request, key)
            except ApiProblem as problem:
                return problem_response(problem)
            except ActionRefused as refused:
                code = "API-NOTFOUND" if refused.status == 404 else "API-CONFLICT"
                status = refused.status if refused.status in (404, 409) else 422
                if status == 422:
                    code = INPUT
                return problem_response(ApiProblem(code, refused.message, status))
            except ProvisioningError as exc:
                return problem_response(ApiProblem(INPUT, str(exc)))
            except StoreUnavailable:
                return problem_response(ApiProblem(STORE, "the store cannot take requests now"))

        return wrapped

    async def _key(self, request: Request) -> ApiKey:
        scheme, _, presented = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not presented:
            raise ApiProblem(AUTH, "send an API key: Authorization: Bearer <key>")
        key = await self.read(lambda conn: api_keys.authenticate(conn, presented.strip()))
        if key is None:
            raise ApiProblem(AUTH, "the API key is unknown or revoked")
        if self.uses.due(key.name, now := now_us()):
            await self.write(partial(api_keys.record_use, name=key.name, now_us=now))
        return key


def _types(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)
