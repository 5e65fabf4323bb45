"""What the console's endpoint modules use of the ``Console`` (console/routes.py) without
importing it: reads, writes through the node's writer, the node's fair share of password
checks, the signed-in operator's code, and the reader of a JSON body."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, TypeVar

from sqlalchemy import Connection
from starlette.requests import Request

from alarmhub.console import security
from alarmhub.core.sign_in import SignInThrottle

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
