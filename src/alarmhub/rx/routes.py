"""HTTP routes of the signaling interface: translate requests to core calls and back.

The routes receive what they use (:func:`routes`): the grant cache, something that stores a
signal durably (the writer) and something that records a heartbeat (the supervisor)."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, Protocol

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from alarmhub import metrics
from alarmhub.clock import now_us
from alarmhub.core import errors
from alarmhub.core.errors import SignalRefusal, StoreUnavailable
from alarmhub.core.signal import Signal, validate
from alarmhub.core.tokens import split_pair
from alarmhub.node.listener_limits import read_limited
from alarmhub.rx.auth import GrantCache
from alarmhub.store.commit import Stored

log = logging.getLogger("alarmhub.rx")
INTERFACE = "contact_id"
JSON = "application/json"
SUCCESS = b'{"status_code":200,"status":"success"}'
IDEMPOTENCY_INVALID = errors.IDEMPOTENCY_INVALID


def _render(refusal: SignalRefusal) -> bytes:
    return orjson.dumps(errors.envelope(refusal.status_code, refusal.error_code, refusal.message))


class _Constant(Response):
    """A response built once and sent for every request that gets it (the success envelope):
    no headers to compute per request. Each sending gets its own copy of the header list,
    since middleware may change a response's headers in place."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = list(self.raw_headers)
        await send({"type": "http.response.start", "status": self.status_code, "headers": headers})
        await send({"type": "http.response.body", "body": self.body})


SUCCESS_RESPONSE = _Constant(SUCCESS, media_type=JSON)
_BODIES = {r.error_code: _render(r) for r in errors.ALL}
_CHALLENGE = {"WWW-Authenticate": "Bearer"}


def error_response(refusal: SignalRefusal) -> Response:
    """The error envelope of section 2.2; the HTTP status equals its ``status_code``."""
    return Response(
        _BODIES.get(refusal.error_code) or _render(refusal),
        status_code=refusal.status_code,
        media_type=JSON,
        headers=_CHALLENGE if refusal.status_code == 401 else None,
    )


def envelope_response(
    status_code: int, error_code: str, message: str, headers: Mapping[str, str] | None = None
) -> Response:
    """The same envelope for an error that is no signaling refusal (the HTTP errors of every
    listener: 404, 405, ...)."""
    body = orjson.dumps(errors.envelope(status_code, error_code, message))
    return Response(body, status_code=status_code, media_type=JSON, headers=headers)


ACCEPTED = metrics.Tally(metrics.SIGNALS_ACCEPTED.labels(INTERFACE))
DEDUPLICATED = metrics.Tally(metrics.SIGNALS_DEDUPLICATED.labels(INTERFACE))


def refuse(refusal: SignalRefusal) -> Response:
    metrics.SIGNALS_REFUSED.labels(INTERFACE, refusal.error_code).inc()
    return error_response(refusal)


_HEADERS = {b"authorization": 0, b"idempotency-key": 1, b"content-length": 2}


def _signal_headers(request: Request) -> list[str | None]:
    """The Authorization, Idempotency-Key and Content-Length headers (the first of each, as
    ``request.headers.get`` gives), read in one pass over the raw headers, whose names the
    server gives in lower case. Starlette's mapping costs more: it is built for each request
    and a missing header raises and catches KeyError."""
    found: list[str | None] = [None, None, None]
    for name, value in request.scope["headers"]:
        index = _HEADERS.get(name)
        if index is not None and found[index] is None:
            found[index] = value.decode("latin-1")
    return found


async def _read_body(request: Request, limit: int, length: str | None) -> bytes | None:
    """The body, or None when it is longer than ``limit`` bytes (``length``: the declared
    Content-Length)."""
    if length is not None and length.isdigit():
        return await request.body() if int(length) <= limit else None
    return await read_limited(request, limit)


def _decode(raw: bytes | None) -> Any:
    """The JSON value of a body; None when it is not JSON. orjson reads nearly every body; the
    standard library takes the valid JSON it refuses (a UTF-8 byte-order mark, numbers beyond a
    double, escaped lone surrogates), so such a body is judged by its fields, not refused."""
    if raw is None:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None


def _idempotency_key(key: str | None) -> str | SignalRefusal | None:
    if key is None:
        return None
    if not (0 < len(key) <= errors.IDEMPOTENCY_KEY_MAX and key.isascii() and key.isprintable()):
        return IDEMPOTENCY_INVALID
    return key


class Writer(Protocol):
    """Stores a signal and answers once the commit holding it is durable."""

    async def submit(self, sig: Signal, /) -> Stored: ...


class Heartbeats(Protocol):
    """Records that a source:destination pair beat (a pair new to the node is stored before
    the beat is answered)."""

    async def beat(self, source: str, destination: str, /) -> None: ...


def routes(
    grants: GrantCache, writer: Writer, heartbeats: Heartbeats, body_limit: int
) -> list[Route]:
    """``contact_id`` and ``hb``; a signal body over ``body_limit`` bytes is refused."""

    async def contact_id(request: Request) -> Response:
        received = now_us()
        authorization, idempotency_key, length = _signal_headers(request)
        grant = grants.cached(authorization) or await grants.authenticate(authorization)
        if grant is None:
            return refuse(errors.AUTH_FAILED)
        body = _decode(await _read_body(request, body_limit, length))
        if not isinstance(body, dict):
            return refuse(errors.BODY_INVALID)
        fields = validate(body)
        if isinstance(fields, SignalRefusal):
            return refuse(fields)
        pair = split_pair(request.path_params["pair"])
        if pair is None or not grant.may_queue(pair[1]) or pair[1] not in grants.drivers:
            return refuse(errors.BUFFER_REFUSED)
        key = _idempotency_key(idempotency_key)
        if isinstance(key, SignalRefusal):
            return refuse(key)
        signal = Signal(pair[0], pair[1], fields, grant.name, received, key)
        try:
            stored = await writer.submit(signal)
        except StoreUnavailable as exc:
            log.error("signal not stored", extra={"source": pair[0], "reason": str(exc)})
            return refuse(errors.STORE_FAILED)
        if stored.conflict:
            return refuse(errors.IDEMPOTENCY_CONFLICT)
        if stored.duplicate:
            DEDUPLICATED.inc()
        else:
            ACCEPTED.inc()
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "signal stored",
                extra={
                    "incident_number": stored.incident_number,
                    "source": pair[0],
                    "destination": pair[1],
                    "code": fields.code,
                    "duplicate": stored.duplicate,
                },
            )
        return SUCCESS_RESPONSE

    async def heartbeat(request: Request) -> Response:
        authorization = _signal_headers(request)[0]
        grant = grants.cached(authorization) or await grants.authenticate(authorization)
        if grant is None:
            metrics.HEARTBEAT_REFUSED.labels(errors.AUTH_FAILED.error_code).inc()
            return error_response(errors.AUTH_FAILED)
        pair = split_pair(request.path_params["pair"])
        if pair is None or not grant.may_beat(*pair):
            metrics.HEARTBEAT_REFUSED.labels(errors.HEARTBEAT_REFUSED.error_code).inc()
            return error_response(errors.HEARTBEAT_REFUSED)
        await heartbeats.beat(*pair)
        return SUCCESS_RESPONSE

    return [
        Route("/rx/{pair}/contact_id", contact_id, methods=["POST"]),
        Route("/rx/{pair}/hb", heartbeat, methods=["GET"]),
    ]
