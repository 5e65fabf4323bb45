"""A node in the test's own process: the app of the composition root (``Runtime`` and
``build_app``) with its signal writer in a thread (``WriterThread``: the same socket, frames,
commit, routing and supervision as the writer process), on an event loop of its own (uvloop,
as ``alarmhub serve``, in an anyio portal's thread), called through ``httpx.ASGITransport``
from a synchronous ``httpx.Client``.

``InProcessStation`` has the surface of a ``Station`` on a real ``alarmhub serve`` process
(``data_dir``, ``token``, ``url``, ``client``, ``post``, ``log``), so a test runs on either.
What needs a real process stays there: signals, ports and listeners, the HTTP server's own
parsing and limits, client addresses, several nodes.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import requests
import requests.adapters
import urllib3
from anyio.from_thread import BlockingPortal, start_blocking_portal
from starlette.types import ASGIApp

from alarmhub.logs import KeyValueFormatter
from alarmhub.node.app import Part, Runtime, build_app
from alarmhub.settings import load
from alarmhub.store.writer_process import WriterThread
from tests.support.database import database_url
from tests.support.processes import PostsSignals, Station

BASE_URL = "http://alarmhub.test"


class NodeLog(logging.Handler):
    """Every record of alarmhub's loggers while the node runs, one ``key=value`` line each, as
    a real node writes them to its log."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []
        self.setFormatter(KeyValueFormatter())

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@contextmanager
def _logging_to(handler: NodeLog, level: str) -> Iterator[None]:
    logger = logging.getLogger("alarmhub")
    before = logger.level
    logger.setLevel(level.upper())
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(before)


class PortalTransport(httpx.BaseTransport):
    """``httpx.ASGITransport`` for synchronous clients: each request runs on the node's event
    loop, so requests sent from several threads are served there concurrently. The request body
    is read first and the answer whole (no streamed responses)."""

    def __init__(self, portal: BlockingPortal, app: ASGIApp) -> None:
        self._portal = portal
        self._asgi = httpx.ASGITransport(app=app)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()
        sent = httpx.Request(
            request.method, request.url, headers=request.headers, stream=httpx.ByteStream(body)
        )
        return self._portal.call(self._send, sent)

    async def _send(self, request: httpx.Request) -> httpx.Response:
        answer = await self._asgi.handle_async_request(request)
        content = await answer.aread()
        return httpx.Response(
            answer.status_code, headers=answer.headers, stream=httpx.ByteStream(content)
        )


class RequestsAdapter(requests.adapters.HTTPAdapter):
    """Sends what a ``requests`` session prepares (schemathesis calls through one) to the node
    through its httpx client: the same method, URL, headers and body bytes."""

    def __init__(self, client: httpx.Client) -> None:
        super().__init__()
        self._client = client

    def send(  # type: ignore[override]
        self, request: requests.PreparedRequest, **_: Any
    ) -> requests.Response:
        body = request.body.encode() if isinstance(request.body, str) else request.body
        assert request.method is not None and request.url is not None
        assert body is None or isinstance(body, bytes), "schemathesis sends bodies whole"
        headers = {
            name: value.decode("latin-1") if isinstance(value, bytes) else value
            for name, value in request.headers.items()
        }
        answer = self._client.request(
            request.method, request.url, headers=headers, content=body or b""
        )
        raw = urllib3.HTTPResponse(
            body=io.BytesIO(answer.content),
            headers=urllib3.HTTPHeaderDict(answer.headers.multi_items()),
            status=answer.status_code,
            reason=answer.reason_phrase,
            version=11,
            preload_content=False,
        )
        return self.build_response(request, raw)


def requests_session(client: httpx.Client) -> requests.Session:
    """A ``requests`` session whose every request goes to the node of ``client``."""
    session = requests.Session()
    session.mount("http://", RequestsAdapter(client))
    return session


@dataclass
class InProcessNode:
    """A running node of this process and a client of its app."""

    data_dir: Path
    runtime: Runtime
    client: httpx.Client
    records: NodeLog

    @property
    def url(self) -> str:
        return BASE_URL

    def log(self) -> str:
        return "\n".join(self.records.lines)


@contextmanager
def in_process_node(
    data_dir: Path, env: Mapping[str, str] | None = None, parts: Sequence[Part] = ("rx", "rest")
) -> Iterator[InProcessNode]:
    """Run a node on ``data_dir`` (its database made first, as ``Server`` does) until the
    block ends, then stop it as ``alarmhub serve`` does (queued signals committed). ``env``
    holds settings as ``Server`` takes them (``ALARMHUB_TIMEZONE``, ...)."""
    database_url(data_dir)
    overrides: dict[str, Any] = {
        name.removeprefix("ALARMHUB_").lower(): value for name, value in (env or {}).items()
    }
    settings = load(data_dir, **overrides)
    runtime = Runtime(settings, start_writer=WriterThread.start, deliveries_apart=False)
    app = build_app(runtime, parts)
    records = NodeLog()
    with (
        _logging_to(records, settings.log_level),
        start_blocking_portal("asyncio", {"use_uvloop": True}) as portal,
        portal.wrap_async_context_manager(runtime),
        httpx.Client(transport=PortalTransport(portal, app), base_url=BASE_URL) as client,
    ):
        yield InProcessNode(data_dir, runtime, client, records)


@dataclass
class InProcessStation(PostsSignals):
    """A provisioned data directory with an in-process node and a token for driver ``rx1``."""

    node: InProcessNode
    token: str
    data_dir: Path

    @property
    def url(self) -> str:
        return self.node.url

    @property
    def client(self) -> httpx.Client:
        return self.node.client

    def log(self) -> str:
        return self.node.log()


AnyStation = Station | InProcessStation
"""A test that takes either runs the same on a real process and in-process."""
