"""What the console's endpoint modules use of the ``Console`` (console/routes.py) without
importing it: reads, writes through the node's writer, the node's fair share of password
checks, the signed-in operator's code, and the readers of a body (JSON object or sign-in
form), each read only up to ``inputs.MAX_BODY_BYTES`` however it is sent (chunked too)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, TypeVar

from sqlalchemy import Connection
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.types import Message

from alarmhub.console import inputs, security
from alarmhub.core.errors import BadInput
from alarmhub.core.sign_in import SignInThrottle
from alarmhub.node.listener_limits import read_limited

T = TypeVar("T")


class Writes(Protocol):
    async def write(self, work: Callable[[Connection], T]) -> T: ...


class Plumbing(Writes, Protocol):
    """Reads, and writes through the writer."""

    async def read(self, work: Callable[[Connection], T]) -> T: ...


class Checking(Plumbing, Protocol):
    """Reads, writes, the node's fair share of password checks and its throttle of
    operators' wrong passcodes."""

    checks: security.FairChecks
    passcode_throttle: SignInThrottle


class Session(Protocol):
    @property
    def code(self) -> str: ...


Body = Callable[[Request, Mapping[str, type]], Awaitable[dict[str, Any]]]
"""Reads a request's JSON object body with the fields and types an action takes."""


async def limited_body(request: Request) -> bytes:
    """The request's body, read as it arrives: ``BadInput`` (422 CONSOLE-INPUT) as soon as it
    passes the limit, whether declared by Content-Length or sent in chunks."""
    declared = request.headers.get("content-length", "")
    body = None
    if not (declared.isdigit() and int(declared) > inputs.MAX_BODY_BYTES):
        body = await read_limited(request, inputs.MAX_BODY_BYTES)
    if body is None:
        raise BadInput(f"the body is larger than {inputs.MAX_BODY_BYTES} bytes")
    return body


async def json_body(request: Request, allowed: Mapping[str, type]) -> dict[str, Any]:
    """A :data:`Body`: the request's JSON object, read up to the limit, with ``allowed``."""
    return inputs.json_object(await limited_body(request), allowed)


async def limited_form(request: Request) -> FormData:
    """The sign-in form, parsed from a body read up to the limit (``BadInput`` beyond it)."""
    body = await limited_body(request)

    async def replay() -> Message:
        return {"type": "http.request", "body": body, "more_body": False}

    return await Request(request.scope, replay).form(max_files=0, max_fields=8)
