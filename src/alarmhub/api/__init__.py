"""The integrator API under ``/api/v1`` (decisions section 10): resource-shaped JSON behind API
keys with scopes and an account range, problem details for every refusal.

Each module of this package serves one kind of resource and gives its routes from
``routes(api)``; this module puts them together under ``/api/v1``. Every change runs through the
node's writer after the incident lock (``operations.on_queues``), as the console's do, so that
the events it writes to the outbox are numbered in the order of the commits.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, tzinfo
from functools import partial

from sqlalchemy.engine import Engine
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route

from alarmhub.api import accounts, alarms, events, supervision
from alarmhub.api.plumbing import Api, json_response
from alarmhub.api.problems import not_found, problem_response
from alarmhub.core.api_keys import ApiKey
from alarmhub.node.listener_limits import StreamBudget
from alarmhub.store import operations
from alarmhub.store.writer import SignalWriter

BASE = "/api/v1"


async def whoami(request: Request, key: ApiKey) -> Response:
    """``GET /api/v1/key``: the key's own name, scopes and account range."""
    return json_response({"name": key.name, "scopes": sorted(key.scopes), "accounts": key.accounts})


async def unknown(request: Request) -> Response:
    return problem_response(not_found(f"no resource at {request.url.path}"))


def routes(
    engine: Engine,
    writer: SignalWriter,
    max_body_bytes: int,
    budget: StreamBudget,
    zone: tzinfo = UTC,
    closed: Callable[[], bool] = lambda: False,
) -> list[BaseRoute]:
    """The routes of ``/api/v1``; event streams take their slots in ``budget``; ``zone`` is the
    station's time zone, ``closed`` says when the node stops (event streams end)."""
    api = Api(
        engine, lambda work: writer.run(partial(operations.on_queues, work)), max_body_bytes, zone
    )
    served: list[BaseRoute] = [
        Route("/key", api.endpoint("", whoami), methods=["GET"]),
        *accounts.routes(api),
        *alarms.routes(api),
        *supervision.routes(api),
        *events.routes(api, budget, closed),
    ]
    catch_all = Route("/{rest:path}", unknown, methods=["GET", "PUT", "POST", "PATCH", "DELETE"])
    return [Mount(BASE, routes=[*served, catch_all])]
