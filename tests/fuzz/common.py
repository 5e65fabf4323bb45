"""What the fuzz targets share: how many inputs, hypothesis' settings, a counter of inputs run,
and a small ASGI driver that calls a Starlette app in-process without a network."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import Any

from hypothesis import HealthCheck, Phase, settings

EXAMPLES = int(os.environ.get("ALARMHUB_FUZZ_EXAMPLES", "100000"))

FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    phases=(Phase.generate, Phase.shrink),
    suppress_health_check=list(HealthCheck),
)


class Counter:
    """Inputs run by one target; printed and checked at its end."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.runs = 0

    def check(self) -> None:
        print(f"\n{self.name}: {self.runs} inputs, 0 crashes, 0 answers outside the set")
        assert self.runs >= EXAMPLES


ASGIApp = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


def call(
    loop: asyncio.AbstractEventLoop,
    app: ASGIApp,
    path: str,
    headers: list[tuple[bytes, bytes]],
    body: bytes,
    query: bytes = b"",
    method: str = "POST",
) -> tuple[int, bytes]:
    """Send ``body`` to ``path`` of ``app`` (POST unless ``method``); the status and the body
    of the answer."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": query,
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8080),
    }
    sent = False
    status = 0
    answer = bytearray()

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            answer.extend(message.get("body", b""))

    loop.run_until_complete(app(scope, receive, send))
    return status, bytes(answer)
